"""The CPU: its features, read once. Nothing else in leakyops asks the CPU.

Features are LLVM's names (``"avx2"``, ``"avx512f"``, ``"avx512bf16"``, ``"f16c"``, ``"amx-tile"``,
…) as :func:`llvmlite.binding.get_host_cpu_features` reports them: what the processor offers
*and* the operating system has enabled (LLVM checks the XSAVE state, so AVX-512 registers that
the OS does not save count as absent).

>>> "sse2" in host_features() or not host_features()   # x86-64 has SSE2; other CPUs: their own
True
"""

from __future__ import annotations

import functools

__all__ = ["host_features"]


@functools.lru_cache(maxsize=None)
def host_features() -> frozenset[str]:
    """The features of the CPU this process runs on (LLVM names; empty if unknown)."""
    try:
        import llvmlite.binding as llvm

        found = llvm.get_host_cpu_features()
    except Exception:  # pragma: no cover - llvmlite cannot read this CPU
        return frozenset()
    return frozenset(name for name, on in found.items() if on)
