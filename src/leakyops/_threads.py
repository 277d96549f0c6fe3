"""The kernels' threads: how many a call may use, leakyops' own team, and numba's threading
layer underneath the rest.

The contiguous paths of the five operators (and the benchmark's copy) run on :class:`Team`,
leakyops' own worker threads: a call posts a part to each spinning worker through shared
words and runs part 0 itself, about 0.3 µs over the serial call where numba's region costs
1.2-1.3 µs (``_kernels/_team.py``; figures in docs/benchmarks.md). Any Python thread may call
at once (each claims the free workers); a forked child starts workers of its own (one thread
there, as for every kernel, where numba's OpenMP region ran in the parent: see below).

The other large calls (the general paths: strided, broadcast, mixed dtypes, oneDNN's rules)
run numba ``parallel=True`` drivers (``prange`` over chunks, each chunk a serial, vectorised
loop). The threading layer is chosen for the lowest fan-out cost: GNU OpenMP (``omp``) hands
two chunks to its team in a few microseconds, many times faster than a pool of Python
threads (waking a thread and passing the GIL) and faster than ``tbb`` below a million
elements (figures in docs/benchmarks.md). numba picks the layer once per process, at the first
parallel call; leakyops asks for ``omp`` first unless the user chose a layer themselves
(``NUMBA_THREADING_LAYER`` or ``NUMBA_THREADING_LAYER_PRIORITY``).

Where each layer falls short, and what leakyops does about it:

- GNU OpenMP cannot run a parallel region in a child forked after the parent ran one (numba
  aborts the child). A child forked after the kernels ran threaded therefore runs them on
  one thread (as PyTorch does in forked DataLoader workers); a child of a parent that never
  ran them threaded may use threads.
- ``workqueue`` (numba's fallback when neither OpenMP nor TBB loads) aborts when two threads
  enter parallel code at once: a lock lets one call at a time run threaded there; the
  others run on one thread.

Thread counts: :func:`set_num_threads` for the process, or for the calling thread only
(``this_thread_only=True``, :func:`thread_limit`), as Dask's worker threads use one each.
"""

from __future__ import annotations

import atexit
import contextlib
import numbers
import os
import sys
import threading

import numpy as np

from ._config import DEFAULT_THREADS

__all__ = ["get_num_threads", "set_num_threads", "thread_limit", "parallel_threads",
           "enter_parallel", "exit_parallel", "layer_name", "team_call", "Team", "OpenMPPool",
           "openmp_pool", "run_on", "restore_route"]

class _PerThread(threading.local):
    """This thread's settings; the class attributes are the defaults (a missing attribute of a
    plain ``threading.local`` read with ``getattr(..., None)`` raises and catches inside, 0.3 µs
    of every threaded call)."""

    num_threads: int | None = None  # set by set_num_threads(this_thread_only=True)
    team: int | None = None  # the size numba's team was last given on this thread
    pool: int = 0  # the words of the OpenMP pool this thread's calls run on (0: the team's)


_state = _PerThread()
_num_threads = DEFAULT_THREADS
_layer: str | None = None  # numba's threading layer, once it is running
_max_threads = 1  # the threads numba's pool has
_forked_after_threads = False  # this process is a child forked after threaded kernels ran
_gate = threading.Lock()  # for the workqueue layer only


def _requested() -> int:
    return _state.num_threads or _num_threads


def _pool_size() -> int:
    """The threads numba's pool has, or will have when it starts (``NUMBA_NUM_THREADS``)."""
    if _layer is not None:
        return _max_threads
    from numba.core import config

    return config.NUMBA_NUM_THREADS


def get_num_threads() -> int:
    """Threads a large call from this thread runs on: the count set (:func:`set_num_threads`),
    capped at the threads numba's pool has (the machine's processors unless
    ``NUMBA_NUM_THREADS`` says otherwise); 1 in a child forked after threaded kernels ran.

    >>> import leakyops
    >>> 1 <= leakyops.get_num_threads() <= (__import__("os").cpu_count() or 1)
    True
    """
    if _forked_after_threads:
        return 1
    return max(1, min(_requested(), _pool_size()))


def set_num_threads(n: int, *, this_thread_only: bool = False) -> None:
    """Set how many threads the kernels use for large arrays (an integer ``n >= 1``, Python's
    or NumPy's).

    With ``this_thread_only=True`` the setting applies to calls made from the current thread
    only (Dask worker threads use this to run one kernel thread each). Counts beyond the
    machine's processors are capped at the processors numba's pool has:
    :func:`get_num_threads` tells the count that runs.
    """
    global _num_threads
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise TypeError(f"set_num_threads: n must be an integer, got {type(n).__name__} {n!r}")
    if n < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n!r}")
    if this_thread_only:
        _state.num_threads = int(n)
    else:
        _num_threads = int(n)


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
    prev = _state.num_threads
    set_num_threads(n, this_thread_only=True)
    try:
        yield
    finally:
        _state.num_threads = prev


def _start_numba_threads() -> None:
    """Start numba's pool (once), preferring OpenMP unless the user chose a layer."""
    global _layer, _max_threads
    import numba
    from numba.core import config
    from numba.np.ufunc import parallel

    if not (os.environ.get("NUMBA_THREADING_LAYER") or os.environ.get("NUMBA_THREADING_LAYER_PRIORITY")) \
            and config.THREADING_LAYER == "default" and not parallel._is_initialized:
        config.THREADING_LAYER_PRIORITY = ["omp", "tbb", "workqueue"]
    parallel._launch_threads()
    _layer = numba.threading_layer()
    _max_threads = config.NUMBA_NUM_THREADS


def layer_name() -> str:
    """The threads underneath: leakyops' team for the operators' contiguous paths, numba's
    threading layer for the general paths (once started, else what will be asked for first)."""
    numba_layer = _layer if _layer is not None else "not started (omp preferred)"
    return f"leakyops team (contiguous paths); numba {numba_layer} (general paths)"


def parallel_threads() -> int:
    """How many threads a large call made now from this thread may use (1: run serially).

    Also sizes numba's team for this thread to that count (numba's setting is per thread),
    so that a threaded driver's ``prange`` over that many chunks wakes no idle thread.
    """
    state = _state  # (written out: a threaded call's Python, 170 -> 100 ns)
    n = state.num_threads or _num_threads
    if n == 1 or _forked_after_threads:
        return 1
    if _layer is None:
        _start_numba_threads()
    if n > _max_threads:
        n = _max_threads
    if state.team != n:
        import numba

        numba.set_num_threads(n)
        state.team = n
    return n


def enter_parallel() -> bool:
    """Whether a threaded kernel may run now; pair a True with :func:`exit_parallel`.

    Always true, except on numba's ``workqueue`` layer while another thread's call runs.
    """
    return _layer != "workqueue" or _gate.acquire(blocking=False)


def exit_parallel() -> None:
    if _layer == "workqueue":
        _gate.release()


#: Cycles of the CPU's counter a worker of the team spins without a job before it sleeps
#: (about 100 µs at 3 GHz; a call then wakes it, and runs its part itself unless it is large).
PATIENCE = 300_000
#: Output bytes from which a call gives a sleeping worker its part as it wakes it (the
#: caller takes the part back if the worker has not taken it when the caller's own is done:
#: a wake-up took 0.05-7 ms on the VM this was measured on); below, the caller runs it.
WAKE_WAIT_BYTES = 1 << 20


def _libc_syscall() -> int:
    """The address of libc's ``syscall`` (0 where there is none: no team then)."""
    import ctypes

    try:
        return ctypes.cast(ctypes.CDLL(None).syscall, ctypes.c_void_p).value or 0
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return 0


class Team:
    """leakyops' own worker threads for the contiguous paths' threaded calls (the protocol is
    in ``_kernels/_team.py``). ``addr`` is the address of the shared words, ``workers`` the
    threads started (worker ``w`` runs part ``w`` of a call; the caller runs part 0), ``syscall``
    libc's ``syscall`` (a sleeping worker waits on a futex, without the GIL).

    The workers start at the first threaded call that needs them, as daemon threads that
    never take the GIL again. A child process forked from this one starts workers of its own
    (``reset_in_child``); at exit the workers are stopped before the interpreter unloads
    their code."""

    def __init__(self) -> None:
        from . import _kernels as k

        self._k = k
        words = np.zeros((k.MAX_THREADS + 1) * k.ROW + 8, np.int64)
        skip = (-words.ctypes.data % 64) // 8  # (rows on cache lines of their own)
        self.words = words[skip:skip + (k.MAX_THREADS + 1) * k.ROW]
        self.words[k.STATE::k.ROW] = k.STOP  # (no worker yet: its part runs on the caller)
        self.addr = self.words.ctypes.data
        self.syscall = self.words[k.SYSCALL] = _libc_syscall() if k.SYS_FUTEX else 0
        self.workers = self.words[k.WORKERS] = 0  # (after the STOP above, which hit row 0 too)
        self.cap = max(1, min(_pool_size(), k.MAX_THREADS))
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self, n: int) -> None:
        """Start workers until there are ``n`` (at most ``MAX_THREADS - 1``)."""
        k = self._k
        with self._lock:
            from numba import types

            k.worker_loop.compile((types.int64,) * 4)
            while self.workers < min(n, k.MAX_THREADS - 1):
                w = self.workers + 1
                self.words[w * k.ROW + k.STATE] = k.IDLE
                t = threading.Thread(target=k.worker_loop, args=(self.addr, w, PATIENCE,
                                                                  self.syscall),
                                     daemon=True, name=f"leakyops-team-{w}")
                self._threads.append(t)
                t.start()
                self.workers = self.words[k.WORKERS] = w

    def reset_in_child(self) -> None:
        """In a forked child: no worker runs (their threads stayed in the parent); the same
        words, at the same address (compiled entry points hold it), start new ones when
        needed."""
        k = self._k
        self.words[k.STATE::k.ROW] = k.STOP
        self.workers = self.words[k.WORKERS] = 0  # (after the line above: row 0's first word)
        self._threads = []
        self._lock = threading.Lock()

    def stop(self) -> None:
        """Stop every worker (at exit), spinning or asleep; wait for them a moment."""
        k = self._k
        for w in range(1, self.workers + 1):
            for _ in range(1_000_000):  # (a row a caller holds is freed within its part)
                if k.set_state(self.addr, w, k.IDLE, k.STOP, self.syscall) or \
                        k.set_state(self.addr, w, k.SLEEP, k.STOP, self.syscall):
                    break
        for t in self._threads:
            t.join(1.0)


_team: Team | None = None
_team_lock = threading.Lock()


def team() -> Team:
    """This process's team (created at its first use, once: compiled entry points keep its
    address, so a second one made by a racing thread would leave them a freed array)."""
    global _team
    if _team is None:
        with _team_lock:
            if _team is None:
                t = Team()
                atexit.register(t.stop)
                _team = t
    return _team


def team_call(own: int, pool: int = 0) -> tuple[int, int]:
    """``(threads, words)`` for a large call made now from this thread on the team: how many
    threads it runs on (1: serially), its workers started where they are missing (the count
    :func:`get_num_threads` tells, without starting numba's pool), and the words it posts its
    parts to: ``pool`` (an :class:`OpenMPPool`'s address) or the OpenMP pool it was routed to
    (:func:`run_on`; no worker starts then: the pool's runtime gives the threads, at most
    ``omp_get_max_threads()`` of them), else ``own``, the team's (compiled entry points keep
    it). One call, for the threaded calls' Python (the two answers as two functions cost
    0.05 µs more a call)."""
    n = _state.num_threads or _num_threads
    if n == 1 or _forked_after_threads:
        return 1, own
    t = _team or team()
    if not t.syscall:  # pragma: no cover - no futex: no team
        return 1, own
    if n > t.cap:
        n = t.cap
    pool = pool or _state.pool
    if n - 1 > t.workers and not pool:
        t.start(n - 1)
    return n, pool or own


class OpenMPPool:
    """An OpenMP runtime's threads as the team of the calls routed to it (:func:`run_on`): each
    threaded call runs its parts in one parallel region of that runtime (``GOMP_parallel``),
    on the same threads as the program's other OpenMP work. In a torch program these are
    PyTorch's own intra-op threads, which spin for a while after each of PyTorch's operators:
    leakyops' workers would contend with them for the CPUs (``leakyops.torch`` routes its
    calls here). ``regions`` counts the parallel regions started, ``threads_seen`` the threads
    the last one had. A forked child runs every part on its caller (an OpenMP runtime's
    threads stay in the parent: a region in the child would wait for them forever)."""

    def __init__(self, gomp_parallel: int, thread_num: int, num_threads: int,
                 max_threads: int) -> None:
        from . import _kernels as k

        self._k = k
        words = np.zeros(2 * k.ROW, np.int64)
        skip = (-words.ctypes.data % 64) // 8
        self.words = words[skip:skip + k.ROW]
        self.addr = self.words.ctypes.data
        self.words[k.GOMP_PARALLEL], self.words[k.OMP_THREAD_NUM] = gomp_parallel, thread_num
        self.words[k.OMP_NUM_THREADS], self.words[k.OMP_MAX_THREADS] = num_threads, max_threads
        self.words[k.OMP_RUNNER] = k.runner_address()
        self.words[k.WORKERS] = k.OPENMP

    @property
    def regions(self) -> int:
        return int(self.words[self._k.OMP_REGIONS])

    @property
    def threads_seen(self) -> int:
        return int(self.words[self._k.OMP_THREADS_SEEN])

    def reset_in_child(self) -> None:
        """In a forked child: no worker, every part on the caller."""
        self.words[self._k.WORKERS] = 0


_pools: dict[tuple, OpenMPPool] = {}


def openmp_pool(gomp_parallel: int, thread_num: int, num_threads: int,
                max_threads: int) -> OpenMPPool:
    """The pool of the OpenMP runtime with these entry points (one per runtime and process)."""
    key = (gomp_parallel, thread_num, num_threads, max_threads)
    with _team_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = OpenMPPool(*key)
    return pool


def run_on(pool: OpenMPPool | None) -> int:
    """Route this thread's threaded calls to ``pool`` (None: to leakyops' team) until the next
    call of this function; returns the previous route, for the caller to restore."""
    prev = _state.pool
    _state.pool = pool.addr if pool is not None else 0
    return prev


def restore_route(prev: int) -> None:
    """Restore a route :func:`run_on` returned."""
    _state.pool = prev


def _after_fork_in_child() -> None:
    global _forked_after_threads, _gate
    _gate = threading.Lock()
    if _team is not None:  # (the parent's workers do not exist here)
        _team.reset_in_child()
    for pool in _pools.values():  # (nor the OpenMP runtime's threads)
        pool.reset_in_child()
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if parallel is None or not parallel._is_initialized:
        return  # numba's pool never started (here or in the user's own code): threads are fine
    import numba

    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = None
    if layer not in ("tbb", "workqueue"):  # GNU OpenMP: its threads are gone in the child
        _forked_after_threads = True


os.register_at_fork(after_in_child=_after_fork_in_child)
