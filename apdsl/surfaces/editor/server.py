"""The language server (pygls): diagnostics as the user types, hover, go-to-definition and
completion for `.apk` files and NKI or pyasc `.py` kernel files.

Every opened or edited file is checked by a worker process (`jobs`), the previous check of the
same file stopped first; its diagnostics are `apdsl check --json`'s objects, sent as LSP
diagnostics with the object itself as `data`, the labels (a race's other line, where a view
was made) as related information and the notes and help in the message.  A hover on a view
runs a worker too; everything else is answered at once from the buffer (`words`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from ...errors import ApdslError, Span
from ...version import __version__
from . import words
from .jobs import Budgets, run_job
from .outline import outline, word_at

__all__ = ["ApkServer", "make_server", "diagnostic", "main"]

_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
             "note": lsp.DiagnosticSeverity.Information}
_KIND = {"builtin": lsp.CompletionItemKind.Function, "method": lsp.CompletionItemKind.Method,
         "attribute": lsp.CompletionItemKind.Property, "dtype": lsp.CompletionItemKind.TypeParameter,
         "buffer": lsp.CompletionItemKind.Constant, "keyword": lsp.CompletionItemKind.Keyword,
         "name": lsp.CompletionItemKind.Variable, "kernel": lsp.CompletionItemKind.Function,
         "def": lsp.CompletionItemKind.Function, "namespace": lsp.CompletionItemKind.Module,
         "nl": lsp.CompletionItemKind.Function, "nisa": lsp.CompletionItemKind.Function,
         "asc": lsp.CompletionItemKind.Function}


class Codec(Protocol):
    """How the client counts columns (pygls's PositionCodec of the session: UTF-16 code units
    unless the client chose UTF-8 or UTF-32); apdsl counts characters."""

    def range_to_client_units(self, lines: Sequence[str], range: lsp.Range) -> lsp.Range: ...


# how long typing must pause before a changed file is checked again
DEBOUNCE = 0.25


def path_of(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def uri_of(path: str) -> str:
    return Path(path).absolute().as_uri()


def is_kernel_file(path: str) -> bool:
    return path.endswith((".apk", ".py"))


def diagnostic(obj: dict[str, Any], codec: Codec | None = None,
               lines: Sequence[str] | None = None) -> lsp.Diagnostic:
    """An LSP diagnostic of one `check --json` object (kept whole as `data`).  apdsl's
    columns count characters; LSP's count the client's code units (UTF-16 unless it chose
    otherwise): `codec` converts them, with `lines` the checked file's text (a label in
    another file is converted with that file's text)."""
    notes = [f"note: {n}" for n in obj.get("notes") or ()]
    if obj.get("help"):
        notes.append(f"help: {obj['help']}")
    related = []
    for label in obj.get("labels") or ():
        if label.get("line") is None or not label.get("file"):
            continue
        file = _real_file(label["file"])
        there = lines if label["file"] == obj.get("file") else _lines_of(file)
        related.append(lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=uri_of(file),
                                  range=client_range(_range(label), codec, there)),
            message=label.get("message") or ""))
    return lsp.Diagnostic(
        range=client_range(_range(obj), codec, lines),
        message="\n".join([obj.get("message") or "", *notes]),
        severity=_SEVERITY.get(obj.get("severity"), lsp.DiagnosticSeverity.Error),
        code=obj.get("code"), source="apdsl", related_information=related or None, data=obj)


def _range(obj: dict[str, Any]) -> lsp.Range:
    if obj.get("line") is None:
        return _span_range(1, 1, 1, 1)
    return _span_range(obj["line"], obj.get("column") or 1, obj.get("end_line") or obj["line"],
                       obj.get("end_column") or 1)


def _span_range(line: int, column: int, end_line: int, end_column: int) -> lsp.Range:
    """The LSP range (0-based) of a 1-based span; an end before the start is the start."""
    start = lsp.Position(line=max(line, 1) - 1, character=max(column, 1) - 1)
    end = lsp.Position(line=max(end_line, 1) - 1, character=max(end_column, 1) - 1)
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return lsp.Range(start=start, end=end)


def client_range(rng: lsp.Range, codec: Codec | None,
                 lines: Sequence[str] | None) -> lsp.Range:
    """A range in characters as the client counts columns (`codec`: pygls's
    PositionCodec of the session; without it or the text, as it is)."""
    if codec is None or lines is None:
        return rng
    return codec.range_to_client_units(lines, rng)


def server_position(doc: Any, position: lsp.Position) -> tuple[int, int]:
    """The 1-based line and character column of a client's position in `doc` (the client
    counts UTF-16 code units unless it chose otherwise: `𝑥` is two, `é` one)."""
    p = doc.position_codec.position_from_client_units(
        doc.lines, lsp.Position(line=position.line, character=position.character))
    return p.line + 1, p.character + 1


def _lines_of(file: str) -> list[str] | None:
    try:
        return Path(file).read_text(encoding="utf-8").splitlines(keepends=True)
    except (OSError, UnicodeDecodeError):
        return None


def _real_file(file: str) -> str:
    if file.startswith("<stdlib>/"):
        from ...resources import stdlib_path
        return str(stdlib_path() / file[len("<stdlib>/"):])
    return file


class ApkServer:
    """The server's state: the budgets, the check running for each open file, the views
    hovers found (per file version)."""

    def __init__(self, budgets: Budgets | None = None) -> None:
        self.ls = LanguageServer("apdsl", __version__,
                                 text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self.budgets = budgets or Budgets()
        self.checks: dict[str, asyncio.Task[None]] = {}
        self.views: dict[tuple[str, int, int | None, str], str | None] = {}
        self._register()

    # -- diagnostics ------------------------------------------------------------------------
    def schedule(self, uri: str, delay: float) -> None:
        """Check the file again (after `delay` seconds of quiet), stopping the check under
        way."""
        running = self.checks.pop(uri, None)
        if running is not None:
            running.cancel()
        self.checks[uri] = asyncio.ensure_future(self._check(uri, delay))

    async def _check(self, uri: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        doc = self.ls.workspace.get_text_document(uri)
        file, version = path_of(uri), doc.version
        try:
            answer = await run_job({"op": "check", "file": file, "source": doc.source},
                                   self.budgets)
            objects = answer.get("diagnostics", [])
        except ApdslError as e:  # stopped at the time limit, or no answer
            from ..plumbing import json_objects
            objects = json_objects([e], file)
        lines = doc.source.splitlines(keepends=True)
        self.ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=version,
            diagnostics=[diagnostic(o, doc.position_codec, lines) for o in objects]))

    def close(self, uri: str) -> None:
        running = self.checks.pop(uri, None)
        if running is not None:
            running.cancel()
        self.views = {k: v for k, v in self.views.items() if k[0] != uri}
        self.ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    # -- hover -------------------------------------------------------------------------------
    async def hover(self, params: lsp.HoverParams) -> lsp.Hover | None:
        uri = params.text_document.uri
        doc = self.ls.workspace.get_text_document(uri)
        file = path_of(uri)
        line, column = server_position(doc, params.position)
        found = word_at(doc.source, line, column)
        if found is None:
            return None
        word, span = found
        text = words.explain_code(word)
        if text is not None:
            return _hover(f"```text\n{text}\n```", span, doc)
        shape = outline(file, doc.source)
        kind = "py" if file.endswith(".py") else "apk"
        said = words.meaning(word, kind, words.namespaces(shape))
        if said is not None and (word not in shape.names or "." in word):
            return _hover(said.markdown("python" if kind == "py" else "apk"), span, doc)
        if "." in word or word not in shape.names:
            return None
        scope = shape.scope_at(line)
        key = (uri, doc.version, scope.span.line if scope else None, word)
        if key not in self.views:
            self.views[key] = await self._view(file, doc.source, line, column)
        shown = self.views[key]
        return _hover(shown, span, doc) if shown else None

    async def _view(self, file: str, source: str, line: int, column: int) -> str | None:
        try:
            answer = await run_job({"op": "view", "file": file, "source": source,
                                    "line": line, "column": column}, self.budgets)
        except ApdslError:
            return None
        view = answer.get("view")
        if view is None:  # why not, when the program says (it stops first, a non-view)
            why = str(answer.get("none", ""))
            return f"not a view here: {why}" if why.startswith("[APK") else None
        return view_markdown(view)

    # -- wiring ------------------------------------------------------------------------------
    def _register(self) -> None:
        ls = self.ls

        @ls.feature(lsp.INITIALIZE)
        def initialize(ls: LanguageServer, params: lsp.InitializeParams) -> None:
            options = params.initialization_options
            if isinstance(options, dict):
                self.budgets = Budgets.of(options.get("apdsl", options))

        @ls.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
        def configured(ls: LanguageServer, params: lsp.DidChangeConfigurationParams) -> None:
            settings = params.settings
            if isinstance(settings, dict) and isinstance(settings.get("apdsl"), dict):
                self.budgets = Budgets.of(settings["apdsl"])
                for uri in list(self.checks):
                    self.schedule(uri, 0)

        @ls.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
        def opened(ls: LanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
            if is_kernel_file(path_of(params.text_document.uri)):
                self.schedule(params.text_document.uri, 0)

        @ls.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
        def changed(ls: LanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
            if is_kernel_file(path_of(params.text_document.uri)):
                self.schedule(params.text_document.uri, DEBOUNCE)

        @ls.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
        def saved(ls: LanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
            # imports beside it may have changed too: check the saved text at once
            if is_kernel_file(path_of(params.text_document.uri)):
                self.schedule(params.text_document.uri, 0)

        @ls.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
        def closed(ls: LanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
            self.close(params.text_document.uri)

        @ls.feature(lsp.TEXT_DOCUMENT_HOVER)
        async def hover(ls: LanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
            return await self.hover(params)

        @ls.feature(lsp.TEXT_DOCUMENT_DEFINITION)
        def define(ls: LanguageServer, params: lsp.DefinitionParams) -> lsp.Location | None:
            doc = ls.workspace.get_text_document(params.text_document.uri)
            found = words.definition(doc.source, path_of(params.text_document.uri),
                                     *server_position(doc, params.position))
            if found is None:
                return None
            file, line, column = found
            rng = _span_range(line, column, line, column)
            here = doc.lines if file == path_of(params.text_document.uri) else _lines_of(file)
            return lsp.Location(uri=uri_of(file),
                                range=client_range(rng, doc.position_codec, here))

        @ls.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=["."]))
        def complete(ls: LanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList:
            doc = ls.workspace.get_text_document(params.text_document.uri)
            found = words.completions(doc.source, path_of(params.text_document.uri),
                                      *server_position(doc, params.position))
            return lsp.CompletionList(is_incomplete=False, items=[
                lsp.CompletionItem(label=name, kind=_KIND.get(kind), detail=kind)
                for name, kind in found])


def _hover(markdown: str, span: Span, doc: Any) -> lsp.Hover:
    rng = _span_range(span.line, span.column, span.end_line, span.end_column)
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown),
                     range=client_range(rng, doc.position_codec, doc.lines))


def view_markdown(view: dict[str, Any]) -> str:
    """A view's facts, as the hover shows them."""
    shape = "(" + ", ".join(map(str, view["shape"])) + ("," if len(view["shape"]) == 1 else "") \
        + ")"
    strides = "(" + ", ".join("nested" if s is None else str(s) for s in view["strides"]) + \
        ("," if len(view["strides"]) == 1 else "") + ")"
    rows = [("shape", shape), ("dtype", view["dtype"]), ("buffer", view["buffer"]),
            ("format", view["format"]), ("strides", strides), ("offset", view["offset"]),
            ("pattern", view["pattern"])]
    for i, ap in enumerate(view["aps"]):
        what = "AP" if len(view["aps"]) == 1 else f"AP {i + 1}/{len(view['aps'])}"
        rows.append((what, ap["error"] if "error" in ap else
                     f"offset {ap['offset']}  {ap['pattern']}"))
    body = "\n".join(f"{k:<8} {v}" for k, v in rows)
    return f"```text\n{view['title']}\n{body}\n```"


def make_server(budgets: Budgets | None = None) -> LanguageServer:
    return ApkServer(budgets).ls


def main() -> int:
    """`apdsl lsp`: serve on standard input and output until the client says exit."""
    os.environ.setdefault("NO_COLOR", "1")  # (nothing of the server's is a terminal)
    make_server().start_io()
    return 0
