"""KeyboardInterrupt during a long core call leaves the process usable (run in a subprocess).

A kernel runs without the GIL and cannot be interrupted midway; Python handles the signal
at the next bytecode, which is either inside the library's wait for its pool threads
(``_threads.run``) or just after the call returns. Either way the process must go on giving
right results, with the pool threads of the interrupted call still finishing their chunks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from refs import free_memory_gib

N = 200_000_000  # 2e8 float16 elements: 400 MB in, 400 MB out

SCRIPT = """
import _thread, gc, json, os, signal, sys, threading, time
import numpy as np, leakyops
from refs import assert_same, random_values, ref_leaky_relu, ref_leaky_relu_backward, ref_prelu

# a job started in the background by a non-interactive shell inherits SIGINT ignored, and
# Python then installs no handler (interrupt_main does nothing, SIGINT is dropped): the test
# is about the library, so it installs Python's handler itself
signal.signal(signal.SIGINT, signal.default_int_handler)

# Python runs the signal's handler at the next bytecode, wherever it is: inside a weakref
# callback or a __del__ run by the garbage collector, the KeyboardInterrupt is printed and
# dropped ("Exception ignored in"). Seen in a WeakValueDictionary's callback (weakref.py:
# `remove`) in 1 of 6 whole-suite runs with two workers and 1 of 7 runs of this test beside a
# busy core (52 more such runs: none); leakyops has no weakrefs or finalizers of its own.
# Such a drop is delivered again, as an application would, and recorded with the callback's
# owner: the test fails if the owner is leakyops.
lost = []
def _redeliver(u):
    if u.exc_type is None or not issubclass(u.exc_type, KeyboardInterrupt):
        return sys.__unraisablehook__(u)
    o = u.object
    where = "%s.%s" % (getattr(o, "__module__", "?"), getattr(o, "__qualname__", type(o).__name__))
    try:  # a WeakValueDictionary's callback: the modules and classes that hold the dictionary
        d = o.__defaults__[0]()
        holders = [r for r in gc.get_referrers(d) if isinstance(r, dict)]
        where += " of " + ",".join(sorted({{str(h.get("__module__") or h.get("__name__")) for h in holders}}))
    except Exception:
        pass
    lost.append(where)
    # from another thread, a moment later: raised here, in the hook, it would be dropped again
    threading.Timer(0.001, _thread.interrupt_main).start()
sys.unraisablehook = _redeliver

N = {n}
rng = np.random.default_rng(0)
small = random_values(rng, (3, 5, 7), np.float16)
mid = random_values(rng, (2, 3, 400_000), np.float32)   # threaded path
w = np.array([0.5, -0.25, 2.0], np.float32)

def check():
    assert_same(leakyops.leaky_relu(small, 0.1), ref_leaky_relu(small, 0.1))
    assert_same(leakyops.leaky_relu(mid, 0.1), ref_leaky_relu(mid, 0.1))
    assert_same(leakyops.leaky_relu_backward(mid, mid, 0.3), ref_leaky_relu_backward(mid, mid, 0.3))
    assert_same(leakyops.prelu(mid, w), ref_prelu(mid, w.reshape(1, 3, 1)))
    gi, gw = leakyops.prelu_backward(mid, mid, w)
    assert gw.shape == (3,)

check()  # compile, run the pool once
big = np.full(N, -2.0, np.float16)
big[1::7] = 3.0
out = np.empty_like(big)
leakyops.leaky_relu(big[:1000], 0.5, out=out[:1000])
t = time.perf_counter()
leakyops.leaky_relu(big, 0.5, out=out)
call_s = time.perf_counter() - t
rounds = []
kinds = ["interrupt_main", "SIGINT"]
for i, delay in enumerate([0.0, 0.01, 0.03, 0.06, 0.1, 0.2, 0.3, 0.45]):
    kind = kinds[i % 2]
    fire = (lambda: _thread.interrupt_main()) if kind == "interrupt_main" else \\
        (lambda: os.kill(os.getpid(), signal.SIGINT))
    state = {{"returned": False}}
    timer = threading.Timer(delay, fire)
    try:
        start = time.perf_counter()
        timer.start()
        if i % 4 == 3:
            leakyops.prelu_backward(big.reshape(1, 1, N), big.reshape(1, 1, N), np.array([0.5], np.float16))
        else:
            leakyops.leaky_relu(big, 0.5, out=out)
        state["returned"] = True
        time.sleep(max(0.0, delay - (time.perf_counter() - start)) + 0.3)  # the signal lands in this try
        raised = False
    except KeyboardInterrupt:
        raised = True
    timer.join()
    check()  # the process is usable: right results on the serial and the threaded paths
    # a full-size call after the interrupt is right everywhere
    leakyops.leaky_relu(big, 0.5, out=out)
    ok_big = bool((out[1::7] == 3.0).all() and (out[0::7] == -1.0).all() and (out[2::7] == -1.0).all())
    rounds.append({{"kind": kind, "delay": delay, "raised": raised, "during_call": not state["returned"],
                   "big_ok": ok_big}})
print(json.dumps({{"call_s": call_s, "rounds": rounds, "lost": lost}}))
"""


@pytest.mark.skipif(not hasattr(os, "kill") or sys.platform == "win32", reason="POSIX signals")
@pytest.mark.skipif(free_memory_gib() < 3, reason="needs about 1.5 GiB of free memory")
def test_keyboard_interrupt_during_a_long_call_leaves_the_process_usable():
    tests_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=tests_dir + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT.format(n=N))], env=env,
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    rounds = report["rounds"]
    assert len(rounds) == 8
    # every interrupt was delivered (the message in full: stderr may say where one went), and
    # none was dropped inside leakyops (see _redeliver: a drop elsewhere is delivered again)
    assert all(rd["raised"] for rd in rounds), (json.dumps(rounds), r.stderr[-3000:])
    assert not any("leakyops" in where for where in report["lost"]), report["lost"]
    assert all(rd["big_ok"] for rd in rounds), rounds          # and later calls are right
    # at least one interrupt hit while a 2e8-element kernel call was running
    assert any(rd["during_call"] for rd in rounds), report
    print(report)
