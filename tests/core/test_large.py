"""Huge arrays (64-bit indexing) and memory: peak RSS and leaks, measured in subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from refs import free_memory_gib

import leakyops

BEYOND_INT32 = 2 ** 31 + 4099


@pytest.mark.slow
@pytest.mark.skipif(free_memory_gib() < 10, reason="needs about 8.5 GiB of free memory")
def test_more_than_2_31_elements_in_one_kernel_call():
    n = BEYOND_INT32
    x = np.empty(n, np.float16)
    x.fill(np.float16(-2.0))
    marks = [0, 2 ** 31 - 2, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, n - 1]
    vals = np.array([-4.0, 8.0, -16.0, -0.0, 3.0, -6.0], np.float16)
    x[marks] = vals
    before = leakyops.get_num_threads()
    try:
        leakyops.set_num_threads(1)  # one call covers the whole index range
        leakyops.leaky_relu_(x, 0.5)
        assert np.array_equal(x[marks].view(np.uint16),
                              np.array([-2.0, 8.0, -8.0, -0.0, 3.0, -3.0], np.float16).view(np.uint16))
        assert (x[1:1000] == np.float16(-1.0)).all() and (x[-1000:-1] == np.float16(-1.0)).all()
        assert (x[2 ** 31 + 2:2 ** 31 + 1000] == np.float16(-1.0)).all()
        # the 3-D driver (a strided view) and the threaded split, on the same data
        leakyops.set_num_threads(2)
        y = leakyops.prelu(x.reshape(1, n), np.array([2.0], np.float16))
        assert np.array_equal(y[0, marks].view(np.uint16),
                              np.array([-4.0, 8.0, -16.0, -0.0, 3.0, -6.0], np.float16).view(np.uint16))
        del y
        g = np.broadcast_to(np.float16(1.0), (n,))  # zero-stride gradient
        dx = leakyops.leaky_relu_backward(g, x, 0.25)
        assert np.array_equal(dx[marks], np.array([0.25, 1, 0.25, 0.25, 1, 0.25], np.float16))
    finally:
        leakyops.set_num_threads(before)


PEAK = """
import json, numpy as np, leakyops
def rss_mib():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20
def peak_mib():  # VmHWM: this process's peak resident set (ru_maxrss survives exec)
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
op = {op!r}
n = {n}
small = np.ones((2, 4, 8), np.float32)
w = np.full(4, 0.25, np.float32)
leakyops.leaky_relu(small); leakyops.leaky_relu_backward(small, small, 0.1)
leakyops.prelu(small, w); leakyops.prelu_backward(small, small, w)
x = np.random.default_rng(0).standard_normal((4, 4, n // 16), dtype=np.float32)
g = np.random.default_rng(1).standard_normal((4, 4, n // 16), dtype=np.float32)
w = np.full(4, 0.25, np.float32)
# compile (or load) the kernels the measured call runs first: a contiguous view of 2**20
# elements takes the same contiguous threaded path (a sliced view took the general path, so
# the measured call could still compile, and LLVM's memory counted as the call's)
xs, gs = (a.reshape(-1)[:1 << 20].reshape(4, 4, -1) for a in (x, g))
if op == "prelu" or op == "prelu_backward":
    getattr(leakyops, op)(*((xs, w) if op == "prelu" else (gs, xs, w)))
else:
    getattr(leakyops, op)(*((xs, 0.1) if op == "leaky_relu" else (gs, xs, 0.1)))
base = peak_mib()
if op == "leaky_relu":
    r = leakyops.leaky_relu(x, 0.1)
elif op == "leaky_relu_backward":
    r = leakyops.leaky_relu_backward(g, x, 0.1)
elif op == "prelu":
    r = leakyops.prelu(x, w)
else:
    r = leakyops.prelu_backward(g, x, w)
peak = peak_mib()
print(json.dumps({{"base": base, "peak": peak, "rss": rss_mib()}}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("op", ["leaky_relu", "leaky_relu_backward", "prelu", "prelu_backward"])
def test_peak_memory_is_outputs_plus_a_small_constant(op):
    n = 2 ** 26  # 256 MiB per float32 array
    code = textwrap.dedent(PEAK.format(op=op, n=n))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    out_mib = n * 4 / 2 ** 20  # every operator here writes one array of x's size
    extra = m["peak"] - m["base"]
    # inputs are already resident at `base`; the call may add its output and a small constant
    assert extra <= out_mib + 32, (op, m)
    assert extra >= out_mib * 0.9, (op, m)  # the measurement sees the output at all


LEAK = """
import numpy as np, leakyops
def rss_kib():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4
x = np.random.default_rng(0).standard_normal((3, 4, 50)).astype(np.float32)
w = np.full(4, 0.25, np.float32)
o = np.empty_like(x)
def calls(k):
    for _ in range(k):
        leakyops.leaky_relu(x, 0.1); leakyops.leaky_relu(x, 0.1, out=o); leakyops.leaky_relu_(o, 0.1)
        leakyops.leaky_relu_backward(x, x, 0.1); leakyops.prelu(x, w); leakyops.prelu_backward(x, x, w)
        leakyops.leaky_relu(x[:, ::-1], 0.1, out=o[::-1])
        try:
            leakyops.leaky_relu(x, "bad")
        except TypeError:
            pass
calls(1000)
first = rss_kib()
calls(10000)
print(rss_kib() - first)
"""


@pytest.mark.slow
def test_no_leak_over_ten_thousand_calls():
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(LEAK)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    growth_kib = int(r.stdout.strip())
    assert growth_kib < 2048, growth_kib
