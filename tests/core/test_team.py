"""leakyops' own team of threads (``_kernels/_team.py``, ``_threads.Team``): the parts give
the serial kernels' bits whoever runs them, a worker that never takes its part costs no
wait, a sleeping worker is woken, callers from several threads share the team, a forked
child starts workers of its own, and a process exits with its workers running."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from refs import BF16

import leakyops
from leakyops import _core, _kernels, _threads
from leakyops._kernels import _team

pytestmark = pytest.mark.skipif(
    not _team.SYS_FUTEX or sys.platform != "linux", reason="the team needs Linux's futex")

DTYPES = [np.float16, BF16, np.float32, np.float64]


def _calls(dtype, n):
    """(name, kernel, args, flags, index of the array written) of each team kernel on ``n``
    elements (prelu: (4, 16, n/64), channels last (1, n/16, 16), one slope (1, 1, n))."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    x[::7] = 0.0
    g = rng.standard_normal(n).astype(dtype)
    w = rng.standard_normal(16).astype(dtype)
    x3 = x[: n // 64 * 64].reshape(4, 16, -1)
    xl = x[: n // 16 * 16].reshape(1, -1, 16)  # channels last: a slope per element
    return [
        ("leaky_relu", _kernels.lrelu_fwd_row, (x, np.empty_like(x), 0.2, False), False, 1),
        ("leaky_relu_", _kernels.lrelu_fwd_row_inplace, (x.copy(), 0.2, True), True, 0),
        ("leaky_relu_backward", _kernels.lrelu_bwd_row, (g, x, np.empty_like(x), 0.2, False),
         False, 2),
        ("prelu", _kernels.prelu_fwd_c_run, (x3, np.empty_like(x3), w, False, False, 1),
         (False, False), 1),
        ("prelu channels last", _kernels.prelu_fwd_c_run,
         (xl, np.empty_like(xl), w, True, False, 1), (True, False), 1),
        ("prelu short rows", _kernels.prelu_fwd_short_run, (x3, np.empty_like(x3), w, False),
         False, 1),
        ("copy", _kernels.copy_row, (x, np.empty_like(x)), False, 1),
        ("prelu_backward", _kernels.prelu_bwd_c_run,
         (g[: x3.size].reshape(x3.shape), x3, np.empty_like(x3), w, np.empty_like(w), False,
          False), (False, False), 2),
        ("prelu_backward one slope", _kernels.prelu_bwd_c_run,  # (units of 4,096 elements)
         (g.reshape(1, 1, n), x.reshape(1, 1, n), np.empty((1, 1, n), dtype), w[:1],
          np.empty(1, dtype), False, False), (False, False), 2),
        ("prelu_backward channels last", _kernels.prelu_bwd_c_run,
         (g[: xl.size].reshape(xl.shape), xl, np.empty_like(xl), w, np.empty_like(w), True,
          True), (True, True), 2),
    ]


def _copies(args):
    """The arguments with fresh copies of the arrays, half types as their kernel views."""
    return tuple(a.copy().view(_core._FAST_VIEW.get(a.dtype) or a.dtype)
                 if isinstance(a, np.ndarray) else a for a in args)


def _serial(fn, args, flags):
    args = _copies(args)
    _core._entry(fn, args, flags)(*args)
    return args


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [64 * 31, 64 * 1000 + 64 * 3, 64 * 4099])
@pytest.mark.parametrize("threads", [2, 3, 5])
def test_each_part_gives_the_serial_bits(dtype, n, threads):
    """Every team kernel on 2, 3 and 5 parts (more parts than workers: the caller runs the
    rest) writes what its serial kernel writes, bit for bit (prelu_backward: its grad_input
    and its weight gradient, the sums' parts fixed by the shapes)."""
    _threads.team_call(0)  # (the workers this machine allows)
    for name, fn, args, flags, _ in _calls(dtype, n):
        expected = _serial(fn, args, flags)
        run = _copies(args)
        assert _core._run_team(fn, run, flags, 0, threads) == 1, name
        for k, (got, want) in enumerate(zip(run, expected)):  # (every output: prelu_backward's two)
            if isinstance(got, np.ndarray):
                assert got.tobytes() == want.tobytes(), (name, threads, k)


def _gnu_openmp():
    """The GNU OpenMP runtime (libgomp) and a pool of its threads, or a skip."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("gomp")
    if not name:
        pytest.skip("no GNU OpenMP runtime (libgomp) on this machine")
    lib = ctypes.CDLL(name)
    entries = [ctypes.cast(getattr(lib, n), ctypes.c_void_p).value for n in (
        "GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads", "omp_get_max_threads")]
    return lib, _threads.openmp_pool(*entries)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("threads", [2, 3, 5])
def test_each_part_gives_the_serial_bits_on_an_openmp_pool(dtype, threads):
    """The same parts in one parallel region of an OpenMP runtime (the route leakyops.torch
    takes to PyTorch's threads), more parts than its threads included (a thread runs every
    T-th part): the serial kernels' bits, one region a call."""
    lib, pool = _gnu_openmp()
    region = min(threads, lib.omp_get_max_threads()) > 1
    prev = _threads.run_on(pool)
    try:
        for name, fn, args, flags, _ in _calls(dtype, 64 * 1000 + 64 * 3):
            expected = _serial(fn, args, flags)
            run = _copies(args)
            before = pool.regions
            assert _core._run_team(fn, run, flags, 0, threads, pool.addr) == 1, name
            # (one region a call; channels-last prelu_backward's parts are its units, one here)
            one = region and name != "prelu_backward channels last"
            assert pool.regions - before == one, name
            for k, (got, want) in enumerate(zip(run, expected)):
                if isinstance(got, np.ndarray):
                    assert got.tobytes() == want.tobytes(), (name, threads, k)
    finally:
        _threads.restore_route(prev)
    if region:
        assert pool.threads_seen == min(threads, lib.omp_get_max_threads())


def _fake_team(workers):
    """Team words with ``workers`` rows marked free but no thread behind them."""
    words = np.zeros((_team.MAX_THREADS + 1) * _team.ROW, np.int64)
    words[_team.STATE::_team.ROW] = _team.STOP
    words[_team.WORKERS] = workers
    words[_team.SYSCALL] = _threads.team().syscall
    for w in range(1, workers + 1):
        words[w * _team.ROW + _team.STATE] = _team.IDLE
    return words


@pytest.mark.parametrize("dtype", [BF16, np.float32], ids=["bfloat16", "float32"])
def test_a_part_no_worker_takes_is_run_by_the_caller(dtype):
    """A worker that does not take its part (descheduled by the system; here: none behind the
    row) costs no wait: the caller takes the part back, runs it, and frees the row."""
    _, fn, args, flags, _ = _calls(dtype, 64 * 1000)[0]
    expected = _serial(fn, args, flags)[1]
    args = _copies(args)
    ep, part, _ = _core._TEAM_ENTRY.get((fn, args[0].dtype, flags)) or \
        _core._team_entry(fn, args, flags, 2)
    words = _fake_team(1)
    out = np.zeros_like(args[1])
    assert ep(args[0], out, *args[2:], words.ctypes.data, part, 0, 2) == 1
    assert out.tobytes() == expected.tobytes()
    assert words[_team.ROW + _team.STATE] == _team.IDLE  # (freed for the next call)
    assert words[_team.ROW + _team.DONE] == 0  # (no worker ran it)


def _wait_for(cond, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


@pytest.mark.skipif(leakyops.get_num_threads() < 2, reason="one thread allowed: no team")
def test_a_sleeping_worker_is_woken_and_a_large_call_waits_for_it():
    """After ``PATIENCE`` cycles without a job a worker sleeps; a small threaded call runs its
    part on the caller and wakes it, and later calls give it parts; a large one
    (``WAKE_WAIT_BYTES``) wakes it and gives it its part. (A worker that is not running in
    time loses its part to the caller: the calls are repeated until it has run one, so that
    a slow wake-up or a loaded machine only makes the test slower.)"""
    team = _threads.team()
    _threads.team_call(0)
    row = _team.ROW
    x = np.linspace(-1, 1, 50_000, dtype=np.float32)
    expected = np.where(x > 0, x, x * np.float32(0.5)).tobytes()
    assert _wait_for(lambda: team.words[row + _team.STATE] == _team.SLEEP)
    done = team.words[row + _team.DONE]

    deadline = time.monotonic() + 10
    while team.words[row + _team.DONE] == done:  # (calls back to back: woken by the first)
        assert leakyops.leaky_relu(x, 0.5).tobytes() == expected
        assert time.monotonic() < deadline, "a woken worker never ran a part"
    # (parts of 10 ms and more: on the VM this was written on a sleeping worker took 0.05-7 ms
    # to run again after its futex was woken)
    big = np.linspace(-1, 1, 32 << 20, dtype=np.float32)
    assert big.nbytes >= _threads.WAKE_WAIT_BYTES
    big_expected = np.where(big > 0, big, big * np.float32(0.5))
    for _ in range(5):
        assert _wait_for(lambda: team.words[row + _team.STATE] == _team.SLEEP)
        done = team.words[row + _team.DONE]
        assert np.array_equal(leakyops.leaky_relu(big, 0.5), big_expected)
        if team.words[row + _team.DONE] > done:
            break  # (the woken worker ran its part)
    else:
        pytest.fail("a large call never gave a sleeping worker its part")


@pytest.mark.skipif(leakyops.get_num_threads() < 2, reason="one thread allowed: no team")
def test_callers_in_several_threads_share_the_team():
    """Six Python threads calling threaded kernels at once: each call claims the free
    workers' rows or runs the parts itself; every result is right."""
    errors = []
    x = np.random.default_rng(3).standard_normal(300_001).astype(np.float32)
    expected = np.where(x > 0, x, x * np.float32(0.1))

    def work():
        try:
            for _ in range(200):
                assert leakyops.leaky_relu(x, 0.1).tobytes() == expected.tobytes()
        except BaseException as exc:  # noqa: BLE001 -- reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads) and not errors, errors


_CHILD = textwrap.dedent("""
    import os, sys, numpy as np, leakyops
    from leakyops import _threads
    x = np.linspace(-1, 1, 400_003, dtype=np.float32)
    expected = np.where(x > 0, x, x * np.float32(0.25)).tobytes()
    assert leakyops.leaky_relu(x, 0.25).tobytes() == expected
    parent = _threads._team.workers
    pid = os.fork()
    if pid == 0:
        ok = all(leakyops.leaky_relu(x, 0.25).tobytes() == expected for _ in range(20))
        os._exit(0 if ok and _threads._team.workers == parent else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
    print(parent)
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.skipif(leakyops.get_num_threads() < 2, reason="one thread allowed: no team")
def test_a_forked_child_starts_workers_of_its_own():
    """A child forked after team calls starts its own workers (the parent's threads stayed
    behind) and gets the same results; in a process of its own, so that no other test's numba
    pool makes the child single-threaded."""
    done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 1


@pytest.mark.parametrize("spinning", [True, False], ids=["spinning", "asleep"])
def test_a_process_exits_with_its_workers(spinning):
    """The interpreter exits at once, its workers spinning or asleep (stopped at exit, before
    their code is unloaded)."""
    code = textwrap.dedent(f"""
        import time, numpy as np, leakyops
        leakyops.set_num_threads(2)
        leakyops.leaky_relu(np.ones(400_000, np.float32), 0.5)
        if not {spinning}:
            time.sleep(0.05)
    """)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert time.monotonic() - start < 60


_RACE = textwrap.dedent("""
    import threading, numpy as np, leakyops
    from leakyops import _core, _threads
    x = np.linspace(-1, 1, 400_003, dtype=np.float32)
    expected = np.where(x > 0, x, x * np.float32(0.25)).tobytes()
    start, bad = threading.Barrier(8), []
    def first_call():
        start.wait()
        if leakyops.leaky_relu(x, 0.25).tobytes() != expected:
            bad.append(1)
    threads = [threading.Thread(target=first_call) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    addresses = {ent[2] for ent in _core._TEAM_ENTRY.values()}
    assert not bad and addresses == {_threads.team().addr}, (bad, addresses)
""")


@pytest.mark.skipif(leakyops.get_num_threads() < 2, reason="one thread allowed: no team")
def test_threads_making_their_first_calls_at_once_make_one_team():
    """Eight threads' first threaded calls at once, in a fresh process: one team, whose
    address every compiled entry point holds (a second team would leave them a freed array)."""
    done = subprocess.run([sys.executable, "-c", _RACE], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr


def _reuse_detecting_part(detect: np.ndarray, words: int):
    """A part function that allocates what a driver's block takes (``words`` int64 words, filled
    with the address of ``detect``), then writes the block's word 0 into the array at the
    address in word 3 (an operand of every driver). Where the block was freed before the
    parts ran, the allocation gets its memory back (the same size, the same thread) and the
    write lands in ``detect``."""
    from numba import carray, cfunc, types

    marker = detect.ctypes.data

    @cfunc(types.void(types.int64, types.int64))
    def part(blk, p):
        junk = np.full(words, marker, np.int64)
        b = carray(_team.address(blk), 8, np.int64)
        carray(_team.address(b[3]), 1, np.int64)[0] = b[0] + junk[0] - junk[-1]

    return part


@pytest.mark.parametrize("driver", ["rows", "prelu", "prelu_backward", "prelu_backward per_k"])
def test_a_call_keeps_its_block_until_its_parts_have_run(driver):
    """A team driver's argument block lives until every part has read it (numba frees an array
    after its last use; a block passed on as its address alone was freed before the parts ran,
    and a part's own allocation, or any other, could reuse its memory)."""
    detect = np.zeros(1, np.int64)
    part = _reuse_detecting_part(detect, {"rows": 8, "prelu": 10}.get(driver, 12))
    team = _fake_team(0).ctypes.data  # (no worker: the caller runs the part)
    x = np.zeros((4, 16, 8), np.float32)
    w = np.zeros(16, np.float32)
    out = np.zeros_like(x)
    if driver == "rows":  # (block: elements, parts, x, out, ...)
        _team.lrelu_fwd_row_team(x.reshape(-1), out.reshape(-1), 0.5, False, team,
                                 part.address, 0, 1)
        expected = x.size
    elif driver == "prelu":  # (elements of the axis split: the outer one, 4)
        _team.prelu_fwd_c_run_team(x, out, w, False, False, 1, team, part.address, 0, 1)
        expected = 4
    else:  # (block: channels or units, parts, g, x, ...: x written)
        per_k = driver.endswith("per_k")
        _team.prelu_bwd_c_run_team(np.zeros_like(x), out, np.zeros_like(x), w,
                                   np.zeros(16, np.float32), per_k, False, team, part.address,
                                   0, 1)
        expected = 1 if per_k else 16
    assert detect[0] == 0, "the block's memory was reused while its part ran"
    assert out.reshape(-1)[:2].view(np.int64)[0] == expected
