"""The .apk grammar, parser and AST: every construct, precedence, spans, prefixes, strings.

Python's own parser is the oracle wherever apk and Python share syntax: random expressions are
parsed by both and must be accepted or rejected alike and give the same structure; every node's
span must cover source text that parses back to that node; string values and their character
spans are checked against `ast.literal_eval`.
"""

from __future__ import annotations

import ast as pyast
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import NKI_EXAMPLE, SPEC_EXAMPLE

from apdsl.errors import ApdslSyntaxError, Span
from apdsl.resources import grammar_file, grammar_path, stdlib_path
from apdsl.syntax import ast as A
from apdsl.syntax import parse
from apdsl.syntax.ast import dump

FAST = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def stmts(source: str) -> tuple:
    return parse(source, "t.apk").body


def expr(text: str) -> A.Expr:
    """The expression `text`, parsed as the value of an assignment."""
    (stmt,) = stmts(f"r = {text}\n")
    return stmt.value


def text_at(source: str, span: Span) -> str:
    """The source text a span covers."""
    lines = source.split("\n")
    if span.line == span.end_line:
        return lines[span.line - 1][span.column - 1:span.end_column - 1]
    parts = [lines[span.line - 1][span.column - 1:]]
    parts += lines[span.line:span.end_line - 1]
    parts.append(lines[span.end_line - 1][:span.end_column - 1])
    return "\n".join(parts)


# ---- a structural oracle: Python's ast mapped onto apk's shapes ------------------------------

PY_OPS = {
    pyast.Add: "+", pyast.Sub: "-", pyast.Mult: "*", pyast.Div: "/", pyast.FloorDiv: "//",
    pyast.Mod: "%", pyast.MatMult: "@", pyast.Pow: "**", pyast.LShift: "<<",
    pyast.RShift: ">>", pyast.BitOr: "|", pyast.BitXor: "^", pyast.BitAnd: "&",
    pyast.USub: "-", pyast.UAdd: "+", pyast.Invert: "~", pyast.Not: "not",
    pyast.And: "and", pyast.Or: "or", pyast.Lt: "<", pyast.LtE: "<=", pyast.Gt: ">",
    pyast.GtE: ">=", pyast.Eq: "==", pyast.NotEq: "!=", pyast.In: "in", pyast.NotIn: "not in",
    pyast.Is: "is", pyast.IsNot: "is not",
}


def py_shape(node: pyast.AST) -> str:
    """A Python expression rendered like `dump` renders the matching apk node (no Str raw)."""
    op = PY_OPS.get(type(getattr(node, "op", None)))
    match node:
        case pyast.Name(id=name):
            return f"Name({name!r})"
        case pyast.Constant(value=value) if value is Ellipsis:
            return "EllipsisLit()"
        case pyast.Constant(value=str() as value):
            return f"Str({value!r})"
        case pyast.Constant(value=value):
            return f"Const({value!r})"
        case pyast.BinOp(left=left, right=right):
            return f"BinOp({op!r}, {py_shape(left)}, {py_shape(right)})"
        case pyast.UnaryOp(operand=operand):
            return f"UnaryOp({op!r}, {py_shape(operand)})"
        case pyast.BoolOp(values=values):
            return f"BoolOp({op!r}, {seq(values)})"
        case pyast.Compare(left=left, ops=ops, comparators=comps):
            names = tuple(PY_OPS[type(o)] for o in ops)
            return f"Compare({py_shape(left)}, {names!r}, {seq(comps)})"
        case pyast.IfExp(test=test, body=body, orelse=orelse):
            return f"IfExp({py_shape(test)}, {py_shape(body)}, {py_shape(orelse)})"
        case pyast.Call(func=func, args=args, keywords=kws):
            kw = ", ".join(f"Keyword({k.arg!r}, {py_shape(k.value)})" for k in kws)
            kw = f"({kw},)" if len(kws) == 1 else f"({kw})"
            return f"Call({py_shape(func)}, {seq(args)}, {kw})"
        case pyast.Attribute(value=value, attr=attr):
            return f"Attribute({py_shape(value)}, {attr!r})"
        case pyast.Subscript(value=value, slice=pyast.Tuple(elts=items)):
            return f"Subscript({py_shape(value)}, {seq(items)})"
        case pyast.Subscript(value=value, slice=item):
            return f"Subscript({py_shape(value)}, {seq([item])})"
        case pyast.Slice(lower=lo, upper=hi, step=step):
            parts = (py_shape(p) if p is not None else "None" for p in (lo, hi, step))
            return f"Slice({', '.join(parts)})"
        case pyast.Tuple(elts=items):
            return f"TupleExpr({seq(items)})"
        case pyast.List(elts=items):
            return f"ListExpr({seq(items)})"
        case pyast.Dict(keys=keys, values=values):
            return f"DictExpr({seq(keys)}, {seq(values)})"
    raise AssertionError(f"no apk counterpart for {pyast.dump(node)}")


def seq(nodes) -> str:
    inner = ", ".join(py_shape(n) for n in nodes)
    return f"({inner},)" if len(nodes) == 1 else f"({inner})"


def apk_shape(node: A.Node) -> str:
    """`dump` without the raw text of strings (Python's ast does not keep it)."""
    if isinstance(node, A.Str):
        return f"Str({node.value!r})"
    if isinstance(node, A.Node):
        parts = [apk_shape(getattr(node, name)) for name in node._fields
                 if not name.endswith(("span", "spans"))]
        return f"{type(node).__name__}({', '.join(parts)})"
    if isinstance(node, tuple):
        inner = ", ".join(apk_shape(i) for i in node)
        return f"({inner},)" if len(node) == 1 else f"({inner})"
    return repr(node)


# Random expressions in the syntax apk shares with Python.  Operands and operators are strung
# together freely, so many are invalid: both parsers must then reject them.
NAMES = st.sampled_from(["a", "b", "x1", "tile", "_p", "True", "None", "False"])
NUMBERS = st.sampled_from(["0", "7", "1_000", "0x1F", "0o17", "0b101", "1.5", "2e-3", ".5",
                           "3.", "1_0.2_5e1_0"])
STRINGS = st.sampled_from(["'s'", '"d q"', "'a\\'b'", '"\\n\\t\\\\"', "'\\x41\\u00e9'", "''"])
BINOPS = ["+", "-", "*", "/", "//", "%", "@", "**", "<<", ">>", "|", "^", "&", "<", "<=", ">",
          ">=", "==", "!=", "in", "not in", "is", "is not", "and", "or"]


@st.composite
def operand(draw, depth: int = 2) -> str:
    kinds = ["name", "number", "string"]
    if depth > 0:
        kinds += ["paren", "call", "attr", "index", "tuple", "list", "dict", "ifexp"]
    kind = draw(st.sampled_from(kinds))
    sub = expression(depth - 1)
    if kind == "name":
        text = draw(NAMES)
    elif kind == "number":
        text = draw(NUMBERS)
    elif kind == "string":
        text = draw(STRINGS)
    elif kind == "paren":
        text = f"({draw(sub)})"
    elif kind == "call":
        args = draw(st.lists(sub, max_size=3))
        kws = draw(st.lists(st.tuples(st.sampled_from(["k", "dst", "src"]), sub), max_size=2,
                            unique_by=lambda kv: kv[0]))
        trailing = draw(st.sampled_from(["", ","])) if args or kws else ""
        text = f"{draw(NAMES)}({', '.join(args + [f'{k}={v}' for k, v in kws])}{trailing})"
    elif kind == "attr":
        text = f"{draw(NAMES)}.{draw(st.sampled_from(['shape', 'ap', 'T']))}"
    elif kind == "index":
        items = draw(st.lists(st.one_of(sub, st.sampled_from(
            [":", "::2", "1:", ":4", "0:16", "a:b:c", "...", "::"])), min_size=1, max_size=3))
        text = f"{draw(NAMES)}[{', '.join(items)}]"
    elif kind == "tuple":
        items = draw(st.lists(sub, max_size=3))
        text = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    elif kind == "list":
        text = "[" + ", ".join(draw(st.lists(sub, max_size=3))) + "]"
    elif kind == "dict":
        pairs = draw(st.lists(st.tuples(sub, sub), max_size=2))
        text = "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    else:
        text = f"{draw(sub)} if {draw(sub)} else {draw(sub)}"
    return text


@st.composite
def expression(draw, depth: int = 2) -> str:
    parts = []
    for i in range(draw(st.integers(1, 4))):
        if i:
            parts.append(draw(st.sampled_from(BINOPS)))
        prefix = draw(st.lists(st.sampled_from(["-", "+", "~", "not"]), max_size=2))
        parts.extend(prefix)
        parts.append(draw(operand(depth)))
    return " ".join(parts)


@FAST
@given(expression())
def test_expressions_match_python(text: str) -> None:
    source = f"r = {text}\n"
    try:
        expected = py_shape(pyast.parse(source).body[0].value)
    except SyntaxError:
        with pytest.raises(ApdslSyntaxError):
            parse(source)
        return
    (stmt,) = parse(source).body
    assert apk_shape(stmt.value) == expected, text


@FAST
@given(expression())
def test_every_node_span_covers_its_own_text(text: str) -> None:
    source = f"r = {text}\n"
    try:
        module = parse(source)
    except ApdslSyntaxError:
        return
    for node in A.walk(module.body[0].value):
        if isinstance(node, (A.Slice, A.Keyword)):
            continue  # not expressions on their own
        piece = text_at(source, node.span)
        if isinstance(node, A.Str):
            assert text_at(source, node.raw_span) == node.raw
        assert apk_shape(expr(piece)) == apk_shape(node), (text, piece)
        if isinstance(node, A.Attribute):
            assert text_at(source, node.attr_span) == node.attr
        if isinstance(node, A.Call):
            for kw in node.keywords:
                assert text_at(source, kw.name_span) == kw.name
                assert text_at(source, kw.span).startswith(kw.name)


# ---- precedence, spot checks -------------------------------------------------------------------

@pytest.mark.parametrize("text, shape", [
    ("a + b * c", "BinOp('+', Name('a'), BinOp('*', Name('b'), Name('c')))"),
    ("a - b - c", "BinOp('-', BinOp('-', Name('a'), Name('b')), Name('c'))"),
    ("a ** b ** c", "BinOp('**', Name('a'), BinOp('**', Name('b'), Name('c')))"),
    ("-a ** b", "UnaryOp('-', BinOp('**', Name('a'), Name('b')))"),
    ("a @ b + c", "BinOp('+', BinOp('@', Name('a'), Name('b')), Name('c'))"),
    ("a | b ^ c & d << e", "BinOp('|', Name('a'), BinOp('^', Name('b'), BinOp('&', Name('c'), "
                           "BinOp('<<', Name('d'), Name('e')))))"),
    ("not a == b", "UnaryOp('not', Compare(Name('a'), ('==',), (Name('b'),)))"),
    ("a < b <= c", "Compare(Name('a'), ('<', '<='), (Name('b'), Name('c')))"),
    ("a not in b", "Compare(Name('a'), ('not in',), (Name('b'),))"),
    ("a is not None", "Compare(Name('a'), ('is not',), (Const(None),))"),
    ("a or b and c", "BoolOp('or', (Name('a'), BoolOp('and', (Name('b'), Name('c')))))"),
    ("a or b or c", "BoolOp('or', (Name('a'), Name('b'), Name('c')))"),
    ("x if c else y if d else z",
     "IfExp(Name('c'), Name('x'), IfExp(Name('d'), Name('y'), Name('z')))"),
    ("t.a.b(1)[2]", "Subscript(Call(Attribute(Attribute(Name('t'), 'a'), 'b'), (Const(1),), ()), "
                    "(Const(2),))"),
])
def test_precedence(text: str, shape: str) -> None:
    assert dump(expr(text)) == shape


# ---- literals ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("0x1F", 31), ("1_000", 1000), ("0o17", 15), ("0b101", 5), ("0", 0), ("00", 0),
    ("1e-5", 1e-5), ("2.5", 2.5), (".5", 0.5), ("3.", 3.0), ("1_0.5", 10.5),
    ("True", True), ("False", False), ("None", None),
])
def test_numbers_and_constants(text: str, value: object) -> None:
    node = expr(text)
    assert isinstance(node, A.Const)
    assert node.value == value and type(node.value) is type(value)


def test_collections() -> None:
    assert dump(expr("()")) == "TupleExpr(())"
    assert dump(expr("(x,)")) == "TupleExpr((Name('x'),))"
    assert dump(expr("(x)")) == "Name('x')"
    assert dump(expr("[1, 2,]")) == "ListExpr((Const(1), Const(2)))"
    assert dump(expr("[]")) == "ListExpr(())"
    assert dump(expr("{'h': 4, 'w': 2}")) == (
        "DictExpr((Str('h', \"'h'\"), Str('w', \"'w'\")), (Const(4), Const(2)))")
    assert dump(expr("{}")) == "DictExpr((), ())"
    assert dump(expr("...")) == "EllipsisLit()"


def test_indexing_sugar() -> None:
    assert dump(expr("t[0:16, 8:16]")) == (
        "Subscript(Name('t'), (Slice(Const(0), Const(16), None), "
        "Slice(Const(8), Const(16), None)))")
    assert dump(expr("t[3]")) == "Subscript(Name('t'), (Const(3),))"
    assert dump(expr("t[:, ::2]")) == (
        "Subscript(Name('t'), (Slice(None, None, None), Slice(None, None, Const(2))))")
    assert dump(expr("t[...]")) == "Subscript(Name('t'), (EllipsisLit(),))"
    assert dump(expr("t[0, ...]")) == "Subscript(Name('t'), (Const(0), EllipsisLit()))"
    assert dump(expr("t[-1]")) == "Subscript(Name('t'), (UnaryOp('-', Const(1)),))"


def test_calls_with_keywords_and_trailing_commas() -> None:
    node = expr("f(a, b=1,\n      c=[1, 2],)")
    assert dump(node) == ("Call(Name('f'), (Name('a'),), (Keyword('b', Const(1)), "
                          "Keyword('c', ListExpr((Const(1), Const(2))))))")
    assert node.span == Span("t.apk", 1, 5, 2, 17)
    assert node.keywords[1].name_span == Span("t.apk", 2, 7, 2, 8)


def test_print_is_an_ordinary_call() -> None:
    (stmt,) = stmts("print('x', t.shape, sep=', ')\n")
    assert isinstance(stmt, A.ExprStmt) and isinstance(stmt.expr, A.Call)
    assert stmt.expr.func.id == "print"


# ---- NKI prefixes ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, space", [
    ("nl.float32", "nl"), ("nisa.float32", "nisa"), ("nki.language.float32", "nl"),
    ("nki.isa.float32", "nisa"), ("neuronxcc.nki.language.float32", "nl")])
def test_nki_prefixes_resolve_to_a_marked_name(text: str, space: str) -> None:
    # a Name still (the bare name), marked as NKI's so the interpreter looks it up there
    node = expr(text)
    assert dump(node) == f"NkiName('float32', {space!r})"
    assert isinstance(node, A.Name) and node.id == "float32"
    assert node.span == Span("t.apk", 1, 5, 1, 5 + len(text))


def test_prefixes_inside_calls_and_chains() -> None:
    node = expr("nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf).reshape([64, 128])")
    assert dump(node) == (
        "Call(Attribute(Call(NkiName('ndarray', 'nl'), (TupleExpr((Const(128), Const(64))),), "
        "(Keyword('dtype', NkiName('float32', 'nl')), Keyword('buffer', NkiName('sbuf', 'nl'))"
        ")), 'reshape'), (ListExpr((Const(64), Const(128))),), ())")
    assert dump(expr("nl")) == "Name('nl')"
    assert dump(expr("nl.tile_size.pmax")) == "Attribute(NkiName('tile_size', 'nl'), 'pmax')"
    assert dump(expr("np.float32")) == "Attribute(Name('np'), 'float32')"


# ---- statements --------------------------------------------------------------------------------

def test_declarations() -> None:
    source = ("t: f32[128, 64] @ sbuf\n"
              "g: nl.float16[M, 2 * K] @ nl.hbm as FRACTAL_NZ = random(3)\n"
              "z: f32[4] @ gm as NC1HWC0 = 0\n")
    t, g, z = stmts(source)
    assert dump(t) == "Decl('t', TypeSpec('f32', (Const(128), Const(64)), 'sbuf', None), None)"
    assert dump(g) == ("Decl('g', TypeSpec('float16', (Name('M'), BinOp('*', Const(2), "
                       "Name('K'))), 'hbm', 'FRACTAL_NZ'), Call(Name('random'), (Const(3),), ()))")
    assert z.type.format == "NC1HWC0" and dump(z.init) == "Const(0)"
    assert text_at(source, g.type.dtype_span) == "nl.float16"
    assert text_at(source, g.type.buffer_span) == "nl.hbm"
    assert text_at(source, g.type.format_span) == "FRACTAL_NZ"
    assert text_at(source, g.name_span) == "g"
    assert text_at(source, g.span) == source.splitlines()[1]
    assert t.type.format_span is None


def test_assignments() -> None:
    a, b, c, d = stmts("x = 1\na, b = f()\nu = v = t[0]\nt[0:2], y.z = p, q\n")
    assert dump(a) == "Assign((Name('x'),), Const(1))"
    assert dump(b) == ("Assign((TupleExpr((Name('a'), Name('b'))),), "
                       "Call(Name('f'), (), ()))")
    assert dump(c) == "Assign((Name('u'), Name('v')), Subscript(Name('t'), (Const(0),)))"
    assert isinstance(d.targets[0].items[0], A.Subscript)
    assert isinstance(d.targets[0].items[1], A.Attribute)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%", "@", "**", "<<", ">>", "&", "|",
                                "^"])
def test_augmented_assignment(op: str) -> None:
    (node,) = stmts(f"x[0] {op}= y\n")
    assert dump(node) == f"AugAssign(Subscript(Name('x'), (Const(0),)), {op!r}, Name('y'))"


def test_if_elif_else() -> None:
    source = ("if a:\n    x = 1\nelif b:\n    x = 2\nelif c:\n    pass\nelse:\n    x = 3\n"
              "if d: y = 1\n")
    chain, short = stmts(source)
    assert dump(chain) == (
        "If(Name('a'), (Assign((Name('x'),), Const(1)),), (If(Name('b'), "
        "(Assign((Name('x'),), Const(2)),), (If(Name('c'), (Pass(),), "
        "(Assign((Name('x'),), Const(3)),)),)),))")
    assert chain.span == Span("t.apk", 1, 1, 8, 10)
    assert chain.orelse[0].span == Span("t.apk", 3, 1, 8, 10)
    assert dump(short) == "If(Name('d'), (Assign((Name('y'),), Const(1)),), ())"


def test_for_loops_and_loop_statements() -> None:
    loop, pair = stmts("for i in range(4):\n    if i:\n        break\n    continue\n"
                       "for a, b in zip(x, y):\n    pass\n")
    assert dump(loop) == ("For(Name('i'), Call(Name('range'), (Const(4),), ()), "
                          "(If(Name('i'), (Break(),), ()), Continue()), ())")
    assert dump(pair.target) == "TupleExpr((Name('a'), Name('b')))"


def test_assert_and_return() -> None:
    a, b = stmts("assert x == 1\nassert y, 'y must hold'\n")
    assert dump(a) == "Assert(Compare(Name('x'), ('==',), (Const(1),)), None)"
    assert dump(b) == "Assert(Name('y'), Str('y must hold', \"'y must hold'\"))"
    (f,) = stmts("def g():\n    return a, b\n")
    assert dump(f.body[0]) == "Return(TupleExpr((Name('a'), Name('b'))))"
    (empty,) = stmts("def f():\n    return\n")[0].body
    assert dump(empty) == "Return(None)"


def test_kernel_definition() -> None:
    source = ("@nki.jit\n"
              "kernel mm(A: f16[M, K] @ gm, B: f16[K, N] @ gm as ZN, alpha=1.0) -> "
              "f32[M, N] @ gm:\n"
              "    return A\n")
    (k,) = stmts(source)
    assert k.name == "mm" and text_at(source, k.name_span) == "mm"
    assert [p.name for p in k.params] == ["A", "B", "alpha"]
    assert dump(k.params[0].type) == "TypeSpec('f16', (Name('M'), Name('K')), 'gm', None)"
    assert k.params[1].type.format == "ZN"
    assert k.params[2].type is None and dump(k.params[2].default) == "Const(1.0)"
    assert dump(k.returns) == "TypeSpec('f32', (Name('M'), Name('N')), 'gm', None)"
    assert dump(k.decorators) == "(Attribute(Name('nki'), 'jit'),)"
    assert k.span.line == 1 and k.span.end_line == 3


def test_helper_definition() -> None:
    (f,) = stmts("def helper(a, b=1, c: f32[4] @ sbuf = None,):\n    return a\n")
    assert [(p.name, p.type is not None, dump(p.default)) for p in f.params] == [
        ("a", False, "None"), ("b", False, "Const(1)"), ("c", True, "Const(None)")]
    assert isinstance(f, A.FunctionDef) and f.decorators == ()
    (g,) = stmts("def g():\n    pass\n")
    assert g.params == ()


def test_imports() -> None:
    source = ("import tiles\nimport a.b as c\nfrom lib.gemm import tiled as tg, helper\n"
              "from m import (x,\n    y as z,\n)\n")
    i1, i2, f1, f2 = stmts(source)
    assert (i1.module, i1.alias) == ("tiles", None)
    assert (i2.module, i2.alias) == ("a.b", "c")
    assert (f1.module, f1.names) == ("lib.gemm", (("tiled", "tg"), ("helper", None)))
    assert [text_at(source, s) for s in f1.name_spans] == ["tiled as tg", "helper"]
    assert f2.names == (("x", None), ("y", "z"))
    assert f2.span.end_line == 6


# ---- layout: comments, blank lines, line endings -----------------------------------------------

def test_comments_and_blank_lines_anywhere() -> None:
    source = ("# header\n\n"
              "kernel k(A: f32[4] @ hbm):   # trailing\n"
              "\n"
              "    # comment in the block\n"
              "    x = f(1,   # inside brackets\n"
              "          # a whole comment line inside brackets\n"
              "          2)\n"
              "        # deeper comment\n"
              "\n"
              "# comment at column 0 inside the block\n"
              "    y = [\n\n        3,\n    ]\n"
              "    \n"
              "    return x\n"
              "# end without newline")
    (k,) = stmts(source)
    assert [type(s).__name__ for s in k.body] == ["Assign", "Assign", "Return"]
    assert dump(k.body[0].value) == "Call(Name('f'), (Const(1), Const(2)), ())"


def test_crlf_and_missing_final_newline() -> None:
    unix = "if a:\n    x = 'v'  # c\nelse:\n    x = 2"
    dos = unix.replace("\n", "\r\n")
    assert dump(parse(unix)) == dump(parse(dos))
    assert parse(dos).body[0].body[0].span == parse(unix).body[0].body[0].span


def test_byte_order_mark_is_ignored() -> None:
    module = parse("\ufeffx = 1\n")
    assert module.body[0].span == Span("<string>", 1, 1, 1, 6)
    assert module.source == "x = 1\n"


def test_backslash_continuation() -> None:
    (s,) = stmts("x = 1 + \\\n    2\n")
    assert dump(s) == "Assign((Name('x'),), BinOp('+', Const(1), Const(2)))"


def test_empty_and_comment_only_files() -> None:
    for source in ("", "\n\n", "# only a comment", "   \n# c\n   # d\n"):
        module = parse(source, "e.apk")
        assert module.body == () and module.source == source and module.file == "e.apk"


# ---- string literals ---------------------------------------------------------------------------

def test_string_forms() -> None:
    assert expr("'single'").value == "single"
    assert expr('"dou\\"ble"').value == 'dou"ble'
    assert expr('"tab\\there\\x41\\u00e9\\101"').value == "tab\there\x41\u00e9A"
    node = expr('"""multi\nline"""')
    assert node.value == "multi\nline" and node.raw == '"""multi\nline"""'


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab (),->.'\"\\\n\t\u00e9\u4e2d\x01")),
               max_size=12), st.data())
def test_str_char_span_points_at_the_source_of_each_value_slice(value: str, data) -> None:
    literal = repr(value)  # Python's own escaping: quotes, backslashes, \n, \t, \x01
    quote = literal[0]
    source = f"x = t.rearrange({literal}, h=2)\n"
    node = parse(source).body[0].value.args[0]
    assert node.value == value and node.raw == literal
    start = data.draw(st.integers(0, len(value)))
    end = data.draw(st.integers(start, len(value)))
    span = node.char_span(start, end)
    piece = text_at(source, span)
    if start == end:
        assert len(piece) == 1  # an empty range still shows one character
    else:
        assert pyast.literal_eval(quote + piece + quote) == value[start:end]


def test_char_span_in_a_triple_quoted_string_across_lines() -> None:
    source = 'p = """b (h\nw) -> b"""\n'
    node = parse(source).body[0].value
    assert node.value == "b (h\nw) -> b"
    span = node.char_span(5, 7)  # "w)"
    assert (span.line, span.column, span.end_line, span.end_column) == (2, 1, 2, 3)
    assert node.char_span(0, 1) == Span("<string>", 1, 8, 1, 9)


def test_char_span_of_a_parenthesised_string_stays_on_the_literal() -> None:
    node = expr("('a b')")
    assert node.span == Span("t.apk", 1, 5, 1, 12)
    assert node.raw_span == Span("t.apk", 1, 6, 1, 11)
    assert node.char_span(2, 3) == Span("t.apk", 1, 9, 1, 10)


# ---- whole programs ----------------------------------------------------------------------------




def test_spec_example_parses() -> None:
    module = parse(SPEC_EXAMPLE, "spec.apk")
    kinds = [type(s).__name__ for s in module.body]
    assert kinds == ["Decl", "Assign", "Assert", "Assert", "Kernel"]
    kernel = module.body[-1]
    assert [type(s).__name__ for s in kernel.body] == [
        "Assign", "ExprStmt", "Assign", "ExprStmt", "Assert", "Return"]
    assert kernel.returns.buffer == "shared_hbm"
    assert module.span == Span("spec.apk", 1, 1, 13, 1)


def test_nki_documentation_style_parses_like_the_bare_names() -> None:
    # the same tree, each prefixed name marked as NKI's (NkiName, a Name)
    bare = (NKI_EXAMPLE.replace("nl.", "").replace("nisa.", ""))
    marked = re.sub(r"NkiName\(('\w+'), '(nl|nisa)'\)", r"Name(\1)",
                    dump(parse(NKI_EXAMPLE).body))
    assert marked == dump(parse(bare).body)
    offsets = parse(NKI_EXAMPLE).body[0].body[0].value
    assert text_at(NKI_EXAMPLE, offsets.func.span) == "nl.ndarray"


def test_walk_visits_every_node_once() -> None:
    module = parse(SPEC_EXAMPLE)
    nodes = list(A.walk(module))
    assert nodes[0] is module
    assert len({id(n) for n in nodes}) == len(nodes)
    assert sum(isinstance(n, A.Assert) for n in nodes) == 3


def test_nodes_are_frozen() -> None:
    node = expr("a + 1")
    with pytest.raises(AttributeError):
        node.op = "-"  # type: ignore[misc]


# ---- resources and caching ---------------------------------------------------------------------

def test_resource_paths_find_the_top_level_folders() -> None:
    assert grammar_file().is_file() and grammar_file().parent == grammar_path()
    assert grammar_path().name == "grammar" and stdlib_path().name == "stdlib"


def test_parser_cache_is_written_reused_and_optional(tmp_path: Path) -> None:
    from apdsl.syntax import parser as P

    first = P._Parser(tmp_path / "cache")
    (cached,) = list((tmp_path / "cache").glob("*.tables"))
    files = sorted((tmp_path / "cache").iterdir())
    again = P._Parser(tmp_path / "cache")
    assert again._lark is None  # the tables came from the cache: Lark was not even built
    assert dump(again.parse(SPEC_EXAMPLE, "a")) == dump(first.parse(SPEC_EXAMPLE, "a"))
    assert sorted((tmp_path / "cache").iterdir()) == files

    cached.write_bytes(b"garbage")  # a corrupt cache is rebuilt, not an error
    rebuilt = P._Parser(tmp_path / "cache").parse("x = 1\n", "a")
    assert dump(rebuilt.body) == dump(parse("x = 1\n").body)

    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")  # the cache directory cannot be created under a file
    parser = P._Parser(blocker / "sub")
    assert dump(parser.parse("x = 1\n", "a").body) == dump(parse("x = 1\n").body)
    assert P._Parser(None).parse("y = 2\n", "b").body[0].span.file == "b"


def test_parser_module_does_not_import_numpy_or_rich() -> None:
    import subprocess
    import sys

    code = ("import sys; from apdsl.syntax import parse; parse('x = 1'); "
            "print([m for m in ('numpy', 'rich') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "APDSL_NO_CACHE": ""})
    assert out.stdout.strip() == "[]"
