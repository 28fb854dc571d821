"""The cost model of each target, as data (SPEC section 14).

Every number is a `Figure`: its value, its unit and where it comes from -- a public source
(the NKI architecture guides and DMA guides in aws-neuron/aws-neuron-sdk, CATLASS's docs in
hicann/catlass, the AscendC docs) or, where no public number exists, the words "assumption: ..."
saying what was assumed and why.  `apdsl.profile.model` turns these figures into instruction
durations; nothing else in the profile holds a hardware number.

Source tags (paths in aws-neuron/aws-neuron-sdk unless noted):
  ARCH1/2/3  nki/guides/architecture/trainium_inferentia2_arch.rst, trainium2_arch.rst,
             trainium3_arch.rst (engine clocks, Tensor Engine cost model, VectorE cost model)
  DMAINTRO   nki/get-started/about/nki-dma-overview.rst (DMA engines, queues, per-engine rate)
  DMABW      nki/deep-dives/nki-dma-bandwidth-guide.rst (fixed DMA cost, size vs efficiency)
  SHARED     nki/api/nki.api.shared.rst (minimum instruction initiation interval)
  PERF       nki/deep-dives/nki_perf_guide.rst
  ISA        nki/api/nki/isa/__init__.py at 1db4d74e (2025-10-17), each instruction's "Estimated
             instruction cost": tensor_tensor max(MIN_II, N) with one input in PSUM and the
             other in SBUF, max(MIN_II, 2N) with both in SBUF (fp32); tensor_tensor_scan 2N
  CMM        hicann/catlass docs/en/2_Design/01_kernel_design/04_matmul_summary.md
  CBOT       hicann/catlass docs/en/1_Practice/evaluation/bottleneck_analysis_and_optimization.md
  TBE        Huawei TBE guide, "compute units" (cube: a 16x16x16 fp16 product per execution)
  COPYAPI    AscendC Copy API (a vector repeat reads 256 contiguous bytes)
  MMTUT      nki/tutorials/matrix_multiplication.rst at 61e24fff (2025-11): the four steps of the
             matmul tutorial on trn1, [4096, 8192] @ [8192, 8192] bf16: 51.80, 42.96, 22.07,
             6.97 ms.  Their DMA traffic (5.44, 4.43, 2.28, 0.74 GB) runs at 103-106 GB/s in all
             four, whatever the run length (256 B to 4 KiB): a shared ceiling, not a per-run cost
  CMMOPT     hicann/catlass docs/en/1_Practice/11_matmul_optimization.md (TileShape case 1)
  PERFTESTS  asc-devkit tests/perf/{mmad_perf,load_data_perf,fixpipe_perf} (README and
             generate_roofline*.py, 2026): per-pipe bandwidth, cube fractal per cycle and
             first-instruction latency on dav-2201 (Atlas A2/A3) at 1800 MHz
  ASCMM      asc-devkit examples/01_simd_cpp_api/05_best_practices/01_matrix_compute/
             matmul_high_performance/README_en.md (Ascend 910B1, 8192^3 fp16, per-pipe times)
  ASCMMB     the same folder's sibling matmul_basic_api_high_performance/README_en.md

A figure "fitted to" published measurements names them; `bench/bench_calibration.py` compares the
model with every one of them (SPEC section 14's calibration table).
"""

from __future__ import annotations

from typing import Any

from ..records import record


@record
class Figure:
    """One number of the model and its source ("assumption: ..." when none is public)."""

    value: float
    unit: str
    source: str

    @property
    def assumed(self) -> bool:
        return self.source.startswith("assumption")


def _f(value: float, unit: str, source: str) -> Figure:
    return Figure(float(value), unit, source)


# The 512-byte rule of SPEC section 14.  On Trainium no public Neuron source states it: DMABW
# only says transfers under 256 B are overhead-bound and >= 2 KiB approach peak, so the 512-B
# floor below is apdsl's assumption on NKI targets.  On Ascend, CMM states that GM accesses whose
# row stride is not 512-byte aligned lose bandwidth "significantly" (no number).
_RUN_NKI = ("assumption: a contiguous run under 512 B costs as 512 B (SPEC section 14); no "
            "public Neuron source gives a 512-byte rule -- DMABW: runs < 256 B are "
            "overhead-bound, >= 2 KiB approach peak")
_RUN_ASCEND = ("CMM: GM reads/writes whose row stride is not 512-byte aligned lose bandwidth "
               "significantly (no number published); assumption: a GM run under 512 B costs "
               "as 512 B")


def _nki(name: str, tensor_ghz: float, vector_ghz: float, scalar_ghz: float,
         gpsimd_ghz: float, dma_gbps: float, arch: str, fixed_src: str,
         hbm_gbps: float) -> dict[str, Figure]:
    later = name != "trn1"
    later_note = "; assumption: the same on later NeuronCores" if later else ""
    as_trn2 = "; assumption: as trn2" if name == "trn3" else ""
    return {
        "tensor_clock": _f(tensor_ghz, "GHz", f"{arch} engine table"),
        "vector_clock": _f(vector_ghz, "GHz", f"{arch} engine table"),
        "scalar_clock": _f(scalar_ghz, "GHz", f"{arch} engine table"),
        "gpsimd_clock": _f(gpsimd_ghz, "GHz", f"{arch} engine table"),
        # nc_matmul: one moving column per cycle, at least MM_INIT_LATENCY cycles (ARCH1 cost
        # model: II = max(N, 64) for bf16/fp16/tf32/fp8; ISA: max(min(64, N_stationary),
        # N_moving), a narrower stationary tile lowering the floor); fp32 inputs 4x (ARCH1; the
        # 23/92 and 20/79 TFLOPS ratios of ARCH1-3)
        "matmul_min_cycles": _f(64, "cycles", "ARCH1 cost model (MM_INIT_LATENCY, NeuronCore-v2); "
                                "ISA nc_matmul (max(min(64, N_stationary), N_moving))"
                                + ("; assumption: the same on later NeuronCores" if later else "")),
        "matmul_fp32_factor": _f(4, "x", f"ARCH1 (fp32 4x the bf16 cost); {arch} TFLOPS table"),
        # compute engines: N cycles for N free elements per partition and one input, 2N for
        # two (ARCH1 VectorE cost model), never under MIN_II (SHARED engine-selection note)
        "compute_min_cycles": _f(64, "cycles", "SHARED engine-selection note (MIN_II)"
                                 + ("; assumption: the same on later NeuronCores" if later
                                    else "")),
        "compute_elements_per_cycle": _f(1, "elements/cycle/partition",
                                         "ARCH1 VectorE cost model (N cycles for N elements)"),
        "strided_factor": _f(2, "x", "ARCH1 access pattern: an innermost stride over 16 bytes "
                             "halves the SBUF/PSUM bandwidth"),
        "dma_engines": _f(16, "engines", "DMAINTRO; ARCH1 (16 DMA engines per NeuronCore)"),
        "dma_partitions_per_engine": _f(8, "partitions", "DMAINTRO (an engine typically serves "
                                        "8 SBUF partitions, 128/16)"),
        "dma_engine_bandwidth": _f(dma_gbps, "GB/s", "DMAINTRO; DMABW per-engine peak table"),
        "dma_fixed": _f(1300, "ns", fixed_src),
        **({"dma_fixed_hwdge": _f(600, "ns", "ARCH2; DGE (a hardware-DGE DMA instruction "
                                  "costs ~600 ns; dge_mode=hwdge, NeuronCore-v3 and later)"
                                  + ("" if name == "trn2" else "; assumption: as trn2"))}
           if later else {}),
        "dma_min_run": _f(512, "bytes", _RUN_NKI),
        # the bandwidth every DMA of the NeuronCore shares (queues and engines alike): what its
        # transfers together reach, below the engines' sum (DMAINTRO 272/368/528 GB/s)
        "hbm_bandwidth": _f(hbm_gbps, "GB/s", _HBM[name]),
        # a run longer than this is cut into several descriptors, spread over the engines (a
        # contiguous HBM -> HBM copy uses all 16 engines, as a copy of the same bytes in rows)
        "dma_max_descriptor": _f(65536, "bytes", "assumption: a descriptor moves at most 64 KiB "
                                 "(DMABW: 4 KiB packets saturate an engine; no public maximum)"),
        # small and dependent instructions (ARCH1 VectorE cost model; PERF Opt #5a): 100 cycles
        # when the free size is well under 128, another 100 when the instruction waits for the
        # output of the one before it on its engine.  The two add: a chain of dependent [P, 1]
        # ScalarE instructions then costs 64 + 100 + 100 = 264 cycles, the 264 cycles (189 ns)
        # PERF measured on NeuronCore-v2
        "small_cycles": _f(100, "cycles", "ARCH1 VectorE cost model (N << 128: add ~100 "
                           "cycles); PERF Opt #5a" + later_note),
        "small_free_size": _f(64, "elements", "assumption: 'N << 128' (ARCH1) read as N < 64"),
        "dependent_cycles": _f(100, "cycles", "ARCH1 VectorE cost model (each instruction "
                               "depending on the previous one's output: add ~100 cycles); "
                               "with small_cycles it gives PERF's measured 264 ScalarE cycles "
                               "(189 ns) of a dependent [P, 1] chain" + later_note),
        # Vector engine performance modes (ARCH2 "Vector Engine"): on NeuronCore-v3 a bf16/fp16
        # tensor_copy or tensor_scalar SBUF -> SBUF, innermost dimension contiguous, runs 4x the
        # v2 rate; 2x when not contiguous or one side is PSUM; tensor_tensor with both inputs in
        # SBUF and every tile bf16/fp16 2x
        **({"vector_mode_copy": _f(4, "x", f"{_MODES}: tensor_copy/tensor_scalar, bf16/fp16, "
                                   "SBUF -> SBUF, innermost dimension contiguous" + as_trn2),
            "vector_mode_other": _f(2, "x", f"{_MODES}: the same not contiguous or with PSUM"
                                    + as_trn2),
            "vector_mode_tensor_tensor": _f(2, "x", f"{_MODES}: tensor_tensor, both inputs "
                                            "in SBUF, every tile bf16/fp16" + as_trn2)}
           if later else {}),
        "dma_queues": _f(4, "queues", "assumption: 4 DMA queues in flight (DMAINTRO: 16 queue ids "
                         "per engine, round-robin; how many a kernel uses is the compiler's)"),
        "register_cycles": _f(64, "cycles", "assumption: a register load costs MIN_II on the "
                              "engine sequencer"),
    }


# The DMA bandwidth one NeuronCore's transfers share.  trn1: fitted to MMTUT, whose three
# DMA-bound steps move 5.44, 4.43 and 2.28 GB in 51.80, 42.96 and 22.07 ms (104.9, 103.1,
# 103.4 GB/s) and whose last step 0.74 GB in 6.97 ms (105.9 GB/s): 105 GB/s, 38.6% of the 272 GB/s
# the 16 engines reach together (DMAINTRO).  Later targets: the same fraction of their engines'
# aggregate (no published kernel-level figure).
_HBM = {
    "trn1": "fitted to MMTUT (the four matmul tutorial steps on trn1 move their bytes at "
            "103-106 GB/s): 105 GB/s, 38.6% of the engines' 272 GB/s (DMAINTRO)",
    "trn2": "assumption: trn1's fitted 38.6% (MMTUT) of the engines' 368 GB/s (DMAINTRO)",
    "trn3": "assumption: trn1's fitted 38.6% (MMTUT) of the engines' 528 GB/s (DMAINTRO)",
}

_MODES = "ARCH2 Vector Engine performance modes (speed-up over the NeuronCore-v2 rate)"

# The instructions ARCH2 names for each Vector performance mode (the figure that gives its
# speed-up): tensor_copy and tensor_scalar (4x SBUF -> SBUF contiguous, else 2x), tensor_tensor
# (2x, both inputs in SBUF).  Data beside the figures, so that the model names no instruction.
VECTOR_MODES: dict[str, str] = {"tensor_copy": "vector_mode_copy",
                                "tensor_scalar": "vector_mode_copy",
                                "tensor_tensor": "vector_mode_tensor_tensor"}

# What the ISA's per-instruction cost tables add to the general rule (ISA, at 1db4d74e): cycles
# per element of the free size, and cycles added after the MIN_II floor.  reciprocal
# max(MIN_II, 8N); bn_aggr max(MIN_II, 13 N / 3); activation_reduce and tensor_scalar_reduce
# max(MIN_II, N) + MIN_II; iota and affine_select ~150 + N (the GpSimd start-up).  Data beside
# the figures, so that the model names no instruction.
ISA_CYCLES_PER_ELEMENT: dict[str, float] = {"reciprocal": 8.0, "bn_aggr": 13.0 / 3.0}
ISA_EXTRA_CYCLES: dict[str, float] = {"activation_reduce": 64.0, "tensor_scalar_reduce": 64.0,
                                      "iota": 150.0, "affine_select": 150.0}
# The instructions whose ISA table prices two inputs from different memories (one in PSUM,
# the other in SBUF) at N cycles: each memory feeds one.  Any other reads all its inputs
# through one interface (tensor_tensor_scan 2N, scalar_tensor_tensor 2N whatever the memories).
SPLIT_READS = frozenset({"tensor_tensor", "tensor_copy_predicated"})


@record
class FastPath:
    """A row of an instruction's ISA cost table that is faster than the general rule for its
    data types and operators (ARCH1's VectorE cost model names such "exceptions, depending on
    the data types and instruction type" and defers to the ISA tables).  When every condition
    holds on the Vector engine, the instruction streams `scale` times the elements the
    general rule counts."""

    scale: float
    dtypes: frozenset[str]          # the dtypes the checked operands must all have
    source: str
    roles: tuple[str, ...] = ()     # the operands whose dtype is checked (empty: every one)
    # (argument, the values it must have): its JSON-plain value as the trace records it
    arguments: tuple[tuple[str, frozenset[Any]], ...] = ()
    sbuf_contiguous: bool = False   # every input in SBUF, each partition's elements adjacent
    even: bool = False              # the free size is even


_BF16 = frozenset({"bfloat16"})
_ISA = "ISA at 1db4d74e, "
# Each instruction's fast row (ISA at 1db4d74e, nki/api/nki/isa/__init__.py, "Estimated
# instruction cost": tensor_tensor lines 1793-1813, scalar_tensor_tensor 1215-1226,
# tensor_reduce 1597-1606, memset 709-713), the general rule being ARCH1's N cycles for one
# input and 2N for two (trainium_inferentia2_arch.rst line 398 defers to these exceptions).
# Data beside the figures, so that the model names no instruction.
FAST_PATHS: dict[str, FastPath] = {
    # max(MIN_II, N) when both inputs are in SBUF, every tile bfloat16, the operator add,
    # multiply or subtract and each input contiguous along the free dimension (2N otherwise)
    "tensor_tensor": FastPath(
        0.5, _BF16, _ISA + "tensor_tensor: N cycles with both inputs in SBUF, every tile "
        "bfloat16, op add/multiply/subtract, stride 1 in each partition (else 2N)",
        arguments=(("op", frozenset({"nl.add", "nl.multiply", "nl.subtract"})),),
        sbuf_contiguous=True),
    # N when data and operand1 are bfloat16, op0 subtract, op1 multiply and N even (else 2N)
    "scalar_tensor_tensor": FastPath(
        0.5, _BF16, _ISA + "scalar_tensor_tensor: N cycles for bfloat16 data and operand1, "
        "op0 subtract, op1 multiply, N even (else 2N)", roles=("data", "operand1"),
        arguments=(("op0", frozenset({"nl.subtract"})), ("op1", frozenset({"nl.multiply"}))),
        even=True),
    # N/2 when input and output are bfloat16 and the operator add or maximum (else N)
    "tensor_reduce": FastPath(
        0.5, _BF16, _ISA + "tensor_reduce: N/2 cycles for bfloat16 in and out with add or "
        "maximum (else N)", arguments=(("op", frozenset({"nl.add", "nl.maximum"})),)),
    # max(MIN_II, N/2) for a zero fill of a bfloat16/float16 tile (else max(MIN_II, N))
    "memset": FastPath(
        0.5, frozenset({"bfloat16", "float16"}), _ISA + "memset: max(MIN_II, N/2) cycles "
        "filling a bfloat16/float16 tile with zero (else max(MIN_II, N))",
        arguments=(("value", frozenset({0})),)),
}

_TRN_FIXED = "DMABW (~1300 ns per DMA for descriptors, synchronisation and semaphores)"

_ASCEND_CLOCK = ("PERFTESTS (dav-2201 clock 1800 MHz, 'hardware spec'); CBOT's 11.06 TOPS "
                 "vector peak = 48 AIV x 128 fp16 x 1.8 GHz (ASCMMB computes with 1.85 GHz)")

TABLE: dict[str, dict[str, Figure]] = {
    "trn1": _nki("trn1", 2.8, 1.12, 1.4, 1.4, 17, "ARCH1", _TRN_FIXED, 105),
    "trn2": _nki("trn2", 2.4, 0.96, 1.2, 1.2, 23, "ARCH2", _TRN_FIXED, 142),
    "trn3": _nki("trn3", 2.4, 1.2, 1.2, 1.2, 33, "ARCH3",
                 _TRN_FIXED + "; assumption: the same on trn3", 204),
    "ascend-a2": {
        "clock": _f(1.8, "GHz", _ASCEND_CLOCK),
        "issue_cycles": _f(16, "cycles", "assumption: 16 cycles to issue an MTE2, MTE3, V or S "
                           "instruction (no public number)"),
        # the first-instruction latency PERFTESTS measure on dav-2201 for the pipes it covers
        "mmad_head_cycles": _f(21, "cycles", "PERFTESTS mmad_perf (dav-2201 head overhead)"),
        "mte1_head_cycles": _f(28, "cycles", "PERFTESTS load_data_perf (LoadData 2D, L1 -> "
                               "L0A/L0B, dav-2201)"),
        "fix_head_cycles": _f(20, "cycles", "PERFTESTS fixpipe_perf (L0C -> L1, dav-2201)"),
        "gm_bytes_per_cycle": _f(128, "B/cycle", "assumption: one core alone reaches 128 B/cycle "
                                 "(230 GB/s) of the chip's ~1.8 TB/s GM bandwidth (CBOT), which "
                                 "MTE2, MTE3 and FIX share.  Checked against ASCMM case 1 (one "
                                 "core, 910B1: 12.9 GB of 128-byte rows in 195.6 ms of MTE2, "
                                 "65.9 GB/s): with the 512-byte floor this model gives 57.6 GB/s"),
        "mte1_l0a_bytes_per_cycle": _f(256, "B/cycle", "PERFTESTS load_data_perf (L1 -> L0A, "
                                       "dav-2201)"),
        "mte1_l0b_bytes_per_cycle": _f(128, "B/cycle", "PERFTESTS load_data_perf (L1 -> L0B, "
                                       "dav-2201)"),
        "fix_elements_per_cycle": _f(64, "elements/cycle", "PERFTESTS fixpipe_perf (the egress "
                                     "unit writes 64 output elements a cycle, L0C -> L1)"),
        "vector_bytes_per_cycle": _f(256, "B/cycle", "COPYAPI (a repeat is 256 bytes); "
                                     "assumption: one repeat per cycle"),
        # the cube's fractal per cycle (PERFTESTS mmad_perf, dav-2201): 16 x 16 x 16 for b16,
        # 16 x 16 x 32 for b8, 16 x 16 x 4 for b32 -- M and N in steps of 16, K in steps of k
        "cube_fp16_macs": _f(4096, "MAC/cycle", "PERFTESTS mmad_perf (b16: 16 x 16 x 16 a "
                             "cycle); TBE"),
        "cube_int8_factor": _f(2, "x", "PERFTESTS mmad_perf (b8: 16 x 16 x 32 a cycle)"),
        "cube_fp32_factor": _f(0.25, "x", "PERFTESTS mmad_perf (b32: 16 x 16 x 4 a cycle)"),
        "cube_int4_factor": _f(4, "x", "assumption: twice the int8 rate (no public number)"),
        "dma_min_run": _f(512, "bytes", _RUN_ASCEND),
        # GM bandwidth of the chip, shared by every core's MTE2, MTE3 and FIX transfers (CBOT:
        # MTE2 and MTE3 share it; its worked examples take ~1.8 TB/s)
        "gm_bandwidth": _f(1800, "GB/s", "CBOT (chip GM bandwidth ~1.8 TB/s, shared by MTE2 "
                           "and MTE3 of every core)"),
    },
}


def table(target: str) -> dict[str, Figure]:
    """The figures of `target` (a name of `apdsl.tensor.targets`)."""
    return TABLE[target]


def as_json(target: str) -> dict[str, Any]:
    return {k: {"value": f.value, "unit": f.unit, "source": f.source}
            for k, f in TABLE[target].items()}
