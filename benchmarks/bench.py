"""The project benchmark: every operator x dtype x size against its peers, in one run.

    python benchmarks/bench.py                 # sizes 1e3 1e5 1e6 1.6e7 6.4e7 (several minutes)
    python benchmarks/bench.py --quick         # 1e3 1e5 1e6
    python benchmarks/bench.py --json out.json --plot out.png

Peers, in the same process and with the same thread count: PyTorch on the CPU, NumPy, a
plain copy of the same bytes (the bandwidth ceiling) and, for ``leaky_relu``, oneDNN's
eltwise LeakyReLU when its library is installed (``onednn-cpu-gomp``). Also the per-call
cost at 1,000 float32 elements of ``leakyops.leaky_relu(x)`` against
``torch.nn.functional.leaky_relu(x)`` (both allocating their result).

Ratios are what counts: absolute numbers drift on shared machines. The runner itself is
``leakyops._bench`` (also behind ``leakyops bench``); this script adds the rows that need
peers outside the package.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import timeit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def small_call_row(threads: int, rounds: int = 15) -> str:
    """Per-call cost of a 1,000-element float32 leaky_relu, allocating the result.

    leakyops and PyTorch are timed in turns (``rounds`` rounds of 2,000 calls each, best
    round of each), so that a slow stretch of a shared machine does not fall on one only.
    """
    import leakyops

    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    ours_fn = lambda: leakyops.leaky_relu(x, 0.01)
    theirs_fn = None
    try:
        import torch

        torch.set_num_threads(threads)
        t = torch.from_numpy(x)
        f = torch.nn.functional.leaky_relu
        theirs_fn = lambda: f(t, 0.01)
        theirs_fn()
    except ImportError:
        pass
    ours_fn()
    ours = theirs = float("inf")
    for _ in range(rounds):
        ours = min(ours, timeit.timeit(ours_fn, number=2000) / 2000)
        if theirs_fn is not None:
            theirs = min(theirs, timeit.timeit(theirs_fn, number=2000) / 2000)
    line = f"1,000 float32 elements, one call: leakyops {ours * 1e6:.2f} us"
    if theirs_fn is None:
        return line + "; PyTorch not installed"
    return line + f", torch.nn.functional.leaky_relu {theirs * 1e6:.2f} us (x torch {theirs / ours:.2f})"


def onednn_rows(records, threads: int) -> list[str]:
    """oneDNN eltwise LeakyReLU at the sizes of the run, next to leakyops' leaky_relu."""
    sys.path.insert(0, HERE)
    try:
        import onednn_peer
    except Exception as exc:  # noqa: BLE001
        return [f"oneDNN peer: not loaded ({exc})"]
    if not onednn_peer.available():
        return [f"oneDNN peer: unavailable ({onednn_peer.unavailable_reason()})"]
    from leakyops._bench import best_time

    skipped: dict[str, str] = {}
    rows = [f"{'oneDNN eltwise_relu(alpha)':<28} {'dtype':<9} {'elements':>11} {'oneDNN':>9} "
            f"{'leakyops':>9} {'x oneDNN':>9}"]
    for r in records:
        if r["op"] != "leaky_relu" or r["peer"] != "leakyops" or r["dtype"] == "float64":
            continue
        dtype = np.dtype(r["dtype"]) if r["dtype"] != "bfloat16" else __import__("ml_dtypes").bfloat16
        if r["dtype"] in skipped:
            continue
        x = np.random.default_rng(0).standard_normal(r["elements"]).astype(dtype)
        try:
            run, _ = onednn_peer.make_leaky_relu(x, 0.01)
        except RuntimeError as exc:  # e.g. no f16 kernels on a CPU without avx512_fp16
            skipped[r["dtype"]] = f"oneDNN peer, {r['dtype']}: skipped ({exc})"
            continue
        run()
        t = best_time(run, min_time=0.2)
        gbps = r["bytes"] / t / 1e9
        rows.append(f"{'':<28} {r['dtype']:<9} {r['elements']:>11,} {gbps:>9.2f} {r['gbps']:>9.2f} "
                    f"{r['gbps'] / gbps:>9.2f}")
    return rows + list(skipped.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="sizes 1e3, 1e5, 1e6 only")
    ap.add_argument("--threads", type=int, default=None, help="threads for leakyops, PyTorch and oneDNN")
    ap.add_argument("--json", help="write the records to this file")
    ap.add_argument("--plot", help="write a chart of GB/s by size (needs matplotlib)")
    args = ap.parse_args(argv)

    import leakyops
    from leakyops import _bench

    threads = args.threads or leakyops.get_num_threads()
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))  # oneDNN's GNU OpenMP, before it loads
    records = _bench.run(quick=args.quick, threads=threads)
    print(f"# {datetime.date.today()} · {platform.node()} · {platform.processor() or platform.machine()} · "
          f"{os.cpu_count()} CPUs · Python {platform.python_version()} · numpy {np.__version__}")
    print(_bench.format_table(records))
    print()
    print(small_call_row(threads))
    print()
    print("\n".join(onednn_rows(records, threads)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(_bench.to_json(records), fh, indent=1)
    if args.plot:
        _bench.plot(records, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
