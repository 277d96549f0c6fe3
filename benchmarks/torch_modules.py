"""leakyops.torch's modules against torch.nn's, inside one torch program (as in a real model).

    python benchmarks/torch_modules.py                # the shapes and dtypes below
    python benchmarks/torch_modules.py --shape 16 64 32 32 --dtypes float32 --channels-last
    python benchmarks/torch_modules.py --repeat 30 --json modules.json

For LeakyReLU(0.01), PReLU(C) (one weight per channel) and PReLU(1), float32 and bfloat16,
at (16,64,64,64), (64,64,56,56) and (32,256,14,14) NCHW (or the --shape given): the forward
in ``inference_mode`` and the forward + backward (``y.backward(g)``: the input's gradient
and, for PReLU, the weight's). Both libraries run in this one process with PyTorch's threads
present, and take turns call by call; the best time of each is kept. Every case also checks
that both give the same forward result (bit for bit). Prints µs and the ratio torch /
leakyops (> 1: leakyops is faster).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch
from torch import nn

import leakyops
import leakyops.torch as lt

SHAPES = ((16, 64, 64, 64), (64, 64, 56, 56), (32, 256, 14, 14))
DTYPES = ("float32", "bfloat16")


def best_pair(fa, fb, repeat: int):
    """Best times of ``fa`` and ``fb``, called in turns (``repeat`` rounds, after a warm-up)."""
    for _ in range(2):
        fa(), fb()
    ta = tb = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fa()
        t1 = time.perf_counter()
        fb()
        t2 = time.perf_counter()
        ta, tb = min(ta, t1 - t0), min(tb, t2 - t1)
    return ta, tb


MODULES = ("LeakyReLU", "PReLU", "PReLU(1)")


def modules(kind: str, channels: int, dtype):
    if kind == "LeakyReLU":
        return nn.LeakyReLU(0.01), lt.LeakyReLU(0.01)
    if kind == "PReLU(1)":
        channels = 1
    theirs, ours = nn.PReLU(channels), lt.PReLU(channels)
    with torch.no_grad():
        w = torch.linspace(-0.5, 0.5, channels)
        theirs.weight.copy_(w)
        ours.weight.copy_(w)
    return theirs.to(dtype), ours.to(dtype)


def measure(kind, shape, dtype, repeat, channels_last=False):
    gen = torch.Generator().manual_seed(0)
    fmt = torch.channels_last if channels_last and len(shape) == 4 else torch.contiguous_format
    x = torch.randn(shape, generator=gen).to(dtype=dtype, memory_format=fmt)
    g = torch.randn(shape, generator=gen).to(dtype=dtype, memory_format=fmt)
    theirs, ours = modules(kind, shape[1], dtype)
    with torch.inference_mode():
        same = torch.equal(theirs(x), ours(x))

    def forward(m):
        def run():
            with torch.inference_mode():
                m(x)
        return run

    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()

    def forward_backward(m, xx):
        def run():
            xx.grad = None
            m.zero_grad(set_to_none=True)
            m(xx).backward(g)
        return run

    fwd = best_pair(forward(theirs), forward(ours), repeat)
    fwd_bwd = best_pair(forward_backward(theirs, xa), forward_backward(ours, xb), repeat)
    return {"module": kind, "shape": list(shape), "dtype": str(dtype).replace("torch.", ""),
            "same_forward": bool(same),
            "forward": {"torch": fwd[0], "leakyops": fwd[1]},
            "forward_backward": {"torch": fwd_bwd[0], "leakyops": fwd_bwd[1]}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=20, help="rounds of turns per case (default 20)")
    ap.add_argument("--threads", type=int, default=None, help="threads for both (default: all CPUs)")
    ap.add_argument("--shape", type=int, nargs="+", default=None, help="one shape instead of the three")
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=["float16", "bfloat16", "float32", "float64"])
    ap.add_argument("--modules", nargs="+", default=list(MODULES), choices=list(MODULES))
    ap.add_argument("--channels-last", action="store_true", help="channels-last (NHWC) memory for 4-D shapes")
    ap.add_argument("--json", help="also write the results as JSON")
    args = ap.parse_args(argv)
    shapes = [tuple(args.shape)] if args.shape else SHAPES
    threads = args.threads or leakyops.get_num_threads()
    torch.set_num_threads(threads)
    leakyops.set_num_threads(threads)
    rows = []
    print(f"torch {torch.__version__}, {threads} thread(s) each; µs, best of {args.repeat} turns")
    print(f"{'module':<10} {'shape':<18} {'dtype':<9} {'pass':<17} {'torch':>10} {'leakyops':>10} "
          f"{'x torch':>8}")
    for kind in args.modules:
        for shape in shapes:
            for dname in args.dtypes:
                r = measure(kind, shape, getattr(torch, dname), args.repeat, args.channels_last)
                rows.append(r)
                for pas in ("forward", "forward_backward"):
                    t, o = r[pas]["torch"], r[pas]["leakyops"]
                    print(f"{kind:<10} {str(tuple(shape)):<18} {dname:<9} {pas:<17} {t * 1e6:>10.1f} "
                          f"{o * 1e6:>10.1f} {t / o:>8.2f}" + ("" if r["same_forward"] else "  DIFFERS"),
                          flush=True)
    ratios = [r[p]["torch"] / r[p]["leakyops"] for r in rows for p in ("forward", "forward_backward")]
    print(f"{sum(x >= 1.0 for x in ratios)} of {len(ratios)} cases >= 1.0x torch.nn; "
          f"lowest {min(ratios):.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"threads": threads, "torch": torch.__version__, "rows": rows}, fh, indent=1)
    return 0 if all(r["same_forward"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
