"""The syntax tree's base classes and its expression nodes (documented in `apdsl.syntax.ast`,
which re-exports them with the statement nodes)."""

from __future__ import annotations

from typing import Any

from .. import records
from ..errors import Span
from ..records import Record, record


class Node(Record):
    """Base of every syntax node: immutable, slotted, compared by identity."""

    __slots__ = ()
    span: Span


class Stmt(Node):
    __slots__ = ()


class Expr(Node):
    __slots__ = ()


# Nodes compare and hash by identity, so a checker can key tables by node in O(1) (spans make
# structurally equal nodes at different places unequal anyway); compare structure with `dump`.
node_record = record(identity=True)
_node = node_record


def fields(node: Node) -> tuple[str, ...]:
    """The field names of a node, in constructor order."""
    return node._fields


def replace(node: Node, **changes: Any) -> Node:
    """A copy of `node` with some fields changed."""
    return records.replace(node, **changes)


# ---- expressions -------------------------------------------------------------------------

@_node
class Name(Expr):
    id: str
    span: Span


@_node
class NkiName(Name):
    id: str
    span: Span
    space: str  # "nl", "nisa" or "asc" (pyasc's AscendC names)


@_node
class Const(Expr):
    value: int | float | bool | None
    span: Span


@_node
class Str(Expr):
    value: str
    raw: str
    raw_span: Span  # the literal itself; `span` also covers enclosing parentheses
    span: Span

    def char_span(self, start: int, end: int) -> Span:
        """The source span of `value[start:end]`; an empty range covers the next character."""
        from .strings import position, raw_offsets

        n = len(self.value)
        start = min(max(start, 0), n)
        end = min(max(end, start), n)
        starts, ends, closing = raw_offsets(self.raw)
        if end == start:
            lo = starts[start] if start < n else closing
            hi = lo + 1
        else:
            lo, hi = starts[start], ends[end - 1]
        line, column = self.raw_span.line, self.raw_span.column
        return Span(self.span.file, *position(line, column, self.raw, lo),
                    *position(line, column, self.raw, hi))


@_node
class EllipsisLit(Expr):
    span: Span


@_node
class TupleExpr(Expr):
    items: tuple[Expr, ...]
    span: Span


@_node
class ListExpr(Expr):
    items: tuple[Expr, ...]
    span: Span


@_node
class DictExpr(Expr):
    keys: tuple[Expr, ...]
    values: tuple[Expr, ...]
    span: Span


@_node
class SetExpr(Expr):
    items: tuple[Expr, ...]
    span: Span


@_node
class Starred(Expr):
    value: Expr
    span: Span


@_node
class CompFor(Node):
    target: Expr
    iter: Expr
    ifs: tuple[Expr, ...]
    span: Span


@_node
class ListComp(Expr):
    elt: Expr
    generators: tuple[CompFor, ...]
    span: Span


@_node
class SetComp(Expr):
    elt: Expr
    generators: tuple[CompFor, ...]
    span: Span


@_node
class GeneratorExp(Expr):
    elt: Expr
    generators: tuple[CompFor, ...]
    span: Span


@_node
class DictComp(Expr):
    key: Expr
    value: Expr
    generators: tuple[CompFor, ...]
    span: Span


@_node
class FormattedValue(Expr):
    value: Expr
    conversion: str | None
    spec: Expr | None  # a JoinedStr
    span: Span


@_node
class JoinedStr(Expr):
    parts: tuple[str | FormattedValue, ...]
    span: Span


@_node
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr
    span: Span


@_node
class UnaryOp(Expr):
    op: str
    operand: Expr
    span: Span


@_node
class BoolOp(Expr):
    op: str
    values: tuple[Expr, ...]
    span: Span


@_node
class Compare(Expr):
    left: Expr
    ops: tuple[str, ...]
    comparators: tuple[Expr, ...]
    span: Span


@_node
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr
    span: Span


@_node
class Keyword(Node):
    name: str
    value: Expr
    name_span: Span
    span: Span


@_node
class Call(Expr):
    func: Expr
    args: tuple[Expr, ...]
    keywords: tuple[Keyword, ...]
    span: Span


@_node
class Attribute(Expr):
    value: Expr
    attr: str
    attr_span: Span
    span: Span


@_node
class Slice(Node):
    start: Expr | None
    stop: Expr | None
    step: Expr | None
    span: Span


Index = Expr | Slice  # an item of `Subscript.index` (EllipsisLit is an Expr)


@_node
class Subscript(Expr):
    value: Expr
    index: tuple[Index, ...]
    span: Span
