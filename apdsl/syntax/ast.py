"""The typed syntax tree of an `.apk` program.

Every node is an immutable, slotted record (`apdsl.records`, like a frozen dataclass) whose
last field is `span: Span` (1-based lines and
columns, end column exclusive, `file` is the name given to `parse`).  Sequences are tuples, so
nodes are immutable.  Nodes hash and compare by identity (use them as dict keys freely);
`dump(node)` renders the structure without spans, for comparisons.  Fields, in constructor
order:

Module
    `Module(body, file, source, span)`: the statements of a file, its name and its text.

Statements (`Stmt`)
    `Decl(name, type, init, name_span, span)`  `x: f32[4, 8] @ sbuf as NZ = zeros`; `init` is an
        `Expr` or None.
    `TypeSpec(dtype, dims, buffer, format, dtype_span, buffer_span, format_span, span)` the type of
        a declaration or a parameter, `DTYPE[D0, ...] @ BUFFER [as FORMAT]`.  `dtype`, `buffer`
        and `format` are strings with any `nl.`/`nisa.`/`nki.language.` prefix removed (another
        dotted name such as `np.float32` is kept whole, for the checker to reject); `dims` are
        expressions (ints, names, arithmetic).  Not a statement itself.
    `Assign(targets, value, span)`  `a = b = e` has targets `(a, b)`; `a, b = e` has one
        `TupleExpr` target.  Targets are `Name`, `Subscript`, `Attribute` or tuples/lists of them.
    `AugAssign(target, op, value, span)`  `x += e` has op `"+"` (the binary operator, no `=`).
    `ExprStmt(expr, span)`
    `If(test, body, orelse, span)`  `elif` is an `If` alone in `orelse`; `orelse` may be empty.
    `For(target, iter, body, orelse, span)`  target is a `Name` or a `TupleExpr`/`ListExpr` of
        names; `orelse` (the `else:` block, run when the loop was not left by `break`) may be
        empty.
    `While(test, body, orelse, span)`  as `For`, with a test instead of an iterable.
    `Del(targets, span)`  `del a[i], d[k], x`: targets are `Name`, `Subscript` or `Attribute`.
    `Raise(exc, cause, span)`  `raise E(...) [from C]`; exc is None for a bare `raise`.
    `Assert(test, msg, span)`  msg is an `Expr` or None.
    `Pass(span)`, `Break(span)`, `Continue(span)`, `Return(value, span)` (value may be None).
    `Kernel(name, params, returns, body, decorators, name_span, span)`  returns is a `TypeSpec` or
        None; decorators are the expressions of `@...` lines (e.g. `nki.jit`), usually ignored.
    `FunctionDef(name, params, returns, body, decorators, name_span, span)`  returns is a
        `TypeSpec` or None (a return annotation that is not a tensor type is a hint, dropped).
    `Param(name, type, default, span)`  type is a `TypeSpec` or None, default an `Expr` or None.
        A parameter annotation that is not a tensor type (`int`, `list[int]`, `nl.ndarray`) is
        a type hint: accepted and dropped, so `type` is None.  Parameters of a `kernel` without
        a default always have a type.
    `Import(module, alias, span)`  `import a.b as c` gives `Import("a.b", "c")`.
    `FromImport(module, names, name_spans, span)`  names are `(name, alias_or_None)` pairs;
        `name_spans[i]` is the span of `names[i]`.

Expressions (`Expr`)
    `Name(id, span)`
    `NkiName(id, span, space)`  a `Name` too: `nl.X`, `nisa.X`, `nki.language.X` and
        `nki.isa.X` become `NkiName("X", span, "nl")` (`"nisa"` for the ISA) with the span of
        the whole dotted expression, so NKI documentation code pastes in unchanged; `space`
        tells the interpreter to look the name up among NKI's names (`nl.max` is NKI's
        reduction, bare `max` Python's).  The one node whose last field is not `span`.
    `Const(value, span)`  int, float, bool or None.  `-1` is `UnaryOp("-", Const(1))`.
    `Str(value, raw, raw_span, span)`  `raw` is the source text with its quotes and `raw_span`
        its span (`span` differs only by enclosing parentheses); `char_span(i, j)` is the source
        span of `value[i:j]` (escapes and the quotes accounted for).
    `EllipsisLit(span)`  `...`
    `TupleExpr(items, span)`, `ListExpr(items, span)`, `SetExpr(items, span)`,
        `DictExpr(keys, values, span)`; items of tuples, lists and sets (and assignment
        targets) may be `Starred(value, span)`, `*value`.
    `ListComp(elt, generators, span)`, `SetComp(elt, generators, span)`,
        `DictComp(key, value, generators, span)`, `GeneratorExp(elt, generators, span)`:
        generators are `CompFor(target, iter, ifs, span)` clauses, outermost first.
    `Lambda(params, body, span)`  params are `Param`s without types; body an `Expr`.
    `JoinedStr(parts, span)`  an f-string: parts are strings and
        `FormattedValue(value, conversion, spec, span)` (conversion None, "r", "s" or "a";
        spec a `JoinedStr` or None).
    `BinOp(op, left, right, span)`  op in `+ - * / // % @ ** << >> | ^ &`
    `UnaryOp(op, operand, span)`  op in `- + ~ not`
    `BoolOp(op, values, span)`  op `and`/`or`; `a or b or c` is one node with three values.
    `Compare(left, ops, comparators, span)`  ops in `< <= > >= == != in not in is is not`;
        `a < b < c` is one node.
    `IfExp(test, body, orelse, span)`  `body if test else orelse`
    `Call(func, args, keywords, span)`  keywords are `Keyword(name, value, name_span, span)`;
        args may be `Starred` (`f(*xs)`), and a keyword with name None is `**kwargs`.
    `Attribute(value, attr, attr_span, span)`
    `Subscript(value, index, span)`  index items are expressions, `Slice(start, stop, step, span)`
        (parts may be None) or `EllipsisLit`.

A parenthesised expression keeps its node, with a span that includes the parentheses.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Span
from .expr_nodes import (  # noqa: F401 - re-exported: `ast` is the one name for every node
    Attribute,
    BinOp,
    BoolOp,
    Call,
    Compare,
    CompFor,
    Const,
    DictComp,
    DictExpr,
    EllipsisLit,
    Expr,
    FormattedValue,
    GeneratorExp,
    IfExp,
    Index,
    JoinedStr,
    Keyword,
    ListComp,
    ListExpr,
    Name,
    NkiName,
    Node,
    SetComp,
    SetExpr,
    Slice,
    Starred,
    Stmt,
    Str,
    Subscript,
    TupleExpr,
    UnaryOp,
    fields,
    node_record,
    replace,
)

_node = node_record

# ---- statements --------------------------------------------------------------------------

@_node
class TypeSpec(Node):
    dtype: str
    dims: tuple[Expr, ...]
    buffer: str
    format: str | None
    dtype_span: Span
    buffer_span: Span
    format_span: Span | None
    span: Span


@_node
class Decl(Stmt):
    name: str
    type: TypeSpec
    init: Expr | None
    name_span: Span
    span: Span


@_node
class Assign(Stmt):
    targets: tuple[Expr, ...]
    value: Expr
    span: Span


@_node
class AugAssign(Stmt):
    target: Expr
    op: str
    value: Expr
    span: Span


@_node
class ExprStmt(Stmt):
    expr: Expr
    span: Span


@_node
class If(Stmt):
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    span: Span


@_node
class For(Stmt):
    target: Expr
    iter: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    span: Span


@_node
class While(Stmt):
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    span: Span


@_node
class Del(Stmt):
    targets: tuple[Expr, ...]
    span: Span


@_node
class Raise(Stmt):
    exc: Expr | None
    cause: Expr | None
    span: Span


@_node
class Assert(Stmt):
    test: Expr
    msg: Expr | None
    span: Span


@_node
class Pass(Stmt):
    span: Span


@_node
class Break(Stmt):
    span: Span


@_node
class Continue(Stmt):
    span: Span


@_node
class Return(Stmt):
    value: Expr | None
    span: Span


@_node
class Param(Node):
    name: str
    type: TypeSpec | None
    default: Expr | None
    span: Span


@_node
class Kernel(Stmt):
    name: str
    params: tuple[Param, ...]
    returns: TypeSpec | None
    body: tuple[Stmt, ...]
    decorators: tuple[Expr, ...]
    name_span: Span
    span: Span


@_node
class Lambda(Expr):
    params: tuple[Param, ...]
    body: Expr
    span: Span


@_node
class FunctionDef(Stmt):
    name: str
    params: tuple[Param, ...]
    returns: TypeSpec | None
    body: tuple[Stmt, ...]
    decorators: tuple[Expr, ...]
    name_span: Span
    span: Span


@_node
class Import(Stmt):
    module: str
    alias: str | None
    span: Span


@_node
class FromImport(Stmt):
    module: str
    names: tuple[tuple[str, str | None], ...]
    name_spans: tuple[Span, ...]
    span: Span


@_node
class Module(Node):
    body: tuple[Stmt, ...]
    file: str
    source: str
    span: Span


# ---- traversal ---------------------------------------------------------------------------

def children(node: Node) -> Iterator[Node]:
    """The direct child nodes of `node`, in field order."""
    for name in node._fields:
        value = getattr(node, name)
        if isinstance(value, Node):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, Node):
                    yield item


def target_names(target: Node) -> list[str]:
    """The names an assignment target binds (`a`, `a, (b, c)`)."""
    if isinstance(target, Name):
        return [target.id]
    if isinstance(target, (TupleExpr, ListExpr)):
        return [n for item in target.items for n in target_names(item)]
    if isinstance(target, Starred):
        return target_names(target.value)
    return []


def bound_names(stmt: Node) -> list[str]:
    """The names a statement itself binds (not those of the blocks nested in it)."""
    if isinstance(stmt, Decl):
        return [stmt.name]
    if isinstance(stmt, Assign):
        return [n for t in stmt.targets for n in target_names(t)]
    if isinstance(stmt, AugAssign):
        return target_names(stmt.target)
    if isinstance(stmt, (FunctionDef, Kernel)):
        return [stmt.name]
    if isinstance(stmt, Import):
        return [stmt.alias or stmt.module.split(".")[0]]
    if isinstance(stmt, FromImport):
        return [alias or name for name, alias in stmt.names]
    return []


def walk(node: Node) -> Iterator[Node]:
    """`node` and every node below it, parents before children."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(children(current))))


def dump(node: object) -> str:
    """A compact rendering without spans, for tests and debugging:
    `BinOp('+', Name('a'), Const(1))`."""
    if isinstance(node, Node):
        parts = [dump(getattr(node, name)) for name in node._fields
                 if not name.endswith(("span", "spans")) and name != "source"]
        return f"{type(node).__name__}({', '.join(parts)})"
    if isinstance(node, tuple):
        inner = ", ".join(dump(item) for item in node)
        return f"({inner},)" if len(node) == 1 else f"({inner})"
    return repr(node)
