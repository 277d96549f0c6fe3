"""The oracle tests again, with the real library capped below this CPU's instruction set.

oneDNN 3.2 reads ``ONEDNN_MAX_CPU_ISA`` once per process, so each cap runs
``test_oracle.py`` and ``test_oracle_graph.py`` in a child pytest: the library then dispatches
the kernels of the capped CPU (the AVX2, AVX and SSE4.1 jit variants, no half-type kernels
below AVX512_CORE, no bf16 flush below AVX512_CORE_BF16), and the model follows through
``Engine(isa=...)`` of the instruction set the library reports. A departure on an AVX2-only
CPU is so caught wherever the suite runs: the AVX2 cap runs by default, the others are slow.
A cap at or above this CPU's own instruction set changes nothing and is skipped.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from leakyops.onednn import _ops

_HERE = pathlib.Path(__file__).parent
_ROOT = _HERE.parent.parent

CAPS = [
    pytest.param("AVX512_CORE_BF16", marks=pytest.mark.slow),
    pytest.param("AVX512_CORE", marks=pytest.mark.slow),
    "AVX2",
    pytest.param("AVX", marks=pytest.mark.slow),
    pytest.param("SSE41", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("cap", CAPS)
def test_oracle_suite_under_cap(oracle, cap):
    native = oracle.effective_isa()
    below = _ops._ISA_BITS[cap.lower()] < _ops._ISA_BITS[native]
    if not below:
        pytest.skip(f"this CPU's oneDNN runs {native.upper()}: capping at {cap} changes nothing "
                    "(the native run covers it)")
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA=cap)
    env.pop("LEAKYOPS_ONEDNN_ISA", None)
    # (-n 0: the child pytest runs in its own process, without workers of its own)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-x",
         str(_HERE / "test_oracle.py"), str(_HERE / "test_oracle_graph.py"),
         "-k", "not follows_the_librarys_cap"],
        cwd=_ROOT, env=env, capture_output=True, text=True, timeout=1800)
    tail = "\n".join(proc.stdout.splitlines()[-40:])
    assert proc.returncode == 0, f"under ONEDNN_MAX_CPU_ISA={cap}:\n{tail}\n{proc.stderr[-2000:]}"
    assert " passed" in tail
