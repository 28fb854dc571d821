"""`nl.tile_size`: the hardware tile limits of the target in force (SPEC section 11), read
when asked, so `set_target` changes them.  Values from the NKI tiling overview and the
architecture guides: 128 partitions, PSUM banks of 2 KiB (512 float32) per partition, 8
banks, a stationary free size of 128 and a moving free size of 512 (the tiling overview
gives 512 without a per-target caveat), bn_stats over at most 512 elements; the usable SBUF
size per partition is not published, so sbuf_fmax_bytes is the physical per-partition size
(192, 224, 256 KiB on trn1, trn2, trn3), as SPEC section 4 has it."""

from __future__ import annotations

from ..tensor import targets


class TileSize:
    """`nl.tile_size.pmax` and friends, for the current NKI target."""

    __slots__ = ()
    # the fields of NKI's nl.tile_size (the .apk sandbox lets a program read these)
    FIELDS = frozenset({"pmax", "psum_fmax", "psum_bank_fmax", "psum_bank_fmax_bytes",
                        "psum_num_banks", "gemm_stationary_fmax", "gemm_moving_fmax",
                        "bn_stats_fmax", "sbuf_fmax_bytes", "sbuf_fmax", "sbuf_size_bytes",
                        "total_available_sbuf_size", "psum_min_align", "sbuf_min_align"})

    @property
    def _target(self) -> targets.Target:
        return targets.target_for("sbuf")

    @property
    def pmax(self) -> int:
        return self._target.partitions

    @property
    def psum_bank_fmax(self) -> int:
        return self._target.psum_bank_bytes // 4

    psum_fmax = psum_bank_fmax  # the deprecated name

    @property
    def psum_bank_fmax_bytes(self) -> int:
        return self._target.psum_bank_bytes

    @property
    def psum_num_banks(self) -> int:
        return self._target.psum_banks

    @property
    def gemm_stationary_fmax(self) -> int:
        return 128

    @property
    def gemm_moving_fmax(self) -> int:
        return 512

    @property
    def bn_stats_fmax(self) -> int:
        return 512

    @property
    def sbuf_fmax_bytes(self) -> int:
        return int(self._target.capacity_of("sbuf") or 0)

    @property
    def sbuf_fmax(self) -> int:
        return self.sbuf_fmax_bytes // 4

    @property
    def sbuf_size_bytes(self) -> int:
        return self.pmax * self.sbuf_fmax_bytes

    @property
    def total_available_sbuf_size(self) -> int:
        """The deprecated name of `sbuf_fmax_bytes` (per-partition bytes, despite the name)."""
        return self.sbuf_fmax_bytes

    @property
    def psum_min_align(self) -> int:
        raise _unpublished("psum_min_align")

    @property
    def sbuf_min_align(self) -> int:
        raise _unpublished("sbuf_min_align")

    def __repr__(self) -> str:
        return (f"tile_size({self._target.name}: pmax={self.pmax}, psum_bank_fmax="
                f"{self.psum_bank_fmax}, gemm_stationary_fmax={self.gemm_stationary_fmax}, "
                f"gemm_moving_fmax={self.gemm_moving_fmax})")


TILE_SIZE = TileSize()


def _unpublished(field: str) -> Exception:
    from ..errors import ApdslTypeError
    return ApdslTypeError(
        f"nl.tile_size.{field}: the NKI reference does not publish this value, so apdsl "
        "does not make one up", code="APK156",
        notes=["the nki.language stub gives no number for it; the architecture guides are "
               "silent too"],
        help="align addresses yourself to a value you know for your hardware")


def ds(start: int, size: int) -> slice:
    """`nl.ds(start, size)`: the index of `size` elements from `start` (a slice)."""
    from ..errors import ApdslTypeError
    for what, v in (("start", start), ("size", size)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ApdslTypeError(f"ds: {what} must be an int, not {type(v).__name__}",
                                 code="APK147")
    if size < 1:
        raise ApdslTypeError(f"ds: size must be at least 1, got {size}", code="APK147")
    return slice(start, start + size)


def dynamic_range(start: int, stop: int | None = None, step: int = 1) -> range:
    """`nl.dynamic_range(start, stop=None, step=1)`: a loop whose bounds the hardware reads at
    run time; here, as the other range functions, Python's range over int bounds (a program's
    `nl.dynamic_range` reads a bound held in a register when the loop starts, then calls this:
    `nl_ordering`); the step must be a positive compile-time int, as the reference says."""
    from ..errors import ApdslTypeError
    for what, v in (("start", start), ("stop", stop), ("step", step)):
        if v is None and what == "stop":
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise ApdslTypeError(
                f"dynamic_range: {what} must be an int, not {type(v).__name__}", code="APK157",
                help="the step is a compile-time positive int (the hardware loop "
                     "encodes it as an immediate)" if what == "step" else "a bound is an "
                     "int or a VirtualRegister (nisa.register_alloc, nisa.register_load)")
    if step < 1:
        raise ApdslTypeError(f"dynamic_range: step must be a positive int, got {step}",
                             code="APK157")
    return range(start, stop, step) if stop is not None else range(start)
