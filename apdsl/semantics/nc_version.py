"""`nisa.nc_version` and `nisa.get_nc_version()` (NKI isa): the NeuronCore generation of the
target in force, gen2 (trn1/inf2), gen3 (trn2), gen4 (trn3).  A version is an int (2, 3, 4, as
the NKI enum's values) that prints as its member, so kernels compare it either way
(`nisa.get_nc_version() == nisa.nc_version.gen3`, `>= nisa.nc_version.gen3`)."""

from __future__ import annotations

from ..tensor import targets
from .values import Module


class NcVersion(int):
    """One member of `nisa.nc_version`."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return f"gen{int(self)}"

    def __repr__(self) -> str:
        return f"nisa.nc_version.{self.name}"

    __str__ = __repr__


GEN2, GEN3, GEN4 = NcVersion(2), NcVersion(3), NcVersion(4)
NC_VERSION = Module("nisa.nc_version", "<builtin>", {"gen2": GEN2, "gen3": GEN3, "gen4": GEN4})
_OF_TARGET = {"trn1": GEN2, "trn2": GEN3, "trn3": GEN4}


def get_nc_version() -> NcVersion:
    """The NeuronCore version of the current NKI target (`--target`, `set_target`)."""
    return _OF_TARGET[targets.target_for("sbuf").name]
