"""The reports of a run: the table, the summary, and the texts of ``--json`` and ``--junit``.

The command writes the files whole, through :class:`leakyops._cli_io.AtomicFiles`, and draws
its progress line with :class:`leakyops._cli_io.Progress`.
"""

from __future__ import annotations

import math
import socket
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

from leakyops._verify import json_number

from ._run import ERROR, FAIL, PASS, CaseResult
from ._spec import Case

FORMAT = "leakyops-cases/1"

_COLUMNS = (("case", 28), ("api", 22), ("dtype", 9), ("shape", 24), ("status", 7), ("verdict", 7),
            ("worst err", 10), ("time", 8))


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "~"


def _shape(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _err(value) -> str:
    if value is None:
        return "-"
    if math.isnan(value):
        return "nan"
    return "inf" if math.isinf(value) else "0" if value == 0 else f"{value:.3g}"


def header(name_width: int) -> str:
    widths = dict(_COLUMNS, case=name_width)
    return "  ".join(title.ljust(widths[title]) for title, _ in _COLUMNS).rstrip()


def row(result: CaseResult, name_width: int) -> str:
    case = result.case
    first = case.first_input
    cells = {
        "case": case.name, "api": case.api,
        "dtype": first.dtype if first else "-", "shape": _shape(first.shape) if first else "-",
        "status": "-" if result.status is None else str(result.status), "verdict": result.verdict,
        "worst err": _err(result.worst), "time": f"{result.seconds:.2f}s",
    }
    widths = dict(_COLUMNS, case=name_width)
    return "  ".join(_fit(cells[title], widths[title]).ljust(widths[title]) for title, _ in _COLUMNS).rstrip()


def listing(case: Case, name_width: int) -> str:
    """One line of ``--list``: name, API, each tensor, the standard, where it is."""
    if case.error:
        return f"{case.name.ljust(name_width)}  ERROR  {case.error}"
    tensors = " ".join(f"{t.param}:{t.dtype}{_shape(t.shape)}" + (f"={t.dist.text}" if t.dist else "")
                       for t in case.tensors)
    values = " ".join(f"{v.param}:{v.dtype}={v.dist.text}" for v in case.values)
    stds = sorted({s.describe() for _, s in case.standards})
    return (f"{case.name.ljust(name_width)}  {case.api}  {tensors}{' ' + values if values else ''}"
            f"  [{'; '.join(stds)}]  ({case.file} {case.where})")


def counts(results) -> dict:
    done = [r for r in results if r is not None]
    return {v.lower(): sum(r.verdict == v for r in done) for v in (PASS, FAIL, ERROR)} | {"run": len(done)}


def summary(results, total: int, seconds: float, interrupted: bool) -> str:
    c = counts(results)
    text = (f"{c['run']} of {total} case(s) run: {c['pass']} passed, {c['fail']} failed, {c['error']} error(s)"
            f" in {seconds:.1f} s")
    return ("interrupted: " if interrupted else "summary: ") + text


def details(result: CaseResult) -> str:
    """The line that says why a case did not pass."""
    case = result.case
    status = f"aclnn status {result.status}: " if result.status else ""
    return f"{case.name} ({case.file} {case.where}): {result.verdict}: {status}{result.message}"


# --------------------------------------------------------------------------- files


def case_doc(case: Case, result: CaseResult | None) -> dict:
    doc = {
        "name": case.name, "file": case.file, "where": case.where, "api": case.api,
        "verdict": result.verdict if result else "NOT RUN",
        "status": result.status if result else None,
        "message": result.message if result else "",
        "seconds": round(result.seconds, 6) if result else None,
        "tensors": [{"param": t.param, "label": t.label, "dtype": t.dtype, "shape": list(t.shape), "format": t.fmt,
                     "range": t.dist.text if t.dist else None} for t in case.tensors],
        "values": [{"param": v.param, "label": v.label, "kind": v.kind, "dtype": v.dtype, "range": v.dist.text}
                   for v in case.values],
        "standards": [{"output": p, "standard": s.name, "options": dict(s.options), "source": s.source}
                      for p, s in case.standards],
        "notes": list(case.notes),
        "outputs": [],
    }
    if result is not None:
        drawn = dict(result.values)
        for v in doc["values"]:
            v["value"] = json_number(drawn.get(v["param"]))
        doc["outputs"] = [{"output": p, **c.to_dict()} for p, c in result.comparisons]
    return doc


def json_doc(cases, results, meta: dict, seconds: float, interrupted: bool) -> dict:
    return {"format": FORMAT, **meta, "interrupted": interrupted, "seconds": round(seconds, 3),
            "summary": counts(results) | {"selected": len(cases)},
            "cases": [case_doc(c, r) for c, r in zip(cases, results)]}


def junit_xml(cases, results, seconds: float, interrupted: bool) -> str:
    """JUnit XML: a ``testsuite`` per file, a ``testcase`` per case; a failed case has a
    ``failure``, an error an ``error``, a case an interrupt stopped ``skipped``."""
    root = ET.Element("testsuites", name="leakyops cases", time=f"{seconds:.3f}")
    suites: dict = {}
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    for case, result in zip(cases, results):
        suite = suites.get(case.file)
        if suite is None:
            suite = suites[case.file] = ET.SubElement(root, "testsuite", name=case.file, timestamp=stamp,
                                                      hostname=socket.gethostname())
        tc = ET.SubElement(suite, "testcase", classname=Path(case.file).stem, name=case.name,
                           time=f"{result.seconds:.3f}" if result else "0")
        if result is None:
            ET.SubElement(tc, "skipped", message="not run: interrupted" if interrupted else "not run")
        elif result.verdict != PASS:
            tag = "failure" if result.verdict == FAIL else "error"
            el = ET.SubElement(tc, tag, message=details(result), type=result.verdict)
            el.text = "\n".join(ln for _, c in result.comparisons for ln in c.report_lines()) or details(result)
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites.values():
        n = {"tests": len(suite), "failures": len(suite.findall("testcase/failure")),
             "errors": len(suite.findall("testcase/error")), "skipped": len(suite.findall("testcase/skipped"))}
        t = sum(float(tc.get("time", 0)) for tc in suite)
        for k, v in n.items():
            suite.set(k, str(v))
            total[k] += v
        suite.set("time", f"{t:.3f}")
    for k, v in total.items():
        root.set(k, str(v))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
