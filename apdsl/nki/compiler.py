"""`nki.compiler`: directives to the Neuron compiler.  They change how the compiler schedules
and allocates, not what a kernel computes, so on apdsl each returns the kernel as it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..semantics.nl_ordering import NoReorder


def _directive(func: Callable[..., Any] | None = None, **_options: Any) -> Any:
    if func is None:
        return lambda f: f
    return func


skip_middle_end_transformations = _directive
enable_stack_allocator = _directive
force_auto_alloc = _directive


# -- direct allocation (the legacy `ncc.sbuf` / `ncc.psum`) --------------------------------------

class DirectAllocation:
    """`buffer=ncc.sbuf.alloc(func)` (or `mod_alloc`, or the PSUM variants): where each logical
    tile of the tensor goes.  `place(idx, pdim_size, fdim_bytes)` gives a block index's
    (partition, byte) address; the legacy frontend places each tile there (`nl.ndarray(
    address=...)`'s model), so tiles given the same bytes share them as on hardware."""

    __slots__ = ("buffer", "_func")

    def __init__(self, buffer: str, func: Callable[..., Any]) -> None:
        self.buffer, self._func = buffer, func

    def place(self, idx: tuple[int, ...], pdim_size: int, fdim_bytes: int) -> tuple[int, int]:
        from ..errors import ApdslTypeError
        got = self._func(tuple(idx), pdim_size, fdim_bytes)
        want = 2 if self.buffer == "sbuf" else 3
        if not isinstance(got, tuple) or len(got) != want or not all(
                isinstance(v, int) for v in got):
            raise ApdslTypeError(
                f"the {self.buffer} allocation function returned {got!r}; it returns "
                + ("(start_partition, byte_addr)" if want == 2 else
                   "(bank_id, start_partition, byte_addr)"), code="APK948")
        if want == 2:
            return got[0], got[1]
        from ..tensor import targets
        from ..tensor.machine import current
        bank_bytes = targets.TARGETS[current().targets["nki"]].psum_bank_bytes
        return got[1], got[0] * bank_bytes + got[2]

    def __repr__(self) -> str:
        return f"<{self.buffer} direct allocation>"


def _modulo(base: int, tiles: tuple[int, ...], scale: int, idx: tuple[int, ...]) -> int:
    """The modulo allocation of the docs: `idx` taken modulo `tiles` (all 1 when empty),
    linearised row-major, times `scale`, plus `base`."""
    shape = tuple(tiles) or (1,) * len(idx)
    linear = 0
    for i, n in zip(idx, shape):
        linear = linear * n + i % n
    return linear * scale + base


class _Space:
    def __init__(self, buffer: str) -> None:
        self.buffer = buffer

    def alloc(self, func: Callable[..., Any]) -> DirectAllocation:
        """`ncc.<buffer>.alloc(func)`: func(idx, pdim_size, fdim_size) places each tile."""
        return DirectAllocation(self.buffer, func)

    def auto_alloc(self) -> str:
        """`ncc.<buffer>.auto_alloc()`: the compiler (apdsl) places the tensor."""
        return self.buffer


class _Sbuf(_Space):
    def mod_alloc(self, *, base_addr: int, base_partition: int = 0,
                  num_par_tiles: tuple[int, ...] = (),
                  num_free_tiles: tuple[int, ...] = ()) -> DirectAllocation:
        """`ncc.sbuf.mod_alloc(...)`: tiles at `base_addr`, cycling over `num_free_tiles`
        (and `num_par_tiles`) slots."""
        return DirectAllocation("sbuf", lambda idx, p, f: (
            _modulo(base_partition, num_par_tiles, p, idx),
            _modulo(base_addr, num_free_tiles, f, idx)))


class _Psum(_Space):
    def mod_alloc(self, *, base_bank: int, base_addr: int = 0, base_partition: int = 0,
                  num_bank_tiles: tuple[int, ...] = (), num_par_tiles: tuple[int, ...] = (),
                  num_free_tiles: tuple[int, ...] = ()) -> DirectAllocation:
        """`ncc.psum.mod_alloc(...)`: tiles from bank `base_bank`, cycling over
        `num_bank_tiles` banks."""
        return DirectAllocation("psum", lambda idx, p, f: (
            _modulo(base_bank, num_bank_tiles, 1, idx),
            _modulo(base_partition, num_par_tiles, p, idx),
            _modulo(base_addr, num_free_tiles, f, idx)))


sbuf = _Sbuf("sbuf")
psum = _Psum("psum")


# The legacy compiler API's allocation controls (`allocation_scope`, `multi_buffer`) are not
# modelled: a kernel stops, where it calls one, at a diagnostic naming the call (a module may
# still name them).  `no_reorder()` is exact here: apdsl keeps program order anyway.


class _Unsupported:
    """A legacy allocation control: naming it is fine, calling it is APK923."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from .namespace import missing
        raise missing(f"apdsl does not support nki.compiler.{self._name}", code="APK923",
                      name=self._name,
                      notes=["the legacy compiler's direct allocation (tiles placed at "
                             "addresses by hand) is not modelled: apdsl allocates each tile "
                             "where its nl.ndarray says"],
                      help="allocate with nl.ndarray(shape, dtype, buffer=nl.sbuf)")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Unsupported(f"{self._name}.{name}")

    def __repr__(self) -> str:
        return f"<nki.compiler.{self._name}: not supported by apdsl>"


allocation_scope = _Unsupported("allocation_scope")
multi_buffer = _Unsupported("multi_buffer")


def no_reorder() -> NoReorder:
    """`nki.compiler.no_reorder()`: the loop directive (`nl.sequential_range(n,
    directives=no_reorder())`) that keeps the loop body's instructions in program order, as
    apdsl runs and profiles them anyway (`apdsl.semantics.nl_ordering`)."""
    return NoReorder()


def __getattr__(name: str) -> Any:
    from .namespace import missing
    if name.startswith("__"):
        raise AttributeError(name)
    raise missing(f"apdsl.nki has no nki.compiler.{name}", code="APK144", name=name,
                  notes=["nki.compiler offers: enable_stack_allocator, force_auto_alloc, "
                         "skip_middle_end_transformations, sbuf, psum (direct allocation), and "
                         "the legacy scheduling controls, which apdsl refuses when called"])
