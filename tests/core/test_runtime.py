"""Threads, fork, multiprocessing, the kernel cache, float16 without F16C, determinism."""

from __future__ import annotations

import multiprocessing as mp
import os
import pathlib
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import leakyops
from leakyops import _config, _core
from refs import BF16, assert_same, random_values, ref_leaky_relu, ref_leaky_relu_backward, ref_prelu

BIG = 3 * _config.PARALLEL_MIN_BYTES // 2 + 17  # elements: threaded for every dtype, not a multiple of anything


def _check_all_ops(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    for dtype in (np.float32, np.float16, BF16, np.float64):
        x = random_values(rng, n, dtype)
        g = random_values(rng, n, dtype)
        assert_same(leakyops.leaky_relu(x, 0.1), ref_leaky_relu(x, 0.1))
        assert_same(leakyops.leaky_relu_backward(g, x, 0.1), ref_leaky_relu_backward(g, x, 0.1))
        x2 = x.reshape(1, -1)
        w = np.asarray([0.3], dtype)
        assert_same(leakyops.prelu(x2, w), ref_prelu(x2, w))
        y = x.copy()
        leakyops.leaky_relu_(y, 0.1)
        assert_same(y, ref_leaky_relu(x, 0.1))


def test_concurrent_calls_from_many_threads():
    _check_all_ops(0, 10)  # compile first, then hammer
    _check_all_ops(0, BIG)
    errors = []

    def work(seed):
        try:
            for i in range(3):
                _check_all_ops(seed * 10 + i, BIG if i % 2 == 0 else 1000)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_after_parallel_kernels():
    _check_all_ops(1, BIG)  # the parent has run the thread pool
    assert leakyops.get_num_threads() >= 1
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            _check_all_ops(2, BIG)
            code = 0
        finally:
            os.write(w, bytes([code]))
            os._exit(code)
    os.close(w)
    status = os.read(r, 1)
    _, exit_status = os.waitpid(pid, 0)
    assert status == b"\x00" and os.waitstatus_to_exitcode(exit_status) == 0
    _check_all_ops(3, BIG)  # and the parent still works


def _mp_worker(seed):
    _check_all_ops(seed, BIG)
    return seed


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_multiprocessing_start_methods(method):
    if method not in mp.get_all_start_methods():
        pytest.skip(f"{method} not available")
    _check_all_ops(4, BIG)
    ctx = mp.get_context(method)
    with ctx.Pool(2) as pool:
        assert pool.map(_mp_worker, [5, 6]) == [5, 6]


def _pool() -> int:
    """The threads numba's pool has (the cap of every thread count)."""
    from numba.core import config

    return config.NUMBA_NUM_THREADS


def test_set_num_threads_validation_and_thread_local_setting():
    before = leakyops.get_num_threads()
    with pytest.raises(ValueError):
        leakyops.set_num_threads(0)
    for bad in (True, np.True_, "2", 2.0, None):
        with pytest.raises(TypeError, match="set_num_threads"):
            leakyops.set_num_threads(bad)
    assert leakyops.get_num_threads() == before
    try:
        leakyops.set_num_threads(np.int64(1))  # NumPy integers are integers
        assert leakyops.get_num_threads() == 1
        leakyops.set_num_threads(10**6)  # capped: the count that runs, not the one asked for
        assert leakyops.get_num_threads() == _pool()
    finally:
        leakyops.set_num_threads(before)
    seen = []

    def local():
        leakyops.set_num_threads(1, this_thread_only=True)
        seen.append(leakyops.get_num_threads())

    t = threading.Thread(target=local)
    t.start()
    t.join()
    assert seen == [1] and leakyops.get_num_threads() == before


def test_thread_limit_nests_and_restores():
    before = leakyops.get_num_threads()
    with leakyops.thread_limit(1):
        assert leakyops.get_num_threads() == 1
        with leakyops.thread_limit(3):
            assert leakyops.get_num_threads() == min(3, _pool())
            _check_all_ops(12, BIG)  # 3 threads on a 2-core machine still gives right results
        assert leakyops.get_num_threads() == 1
    assert leakyops.get_num_threads() == before
    with pytest.raises(ValueError):
        with leakyops.thread_limit(0):
            pass
    assert leakyops.get_num_threads() == before


def test_results_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(7)
    cases = [((16, 8, 40, 40), 8, 1),        # split along channels (not reduced)
             ((64, 2, 5000), 2, 1),          # split along a reduced axis, with partial sums
             ((1, 3, 400000), 3, 1),         # one huge plane per channel
             ((300000, 4), 4, -1)]           # channels last
    before = leakyops.get_num_threads()
    try:
        for shape, c, axis in cases:
            x = random_values(rng, shape, np.float32, special_share=0)
            g = random_values(rng, shape, np.float32, special_share=0)
            w = random_values(rng, c, np.float32, special_share=0)
            results = []
            for n in (1, 2, 3, 5):
                leakyops.set_num_threads(n)
                results.append(leakyops.prelu_backward(g, x, w, axis=axis))
            for gi, gw in results[1:]:
                assert_same(gi, results[0][0])
                assert_same(gw, results[0][1])
    finally:
        leakyops.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64], ids=["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("seed,spread", [(8, 0.0), (9, 0.0), (10, 3.0), (11, 3.0)])
def test_grad_weight_at_least_as_accurate_as_torch(dtype, seed, spread):
    torch = pytest.importorskip("torch")
    from refs import to_torch

    rng = np.random.default_rng(seed)
    shape = (8, 4, 128, 128)
    # spread > 0: magnitudes over many binades, where the order of a sum matters more
    # (clipped to ±1000, where float16 and its products with g stay finite)
    x = np.clip(rng.standard_normal(shape) * np.exp(rng.standard_normal(shape) * spread), -1e3, 1e3)
    x = x.astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    w = np.full(4, 0.25, dtype)
    _, gw = leakyops.prelu_backward(g, x, w)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    terms = np.where(x64 > 0, 0.0, x64 * g64)
    if dtype == np.float64:  # a reference better than float64: exact sums per channel
        import math
        exact = np.array([math.fsum(terms[:, c].ravel()) for c in range(4)])
    else:
        exact = terms.sum(axis=(0, 2, 3))
    tx, tw = to_torch(x).requires_grad_(), to_torch(w).requires_grad_()
    torch.nn.functional.prelu(tx, tw).backward(to_torch(g))
    ours = np.abs(gw.astype(np.float64) - exact).max()
    theirs = np.abs(tw.grad.double().numpy() - exact).max()
    assert ours <= theirs, (ours, theirs)


def _run(code: str, env_extra: dict, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)


CHECK_HALF = """
    import numpy as np, ml_dtypes, leakyops
    x = np.array([-1.5, -0.0, 0.0, 2.0, -65504.0, np.nan, -np.inf, 6e-8, -6e-8], np.float16)
    y = leakyops.leaky_relu(x, 0.3)
    ref = np.where(x.astype(np.float32) > 0, x.astype(np.float32), x.astype(np.float32) * np.float32(0.3)).astype(np.float16)
    assert np.array_equal(y.view(np.uint16)[np.isfinite(ref) | np.isinf(ref)], ref.view(np.uint16)[np.isfinite(ref) | np.isinf(ref)]), (y, ref)
    g = leakyops.leaky_relu_backward(np.ones(9, np.float16), x, 0.3)
    print("ok", leakyops._config.use_soft_half())
"""


def test_import_and_calls_with_a_read_only_cache_and_home(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    try:
        r = _run(CHECK_HALF, {"NUMBA_CACHE_DIR": str(ro / "cache"), "HOME": str(ro)})
    finally:
        os.chmod(ro, 0o755)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok")


def test_cache_can_be_turned_off():
    r = _run(CHECK_HALF, {"LEAKYOPS_CACHE": "0"})
    assert r.returncode == 0, r.stderr


def test_generic_cpu_without_f16c_uses_exact_software_halves():
    r = _run(CHECK_HALF, {"NUMBA_CPU_NAME": "generic", "LEAKYOPS_CACHE": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok True"


CHECK_HALF_KERNELS = """
    import warnings
    warnings.simplefilter("error")  # numba's compile-time warnings too
    import numpy as np, leakyops
    from leakyops import _core
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5)).astype(np.float16)
    g = rng.standard_normal((2, 3, 5)).astype(np.float16)
    w = rng.uniform(0.1, 1, 3).astype(np.float16)
    xt = np.asfortranarray(x)
    for c in (">", ">="):
        for xx in (x, xt):
            _core.prelu_impl(xx, w, 1, compare=c)
            _core.prelu_backward_impl(g, xx, w, 1, compare=c)
            _core.leaky_relu_impl(xx, 0.3, compare=c)
            _core.leaky_relu_backward_impl(g, xx, 0.3, compare=c)
    for c in ("dnnl-ref", "dnnl-jit"):
        _core.prelu_impl(x, w, 1, compare=c)
        _core.prelu_backward_parts(g, x, w, 1, compare=c)
    _core.leaky_relu_impl(x, 0.3, compare="dnnl-eltwise")
    print("ok", leakyops._config.use_soft_half())
"""


@pytest.mark.slow
def test_generic_cpu_compiles_the_half_kernels_without_warnings():
    # numba 0.68 warned (NumbaIRAssumptionWarning) compiling some float16 loops with the
    # software conversions inlined at its IR level; a user without F16C saw it on stderr
    r = _run(CHECK_HALF_KERNELS, {"NUMBA_CPU_NAME": "generic", "LEAKYOPS_CACHE": "0"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "ok True"


def test_two_processes_compiling_into_one_cache_at_once(tmp_path):
    cache = tmp_path / "cache"
    code = textwrap.dedent(CHECK_HALF) + "\nleakyops.prelu_backward(np.ones((2, 3)), np.ones((2, 3)), np.ones(3))\n"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    again = _run(code, {"NUMBA_CACHE_DIR": str(cache)})
    assert again.returncode == 0, again.stderr


def test_software_half_conversions_are_exact():
    from numba import njit

    from leakyops import _kernels as _scalar

    @njit
    def widen(bits, out):
        for i in range(bits.shape[0]):
            out[i] = _scalar.h2f_soft(bits[i])

    @njit
    def narrow(values, out):
        for i in range(values.shape[0]):
            out[i] = _scalar.f2h_soft(values[i])

    every_half = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    wide = np.empty(65536, np.float32)
    widen(every_half, wide)
    expected = every_half.view(np.float16).astype(np.float32)
    finite = ~np.isnan(expected)
    assert np.array_equal(wide.view(np.uint32)[finite], expected.view(np.uint32)[finite])
    assert np.isnan(wide[~finite]).all()
    # every float32 around every float16 rounding boundary, plus random bit patterns
    rng = np.random.default_rng(9)
    h = every_half.view(np.float16)
    with np.errstate(invalid="ignore"):  # inf + -inf between the two halves of the table
        mids = (h[:-1].astype(np.float64) + h[1:].astype(np.float64)) / 2
    mids = mids[np.isfinite(mids)].astype(np.float32)
    around = np.concatenate([mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf)),
                             rng.integers(0, 2 ** 32, 2_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32),
                             np.array([65504, 65519.996, 65520, 1e9, -1e9, 2 ** -25, 2 ** -24, 3 * 2 ** -26], np.float32)])
    got = np.empty(around.size, np.uint16)
    narrow(around, got)
    with np.errstate(over="ignore"):
        expected = around.astype(np.float16)
    finite = ~np.isnan(around)
    assert np.array_equal(got[finite], expected.view(np.uint16)[finite])
    assert np.isnan(got[~finite].view(np.float16)).all()


@pytest.mark.parametrize("variable", ["LEAKYOPS_NUM_THREADS", "LEAKYOPS_PARALLEL_MIN_BYTES"])
@pytest.mark.parametrize("value", ["abc", "0", "-3", "2.5"])
def test_bad_thread_settings_in_the_environment_warn(variable, value):
    """A value that is not an integer >= 1 is not ignored silently: a RuntimeWarning names the
    variable and the default taken (an error under ``-W error``), and the import still works."""
    code = "import leakyops; print(leakyops.get_num_threads())"
    env = dict(os.environ, **{variable: value})
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and variable in proc.stderr and "RuntimeWarning" in proc.stderr
    strict = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code], env=env,
                            capture_output=True, text=True, timeout=120)
    assert strict.returncode != 0 and variable in strict.stderr


def test_an_edit_to_any_kernel_file_recompiles_every_kernel(tmp_path):
    """numba stamps a cached kernel with its own source file only; a loop in ``_loops.py``
    inlines the rules of ``_rules.py``. The kernels are stamped with the whole package, so an
    edited rule is never served from a stale cache (run on a copy of the package)."""
    import shutil

    src = pathlib.Path(leakyops.__file__).parent
    copy = tmp_path / "leakyops"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import numpy as np, leakyops; "
            "print(leakyops.leaky_relu(np.array([-2.0], np.float32), 0.5)[0])")
    env = {"PYTHONPATH": str(tmp_path), "NUMBA_CACHE_DIR": ""}
    assert _run(code, env, cwd=tmp_path).stdout.split()[-1] == "-1.0"
    rules = copy / "_kernels" / "_rules.py"
    text = rules.read_text()
    old = "_select(_keep(v, ge), v, v * s)"
    assert old in text
    rules.write_text(text.replace(old, "_select(_keep(v, ge), v, v * s * np.float32(3.0))", 1))
    r = _run(code, env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "-3.0"


# ---- the disk cache with several writers -----------------------------------------------------
# numba's cache index and data files are written without a lock: two processes compiling at
# once can give two signatures one data file, and the index can then name a file holding
# another signature's code (seen in this suite: ``finish_lanes`` for float32, typed in a child
# process, loaded from a file holding its int16 code). leakyops' kernels save and load their
# cache under a lock and treat an entry of another signature as a miss (``_kernels._jit``).

_CACHED_MODULE = """
from leakyops._kernels._jit import _jit

@_jit
def inc(x):
    return x + 1

@_jit
def twice_inc(x):  # (types its callee from the cache, as the kernels' drivers do)
    return inc(x) * 2
"""


def _cache_entries(cache: pathlib.Path, name: str) -> dict:
    """``{argument types as text: data file}`` of function ``name``'s cache index."""
    import pickle

    (index,) = cache.rglob(f"*.{name}-*.nbi")
    with open(index, "rb") as f:
        pickle.load(f)  # (numba's version)
        _, overloads = pickle.loads(f.read())
    return {str(key[0]): index.parent / data for key, data in overloads.items()}


def test_a_cache_entry_holding_another_signatures_code_is_compiled_again(tmp_path):
    """The race's result, made by hand: ``inc``'s int64 and float64 data files swapped. A
    process then compiling ``twice_inc`` types ``inc`` from the cache and gets each
    signature's own code (numba alone failed to type the caller), and a third process loads
    both of ``inc``'s entries from the cache again."""
    (tmp_path / "cached_mod.py").write_text(_CACHED_MODULE)
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}
    direct = "import cached_mod as m; print(m.inc(1), m.inc(1.5), sum(m.inc.stats.cache_hits.values()))"
    first = _run(direct, env)
    assert first.returncode == 0 and first.stdout.split() == ["2", "2.5", "0"], first.stderr
    files = sorted(_cache_entries(tmp_path / "cache", "inc").values())
    assert len(files) == 2
    a, b = (p.read_bytes() for p in files)
    files[0].write_bytes(b)
    files[1].write_bytes(a)
    swapped = _run("import cached_mod as m; print(m.twice_inc(1), m.twice_inc(1.5))", env)
    assert swapped.returncode == 0, swapped.stderr[-3000:]
    assert swapped.stdout.split() == ["4", "5.0"]
    again = _run(direct, env)
    assert again.returncode == 0 and again.stdout.split() == ["2", "2.5", "2"], again.stderr


def test_processes_under_other_settings_keep_cache_files_of_their_own(tmp_path):
    """A process compiling under other code-generation settings (here another streaming
    threshold; a cap does the same) writes cache files of its own: afterwards the first
    process still loads its kernel from the cache, and so does the second (one index file
    each). numba alone keeps one index a function, which the other settings' stamp made stale:
    each process then compiled every kernel again after the other had run."""
    (tmp_path / "cached_mod.py").write_text(_CACHED_MODULE)
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}
    a = {**env, "LEAKYOPS_STREAM_MIN_BYTES": "12345"}
    b = {**env, "LEAKYOPS_STREAM_MIN_BYTES": "54321"}
    code = "import cached_mod as m; print(m.inc(1), sum(m.inc.stats.cache_hits.values()))"
    hits = []
    for run_env in (a, b, a, b):
        r = _run(code, run_env)
        assert r.returncode == 0, r.stderr[-2000:]
        hits.append(r.stdout.split())
    assert hits == [["2", "0"], ["2", "0"], ["2", "1"], ["2", "1"]], hits
    assert len(list((tmp_path / "cache").rglob("*.inc-*.nbi"))) == 2


_MANY_SIGNATURES = """
import os, sys, time
import numpy as np
import cached_mod as m
start = float(sys.argv[1])
while time.time() < start:  # (every process compiles at the same moment)
    time.sleep(0.001)
kinds = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
         np.float32, np.float64, np.complex64, np.complex128]
k = int(sys.argv[2])
for t in kinds[k:] + kinds[:k]:
    m.inc(np.zeros(3, t))
print("ok")
"""


def test_processes_compiling_into_one_cache_at_once_leave_every_entry_its_own_code(tmp_path):
    """Four processes compile twelve signatures each into one cold cache, at the same moment,
    in different orders: afterwards each index entry's data file holds the code of that
    entry's signature."""
    import time

    (tmp_path / "cached_mod.py").write_text(_CACHED_MODULE)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(tmp_path))
    start = time.time() + 8
    procs = [subprocess.Popen([sys.executable, "-c", _MANY_SIGNATURES, str(start), str(3 * k)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    entries = _cache_entries(tmp_path / "cache", "inc")
    assert len(entries) == 12
    check = _run(_HELD_SIGNATURES + f"\nheld({[str(p) for p in entries.values()]!r})", env)
    assert check.returncode == 0, check.stderr[-2000:]
    held = check.stdout.split("\n")[:-1]
    assert held == list(entries), [(path.name, sig, got) for (sig, path), got
                                   in zip(entries.items(), held) if sig != got]


_HELD_SIGNATURES = """
import pickle
def held(paths):  # (unpickled where cached_mod imports)
    for path in paths:
        with open(path, "rb") as f:
            data = pickle.loads(f.read())
        (sig,) = [item for item in data if type(item).__name__ == "Signature"]
        print(tuple(sig.args))
"""


def test_a_cache_lock_the_file_system_refuses_is_no_lock(tmp_path, monkeypatch):
    """Where flock fails (a file system without locks: ENOLCK) or the lock file cannot be
    made (a read-only directory), the cache is used as numba uses it, without a lock: no
    error reaches the call."""
    import errno

    from leakyops._kernels import _jit

    if _jit.fcntl is None:
        pytest.skip("no fcntl on this OS: the cache is never locked")

    def refuse(fd, op):
        raise OSError(errno.ENOLCK, "no locks available")

    entered = []
    with _jit._cache_lock(str(tmp_path), True):  # (a working lock first: the file is made)
        entered.append("locked")
    monkeypatch.setattr(_jit.fcntl, "flock", refuse)
    with _jit._cache_lock(str(tmp_path), True):
        entered.append("refused")
    with _jit._cache_lock(str(tmp_path / "missing"), False):
        entered.append("no directory")
    assert entered == ["locked", "refused", "no directory"]
    assert (tmp_path / "leakyops-cache.lock").exists()


_COMPILED_ONCE = """
    import numpy as np, leakyops
    from numba import types
    from leakyops._kernels import _loops, _team
    leakyops.set_num_threads(2)
    for n in (1_000, 1_000_000):  # (the serial drivers, then the team's parts)
        x = np.linspace(-1, 1, n).astype(np.float32)
        x3, xs = x.reshape(4, 10, -1), x.reshape(-1, 10, 2)
        w = np.full(10, 0.25, np.float32)
        leakyops.prelu(x3, w); leakyops.prelu(xs, w)
        leakyops.prelu_backward(x3, x3, w); leakyops.prelu_backward(x3, x3, w[:1])
    for fn in (_loops.prelu_fwd_c, _loops.prelu_bwd_lanes, _loops.prelu_bwd_rows,
               _loops.prelu_bwd_units, _team._prelu_team):
        for sig in fn.signatures:
            assert not any(isinstance(t, types.IntegerLiteral) for t in sig), (fn.__name__, sig)
        print(fn.__name__, len(fn.signatures))
"""


@pytest.mark.slow
def test_serial_and_team_paths_share_one_compiled_loop():
    """The serial drivers pass constant bounds and axes as int64 (``_loops._as_int64``): a
    literal would make numba compile the loop once more for that value, beside the version the
    team's parts use (compiled without the disk cache, so that every signature shows)."""
    r = _run(_COMPILED_ONCE, {"LEAKYOPS_CACHE": "0"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "prelu_bwd_rows 1" in r.stdout, r.stdout
