"""The benchmark behind ``leakyops bench`` and ``benchmarks/bench.py``.

Every library runs in a process of its own (:mod:`._worker`): PyTorch's and oneDNN's GNU
OpenMP threads keep spinning after each call and would take the cores of whatever runs next
in the same process, so timing several libraries in one process measures contention, not
the libraries. The processes take turns case by case (every library times a case before the
next case starts, the order rotating from case to case) over several rounds, and the best
time of each case is kept, so that a slow stretch of a shared machine does not fall on one
library only (the memory of the machine these runs come from moved between two speeds, a
factor of two apart, from minute to minute: a library timing all its cases in one turn could
meet the slow one alone).

Peers (see :mod:`._peers`): PyTorch, the real oneDNN primitives, ONNX Runtime, and copies of
the same bytes (the fastest of NumPy's, PyTorch's and leakyops' own copy is the ceiling).
Each is skipped, with one line saying why, where it is not installed or has no kernel for
a case on this CPU. Nothing here is imported by ``import leakyops``.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys

from ._cases import DEFAULT_SIZES, DTYPES, OPS, QUICK_SIZES, case
from ._peers import COPIES, LIBRARIES, PEERS
from ._timing import best_time

__all__ = ["DEFAULT_SIZES", "DTYPES", "OPS", "QUICK_SIZES", "PEERS", "ROUNDS", "MIN_TIME", "FULL_RUN",
           "PLOT_STYLE", "TIER_SETTINGS", "tier", "tier_text", "best_time", "run", "measured", "own_deaths", "format_table", "format_markdown",
           "to_json", "plot", "summary"]

#: Extra rows compared with PyTorch only: calls that allocate their results, and
#: ``prelu_backward`` with one weight for every channel (PyTorch's ``PReLU()``).
EXTRA_OPS = {"leaky_relu:alloc": ("leakyops", "torch"),
             "prelu_backward:fresh": ("leakyops", "torch"),
             "prelu_backward:one_slope": ("leakyops", "torch")}

#: Rounds of turns and seconds of timing per case and round: (default, --quick).
ROUNDS = (3, 2)
MIN_TIME = (0.1, 0.03)

#: How long the default run took (all peers installed, 2 threads per library, nothing else
#: running; the run of 2026-11-23 in docs/benchmarks.md). The progress line on a terminal
#: shows the time left of a run as it goes.
FULL_RUN = "about 45 minutes on a 2-core machine"

#: How a skip reason starts when the peer's process died on the case (rather than the peer
#: being missing or having no kernel for it).
DIED = "its process died"

#: The peers whose code is leakyops': their process dying on a case is a failure of the run.
OWN = ("leakyops", "copy-leakyops")

#: The chart's line per library: (colour, marker, line style), matplotlib's codes; ``copy`` is
#: the copy ceiling (docs/cli.md describes them in words, and a test keeps the two in step).
PLOT_STYLE = {"leakyops": ("C0", "o", "-"), "torch": ("C3", "s", "-"), "onednn": ("C1", "^", "-"),
              "onnxruntime": ("C2", "v", "-"), "copy": ("0.4", "", "--")}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


#: The settings that cap a library's instruction set: with the CPU's own, a run's tier.
TIER_SETTINGS = ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "LEAKYOPS_MAX_CPU_ISA",
                 "ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY")


def _isa_name(features) -> str:
    """The widest vector instruction set among ``features`` (LLVM's names), as people say it."""
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= features:
        extra = [n for f, n in (("avx512bf16", "BF16"), ("avx512fp16", "FP16"), ("amx-tile", "AMX"))
                 if f in features]
        return "AVX-512" + (f" ({', '.join(extra)})" if extra else "")
    return next((n for f, n in (("avx2", "AVX2"), ("avx", "AVX"), ("sse4.1", "SSE4.1"))
                 if f in features), "SSE2")


def tier() -> dict:
    """The instruction-set tier a run measures: the CPU's widest, the CPU leakyops' kernels are
    compiled for (numba's target), and each library's cap set in the environment (the
    settings of :data:`TIER_SETTINGS` that are set; the workers inherit them)."""
    from .. import _cpu

    name, features = _cpu.target()
    return {"cpu_isa": _isa_name(_cpu.host_features()),
            "leakyops_target": name if features is None else f"{name} with features {features!r}",
            "caps": {k: os.environ[k] for k in TIER_SETTINGS if k in os.environ}}


def tier_text(t: dict | None) -> str:
    """:func:`tier` in one sentence (the table's header)."""
    if not t:
        return "tier: not recorded"
    caps = ", ".join(f"{k}={v!r}" for k, v in t["caps"].items())
    return (f"tier: {t['cpu_isa']} CPU, leakyops compiled for {t['leakyops_target']}, "
            + (f"caps {caps}" if caps else "no caps (every library at the CPU's own)"))


class _Progress:
    """The bench's progress line: the command's own (on a terminal only), counting timings."""

    def __init__(self, total: int, enabled: bool):
        from leakyops._cli_io import Progress

        self.line = Progress("leakyops bench", total, "timings", show=enabled, time_left=True)

    def step(self, n: int, label: str) -> None:
        self.line.step(label)
        self.line.advance(n)

    def close(self) -> None:
        self.line.close()


class _Worker:
    """One peer's process (:mod:`._worker`): cases sent one at a time, a line of JSON each,
    each answered (``{"seconds": …}`` or ``{"skipped": …}``) before the next peer's turn; a
    process that died answers ``{"crashed": …}`` with its exit status and last line of stderr."""

    def __init__(self, peer: str, threads: int, min_time: float):
        import tempfile

        env = dict(os.environ)
        for var in ("LEAKYOPS_BENCH_THREADS", "LEAKYOPS_NUM_THREADS", "OMP_NUM_THREADS",
                    "MKL_NUM_THREADS"):
            env[var] = str(threads)
        self._err = tempfile.TemporaryFile(mode="w+")  # (a pipe could fill up and block it)
        self.status: int | None = None
        self.last_error = ""
        self.proc = subprocess.Popen([sys.executable, "-m", "leakyops._bench._worker"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, text=True)
        self._send({"peer": peer, "min_time": min_time})

    def _send(self, obj) -> bool:
        try:
            self.proc.stdin.write(json.dumps(obj) + "\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    @property
    def alive(self) -> bool:
        return self.status is None and self.proc.poll() is None

    def time(self, c: dict) -> dict:
        line = self.proc.stdout.readline() if self._send(c) else ""
        if line:
            rec = json.loads(line)
            rec.pop("key", None)
            return rec
        status = self.close()
        return {"crashed": f"{DIED} (exit status {status}): {self.last_error[:200]}"}

    def close(self) -> int:
        """End the process (at once if it does not end by itself) and close its files; its
        exit status (``last_error``: the last line it wrote to stderr)."""
        if self.status is not None:
            return self.status
        try:
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            status = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
        self.proc.stdout.close()
        self._err.seek(0)
        self.last_error = ([ln for ln in self._err.read().strip().splitlines() if ln.strip()]
                           or [""])[-1]
        self._err.close()
        self.status = status
        return status


def _spawn(peer: str, threads: int, min_time: float) -> _Worker:
    """A new process for ``peer``."""
    return _Worker(peer, threads, min_time)


def run(ops=OPS, dtypes=DTYPES, sizes=None, *, quick=False, threads=None, min_time=None,
        rounds=None, peers=None, extra=True, progress=True, log=None) -> list[dict]:
    """Time every case on every peer; one record per case and peer (``seconds`` or ``skipped``).

    ``log(line)`` receives the one-line reason of each peer that is skipped (per reason).
    """
    import leakyops

    sizes = tuple(sizes or (QUICK_SIZES if quick else DEFAULT_SIZES))
    threads = threads or leakyops.get_num_threads()
    min_time = MIN_TIME[quick] if min_time is None else min_time
    rounds = ROUNDS[quick] if rounds is None else rounds
    peers = tuple(peers or PEERS)
    cases = [case(op, dt, n) for op in ops for dt in dtypes for n in sizes]
    if extra:
        cases += [case(op, "float32", n) for op in EXTRA_OPS for n in sizes
                  if op.split(":")[0] in ops and (n <= 1_000 or op.startswith("prelu"))]
    for c in cases:
        c["key"] = f"{c['op']}|{c['dtype']}|{c['size']}"

    def wanted(peer, c):
        allowed = EXTRA_OPS.get(c["op"])
        return allowed is None or peer in allowed

    best: dict = {}
    skipped: dict = {}
    todo = [(p, c) for c in cases for p in peers if wanted(p, c)]
    bar = _Progress(rounds * len(todo), progress)
    workers: dict = {}
    order = list(peers)
    try:
        for r in range(rounds):
            for c in cases:  # (every peer times a case in turn: the same minute of the machine)
                for peer in order:
                    if not wanted(peer, c):
                        continue
                    key = c["key"]
                    if (peer, key) in skipped:
                        bar.step(1, peer)
                        continue
                    w = workers.get(peer)
                    if w is None or not w.alive:
                        w = workers[peer] = _spawn(peer, threads, min_time)
                    rec = w.time(c)
                    bar.step(1, f"{peer} {key}")
                    if "crashed" in rec:
                        skipped[(peer, key)] = rec["crashed"]
                    elif "skipped" in rec:
                        skipped[(peer, key)] = rec["skipped"]
                    else:
                        best[(peer, key)] = min(best.get((peer, key), float("inf")), rec["seconds"])
                order = order[1:] + order[:1]  # another library goes first next case
    finally:
        bar.close()
        for w in workers.values():
            w.close()
    if log is not None:
        reasons: dict = {}
        for (peer, _), why in skipped.items():
            reasons.setdefault((peer, why), 0)
            reasons[(peer, why)] += 1
        for (peer, why), count in reasons.items():
            log(f"skipped {peer} ({count} case{'s' if count > 1 else ''}): {why}")
    records = []
    for c in cases:
        for peer in peers:
            if not wanted(peer, c):
                continue
            rec = {k: c[k] for k in ("op", "dtype", "size", "shape", "elements", "bytes")}
            rec.update(peer=peer, threads=threads)
            t = best.get((peer, c["key"]))
            if t is None:
                rec.update(seconds=None, gbps=None, skipped=skipped.get((peer, c["key"]), "not run"))
            else:
                rec.update(seconds=t, gbps=c["bytes"] / t / 1e9, skipped=None)
            records.append(rec)
    return records


def measured(records) -> bool:
    """Whether any peer was timed on any case (else the table would be all '-')."""
    return any(r["seconds"] is not None for r in records)


def own_deaths(records) -> str:
    """One line if leakyops' own process died on a case (a crash of leakyops, not a missing
    peer), naming how many cases, the first one and why; else ""."""
    died = [r for r in records if r["peer"] in OWN and (r["skipped"] or "").startswith(DIED)]
    if not died:
        return ""
    first = died[0]
    return (f"leakyops' own process died on {len(died)} case{'s' if len(died) > 1 else ''}; the first,"
            f" {first['peer']} on {first['op']} {first['dtype']} {first['size']:,} elements: {first['skipped']}")


def _by_case(records):
    cases: dict = {}
    for r in records:
        cases.setdefault((r["op"], r["dtype"], r["size"]), {})[r["peer"]] = r
    return cases


def _ratios(peers: dict):
    """(fastest library's name, leakyops' speed relative to it, share of the copy ceiling)."""
    ours = peers.get("leakyops", {}).get("seconds")
    libs = [(p["seconds"], name) for name, p in peers.items()
            if name in LIBRARIES and p["seconds"] is not None]
    copies = [p["seconds"] for name, p in peers.items() if name in COPIES and p["seconds"] is not None]
    fastest = min(libs) if libs else None
    ratio = fastest[0] / ours if fastest and ours else None
    share = min(copies) / ours if copies and ours else None
    return (fastest[1] if fastest else None), ratio, share


def format_table(records, tier: dict | None = None) -> str:
    """µs per call for every peer, leakyops' GB/s, its ratio to the fastest peer and its share
    of the copy ceiling, one row per case; the first line says the threads and, given
    ``tier`` (:func:`tier`), the instruction-set tier."""
    if not records:
        return "no measurements"
    threads = records[0]["threads"]
    cols = ["leakyops", "torch", "onednn", "onnxruntime", "copy"]
    head = (f"{'operator':<24} {'dtype':<9} {'elements':>11} "
            + " ".join(f"{c if c != 'onnxruntime' else 'onnxrt':>10}" for c in cols)
            + f" {'GB/s':>7} {'x fastest':>9} {'peer':>7} {'x copy':>6}")
    lines = [f"µs per call (best of all rounds), {threads} thread(s) per library, each library in "
             "a process of its own; copy = the fastest copy of the same bytes"
             + (f"; {tier_text(tier)}" if tier else ""), head]

    def us(t):
        return f"{t * 1e6:>10.1f}" if t is not None else f"{'-':>10}"

    for (op, dname, _), peers in _by_case(records).items():
        ours = peers.get("leakyops")
        copies = [p["seconds"] for n, p in peers.items() if n in COPIES and p["seconds"] is not None]
        times = [peers.get(c, {}).get("seconds") for c in cols[:-1]] + [min(copies) if copies else None]
        name, ratio, share = _ratios(peers)
        gbps = ours["gbps"] if ours and ours["gbps"] else None
        elements = next(iter(peers.values()))["elements"]
        lines.append(f"{op:<24} {dname:<9} {elements:>11,} "
                     + " ".join(us(t) for t in times)
                     + (f" {gbps:>7.2f}" if gbps else f" {'-':>7}")
                     + (f" {ratio:>9.2f}" if ratio else f" {'-':>9}")
                     + f" {(name or '-')[:7]:>7}"
                     + (f" {share:>6.2f}" if share else f" {'-':>6}"))
    lines.append("x fastest: the fastest peer's time / leakyops' time (> 1: leakyops is faster); "
                 "x copy: leakyops' share of the copy ceiling's bandwidth")
    return "\n".join(lines)


def format_markdown(records) -> str:
    """The table of :func:`format_table` as Markdown (for docs/benchmarks.md)."""
    cols = ["leakyops", "torch", "onednn", "onnxruntime"]
    lines = ["| operator | dtype | elements | leakyops µs | PyTorch µs | oneDNN µs | ONNX Runtime µs "
             "| copy µs | leakyops GB/s | × fastest peer | fastest peer | share of copy |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]

    def us(t):
        return f"{t * 1e6:,.1f}" if t is not None else "–"

    for (op, dname, _), peers in _by_case(records).items():
        ours = peers.get("leakyops")
        copies = [p["seconds"] for n, p in peers.items() if n in COPIES and p["seconds"] is not None]
        name, ratio, share = _ratios(peers)
        elements = next(iter(peers.values()))["elements"]
        cells = [us(peers.get(c, {}).get("seconds")) for c in cols] + [us(min(copies) if copies else None)]
        gbps = f"{ours['gbps']:.1f}" if ours and ours["gbps"] else "–"
        r = f"**{ratio:.2f}**" if ratio is not None and ratio >= 1.0 else (f"{ratio:.2f}" if ratio else "–")
        lines.append(f"| `{op}` | {dname} | {elements:,} | " + " | ".join(cells)
                     + f" | {gbps} | {r} | {name or '–'} | " + (f"{share:.2f}" if share else "–") + " |")
    return "\n".join(lines)


def summary(records, min_size: int = 10_000) -> str:
    """How many cases from ``min_size`` on are at least as fast as the fastest peer."""
    met = total = 0
    worst = []
    for (op, dname, size), peers in _by_case(records).items():
        if size < min_size or op in EXTRA_OPS:
            continue
        _, ratio, _ = _ratios(peers)
        if ratio is None:
            continue
        total += 1
        met += ratio >= 1.0
        if ratio < 1.0:
            worst.append((ratio, f"{op} {dname} {size:.0e}"))
    line = f"{met} of {total} cases from {min_size:.0e} elements on are >= 1.0x the fastest peer"
    if worst:
        line += "; below: " + ", ".join(f"{name} {r:.2f}" for r, name in sorted(worst))
    return line


def to_json(records) -> dict:
    import numpy as np

    import leakyops

    return {
        "date": datetime.date.today().isoformat(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "tier": tier(),
        "leakyops_version": getattr(leakyops, "__version__", "unknown"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "records": records,
    }


def plot(records, path, fmt: str | None = None) -> None:
    """GB/s by size: one panel per operator (rows) and dtype (columns), one line per peer.

    ``path`` is a file name or a binary file object; ``fmt`` the format (default: the name's suffix).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = [op for op in dict.fromkeys(r["op"] for r in records) if op not in EXTRA_OPS]
    dtypes = list(dict.fromkeys(r["dtype"] for r in records))
    style = PLOT_STYLE
    fig, axes = plt.subplots(max(1, len(ops)), len(dtypes),
                             figsize=(3.6 * len(dtypes) + 1, 2.8 * max(1, len(ops)) + 1),
                             squeeze=False, sharex=True)
    for i, op in enumerate(ops):
        for j, dname in enumerate(dtypes):
            ax = axes[i][j]
            for line in style:
                pts = {}
                for r in records:
                    if r["op"] != op or r["dtype"] != dname or r["gbps"] is None:
                        continue
                    name = "copy" if r["peer"] in COPIES else r["peer"]
                    if name == line:
                        pts[r["elements"]] = max(pts.get(r["elements"], 0.0), r["gbps"])
                if pts:
                    color, marker, ls = style[line]
                    xs = sorted(pts)
                    ax.plot(xs, [pts[k] for k in xs], color=color, marker=marker, linestyle=ls,
                            label=line)
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
    fig.suptitle(f"leakyops and its peers, each in its own process: GB/s by size, {threads} thread(s)",
                 y=0.995, fontsize=11)
    top = 1 - 0.9 / fig.get_figheight()
    fig.legend(handles, labels, loc="upper center", ncol=max(1, len(labels)), frameon=False,
               bbox_to_anchor=(0.5, top + 0.35 / fig.get_figheight()))
    fig.tight_layout(rect=(0, 0, 1, top))
    fig.savefig(path, dpi=110, format=fmt)
    plt.close(fig)
