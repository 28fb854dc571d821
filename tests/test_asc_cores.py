"""apdsl.asc on several AI cores and with queues (SPEC 17, 18): `kernel[n, stream]` runs a
pyasc kernel once per core (own UB, pipes and flags; GM shared), the block index functions,
the AIC/AIV split and cross-core flags under pyasc's names, races between cores at both lines;
`asc.TPipe`/`asc.TQue`/`asc.TBuf` on the queue model, whose enque/deque order the pipes so a
queued kernel needs no flags, and whose misuse is an error at the user's line.  Oracles: NumPy
for values; the mutants of the queue example for the checker."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import apdsl
import apdsl.asc as asc

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "asc_python" / "add_queues.py"
N = 64  # float32 elements a core: 256 bytes, whole 32-byte blocks


def _line(fn, text):
    """The line of `text` in kernel `fn`'s source (the first that holds it)."""
    import inspect
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, s in enumerate(lines) if text in s)


def _core_part(addr, n):
    """This core's n elements of a GM array: a GlobalTensor at addr + block index * n."""
    g = asc.GlobalTensor()
    g.set_global_buffer(addr + asc.get_block_idx() * n, n)
    return g


def _store(g, u, n):
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(g, u, n)


@asc.jit
def _ids(z: asc.GlobalAddress, n: int):
    g = _core_part(z, n)
    u = asc.LocalTensor(asc.float32, asc.TPosition.VECOUT, 0, n)
    asc.duplicate(u, float(asc.get_block_idx() + 100 * asc.get_block_num()), n)
    _store(g, u, n)


@pytest.mark.parametrize("cores", [1, 3, 8])
def test_each_core_runs_once_with_its_block_index(cores):
    z = np.full(cores * N, -1, np.float32)
    _ids[cores, None](z, N)
    want = np.repeat(np.arange(cores, dtype=np.float32) + 100 * cores, N)
    np.testing.assert_array_equal(z, want)


@asc.jit
def _same_place(z: asc.GlobalAddress, n: int):
    g = asc.GlobalTensor()
    g.set_global_buffer(z, n)
    u = asc.LocalTensor(asc.float32, asc.TPosition.VECOUT, 0, n)
    asc.duplicate(u, float(asc.get_block_idx()), n)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(g, u, n)


@asc.jit
def _same_work(z: asc.GlobalAddress, n: int, used: int):
    # each core's part is get_block_idx() % used: with more cores than `used`, two cores
    # write the same part with the same values (pyasc's matmul tests do this on AIV 16-31)
    part = asc.get_block_idx() % used
    g = asc.GlobalTensor()
    g.set_global_buffer(z + part * n, n)
    u = asc.LocalTensor(asc.float32, asc.TPosition.VECOUT, 0, n)
    asc.duplicate(u, float(part), n)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(g, u, n)


def test_two_cores_given_the_same_work_race_even_writing_equal_values():
    # equal values in this run do not make the write order defined, and the checker cannot
    # know they are equal for every input: still APK583, saying the work was given twice
    z = np.zeros(2 * N, np.float32)
    _same_work[2, None](z, N, 2)  # one part each: no race
    np.testing.assert_array_equal(z, np.repeat([0.0, 1.0], N))
    with pytest.raises(apdsl.ApdslError) as e:
        _same_work[3, None](np.zeros(2 * N, np.float32), N, 2)
    err = e.value
    line = _line(_same_work, "asc.data_copy(g, u, n)")
    assert err.code == "APK583" and err.span.line == line and "core 2" in err.message
    assert any("same part of the output" in note for note in err.notes)
    assert "stop the extra cores" in err.help and "cross_core_set_flag(" in err.help
    with pytest.raises(apdsl.ApdslError) as e:  # different values: the same error
        _same_place[2, None](np.zeros(N, np.float32), N)
    assert e.value.code == "APK583" and "stop the extra cores" in e.value.help


def test_two_cores_writing_the_same_gm_race_at_both_lines():
    with pytest.raises(apdsl.ApdslError) as e:
        _same_place[2, None](np.zeros(N, np.float32), N)
    err = e.value
    line = _line(_same_place, "asc.data_copy(g, u, n)")
    assert err.code == "APK583" and err.span.file == __file__ and err.span.line == line
    assert "between cores" in err.message and "core 1" in err.message
    assert f"(line {line})" in err.message and "on core 1 of 2 AI cores" in err.notes


def test_each_core_has_its_own_ub_at_the_same_address():
    # every core's LocalTensor is at UB address 0: on hardware each core has its own UB, so
    # core 1's duplicate does not overwrite core 0's values before core 0 stores them
    z = np.zeros(4 * N, np.float32)
    _ids[4, None](z, N)
    assert sorted(set(z.tolist())) == [400.0, 401.0, 402.0, 403.0]


@asc.jit
def _halves(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    # the AIV part of a kernel split into AIC and AIV parts: each AI core takes n elements,
    # its AIV 0 stores 2 * x of the first half, and after a mode-1 flag both AIVs set (a
    # barrier of the AI core's two AIVs), its AIV 1 reads that half back and stores it plus
    # x of the second half
    if asc.ascend_is_aiv():
        block = asc.get_block_idx() // 2
        half = n // 2
        sub = asc.get_sub_block_idx()
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x + block * n + sub * half, half)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z + block * n, n)
        u = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, half)
        w = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, half * 4, half)
        asc.data_copy(u, xg, half)
        if sub == 0:
            asc.set_flag(asc.HardEvent.MTE2_V, 0)
            asc.wait_flag(asc.HardEvent.MTE2_V, 0)
            asc.muls(u, u, 2.0, half)
            asc.set_flag(asc.HardEvent.V_MTE3, 0)
            asc.wait_flag(asc.HardEvent.V_MTE3, 0)
            asc.data_copy(zg, u, half)
        asc.cross_core_set_flag(1, 1, asc.PipeID.PIPE_MTE3)
        asc.cross_core_wait_flag(1, 1)
        if sub == 1:
            asc.data_copy(w, zg, half)
            asc.set_flag(asc.HardEvent.MTE2_V, 0)
            asc.wait_flag(asc.HardEvent.MTE2_V, 0)
            asc.add(w, w, u, half)
            asc.set_flag(asc.HardEvent.V_MTE3, 0)
            asc.wait_flag(asc.HardEvent.V_MTE3, 0)
            asc.data_copy(zg[half:], w, half)


def test_aiv_halves_with_a_cross_core_flag_match_numpy():
    x = np.random.default_rng(1).standard_normal(2 * N).astype(np.float32)
    z = np.zeros_like(x)
    _halves[2, None](x, z, N)
    h = N // 2
    want = np.concatenate([np.concatenate([2 * x[b * N:b * N + h],
                                           2 * x[b * N:b * N + h] + x[b * N + h:(b + 1) * N]])
                           for b in range(2)])
    np.testing.assert_array_equal(z, want)


def test_without_the_cross_core_wait_the_aivs_race_at_both_lines():
    import inspect
    import textwrap
    src = textwrap.dedent(inspect.getsource(_halves.fn))
    assert "        asc.cross_core_wait_flag(1, 1)\n" in src
    mutant = src.replace("        asc.cross_core_wait_flag(1, 1)\n", "", 1)
    namespace: dict = {"asc": asc}
    exec(compile(mutant, __file__, "exec"), namespace)  # noqa: S102 - this test's kernel
    with pytest.raises(apdsl.ApdslError) as e:
        namespace["_halves"][1, None](np.ones(N, np.float32), np.zeros(N, np.float32), N)
    assert e.value.code == "APK583" and "between cores" in e.value.message
    assert "AIV 0" in e.value.message and "AIV 1" in e.value.message


def test_a_cross_core_wait_nothing_sets_is_a_deadlock_naming_the_cores():
    @asc.jit
    def waits(x: asc.GlobalAddress, n: int):
        if asc.ascend_is_aiv():
            asc.cross_core_wait_flag(3, 1)

    with pytest.raises(apdsl.ApdslError) as e:
        waits[1, None](np.zeros(N, np.float32), N)
    assert e.value.code == "APK588" and "AIV 0" in e.value.message and "AIV 1" in e.value.message
    assert e.value.span.file == __file__


# -- queues -------------------------------------------------------------------------------------
def _example(source: str | None = None, tmp_path: Path | None = None):
    """The queue example as a module (`source`: a mutant of its text, written to tmp_path)."""
    path = EXAMPLE
    if source is not None:
        path = tmp_path / "add_queues_mutant.py"
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"asc_queue_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    asc.install()
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("cores", "tiles", "dtype"), [
    (1, 1, np.float32), (2, 3, np.float16), (5, 2, np.float32)])
def test_the_queue_example_matches_numpy_without_flags(cores, tiles, dtype):
    m = _example()
    rng = np.random.default_rng(cores + tiles)
    per_core = tiles * m.TILE
    x, y = (rng.standard_normal(cores * per_core).astype(dtype) for _ in range(2))
    z = np.zeros_like(x)
    m.add_queues[cores, None](x, y, z, per_core)
    np.testing.assert_array_equal(z, x + y)
    assert "set_flag" not in EXAMPLE.read_text().split('"""')[2]


# each mutant takes the queues out of one hand-over: the consumer gets the producer's tensor
# through a module-level slot instead of enque/deque (a deque alone would wait forever), so
# nothing orders the producer's pipe before the consumer's: the checker reports the race at
# both lines (the consumer's, primary, names the producer's line)
HAND_OVERS = {
    "load -> add": [
        ("    x_in.enque(xt)\n    y_in.enque(yt)\n", "    HELD[:] = [xt, yt]\n"),
        ("    xt = x_in.deque(like.dtype)\n    yt = y_in.deque(like.dtype)\n",
         "    xt, yt = HELD\n"),
        ("    x_in.free_tensor(xt)\n    y_in.free_tensor(yt)\n", ""),
    ],
    "add -> store": [
        ("    z_out.enque(zt)\n", "    HELD[:] = [zt]\n"),
        ("    zt = z_out.deque(z_gm.dtype)\n", "    zt = HELD[0]\n"),
        ("    z_out.free_tensor(zt)\n", ""),
    ],
}
PRODUCER = {"load -> add": "asc.data_copy(xt, x_gm[t * TILE:], TILE)",
            "add -> store": "asc.add(zt, xt, yt, TILE)"}
CONSUMER = {"load -> add": "asc.add(zt, xt, yt, TILE)",
            "add -> store": "asc.data_copy(z_gm[t * TILE:], zt, TILE)"}


@pytest.mark.parametrize("hand_over", list(HAND_OVERS))
def test_without_a_queue_the_hand_over_races_at_both_lines(tmp_path, hand_over):
    mutant = EXAMPLE.read_text().replace("BUFFERS = 2", "BUFFERS = 2\nHELD = []", 1)
    for old, new in HAND_OVERS[hand_over]:
        assert old in mutant
        mutant = mutant.replace(old, new, 1)
    m = _example(mutant, tmp_path)
    x = np.ones(m.TILE, np.float32)
    with pytest.raises(apdsl.ApdslError) as e:
        m.add_queues[2, None](np.tile(x, 2), np.tile(x, 2), np.zeros(2 * m.TILE, np.float32),
                              m.TILE)
    err = e.value
    lines = mutant.splitlines()
    prod = 1 + next(i for i, s in enumerate(lines) if PRODUCER[hand_over] in s)
    cons = 1 + next(i for i, s in enumerate(lines) if CONSUMER[hand_over] in s)
    assert err.code == "APK570", err
    assert err.span.line == cons and err.span.file.endswith("add_queues_mutant.py")
    assert f"(line {prod})" in err.message, err


def _queue_kernel(body: str):
    """A kernel with a one-buffer VECIN queue q over x (n float32), then `body`."""
    namespace: dict = {"asc": asc}
    src = (
        "@asc.jit\n"
        "def k(x: asc.GlobalAddress, n: int):\n"
        "    g = asc.GlobalTensor()\n"
        "    g.set_global_buffer(x, n)\n"
        "    pipe = asc.TPipe()\n"
        "    q = asc.TQue(asc.TPosition.VECIN, 1)\n"
        "    pipe.init_buffer(q, 1, n * 4)\n"
        + "".join(f"    {s}\n" for s in body.strip().splitlines()))
    path = Path(__file__).with_name("_asc_queue_kernel_src.py")
    code = compile(src, str(path), "exec")
    exec(code, namespace)  # noqa: S102 - a kernel of this test, from the text above
    return namespace["k"]


@pytest.mark.parametrize(("body", "code", "line", "words"), [
    ("t = q.alloc_tensor(asc.float32)\nasc.data_copy(t, g, n)\nu = q.deque(asc.float32)",
     "APK596", 10, "deque of an empty queue"),
    ("t = q.alloc_tensor(asc.float32)\nasc.data_copy(t, g, n)\nq.enque(t)\n"
     "u = q.deque(asc.float32)\nq.free_tensor(u)\nasc.adds(u, u, 1.0, n)",
     "APK408", 13, "free_tensor gave back to its queue"),
    ("a = q.alloc_tensor(asc.float32)\nb = q.alloc_tensor(asc.float32)",
     "APK593", 9, "all 1 buffers of the queue are in use"),
    ("t = q.alloc_tensor(asc.float32)\nq.enque(t)\nq.enque(t)", "APK595", 10, "is queued"),
])
def test_queue_misuse_is_an_error_at_the_users_line(body, code, line, words):
    k = _queue_kernel(body)
    with pytest.raises(apdsl.ApdslError) as e:
        k[2, None](np.zeros(N, np.float32), N)
    err = e.value
    assert err.code == code and words in err.message, err
    assert err.span.file.endswith("_asc_queue_kernel_src.py") and err.span.line == line
    assert " q" in err.message or "q[0]" in err.message  # the queue by the user's name
    if code == "APK596":  # the note names the line of the tensor never enqueued
        assert "the tensor alloc_tensor gave at line 8 was never enqueued" in err.notes


def _requeue_kernel(late: bool):
    """z = x + 1 through a VECOUT queue whose tensor is dequeued, worked on by V and enqueued
    again for MTE3 (AscendC's EnQue takes a dequeued buffer); `late`: the re-enqueue comes
    before the vector step, so it carries nothing of it."""
    @asc.jit
    def k(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
        xg = _core_part(x, n)
        zg = _core_part(z, n)
        pipe = asc.TPipe()
        q_in = asc.TQue(asc.TPosition.VECIN, 1)
        q_out = asc.TQue(asc.TPosition.VECOUT, 1)
        pipe.init_buffer(q_in, 1, n * 4)
        pipe.init_buffer(q_out, 1, n * 4)
        x_local = q_in.alloc_tensor(asc.float32)
        z_local = q_out.alloc_tensor(asc.float32)
        asc.data_copy(x_local, xg, n)
        q_in.enque(x_local)
        q_out.enque(z_local)
        x_local = q_in.deque(asc.float32)
        z_local = q_out.deque(asc.float32)
        if late:
            q_out.enque(z_local)
        asc.adds(z_local, x_local, 1.0, n)
        if not late:
            q_out.enque(z_local)
        q_in.free_tensor(x_local)
        z_local = q_out.deque(asc.float32)
        asc.data_copy(zg, z_local, n)
        q_out.free_tensor(z_local)
    return k


def test_a_dequeued_tensor_is_enqueued_again_carrying_what_its_producer_did_by_then():
    x = np.arange(2 * N, dtype=np.float32)
    z = np.zeros_like(x)
    _requeue_kernel(late=False)[2, None](x, z, N)
    np.testing.assert_array_equal(z, x + 1)
    k = _requeue_kernel(late=True)
    with pytest.raises(apdsl.ApdslError) as e:  # the enque came before the vector step
        k[2, None](x, np.zeros_like(x), N)
    first = k.fn.__code__.co_firstlineno
    assert e.value.code == "APK570" and e.value.span.line == first + 23
    assert e.value.labels[0].span.line == first + 18 and "pipe V" in e.value.message


def test_more_enques_than_the_depth_is_an_error():
    k = _queue_kernel("pipe2 = asc.TPipe()\nr = asc.TQue(asc.TPosition.VECIN, 1)\n"
                      "pipe2.init_buffer(r, 2, 256)\na = r.alloc_tensor(asc.float32)\n"
                      "b = r.alloc_tensor(asc.float32)\nr.enque(a)\nr.enque(b)")
    with pytest.raises(apdsl.ApdslError) as e:
        k[1, None](np.zeros(N, np.float32), N)
    assert e.value.code == "APK594" and e.value.span.line == 14
    assert "r.enque: the queue already holds 1 tensor, its depth" in e.value.message


def test_a_tbuf_is_scratch_space_of_any_dtype():
    @asc.jit
    def k(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
        xg = _core_part(x, n)
        zg = _core_part(z, n)
        pipe = asc.TPipe()
        buf = asc.TBuf(asc.TPosition.VECCALC)
        pipe.init_buffer(buf, n * 4)
        t = buf.get(asc.float32)
        asc.data_copy(t, xg, n)
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        asc.adds(t, t, 1.5, n)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        asc.data_copy(zg, t, n)

    x = np.arange(3 * N, dtype=np.float32)
    z = np.zeros_like(x)
    k[3, None](x, z, N)
    np.testing.assert_array_equal(z, x + np.float32(1.5))


# -- the host side ----------------------------------------------------------------------------
def test_set_platform_takes_both_backends_and_refuses_what_pyasc_does_not_list():
    config = asc.runtime.config
    config.set_platform(config.Backend.Model, config.Platform.Ascend910B1)
    config.set_platform("Model", None, 3, False)  # device_id and check change no result
    for bad in (("GPU",), ("Model", "Ascend310P"), ("Model", None, -1)):
        with pytest.raises(apdsl.ApdslError) as e:
            config.set_platform(*bad)
        assert e.value.code == "APK665"


def test_the_npu_backend_runs_on_apdsl_with_torchs_npu_device_as_the_cpu():
    torch = pytest.importorskip("torch")
    import importlib.util
    if importlib.util.find_spec("torch_npu") is not None:
        pytest.skip("a real torch_npu keeps its device")
    config = asc.runtime.config
    config.set_platform(config.Backend.NPU)
    x = torch.arange(2 * N, dtype=torch.float32, device="npu")
    z = torch.zeros_like(x).to("npu")
    assert x.device.type == "cpu" and z.npu() is z
    _ids[2, None](z, N)
    want = np.repeat(np.arange(2, dtype=np.float32) + 200, N)
    np.testing.assert_array_equal(z.numpy(), want)


def test_host_names_apdsl_lacks_are_apk660_naming_them():
    asc.install()
    import asc.lib.host as host
    with pytest.raises(apdsl.ApdslError, match=r"asc\.lib\.host\.BatchMatmulTiling") as e:
        host.BatchMatmulTiling  # noqa: B018
    assert e.value.code == "APK660" and e.value.span.file == __file__


def test_cli_grid_runs_the_entry_kernel_on_n_cores(tmp_path):
    rng = np.random.default_rng(2)
    x, y = (rng.standard_normal(4 * 128).astype(np.float32) for _ in range(2))
    for name, a in (("x", x), ("y", y), ("z", np.zeros_like(x))):
        np.save(tmp_path / f"{name}.npy", a)
    np.save(tmp_path / "n.npy", np.array(128))
    args = ["-i", "x=x.npy", "-i", "y=y.npy", "-i", "z=z.npy", "-i", "per_core=n.npy"]
    proc = subprocess.run([sys.executable, "-m", "apdsl", "run", str(EXAMPLE), "--grid", "4",
                           *args, "-o", "out.npz"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["r2"], x + y)
    low = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(EXAMPLE), "--grid", "2",
                          *args], cwd=tmp_path, capture_output=True, text=True)
    assert low.returncode == 0 and "[core 1, pipe V]" in low.stdout
    bad = subprocess.run([sys.executable, "-m", "apdsl", "run", str(EXAMPLE), "--grid", "0",
                          *args], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2 and "--grid" in bad.stderr and "Traceback" not in bad.stderr


# -- scalar access and names apdsl lacks on pyasc's objects ---------------------------------------
SCALARS = '''
@asc.jit
def scalars(z: asc.GlobalAddress, n: int):
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, n)
    u = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, n)
    first = zg.get_value(1)
    zg.set_value(0, first * 10)
    asc.set_flag(asc.HardEvent.S_MTE2, 0)
    asc.wait_flag(asc.HardEvent.S_MTE2, 0)
    asc.data_copy(u, zg, n)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.adds(u, u, 1.0, n)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, u, n)
'''


def _scalars(tmp_path, source):
    path = tmp_path / "scalars_kernel.py"
    path.write_text("import asc\n" + source)
    spec = importlib.util.spec_from_file_location("asc_scalars_kernel", path)
    module = importlib.util.module_from_spec(spec)
    asc.install()
    spec.loader.exec_module(module)
    return module.scalars


def test_get_value_and_set_value_run_on_the_scalar_pipe(tmp_path):
    z = np.arange(N, dtype=np.float32)
    _scalars(tmp_path, SCALARS)[1, None](z, N)
    want = np.arange(N, dtype=np.float32) + 1
    want[0] = 10 * 1 + 1
    np.testing.assert_array_equal(z, want)


def test_a_dma_reading_what_set_value_wrote_without_the_event_races(tmp_path):
    mutant = SCALARS.replace("    asc.wait_flag(asc.HardEvent.S_MTE2, 0)\n", "")
    with pytest.raises(apdsl.ApdslError) as e:
        _scalars(tmp_path, mutant)[1, None](np.zeros(N, np.float32), N)
    err = e.value
    assert err.code == "APK570" and err.span.line == 11  # the data_copy, after `import asc`
    assert "set_value (line 9)" in err.message and "pipe S" in err.message


def test_a_method_apdsl_lacks_is_apk660_naming_it():
    @asc.jit
    def k(x: asc.GlobalAddress, n: int):
        pipe = asc.TPipe()
        buf = asc.TBuf(asc.TPosition.VECCALC)
        pipe.init_buffer(buf, 256)
        t = buf.alloc_tensor(asc.float32)   # a TBuf's alloc/free: the whole buffer, no queue
        buf.free_tensor(t)
        t.print(8)

    with pytest.raises(apdsl.ApdslError, match=r"asc\.LocalTensor\.print") as e:
        k[1, None](np.zeros(N, np.float32), N)
    assert e.value.code == "APK660" and e.value.span.line == _line(k, "t.print(8)")


def _calc_kernel(barrier: bool):
    """A temporary buffer from a VECCALC queue, as the AscendC API docs allocate one: z = x * 2 + 1
    through it, with or without the pipe barrier between the two dependent vector steps."""
    @asc.jit
    def k(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
        xg = _core_part(x, n)
        zg = _core_part(z, n)
        u = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, n)  # (the queue goes around it)
        pipe = asc.TPipe()
        calc = asc.TQue(asc.TPosition.VECCALC, 1)
        pipe.init_buffer(calc, 1, n * 4)
        asc.data_copy(u, xg, n)
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        tmp = calc.alloc_tensor(asc.float32)
        asc.muls(tmp, u, 2.0, n)
        calc.enque(tmp)
        tmp = calc.deque(asc.float32)
        if barrier:
            asc.pipe_barrier(asc.PipeID.PIPE_V)
        asc.adds(u, tmp, 1.0, n)  # the dependent step: the barrier orders it, not the queue
        calc.free_tensor(tmp)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        asc.data_copy(zg, u, n)
    return k


def test_a_veccalc_queue_holds_temporary_buffers():
    x = np.arange(2 * N, dtype=np.float32)
    z = np.zeros_like(x)
    _calc_kernel(barrier=True)[2, None](x, z, N)
    np.testing.assert_array_equal(z, x * np.float32(2) + np.float32(1))


def test_a_veccalc_queue_orders_nothing_between_vector_steps():
    # enque/deque from V to V is no barrier: the dependent V step without one still races
    k = _calc_kernel(barrier=False)
    with pytest.raises(apdsl.ApdslError) as e:
        k[1, None](np.zeros(N, np.float32), np.zeros(N, np.float32), N)
    assert e.value.code == "APK571" and "asc.adds on pipe V" in e.value.message
