"""``leakyops cases``: the vendor's operator test suites, run through the aclnn emulation.

An Ascend operator's system tests are case files beside it in ops-nn: ATK suites (JSON)
and TTK tables (CSV). This package reads them (:mod:`._read`), draws each case's inputs as
the vendor's harness does and runs it through :mod:`leakyops.aclnn` on a SoC profile,
both phases, against the suite's golden computed by the core, under the case's own
precision rule or ``--standard`` (:mod:`._run`, :mod:`._apis`), in this process or in
worker processes (:mod:`._pool`), and reports a table, a summary, JSON and JUnit XML
(:mod:`._report`). ``docs/cases.md`` says how to point it at a checkout of ops-nn.

Exit status: 0 every selected case passes; 1 a case fails or is in error; 2 unusable
input (a malformed file, without ``--keep-going``), before any case runs; 130 Ctrl-C, after
a report of the cases that finished.
"""

from __future__ import annotations

import fnmatch
import json
import sys
import time

from leakyops._cli_io import AtomicFiles, CLIError, Progress, interrupt_answered

from . import _report
from ._pool import run_all
from ._read import Malformed, read_suite
from ._run import PASS, run_case
from ._spec import Case

__all__ = ["command", "read_suite", "run_case"]

INTERRUPTED = 130  # the exit status after Ctrl-C


def _selected(cases: list, patterns) -> list:
    """The cases whose name matches a pattern: shell-style (``*``, ``?``, ``[...]``), or a
    part of the name when the pattern has none of those."""
    if not patterns:
        return cases

    def match(name, pattern):
        return fnmatch.fnmatchcase(name, pattern) if any(ch in pattern for ch in "*?[") else pattern in name
    return [c for c in cases if any(match(c.name, p) for p in patterns)]


def _read(files, standard, keep_going: bool) -> tuple[list, list]:
    """Every case of every file, and the notes on fields not read; a malformed file or case
    is a :class:`CLIError` unless ``keep_going`` (then it is a case in error)."""
    cases, notes = [], []
    for path in files:
        try:
            suite = read_suite(path, standard)
        except Malformed as exc:
            if not keep_going:
                raise CLIError(str(exc)) from None
            cases.append(Case(name=path, file=path, where="file", api="-", error=str(exc)))
            continue
        bad = next((c for c in suite.cases if c.error), None)
        if bad is not None and not keep_going:
            raise CLIError(bad.error)
        cases.extend(suite.cases)
        notes.extend(f"{path}: field {field!r} is not read "
                     f"({f'{n} case(s) have it' if n else 'a column, empty in every row'})"
                     for field, n in suite.unread.items())
    return cases, notes


def _same_names(cases: list) -> list:
    """A line per pair of files that have cases of the same name: such cases draw the same
    inputs (a case's seed is ``--seed`` and its name) and share a name in the reports."""
    first: dict = {}  # name -> the file it was first seen in
    pairs: dict = {}  # (file, file) -> names
    for case in cases:
        if case.error:
            continue
        if case.name in first:
            pairs.setdefault((first[case.name], case.file), []).append(case.name)
        else:
            first[case.name] = case.file
    lines = []
    for (a, b), names in pairs.items():
        if len(names) == 1:
            what = f"case {names[0]} is in both {a} and {b}: the two draw"
        else:
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            what = f"{len(names)} case names ({shown}) are in both {a} and {b}: each pair draws"
        lines.append(f"{what} the same inputs (a case's seed is --seed and its name)")
    return lines


def command(args) -> int:
    """Run ``leakyops cases`` with parsed options (see :func:`leakyops.cli.build_parser`)."""
    if args.jobs < 1:
        raise CLIError(f"--jobs must be at least 1, got {args.jobs}")
    with AtomicFiles() as files:
        # the reports' places are checked (their temporary files created) before any case runs
        targets = [files.reserve(path, opt) for path, opt in ((args.json, "--json"), (args.junit, "--junit"))
                   if path]
        if len(set(targets)) < len(targets):
            raise CLIError("--json and --junit must be different files")
        status = _command(args, files)
    if status == INTERRUPTED:  # once the reports are in place
        print("leakyops cases: interrupted", file=sys.stderr)
    return status


def _command(args, files: AtomicFiles) -> int:
    cases, notes = _read(args.files, args.standard, args.keep_going)
    if not cases:
        raise CLIError("the files hold no case")
    selected = _selected(cases, args.filter)
    if not selected:
        raise CLIError(f"--filter {' '.join(args.filter)} matches none of the {len(cases)} case(s)")
    for note in notes:
        print(f"leakyops cases: note: {note}", file=sys.stderr)
    for warning in _same_names(selected):
        print(f"leakyops cases: warning: {warning}", file=sys.stderr)
    width = min(40, max(len(c.name) for c in selected))
    if args.list:
        files.discard()  # a listing writes no report
        for case in selected:
            print(_report.listing(case, width))
        print(f"{len(selected)} case(s)")
        return 1 if any(c.error for c in selected) else 0
    return _run_selected(args, selected, width, files)


def _run_selected(args, cases: list, width: int, files: AtomicFiles) -> int:
    print(f"leakyops cases: {len(cases)} case(s) from {len(args.files)} file(s); soc {args.soc}, seed {args.seed}"
          f"{', standard ' + args.standard if args.standard else ''}, jobs {args.jobs}")
    print(_report.header(width), flush=True)
    progress = Progress("leakyops cases", sum(c.elements for c in cases), time_left=True)
    results: list = [None] * len(cases)
    t0 = time.perf_counter()

    def on_progress(i, n):
        progress.label = f"{sum(r is not None for r in results)}/{len(cases)} {cases[i].name}"
        progress.advance(n)

    def on_result(i, result):
        results[i] = result
        progress.close()  # the line erased for the row; drawn again with the next advance
        print(_report.row(result, width), flush=True)

    try:
        interrupted = run_all(cases, args.seed, args.jobs, args.soc, on_progress=on_progress, on_result=on_result)
    finally:
        progress.close()
    if interrupted:
        interrupt_answered()  # the report of the cases that finished is still written
    seconds = time.perf_counter() - t0
    failed = [r for r in results if r is not None and r.verdict != PASS]
    if failed:
        print()
        for r in failed:
            print(_report.details(r))
    print(_report.summary(results, len(cases), seconds, interrupted), flush=True)
    meta = {"soc": args.soc, "seed": args.seed, "standard": args.standard or "per case", "jobs": args.jobs,
            "files": list(args.files), "filter": list(args.filter or [])}
    if args.json:
        doc = _report.json_doc(cases, results, meta, seconds, interrupted)
        files.write(args.json, json.dumps(doc, indent=1) + "\n", "--json")
    if args.junit:
        files.write(args.junit, _report.junit_xml(cases, results, seconds, interrupted), "--junit")
    return INTERRUPTED if interrupted else 1 if failed else 0
