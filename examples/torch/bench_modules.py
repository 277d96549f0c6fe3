"""Forward and forward+backward through leakyops' LeakyReLU/PReLU modules
against PyTorch's own, on the CPU, with the same number of threads.

    python examples/torch/bench_modules.py [--shape 16 64 32 32] [--threads 2]
                                           [--dtypes float32 bfloat16] [--repeat 20]

Prints a Markdown table: the best time (of --repeat runs, the two libraries
measured alternately) of each module and the ratio
torch / leakyops (above 1: leakyops is faster). Every row also checks
that both modules give the same result. Keep the shape modest on a shared
machine; the operators are memory-bound, so time grows with the bytes moved.
"""

import argparse
import time

import torch
from torch import nn

import leakyops
import leakyops.torch as lt


def timed_pair(fn_a, fn_b, repeat):
    """Best times of two functions, measured alternately so that both see the
    same machine (other processes, thread wake-ups, allocator state)."""
    fn_a(), fn_b()  # warm-up: kernel compilation, allocator
    best_a = best_b = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn_a()
        t1 = time.perf_counter()
        fn_b()
        t2 = time.perf_counter()
        best_a, best_b = min(best_a, t1 - t0), min(best_b, t2 - t1)
    return best_a, best_b


def measure(theirs, ours, x, g, repeat):
    """{"torch": (fwd, fwd+bwd), "leakyops": (fwd, fwd+bwd)} best times in seconds."""
    x_t = x.detach().clone().requires_grad_()
    x_l = x.detach().clone().requires_grad_()

    def forward(module):
        with torch.no_grad():
            return module(x)

    def forward_backward(module, xx):
        xx.grad = None
        module.zero_grad()
        module(xx).backward(g)

    fwd = timed_pair(lambda: forward(theirs), lambda: forward(ours), repeat)
    fwd_bwd = timed_pair(lambda: forward_backward(theirs, x_t),
                         lambda: forward_backward(ours, x_l), repeat)
    return {"torch": (fwd[0], fwd_bwd[0]), "leakyops": (fwd[1], fwd_bwd[1])}


def cases(channels):
    yield "LeakyReLU(0.01)", nn.LeakyReLU(0.01), lt.LeakyReLU(0.01)
    yield f"PReLU({channels})", nn.PReLU(channels), lt.PReLU(channels)
    yield "PReLU(1)", nn.PReLU(), lt.PReLU()


def bench(shape, dtype, repeat, channels_last):
    fmt = torch.channels_last if channels_last and len(shape) == 4 else torch.contiguous_format
    x = torch.randn(shape).to(dtype=dtype, memory_format=fmt)
    g = torch.randn(shape).to(dtype=dtype, memory_format=fmt)
    rows = []
    for name, theirs, ours in cases(shape[1]):
        theirs, ours = theirs.to(dtype), ours.to(dtype)
        results = measure(theirs, ours, x, g, repeat)
        # both modules compute the same values (bit for bit in the forward)
        assert torch.equal(theirs(x), ours(x)), name
        rows.append((name, results["torch"], results["leakyops"]))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs="+", default=[16, 64, 32, 32])
    parser.add_argument("--threads", type=int, default=min(2, torch.get_num_threads()))
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--channels-last", action="store_true")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    leakyops.set_num_threads(args.threads)
    shape = tuple(args.shape)
    n = 1
    for s in shape:
        n *= s
    print(f"shape {shape} ({n / 1e6:.2f} M elements), {args.threads} thread(s), "
          f"torch {torch.__version__}, leakyops {leakyops.__version__}"
          f"{', channels-last' if args.channels_last else ''}\n")
    print("| module | dtype | fwd torch (ms) | fwd leakyops (ms) | fwd ratio "
          "| fwd+bwd torch (ms) | fwd+bwd leakyops (ms) | fwd+bwd ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for dtype_name in args.dtypes:
        dtype = getattr(torch, dtype_name)
        for name, (tf, tb), (lf, lb) in bench(shape, dtype, args.repeat, args.channels_last):
            print(f"| {name} | {dtype_name} | {tf * 1e3:.2f} | {lf * 1e3:.2f} | {tf / lf:.2f} "
                  f"| {tb * 1e3:.2f} | {lb * 1e3:.2f} | {tb / lb:.2f} |")


if __name__ == "__main__":
    main()
