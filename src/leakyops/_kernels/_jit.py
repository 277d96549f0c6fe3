"""How kernels are compiled: numba's ``njit`` with the project's options, cached on disk.

numba's disk cache decides whether a cached kernel is fresh from the stamp (modification time
and size) of the one source file that defines it; but a loop in ``_loops.py`` inlines the
rules of ``_rules.py``, so an edited rule would leave stale loops behind. Every kernel of this
package is therefore stamped with all of its source files and with the settings that change
the code generated (the software float16 conversions), so that a change to any of them
recompiles them all. The settings also name the cache files (``_settings_tag``): a process
under other settings (a cap, another streaming threshold) keeps files of its own rather than
resetting the others'.

numba's disk cache is not safe for processes that compile at once (pytest-xdist's workers, a
pool, Dask's workers on a cold cache): each writer reads the index, takes the first free data
file number and writes both, so two writers can give two signatures the same data file, and
the index can name a file holding another signature's code. numba then loads that code for
the signature asked, and every later process fails to type the kernel's callers (seen: the
test suite's thread-count child, ``finish_lanes`` for float32 typed from a file holding its
int16 code). Each kernel's cache file therefore saves under an exclusive lock and loads under
a shared one (``fcntl.flock`` on one lock file per cache directory, where the OS has it), and a
loaded entry whose signature is not the one asked is a miss: the kernel is compiled and its
entry written again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pathlib
import warnings

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock, the signature check stays
    fcntl = None

from numba import njit, typeof, types

from .. import _cpu
from .._config import NJIT_OPTIONS, cache_enabled

__all__ = ["_jit", "entry_point", "SOFT_HALF", "AVX_BLEND", "BF16_CVT", "BF16_PAIRS",
           "MASKED_VECTORS", "STREAM_MIN_BYTES"]

#: Whether float16 is converted in software (no F16C on the CPU numba compiles for).
SOFT_HALF = _cpu.soft_half()
#: Whether vector selects are AVX blends (opaque to LLVM's masked-store folding).
AVX_BLEND = _cpu.avx_blend()
#: Whether float32 rounds to bfloat16 with AVX512-BF16's ``vcvtneps2bf16`` (explicit vectors).
BF16_CVT = _cpu.bf16_convert()
#: Whether the element-wise bfloat16 loops widen and round in pair order (AVX2, integer rounding).
BF16_PAIRS = _cpu.bf16_pairs()
#: Whether prelu's float32 rows take explicit vectors with a masked last vector (AVX-512F).
MASKED_VECTORS = _cpu.masked_vectors()
#: Output bytes from which a contiguous row is written with streaming stores.
STREAM_MIN_BYTES = _cpu.stream_min_bytes()

_HERE = pathlib.Path(__file__).resolve().parent


def _settings() -> tuple:
    """The code-generation settings a kernel's cache entry was compiled under."""
    return (("soft_half", SOFT_HALF), ("avx_blend", AVX_BLEND), ("bf16_cvt", BF16_CVT),
            ("bf16_pairs", BF16_PAIRS), ("masked_vectors", MASKED_VECTORS),
            ("stream_min_bytes", STREAM_MIN_BYTES))


@functools.cache
def _package_stamp() -> tuple:
    """The freshness of every kernel: each source file's name, mtime and size, and the
    code-generation settings (read once a process: every kernel's decorator asks, about 60
    times at import, 0.12 ms each)."""
    files = sorted([*_HERE.glob("*.py"), _HERE.parent / "_config.py"])
    stamp = []
    for path in files:
        st = os.stat(path)
        stamp.append((path.name, st.st_mtime, st.st_size))
    return (tuple(stamp), *_settings())


@functools.cache
def _settings_tag() -> str:
    """A short name for :func:`_settings`, part of every cache file's name: processes that
    compile under other settings (a cap, another streaming threshold) keep files of their own
    instead of each finding the other's index stale and writing it anew, so that neither
    recompiles every kernel after the other ran (seen: the test suite's capped children made
    every later test compile again, a test of 3 s taking 90)."""
    return hashlib.sha1(repr(_settings()).encode()).hexdigest()[:10]


class _PackageStampedLocator:
    """A numba cache locator that answers as the one it wraps, but with the package's stamp."""

    def __init__(self, inner, stamp):
        self._inner, self._stamp = inner, stamp

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def get_source_stamp(self):
        return self._stamp


@contextlib.contextmanager
def _cache_lock(directory: str, exclusive: bool):
    """An inter-process lock on ``directory``'s cache files (none where the OS has no flock,
    or the lock file cannot be opened or locked, e.g. a read-only directory or a file system
    without locks: numba's own behaviour)."""
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(os.path.join(directory, "leakyops-cache.lock"), os.O_RDWR | os.O_CREAT,
                         0o666)
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # (releases the lock)


def _signature_args(data):
    """The argument types of a cache entry's compile result (numba's reduced tuple holds its
    ``Signature``), or None where this numba's layout has none."""
    for item in data if isinstance(data, tuple) else ():
        if type(item).__name__ == "Signature" and hasattr(item, "args"):
            return tuple(item.args)
    return None


class _LockedCacheFile:
    """A numba cache file (index and data) whose saves and loads are under ``_cache_lock``,
    and whose loads return only an entry compiled for the key's signature."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def save(self, key, data):
        with _cache_lock(self._inner._cache_path, True):
            self._inner.save(key, data)

    def load(self, key):
        with _cache_lock(self._inner._cache_path, False):
            data = self._inner.load(key)
        if data is not None:
            want = getattr(key[0], "args", key[0])
            got = _signature_args(data)
            if got is not None and got != tuple(want):
                return None  # (another signature's code under this key: compile it again)
        return data


def _stamped(dispatcher):
    """``dispatcher`` with its cache stamped by the whole package, its saves and loads locked
    and checked (``_LockedCacheFile``); ``None`` where this numba keeps its cache elsewhere
    (the caller then compiles without a disk cache)."""
    stamp = _package_stamp()
    try:
        cache = dispatcher._cache
        cache._impl._locator = _PackageStampedLocator(cache._impl._locator, stamp)
        inner = type(cache._cache_file)(  # (numba's IndexDataCacheFile, its files renamed)
            cache_path=cache._cache_file._cache_path,
            filename_base=f"{cache._impl.filename_base}-{_settings_tag()}",
            source_stamp=stamp)  # (the index compares this one)
        cache._cache_file = _LockedCacheFile(inner)
    except AttributeError:  # pragma: no cover - another numba's cache layout
        return None
    return dispatcher


def _jit(fn=None, **extra):
    """``njit`` with the project's options, cached on disk when a cache directory works."""
    options = dict(NJIT_OPTIONS)
    options.update(extra)

    def wrap(f):
        if cache_enabled():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    cached = _stamped(njit(cache=True, **options)(f))
                if cached is not None:
                    return cached
            except Exception:  # no writable cache locator (read-only install and home)
                pass
        return njit(**options)(f)

    return wrap(fn) if fn is not None else wrap


def entry_point(kernel, *args):
    """The compiled function that ``kernel`` runs for arguments of the types of ``args``.

    Calling it directly skips numba's type dispatch (a large share of a small call's time;
    figures in docs/benchmarks.md); the caller must then pass arguments of exactly those types,
    because numba does not check them there (an array of another dtype would be read as this
    one). Python bools (the flags: the comparison, the weight's layout) are compiled as
    literals, so each value gets its own loop with the flag folded in (one compare less per
    vector); a :class:`~leakyops._kernels.Rule` is a literal by its type already.
    """
    sig = tuple(types.literal(a) if isinstance(a, bool) else typeof(a) for a in args)
    return kernel.compile(sig)
