"""Running the selected cases: in this process, or in ``--jobs N`` worker processes.

Workers are started fresh (``spawn``: no state inherited from the parent, whose emulated
streams are threads) and ignore SIGINT: Ctrl-C reaches the parent, which stops them and
reports what finished. A worker that dies (out of memory, killed) fails the case it was
running; the others go on with the rest.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from collections.abc import Callable

from leakyops import aclnn, set_num_threads
from leakyops._cli_io import usable_cpus

from ._run import ERROR, CaseResult, run_case


def run_all(cases: list, seed: int, jobs: int, soc: str, *, on_progress: Callable, on_result: Callable) -> bool:
    """Run ``cases``; ``on_progress(index, elements)`` after each chunk, ``on_result(index,
    result)`` after each case. Returns ``True`` if Ctrl-C stopped the run."""
    if jobs <= 1 or len(cases) <= 1:
        return _in_process(cases, seed, soc, on_progress, on_result)
    return _in_workers(cases, seed, min(jobs, len(cases)), soc, on_progress, on_result)


def _in_process(cases, seed, soc, on_progress, on_result) -> bool:
    before = aclnn.get_soc_version()
    aclnn.set_soc_version(soc)
    try:
        for i, case in enumerate(cases):
            on_result(i, run_case(case, seed, progress=lambda n, i=i: on_progress(i, n)))
    except KeyboardInterrupt:
        return True
    finally:
        aclnn.set_soc_version(before)
    return False


def _worker(tasks, results, seed: int, soc: str, threads: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    aclnn.set_soc_version(soc)
    if threads:
        set_num_threads(threads)
    while True:
        item = tasks.get()
        if item is None:
            return
        i, case = item
        results.put(("start", i, os.getpid()))
        result = run_case(case, seed, progress=lambda n: results.put(("progress", i, n)))
        results.put(("done", i, result))


def _in_workers(cases, seed, jobs, soc, on_progress, on_result) -> bool:
    ctx = multiprocessing.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    for item in enumerate(cases):
        tasks.put(item)
    for _ in range(jobs):
        tasks.put(None)
    # the processors shared out, unless the user chose the kernels' thread count
    threads = 0 if os.environ.get("LEAKYOPS_NUM_THREADS") else max(1, usable_cpus() // jobs)
    workers = [ctx.Process(target=_worker, args=(tasks, results, seed, soc, threads), daemon=True)
               for _ in range(jobs)]
    running: dict = {}  # worker pid -> index of its case
    finished: set = set()

    def handle(kind, i, payload):
        if i in finished:
            return
        if kind == "start":
            running[payload] = i
        elif kind == "progress":
            on_progress(i, payload)
        else:
            finished.add(i)
            for pid in [pid for pid, j in running.items() if j == i]:
                del running[pid]
            on_result(i, payload)

    try:
        for w in workers:
            w.start()
        while len(finished) < len(cases):
            try:
                handle(*results.get(timeout=0.2))
            except queue.Empty:
                _reap(workers, running, finished, cases, on_result)
                if not any(w.is_alive() for w in workers):
                    _drain(results, handle)
                    for i, case in enumerate(cases):
                        if i not in finished:
                            finished.add(i)
                            on_result(i, CaseResult(case, ERROR, message="not run: every worker process died"))
    except KeyboardInterrupt:
        return True
    finally:
        for w in workers:
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join()
        tasks.cancel_join_thread()
        results.cancel_join_thread()
    return False


def _drain(results, handle) -> None:
    """What the workers sent before they ended."""
    while True:
        try:
            handle(*results.get(timeout=0.1))
        except queue.Empty:
            return


def _reap(workers, running: dict, finished: set, cases, on_result) -> None:
    """Fail the case of a worker that died."""
    for w in workers:
        if w.exitcode not in (None, 0) and w.pid in running:
            i = running.pop(w.pid)
            finished.add(i)
            on_result(i, CaseResult(cases[i], ERROR, message=f"the worker process died (exit code {w.exitcode})"))
