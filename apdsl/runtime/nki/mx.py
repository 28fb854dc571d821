"""The microscaling instructions of NeuronCore-v4 (trn3): `quantize_mx` on the Vector Engine and
`nc_matmul_mx` on the Tensor Engine, with the rules of their NKI isa docstrings and the MXFP
deep dive (layouts, sizes, dtypes, the quadrant-spread scales); their arithmetic is
`apdsl.runtime.table.semantics_mx`.  quantize_mx's block scale is the one neuronx-cc's
`--enable-mx-alternative-emax` selects (`apdsl.options(mx_alternative_emax=...)`): by default
twice the OCP scale, as the docstring says (the compiler's default since Neuron SDK 2.31), else
the OCP rule with saturation.

Scales: scaling group g (data partitions 8g..8g+7) keeps its scale at partition
32 * (g // 4) + g % 4 of the scale view, the quadrant its data came from; a view may start 0, 4,
8 or 12 partitions into a quadrant, so four tensors' scales can share one tile.  Only those
partitions are read or written: the others of a scale tile may hold anything (or nothing).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor import targets
from ...tensor.machine import current
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import psum, unwritten
from ..core.limits import check_limits
from ..core.operands import arg_error, free_size, start_partition
from ..core.written import leave_unwritten
from ..plans.matmul_run import accumulation
from ..table import TABLE
from ..table import semantics_mx as mx
from ..table.spec import Call
from . import reduce_run as rr

_OFFSETS = (0, 4, 8, 12)  # where a scale view may start within its quadrant


def quantize_mx(dst: Tensor, src: Tensor, dst_scale: Tensor, name: str | None = None) -> None:
    """Quantize bfloat16/float16 `src` [P, F] to MXFP8: `dst` [P, F / 4] (four values an
    element) and one scale per group of 8 partitions x 4 values in `dst_scale` (see the module
    docstring for where): 2**(floor(log2(max |v|)) - (Emax - 1)), or with
    `apdsl.options(mx_alternative_emax=False)` the OCP 2**(floor(log2(max |v|)) - Emax) and
    values saturating at the element type's largest.

    >>> with apdsl.target("trn3"):
    ...     x = apdsl.ndarray((32, 4), "bfloat16", "sbuf")
    ...     apdsl.memset(x, 3.0)
    ...     q = apdsl.ndarray((32, 1), "float8_e4m3fn_x4", "sbuf")
    ...     s = apdsl.ndarray((4, 1), "uint8", "sbuf")
    ...     apdsl.quantize_mx(q, x, s)
    ...     hex(int(q.numpy()[0, 0])), int(s.numpy()[0, 0])
    ('0x74747474', 121)
    """
    call = rr.begin("quantize_mx", name, {"dst": dst, "src": src, "dst_scale": dst_scale})
    _trn3(call)
    ps, fs = call.parts("src"), call.free("src")
    if ps is not None and fs is not None:
        if ps % mx.QUADRANT or ps > 128:
            raise rr.shape_error(call, f"src covers {ps} partitions; quantize_mx takes a "
                                 "multiple of 32, at most 128", "APK961",
                                 "pad the partitions to 32, 64, 96 or 128", partitions=ps)
        if fs % mx.PACK:
            raise rr.shape_error(call, f"src has {fs} elements a partition; quantize_mx takes "
                                 "a multiple of 4 (four values make one packed element)",
                                 "APK961", "pad the free size to a multiple of 4")
        _data_shape(call, "dst", ps, fs // mx.PACK, "src")
        _scale_shape(call, "dst_scale", ps, fs // mx.PACK, "src")
    call.record()
    if call.accs is None:
        return
    values = call.read_f32("src").reshape(ps, fs)
    _finite(call, values)
    alternative = current().options.mx_alternative_emax
    exps = mx.group_exponents(values, call.tensors["dst"].dtype.name, alternative)
    if (exps < -mx.SCALE_BIAS).any():
        _tiny(call, values, exps)
    bits, scales = mx.quantize(values, call.tensors["dst"].dtype.name, alternative, exps)
    rows = _scale_views(call, "dst_scale", ps)
    ex.prepare_write(call.accs["dst"], call.label, "dst")
    for acc, _ in rows:
        ex.prepare_write(acc, call.label, "dst_scale")
    garbage = _garbage_groups(ps, fs)
    ex.store(call.accs["dst"], bits.reshape(call.accs["dst"].shape))
    for acc, groups in rows:
        ex.store(acc, scales[groups].view(acc.dtype.np).reshape(acc.shape))
    if garbage is not None:  # exactly the groups computed from unwritten data stay unwritten
        bad, origin = garbage
        leave_unwritten(call.accs["dst"], np.repeat(bad, mx.GROUP_PARTITIONS, axis=0), origin)
        for acc, groups in rows:
            leave_unwritten(acc, bad[groups], origin)


def _garbage_groups(parts: int, free: int) -> tuple[np.ndarray, Any] | None:
    """The scaling groups (8 partitions x 4 values: [parts / 8, free / 4]) of quantize_mx's src
    holding unwritten data, and its origin; None when it read none.  A group's scale and its
    32 quantized values depend on its values only (the docstring's scale rule), so the
    instruction's reads are set aside (they would poison every output) and these groups' outputs
    are left unwritten, the others written."""
    read = unwritten.read_of("src")
    if read is None:
        return None
    unwritten.begin()
    bad, origin = read
    groups = np.reshape(np.asarray(bad, bool), (parts // mx.GROUP_PARTITIONS,
                                                mx.GROUP_PARTITIONS, free // mx.PACK, mx.PACK))
    return groups.any(axis=(1, 3)), origin


def nc_matmul_mx(dst: Tensor, stationary: Tensor, moving: Tensor, stationary_scale: Tensor,
                 moving_scale: Tensor, tile_position: Any = None, tile_size: Any = None,
                 accumulate: bool | None = None, name: str | None = None) -> None:
    """`dst (+)= S.T @ M` where S [K, M] and M [K, N] are MX data (four values an element, so
    the contraction is 4K long) dequantized by their group scales; dst [M, N] in PSUM, float32
    or bfloat16.  `accumulate` as nc_matmul's (None: inferred from the PSUM state).

    >>> with apdsl.target("trn3"):
    ...     one = 0x38383838                              # four e4m3fn 1.0 values
    ...     a = apdsl.from_numpy(np.full((32, 2), one, np.uint32), "sbuf").view("float8_e4m3fn_x4")
    ...     s = apdsl.from_numpy(np.full((4, 2), 127, np.uint8), "sbuf")      # scale 1.0
    ...     d = apdsl.ndarray((2, 2), "float32", "psum")
    ...     apdsl.nc_matmul_mx(d, a, a, s, s)
    ...     d.numpy()[0]
    array([128., 128.], dtype=float32)
    """
    if accumulate is not None and not isinstance(accumulate, (bool, np.bool_)):
        raise arg_error(f"nc_matmul_mx{'' if name is None else f' {name!r}'}",
                        f"accumulate must be True, False or None, got {accumulate!r}")
    call = rr.begin("nc_matmul_mx", name, {
        "dst": dst, "stationary": stationary, "moving": moving,
        "stationary_scale": stationary_scale, "moving_scale": moving_scale})
    tgt = _trn3(call)
    rows = _row_tile(call, tile_position, tile_size)
    k, m, n = call.parts("stationary"), call.free("stationary"), call.free("moving")
    if None not in (k, m, n, call.parts("moving"), call.parts("dst")):
        _matmul_shapes(call, k, m, n)
        check_limits(TABLE["nc_matmul_mx"], call.label,
                     Call(tgt, {"dst": call.tensors["dst"].dtype.name}, {"rows": rows}),
                     {"K": k, "M": m, "N": n})
        _scale_shape(call, "stationary_scale", k, m, "stationary")
        _scale_shape(call, "moving_scale", k, n, "moving")
    call.record()
    if call.accs is None:
        return
    st = call.read("stationary").reshape(k, m)
    mv = call.read("moving").reshape(k, n)
    s_scale = _read_scales(call, "stationary_scale", k, m)
    m_scale = _read_scales(call, "moving_scale", k, n)
    d = call.accs["dst"]
    adding = accumulation(d, accumulate, tgt, call.label)
    result = mx.matmul(st, mv, s_scale, m_scale, call.tensors["stationary"].dtype.name,
                       call.tensors["moving"].dtype.name)
    if adding:
        result = result + ex.read_float32(d, call.label, "dst").reshape(m, n)
    ex.prepare_write(d, call.label, "dst")
    ex.store(d, result.reshape(d.shape))
    psum.note_matmul(d, False)


# -- the rules ----------------------------------------------------------------------------------

def _trn3(call: rr.Call) -> targets.Target:
    tgt = targets.target_for(call.tensors["dst"].buffer)
    if tgt.name not in TABLE[call.op].limits["targets"]:
        raise TargetError(f"{call.label}: {call.op} needs NeuronCore-v4 (trn3); the target is "
                          f"{tgt.name}", code="APK961", help="run with --target trn3 (apdsl.target('trn3') in "
                          "Python)", target=tgt.name)
    for role, t in call.pairs:
        if t.dynamic is not None:
            raise TargetError(f"{call.label}: {role} {t.name} is a runtime-indexed view; apdsl "
                              f"models {call.op} on static views only", code="APK961",
                              help=f"copy {role} into a tile first", role=role)
    return tgt


def _data_shape(call: rr.Call, role: str, parts: int, free: int, of: str) -> None:
    p, f = call.parts(role), call.free(role)
    if p is not None and (p, f) != (parts, free):
        raise rr.shape_error(call, f"{role} is [{p}, {f}] (partitions, elements a partition); "
                             f"{of} [{parts}, {free * mx.PACK}] packs into [{parts}, {free}]",
                             "APK961", f"allocate {role} as [{parts}, {free}] of "
                             f"{call.tensors[role].dtype}")


def _scale_shape(call: rr.Call, role: str, parts: int, free: int, of: str) -> None:
    """A scale view: `free` elements a partition (one per packed column of its data), enough
    partitions for the quadrant-spread rows, starting 0, 4, 8 or 12 into a quadrant, and each
    group's scale in the quadrant its data came from."""
    groups = parts // mx.GROUP_PARTITIONS
    need = int(mx.scale_rows(groups)[-1]) + 1 if groups else 0
    p, f = call.parts(role), call.free(role)
    if p is None:
        return
    t = call.tensors[role]
    if f != free or p < need:
        raise rr.shape_error(
            call, f"{role} is [{p}, {f}]; {of}'s {parts} partitions x {free} packed columns need "
            f"{free} scales a partition on {need} partitions", "APK962",
            f"allocate {role} as [{groups}, {free}] when {of} has at most 32 partitions, else "
            f"[{parts}, {free}] (scales spread over the quadrants)", partitions=p, free=f)
    start, data_start = start_partition(t), start_partition(call.tensors[of])
    if start is None or data_start is None:
        return
    if start % mx.QUADRANT not in _OFFSETS:
        raise rr.shape_error(
            call, f"{role} starts at partition {start}, {start % mx.QUADRANT} into its quadrant; "
            "scales start 0, 4, 8 or 12 partitions into a quadrant", "APK962",
            f"slice the scale tile at a partition offset of 0, 4, 8 or 12 (as {role}[4:, ...])",
            start=start)
    for g, row in enumerate(mx.scale_rows(groups)):
        came, went = (data_start + g * mx.GROUP_PARTITIONS) // mx.QUADRANT, \
            (start + int(row)) // mx.QUADRANT
        if came != went:
            raise rr.shape_error(
                call, f"the scales of {of}'s partitions {data_start + 8 * g}.."
                f"{data_start + 8 * g + 7} (quadrant {came}) would be at partition "
                f"{start + int(row)} of {role} (quadrant {went}); a scale stays in the quadrant "
                "its data came from", "APK962",
                f"start {role} in quadrant {came - g // mx.SCALES_PER_QUADRANT}")


def _scale_views(call: rr.Call, role: str, parts: int) -> list[tuple[ex.Access, np.ndarray]]:
    """The partitions of scale operand `role` that hold scales, quadrant by quadrant: (the
    resolved rows, the groups they hold)."""
    t = call.tensors[role]
    flat = t.reshape((t.shape[0], free_size(tuple(t.shape)))) if len(t.shape) != 2 else t
    groups = parts // mx.GROUP_PARTITIONS
    out = []
    for q in range(0, groups, mx.SCALES_PER_QUADRANT):
        count = min(mx.SCALES_PER_QUADRANT, groups - q)
        first = mx.QUADRANT * (q // mx.SCALES_PER_QUADRANT)
        view = flat[first:first + count, :]
        out.append((ex.resolve(view, call.label, role), np.arange(q, q + count)))
    return out


def _read_scales(call: rr.Call, role: str, parts: int, free: int) -> np.ndarray:
    """A scale operand's scales by group, [parts / 8, free] (their bits, uint8)."""
    out = np.zeros((parts // mx.GROUP_PARTITIONS, free), np.uint8)
    for acc, groups in _scale_views(call, role, parts):
        out[groups] = ex.read(acc, call.label, role).view(np.uint8).reshape(len(groups), free)
    return out


def _finite(call: rr.Call, values: np.ndarray) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        p, f = np.unravel_index(int(np.argmax(bad)), values.shape)
        raise ApdslRuntimeError(
            f"{call.label}: src[{p}, {f}] is {values[p, f]}; the quantize_mx docs do not say "
            "what a group holding NaN or infinity quantizes to", code="APK963",
            notes=["the block scale is floor(log2(max |V|)) - (Emax - 1) (or - Emax, the OCP "
                   "rule), which has no value for a non-finite maximum"],
            help="clamp or zero the non-finite values before quantizing", coord=(int(p), int(f)))


def _tiny(call: rr.Call, values: np.ndarray, exps: np.ndarray) -> None:
    g, c = np.unravel_index(int(np.argmin(exps)), exps.shape)
    block = values[g * 8:(g + 1) * 8, c * 4:(c + 1) * 4]
    raise ApdslRuntimeError(
        f"{call.label}: the group at src[{g * 8}:{g * 8 + 8}, {c * 4}:{c * 4 + 4}] has largest "
        f"magnitude {float(np.abs(block).max())!r}, whose scale 2**{int(exps[g, c])} is below "
        "float8_e8m0fnu's smallest, 2**-127; the quantize_mx docs do not say what happens",
        code="APK963", help="scale the data up before quantizing (by a power of two, undone "
        "after the matmul)", scale_exponent=int(exps[g, c]))


def _row_tile(call: rr.Call, position: Any, size: Any) -> int:
    """The docstring's row tiling: tile_size (rows, 128) with rows 32, 64 or 128,
    tile_position (a multiple of rows, 0); both or neither.  The rows the tile gives."""
    if position is None and size is None:
        return 128
    ok = isinstance(position, (list, tuple)) and isinstance(size, (list, tuple)) and \
        len(position) == 2 and len(size) == 2 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool)
            for v in (*position, *size))
    if ok:
        (r0, c0), (rs, cs) = position, size
        ok = rs in (32, 64, 128) and cs == 128 and c0 == 0 and r0 % rs == 0 and \
            0 <= r0 and r0 + rs <= 128
    if not ok:
        raise TargetError(f"{call.label}: tile_position {position!r} with tile_size {size!r} is "
                          "not a row tile: nc_matmul_mx tiles rows only", code="APK964",
                          notes=["tile_size is (rows, 128) with rows 32, 64 or 128; "
                                 "tile_position is (a multiple of rows, 0)"],
                          help="give both, for example tile_position=(64, 0), "
                          "tile_size=(64, 128), or neither for the whole array")
    return int(size[0])


def _matmul_shapes(call: rr.Call, k: int, m: int, n: int) -> None:
    k2, dm, dn = call.parts("moving"), call.parts("dst"), call.free("dst")
    if k2 != k or dm != m or dn != n:
        raise rr.shape_error(call, f"shapes do not fit dst (M, N) = stationary.T (M, K) @ "
                             f"moving (K, N): K {k} and {k2}, M {m} and dst {dm}, N {n} and dst "
                             f"{dn}", "APK964", "contract over the partitions: stationary "
                             "(K, M), moving (K, N), dst (M, N), K counting packed elements")
    if k % mx.QUADRANT:
        raise rr.shape_error(call, f"stationary and moving cover {k} partitions; nc_matmul_mx "
                             "takes a multiple of 32", "APK964",
                             "pad the contraction to 32, 64, 96 or 128 partitions")
    if m % 2:
        raise rr.shape_error(call, f"stationary has {m} elements a partition; nc_matmul_mx "
                             "takes an even number", "APK964", "pad M to an even size")
