"""The project benchmark: every operator x dtype x size against its peers, each in its own process.

    python benchmarks/bench.py                  # 1e3 … 6.4e7 elements, 3 rounds
    python benchmarks/bench.py --quick          # 1e3 … 1e6, 2 rounds
    python benchmarks/bench.py --json out.json --plot out.png

Peers: PyTorch (aten ops, ``out=`` where they exist), the real oneDNN primitives (eltwise ReLU
with alpha forward and backward, PReLU forward and backward), ONNX Runtime (LeakyRelu,
PRelu with IO binding) and copies of the same bytes (the ceiling: the fastest of NumPy's,
PyTorch's and leakyops' own threaded copy). Every library runs in a process of its own and
the processes take turns (see ``leakyops._bench``); a peer that is missing or has no kernel
for a case on this CPU is skipped with one line saying why. A full run takes about 45 minutes
on a 2-core machine (the run of 2026-11-23 in docs/benchmarks.md). The --json, --markdown and
--plot paths are checked before the first timing, and the files are written whole (each to a
temporary file beside it, renamed into place at the end), as ``leakyops bench`` writes them.

The torch front-end inside a torch program (PyTorch's threads present) is measured by
``benchmarks/torch_modules.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="sizes 1e3 … 1e6, two rounds")
    ap.add_argument("--sizes", help="comma-separated element counts (e.g. 1e4,1e6)")
    ap.add_argument("--ops", help="comma-separated operators (default: all five)")
    ap.add_argument("--dtypes", help="comma-separated dtypes (default: float16,bfloat16,float32,float64)")
    ap.add_argument("--peers", help="comma-separated peers (default: all)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads per library (default: leakyops.get_num_threads())")
    ap.add_argument("--rounds", type=int, default=None, help="rounds of turns (default 3, --quick 2)")
    ap.add_argument("--min-time", type=float, default=None, help="seconds per case and round")
    ap.add_argument("--json", help="write the records to this file")
    ap.add_argument("--plot", help="write a chart of GB/s by size (needs matplotlib)")
    ap.add_argument("--markdown", help="also write the table as Markdown to this file")
    ap.add_argument("--from-json", help="no timing: print (and convert) the records of an earlier run")
    args = ap.parse_args(argv)

    from leakyops import _bench
    from leakyops._cli_io import AtomicFiles, CLIError
    from leakyops.cli import _plot_format

    def names(text, default):
        return tuple(t.strip() for t in text.split(",")) if text else default

    sizes = tuple(int(float(v)) for v in args.sizes.split(",")) if args.sizes else None
    try:
        fmt = _plot_format(args.plot) if args.plot else None
        with AtomicFiles() as files:  # every file written whole, all renamed into place at the end
            for path, option in ((args.json, "--json"), (args.markdown, "--markdown"), (args.plot, "--plot")):
                if path:
                    files.reserve(path, option)  # an unwritable path fails before the first timing
            if args.from_json:
                with open(args.from_json) as fh:
                    doc = json.load(fh)
                records = doc["records"]
            else:
                records = _bench.run(ops=names(args.ops, _bench.OPS), dtypes=names(args.dtypes, _bench.DTYPES),
                                     sizes=sizes, quick=args.quick, threads=args.threads,
                                     min_time=args.min_time, rounds=args.rounds,
                                     peers=names(args.peers, None), log=print)
                doc = _bench.to_json(records)
            print(f"# {doc['date']} · {doc['cpu']} · {doc['cpus']} CPUs · Python {doc['python']} · "
                  f"numpy {doc['numpy']}")
            print(_bench.format_table(records))
            print(_bench.summary(records))
            if args.json:
                files.write(args.json, json.dumps(doc, indent=1), "--json")
            if args.markdown:
                files.write(args.markdown, _bench.format_markdown(records) + "\n", "--markdown")
            if args.plot:
                with files.open(args.plot, "--plot") as fh:
                    _bench.plot(records, fh, fmt=fmt)
    except CLIError as exc:
        print(f"bench.py: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:  # the files keep what they held
        print("bench.py: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
