"""The kernels' threads: serial ``nogil`` kernels run over chunks by the library's own pool.

Why not numba's ``parallel=True``: on Linux its threading layers each fail one of the ways
our users run (GNU OpenMP kills a child forked after the parent ran a parallel region, which
PyTorch DataLoader workers do; ``workqueue`` aborts when two Python threads run parallel
kernels at once; ``tbb`` is safe but its PyPI library is not found inside a virtual
environment without help). A pool of plain Python threads that call ``nogil`` kernels is
safe for concurrent callers (work is queued, kernels hold no shared state) and for ``fork``
(the child gets a fresh pool: threads do not survive ``fork``, so the pool is dropped in
the child and rebuilt on first use), and it matched ``prange``'s throughput here.

The calling thread runs the first chunk itself, so a call on ``n`` threads uses ``n - 1``
pool threads.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from ._config import DEFAULT_THREADS

__all__ = ["get_num_threads", "set_num_threads", "thread_limit", "run"]

_state = threading.local()
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_num_threads = DEFAULT_THREADS


def get_num_threads() -> int:
    """Threads the kernels use for large arrays in this thread (see :func:`set_num_threads`)."""
    return getattr(_state, "num_threads", None) or _num_threads


def set_num_threads(n: int, *, this_thread_only: bool = False) -> None:
    """Set how many threads the kernels use for large arrays (``n >= 1``).

    With ``this_thread_only=True`` the setting applies to calls made from the current thread
    only (Dask worker threads use this to run one kernel thread each).
    """
    global _num_threads
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads: n must be an int >= 1, got {n!r}")
    if this_thread_only:
        _state.num_threads = n
    else:
        _num_threads = n


@contextlib.contextmanager
def thread_limit(n: int):
    """Within the ``with`` block, kernels called from this thread use ``n`` threads.

    The thread's previous setting (or the absence of one) is restored on exit, so nested
    and concurrent uses are independent (Dask tasks use one kernel thread each this way).

    >>> import leakyops
    >>> with leakyops.thread_limit(1):
    ...     leakyops.get_num_threads()
    1
    """
    prev = getattr(_state, "num_threads", None)
    set_num_threads(n, this_thread_only=True)
    try:
        yield
    finally:
        if prev is None:
            del _state.num_threads
        else:
            _state.num_threads = prev


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < workers:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="leakyops")
            _pool_size = workers
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def _after_fork_in_child() -> None:
    global _pool, _pool_size, _lock
    _pool = None  # the parent's threads do not exist here
    _pool_size = 0
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def run(fn, tasks) -> None:
    """Call ``fn(*args)`` for every ``args`` in ``tasks``: the first here, the rest on the pool."""
    if len(tasks) == 1:
        fn(*tasks[0])
        return
    pool = _get_pool(len(tasks) - 1)
    futures = [pool.submit(fn, *args) for args in tasks[1:]]
    try:
        fn(*tasks[0])
    finally:
        for f in futures:
            f.result()
