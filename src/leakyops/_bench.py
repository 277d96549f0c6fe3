"""The benchmark runner behind ``leakyops bench`` (and ``benchmarks/bench.py``).

Every operator x dtype x size is timed for:

``leakyops``  the core (``leakyops._core``), writing into a preallocated output
``torch``     PyTorch on the CPU with the same thread count, through the ``aten`` ``out=``
              overloads where they exist; ``prelu_backward`` is
              ``aten._prelu_kernel_backward`` plus its channel sum (what ``autograd`` runs)
``numpy``     the obvious NumPy expression (``np.where(x > 0, x, x * s)`` and friends)
``copy``      ``np.copyto`` of the same number of bytes: the memory-bandwidth ceiling

Throughput is reported in GB/s of bytes read + written (``prelu*`` tensors are NCHW with 64
channels; the weight's bytes are negligible and not counted). Each case reports the best of
several repetitions, after a warm-up call (which also compiles the kernels); ``leakyops``,
``torch`` and ``copy`` are timed in turns over three rounds, so that a slow stretch of a
shared machine is not charged to one of them only.

PyTorch is optional: without it (or with ``peers`` excluding it) its column is empty. The
plot needs matplotlib (the ``plot`` extra). Nothing here is imported by ``import leakyops``.
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

__all__ = ["DEFAULT_SIZES", "QUICK_SIZES", "best_time", "format_table", "plot", "run", "to_json"]

OPS = ("leaky_relu", "leaky_relu_", "leaky_relu_backward", "prelu", "prelu_backward")
DTYPES = ("float16", "bfloat16", "float32", "float64")
PEERS = ("leakyops", "torch", "numpy", "copy")
DEFAULT_SIZES = (1_000, 100_000, 1_000_000, 16_000_000, 64_000_000)
QUICK_SIZES = (1_000, 100_000, 1_000_000)
CHANNELS = 64
ROUNDS = 3  # leakyops, torch and copy are timed in turns, this many rounds
SLOPE = 0.01
#: slope of the in-place runs: repeated in-place calls with 0.01 would drive the data into
#: subnormals (slow on some CPUs) within a few dozen repetitions; -1 keeps magnitudes
SLOPE_INPLACE = 1.0

#: arrays read + written per element, per operator
_TRAFFIC = {"leaky_relu": 2, "leaky_relu_": 2, "leaky_relu_backward": 3, "prelu": 2, "prelu_backward": 3}


def best_time(fn, min_time: float = 0.2, max_reps: int = 50, min_reps: int = 3) -> float:
    """Best wall time of ``fn()`` over repetitions lasting about ``min_time`` seconds in all."""
    best = math.inf
    start = time.perf_counter()
    reps = 0
    while reps < min_reps or (time.perf_counter() - start < min_time and reps < max_reps):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        reps += 1
    return max(best, 1e-9)


def _np_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _shape(op: str, n: int) -> tuple:
    if op in ("prelu", "prelu_backward"):
        hw = max(1, -(-n // CHANNELS))
        if hw % 32 == 0:
            return (1, CHANNELS, hw // 32, 32)
        return (1, CHANNELS, 1, hw)
    return (n,)


def _leakyops_case(op, shape, dtype):
    from leakyops import _core

    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    out = np.empty_like(x)
    if op == "leaky_relu":
        return lambda: _core.leaky_relu_impl(x, SLOPE, out=out)
    if op == "leaky_relu_":
        return lambda: _core.leaky_relu_impl(x, SLOPE_INPLACE, out=x)
    if op == "leaky_relu_backward":
        g = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
        return lambda: _core.leaky_relu_backward_impl(g, x, SLOPE, False, out=out)
    w = (rng.random(CHANNELS) * 0.5).astype(dtype)
    if op == "prelu":
        return lambda: _core.prelu_impl(x, w, 1, out=out)
    g = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    return lambda: _core.prelu_backward_impl(g, x, w, 1)


def _numpy_case(op, shape, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    s = dtype.type(SLOPE)
    if op == "leaky_relu":
        return lambda: np.where(x > 0, x, x * s)
    if op == "leaky_relu_":
        s_in = dtype.type(SLOPE_INPLACE)
        return lambda: np.multiply(x, s_in, out=x, where=x <= 0)
    g = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    if op == "leaky_relu_backward":
        return lambda: np.where(x > 0, g, g * s)
    w = (rng.random(CHANNELS) * 0.5).astype(dtype).reshape(1, CHANNELS, 1, 1)
    if op == "prelu":
        return lambda: np.where(x > 0, x, x * w)

    def prelu_backward():
        pos = x > 0
        gi = np.where(pos, g, g * w)
        gw = np.where(pos, dtype.type(0), x * g).sum(axis=(0, 2, 3), dtype=np.float32)
        return gi, gw

    return prelu_backward


def _torch_case(op, shape, dtype_name):
    import torch

    tdt = getattr(torch, dtype_name)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen, dtype=torch.float32).to(tdt)
    out = torch.empty_like(x)
    aten = torch.ops.aten
    if op == "leaky_relu":
        return lambda: aten.leaky_relu.out(x, SLOPE, out=out)
    if op == "leaky_relu_":
        return lambda: aten.leaky_relu_(x, SLOPE_INPLACE)
    g = torch.randn(shape, generator=gen, dtype=torch.float32).to(tdt)
    if op == "leaky_relu_backward":
        return lambda: aten.leaky_relu_backward.grad_input(g, x, SLOPE, False, grad_input=out)
    w = (torch.rand(CHANNELS, generator=gen) * 0.5).to(tdt).view(1, CHANNELS, 1, 1)
    if op == "prelu":
        return lambda: aten._prelu_kernel(x, w)

    def prelu_backward():
        gi, gw = aten._prelu_kernel_backward(g, x, w)
        return gi, gw.sum(dim=(0, 2, 3))

    return prelu_backward


def _copy_case(op, shape, dtype):
    # as many bytes as the operator moves (a copy reads and writes each element once)
    n = max(1, _TRAFFIC[op] * math.prod(shape) // 2)
    src = np.ones(n, dtype=dtype)
    dst = np.empty_like(src)
    return lambda: np.copyto(dst, src)


def _case(peer, op, shape, dtype, dname):
    if peer == "leakyops":
        return _leakyops_case(op, shape, dtype)
    if peer == "numpy":
        return _numpy_case(op, shape, dtype)
    if peer == "torch":
        return _torch_case(op, shape, dname)
    return _copy_case(op, shape, dtype)


def _torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except Exception:  # noqa: BLE001 - any failure to import means "not available"
        return False
    return True


class _Progress:
    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = total, 0, enabled
        self.width = 30

    def step(self, label: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        filled = int(self.width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (self.width - filled)
        sys.stderr.write(f"\r[{bar}] {self.done}/{self.total} {label:<40.40}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def run(ops=OPS, dtypes=None, sizes=None, *, quick=False, threads=None, min_time=None, peers=None,
        progress=True) -> list[dict]:
    """Time the cases; returns one record per operator x dtype x size x peer."""
    import leakyops

    dtypes = tuple(dtypes or DTYPES)
    sizes = tuple(sizes or (QUICK_SIZES if quick else DEFAULT_SIZES))
    peers = tuple(peers or PEERS)
    if min_time is None:
        min_time = 0.05 if quick else 0.2
    if threads is not None:
        leakyops.set_num_threads(threads)
    nthreads = leakyops.get_num_threads()
    have_torch = "torch" in peers and _torch_available()
    if have_torch:
        import torch

        torch.set_num_threads(nthreads)
    active = [p for p in peers if p != "torch" or have_torch]
    total = len(ops) * len(dtypes) * len(sizes) * len(active)
    bar = _Progress(total, progress)
    records = []
    try:
        for op in ops:
            for dname in dtypes:
                dtype = _np_dtype(dname)
                for n in sizes:
                    shape = _shape(op, n)
                    elements = math.prod(shape)
                    nbytes = _TRAFFIC[op] * elements * dtype.itemsize
                    times = {}
                    # leakyops, torch and copy take turns (ROUNDS rounds, best of all), so that
                    # a slow stretch of a shared machine does not fall on one of them only;
                    # numpy (seconds per call at the large sizes) is timed once, alone
                    turns = [p for p in active if p != "numpy"]
                    fns = {}
                    for peer in turns:
                        bar.step(f"{op} {dname} {elements:.0e} {peer}")
                        fns[peer] = _case(peer, op, shape, dtype, dname)
                        fns[peer]()  # warm up (and compile)
                    for _ in range(ROUNDS):
                        for peer in turns:
                            t = best_time(fns[peer], min_time=min_time / ROUNDS, min_reps=2)
                            times[peer] = min(times.get(peer, math.inf), t)
                    fns.clear()
                    if "numpy" in active:
                        bar.step(f"{op} {dname} {elements:.0e} numpy")
                        fn = _case("numpy", op, shape, dtype, dname)
                        fn()
                        times["numpy"] = best_time(fn, min_time=min_time)
                        del fn
                    for peer in active:
                        t = times[peer]
                        records.append({
                            "op": op, "dtype": dname, "elements": elements, "shape": list(shape),
                            "peer": peer, "seconds": t, "bytes": nbytes, "gbps": nbytes / t / 1e9,
                            "threads": nthreads,
                        })
    finally:
        bar.close()
    return records


def _by_case(records):
    cases: dict = {}
    for r in records:
        cases.setdefault((r["op"], r["dtype"], r["elements"]), {})[r["peer"]] = r
    return cases


def format_table(records) -> str:
    """A fixed-width table: GB/s per peer and leakyops' speed relative to PyTorch and the copy."""
    if not records:
        return "no measurements"
    threads = records[0]["threads"]
    lines = [
        f"leakyops bench: GB/s = (bytes read + written) / best time; {threads} thread(s)",
        (f"{'operator':<20} {'dtype':<9} {'elements':>11} {'leakyops':>9} {'torch':>9} {'numpy':>9}"
         f" {'copy':>9} {'x torch':>8} {'x copy':>7}"),
    ]

    def f(v, w=9):
        return f"{v:>{w}.2f}" if v is not None else f"{'-':>{w}}"

    for (op, dname, n), peers in _by_case(records).items():
        lo, to, no, co = (peers[p]["gbps"] if p in peers else None for p in ("leakyops", "torch", "numpy", "copy"))
        rt = lo / to if lo is not None and to else None
        rc = lo / co if lo is not None and co else None
        lines.append(f"{op:<20} {dname:<9} {n:>11,} {f(lo)} {f(to)} {f(no)} {f(co)} {f(rt, 8)} {f(rc, 7)}")
    lines.append("x torch: leakyops GB/s / PyTorch GB/s (> 1 is faster); x copy: share of the copy's bandwidth")
    return "\n".join(lines)


def to_json(records) -> dict:
    import platform

    import leakyops

    return {
        "leakyops_version": getattr(leakyops, "__version__", "unknown"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "numpy": np.__version__,
        "records": records,
    }


def plot(records, path) -> None:
    """GB/s by size: one panel per operator (rows) and dtype (columns), one line per peer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = list(dict.fromkeys(r["op"] for r in records))
    dtypes = list(dict.fromkeys(r["dtype"] for r in records))
    peers = [p for p in PEERS if any(r["peer"] == p for r in records)]
    style = {"leakyops": ("C0", "o", "-"), "torch": ("C3", "s", "-"), "numpy": ("C2", "^", "-"),
             "copy": ("0.4", "", "--")}
    fig, axes = plt.subplots(len(ops), len(dtypes), figsize=(3.6 * len(dtypes) + 1, 2.8 * len(ops) + 1),
                             squeeze=False, sharex=True)
    for i, op in enumerate(ops):
        for j, dname in enumerate(dtypes):
            ax = axes[i][j]
            for peer in peers:
                pts = sorted((r["elements"], r["gbps"]) for r in records
                             if r["op"] == op and r["dtype"] == dname and r["peer"] == peer)
                if pts:
                    color, marker, ls = style[peer]
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker,
                            linestyle=ls, label=peer)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{op} · {dname}", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            if j == 0:
                ax.set_ylabel("GB/s (read + written)")
            if i == len(ops) - 1:
                ax.set_xlabel("elements")
    handles, labels = axes[0][0].get_legend_handles_labels()
    threads = records[0]["threads"] if records else "?"
    fig.suptitle(f"leakyops vs peers: GB/s by size, {threads} thread(s)", y=0.995, fontsize=11)
    top = 1 - 0.9 / fig.get_figheight()
    fig.legend(handles, labels, loc="upper center", ncol=len(peers), frameon=False,
               bbox_to_anchor=(0.5, top + 0.35 / fig.get_figheight()))
    fig.tight_layout(rect=(0, 0, 1, top))
    fig.savefig(path, dpi=110)
    plt.close(fig)
