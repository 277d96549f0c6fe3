"""The CPU, the caps and the paths: ``leakyops._cpu``, ``show_runtime``, ``--version --verbose``.

Each check of how numba's target is read runs in a child process, where ``NUMBA_CPU_NAME`` and
``NUMBA_CPU_FEATURES`` can be set before numba starts. The portable path (software float16
conversions) is forced in a child pytest that runs the float16 differential tests against
PyTorch, so both paths carry the same exactness tests on any CPU.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import leakyops
from leakyops import _cpu

_ROOT = pathlib.Path(__file__).resolve().parents[2]

_PROBE = ("import json, leakyops; from leakyops import _cpu; "
          "print(json.dumps({'soft': _cpu.soft_half(), 'paths': _cpu.kernel_paths()}))")


def _child(env_extra: dict, code: str = _PROBE) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "LEAKYOPS_MAX_CPU_ISA",
                        "LEAKYOPS_SOFT_HALF")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("env,soft", [
    ({}, "f16c" not in _cpu.host_features()),                            # the host
    ({"NUMBA_CPU_NAME": "generic"}, True),                              # numba: features ""
    ({"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ""}, False),   # its own defaults: F16C
    ({"NUMBA_CPU_NAME": "sandybridge", "NUMBA_CPU_FEATURES": ""}, True),
    ({"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": "-f16c"}, True),
    ({"NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": "+f16c"}, False),
    ({"LEAKYOPS_MAX_CPU_ISA": "portable"}, True),
    ({"LEAKYOPS_MAX_CPU_ISA": "PORTABLE", "LEAKYOPS_SOFT_HALF": "0"}, True),  # the cap wins
    ({"LEAKYOPS_SOFT_HALF": "1"}, True),
], ids=str)
def test_float16_path_follows_numbas_target_and_the_caps(env, soft):
    if not soft and "f16c" not in _cpu.host_features() and not env.get("NUMBA_CPU_NAME"):
        pytest.skip("this CPU has no F16C")
    r = _child(env)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["soft"] is soft
    word = "software float16" if soft else "F16C"
    assert all(word in info["paths"][op]["float16"] for op in info["paths"])


_BF16_PROBE = ("import json, leakyops; from leakyops import _cpu; "
               "print(json.dumps({'hw': _cpu.bf16_convert(), 'paths': _cpu.kernel_paths()}))")
_BF16_HOST = {"avx512f", "avx512vl", "avx512dq", "avx512bf16"} <= _cpu.host_features()


@pytest.mark.parametrize("env,hw", [
    ({}, _BF16_HOST),                                                   # the host
    ({"LEAKYOPS_MAX_CPU_ISA": "avx512bf16"}, True),
    ({"LEAKYOPS_MAX_CPU_ISA": "f16c"}, False),
    ({"LEAKYOPS_MAX_CPU_ISA": "portable"}, False),
    ({"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ""}, False),   # the AVX2 tier
    ({"NUMBA_CPU_FEATURES": "-avx512bf16"}, False),
], ids=str)
def test_bfloat16_path_follows_the_target_the_host_and_the_caps(env, hw):
    """The instruction where the target and the host both have AVX512-BF16 (with -VL, -DQ)
    and no cap is below it; the integer rounding elsewhere."""
    if hw and not _BF16_HOST:
        pytest.skip("this CPU has no AVX512-BF16 with -VL and -DQ")
    r = _child(env, _BF16_PROBE)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["hw"] is hw
    word = "vcvtneps2bf16" if hw else "bfloat16 by integer rounding"
    assert all(word in info["paths"][op]["bfloat16"] for op in info["paths"])


_MASKED_PROBE = ("import json, leakyops; from leakyops import _cpu; "
                 "print(json.dumps({'masked': _cpu.masked_vectors(), "
                 "'path': _cpu.kernel_paths()['prelu']['float32']}))")
_AVX512_HOST = "avx512f" in _cpu.host_features()


@pytest.mark.parametrize("env,masked", [
    ({}, _AVX512_HOST),                                                  # the host
    ({"LEAKYOPS_MAX_CPU_ISA": "f16c"}, False),
    ({"LEAKYOPS_MAX_CPU_ISA": "portable"}, False),
    ({"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ""}, False),   # the AVX2 tier
    ({"NUMBA_CPU_FEATURES": "-avx512f"}, False),
], ids=str)
def test_float32_prelu_rows_take_masked_vectors_where_the_target_has_avx512(env, masked):
    r = _child(env, _MASKED_PROBE)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["masked"] is masked
    assert ("masked (AVX-512)" in info["path"]) is masked


@pytest.mark.skipif(not _AVX512_HOST, reason="this CPU has no AVX-512F: the portable loop runs anyway")
def test_float32_prelu_rows_give_the_same_bits_without_the_masked_vectors():
    """The row-length test of test_spec.py with the masked vectors capped off (the portable
    loop), in a child process."""
    # (-n 0: the child pytest runs in its own process, without workers of its own)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                        str(_ROOT / "tests" / "core" / "test_spec.py"), "-k", "every_length"],
                       env={**os.environ, "LEAKYOPS_MAX_CPU_ISA": "f16c"}, cwd=_ROOT,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 passed" in r.stdout


@pytest.mark.parametrize("env,message", [
    ({"LEAKYOPS_MAX_CPU_ISA": "avx9000"}, "LEAKYOPS_MAX_CPU_ISA='avx9000': not one of portable, avx, f16c"),
    ({"LEAKYOPS_MAX_CPU_ISA": "f16c", "NUMBA_CPU_NAME": "sandybridge", "NUMBA_CPU_FEATURES": ""},
     "LEAKYOPS_MAX_CPU_ISA=f16c: the CPU the kernels are compiled for has no F16C"),
    ({"LEAKYOPS_MAX_CPU_ISA": "avx512bf16", "NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ""},
     "LEAKYOPS_MAX_CPU_ISA=avx512bf16: the CPU the kernels are compiled for has no AVX512BF16, "
     "AVX512DQ, AVX512F, AVX512VL"),
])
def test_a_cap_the_cpu_cannot_run_is_a_clear_error(env, message):
    r = _child(env, "import leakyops")
    assert r.returncode != 0 and message in r.stderr, r.stderr


def test_runtime_info_and_the_command_line():
    info = leakyops.runtime_info()
    assert set(info) >= {"cpu", "cpu_features", "target", "target_features", "caps", "threads",
                         "threading_layer", "paths"}
    assert info["threads"] == leakyops.get_num_threads()
    assert set(info["paths"]) == {"leaky_relu", "leaky_relu_", "leaky_relu_backward", "prelu",
                                  "prelu_backward"}
    assert all(set(p) == {"float16", "bfloat16", "float32", "float64"} for p in info["paths"].values())
    assert "16 float64 lanes" in info["paths"]["prelu_backward"]["float32"]
    r = subprocess.run([sys.executable, "-m", "leakyops", "--version", "--verbose"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"leakyops {leakyops.__version__}"
    assert any(line.startswith("cpu: ") and info["cpu"] in line for line in lines)
    assert any("LEAKYOPS_MAX_CPU_ISA=" in line for line in lines)
    assert sum(line.startswith("  prelu_backward ") for line in lines) == 4
    short = subprocess.run([sys.executable, "-m", "leakyops", "--version"], capture_output=True,
                           text=True, timeout=300)
    assert short.stdout.strip() == f"leakyops {leakyops.__version__}"


@pytest.mark.slow
def test_the_portable_path_passes_the_float16_tests_against_pytorch():
    """The fallback forced (``LEAKYOPS_MAX_CPU_ISA=portable``: software float16 conversions)
    runs the float16 differential tests against PyTorch, bit for bit, in a child pytest."""
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k != "LEAKYOPS_SOFT_HALF"}
    env["LEAKYOPS_MAX_CPU_ISA"] = "portable"
    # (-n 0: the child pytest runs in its own process, without workers of its own)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                        "-x", str(_ROOT / "tests" / "core" / "test_vs_torch.py"), "-k",
                        "f16 and (0.01 or -0.37 or inf or prelu or mixed)"],
                       cwd=_ROOT, env=env, capture_output=True, text=True, timeout=1800)
    tail = "\n".join(r.stdout.splitlines()[-15:])
    assert r.returncode == 0 and " passed" in tail, tail + r.stderr[-2000:]


_CALLS = {
    "leaky_relu": lambda x: leakyops.leaky_relu(x, 0.5),
    "leaky_relu_": lambda x: leakyops.leaky_relu_(x, 0.5),
    "leaky_relu_backward": lambda x: leakyops.leaky_relu_backward(x, x, 0.5),
    "prelu": lambda x: leakyops.prelu(x, x, axis=0),  # (channels last: a weight per element)
    "prelu_backward": lambda x: leakyops.prelu_backward(x, x, x, axis=0),
}


@pytest.mark.skipif(leakyops.get_num_threads() < 2, reason="one thread allowed: never threaded")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("op", list(_CALLS))
def test_each_path_starts_the_threads_where_its_description_says(monkeypatch, op, dtype):
    """``threads from N elements`` in the paths (``_cpu.thread_thresholds``) is where the core
    asks for the threads: a contiguous call of N - 1 elements runs on this thread, one of N
    asks leakyops' team for its threads (spied: the spy declines, and the serial kernel
    runs)."""
    from leakyops import _core, _threads
    from leakyops._cli_io import np_dtype

    n = _cpu.thread_thresholds()[op][dtype]
    assert f"threads from {n:,} elements" in _cpu.kernel_paths()[op][dtype]
    asked = []
    monkeypatch.setattr(_threads, "enter_parallel", lambda: asked.append(1) and False)
    monkeypatch.setattr(_threads, "team_call", lambda own: asked.append(1) or (1, own))
    assert _core._threads is _threads
    for size, threaded in ((n - 1, False), (n, True)):
        asked.clear()
        _CALLS[op](np.full(size, -1.0, np_dtype(dtype)))
        assert bool(asked) is threaded, (op, dtype, size)
