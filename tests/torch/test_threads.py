"""leakyops.torch's threaded calls on PyTorch's own OpenMP threads (``_threads.OpenMPPool``):
each large call runs its parts in one parallel region of PyTorch's runtime, with the serial
kernels' bits; it follows ``torch.set_num_threads``; leakyops' own workers never start; a
forked child runs the calls on its one thread; ``LEAKYOPS_TORCH_THREADS=team`` sends them
back to leakyops' team. Each process-wide fact is checked in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

torch = pytest.importorskip("torch")

import leakyops.torch as lt  # noqa: E402
from leakyops import _threads  # noqa: E402

pytestmark = pytest.mark.skipif(
    lt._POOL is None, reason="PyTorch's threads are not an OpenMP runtime leakyops found here "
    f"(backend: {torch.__config__.parallel_info().splitlines()[-1:]}, platform {sys.platform})")

two_cpus = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one CPU: no parallel region")

#: Large calls of the five operators (each past the threads' threshold), their results
#: against PyTorch's bit for bit, and the pool's counts, as JSON on stdout.
_CALLS = textwrap.dedent("""
    import json, os, sys, torch
    import leakyops.torch as lt
    from leakyops import _threads

    def same(a, b):
        view = torch.int16 if a.element_size() == 2 else torch.int32
        return bool(torch.equal(a.view(view), b.view(view)))

    def calls():
        ok = []
        for dt in (torch.float32, torch.bfloat16):
            g = torch.Generator().manual_seed(0)
            x = torch.randn(8, 64, 1024, generator=g).to(dt)
            d = torch.randn(8, 64, 1024, generator=g).to(dt)
            w = torch.rand(64, generator=g).to(dt)
            F = torch.nn.functional
            ok.append(same(lt.leaky_relu(x, 0.1), F.leaky_relu(x, 0.1)))
            y, z = x.clone(), x.clone()
            lt.leaky_relu_(y, 0.1), F.leaky_relu_(z, 0.1)
            ok.append(same(y, z))
            ok.append(same(lt.leaky_relu_backward(d, x, 0.1),
                           torch.ops.aten.leaky_relu_backward(d, x, 0.1, False)))
            ok.append(same(lt.prelu(x, w), F.prelu(x, w)))
            xc = x.view(8, 64, 32, 32).contiguous(memory_format=torch.channels_last)
            ok.append(same(lt.prelu(xc, w), F.prelu(xc, w)))  # (the parts: rows of 64)
            gi, gw = lt.prelu_backward(d, x, w)
            ok.append(same(gi, torch.where(x > 0, d, d * w.view(1, -1, 1))))
        return ok

    pool = lt._POOL
    before = pool.regions
    ok = calls()
    team = _threads._team
    print(json.dumps({"ok": ok, "regions": pool.regions - before,
                      "threads_seen": pool.threads_seen,
                      "torch_threads": torch.get_num_threads(),
                      "workers": team.workers if team is not None else 0}))
""")


def _run(code: str, env: dict | None = None, timeout: int = 600) -> dict:
    environ = {**os.environ, **(env or {})}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environ, timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@two_cpus
def test_each_large_call_runs_in_one_parallel_region_of_pytorchs_threads():
    r = _run(_CALLS)
    assert all(r["ok"]), r
    assert r["regions"] == len(r["ok"]), r  # (one region a call: 6 calls x 2 dtypes)
    assert r["threads_seen"] == min(2, r["torch_threads"]) >= 2, r
    assert r["workers"] == 0, r  # (leakyops' own workers never started)


def test_the_calls_follow_torch_set_num_threads():
    r = _run("import torch; torch.set_num_threads(1)\n" + _CALLS)
    assert all(r["ok"]), r
    assert r["regions"] == 0 and r["workers"] == 0, r  # (one thread: every part here)


def test_leakyops_torch_threads_team_sends_the_calls_to_leakyops_team():
    r = _run("import leakyops.torch as lt\nassert lt._POOL is None\n"
             + _CALLS.replace("pool = lt._POOL\nbefore = pool.regions", "before = 0")
             .replace("pool.regions - before", "0").replace("pool.threads_seen", "0"),
             env={"LEAKYOPS_TORCH_THREADS": "team"})
    assert all(r["ok"]), r
    if (os.cpu_count() or 1) >= 2:
        assert r["workers"] >= 1, r  # (the calls ran on leakyops' own workers)


def test_an_unknown_leakyops_torch_threads_is_a_warning_naming_it():
    code = ("import warnings\nwarnings.simplefilter('error')\n"
            "try:\n    import leakyops.torch\nexcept RuntimeWarning as e:\n"
            "    import json; print(json.dumps({'warning': str(e)}))\n")
    r = _run(code, env={"LEAKYOPS_TORCH_THREADS": "gomp"})
    assert "LEAKYOPS_TORCH_THREADS='gomp'" in r["warning"], r


_FORK = textwrap.dedent("""
    import json, os, signal, sys, time, torch
    import leakyops.torch as lt
    from leakyops import _kernels
    x = torch.randn(1 << 21)
    assert torch.equal(lt.leaky_relu(x, 0.1), torch.nn.functional.leaky_relu(x, 0.1))
    assert lt._POOL.regions >= 1
    expected = torch.nn.functional.leaky_relu(x, 0.3).numpy()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: PyTorch's threads stayed in the parent (no torch operator here:
        # PyTorch's own would wait for them)
        y = lt.leaky_relu(x, 0.3)
        ok = bool((y.numpy() == expected).all())
        os.write(w, json.dumps({"ok": ok, "workers":
                 int(lt._POOL.words[_kernels.WORKERS])}).encode())
        os._exit(0)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0]:
            print(os.read(r, 4096).decode())
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        print(json.dumps({"hung": True}))
""")


@two_cpus
def test_a_forked_child_runs_the_calls_without_pytorchs_threads():
    """A child forked after the calls ran on PyTorch's threads runs them on its one thread (a
    parallel region there would wait for threads that stayed in the parent: PyTorch's own
    operators hang so)."""
    r = _run(_FORK)
    assert r == {"ok": True, "workers": 0}, r


@two_cpus
def test_callers_in_several_threads_at_once():
    """Python threads calling at once each get a parallel region of their own (OpenMP gives
    every thread that starts one its own team); every result is PyTorch's."""
    x = torch.randn(4, 64, 4096)
    w = torch.rand(64)
    expected = torch.nn.functional.prelu(x, w)
    before = lt._POOL.regions
    bad = []

    def work():
        for _ in range(10):
            if not torch.equal(lt.prelu(x, w), expected):
                bad.append(threading.get_ident())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
    assert lt._POOL.regions - before == 40
    assert _threads._state.pool == 0  # (this thread's route restored)
