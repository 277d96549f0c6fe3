"""One case against the benchmark's copy ceiling, in this process (the speed line of ``leakyops demo``).

The same peers as the benchmark (:mod:`._peers`: leakyops' call with ``out=``, and the copies
of the same bytes — NumPy's ``copyto`` on one thread, leakyops' threaded copy on the kernels'
threads) timed by the same :func:`._timing.best_time`, in interleaved rounds so that a slow
stretch of a shared machine shows as rounds that disagree instead of falling on one peer.
PyTorch's copy, the benchmark's third copy, is left out: the demo needs no optional
dependency. Each peer's thread count is reported with its times.
"""

from __future__ import annotations

from ._cases import case, operator_of
from ._peers import PEERS
from ._timing import best_time

#: The copies timed here, and how many threads each runs on (``None``: as many as leakyops').
COPIES = {"copy-numpy": 1, "copy-leakyops": None}


def against_copy(op: str, dtype: str, n: int, rounds: int = 3, min_time: float = 0.1) -> dict:
    """Best time per round of ``op`` on ``n`` elements and of each copy of the same bytes.

    Returns ``{"bytes": …, "peers": {name: {"threads": t, "seconds": [one per round]}}}``,
    leakyops first.
    """
    from leakyops import _core

    c = case(op, dtype, n)
    names = ["leakyops", *COPIES]
    calls = {name: PEERS[name](op, dtype, tuple(c["shape"])) for name in names}
    for fn in calls.values():  # warm up: compile, fault the pages in, start the threads
        fn()
        fn()
    seconds: dict = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:  # another goes first each round
            seconds[name].append(best_time(calls[name], min_time=min_time))
    # the threads that ran: the kernels' count for a large call, one below the threshold (the
    # copy writes as many bytes as the operator's output: half the bytes moved)
    threads = _core._threads_for(c["bytes"] // operator_of(op).arrays_moved)
    peers = {name: {"threads": COPIES.get(name) or threads, "seconds": seconds[name]} for name in names}
    return {"bytes": c["bytes"], "peers": peers}
