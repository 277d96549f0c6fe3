"""The reports of a run: the table, the summary, ``--json``, ``--junit``, the progress bar.

Report files are written whole: into a temporary file beside the target, flushed and
synced, then renamed over it, so an interrupted run leaves the old file or the new one.
"""

from __future__ import annotations

import math
import os
import socket
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

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


def _num(value):
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


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
            v["value"] = _num(drawn.get(v["param"]))
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


def check_writable(path: str, option: str) -> str | None:
    """Why ``path`` cannot be written (``None``: it can), checked before any work."""
    p = Path(path)
    if p.is_dir():
        return f"{option} {path}: is a directory"
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        return f"cannot write {option} {path}: no such directory {parent}"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot write {option} {path}: permission denied"
    return None


def write_whole(path: str, text: str) -> None:
    """Write ``text`` to ``path`` whole: a temporary file beside it, flushed, synced, renamed."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent if str(target.parent) else ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# --------------------------------------------------------------------------- progress


class Bar:
    """A progress bar on stderr, only when it is a terminal: cases done, the case running,
    the share of the work (elements) done and an ETA from the rate so far."""

    def __init__(self, total_elements: int, total_cases: int, stream=None):
        self.stream = sys.stderr if stream is None else stream
        try:
            self.enabled = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self.enabled = False
        self.total, self.cases = max(total_elements, 1), total_cases
        self.done = self.cases_done = 0
        self.current = ""
        self.t0 = time.monotonic()
        self.drawn_at = -math.inf
        self.width = 0

    def advance(self, elements: int, case: str = "") -> None:
        self.done += elements
        self.current = case or self.current
        self.draw()

    def case_done(self) -> None:
        self.cases_done += 1
        self.draw(force=True)

    def draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.drawn_at < 0.2:
            return
        self.drawn_at = now
        share = min(1.0, self.done / self.total)
        elapsed = now - self.t0
        eta = "ETA " + _duration(elapsed * (1 - share) / share) if share > 0 else "ETA --"
        filled = int(share * 20)
        text = (f"[{'#' * filled}{'.' * (20 - filled)}] {self.cases_done}/{self.cases} {_fit(self.current, 32)}"
                f" {100 * share:3.0f}% {eta}")
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def clear(self) -> None:
        """Erase the bar (before a line of the report is printed)."""
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
