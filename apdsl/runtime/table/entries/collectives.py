"""Instruction table entries: communication between ranks (see `apdsl.runtime.table.entries`):
the `nki.collectives` functions (as `ncc.<name>`, reached through that module) and the
point-to-point `sendrecv` / `core_barrier` of `nki.isa`.  Each traced record is one tensor of each
list parameter (a coalesced call records one per tensor); roles are the parameters' names.  Their meaning:
`apdsl.runtime.nki.collectives`; the profile prices them as DMAs (`cost="dma"`)."""

from __future__ import annotations

from ..spec import ELEMENT, NKI_DMA, Instruction, Operand


def _operands(op: str) -> tuple[Operand, ...]:
    """The tensor-list parameters of `op`, by the names its signature gives them."""
    if op == "collective_permute_implicit":
        reads: tuple[str, ...] = ("srcs_by_channel",)
    elif op == "collective_permute_implicit_reduce":
        reads = ("srcs0_by_channel", "srcs1_by_channel")
    else:
        reads = ("srcs",)
    dsts = "dsts_by_channel" if op.startswith("collective_permute_implicit") else "dsts"
    return (Operand(dsts, True, {"nki": NKI_DMA}),
            *(Operand(r, False, {"nki": NKI_DMA}) for r in reads))


_SUMMARIES = {
    "all_reduce": "dst = op over the replica group's src (add, minimum, maximum)",
    "all_gather": "dst = the group's src concatenated along collective_dim",
    "all_gather_v": "variable-length all-gather (counts in a metadata tensor)",
    "reduce_scatter": "the group's reduction, rank i of the group keeping chunk i",
    "all_to_all": "rank i keeps chunk i of every rank's src, in group order",
    "all_to_all_v": "variable-length all-to-all (counts in a metadata tensor)",
    "collective_permute": "rank t's dst = rank s's src for each (s, t) pair",
    "collective_permute_implicit": "each rank's dst = its ring predecessor's src",
    "collective_permute_implicit_reduce": "each rank's dst = its ring predecessor's "
    "op(src0, src1)",
}

ENTRIES: tuple[Instruction, ...] = tuple(
    Instruction(f"ncc.{op}", "nki.collectives", _operands(op), {"nki": ("dma",)}, None,
                cost="dma", summary=summary)
    for op, summary in _SUMMARIES.items()) + (
    Instruction(
        "sendrecv", "nki.collectives",
        (Operand("dst", True, {"nki": ("sbuf",)}), Operand("src", False, {"nki": ("sbuf",)})),
        {"nki": ("dma", "gpsimd")}, None, writes_dst=True, cost="dma",
        summary="send src to rank send_to_rank, receive rank recv_from_rank's into dst",
        depends=ELEMENT),  # a copy: each dst element is the src element at its place
    Instruction(
        "core_barrier", "nki.collectives", (Operand("data", False, {"nki": NKI_DMA}),),
        {"nki": ("gpsimd",)}, None, cost="register",
        summary="cores (0, 1) wait here until both arrive"),
)
