"""Out-of-core LeakyReLU and PReLU backward with ``leakyops.dask`` on a local process cluster.

What it does:

1. starts a ``dask.distributed`` ``LocalCluster`` of worker processes on 127.0.0.1 (no
   dashboard), each with a memory limit (``--memory-limit-mib``);
2. writes two float32 arrays ``x`` and ``grad_output`` of shape ``(N, C, L)`` to zarr on
   disk, each larger than the memory limit of the whole cluster (the workers generate them
   block by block);
3. copies ``x`` block by block into a zarr array ``y`` (the I/O floor of a pass), runs
   ``leaky_relu(x)`` into ``y``, then ``prelu_backward(grad_output, x, w)``
   in one pass: ``grad_input`` streamed into a zarr array, the per-channel ``grad_weight``
   tree-reduced; a progress bar (tqdm) follows every pass;
4. checks a sample of slabs of ``y`` and ``grad_input`` against the core bit for bit, and
   ``grad_weight`` against a float64 reference the core builds slab by slab;
5. prints what it measured: data size, memory limits, peak memory of the workers, and the
   throughput of each pass against the core on one in-memory array.

Default sizes are modest: two workers of 384 MiB and two 960 MiB inputs (each 1.25 x the
cluster's 768 MiB), a minute or two on a laptop; ``--big`` makes each input 4 GiB, and every
size is a flag. Needs ``pip install "leakyops[dask]"``
(dask[array,distributed], zarr, tqdm).

    python examples/dask/out_of_core.py            # modest
    python examples/dask/out_of_core.py --big      # 2 x 4 GiB on disk
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import tempfile
import time

import numpy as np

MIB = 1 << 20


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mib", type=int, default=None,
                   help="size of x (and of grad_output); default 1.25 x the cluster's memory limit")
    p.add_argument("--big", action="store_true", help="4 GiB per input (overrides --size-mib)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads-per-worker", type=int, default=1)
    p.add_argument("--memory-limit-mib", type=int, default=384, help="per worker")
    p.add_argument("--chunk-mib", type=int, default=8, help="size of one block of x")
    p.add_argument("--channels", type=int, default=8)
    p.add_argument("--length", type=int, default=4096, help="last axis L")
    p.add_argument("--slope", type=float, default=0.01)
    p.add_argument("--dir", default=None, help="where to put the zarr arrays (a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the zarr arrays")
    p.add_argument("--json", default=None, help="also write the measurements to this file")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.dir is not None and not os.path.isdir(args.dir):
        what = "not a directory" if os.path.exists(args.dir) else "no such directory"
        p.error(f"--dir {args.dir}: {what} (give an existing directory for the zarr arrays)")
    if args.dir is not None and not os.access(args.dir, os.W_OK | os.X_OK):
        p.error(f"--dir {args.dir}: not writable")
    if args.big:
        args.size_mib = 4096
    elif args.size_mib is None:
        args.size_mib = int(1.25 * args.workers * args.memory_limit_mib)
    return args


def write_block(block, target, region):
    """Write one block into its region of a zarr array (a task, run on a worker)."""
    target[region] = block
    return block.nbytes


def block_regions(chunks):
    """The slices of every block, in the C order of ``Array.to_delayed().ravel()``."""
    per_axis = []
    for c in chunks:
        edges = np.cumsum((0,) + tuple(c))
        per_axis.append([slice(int(a), int(b)) for a, b in itertools.pairwise(edges)])
    return list(itertools.product(*per_axis))


def store_tasks(arr, target):
    """One delayed write per block (the graph is not optimised, so shared tasks stay shared)."""
    import dask

    blocks = arr.to_delayed(optimize_graph=False).ravel()
    return [dask.delayed(write_block)(b, target, r)
            for b, r in zip(blocks, block_regions(arr.chunks))]


def run_pass(client, label, tasks, extra=(), sampler=None):
    """Compute ``tasks`` and ``extra`` in ONE graph with a progress bar; return extra's values.

    ``optimize_graph=False`` keeps the tasks that several outputs share (prelu_backward's
    block tasks, read by grad_input and grad_weight) as one task each: the data is read once.
    """
    from distributed import as_completed
    from tqdm import tqdm

    t0 = time.perf_counter()
    with sampler.sample(label) if sampler is not None else contextlib.nullcontext():
        futures = client.compute(list(tasks) + list(extra), optimize_graph=False)
        for _ in tqdm(as_completed(futures), total=len(futures), desc=label, unit="block"):
            pass
        results = client.gather(futures[len(tasks):])
    return results, time.perf_counter() - t0


def warm_up(slope, w):
    """Load the kernels of this process (run on every worker before anything is timed)."""
    import leakyops

    a = np.zeros((2, w.size, 4), np.float32)
    leakyops.leaky_relu(a, slope)
    leakyops.prelu_backward(a, a, w)
    return leakyops.get_num_threads()


def core_throughput(shape, slope, w, repeats=3):
    """Seconds of the core on one in-memory float32 array (best of ``repeats``)."""
    import leakyops

    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape, dtype=np.float32)
    g = rng.standard_normal(shape, dtype=np.float32)
    leakyops.leaky_relu(a[:1], slope), leakyops.prelu_backward(g[:1], a[:1], w)  # warm up
    best = {}
    for name, fn in [("leaky_relu", lambda: leakyops.leaky_relu(a, slope)),
                     ("prelu_backward", lambda: leakyops.prelu_backward(g, a, w))]:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        best[name] = min(times)
    return best, a.nbytes, leakyops.get_num_threads()


def main(argv=None):
    args = parse_args(argv)

    import dask.array as da
    import distributed
    import zarr
    from distributed.diagnostics import MemorySampler

    import leakyops
    import leakyops.dask as lod

    C, L = args.channels, args.length
    row_bytes = C * L * 4
    n = max(1, args.size_mib * MIB // row_bytes)
    rows_per_chunk = max(1, args.chunk_mib * MIB // row_bytes)
    shape, chunks = (n, C, L), (rows_per_chunk, C, L)
    nbytes = n * row_bytes
    cluster_limit = args.workers * args.memory_limit_mib * MIB
    w = np.linspace(0.05, 0.4, C, dtype=np.float32)

    root = args.dir or tempfile.gettempdir()
    workdir = tempfile.mkdtemp(prefix="leakyops-ooc-", dir=root)
    print(f"x, grad_output: {shape} float32, {nbytes / MIB:.0f} MiB each, blocks of "
          f"{rows_per_chunk * row_bytes / MIB:.0f} MiB, in {workdir}")
    print(f"cluster: {args.workers} worker processes x {args.threads_per_worker} thread(s), "
          f"{args.memory_limit_mib} MiB each ({cluster_limit / MIB:.0f} MiB in all: x alone is "
          f"{nbytes / cluster_limit:.2f}x that)")

    def zarr_array(name):
        return zarr.create_array(store=os.path.join(workdir, name), shape=shape, chunks=chunks,
                                 dtype=np.float32, compressors=None, overwrite=True)

    report = {"shape": shape, "dtype": "float32", "input_mib": nbytes / MIB,
              "workers": args.workers, "threads_per_worker": args.threads_per_worker,
              "memory_limit_mib_per_worker": args.memory_limit_mib,
              "cluster_memory_limit_mib": cluster_limit / MIB, "block_mib": rows_per_chunk * row_bytes / MIB}
    try:
        with distributed.LocalCluster(
            n_workers=args.workers,
            threads_per_worker=args.threads_per_worker,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            memory_limit=f"{args.memory_limit_mib}MiB",
        ) as cluster, distributed.Client(cluster) as client:
            sampler = MemorySampler()
            t0 = time.perf_counter()
            client.run(warm_up, args.slope, w)  # compiled (or disk-cached) kernels, loaded once
            t_warm = time.perf_counter() - t0
            zx, zg, zy, zgi = (zarr_array(k) for k in ("x", "grad_output", "y", "grad_input"))

            # 1. the inputs, generated block by block on the workers
            rng = da.random.default_rng(args.seed)
            gen = store_tasks(rng.standard_normal(shape, chunks=chunks, dtype=np.float32), zx)
            gen += store_tasks(rng.standard_normal(shape, chunks=chunks, dtype=np.float32), zg)
            _, t_gen = run_pass(client, "write inputs", gen, sampler=sampler)

            x = da.from_zarr(zx)
            g = da.from_zarr(zg)

            # the I/O floor: the same blocks copied from x to y, no kernel
            _, t_copy = run_pass(client, "copy x (I/O floor)", store_tasks(x, zy), sampler=sampler)

            # 2. leaky_relu: read x, write y
            _, t_fwd = run_pass(client, "leaky_relu", store_tasks(lod.leaky_relu(x, args.slope), zy),
                                sampler=sampler)

            # 3. prelu_backward in one pass: read x and g, write grad_input, reduce grad_weight
            gi, gw = lod.prelu_backward(g, x, w)
            (gw_value,), t_bwd = run_pass(client, "prelu_backward", store_tasks(gi, zgi), [gw],
                                          sampler=sampler)
            peaks = {label: max(v for _, v in s) / MIB for label, s in sampler.samples.items() if s}

        # 4. checks against the core
        sample_rng = np.random.default_rng(args.seed + 1)
        starts = sample_rng.choice(max(1, n - rows_per_chunk // 2 + 1), size=min(3, n), replace=False)
        for s in sorted(int(v) for v in starts):
            sl = slice(s, min(n, s + max(1, rows_per_chunk // 2)))
            xs, gs = zx[sl], zg[sl]
            if not np.array_equal(zy[sl].view(np.uint32), leakyops.leaky_relu(xs, args.slope).view(np.uint32)):
                raise SystemExit(f"leaky_relu differs from the core in rows {sl}")
            ref_gi, _ = leakyops.prelu_backward(gs, xs, w)
            if not np.array_equal(zgi[sl].view(np.uint32), ref_gi.view(np.uint32)):
                raise SystemExit(f"prelu_backward grad_input differs from the core in rows {sl}")
        # grad_weight: the core in float64 (exact products of float32 values), slab by slab
        ref = np.zeros(C, np.float64)
        for s in range(0, n, rows_per_chunk):
            sl = slice(s, s + rows_per_chunk)
            ref += leakyops.prelu_backward(zg[sl].astype(np.float64), zx[sl].astype(np.float64),
                                           w.astype(np.float64))[1]
        err = np.max(np.abs(gw_value.astype(np.float64) - ref) / np.maximum(np.abs(ref), 1e-300))
        if err > 2 * np.finfo(np.float32).eps:
            raise SystemExit(f"grad_weight differs from the float64 reference by {err:.3g} (relative)")
        print(f"checks: {len(starts)} sample slabs of y and grad_input equal the core bit for bit; "
              f"grad_weight within {err:.2g} (relative) of a float64 reference")

        # 5. the core on one in-memory array of the same layout, for comparison
        mem_rows = max(1, min(n, 128 * MIB // row_bytes))
        best, mem_bytes, threads = core_throughput((mem_rows, C, L), args.slope, w)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    def gbs(moved, seconds):
        return moved / seconds / 1e9

    rows = [
        ("copy (no kernel)", "read x, write y", 2 * nbytes, t_copy, float("nan")),
        ("leaky_relu", "read x, write y", 2 * nbytes, t_fwd, gbs(2 * mem_bytes, best["leaky_relu"])),
        ("prelu_backward", "read x, g, write grad_input", 3 * nbytes, t_bwd,
         gbs(3 * mem_bytes, best["prelu_backward"])),
    ]
    print(f"\nkernels loaded on the workers in {t_warm:.1f} s; inputs written in {t_gen:.1f} s")
    print("peak memory of all workers together, by pass: "
          + ", ".join(f"{k} {v:.0f} MiB" for k, v in peaks.items()))
    print(f"{'pass':16} {'bytes moved':>12} {'time':>8} {'cluster GB/s':>13} {'core GB/s':>10} {'ratio':>6}")
    for name, what, moved, t, core in rows:
        print(f"{name:16} {moved / MIB:>8.0f} MiB {t:>7.1f}s {gbs(moved, t):>13.2f} {core:>10.2f} "
              f"{gbs(moved, t) / core:>6.2f}")
        report[name] = {"bytes_moved": moved, "seconds": t, "cluster_gb_s": gbs(moved, t),
                        "core_in_memory_gb_s": None if np.isnan(core) else core, "what": what}
    print(f"(core: one in-memory array of {mem_bytes / MIB:.0f} MiB, {threads} thread(s); "
          f"cluster: zarr on disk, {args.workers} x {args.threads_per_worker} thread(s), "
          f"1 kernel thread per task)")
    report.update({"warm_up_seconds": t_warm, "write_inputs_seconds": t_gen, "peak_worker_memory_mib": peaks,
                   "core_in_memory_mib": mem_bytes / MIB, "core_threads": threads,
                   "grad_weight_relative_error": float(err)})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2, default=str)
    return report


if __name__ == "__main__":
    main()
