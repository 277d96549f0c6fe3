"""Precision standards for checking a device's output against golden data.

This module is the metric side of ``leakyops verify`` (and of ``leakyops demo``): it compares
two arrays element by element and decides whether a standard passes. It does no operator
arithmetic; the errors it computes (``|actual - golden|`` and relative errors, in float64)
are measurements.

The standards, and where they come from (details and links in ``docs/cli.md``):

``exact``
    Bitwise equality; any NaN equals any NaN, ``+0.0`` differs from ``-0.0``. What a port of a
    bit-exact reference (PyTorch on the CPU, this library) must reach.
``double-thousandth``
    Ascend's "double thousandth" (双千分之一) standard, as used by the CANN sample
    ``verify_result.py`` scripts and operator requirement documents: every element satisfies
    ``|a - g| <= atol + rtol * |g|``, with ``rtol = atol = 1e-3`` for float16/bfloat16 and
    ``1e-4`` ("double ten-thousandth", 双万分之一) for float32 (and float64). NaN matches NaN,
    infinities must match exactly.
``ratio``
    The precision standard of the msOpST operator test tool (``msopst run -err_thr
    "[threshold1,threshold2]"``, default ``[0.01, 0.05]``): an element is an error when its
    relative error ``|a - g| / |g|`` (the absolute error where ``g == 0``) exceeds
    ``threshold1``; the standard passes when the share of error elements is below
    ``threshold2``.
``relative-error``
    The MERE/MARE benchmark standard of Ascend's operator test kit (ATK ``single_bm``): with
    ``r = |a - g| / (|g| + 1e-7)`` over the finite golden elements, the mean relative error
    (MERE) must be below ``t`` and the maximum (MARE) below ``10 t``, ``t = 2**-10`` for
    float16, ``2**-7`` for bfloat16, ``2**-13`` for float32 (and float64). NaN/inf positions
    must match exactly.
"""

from __future__ import annotations

import dataclasses
import math

import ml_dtypes
import numpy as np

__all__ = [
    "STANDARDS",
    "Comparison",
    "compare",
    "double_thousandth_tol",
    "dtype_name",
    "relative_error_threshold",
]

STANDARDS = ("exact", "double-thousandth", "ratio", "relative-error")

#: Default thresholds of the ratio standard: msOpST's ``-err_thr`` default ``[0.01, 0.05]``.
RATIO_DEFAULT = (0.01, 0.05)

#: The ``eps`` of the relative-error standard's denominator (ATK / Ascend precision skill).
REL_EPS = 1e-7

#: How many of the worst elements a report lists.
WORST = 10

_BF16 = np.dtype(ml_dtypes.bfloat16)


def dtype_name(dtype) -> str:
    """The name of a supported float dtype: ``float16``, ``bfloat16``, ``float32``, ``float64``."""
    dtype = np.dtype(dtype)
    if dtype == _BF16:
        return "bfloat16"
    return dtype.name


def double_thousandth_tol(dtype) -> float:
    """``rtol`` (= ``atol``) of the double-thousandth standard for ``dtype``."""
    return 1e-3 if dtype_name(dtype) in ("float16", "bfloat16") else 1e-4


def relative_error_threshold(dtype) -> float:
    """The MERE threshold ``t`` of the relative-error standard (MARE must stay under ``10 t``)."""
    return {"float16": 2.0**-10, "bfloat16": 2.0**-7}.get(dtype_name(dtype), 2.0**-13)


@dataclasses.dataclass
class Comparison:
    """The outcome of comparing one actual array with its golden array."""

    standard: str
    dtype: str
    shape: tuple
    passed: bool
    criterion: str  # the rule, with its numbers, in words
    elements: int
    over: int  # elements over the per-element tolerance of the standard
    max_abs: float
    max_abs_index: tuple | None
    max_rel: float
    max_rel_index: tuple | None
    nan_golden_only: int  # golden NaN, actual not
    nan_actual_only: int  # actual NaN, golden not
    inf_mismatch: int  # one side infinite and the two not equal (NaN excluded)
    worst: list  # [(index, golden, actual, abs_err, rel_err)]
    details: dict  # standard-specific numbers (mere, mare, ratio, thresholds)

    @property
    def over_fraction(self) -> float:
        return self.over / self.elements if self.elements else 0.0

    def report_lines(self) -> list[str]:
        """The human-readable report, one string per line (no trailing newlines)."""
        lines = [
            f"  rule                 {self.criterion}",
            f"  elements compared    {self.elements}",
            f"  over tolerance       {self.over} ({100.0 * self.over_fraction:.4g}%)",
            f"  max abs error        {_fmt(self.max_abs)}{_at(self.max_abs_index if self.max_abs else None)}",
            f"  max rel error        {_fmt(self.max_rel)}{_at(self.max_rel_index if self.max_rel else None)}",
        ]
        for key, value in self.details.items():
            lines.append(f"  {key:<20} {_fmt(value) if isinstance(value, float) else value}")
        lines.append(
            f"  NaN mismatches       {self.nan_golden_only + self.nan_actual_only}"
            f" (golden NaN, actual not: {self.nan_golden_only};"
            f" actual NaN, golden not: {self.nan_actual_only})"
        )
        lines.append(f"  inf mismatches       {self.inf_mismatch}")
        if self.worst:
            lines.append(f"  worst elements ({len(self.worst)} of {self.over} over tolerance):")
            lines.append(f"    {'index':<18} {'golden':>16} {'actual':>16} {'abs err':>12} {'rel err':>12}")
            for index, g, a, ae, re in self.worst:
                lines.append(
                    f"    {_idx(index):<18} {_fmt(g):>16} {_fmt(a):>16} {_fmt(ae):>12} {_fmt(re):>12}"
                )
        lines.append(f"  result               {'PASS' if self.passed else 'FAIL'}")
        return lines

    def to_dict(self) -> dict:
        """A JSON-serialisable form of the comparison."""
        out = dataclasses.asdict(self)
        out["shape"] = list(self.shape)
        out["over_fraction"] = self.over_fraction
        out["max_abs_index"] = None if self.max_abs_index is None else list(self.max_abs_index)
        out["max_rel_index"] = None if self.max_rel_index is None else list(self.max_rel_index)
        out["worst"] = [
            {"index": list(i), "golden": _num(g), "actual": _num(a), "abs_err": _num(ae), "rel_err": _num(re)}
            for i, g, a, ae, re in self.worst
        ]
        out["max_abs"] = _num(self.max_abs)
        out["max_rel"] = _num(self.max_rel)
        out["details"] = {k: (_num(v) if isinstance(v, float) else v) for k, v in self.details.items()}
        return out


def _num(value):
    """JSON has no NaN/inf: write them as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def _fmt(value) -> str:
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0.0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    return format(value, ".9g")


def _idx(index) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _at(index) -> str:
    return "" if index is None else f" at {_idx(index)}"


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def compare(actual, golden, standard: str = "exact", *, ratio_thresholds=RATIO_DEFAULT) -> Comparison:
    """Compare ``actual`` with ``golden`` under ``standard``.

    Both arrays must have the same number of elements and the same float dtype (the caller
    checks and reports that); ``actual`` is read in ``golden``'s shape. Errors are measured in
    float64.
    """
    if standard not in STANDARDS:
        raise ValueError(f"unknown standard {standard!r}; choose one of {', '.join(STANDARDS)}")
    golden = np.ascontiguousarray(golden)
    actual = np.ascontiguousarray(actual).reshape(golden.shape)
    if actual.dtype != golden.dtype:
        raise ValueError(f"dtype mismatch: actual {dtype_name(actual.dtype)}, golden {dtype_name(golden.dtype)}")
    shape = golden.shape
    n = golden.size
    g = golden.reshape(-1).astype(np.float64)
    a = actual.reshape(-1).astype(np.float64)

    nan_g = np.isnan(g)
    nan_a = np.isnan(a)
    equal = (a == g) | (nan_g & nan_a)
    finite_both = np.isfinite(g) & np.isfinite(a)
    nonfinite_mismatch = ~equal & ~finite_both
    inf_mismatch = nonfinite_mismatch & ~nan_g & ~nan_a

    with np.errstate(all="ignore"):
        abs_err = np.where(equal, 0.0, np.abs(a - g))
        abs_err[nonfinite_mismatch] = np.inf
        ag = np.abs(g)
        # per-element relative error |a-g|/|g| (|a-g| where g == 0), as printed by the vendor
        # sample scripts and used by the ratio standard
        rel_err = np.where(ag > 0, abs_err / np.where(ag > 0, ag, 1.0), abs_err)
        rel_err[equal] = 0.0
        rel_err[nonfinite_mismatch] = np.inf

    details: dict = {}
    if standard == "exact":
        gb = _bits(golden.reshape(-1))
        ab = _bits(actual.reshape(-1))
        bad = ~((gb == ab) | (nan_g & nan_a))
        passed = not bad.any()
        criterion = "bitwise equal (any NaN equals any NaN; +0 and -0 differ)"
        score = np.where(bad, np.maximum(abs_err, 1e-300), 0.0)
        # +0 vs -0 has abs error 0 but is a mismatch: still list it
    elif standard == "double-thousandth":
        tol = double_thousandth_tol(golden.dtype)
        with np.errstate(all="ignore"):
            limit = tol + tol * ag
            bad = ~equal & ~(finite_both & (abs_err <= limit))
            score = np.where(bad, abs_err / np.where(np.isfinite(limit), limit, 1.0), 0.0)
        passed = not bad.any()
        criterion = f"every element |a-g| <= atol + rtol*|g|, rtol = atol = {tol:g} ({dtype_name(golden.dtype)})"
    elif standard == "ratio":
        t1, t2 = (float(v) for v in ratio_thresholds)
        bad = rel_err > t1
        frac = float(bad.sum()) / n if n else 0.0
        passed = frac < t2 if n else True
        score = np.where(bad, rel_err, 0.0)
        criterion = (
            f"share of elements with relative error > {t1:g} must be < {t2:g}"
            " (relative error |a-g|/|g|, |a-g| where g == 0)"
        )
        details = {"error ratio": frac, "threshold1": t1, "threshold2": t2}
    else:  # relative-error
        t = relative_error_threshold(golden.dtype)
        fin_g = np.isfinite(g)
        with np.errstate(all="ignore"):
            r = np.abs(a - g) / (ag + REL_EPS)
        r = np.where(equal, 0.0, r)
        r_fin = r[fin_g]
        mere = float(r_fin.mean()) if r_fin.size else 0.0
        mare = float(r_fin.max()) if r_fin.size else 0.0
        if math.isnan(mere):  # a NaN actual where golden is finite
            mere = mare = math.inf
        mismatches = int(nonfinite_mismatch.sum())
        passed = mismatches == 0 and mere < t and mare < 10 * t
        with np.errstate(invalid="ignore"):
            bad = (np.where(fin_g, r, 0.0) > t) | nonfinite_mismatch
        bad = bad | (fin_g & np.isnan(r))
        score = np.where(bad, np.where(np.isnan(r) | ~fin_g, np.inf, r), 0.0)
        criterion = (
            f"MERE < {t:g} and MARE < {10 * t:g} ({dtype_name(golden.dtype)}; r = |a-g|/(|g|+1e-7)"
            " over finite golden elements; NaN/inf positions must match)"
        )
        details = {"MERE": mere, "MARE": mare, "MERE limit": t, "MARE limit": 10 * t}

    over = int(bad.sum())
    if n:
        i_abs = int(np.argmax(abs_err))
        i_rel = int(np.argmax(rel_err))
        max_abs = float(abs_err[i_abs])
        max_rel = float(rel_err[i_rel])
        max_abs_index = tuple(int(v) for v in np.unravel_index(i_abs, shape)) if shape else ()
        max_rel_index = tuple(int(v) for v in np.unravel_index(i_rel, shape)) if shape else ()
    else:
        max_abs = max_rel = 0.0
        max_abs_index = max_rel_index = None

    worst = []
    if over:
        k = min(WORST, over)
        cand = np.flatnonzero(bad)
        order = np.argsort(-score[cand], kind="stable")[:k]
        for flat in cand[order]:
            index = tuple(int(v) for v in np.unravel_index(int(flat), shape)) if shape else ()
            worst.append((index, float(g[flat]), float(a[flat]), float(abs_err[flat]), float(rel_err[flat])))

    return Comparison(
        standard=standard,
        dtype=dtype_name(golden.dtype),
        shape=tuple(shape),
        passed=bool(passed),
        criterion=criterion,
        elements=int(n),
        over=over,
        max_abs=max_abs,
        max_abs_index=max_abs_index,
        max_rel=max_rel,
        max_rel_index=max_rel_index,
        nan_golden_only=int((nan_g & ~nan_a).sum()),
        nan_actual_only=int((nan_a & ~nan_g).sum()),
        inf_mismatch=int(inf_mismatch.sum()),
        worst=worst,
        details=details,
    )
