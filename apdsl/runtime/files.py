"""Reading and writing `.npy` files for `-i`/`-o` and `load`/`save`: errors are diagnostics,
writes are atomic (a temporary file renamed into place), so nothing half-written is left."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from ..errors import ApdslIOError


def read_npy(path: Path | str, shown: str | None = None) -> np.ndarray:
    shown = shown or str(path)
    p = Path(path)
    if not p.exists():
        raise ApdslIOError(f"cannot read '{shown}': no such file", code="APK601", path=shown)
    try:
        with open(p, "rb") as f:
            array = np.load(f, allow_pickle=False)
    except IsADirectoryError:
        raise ApdslIOError(f"cannot read '{shown}': it is a folder", code="APK601",
                           path=shown) from None
    except PermissionError:
        raise ApdslIOError(f"cannot read '{shown}': permission denied", code="APK601",
                           path=shown) from None
    except (ValueError, OSError, EOFError) as e:
        raise ApdslIOError(f"'{shown}' is not a valid .npy file", code="APK605",
                           notes=[str(e)], help="write it with numpy.save", path=shown) from None
    if not isinstance(array, np.ndarray):
        raise ApdslIOError(f"'{shown}' does not hold a single array", code="APK605",
                           path=shown)
    return array


def write_npy(path: Path | str, array: np.ndarray) -> None:
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise ApdslIOError(f"cannot write '{path}': folder {folder} does not exist",
                           code="APK606", path=str(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise ApdslIOError(f"cannot write '{path}': {e.strerror}", code="APK606",
                           path=str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, np.asarray(array), allow_pickle=False)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def widen_for_npy(array: np.ndarray) -> np.ndarray:
    """bfloat16 and float8 become float32, int4 becomes int8: NumPy cannot reload those."""
    from ..tensor.dtypes import dtype as to_dtype
    try:
        d = to_dtype(array.dtype)
    except Exception:  # noqa: BLE001 - a NumPy-native dtype apdsl does not name: keep it
        return array
    if d.native:
        return array
    return array.astype(np.int8 if d.name == "int4" else np.float32)
