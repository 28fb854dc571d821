"""The legacy NKI index API (`nl.mgrid`, `nl.arange` index expressions, `nl.par_dim`),
which the current NKI reference removed (the migration guide: "arange has been removed, use
slicing or APs"; block dimensions and `nl.par_dim` removed).  Each name is kept only to fail
at its use with a located error naming its replacement (APK150), rather than resolving to an
unrelated builtin."""

from __future__ import annotations

from typing import Any

from ..errors import ApdslTypeError

_REPLACEMENTS = {
    "arange": ("index expressions built with nl.arange were removed from NKI",
               "index with slices (t[0:128, 0:512]), nl.ds(start, size), or an access "
               "pattern t.ap([[512, 128], [1, 512]])"),
    "mgrid": ("nl.mgrid was removed from NKI",
              "index with integer slices: t[0:128, 0:512] instead of t[i_p, i_f]"),
    "par_dim": ("nl.par_dim was removed from NKI: the first dimension of an on-chip tile is "
                "its partition dimension",
                "write the shape plainly: nl.ndarray((128, 512), dtype, nl.sbuf)"),
}


class Removed:
    """`nl.<name>` of the removed API: calling or indexing it is APK150."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _fail(self) -> ApdslTypeError:
        what, instead = _REPLACEMENTS[self.name]
        return ApdslTypeError(f"nl.{self.name} is not part of the current NKI API: {what}",
                              code="APK150", help=instead,
                              notes=["the NKI migration guide lists it among the features of "
                                     "neuronxcc.nki.* not available in nki.*"])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._fail()

    def __getitem__(self, key: Any) -> Any:
        raise self._fail()

    def __repr__(self) -> str:
        return f"<removed nl.{self.name}>"


LEGACY = {name: Removed(name) for name in _REPLACEMENTS}
