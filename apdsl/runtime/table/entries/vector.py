"""Instruction table entries: the AscendC vector unit on UB (pipe V) and DataCopy/DataCopyPad
between GM and UB (see `apdsl.runtime.ascend.vector`).

Each is named `asc.NAME` (pyasc's name: `.apk` programs write `asc.add(...)`, pyasc kernels
`asc.add(...)`), runs on pipe V (the copies: MTE2 in, MTE3 out), takes UB operands of the
dtypes its AscendC page lists for Atlas A2, and has a cost class the profile reads
(`cost`: "vector", the default, is one 256-byte repeat a cycle, "dma" a GM transfer).
"""

from __future__ import annotations

from .. import semantics_vector as arith
from ..spec import ELEMENT, PATH_PIPES, WHOLE, Depends, Instruction, Operand

ARITH = ("int16", "float16", "int32", "float32")   # Add, Sub, Mul, Max, Min, Adds, ... (A2)
HALF_FLOAT = ("float16", "float32")                 # Div, Exp, Ln, Abs, Sqrt, ... (A2)
BITS16 = ("int16", "uint16")                        # And, Or, Not (A2)
SHIFTS = ("int16", "uint16", "int32", "uint32")     # ShiftLeft, ShiftRight (A2)
RELU = ("float16", "int32", "float32")              # Relu (A2)
DUPLICATE = ("int16", "uint16", "float16", "bfloat16", "int32", "uint32", "float32")  # A2
COPY = ("int8", "uint8", "int16", "uint16", "float16", "bfloat16", "int32", "uint32",
        "float32", "int64", "uint64")              # DataCopy (A2; double is not an apdsl dtype)

CAST = ("int8", "uint8", "int16", "float16", "bfloat16", "int32", "float32", "int64")
COMPARE = ("float16", "float32", "int32")                   # Compare (A2; int32: EQ only)
REDUCED = {"whole_reduce": "of each repeat", "block_reduce": "of each 32-byte block",
           "reduce": "of the operand"}
CPP = {"whole_reduce": "ReduceRepeat", "block_reduce": "ReduceDataBlock",
       "reduce": "ReduceMax/Min/Sum"}

VCOPY = ("uint16", "int16", "float16", "bfloat16", "uint32", "int32", "float32")  # Copy (A2)
TRANSPOSE = ("int8", "uint8", "int16", "uint16", "float16", "int32", "uint32", "float32")  # A2

VECTOR = {"ascend": ("V",)}
MODULE = "ascend.vector.ops"


def _ub(role: str, writes: bool = False, dtypes: tuple[str, ...] | None = None) -> Operand:
    return Operand(role, writes, {"ascend": ("ub",)}, dtypes)


def _binary(name: str, fn: object, dtypes: tuple[str, ...], summary: str,
            bits: bool = False) -> Instruction:
    return Instruction(f"asc.{name}", MODULE,
                       (_ub("dst", True, dtypes), _ub("src0", False, dtypes),
                        _ub("src1", False, dtypes)),
                       VECTOR, fn, limits={"bits": bits}, summary=summary,
                       depends=ELEMENT)


def _scalar(name: str, fn: object, dtypes: tuple[str, ...], summary: str) -> Instruction:
    return Instruction(f"asc.{name}", MODULE,
                       (_ub("dst", True, dtypes), _ub("src", False, dtypes)),
                       VECTOR, fn, summary=summary, depends=ELEMENT)


def _unary(name: str, fn: object, dtypes: tuple[str, ...], summary: str,
           bits: bool = False) -> Instruction:
    return Instruction(f"asc.{name}", MODULE,
                       (_ub("dst", True, dtypes), _ub("src", False, dtypes)),
                       VECTOR, fn, limits={"bits": bits}, summary=summary,
                       depends=ELEMENT)


ENTRIES: tuple[Instruction, ...] = (
    _binary("add", arith.add, ARITH, "dst = src0 + src1 (Add)"),
    _binary("sub", arith.sub, ARITH, "dst = src0 - src1 (Sub)"),
    _binary("mul", arith.mul, ARITH, "dst = src0 * src1 (Mul)"),
    _binary("div", arith.div, HALF_FLOAT, "dst = src0 / src1 (Div)"),
    _binary("max", arith.maximum, ARITH, "dst = max(src0, src1) (Max)"),
    _binary("min", arith.minimum, ARITH, "dst = min(src0, src1) (Min)"),
    _binary("bitwise_and", arith.bit_and, BITS16, "dst = src0 & src1 (And)", bits=True),
    _binary("bitwise_or", arith.bit_or, BITS16, "dst = src0 | src1 (Or)", bits=True),
    _scalar("adds", arith.add, ARITH, "dst = src + scalar (Adds)"),
    _scalar("muls", arith.mul, ARITH, "dst = src * scalar (Muls)"),
    _scalar("maxs", arith.maximum, ARITH, "dst = max(src, scalar) (Maxs)"),
    _scalar("mins", arith.minimum, ARITH, "dst = min(src, scalar) (Mins)"),
    _scalar("shift_left", arith.shift_left, SHIFTS, "dst = src << scalar (ShiftLeft)"),
    _scalar("shift_right", arith.shift_right, SHIFTS,
            "dst = src >> scalar, arithmetic when signed (ShiftRight)"),
    _scalar("leaky_relu", arith.leaky_relu, HALF_FLOAT,
            "dst = src where src >= 0, else src * scalar (LeakyRelu)"),
    _unary("exp", arith.exp, HALF_FLOAT, "dst = e ** src (Exp)"),
    _unary("ln", arith.ln, HALF_FLOAT, "dst = ln(src) (Ln)"),
    _unary("abs", arith.absolute, HALF_FLOAT, "dst = |src| (Abs)"),
    _unary("sqrt", arith.sqrt, HALF_FLOAT, "dst = sqrt(src) (Sqrt)"),
    _unary("rsqrt", arith.rsqrt, HALF_FLOAT, "dst = 1 / sqrt(src) (Rsqrt)"),
    _unary("reciprocal", arith.reciprocal, HALF_FLOAT, "dst = 1 / src (Reciprocal)"),
    _unary("relu", arith.relu, RELU, "dst = max(src, 0) (Relu)"),
    _unary("bitwise_not", arith.bit_not, BITS16, "dst = ~src (Not)", bits=True),
    Instruction("asc.axpy", MODULE,
                (_ub("dst", True, HALF_FLOAT), _ub("src", False, HALF_FLOAT)), VECTOR,
                arith.axpy,
                summary="dst = src * scalar + dst (Axpy)", depends=ELEMENT),
    Instruction("asc.mul_add_dst", MODULE,
                (_ub("dst", True, HALF_FLOAT), _ub("src0", False, HALF_FLOAT),
                 _ub("src1", False, HALF_FLOAT)), VECTOR,
                arith.mul_add_dst,
                summary="dst = src0 * src1 + dst (MulAddDst)", depends=ELEMENT),
    Instruction("asc.duplicate", "ascend.vector.ops_more", (_ub("dst", True, DUPLICATE),), VECTOR,
                None, summary="dst = scalar (Duplicate)", depends=ELEMENT),
    Instruction("asc.cast", "ascend.vector.ops_more", (_ub("dst", True, CAST), _ub("src", False, CAST)),
                VECTOR, None,
                summary="dst = src converted, rounded as round_mode says (Cast)", depends=ELEMENT),
    Instruction("asc.adv.quant", "ascend.quant",
                (_ub("dst", True, ("int8",)), _ub("src", False, HALF_FLOAT),
                 _ub("temp_buffer", False, ("uint8",))), VECTOR, arith.ascend_quant,
                summary="dst = int8 of src * scale + offset computed in half, rounded half to "
                "even (AscendQuant per tensor, the advanced API)", depends=ELEMENT),
    Instruction("asc.brcb", "ascend.vector.ops_more",
                (_ub("dst", True, DUPLICATE), _ub("src0", False, DUPLICATE)), VECTOR, None,
                summary="each of 8 src elements a repeat fills one 32-byte block (Brcb)",
                depends=WHOLE),
    Instruction("asc.compare", "ascend.vector.ops_more",
                (_ub("dst", True, ("int8", "uint8")), _ub("src0", False, COMPARE),
                 _ub("src1", False, COMPARE)), VECTOR, None,
                summary="dst bit i = cmp_mode(src0[i], src1[i]) (Compare)", depends=WHOLE),
    Instruction("asc.select", "ascend.vector.ops_more",
                (_ub("dst", True, HALF_FLOAT), _ub("src0", False, HALF_FLOAT),
                 _ub("src1", False, HALF_FLOAT),
                 _ub("sel_mask", False, ("uint8", "uint16", "uint32", "uint64"))),
                VECTOR, None,
                summary="dst = src0 where sel_mask's bit is set, else src1 (Select)",
                depends=Depends("element", observed=("sel_mask",))),
    *(Instruction(f"asc.{kind}_{what}", "ascend.vector.reduce",
                  (_ub("dst", True, HALF_FLOAT), _ub("src", False, HALF_FLOAT),
                   *((_ub("shared_tmp_buffer", False, HALF_FLOAT),) if kind == "reduce"
                     else ())),
                  VECTOR, None,
                  summary=f"{what} {REDUCED[kind]} ({CPP[kind]})")
      for kind in ("whole_reduce", "block_reduce", "reduce") for what in ("max", "min", "sum")),
    Instruction("asc.pair_reduce_sum", "ascend.vector.reduce",
                (_ub("dst", True, HALF_FLOAT), _ub("src", False, HALF_FLOAT)), VECTOR, None,
                summary="sum of each pair of adjacent elements (ReducePairElem)", depends=WHOLE),
    Instruction("asc.trans_data_to_5hd", "ascend.vector.transpose",
                (_ub("dst_list", True, TRANSPOSE), _ub("src_list", False, TRANSPOSE)), VECTOR,
                None,
                summary="16 x 16 transposes of 32-byte blocks, NCHW -> NC1HWC0 "
                "(TransDataTo5HD)", depends=WHOLE),
    Instruction("asc.copy", "ascend.vector.ops_more",
                (_ub("dst", True, VCOPY), _ub("src", False, VCOPY)), VECTOR, None,
                summary="UB -> UB, the mask form's lanes bit for bit (Copy)", depends=ELEMENT),
    Instruction("asc.transpose", "ascend.vector.transpose_ext",
                (_ub("dst", True, TRANSPOSE), _ub("src", False, TRANSPOSE),
                 _ub("shared_tmp_buffer", True, ("uint8",))), VECTOR, None,
                summary="the 16 x 16 transpose of 16-bit data, or NCHW -> NHWC with a scratch "
                "buffer (Transpose)", depends=WHOLE),
    Instruction("asc.data_copy", "ascend.vector.datacopy",
                (Operand("dst", True, {"ascend": ("ub", "gm", "l1")}, COPY),
                 Operand("src", False, {"ascend": ("ub", "gm")}, COPY)),
                {"ascend": ("MTE2", "MTE3", "V")}, None, cost="dma", routes=PATH_PIPES,
                summary="copy whole 32-byte blocks GM -> UB or L1 (MTE2), UB -> GM (MTE3) or "
                "UB -> UB (V); GM -> L1 with ND -> NZ (Nd2NzParams)", depends=ELEMENT),
    Instruction("asc.data_copy_pad", "ascend.vector.datacopy",
                (Operand("dst", True, {"ascend": ("ub", "gm")}, COPY),
                 Operand("src", False, {"ascend": ("ub", "gm")}, COPY)),
                {"ascend": ("MTE2", "MTE3")}, None, cost="dma", routes=PATH_PIPES,
                summary="copy bursts of any byte length between GM and UB, padding each UB "
                "burst to 32 bytes", depends=ELEMENT),
)
