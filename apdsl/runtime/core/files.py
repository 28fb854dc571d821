"""Reading and writing files for `-i`/`-o`, `--svg` and `load`/`save` (SPEC section 15).

Reading: a `.npy` file is parsed here rather than by `numpy.load`, so nothing is unpickled and
the header is checked against the file's size before any memory is allocated (a 200-byte file
may claim a 745 GiB array).

Writing follows `install`'s replacement rules: a new or regular file is written to a temporary
name in the same folder and renamed over the target, so a reader never sees half a file and a
failed write leaves the old file as it was; a symlink is followed and its target replaced; an
existing device or FIFO is written in place (`-o /dev/null` must not turn the device node into
a regular file); a folder is an error.  New files get mode 0666 & ~umask, like any file a shell
redirection creates: the temporary file is opened with mode 0666 and the kernel applies the
umask (reading the umask would mean changing it, process-wide state).

`save` and `load` in a program are confined to the program's folder by real path, so a symlink
cannot lead them out (`confined`).
"""

from __future__ import annotations

import ast
import errno
import io
import os
import stat
import warnings
from collections.abc import Callable
from math import prod
from pathlib import Path
from typing import IO, Any

import numpy as np

from ...errors import ApdslIOError

__all__ = ["read_npy", "write_npy", "write_npz", "write_text", "write_atomic", "confined",
           "widen_for_npy", "MAX_HEADER"]

MAGIC = b"\x93NUMPY"
MAX_HEADER = 1 << 16  # NumPy itself refuses headers over 10,000 bytes unless told otherwise
_CHUNK = 1 << 20
_NPY_HELP = "write it with numpy.save (allow_pickle=False)"


# -- reading ------------------------------------------------------------------------------------

def read_npy(path: Path | str, shown: str | None = None, *, regular_only: bool = False,
             header_only: bool = False) -> Any:
    """The array in a `.npy` file.  `regular_only` refuses FIFOs and devices (`load` in a
    program and `-i` must not block on one, or read one that never ends).  With
    `header_only` (for `check`) the header is checked against the file's size and
    (shape, dtype) returned without reading the data."""
    shown = shown or str(path)
    if regular_only:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG  # open() below says what is wrong
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            raise ApdslIOError(f"cannot read '{shown}': not a regular file", code="APK601",
                               path=shown, help="only regular .npy files are read (a FIFO or a device "
                               "can block, or never end): save the array to a file")
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, errors mapped first
    except FileNotFoundError:
        raise ApdslIOError(f"cannot read '{shown}': no such file", code="APK601",
                           path=shown) from None
    except IsADirectoryError:
        raise _folder(shown) from None
    except PermissionError:
        raise ApdslIOError(f"cannot read '{shown}': permission denied", code="APK601",
                           path=shown) from None
    except OSError as e:
        raise ApdslIOError(f"cannot read '{shown}': {e.strerror or e}", code="APK601",
                           path=shown) from None
    with f:
        try:
            info = os.fstat(f.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise _folder(shown)
            regular = stat.S_ISREG(info.st_mode)
            return _parse(f, shown, info.st_size if regular else None, header_only)
        except OSError as e:
            raise ApdslIOError(f"cannot read '{shown}': {e.strerror or e}", code="APK601",
                               path=shown) from None


def _folder(shown: str) -> ApdslIOError:
    return ApdslIOError(f"cannot read '{shown}': it is a folder", code="APK601", path=shown)


def _invalid(shown: str, why: str) -> ApdslIOError:
    return ApdslIOError(f"'{shown}' is not a valid .npy file", code="APK605", notes=[why],
                        help=_NPY_HELP, path=shown)


def _read_exact(f: IO[bytes], n: int) -> bytes:
    """n bytes, or fewer at end of file; read in chunks so a false size claim costs nothing."""
    parts, left = [], n
    while left > 0:
        piece = f.read(min(left, _CHUNK))
        if not piece:
            break
        parts.append(piece)
        left -= len(piece)
    return b"".join(parts)


def _parse(f: IO[bytes], shown: str, size: int | None, header_only: bool = False) -> Any:
    head = _read_exact(f, 8)
    if len(head) < 8 or head[:6] != MAGIC:
        raise _invalid(shown, "it does not start with the .npy magic bytes")
    major = head[6]
    if major not in (1, 2, 3):
        raise _invalid(shown, f".npy format version {major}.{head[7]} is not known")
    width = 2 if major == 1 else 4
    raw = _read_exact(f, width)
    if len(raw) < width:
        raise _invalid(shown, "the file ends inside its header")
    length = int.from_bytes(raw, "little")
    if length > MAX_HEADER:
        raise _invalid(shown, f"its header claims {length} bytes (at most {MAX_HEADER})")
    text_bytes = _read_exact(f, length)
    if len(text_bytes) < length:
        raise _invalid(shown, "the file ends inside its header")
    dtype, fortran, shape = _header(text_bytes.decode("utf-8" if major == 3 else "latin1",
                                                      errors="replace"), shown)
    count = prod(shape)  # Python ints: a huge claim cannot overflow
    nbytes = count * dtype.itemsize
    data_start = 8 + width + length
    if size is not None and size - data_start != nbytes:
        raise ApdslIOError(
            f"'{shown}': its header does not match the file's size", code="APK608",
            notes=[f"the header claims shape {shape} of {dtype} ({nbytes} bytes of data); "
                   f"the file holds {max(size - data_start, 0)} bytes after the header"],
            help="the file is truncated or its header was altered; write it again with "
            "numpy.save", path=shown)
    if header_only:
        return shape, dtype
    _within_budget(shown, nbytes)
    data = _read_exact(f, nbytes)
    if len(data) != nbytes or (size is None and f.read(1)):
        raise ApdslIOError(
            f"'{shown}': its header does not match the data that follows", code="APK608",
            notes=[f"the header claims {nbytes} bytes of data; "
                   f"{'fewer' if len(data) != nbytes else 'more'} follow"],
            help="the file is truncated or its header was altered", path=shown)
    array = np.frombuffer(data, dtype=dtype, count=count).reshape(
        shape, order="F" if fortran else "C")
    # a private, writable, native-endian, C-ordered copy: later code may cast or view it
    return np.array(array, dtype=dtype.newbyteorder("="), order="C")  # 0-d stays 0-d


def _within_budget(shown: str, nbytes: int) -> None:
    """A file (a stream above all, whose size is not known) may hold more than the memory
    budget: refuse before reading it rather than run out of memory."""
    from ...errors import ApdslRuntimeError
    from ...tensor.budget import HELP, human
    from ...tensor.machine import current
    limit = current().options.max_memory
    if nbytes > limit:
        raise ApdslRuntimeError(f"'{shown}' holds {human(nbytes)} of data, more than the memory "
                                f"budget of {human(limit)}", code="APK430",
                                help=HELP, path=shown)


def _header(text: str, shown: str) -> tuple[np.dtype, bool, tuple[int, ...]]:
    try:
        with warnings.catch_warnings():  # a mangled header may hold odd escapes
            warnings.simplefilter("ignore")
            header = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise _invalid(shown, "its header is not a Python dict literal") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise _invalid(shown, "its header must have exactly the keys descr, fortran_order "
                       "and shape")
    shape, fortran = header["shape"], header["fortran_order"]
    if not isinstance(fortran, bool):
        raise _invalid(shown, f"fortran_order is {fortran!r}, not True or False")
    if (not isinstance(shape, tuple) or len(shape) > 64
            or not all(type(d) is int and d >= 0 for d in shape)):
        raise _invalid(shown, f"shape {shape!r} is not a tuple of at most 64 sizes >= 0")
    try:
        dtype = np.lib.format.descr_to_dtype(header["descr"])
    except (TypeError, ValueError, KeyError, RecursionError):
        raise _invalid(shown, f"descr {header['descr']!r} is not a NumPy dtype") from None
    if dtype.hasobject:
        raise ApdslIOError(f"'{shown}' holds Python objects (a pickle)", code="APK609",
                           notes=[f"its dtype is {dtype}"],
                           help="apdsl never unpickles: save a numeric array", path=shown)
    if dtype.fields is not None or dtype.subdtype is not None or dtype.kind not in "biufc":
        raise _invalid(shown, f"dtype {dtype} is not a plain numeric dtype")
    return dtype, fortran, tuple(shape)


# -- writing ------------------------------------------------------------------------------------

def _write_error(shown: str, e: OSError) -> ApdslIOError:
    return ApdslIOError(f"cannot write '{shown}': {e.strerror or e}", code="APK606",
                        path=shown,
                        help="nothing was written; an existing file was left as it was")


def write_atomic(path: Path | str, write: Callable[[IO[bytes]], None], *,
                 shown: str | None = None, regular_only: bool = False) -> None:
    """Write a file through `write(f)` with the replacement rules of the module docstring.
    `regular_only` (for `save`) refuses devices and FIFOs instead of writing into them."""
    shown = shown or str(path)
    target = Path(os.path.realpath(path))  # a symlink (chain) is followed to its target
    try:
        info: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as e:
        raise _write_error(shown, e) from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise ApdslIOError(f"cannot write '{shown}': it is a folder", code="APK610",
                           path=shown, help="name a file (inside the folder if you meant it)")
    if info is not None and not stat.S_ISREG(info.st_mode):
        if regular_only or stat.S_ISSOCK(info.st_mode):
            raise ApdslIOError(f"cannot write '{shown}': not a regular file", code="APK610",
                               path=shown, help="write to a new or regular file")
        _write_in_place(target, write, shown)
        return
    folder = target.parent
    if not folder.is_dir():
        raise ApdslIOError(f"cannot write '{shown}': folder {folder} does not exist",
                           code="APK606", path=shown)
    fd, tmp = _temporary(folder, target.name, shown)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())  # a full disk may only say so here
        os.replace(tmp, target)
    except OSError as e:
        _discard(tmp)
        raise _write_error(shown, e) from None
    except BaseException:
        _discard(tmp)
        raise


def _temporary(folder: Path, name: str, shown: str) -> tuple[int, str]:
    """A new file next to the target, opened with mode 0666 so the umask decides (mkstemp
    would make it 0600)."""
    import secrets  # (imports hashlib: not on the start-up path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = str(folder / f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
        except OSError as e:
            raise _write_error(shown, e) from None
    raise _write_error(shown, OSError(errno.EEXIST, "no free temporary name"))


def _discard(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _write_in_place(target: Path, write: Callable[[IO[bytes]], None], shown: str) -> None:
    try:
        # no O_CREAT, no O_TRUNC: the device or FIFO is written, never replaced
        fd = os.open(target, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "wb") as f:
            # numpy.save asks a real file for its position, which a FIFO has not
            buffer = io.BytesIO()
            write(buffer)
            f.write(buffer.getbuffer())
    except OSError as e:
        raise _write_error(shown, e) from None


def _plain(array: Any, shown: str) -> np.ndarray:
    array = np.asarray(array)
    if array.dtype.hasobject or array.dtype.kind not in "biufc":
        raise ApdslIOError(f"cannot write '{shown}': the value is not a tensor", code="APK611",
                           notes=[f"it holds {array.dtype} elements"],
                           help="write a tensor or a host array of numbers")
    return array


def write_npy(path: Path | str, array: np.ndarray, *, shown: str | None = None,
              regular_only: bool = False) -> None:
    """One array as a `.npy` file (see `write_atomic`)."""
    shown = shown or str(path)
    data = _plain(array, shown)
    write_atomic(path, lambda f: np.save(f, data, allow_pickle=False), shown=shown,
                 regular_only=regular_only)


def write_npz(path: Path | str, arrays: list[np.ndarray], *, shown: str | None = None,
              names: list[str] | None = None) -> None:
    """Several arrays as an uncompressed `.npz` archive of `r0`, `r1`, ... (a tuple result),
    or of `names` (a run on ranks: `rank0`, `rank1`, ...)."""
    shown = shown or str(path)
    keys = names if names is not None else [f"r{i}" for i in range(len(arrays))]
    named = {k: _plain(a, shown) for k, a in zip(keys, arrays)}
    write_atomic(path, lambda f: np.savez(f, allow_pickle=False, **named), shown=shown)


def write_text(path: Path | str, text: str, *, shown: str | None = None) -> None:
    """A UTF-8 text file (an SVG picture), by the same rules."""
    data = text.encode("utf-8")
    write_atomic(path, lambda f: f.write(data), shown=shown)


# -- confinement --------------------------------------------------------------------------------

def confined(base_dir: Path | str, path: str) -> Path:
    """`path` (relative to `base_dir`) with symlinks resolved, if it stays inside
    `base_dir`; otherwise APK603.  A missing file resolves as far as it exists."""
    base = Path(os.path.realpath(base_dir))
    full = Path(os.path.realpath(base / path))
    if full != base and base not in full.parents:
        how = "through a symbolic link" if not (Path(path).is_absolute() or
                                                 ".." in Path(path).parts) else "by its name"
        raise ApdslIOError(f"'{path}' is outside the program's folder", code="APK603",
                           notes=[f"it resolves to {full}, {how}; the folder is {base}"],
                           help="load and save use paths that stay inside the program's "
                           "folder (symbolic links are followed)")
    return full


def widen_for_npy(array: np.ndarray) -> np.ndarray:
    """bfloat16 and float8 become float32, int4 becomes int8: NumPy cannot reload those."""
    from ...tensor.dtypes import dtype as to_dtype
    try:
        d = to_dtype(array.dtype)
    except Exception:  # noqa: BLE001 - a NumPy-native dtype apdsl does not name: keep it
        return array
    if d.native:
        return array
    return array.astype(np.int8 if d.name == "int4" else np.float32)
