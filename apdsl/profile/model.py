"""Durations: one executed hardware instruction (a trace record's piece, every operand one
lowered access pattern) -> where it runs and how long it takes, from `apdsl.profile.costs`.

Simple and monotone on purpose (SPEC section 14): time = fixed + bytes or work / throughput.
DMA: a descriptor per contiguous run (the union of both sides' run boundaries on NKI, the GM
side's on Ascend, where MTE2 and FIX reformat on chip), each run costing at least the 512-byte
floor, spread over the DMA engines the SBUF side's partitions use (a run over 64 KiB is cut, so a
contiguous HBM -> HBM copy spreads over every engine).  What the schedule adds: the bandwidth all
transfers share (HBM on NKI, the chip's GM on Ascend: `Cost.shared_bytes`) and the overhead of an
instruction that waits for the output of the one before it on its engine (`Cost.dependent_ns`).

Compute engines: the free size of dst or the summed free sizes of the inputs read from one
memory (SBUF, PSUM: each has its own read interface), whichever is larger, a cycle an element
(ARCH1; the ISA cost tables); a `[P, 1]` operand (activation's scale and bias, the scalar
operand of tensor_scalar) is read once per partition and costs nothing; the trn2 Vector
performance modes; never under MIN_II, plus ~100 cycles for a small free size.
"""

from __future__ import annotations

from math import ceil, gcd, prod
from typing import Any

from ..records import record
from ..runtime.table import outputs
from ..tensor import dtypes
from ..tensor.lowering import AccessPattern
from .costs import (
    FAST_PATHS,
    ISA_CYCLES_PER_ELEMENT,
    ISA_EXTRA_CYCLES,
    SPLIT_READS,
    VECTOR_MODES,
    Figure,
    table,
)

# The engine or pipe of an instruction comes from the instruction table, through its trace
# record (`Record.engine`: the default of its entry, or the engine= hint).  Register
# instructions run on an engine's sequencer, not on a compute engine: the model puts them on
# the Sync sequencer (an assumption; no public source times them).
ENGINE_NAMES = {"tensor": "Tensor", "vector": "Vector", "scalar": "Scalar", "gpsimd": "GpSimd",
                "sync": "Sync"}
ASCEND_PIPES = ("MTE2", "MTE1", "M", "FIX", "MTE3", "V", "S")


@record
class Cost:
    """Where one instruction runs and for how long (ns); for a DMA its bytes, descriptors
    (contiguous runs) and run length, and how many DMA engines it spreads over."""

    engine: str
    ns: float
    bytes: int = 0
    descriptors: int = 0
    run_bytes: int = 0
    dma_engines: int = 0
    fixed_ns: float = 0.0
    shared_bytes: int = 0       # bytes through the bandwidth every transfer shares (HBM, GM)
    dependent_ns: float = 0.0   # added when it waits for the previous instruction's output
    flops: float = 0.0          # matmul work (2 K M N), for the FLOP rate the report gives


def as_int(x: Any) -> int:
    """A pattern value as an int; a register gives its (last) value."""
    v = getattr(x, "value", x)
    if hasattr(x, "static") and hasattr(x, "reg"):  # RegisterSum
        return as_int(x.static) + as_int(x.reg)
    try:
        return int(v)
    except (TypeError, ValueError):
        return 1


def _bits(ap: AccessPattern) -> int:
    return dtypes.dtype(ap.dtype).bits


def elements(ap: AccessPattern) -> int:
    return prod(as_int(c) for _, c in ap.pattern)


def _onchip(ap: AccessPattern) -> bool:
    return ap.buffer in ("sbuf", "psum")


def partitions(ap: AccessPattern) -> int:
    return as_int(ap.pattern[0][1]) if _onchip(ap) and ap.pattern else 1


def run_elements(ap: AccessPattern) -> int:
    """Elements of one contiguous run: the innermost entry when its stride is 1 (the pattern
    is coalesced, so that is the longest), else one element.  An indirect operand's rows are
    runs of the innermost entry too."""
    pat = ap.pattern[1:] if _onchip(ap) else ap.pattern
    if not pat:
        return 1
    stride, count = pat[-1]
    return as_int(count) if as_int(stride) == 1 else 1


def storage_run_elements(ap: AccessPattern) -> int:
    """Elements of one contiguous run of the storage an operand covers, whatever order the
    copy visits them in: its entries sorted by stride, each joined to the run below it while
    its stride is that run's length.  On Ascend MTE2 and Fixpipe reformat on chip (Nd2Nz,
    column-major into ZN: CATLASS reads each column of a ColumnMajor B as one run of K), so
    GM is read in these runs even where the on-chip side's order crosses them.  A stride of 0
    reads the same elements again: it cuts no run."""
    entries = sorted((abs(as_int(s)), as_int(c)) for s, c in ap.pattern
                     if as_int(c) > 1 and as_int(s) != 0)
    run = 1
    for stride, count in entries:
        if stride != run:
            break
        run *= count
    return run


def _streamed(ins: list[AccessPattern], split: bool) -> int:
    """Elements per partition the inputs stream through the engine: their sum, or with
    `split` (an instruction whose ISA table says so: tensor_tensor max(MIN_II, N) with one
    input in PSUM and the other in SBUF, 2N with both in SBUF) the sum of the busiest memory's
    inputs, each memory feeding its own.  A [P, 1] operand is read once: free."""
    per: dict[str, int] = {}
    for ap in ins:
        f = elements(ap) // max(1, partitions(ap))
        if f > 1:
            key = ap.buffer if split else ""
            per[key] = per.get(key, 0) + f
    return max(per.values(), default=0)


def _descriptors(aps: list[AccessPattern], n: int) -> int:
    """Runs of a copy of `n` elements: a descriptor ends where either side's run ends."""
    runs = [max(1, run_elements(ap)) for ap in aps]
    if len(runs) == 1:
        return max(1, n // runs[0])
    a, b = runs[0], runs[1]
    lcm = a * b // gcd(a, b)
    return max(1, n // a + n // b - n // lcm)


class Model:
    """The cost model of one target."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.family = "ascend" if target.startswith("ascend") else "nki"
        self.f: dict[str, Figure] = table(target)

    def v(self, key: str) -> float:
        return self.f[key].value

    def engine_of(self, op: str, piece: dict[str, AccessPattern], hint: str | None) -> str:
        """The track an instruction runs on: its record's engine or pipe (the instruction
        table's), named as the profile shows it."""
        if self.family == "ascend":
            return hint if hint in ASCEND_PIPES else "S"
        cost = cost_class(op)
        if hint == "dma" or cost == "dma":
            return "DMA"
        if hint in ENGINE_NAMES:
            return ENGINE_NAMES[hint]
        if cost == "register":
            return "Sync"
        return "Vector"

    def cost(self, op: str, piece: dict[str, AccessPattern], hint: str | None = None,
             dge_mode: str | None = None, arguments: dict[str, Any] | None = None) -> Cost:
        """`hint`: the record's engine or pipe; `dge_mode`: the DMA's dge_mode= hint, if any
        (hardware DGE has its own fixed cost); `arguments`: the instruction's non-tensor
        operands as the trace records them (`op=`, `value=`: an ISA fast row may need them)."""
        engine = self.engine_of(op, piece, hint)
        if self.family == "ascend":
            return self._ascend(op, piece, engine)
        if engine == "DMA":
            fixed = "dma_fixed_hwdge" if dge_mode == "hwdge" and "dma_fixed_hwdge" in self.f \
                else "dma_fixed"
            return self._nki_dma(piece, self.v(fixed))
        return self._nki_compute(op, piece, engine, arguments or {})

    # -- NKI --------------------------------------------------------------------------------
    def _nki_dma(self, piece: dict[str, AccessPattern], fixed: float) -> Cost:
        aps = [ap for role, ap in piece.items() if role in ("dst", "src")] or list(piece.values())
        n = max(elements(ap) for ap in aps)
        nbytes = max(elements(ap) * _bits(ap) // 8 for ap in aps)
        desc = _descriptors(aps, n)
        biggest = self.v("dma_max_descriptor")
        if nbytes / desc > biggest:  # long runs are cut into descriptors the engines share
            desc = ceil(nbytes / biggest)
        run = max(1, nbytes // desc)
        sbuf = [partitions(ap) for ap in aps if _onchip(ap)]
        per = int(self.v("dma_partitions_per_engine"))
        total = int(self.v("dma_engines"))
        engines = min(total, ceil(max(sbuf) / per)) if sbuf else total
        engines = max(1, min(engines, desc))
        per_run = max(run, self.v("dma_min_run")) / self.v("dma_engine_bandwidth")  # B / GB/s = ns
        # HBM traffic: each HBM side reads or writes the bytes once
        hbm = sum(1 for ap in aps if ap.buffer not in ("sbuf", "psum")) * nbytes
        return Cost("DMA", fixed + ceil(desc / engines) * per_run, nbytes, desc, run, engines,
                    fixed, shared_bytes=hbm)

    def _nki_compute(self, op: str, piece: dict[str, AccessPattern], engine: str,
                     arguments: dict[str, Any]) -> Cost:
        clock = self.v(f"{engine.lower()}_clock") if engine != "Sync" else self.v("scalar_clock")
        if engine == "Sync":
            return Cost(engine, self.v("register_cycles") / clock)
        if cost_class(op) == "matmul" and "moving" in piece:
            mv = piece["moving"]
            n = elements(mv) // max(1, partitions(mv))
            factor = self.v("matmul_fp32_factor") if mv.dtype == "float32" else 1.0
            st = piece.get("stationary")
            # ISA: max(min(64, N_stationary), N_moving) cycles -- a narrow stationary tile
            # lowers the floor
            floor = self.v("matmul_min_cycles")
            if st is not None:
                floor = min(floor, elements(st) // max(1, partitions(st)))
            cycles = max(float(n), floor) * factor
            flops = 2.0 * elements(st) * n if st is not None else 0.0
            return Cost(engine, cycles / clock, flops=flops)
        if cost_class(op) == "snake" and "src" in piece and "val_dst" in piece:
            # topk's docstring: 4 n + K GpSimd cycles a partition, n the snake's elements
            # (taken as its 16 partitions' whole width of src: the trace keeps no n), K
            # val_dst's free size
            src, val = piece["src"], piece["val_dst"]
            n = 16 * (elements(src) // max(1, partitions(src)))
            return Cost(engine, (4 * n + elements(val) // max(1, partitions(val))) / clock)
        written = outputs(op) or frozenset(("dst",))
        dst = piece.get("dst") or next(iter(piece.values()))
        free = elements(dst) // max(1, partitions(dst))
        # each input streams its free size (ARCH1: N cycles for one input, 2N for two; ISA:
        # N for tensor_tensor with one input in PSUM and the other in SBUF, each memory
        # feeding one); a [P, 1] operand is one value per partition, read once: free
        ins = [ap for role, ap in piece.items() if role not in written]
        size = max(free, _streamed(ins, op in SPLIT_READS))
        strided = any(_onchip(ap) and len(ap.pattern) > 1 and
                      abs(as_int(ap.pattern[-1][0])) * _bits(ap) // 8 > 16 for ap in piece.values())
        # the ISA's fast row and the trn2 performance mode are each a speed-up over the
        # NeuronCore-v2 general rule: the larger applies, never both (costs.FastPath)
        speedup = max(self._mode(op, piece, engine, ins),
                      self._fast(op, piece, engine, ins, arguments, free))
        rate = self.v("compute_elements_per_cycle") * speedup
        cycles = size * ISA_CYCLES_PER_ELEMENT.get(op, 1.0) / rate
        if strided:
            cycles *= self.v("strided_factor")
        cycles = max(cycles, self.v("compute_min_cycles")) + ISA_EXTRA_CYCLES.get(op, 0.0)
        if max(free, max((elements(ap) // max(1, partitions(ap)) for ap in ins), default=0)) \
                < self.v("small_free_size"):
            cycles += self.v("small_cycles")
        return Cost(engine, cycles / clock, dependent_ns=self.v("dependent_cycles") / clock)

    @staticmethod
    def _fast(op: str, piece: dict[str, AccessPattern], engine: str,
              ins: list[AccessPattern], arguments: dict[str, Any], free: int) -> float:
        """The speed-up of the instruction's ISA fast row (`costs.FAST_PATHS`) when every
        one of its conditions holds on the Vector engine, else 1."""
        fast = FAST_PATHS.get(op)
        if fast is None or engine != "Vector":
            return 1.0
        checked = [piece[r] for r in fast.roles if r in piece] if fast.roles \
            else list(piece.values())
        if not checked or any(ap.dtype not in fast.dtypes for ap in checked):
            return 1.0
        for name, allowed in fast.arguments:
            value = arguments.get(name)
            if value is None or isinstance(value, (list, dict)) or value not in allowed:
                return 1.0
        if fast.sbuf_contiguous and not all(
                ap.buffer == "sbuf" and (len(ap.pattern) < 2 or as_int(ap.pattern[-1][0]) == 1)
                for ap in ins):
            return 1.0
        if fast.even and free % 2:
            return 1.0
        return 1.0 / fast.scale

    def _mode(self, op: str, piece: dict[str, AccessPattern], engine: str,
              ins: list[AccessPattern]) -> float:
        """The Vector engine's performance mode speed-up (ARCH2): 1 when none applies."""
        if engine != "Vector" or "vector_mode_copy" not in self.f:
            return 1.0
        aps = list(piece.values())
        if not all(ap.dtype in ("bfloat16", "float16") for ap in aps):
            return 1.0
        mode = VECTOR_MODES.get(op)
        if mode == "vector_mode_copy":
            in_sbuf = all(ap.buffer == "sbuf" for ap in aps)
            contiguous = all(len(ap.pattern) < 2 or as_int(ap.pattern[-1][0]) == 1
                             for ap in aps)
            return self.v(mode if in_sbuf and contiguous else "vector_mode_other")
        if mode is not None and all(ap.buffer == "sbuf" for ap in ins):
            return self.v(mode)
        return 1.0

    # -- Ascend -----------------------------------------------------------------------------
    def _ascend(self, op: str, piece: dict[str, AccessPattern], pipe: str) -> Cost:
        clock = self.v("clock")
        issue = self.v("issue_cycles")
        cost = cost_class(op)
        if cost == "matmul":
            a, b, c = piece.get("a"), piece.get("b"), piece.get("dst")
            if a is None or b is None or c is None:
                return Cost(pipe, issue / clock)
            ea, eb, ec = elements(a), elements(b), elements(c)
            macs = (ea * eb * ec) ** 0.5
            # the cube works in fractals (PERFTESTS): M and N in steps of 16, K in steps of
            # the dtype's depth, so a short M (a GEMV's one row) costs a whole fractal
            m, n = (ea * ec / eb) ** 0.5, (eb * ec / ea) ** 0.5
            factor = {"int8": self.v("cube_int8_factor"), "int4": self.v("cube_int4_factor"),
                      "float32": self.v("cube_fp32_factor")}.get(a.dtype, 1.0)
            depth = self.v("cube_fp16_macs") / 256 * factor  # K a cycle per 16 x 16 fractal
            cycles = ceil(round(m, 6) / 16) * ceil(round(n, 6) / 16) * ceil(macs / m / n / depth)
            return Cost(pipe, (self.v("mmad_head_cycles") + cycles) / clock, flops=2.0 * macs)
        aps = list(piece.values())
        nbytes = max(elements(ap) * _bits(ap) // 8 for ap in aps)
        if cost != "dma":
            # cost class "vector": memset and the vector instructions (one 256-byte repeat a
            # cycle, `vector_bytes_per_cycle`), InitConstValue: 256 B a cycle
            return Cost(pipe, (issue + nbytes / self.v("vector_bytes_per_cycle")) / clock,
                        nbytes)
        gm = [ap for ap in aps if ap.buffer == "gm"]
        if gm:
            side = gm[0]
            desc = max(1, elements(side) // storage_run_elements(side))
            run = max(1, elements(side) * _bits(side) // 8 // desc)
            cycles = desc * max(run, self.v("dma_min_run")) / self.v("gm_bytes_per_cycle")
            return Cost(pipe, (issue + cycles) / clock, nbytes, desc, run, 1, issue / clock,
                        shared_bytes=elements(side) * _bits(side) // 8)
        dst = piece.get("dst")
        if pipe == "FIX":  # L0C -> L1: the egress unit writes 64 elements a cycle
            head = self.v("fix_head_cycles")
            cycles = max(elements(ap) for ap in aps) / self.v("fix_elements_per_cycle")
        elif pipe == "MTE1":  # L1 -> L0A 256 B a cycle, -> L0B 128 (PERFTESTS)
            head = self.v("mte1_head_cycles")
            side = "l0b" if dst is not None and dst.buffer == "l0b" else "l0a"
            cycles = nbytes / self.v(f"mte1_{side}_bytes_per_cycle")
        else:
            head, cycles = issue, nbytes / self.v("vector_bytes_per_cycle")
        return Cost(pipe, (head + cycles) / clock, nbytes, 1, nbytes, 1, head / clock)


def cost_class(op: str) -> str:
    """The cost class the instruction table gives `op` (`Instruction.cost`); an operation the
    table does not declare is priced as an element-wise pass ("vector")."""
    from ..runtime.table import TABLE
    entry = TABLE.get(op)
    return "vector" if entry is None else entry.cost

