"""`apdsl lsp --probe FILE [--hover LINE:COLUMN]...`: start `apdsl lsp` and talk to it over
stdio as an editor does (pygls's language client), then print what the editor receives: the
file's diagnostics and the hovers asked for.  It shows that the server runs in this
environment, and what an editor will show, without an editor."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from ...version import __version__

_SEVERITY = {lsp.DiagnosticSeverity.Error: "error", lsp.DiagnosticSeverity.Warning: "warning",
             lsp.DiagnosticSeverity.Information: "note", lsp.DiagnosticSeverity.Hint: "hint"}


def _where(r: lsp.Range) -> str:
    return f"{r.start.line + 1}:{r.start.character + 1}-{r.end.line + 1}:{r.end.character + 1}"


def show_diagnostics(name: str, found: list[lsp.Diagnostic]) -> list[str]:
    lines = [f"{name}: {len(found)} diagnostic{'s' if len(found) != 1 else ''}"]
    for d in found:
        first, *rest = d.message.split("\n")
        lines.append(f"  {_where(d.range)}  {_SEVERITY.get(d.severity, 'error')}[{d.code}]  "
                     f"{first}")
        lines.extend(f"      {more}" for more in rest)
        for r in d.related_information or ():
            lines.append(f"      related {_where(r.location.range)}  {r.message}")
    return lines


async def probe(path: Path, hovers: list[tuple[int, int]], timeout: float = 120) -> list[str]:
    client = LanguageClient("apdsl-probe", __version__)
    published: asyncio.Queue[lsp.PublishDiagnosticsParams] = asyncio.Queue()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def got(params: lsp.PublishDiagnosticsParams) -> None:
        published.put_nowait(params)

    await client.start_io(sys.executable, "-m", "apdsl", "lsp")
    uri = path.absolute().as_uri()
    try:
        await client.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
        client.initialized(lsp.InitializedParams())
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=uri, language_id="apk" if path.suffix == ".apk" else "python", version=1,
                text=path.read_text(encoding="utf-8"))))
        params = await asyncio.wait_for(published.get(), timeout)
        lines = show_diagnostics(str(path), list(params.diagnostics))
        for line, column in hovers:
            found = await asyncio.wait_for(client.text_document_hover_async(lsp.HoverParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                position=lsp.Position(line=line - 1, character=column - 1))), timeout)
            lines.append(f"hover {line}:{column}")
            lines.extend(f"  {text}" for text in _hover_text(found))
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()
    return lines


def _hover_text(found: Any) -> list[str]:
    if found is None:
        return ["(nothing)"]
    value = found.contents.value if hasattr(found.contents, "value") else str(found.contents)
    return [line for line in value.split("\n") if not line.startswith("```")]


def main(file: str, hovers: list[str]) -> int:
    """Print the diagnostics and hovers; 1 when the file has errors (as `apdsl check`)."""
    places = []
    for text in hovers:
        line, _, column = text.partition(":")
        places.append((int(line), int(column or 1)))
    path = Path(file)
    lines = asyncio.run(probe(path, places))
    print("\n".join(lines))
    return 1 if any("  error[" in line for line in lines) else 0
