"""A small LALR(1) runtime for the tables Lark computed: the lexer, the shift/reduce loop and
the child filtering of Lark's parse-tree builder, without importing Lark.

Importing Lark and loading its parser cost a cold `apdsl check` about a third of its time; the
tables themselves are plain data (`lalr_tables` extracts them from a Lark parser once and
caches them).  The runtime reproduces Lark's LALR parse exactly for an input Lark accepts: the
same tokens (same regular expressions, same keyword retyping, same positions) and the same
reductions in the same order, so the builder makes the same calls.  Anything it does not
handle, a lexer or parser error above all, raises `Unhandled`, and the caller parses the text
again with Lark itself, whose errors the diagnostics are built from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import Any

__all__ = ["Token", "Unhandled", "Tables", "LalrParser"]


class Token(str):
    """A lexed token, the same fields as Lark's `Token` (the builder and the indenter read
    `type`, `value` and the positions; Lark's parser accepts these too)."""

    __slots__ = ("type", "value", "start_pos", "line", "column", "end_line", "end_column",
                 "end_pos")

    def __new__(cls, type: str, value: Any, start_pos: int | None = None,
                line: int | None = None, column: int | None = None,
                end_line: int | None = None, end_column: int | None = None,
                end_pos: int | None = None) -> Token:
        inst = super().__new__(cls, value)
        inst.type = type
        inst.value = value
        inst.start_pos = start_pos
        inst.line = line
        inst.column = column
        inst.end_line = end_line
        inst.end_column = end_column
        inst.end_pos = end_pos
        return inst

    def __reduce__(self) -> tuple:
        return (self.__class__, (self.type, self.value, self.start_pos, self.line,
                                 self.column, self.end_line, self.end_column, self.end_pos))

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {self.value!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Token) and self.type != other.type:
            return False
        return str.__eq__(self, other)

    __hash__ = str.__hash__


class Unhandled(Exception):
    """The input is one the runtime leaves to Lark (a lexer or parser error, a rule the builder
    has no method for)."""


# One rule of the tables: (origin name, expansion length, callback name, expand single child,
# filter) where filter is None (the children as they are) or (include, nones_after) with
# include a tuple of (child index, expand it, Nones before it).
Rule = tuple[str, int, str, bool, Any]


class Tables:
    """The analysed grammar as plain data (what the on-disk cache holds)."""

    __slots__ = ("patterns", "keywords", "ignore", "newline", "states", "rules", "starts",
                 "ends")

    def __init__(self, patterns: list[tuple[str, int]], keywords: dict[str, dict[str, str]],
                 ignore: Iterable[str], newline: Iterable[str], states: list[dict[str, int]],
                 rules: list[Rule], starts: dict[str, int], ends: dict[str, int]) -> None:
        self.patterns = patterns  # Lark's combined terminal regexps, tried in order
        self.keywords = keywords  # terminal -> {exact text: terminal it becomes}
        self.ignore = frozenset(ignore)
        self.newline = frozenset(newline)
        self.states = states  # state -> {symbol: shift to state >= 0, or ~rule}
        self.rules = rules
        self.starts = starts
        self.ends = ends

    def data(self) -> tuple:
        return (self.patterns, self.keywords, sorted(self.ignore), sorted(self.newline),
                self.states, self.rules, self.starts, self.ends)

    @classmethod
    def from_data(cls, data: tuple) -> Tables:
        return cls(*data)


class LalrParser:
    """Parses with `tables`, calling `builder`'s methods as Lark's inline transformer would, the
    token stream passed through `postlex.process` first."""

    def __init__(self, tables: Tables, builder: Any, postlex: Any) -> None:
        self.tables = tables
        self.postlex = postlex
        self.mres = [re.compile(p, f) for p, f in tables.patterns]
        self.callbacks = [_callback(builder, rule) for rule in tables.rules]
        # the reduce steps: (origin, size, callback)
        self.reductions = [(r[0], r[1], cb) for r, cb in zip(tables.rules, self.callbacks)]

    def parse(self, text: str, start: str) -> Any:
        states = self.tables.states
        reductions = self.reductions
        end_state = self.tables.ends[start]
        state_stack = [self.tables.starts[start]]
        value_stack: list[Any] = []
        end = Token("$END", "")  # after the last token: reduce until the start rule is done
        for token in chain(self.postlex.process(self.lex(text)), (end,)):
            kind = token.type
            while True:
                action = states[state_stack[-1]].get(kind)
                if action is None:
                    raise Unhandled(kind)
                if action >= 0:
                    if token is end:
                        raise Unhandled(kind)
                    state_stack.append(action)
                    value_stack.append(token)
                    break
                origin, size, callback = reductions[~action]
                if size:
                    children = value_stack[-size:]
                    del state_stack[-size:]
                    del value_stack[-size:]
                else:
                    children = []
                value_stack.append(callback(children))
                state_stack.append(states[state_stack[-1]][origin])
                if token is end and state_stack[-1] == end_state:
                    return value_stack[-1]
        raise Unhandled("$END")  # (not reached: the end token returns or raises)

    def lex(self, text: str) -> Iterator[Token]:
        """Lark's basic lexer: the first of the combined regexps that matches at the position,
        its named group the token type; keywords retyped from NAME; positions counted as
        Lark's line counter does (1-based lines and columns)."""
        matchers = [m.match for m in self.mres]
        ignore = self.tables.ignore
        newline = self.tables.newline
        keywords = self.tables.keywords
        end = len(text)
        pos = 0
        line = 1
        line_start = 0
        while pos < end:
            for match in matchers:
                m = match(text, pos, end)
                if m:
                    break
            else:
                raise Unhandled("no terminal matches")
            value = m.group(0)
            kind = m.lastgroup
            column = pos - line_start + 1
            start_line = line
            start = pos
            if kind in newline:
                n = value.count("\n")
                if n:
                    line += n
                    line_start = pos + value.rindex("\n") + 1
            pos += len(value)
            if kind in ignore:
                continue
            table = keywords.get(kind)
            if table is not None:
                kind = table.get(value, kind)
            yield Token(kind, value, start, start_line, column, line, pos - line_start + 1, pos)


def _callback(builder: Any, rule: Rule) -> Callable[[list], Any]:
    """Lark's callback for one rule: the child filter, then a single child passed through for
    a `?rule`, then the builder's method (a `_rule` without one yields its children, which
    the rule using it splices in)."""
    origin, _size, name, expand1, spec = rule
    method = getattr(builder, name, None)
    if method is None:
        if origin.startswith("_"):
            def method(children: list) -> list:
                return children
        else:
            def method(children: list) -> Any:
                raise Unhandled(f"no builder method for {name}")
    if expand1:
        inner = method

        def method(children: list) -> Any:
            return children[0] if len(children) == 1 else inner(children)
    if spec is None:
        return method
    include, nones_after = spec
    if nones_after == 0 and not any(expand or nones for _i, expand, nones in include):
        picks = tuple(i for i, _e, _n in include)
        if len(picks) == 1:
            (only,) = picks
            return lambda children: method([children[only]])
        return lambda children: method([children[i] for i in picks])

    def filtered(children: list) -> Any:
        out: list = []
        for i, expand, nones in include:
            if nones:
                out += [None] * nones
            if expand:
                if out:
                    out += children[i]
                else:  # Lark reuses the spliced list (left recursion)
                    out = children[i]
            else:
                out.append(children[i])
        if nones_after:
            out += [None] * nones_after
        return method(out)
    return filtered
