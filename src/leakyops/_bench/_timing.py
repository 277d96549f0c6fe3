"""Timing one callable: the best mean over batches of calls."""

from __future__ import annotations

import math
import time


def best_time(fn, min_time: float = 0.1, max_batches: int = 50, min_batches: int = 3,
              batch_time: float = 0.002) -> float:
    """Best mean time of one ``fn()`` call, in seconds.

    Calls are made in batches long enough (about ``batch_time`` seconds) that the clock's
    resolution does not matter; batches go on for about ``min_time`` seconds in all (at
    least ``min_batches``) and the fastest batch's mean is returned.
    """
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-9)
    per_batch = max(1, min(10_000, int(batch_time / one)))
    best = math.inf
    start = time.perf_counter()
    batches = 0
    while batches < min_batches or (time.perf_counter() - start < min_time and batches < max_batches):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            fn()
        best = min(best, (time.perf_counter() - t0) / per_batch)
        batches += 1
    return max(best, 1e-12)
