"""Files (SPEC section 15): `-o`/`--svg` replacement rules, `load`/`save` confinement, `.npy`
reading.  Every file, FIFO, device node and symlink is created inside tmp_path; subprocesses
that read hostile `.npy` files run under an address-space cap."""

from __future__ import annotations

import errno
import io
import os
import resource
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.errors import ApdslError
from apdsl.runtime.core import files

KERNEL = """\
kernel k(A: f32[3, 4] @ hbm):
    return A
"""
RESULTS = {
    "dict": "kernel k(A: f32[4] @ hbm):\n    return {'a': A}\n",
    "list": "kernel k(A: f32[4] @ hbm):\n    return [A, A]\n",
    "function": "def f(x):\n    return x\nkernel k(A: f32[4] @ hbm):\n    return f\n",
}
PAIR = "kernel k(A: f32[3, 4] @ hbm, B: f32[2] @ hbm):\n    return A, B\n"


def _cap() -> None:
    # 4 GiB of address space: a file that made apdsl allocate its claimed size would fail
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def apdsl_cli(*args: str, cwd: Path, umask: int | None = None) -> subprocess.CompletedProcess:
    def pre() -> None:
        _cap()
        if umask is not None:
            os.umask(umask)
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "NO_COLOR": "1"},
                          timeout=120, preexec_fn=pre)


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    (tmp_path / "k.apk").write_text(KERNEL)
    np.save(tmp_path / "a.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
    return tmp_path


def _expected_bytes(tmp_path: Path) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.arange(12, dtype=np.float32).reshape(3, 4), allow_pickle=False)
    return buf.getvalue()


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


# -- -o and --svg -------------------------------------------------------------------------------

@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_output_file_mode_follows_umask(prog: Path, umask: int) -> None:
    proc = apdsl_cli("run", "k.apk", "-i", "A=a.npy", "-o", "out.npy", cwd=prog, umask=umask)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(os.stat(prog / "out.npy").st_mode) == 0o666 & ~umask
    assert (prog / "out.npy").read_bytes() == _expected_bytes(prog)


def test_svg_mode_follows_umask(tmp_path: Path) -> None:
    (tmp_path / "v.apk").write_text("t: f32[4, 8] @ hbm\nv = t[0:2]\n")
    proc = apdsl_cli("show", "v.apk", "v", "--svg", "v.svg", cwd=tmp_path, umask=0o027)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(os.stat(tmp_path / "v.svg").st_mode) == 0o640
    assert (tmp_path / "v.svg").read_text().startswith("<?xml")


def test_output_symlink_is_followed_and_its_target_replaced(prog: Path) -> None:
    (prog / "data").mkdir()
    real = prog / "data" / "real.npy"
    real.write_bytes(b"old")
    (prog / "link.npy").symlink_to("data/real.npy")
    proc = apdsl_cli("run", "k.apk", "-i", "A=a.npy", "-o", "link.npy", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    assert (prog / "link.npy").is_symlink()
    assert real.read_bytes() == _expected_bytes(prog)
    assert not _leftovers(prog) and not _leftovers(prog / "data")


def test_svg_symlink_is_followed(tmp_path: Path) -> None:
    (tmp_path / "v.apk").write_text("t: f32[4, 8] @ hbm\nv = t[0:2]\n")
    (tmp_path / "real.svg").write_text("old")
    (tmp_path / "pic.svg").symlink_to("real.svg")
    proc = apdsl_cli("show", "v.apk", "v", "--svg", "pic.svg", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "pic.svg").is_symlink()
    assert (tmp_path / "real.svg").read_text().startswith("<?xml")


def _char_device(path: Path, major: int, minor: int) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(major, minor))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot create a device node here: {e}")


def test_output_device_is_written_in_place(prog: Path) -> None:
    null = prog / "null"
    _char_device(null, 1, 3)  # the null device's numbers, inside tmp_path
    (prog / "v.apk").write_text("t: f32[4, 8] @ hbm\nv = t[0:2]\n")
    for args in (["run", "k.apk", "-i", "A=a.npy", "-o", "null"],
                 ["show", "v.apk", "v", "--svg", "null"]):
        proc = apdsl_cli(*args, cwd=prog)
        assert proc.returncode == 0, proc.stderr
        info = os.lstat(null)
        assert stat.S_ISCHR(info.st_mode) and info.st_rdev == os.makedev(1, 3)
    assert not _leftovers(prog)


def test_full_device_is_a_coded_write_error(prog: Path) -> None:
    full = prog / "full"
    _char_device(full, 1, 7)  # the full device: every write fails with ENOSPC
    proc = apdsl_cli("run", "k.apk", "-i", "A=a.npy", "-o", "full", cwd=prog)
    _no_traceback(proc)
    assert proc.returncode == 1 and "error[APK606]" in proc.stderr, proc.stderr
    assert "No space left" in proc.stderr
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_output_fifo_is_written_in_place(prog: Path) -> None:
    fifo = prog / "pipe.npy"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    proc = apdsl_cli("run", "k.apk", "-i", "A=a.npy", "-o", "pipe.npy", cwd=prog)
    reader.join(60)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got == [_expected_bytes(prog)]


def test_output_folder_is_a_coded_error(prog: Path) -> None:
    (prog / "out").mkdir()
    (prog / "out" / "keep.txt").write_text("keep")
    proc = apdsl_cli("run", "k.apk", "-i", "A=a.npy", "-o", "out", cwd=prog)
    _no_traceback(proc)
    assert proc.returncode == 1 and "error[APK610]" in proc.stderr, proc.stderr
    assert (prog / "out" / "keep.txt").read_text() == "keep"


@pytest.mark.parametrize("kind", sorted(RESULTS))
def test_non_tensor_result_is_a_coded_error_and_the_old_file_survives(tmp_path: Path,
                                                                       kind: str) -> None:
    (tmp_path / "r.apk").write_text(RESULTS[kind])
    (tmp_path / "out.npy").write_bytes(b"old")
    proc = apdsl_cli("run", "r.apk", "-o", "out.npy", cwd=tmp_path)
    _no_traceback(proc)
    assert proc.returncode == 1 and "error[APK611]" in proc.stderr, proc.stderr
    assert (tmp_path / "out.npy").read_bytes() == b"old"
    assert not _leftovers(tmp_path)


def test_tuple_result_needs_npz_and_npz_holds_r0_r1(tmp_path: Path) -> None:
    (tmp_path / "p.apk").write_text(PAIR)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.array([5, -1], dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    proc = apdsl_cli("run", "p.apk", "-i", "A=a.npy", "-i", "B=b.npy", "-o", "out.npy",
                     cwd=tmp_path)
    _no_traceback(proc)
    assert proc.returncode == 1 and "error[APK612]" in proc.stderr, proc.stderr
    assert not (tmp_path / "out.npy").exists()
    proc = apdsl_cli("run", "p.apk", "-i", "A=a.npy", "-i", "B=b.npy", "-o", "out.npz",
                     cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "out.npz", allow_pickle=False) as z:
        assert sorted(z.files) == ["r0", "r1"]
        np.testing.assert_array_equal(z["r0"], a)
        np.testing.assert_array_equal(z["r1"], b)


@pytest.mark.parametrize("stage", ["write", "fsync", "replace"])
def test_write_failure_keeps_the_old_file(tmp_path: Path, monkeypatch, stage: str) -> None:
    target = tmp_path / "out.npy"
    target.write_bytes(b"old contents")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    if stage == "write":
        monkeypatch.setattr(np, "save", full)
    else:
        monkeypatch.setattr(os, stage, full)
    with raises_code("APK606") as err:
        files.write_npy(target, np.zeros(4, np.float32))
    assert "No space left" in err.value.message
    assert target.read_bytes() == b"old contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy"]


def test_svg_to_a_folder_keeps_it(tmp_path: Path) -> None:
    (tmp_path / "v.apk").write_text("t: f32[4, 8] @ hbm\nv = t[0:2]\n")
    (tmp_path / "pic.svg").mkdir()
    proc = apdsl_cli("show", "v.apk", "v", "--svg", "pic.svg", cwd=tmp_path)
    _no_traceback(proc)
    assert proc.returncode == 1 and "error[APK610]" in proc.stderr
    assert (tmp_path / "pic.svg").is_dir()


# -- load / save confinement --------------------------------------------------------------------

@pytest.fixture
def jail(tmp_path: Path) -> tuple[Path, Path]:
    """(program folder, a folder outside it holding secret.npy)."""
    inside, outside = tmp_path / "prog", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    np.save(outside / "secret.npy", np.full(4, 7, np.float32))
    return inside, outside


def _run_file(folder: Path, source: str) -> None:
    path = folder / "p.apk"
    path.write_text(source)
    apdsl.run(str(path))


def test_load_through_a_symlink_out_of_the_folder_is_refused(jail) -> None:
    inside, outside = jail
    (inside / "link.npy").symlink_to(outside / "secret.npy")
    (inside / "sub").symlink_to(outside, target_is_directory=True)
    for name in ("link.npy", "sub/secret.npy"):
        with raises_code("APK603"):
            _run_file(inside, f'x: f32[4] @ hbm = load("{name}")\n')


def test_save_through_a_symlink_out_of_the_folder_is_refused(jail) -> None:
    inside, outside = jail
    before = (outside / "secret.npy").read_bytes()
    (inside / "link.npy").symlink_to(outside / "secret.npy")
    (inside / "dangling.npy").symlink_to(outside / "new.npy")
    (inside / "sub").symlink_to(outside, target_is_directory=True)
    for name in ("link.npy", "dangling.npy", "sub/secret.npy", "sub/new.npy"):
        with raises_code("APK603"):
            _run_file(inside, f'x: f32[4] @ hbm = 1.0\nsave(x, "{name}")\n')
    assert (outside / "secret.npy").read_bytes() == before
    assert sorted(p.name for p in outside.iterdir()) == ["secret.npy"]


def test_symlinks_inside_the_folder_still_work(jail) -> None:
    inside, _ = jail
    np.save(inside / "data.npy", np.arange(4, dtype=np.float32))
    (inside / "alias.npy").symlink_to("data.npy")
    (inside / "sub").mkdir()
    _run_file(inside, 'x: f32[4] @ hbm = load("alias.npy")\nsave(x, "sub/../copy.npy")\n')
    np.testing.assert_array_equal(np.load(inside / "copy.npy"), np.arange(4))


@pytest.mark.parametrize("name", ["p.apk", "", ".", "notes.txt", "sub/"])
def test_save_writes_only_npy_files(jail, name: str) -> None:
    inside, _ = jail
    source = f'x: f32[4] @ hbm = arange\nsave(x, "{name}")\n'
    with raises_code("APK613"):
        _run_file(inside, source)
    assert (inside / "p.apk").read_text() == source  # the running program is untouched
    assert not _leftovers(inside) and not _leftovers(inside.parent)
    assert "APK613" in {e.code for e in apdsl.check(str(inside / "p.apk"))}  # check too


def test_save_to_a_folder_or_fifo_is_refused(jail) -> None:
    inside, _ = jail
    (inside / "d.npy").mkdir()
    os.mkfifo(inside / "f.npy")
    for name in ("d.npy", "f.npy"):
        with raises_code("APK610"):
            _run_file(inside, f'x: f32[4] @ hbm = arange\nsave(x, "{name}")\n')
    assert stat.S_ISFIFO(os.lstat(inside / "f.npy").st_mode)


def test_load_of_a_fifo_does_not_block(jail) -> None:
    inside, _ = jail
    os.mkfifo(inside / "f.npy")
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            _run_file(inside, 'x: f32[4] @ hbm = load("f.npy")\n')
            outcome.append(None)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            outcome.append(e)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # blocked on the FIFO: release it, then fail
        os.close(os.open(inside / "f.npy", os.O_WRONLY | os.O_NONBLOCK))
        worker.join(30)
        pytest.fail("load blocked on a FIFO")
    assert isinstance(outcome[0], ApdslError) and outcome[0].code == "APK601", outcome


def test_run_source_confines_to_base_dir(jail, monkeypatch) -> None:
    inside, outside = jail
    (inside / "link.npy").symlink_to(outside / "secret.npy")
    src = 'x: f32[4] @ hbm = 3.0\nsave(x, "out.npy")\n'
    apdsl.run(src, base_dir=inside)
    np.testing.assert_array_equal(np.load(inside / "out.npy"), np.full(4, 3, np.float32))
    with raises_code("APK603"):
        apdsl.run('x: f32[4] @ hbm = load("link.npy")\n', base_dir=inside)
    monkeypatch.chdir(outside)  # without base_dir: the working directory
    with raises_code("APK603"):
        apdsl.run('x: f32[4] @ hbm = load("../prog/out.npy")\n')
    apdsl.run(src)
    assert (outside / "out.npy").is_file()


def test_repl_confines_to_the_working_directory(jail) -> None:
    inside, outside = jail
    (inside / "link.npy").symlink_to(outside / "secret.npy")
    proc = subprocess.run([sys.executable, "-m", "apdsl", "repl"], cwd=inside,
                          input='x: f32[4] @ hbm = load("link.npy")\n', capture_output=True,
                          text=True, env={**os.environ, "NO_COLOR": "1"}, timeout=120)
    assert proc.returncode == 1 and "error[APK603]" in proc.stderr, proc.stderr


# -- .npy reading -------------------------------------------------------------------------------

def _npy(header: str, data: bytes = b"", version: int = 1) -> bytes:
    width = 2 if version == 1 else 4
    pad = (64 - (8 + width + len(header) + 1) % 64) % 64
    text = (header + " " * pad + "\n").encode("latin1")
    return b"\x93NUMPY" + bytes([version, 0]) + len(text).to_bytes(width, "little") + text + data


HOSTILE = {
    "745 GiB claim": ("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 2000000), }",
                      "APK608"),
    "overflowing shape": ("{'descr': '<f8', 'fortran_order': False, "
                          "'shape': (1099511627776, 1099511627776, 1099511627776), }", "APK608"),
    "negative size": ("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }", "APK605"),
    "objects": ("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", "APK609"),
    "structured": ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }",
                   "APK605"),
    "not a dict": ("[1, 2, 3]", "APK605"),
    "call in header": ("{'descr': __import__('os'), 'fortran_order': False, 'shape': (4,), }",
                       "APK605"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_headers_are_coded_errors(tmp_path: Path, case: str) -> None:
    header, code = HOSTILE[case]
    path = tmp_path / "bad.npy"
    path.write_bytes(_npy(header, bytes(64)))
    assert len(path.read_bytes()) < 400
    with raises_code(code):
        files.read_npy(path)


def test_hostile_npy_on_the_command_line_exit_1(tmp_path: Path) -> None:
    (tmp_path / "k.apk").write_text("kernel k(A: f32[4] @ hbm):\n    return A\n")
    header = HOSTILE["745 GiB claim"][0]
    (tmp_path / "huge.npy").write_bytes(_npy(header, bytes(64)))
    proc = apdsl_cli("run", "k.apk", "-i", "A=huge.npy", cwd=tmp_path)
    _no_traceback(proc)
    assert proc.returncode == 1 and "error[APK608]" in proc.stderr, proc.stderr
    (tmp_path / "p.apk").write_text('x: f32[4] @ hbm = load("huge.npy")\n')
    for cmd in ("run", "check"):
        proc = apdsl_cli(cmd, "p.apk", cwd=tmp_path)
        _no_traceback(proc)
        assert proc.returncode == 1, proc.stderr


def test_missing_and_unreadable_inputs_exit_1(tmp_path: Path) -> None:
    (tmp_path / "k.apk").write_text("kernel k(A: f32[4] @ hbm):\n    return A\n")
    (tmp_path / "folder.npy").mkdir()
    for name in ("missing.npy", "folder.npy"):
        proc = apdsl_cli("run", "k.apk", "-i", f"A={name}", cwd=tmp_path)
        _no_traceback(proc)
        assert proc.returncode == 1 and "error[APK601]" in proc.stderr, proc.stderr


DTYPES = ["<f4", ">f4", "<f2", "<i4", ">i8", "|u1", "|i1", "|b1", "<u2", "<f8"]


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=0, max_size=4), dtype=st.sampled_from(DTYPES),
       fortran=st.booleans(), version=st.sampled_from([(1, 0), (2, 0), (3, 0)]))
def test_reading_matches_numpy_load(tmp_path_factory, shape, dtype, fortran, version) -> None:
    rng = np.random.default_rng(len(shape) * 31 + sum(shape))
    a = (rng.standard_normal(tuple(shape)) * 50).astype(dtype)
    if fortran:
        a = np.asfortranarray(a)
    buf = io.BytesIO()
    np.lib.format.write_array(buf, a, version=version, allow_pickle=False)
    path = tmp_path_factory.mktemp("npy") / "a.npy"
    path.write_bytes(buf.getvalue())
    got = files.read_npy(path)
    want = np.load(path, allow_pickle=False)
    assert got.shape == want.shape == a.shape
    assert got.dtype == want.dtype.newbyteorder("=")
    np.testing.assert_array_equal(got, want)
    assert got.flags.writeable


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_mutated_npy_reads_as_numpy_does_or_is_a_coded_error(tmp_path_factory, data) -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    raw = bytearray(_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }",
                         a.tobytes()))
    for _ in range(data.draw(st.integers(1, 4))):
        where = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.sampled_from(["set", "cut", "insert"]))
        if action == "set":
            raw[where] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del raw[where:]
            if not raw:
                break
        else:
            raw[where:where] = data.draw(st.binary(min_size=1, max_size=8))
    path = tmp_path_factory.mktemp("mut") / "m.npy"
    path.write_bytes(bytes(raw))
    try:
        got = files.read_npy(path)
    except ApdslError as e:
        assert e.code in {"APK605", "APK608", "APK609"}
        return
    want = np.load(path, allow_pickle=False)  # whatever apdsl accepts, NumPy reads alike
    np.testing.assert_array_equal(got, want)


def test_zero_d_and_fortran_inputs_reach_the_program(tmp_path: Path) -> None:
    a = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.save(tmp_path / "f.npy", a)
    np.save(tmp_path / "z.npy", np.array(5.5, dtype=np.float32))
    src = ('x: f32[3, 4] @ hbm = load("f.npy")\n'
           'assert equal(host(x), host(x)[...])\n'
           'save(x, "back.npy")\n')
    apdsl.run(src, base_dir=tmp_path)
    np.testing.assert_array_equal(np.load(tmp_path / "back.npy"), a)
    z = files.read_npy(tmp_path / "z.npy")
    assert z.shape == () and z[()] == np.float32(5.5)


# -- REPL history -------------------------------------------------------------------------------

def test_history_naming_a_folder_is_a_warning(tmp_path: Path, monkeypatch) -> None:
    from prompt_toolkit.history import InMemoryHistory

    from apdsl.surfaces import repl
    monkeypatch.setenv("APDSL_HISTORY", str(tmp_path))
    err = io.StringIO()
    history = repl._history(err)
    assert isinstance(history, InMemoryHistory)
    assert "warning" in err.getvalue() and str(tmp_path) in err.getvalue()
    history.append_string("x = 1")  # the session goes on, history kept in memory
    assert list(history.load_history_strings()) == ["x = 1"]


def test_input_from_a_fifo_or_a_device_is_refused_without_blocking(prog: Path) -> None:
    # a FIFO nothing writes would block the open for ever; an endless device never ends:
    # `-i` reads regular files only, as `load` does (APK601)
    os.mkfifo(prog / "in.npy")
    proc = apdsl_cli("run", "k.apk", "-i", "A=in.npy", "-o", "out.npy", cwd=prog)
    _no_traceback(proc)
    assert proc.returncode == 1 and "error[APK601]" in proc.stderr, proc.stderr
    assert "not a regular file" in proc.stderr and not (prog / "out.npy").exists()
    proc = apdsl_cli("check", "k.apk", "-i", "A=in.npy", cwd=prog)  # the header read too
    assert proc.returncode == 1 and "error[APK601]" in proc.stderr, proc.stderr
    zero = prog / "zero"
    _char_device(zero, 1, 5)  # the zero device: endless zero bytes
    proc = apdsl_cli("run", "k.apk", "-i", "A=zero", cwd=prog)
    _no_traceback(proc)
    assert proc.returncode == 1 and "error[APK601]" in proc.stderr, proc.stderr


def test_input_claiming_more_than_the_memory_budget_is_refused(prog: Path) -> None:
    # a sparse file of the claimed size: the header matches it, the budget refuses it before
    # any of its 4 GB is read
    head = _npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000), }")
    with open(prog / "in.npy", "wb") as f:
        f.write(head)
        f.truncate(len(head) + 4 * 1000000 * 1000)
    proc = apdsl_cli("run", "k.apk", "-i", "A=in.npy", "--max-memory", "64M", cwd=prog)
    _no_traceback(proc)
    assert proc.returncode == 1 and "error[APK430]" in proc.stderr, proc.stderr


def test_interactive_repl_runs_with_a_folder_as_history(tmp_path: Path) -> None:
    import select
    import time
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(APDSL_HISTORY=str(tmp_path), TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1",
               COLUMNS="100", LINES="40")
    proc = subprocess.Popen([sys.executable, "-m", "apdsl", "repl"], stdin=slave,
                            stdout=slave, stderr=slave, env=env, close_fds=True, cwd=tmp_path)
    os.close(slave)
    seen = b""

    def wait_for(token: bytes, timeout: float = 30) -> bool:
        nonlocal seen
        end = time.monotonic() + timeout
        while token not in seen and time.monotonic() < end:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        return token in seen

    try:
        assert wait_for(b"apk>"), seen
        os.write(master, b"t: f32[4, 8] @ sbuf\r")
        os.write(master, b"t.shape\r")
        assert wait_for(b"(4, 8)"), seen
        os.write(master, b":quit\r")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = seen.decode(errors="replace")
    assert "warning: history not saved" in text and "Traceback" not in text
    assert tmp_path.is_dir()
