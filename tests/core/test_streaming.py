"""Streaming stores (``_vector.vstore_stream``): a contiguous row whose output is past the
caches (half the last-level cache, ``_cpu.stream_min_bytes``) is written with non-temporal
stores, its first and last elements outside whole aligned blocks by the portable loop, and an
in-place row of 32- or 64-bit floats that long with whole vectors (``vstore_whole``). The
bits are the regular loops' (a NaN's payload aside, where two NaN operands meet: which one a
product returns is the compiler's operand order, as docs/semantics.md says): a child process streams every row (``LEAKYOPS_STREAM_MIN_BYTES=1``,
its own compile, in cache files of its own) and must give this process's results, on special values,
every storage kind, rows of every length to 3 blocks and every misalignment of the output,
on one thread and on the team."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from leakyops import _cpu

#: The calls of the child and of this process: digests of every result.
_CALLS = textwrap.dedent("""
    import hashlib, json, sys
    import numpy as np
    import leakyops
    from leakyops import _core
    from refs import BF16

    def digest(a):
        # (every NaN as one pattern: which of two NaN operands a product returns is LLVM's
        # choice of operand order, not part of the promise: docs/semantics.md)
        a = np.where(np.isnan(a), np.array(np.nan, a.dtype), a)
        return hashlib.sha256(np.ascontiguousarray(a).view(np.uint8).tobytes()).hexdigest()[:16]

    def data(dtype, n, seed):
        rng = np.random.default_rng(seed)
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-40,
                            5e-324, 65504.0, -1e30, 3.0e38], np.float64)
        v = rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))
        v[rng.integers(0, n, n // 4)] = rng.choice(special, n // 4)
        with np.errstate(over="ignore", under="ignore"):
            return v.astype(dtype)

    out = {}
    kinds = {"float16": np.float16, "bfloat16": BF16, "float32": np.float32, "float64": np.float64}
    for name in sys.argv[1].split(","):
        dtype = kinds[name]
        item = np.dtype(dtype).itemsize
        w = 64 // item  # (the elements of one aligned block)
        for n in [1, w - 1, w, w + 1, 2 * w + 3, 3 * w + w // 2]:
            for shift in range(0, w, max(1, w // 4)):  # (the output's misalignment)
                x = data(dtype, n + shift + 1, n * 131 + shift)
                g = data(dtype, n + shift + 1, n * 137 + shift)
                buf = np.zeros(n + w + 1, dtype)
                o = buf[shift:shift + n]
                key = f"{name} {n} {shift}"
                for s in (0.01, -2.5, float("inf"), 0.0):
                    leakyops.leaky_relu(x[1:n + 1], s, out=o)
                    out[f"leaky_relu {key} {s}"] = digest(buf)
                    leakyops.leaky_relu_backward(g[:n], x[1:n + 1], s, out=o)
                    out[f"leaky_relu_backward {key} {s}"] = digest(buf)
                    o[:] = x[1:n + 1]
                    leakyops.leaky_relu_(o, s)  # (whole vectors past the threshold)
                    out[f"leaky_relu_ {key} {s}"] = digest(buf)
                _core.copy(x[1:n + 1], o)
                out[f"copy {key}"] = digest(buf)
                wt = data(dtype, 3, n)
                rows = x[:3 * (n // 3)].reshape(1, 3, -1)
                if rows.size:
                    out[f"prelu rows {key}"] = digest(leakyops.prelu(rows, wt))
        big = data(dtype, 1 << 18, 7)  # (threaded: on the team, each part streamed)
        gb = data(dtype, 1 << 18, 8)
        out[f"leaky_relu big {name}"] = digest(leakyops.leaky_relu(big, 0.2))
        inplace = big.copy()
        leakyops.leaky_relu_(inplace, 0.2)
        out[f"leaky_relu_ big {name}"] = digest(inplace)
        out[f"leaky_relu_backward big {name}"] = digest(leakyops.leaky_relu_backward(gb, big, 0.2))
        out[f"prelu big {name}"] = digest(leakyops.prelu(big.reshape(4, 64, -1),
                                                         data(dtype, 64, 9)))
    print(json.dumps(out))
""")

_ASM = textwrap.dedent("""
    import json
    import numpy as np
    import leakyops
    from leakyops import _kernels
    x = np.ones(1000, np.float32)
    leakyops.leaky_relu(x, 0.1, out=np.empty_like(x))
    asm = "".join(_kernels.lrelu_fwd_row.inspect_asm().values())
    print(json.dumps({"threshold": _kernels._jit.STREAM_MIN_BYTES,
                      "movnt": "movnt" in asm, "sfence": "sfence" in asm}))
""")

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code: str, env: dict, *args: str) -> dict:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [TESTS_DIR, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]), **env}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=environ, timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


_STREAM_ALL = {"LEAKYOPS_STREAM_MIN_BYTES": "1"}  # (the threshold names its own cache files)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the instructions looked for are x86's")
def test_a_row_past_the_threshold_is_written_with_streaming_stores():
    r = _run(_ASM, {**_STREAM_ALL, "LEAKYOPS_CACHE": "0"})  # (compiled here: its assembly)
    assert r == {"threshold": 1, "movnt": True, "sfence": True}, r


@pytest.mark.parametrize("kinds", [
    "float32,bfloat16",  # (a 4-byte kind and a 2-byte one: the child compiles them all cold)
    pytest.param("float16,float64", marks=pytest.mark.slow)])
def test_streamed_rows_give_the_regular_loops_bits(kinds):
    here = _run(_CALLS, {}, kinds)
    streamed = _run(_CALLS, _STREAM_ALL, kinds)
    assert here.keys() == streamed.keys()
    differ = [k for k in here if here[k] != streamed[k]]
    assert not differ, f"{len(differ)} of {len(here)} results differ, e.g. {differ[:5]}"


def test_the_threshold_is_half_the_last_level_cache_or_the_environments(monkeypatch):
    llc = _cpu.last_level_cache()
    monkeypatch.delenv("LEAKYOPS_STREAM_MIN_BYTES", raising=False)
    assert _cpu.stream_min_bytes() == (llc // 2 if llc else 1 << 62)
    monkeypatch.setenv("LEAKYOPS_STREAM_MIN_BYTES", "12345")
    assert _cpu.stream_min_bytes() == 12345
    if sys.platform == "linux" and os.path.isdir("/sys/devices/system/cpu/cpu0/cache"):
        assert llc >= 1 << 16  # (a last-level cache of 64 KiB at least was read)
    monkeypatch.setenv("LEAKYOPS_STREAM_MIN_BYTES", "-3")
    with pytest.warns(RuntimeWarning, match="LEAKYOPS_STREAM_MIN_BYTES='-3'"):
        assert _cpu.stream_min_bytes() == (llc // 2 if llc else 1 << 62)
