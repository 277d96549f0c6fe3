"""Numba options and run-time settings, in one place, overridable from the environment.

``LEAKYOPS_NUM_THREADS``
    Threads the kernels of this process use for large arrays (default: ``os.cpu_count()``).
``LEAKYOPS_PARALLEL_MIN_BYTES``
    Bytes of output from which a call is split across threads (default 131072).
``LEAKYOPS_CACHE``
    ``0`` turns the on-disk kernel cache off (default on; it is also off by itself when no
    writable cache directory exists, see :func:`cache_enabled`).
``LEAKYOPS_SOFT_HALF``
    ``1`` forces the software float16 conversions (default: used only when the CPU numba
    targets has no F16C, because LLVM's ``half`` conversions then call compiler-runtime
    helpers that numba's JIT does not resolve).
``LEAKYOPS_STREAM_MIN_BYTES``
    Bytes of output from which a contiguous row (a thread's part of a call) is written with
    streaming stores, past the caches (default: half the last-level cache; never where its
    size is unknown).
``LEAKYOPS_TORCH_HUGE_PAGES``
    ``0``: ``leakyops.torch`` does not advise its fresh outputs of 32 MiB or more to transparent
    huge pages (default: it does, on Linux where they are enabled, as NumPy does its arrays of
    4 MiB or more).
``LEAKYOPS_TORCH_THREADS``
    Where ``leakyops.torch``'s threaded calls run: ``openmp`` (default), on PyTorch's own
    OpenMP threads where PyTorch runs its operators on OpenMP (else as ``team``); ``team``, on
    leakyops' own threads, as the NumPy API's calls do.

A value that cannot be used (``LEAKYOPS_NUM_THREADS=abc``, ``0``) is not ignored silently: in
the ``leakyops`` command it is one line on stderr, ``leakyops: warning: LEAKYOPS_NUM_THREADS='abc'
is not a positive integer; using 2``, as the command's other messages; in a program that
imports leakyops it is a ``RuntimeWarning``, so that the program can filter it or make it an
error (``-W error::RuntimeWarning``) as it does Python's other warnings (:func:`warn_setting`).
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["NJIT_OPTIONS", "REDUCE_FASTMATH", "PARALLEL_MIN_BYTES", "cache_enabled", "use_soft_half",
           "torch_threads", "warn_setting"]


def _in_the_command() -> bool:
    """Whether this process is the ``leakyops`` command (``leakyops/__init__`` tells, before it
    imports this module)."""
    started = getattr(sys.modules.get("leakyops"), "_started_as_the_command", None)
    return bool(started is not None and started())


def warn_setting(message: str, *, one_line: bool | None = None) -> None:
    """Say that a setting from the environment is not used as given (see the module's docstring).

    ``one_line``: the command's form, ``leakyops: warning: MESSAGE`` on stderr (default: in the
    ``leakyops`` command only); else a ``RuntimeWarning``.
    """
    if one_line is None:
        one_line = _in_the_command()
    if not one_line:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
        return
    try:
        sys.stderr.write(f"leakyops: warning: {message}\n")
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):  # no stderr, or a closed one
        pass


def _env_int(name: str, default: int) -> int:
    """A positive integer from the environment; unset or empty gives ``default``, anything else
    that is not an integer >= 1 gives it too, with a warning naming the variable
    (:func:`warn_setting`)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        warn_setting(f"{name}={raw!r} is not a positive integer; using {default}")
        return default
    return value


#: Options of every compiled kernel. No fastmath by default: NaN and inf must pass through.
NJIT_OPTIONS = {"nogil": True, "error_model": "numpy", "boundscheck": False}

#: Fastmath flags of the reduction loops only: ``reassoc`` lets LLVM vectorise a sum. It does
#: not assume finite values, so NaN and inf still propagate.
REDUCE_FASTMATH = {"reassoc"}

#: Bytes of output from which a call runs on several threads (numba's OpenMP team; see
#: docs/benchmarks.md for the measurements behind the default).
PARALLEL_MIN_BYTES = _env_int("LEAKYOPS_PARALLEL_MIN_BYTES", 1 << 17)

#: Default thread count of the kernels.
DEFAULT_THREADS = _env_int("LEAKYOPS_NUM_THREADS", os.cpu_count() or 1)


def torch_threads() -> str:
    """``LEAKYOPS_TORCH_THREADS``: ``"openmp"`` (the default) or ``"team"`` (see the module's
    docstring); another value is the default, with a warning naming it (:func:`warn_setting`)."""
    raw = os.environ.get("LEAKYOPS_TORCH_THREADS", "").strip()
    if raw.lower() in ("", "openmp", "team"):
        return raw.lower() or "openmp"
    warn_setting(f"LEAKYOPS_TORCH_THREADS={raw!r} is neither 'openmp' nor 'team'; using 'openmp'")
    return "openmp"


def cache_enabled() -> bool:
    """Whether kernels are cached on disk: on, unless ``LEAKYOPS_CACHE=0``."""
    return os.environ.get("LEAKYOPS_CACHE", "1") != "0"


def use_soft_half() -> bool:
    """Whether float16 conversions use the exact software path instead of LLVM's ``half``
    (decided in :func:`leakyops._cpu.soft_half`, with the CPU's features and the caps)."""
    from . import _cpu

    return _cpu.soft_half()
