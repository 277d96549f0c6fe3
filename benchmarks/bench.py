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
on a 2-core machine (the run of 2026-11-23 in docs/benchmarks.md). Every option is checked
before the first timing, by the checks of ``leakyops bench`` (a bad value, or a size whose
arrays do not fit in the memory available, is one line and exit status 2); so are the --json,
--markdown and --plot paths, and the files are written whole (each to a temporary file beside
it, renamed into place at the end), as ``leakyops bench`` writes them. Exit status 1: nothing
was measured, or leakyops' own process died on a case.

The torch front-end inside a torch program (PyTorch's threads present) is measured by
``benchmarks/torch_modules.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def main(argv=None) -> int:
    from leakyops import _bench
    from leakyops._cli_io import AtomicFiles, CLIError
    from leakyops.cli import (_count_list_arg, _dtype_list_arg, _join_dash_values, _name_list_arg, _Parser,
                              _plot_format, _positive_int_arg, _seconds_arg, _threads_arg, check_measured,
                              check_memory)

    # the checks of `leakyops bench`, and its parser: a bad value is one line and status 2
    ap = _Parser(prog="bench.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="sizes 1e3 … 1e6, two rounds")
    ap.add_argument("--sizes", type=_count_list_arg, default=None,
                    help="comma-separated element counts, whole numbers (e.g. 1e4,1e6)")
    ap.add_argument("--ops", type=_name_list_arg(_bench.OPS), default=_bench.OPS,
                    help="comma-separated operators (default: all five)")
    ap.add_argument("--dtypes", type=_dtype_list_arg, default=_bench.DTYPES,
                    help="comma-separated dtypes (default: float16,bfloat16,float32,float64)")
    ap.add_argument("--peers", type=_name_list_arg(tuple(_bench.PEERS)), default=None,
                    help="comma-separated peers (default: all: " + ",".join(_bench.PEERS) + ")")
    ap.add_argument("--threads", type=_threads_arg, default=None,
                    help="threads per library, 1 to the CPUs this process may use"
                         " (default: leakyops.get_num_threads())")
    ap.add_argument("--rounds", type=_positive_int_arg, default=None, help="rounds of turns (default 3, --quick 2)")
    ap.add_argument("--min-time", type=_seconds_arg, default=None, help="seconds per case and round")
    ap.add_argument("--json", help="write the records to this file")
    ap.add_argument("--plot", help="write a chart of GB/s by size (needs matplotlib)")
    ap.add_argument("--markdown", help="also write the table as Markdown to this file")
    ap.add_argument("--from-json", help="no timing: print (and convert) the records of an earlier run")
    args = ap.parse_args(_join_dash_values(list(sys.argv[1:] if argv is None else argv)))

    sizes = args.sizes or (_bench.QUICK_SIZES if args.quick else _bench.DEFAULT_SIZES)
    try:
        if not args.from_json:
            check_memory("--sizes", max(_bench.case(op, dt, n)["bytes"]
                                        for op in args.ops for dt in args.dtypes for n in sizes))
        fmt = _plot_format(args.plot) if args.plot else None
        with AtomicFiles() as files:  # every file written whole, all renamed into place at the end
            for path, option in ((args.json, "--json"), (args.markdown, "--markdown"), (args.plot, "--plot")):
                if path:
                    files.reserve(path, option)  # an unwritable path fails before the first timing
            if args.from_json:
                try:
                    with open(args.from_json) as fh:
                        doc = json.load(fh)
                    records = doc["records"]
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    raise CLIError(f"--from-json {args.from_json}: not the JSON of a run"
                                   f" ({type(exc).__name__}: {exc})") from None
            else:
                records = _bench.run(ops=args.ops, dtypes=args.dtypes, sizes=sizes, quick=args.quick,
                                     threads=args.threads, min_time=args.min_time, rounds=args.rounds,
                                     peers=args.peers, log=print)
                check_measured(records)
                doc = _bench.to_json(records)
            print(f"# {doc['date']} · {doc['cpu']} · {doc['cpus']} CPUs · Python {doc['python']} · "
                  f"numpy {doc['numpy']}")
            print(_bench.format_table(records, doc.get("tier")))
            print(_bench.summary(records))
            if args.json:
                files.write(args.json, json.dumps(doc, indent=1), "--json")
            if args.markdown:
                files.write(args.markdown, _bench.format_markdown(records) + "\n", "--markdown")
            if args.plot:
                with files.open(args.plot, "--plot") as fh:
                    _bench.plot(records, fh, fmt=fmt)
        died = "" if args.from_json else _bench.own_deaths(records)
        if died:  # the table and the files say where
            raise CLIError(died, status=1)
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
