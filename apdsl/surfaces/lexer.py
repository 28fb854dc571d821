"""Pygments lexer for the `.apk` kernel language.

Registered through the `pygments.lexers` entry point (see pyproject.toml), so `pygmentize -l apk`,
rich's `Syntax(code, "apk")` and the REPL all find it by name.  The word lists are spelled out
here rather than imported from `apdsl.tensor` because this module is loaded on every coloured
diagnostic and by Pygments' plugin scan: it must not pull in NumPy.  A test keeps the dtype list
in step with `apdsl.tensor.dtypes.ALL_NAMES`.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, include, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Whitespace,
)

__all__ = ["ApkLexer", "KEYWORDS", "PYTHON_ONLY", "CONSTANTS", "INSTRUCTIONS", "BUILTINS", "DTYPE_NAMES",
           "BUFFERS", "FORMATS"]

# `and or not in is` are keywords here (not Operator.Word) so every reserved word of the
# language shares one colour family.
KEYWORDS = ("kernel", "def", "return", "if", "elif", "else", "for", "while", "in", "assert",
            "import", "from", "as", "and", "or", "not", "is", "pass", "break", "continue",
            "lambda", "del", "raise")
# Python keywords that are not part of .apk (a located error names the Python frontend):
# coloured as reserved words, never offered by completion.
PYTHON_ONLY = ("class", "try", "except", "finally", "with", "global", "nonlocal", "yield",
               "async", "await")
CONSTANTS = ("True", "False", "None")
# every instruction of the table with a Python name (`apdsl.runtime.table.PYTHON_NAMES`),
# spelled out because the table imports NumPy; tests/test_table_lists.py keeps it in step
INSTRUCTIONS = ("dma_copy", "dma_compute", "tensor_copy", "memset", "iota", "nc_matmul", "mmad", "register_alloc",
                "register_load", "reciprocal", "tensor_tensor", "tensor_scalar",
                "scalar_tensor_tensor", "tensor_copy_predicated", "affine_select", "range_select",
                "select_reduce", "tensor_tensor_scan", "activation", "activation_reduce", "activate2",
                "tensor_reduce", "tensor_partition_reduce", "bn_stats", "bn_aggr", "max8",
                "nc_find_index8", "nc_match_replace8", "dropout", "rng", "rand2", "set_rng_seed",
                "rand_set_state", "rand_get_state",
                "nc_transpose", "dma_transpose", "nc_stream_shuffle", "local_gather", "nc_n_gather",
                "register_move", "register_store", "tensor_scalar_reduce",
                "tensor_scalar_cumulative", "exponential", "nonzero_with_count",
                "sequence_bounds", "quantize_mx", "nc_matmul_mx", "sendrecv", "core_barrier",
                "topk")
BUILTINS = ("ndarray", "load", "save", "host", "allclose", "equal", "print", "range",
            "make_layout", "make_tensor", "get_tile", "tile_view", "make_tensor_like",
            # declaration initialisers (`= zeros`, `= random(0)`)
            "zeros", "arange", "random")
DTYPE_NAMES = ("float32", "float16", "bfloat16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
               "int4", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
               "tfloat32", "tf32", "f32", "f16", "bf16", "i32", "fp32", "fp16", "half", "float", "i8", "u8", "i16",
               "u16", "u32", "i64", "fp8_e4m3", "fp8_e5m2",
               "float8_e8m0fnu", "float8_e4m3fn_x4", "float8_e5m2_x4", "float4_e2m1fn_x4",
               "bool_")
BUFFERS = ("sbuf", "psum", "hbm", "private_hbm", "shared_hbm", "gm", "l1", "l0a", "l0b", "l0c",
           "ub", "bt")
FORMATS = ("ND", "ND_ALIGN", "COLUMN_MAJOR", "NCHW", "NHWC", "HWCN", "NDHWC", "NCDHW", "NZ",
           "FRACTAL_NZ", "zN", "ZZ", "zZ", "ZN", "nZ", "NC1HWC0", "FRACTAL_Z", "NDC1HWC0",
           "FRACTAL_Z_3D")

_IDENT = r"[^\W\d]\w*"
_DOTTED = _IDENT + r"(?:\." + _IDENT + ")*"


def _alt(names: tuple[str, ...]) -> str:
    """A non-capturing alternation of whole words, longest first so `int4` never stops at `in`."""
    return r"(?:" + "|".join(sorted(names, key=len, reverse=True)) + r")\b"


# Words that may start a line followed by ':' without being a declaration (`else:`).
_NOT_DECLARED = r"(?!(?:" + "|".join(KEYWORDS + PYTHON_ONLY + CONSTANTS) + r")\b)"
_DTYPE_AHEAD = r"(?=[ \t]*(?:(?:nl|nisa)\.)?" + _alt(DTYPE_NAMES) + ")"


class ApkLexer(RegexLexer):
    """Lexer for apdsl `.apk` kernels (Python-like syntax with tensor declarations)."""

    name = "apk"
    aliases = ["apk", "apdsl"]
    filenames = ["*.apk"]

    tokens = {
        "root": [
            # `NAME: DTYPE[...] @ BUFFER` at the start of a line declares NAME.
            (r"^([ \t]*)" + _NOT_DECLARED + "(" + _IDENT + r")([ \t]*)(:)(?!:)",
             bygroups(Whitespace, Name.Variable, Whitespace, Punctuation)),
            (r"\n", Whitespace),
            (r"[ \t\f\r]+", Whitespace),
            (r"\\\n", Whitespace),
            (r"#.*$", Comment.Single),
            include("strings"),
            include("numbers"),
            (r"(kernel|def)([ \t]+)(" + _IDENT + ")",
             bygroups(Keyword.Declaration, Whitespace, Name.Function)),
            # Module names: `from a.b import x`, `import a.b as c` (imported names stay Name).
            (r"(from)([ \t]+)(" + _DOTTED + r")([ \t]+)(import)\b",
             bygroups(Keyword.Namespace, Whitespace, Name.Namespace, Whitespace,
                      Keyword.Namespace)),
            (r"(import)([ \t]+)(" + _DOTTED + ")",
             bygroups(Keyword.Namespace, Whitespace, Name.Namespace)),
            (r"(import|from)\b", Keyword.Namespace),
            # A format name only counts as one after `as` (or as a `format=` argument).
            (r"(as)([ \t]+)(" + _alt(FORMATS) + ")",
             bygroups(Keyword, Whitespace, Name.Class)),
            (r"(format)([ \t]*)(=)([ \t]*)(" + _alt(FORMATS) + ")",
             bygroups(Name, Whitespace, Operator, Whitespace, Name.Class)),
            (words(CONSTANTS, suffix=r"\b"), Keyword.Constant),
            (words(KEYWORDS, suffix=r"\b"), Keyword),
            (words(PYTHON_ONLY, suffix=r"\b"), Keyword.Reserved),
            # Parameters and in-line declarations: `A: f16[M, K]`.
            ("(" + _IDENT + r")([ \t]*)(:)" + _DTYPE_AHEAD,
             bygroups(Name.Variable, Whitespace, Punctuation)),
            # NKI spellings: `nl.sbuf`, `nisa.dma_copy`, `nki.language.float32`.
            (r"(nki)(\.)(language|isa)(\.)(?=[^\W\d])",
             bygroups(Name.Namespace, Punctuation, Name.Namespace, Punctuation)),
            (r"(nl|nisa)(\.)(?=[^\W\d])", bygroups(Name.Namespace, Punctuation)),
            (r"(@)([ \t]*)(?:(nl|nisa)(\.))?(" + _alt(BUFFERS) + ")",
             bygroups(Punctuation.Marker, Whitespace, Name.Namespace, Punctuation,
                      Name.Constant)),
            (words(INSTRUCTIONS + BUILTINS, suffix=r"\b"), Name.Builtin),
            (words(DTYPE_NAMES, suffix=r"\b"), Keyword.Type),
            (words(BUFFERS, suffix=r"\b"), Name.Constant),
            # After a dot: a method when called, otherwise an attribute.
            (r"(\.)([ \t]*)(" + _IDENT + r")(?=[ \t]*\()",
             bygroups(Punctuation, Whitespace, Name.Function)),
            (r"(\.)([ \t]*)(" + _IDENT + ")", bygroups(Punctuation, Whitespace, Name.Attribute)),
            (_IDENT, Name),
            (r"\.\.\.", Punctuation),
            (r"->", Punctuation),
            (r"\*\*=?|//=?|<<=?|>>=?|[-+*/%@&|^]=?|==|!=|<=|>=|[<>~=]", Operator),
            (r"[()\[\]{},:;.]", Punctuation),
        ],
        "numbers": [
            (r"(\d(?:_?\d)*)?\.\d(?:_?\d)*([eE][+-]?\d(?:_?\d)*)?", Number.Float),
            (r"\d(?:_?\d)*\.(?!\.)([eE][+-]?\d(?:_?\d)*)?", Number.Float),
            (r"\d(?:_?\d)*[eE][+-]?\d(?:_?\d)*", Number.Float),
            (r"0[xX](?:_?[0-9a-fA-F])+", Number.Hex),
            (r"0[bB](?:_?[01])+", Number.Bin),
            (r"0[oO](?:_?[0-7])+", Number.Oct),
            (r"\d(?:_?\d)*", Number.Integer),
        ],
        "strings": [
            # f-strings: the fields `{...}` are lexed as code
            (r'([fF])(""")', bygroups(String.Affix, String.Double), "ftdqs"),
            (r"([fF])(''')", bygroups(String.Affix, String.Single), "ftsqs"),
            (r'([fF])(")', bygroups(String.Affix, String.Double), "fdqs"),
            (r"([fF])(')", bygroups(String.Affix, String.Single), "fsqs"),
            (r'"""', String.Double, "tdqs"),
            (r"'''", String.Single, "tsqs"),
            (r'"', String.Double, "dqs"),
            (r"'", String.Single, "sqs"),
        ],
        "escape": [
            (r"\\(?:[\\'\"abfnrtv0\n]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}"
             r"|N\{[^}]*\}|[0-7]{1,3})", String.Escape),
        ],

        "fbraces": [
            (r"\{\{|\}\}", String.Escape),
            (r"\{", String.Interpol, "fexpr"),
        ],
        # A field: code up to its closing brace, then its conversion and format spec.
        "fexpr": [
            (r"\}", String.Interpol, "#pop"),
            (r"![rsa](?=[:}])", String.Interpol),
            (r"(:)([^{}\n'\"]*)", bygroups(String.Interpol, String.Other)),
            (r"\n", Whitespace, "#pop"),
            (r"\{", String.Interpol, "fexpr"),
            include("root"),
        ],
        "fdqs": [
            include("escape"), include("fbraces"),
            (r'[^"\\\n{}]+', String.Double),
            (r"\\|\}", String.Double),
            (r'"', String.Double, "#pop"),
            (r"\n", Whitespace, "#pop"),
        ],
        "fsqs": [
            include("escape"), include("fbraces"),
            (r"[^'\\\n{}]+", String.Single),
            (r"\\|\}", String.Single),
            (r"'", String.Single, "#pop"),
            (r"\n", Whitespace, "#pop"),
        ],
        "ftdqs": [
            include("escape"), include("fbraces"),
            (r'"""', String.Double, "#pop"),
            (r'[^"\\{}]+|"', String.Double),
            (r"\\|\}", String.Double),
        ],
        "ftsqs": [
            include("escape"), include("fbraces"),
            (r"'''", String.Single, "#pop"),
            (r"[^'\\{}]+|'", String.Single),
            (r"\\|\}", String.Single),
        ],
        # An unterminated one-line string ends at the end of the line, so one bad quote does
        # not colour the rest of the file.
        "dqs": [
            include("escape"),
            (r'[^"\\\n]+', String.Double),
            (r"\\", String.Double),
            (r'"', String.Double, "#pop"),
            (r"\n", Whitespace, "#pop"),
        ],
        "sqs": [
            include("escape"),
            (r"[^'\\\n]+", String.Single),
            (r"\\", String.Single),
            (r"'", String.Single, "#pop"),
            (r"\n", Whitespace, "#pop"),
        ],
        "tdqs": [
            include("escape"),
            (r'"""', String.Double, "#pop"),
            (r'[^"\\]+|"', String.Double),
            (r"\\", String.Double),
        ],
        "tsqs": [
            include("escape"),
            (r"'''", String.Single, "#pop"),
            (r"[^'\\]+|'", String.Single),
            (r"\\", String.Single),
        ],
    }
