"""Precision standards for checking a device's output against golden data.

This module is the metric side of ``leakyops verify`` (and of ``leakyops demo``): it compares
two arrays element by element and decides whether a standard passes. It does no operator
arithmetic; the errors it computes (``|actual - golden|`` and relative errors, in float64)
are measurements.

The comparison streams: :class:`Comparer` takes the data in consecutive flat chunks (C
order) and keeps only running figures (counts, maxima, the worst elements), so checking a
file needs memory for one chunk, not for the whole output. :func:`compare` is the one-call
form for arrays in memory; both give the same :class:`Comparison`.

The standards, and where they come from (details and links in ``docs/cli.md``):

``exact``
    Bitwise equality; any NaN equals any NaN, ``+0.0`` differs from ``-0.0``. What a port of a
    bit-exact reference (PyTorch on the CPU, this library) must reach. When the actual data
    has another dtype than the golden (``verify --actual-dtype``), both are widened to a
    common type, which is exact, and compared bit for bit there.
``double-thousandth``
    The rule of the Ascend C sample scripts (``verify_result.py`` in the public
    ``cannmirror/asc-devkit`` examples): an element fails when
    ``np.isclose(actual, golden, rtol, atol, equal_nan=True)`` is false, i.e. when
    ``|a - g| > atol + rtol * |g|`` (NaN equals NaN; an infinity equals only itself), and the
    output passes when the share of failing elements is at most the error ratio ``E``.
    Defaults: float32 ``rtol = 1e-4, atol = 1e-5, E = 1e-4``; float16 and bfloat16
    ``rtol = 1e-3, atol = 1e-5, E = 1e-3``, computed in float32 (the samples cast bfloat16 to
    float32 before ``np.isclose``); float64 takes float32's numbers, computed in float64.
    The element test is done in that compute type, the way ``np.isclose`` does it on arrays
    of that type, so the verdict is the sample's to the last bit.
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
    "Comparer",
    "Comparison",
    "compare",
    "double_thousandth_defaults",
    "dtype_name",
    "json_number",
    "relative_error_threshold",
]

STANDARDS = ("exact", "double-thousandth", "ratio", "relative-error")

#: Default thresholds of the ratio standard: msOpST's ``-err_thr`` default ``[0.01, 0.05]``.
RATIO_DEFAULT = (0.01, 0.05)

#: The ``eps`` of the relative-error standard's denominator (ATK / Ascend precision skill).
REL_EPS = 1e-7

#: How many of the worst elements a report lists.
WORST = 10

#: Elements per chunk of :func:`compare` (and of the command's file reading).
CHUNK = 1 << 20

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def dtype_name(dtype) -> str:
    """The name of a supported float dtype: ``float16``, ``bfloat16``, ``float32``, ``float64``."""
    dtype = np.dtype(dtype)
    if dtype == _BF16:
        return "bfloat16"
    return dtype.name


def double_thousandth_defaults(dtype) -> tuple[float, float, float]:
    """``(rtol, atol, error_ratio)`` of the double-thousandth standard for a golden ``dtype``.

    >>> double_thousandth_defaults("float16")
    (0.001, 1e-05, 0.001)
    >>> double_thousandth_defaults("float32")
    (0.0001, 1e-05, 0.0001)
    """
    if dtype_name(dtype) in ("float16", "bfloat16"):
        return 1e-3, 1e-5, 1e-3
    return 1e-4, 1e-5, 1e-4


def relative_error_threshold(dtype) -> float:
    """The MERE threshold ``t`` of the relative-error standard (MARE must stay under ``10 t``)."""
    return {"float16": 2.0**-10, "bfloat16": 2.0**-7}.get(dtype_name(dtype), 2.0**-13)


def _close_dtype(golden: np.dtype, actual: np.dtype) -> np.dtype:
    """The type the double-thousandth element test runs in: float32, or float64 if either is."""
    return _F64 if _F64 in (golden, actual) else _F32


def _exact_dtype(golden: np.dtype, actual: np.dtype) -> np.dtype:
    """A type both convert to exactly, for a bitwise comparison of two dtypes."""
    if golden == actual:
        return golden
    return _F64 if _F64 in (golden, actual) else _F32


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
    actual_dtype: str = ""  # the actual data's dtype, when it differs from the golden's

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
            {"index": list(i), "golden": json_number(g), "actual": json_number(a), "abs_err": json_number(ae),
             "rel_err": json_number(re)}
            for i, g, a, ae, re in self.worst
        ]
        out["max_abs"] = json_number(self.max_abs)
        out["max_rel"] = json_number(self.max_rel)
        out["details"] = {k: (json_number(v) if isinstance(v, float) else v) for k, v in self.details.items()}
        return out


def json_number(value):
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


def _check_number(name: str, value, upper: float | None = None) -> float:
    value = float(value)
    if not math.isfinite(value) or value < 0 or (upper is not None and value > upper):
        bound = f" and at most {upper:g}" if upper is not None else ""
        raise ValueError(f"{name} must be a finite number >= 0{bound}, got {value!r}")
    return value


class Comparer:
    """Compare an actual output with its golden output, chunk by chunk.

    ``golden_dtype`` and ``shape`` are the golden's; ``actual_dtype`` is the actual data's
    (default: the golden's). Feed consecutive flat chunks of both, in C order, to
    :meth:`update` (the two chunks of one call have the same length); :meth:`result` gives
    the :class:`Comparison`. Thresholds: ``ratio_thresholds`` for ``ratio``; ``rtol``,
    ``atol`` and ``error_ratio`` for ``double-thousandth`` (``None``: the dtype's default).
    """

    def __init__(self, standard: str, golden_dtype, shape, *, actual_dtype=None,
                 ratio_thresholds=RATIO_DEFAULT, rtol=None, atol=None, error_ratio=None):
        if standard not in STANDARDS:
            raise ValueError(f"unknown standard {standard!r}; choose one of {', '.join(STANDARDS)}")
        self.standard = standard
        self.golden_dtype = np.dtype(golden_dtype)
        self.actual_dtype = self.golden_dtype if actual_dtype is None else np.dtype(actual_dtype)
        self.shape = tuple(int(d) for d in shape)
        self.n = math.prod(self.shape)
        self.seen = 0
        self.over = 0
        self.max_abs, self.max_abs_at = 0.0, 0
        self.max_rel, self.max_rel_at = 0.0, 0
        self.nan_g_only = self.nan_a_only = self.inf_mismatch = 0
        self.nonfinite_mismatch = 0
        self.worst: list = []  # (flat index, score, golden, actual, abs err, rel err)
        # relative-error: sum, count and maximum of r over the finite golden elements
        self.r_sum, self.r_count, self.r_max, self.r_nan = 0.0, 0, 0.0, False
        if standard == "double-thousandth":
            d_rtol, d_atol, d_ratio = double_thousandth_defaults(self.golden_dtype)
            self.rtol = d_rtol if rtol is None else _check_number("rtol", rtol)
            self.atol = d_atol if atol is None else _check_number("atol", atol)
            self.error_ratio = d_ratio if error_ratio is None else _check_number("error ratio", error_ratio, 1.0)
            self.defaults = (rtol, atol, error_ratio) == (None, None, None)
            self.close_dtype = _close_dtype(self.golden_dtype, self.actual_dtype)
        elif standard == "ratio":
            self.t1, self.t2 = (float(v) for v in ratio_thresholds)

    # ------------------------------------------------------------------ one chunk

    def update(self, actual, golden) -> None:
        """Take the next chunk of both arrays (flattened in C order)."""
        a_raw = np.asarray(actual).reshape(-1)
        g_raw = np.asarray(golden).reshape(-1)
        if a_raw.size != g_raw.size:
            raise ValueError(f"chunk sizes differ: actual {a_raw.size}, golden {g_raw.size}")
        if a_raw.dtype != self.actual_dtype or g_raw.dtype != self.golden_dtype:
            raise ValueError(
                f"dtype mismatch: actual {dtype_name(a_raw.dtype)} (declared {dtype_name(self.actual_dtype)}),"
                f" golden {dtype_name(g_raw.dtype)} (declared {dtype_name(self.golden_dtype)})"
            )
        offset = self.seen
        if offset + g_raw.size > self.n:
            raise ValueError(f"more than {self.n} elements given")
        self.seen += g_raw.size
        if not g_raw.size:
            return
        if a_raw.dtype == g_raw.dtype and np.array_equal(_bits(a_raw), _bits(g_raw)):
            # equal to the bit: no error and nothing over any tolerance; only the count of
            # finite golden elements (MERE's denominator) moves
            if self.standard == "relative-error":
                self.r_count += int(np.count_nonzero(np.isfinite(g_raw)))
            return
        g = g_raw.astype(np.float64)
        a = a_raw.astype(np.float64)
        nan_g = np.isnan(g)
        nan_a = np.isnan(a)
        equal = (a == g) | (nan_g & nan_a)
        nonfinite_mismatch = ~equal & ~(np.isfinite(g) & np.isfinite(a))
        self.nan_g_only += int(np.count_nonzero(nan_g & ~nan_a))
        self.nan_a_only += int(np.count_nonzero(nan_a & ~nan_g))
        self.inf_mismatch += int(np.count_nonzero(nonfinite_mismatch & ~nan_g & ~nan_a))
        self.nonfinite_mismatch += int(np.count_nonzero(nonfinite_mismatch))

        with np.errstate(all="ignore"):
            abs_err = np.abs(a - g)
            abs_err[equal] = 0.0
            abs_err[nonfinite_mismatch] = np.inf
            ag = np.abs(g)
            # per-element relative error |a-g|/|g| (|a-g| where g == 0), as printed by the vendor
            # sample scripts and used by the ratio standard
            rel_err = np.where(ag > 0, abs_err / np.where(ag > 0, ag, 1.0), abs_err)
            rel_err[nonfinite_mismatch] = np.inf

        bad, score = getattr(self, "_" + self.standard.replace("-", "_"))(a_raw, g_raw, g, a, ag, equal,
                                                                           nonfinite_mismatch, abs_err, rel_err)
        self.over += int(np.count_nonzero(bad))
        i = int(np.argmax(abs_err))
        if abs_err[i] > self.max_abs:
            self.max_abs, self.max_abs_at = float(abs_err[i]), offset + i
        i = int(np.argmax(rel_err))
        if rel_err[i] > self.max_rel:
            self.max_rel, self.max_rel_at = float(rel_err[i]), offset + i
        self._keep_worst(bad, score, offset, g, a, abs_err, rel_err)

    def _exact(self, a_raw, g_raw, g, a, ag, equal, nonfinite_mismatch, abs_err, rel_err):
        wide = _exact_dtype(self.golden_dtype, self.actual_dtype)
        ga = g_raw if g_raw.dtype == wide else g_raw.astype(wide)
        aa = a_raw if a_raw.dtype == wide else a_raw.astype(wide)
        bad = ~((_bits(ga) == _bits(aa)) | (np.isnan(g) & np.isnan(a)))
        # +0 vs -0 has abs error 0 but is a mismatch: still list it
        return bad, np.where(bad, np.maximum(abs_err, 1e-300), 0.0)

    def _double_thousandth(self, a_raw, g_raw, g, a, ag, equal, nonfinite_mismatch, abs_err, rel_err):
        ct = self.close_dtype
        x = a_raw.astype(ct)
        y = g_raw.astype(ct)
        rtol, atol = ct.type(self.rtol), ct.type(self.atol)
        with np.errstate(all="ignore"):
            # np.isclose(x, y, rtol, atol, equal_nan=True) on arrays of type ct
            close = (np.abs(x - y) <= atol + rtol * np.abs(y)) & np.isfinite(y)
            close |= x == y
            close |= np.isnan(x) & np.isnan(y)
            bad = ~close
            limit = self.atol + self.rtol * ag
            score = np.where(bad, abs_err / np.where(np.isfinite(limit) & (limit > 0), limit, 1.0), 0.0)
        return bad, score

    def _ratio(self, a_raw, g_raw, g, a, ag, equal, nonfinite_mismatch, abs_err, rel_err):
        bad = rel_err > self.t1
        return bad, np.where(bad, rel_err, 0.0)

    def _relative_error(self, a_raw, g_raw, g, a, ag, equal, nonfinite_mismatch, abs_err, rel_err):
        t = relative_error_threshold(self.golden_dtype)
        fin_g = np.isfinite(g)
        with np.errstate(all="ignore"):
            r = np.abs(a - g) / (ag + REL_EPS)
        r[equal] = 0.0
        r_fin = r[fin_g]
        if r_fin.size:
            nan = np.isnan(r_fin)
            if nan.any():  # a NaN actual where the golden is finite
                self.r_nan = True
                r_fin = r_fin[~nan]
            if r_fin.size:
                self.r_sum += float(r_fin.sum())
                self.r_max = max(self.r_max, float(r_fin.max()))
            self.r_count += int(np.count_nonzero(fin_g))
        with np.errstate(invalid="ignore"):
            bad = (np.where(fin_g, r, 0.0) > t) | nonfinite_mismatch | (fin_g & np.isnan(r))
        score = np.where(bad, np.where(np.isnan(r) | ~fin_g, np.inf, r), 0.0)
        return bad, score

    def _keep_worst(self, bad, score, offset, g, a, abs_err, rel_err) -> None:
        cand = np.flatnonzero(bad)
        if not cand.size:
            return
        s = score[cand]
        s[np.isnan(s)] = np.inf
        if cand.size > WORST:  # the WORST largest scores (all ties with the last one kept)
            kth = np.partition(-s, WORST - 1)[WORST - 1]
            keep = -s <= kth
            cand, s = cand[keep], s[keep]
        order = np.lexsort((cand, -s))[:WORST]  # largest score first, then the smaller index
        for j in order:
            f = int(cand[j])
            self.worst.append((offset + f, float(s[j]), float(g[f]), float(a[f]), float(abs_err[f]),
                               float(rel_err[f])))
        self.worst.sort(key=lambda w: (-w[1], w[0]))
        del self.worst[WORST:]

    # ------------------------------------------------------------------ the verdict

    def _index(self, flat: int) -> tuple:
        return tuple(int(v) for v in np.unravel_index(flat, self.shape)) if self.shape else ()

    def result(self) -> Comparison:
        """The comparison of everything given so far (all ``n`` elements must have been given)."""
        if self.seen != self.n:
            raise ValueError(f"{self.seen} of {self.n} elements given")
        n = self.n
        gname = dtype_name(self.golden_dtype)
        details: dict = {}
        if self.standard == "exact":
            passed = self.over == 0
            criterion = "bitwise equal (any NaN equals any NaN; +0 and -0 differ)"
            if self.actual_dtype != self.golden_dtype:
                criterion += f"; compared as {dtype_name(_exact_dtype(self.golden_dtype, self.actual_dtype))} numbers"
        elif self.standard == "double-thousandth":
            share = self.over / n if n else 0.0
            passed = share <= self.error_ratio  # the sample's test, float(count) / size <= error_tol
            criterion = (
                f"share of elements with |a-g| > atol + rtol*|g| at most {self.error_ratio:g}"
                f" (np.isclose in {dtype_name(self.close_dtype)}, NaN equals NaN, an infinity only itself);"
                f" rtol = {self.rtol:g}, atol = {self.atol:g}"
                + (f" ({gname} defaults)" if self.defaults else " (given)")
            )
            details = {"rtol": self.rtol, "atol": self.atol, "error ratio": share,
                       "error ratio limit": self.error_ratio}
        elif self.standard == "ratio":
            frac = self.over / n if n else 0.0
            passed = frac < self.t2 if n else True
            criterion = (
                f"share of elements with relative error > {self.t1:g} must be < {self.t2:g}"
                " (relative error |a-g|/|g|, |a-g| where g == 0)"
            )
            details = {"error ratio": frac, "threshold1": self.t1, "threshold2": self.t2}
        else:  # relative-error
            t = relative_error_threshold(self.golden_dtype)
            if self.r_nan:
                mere = mare = math.inf
            else:
                mere = self.r_sum / self.r_count if self.r_count else 0.0
                mare = self.r_max if self.r_count else 0.0
            passed = self.nonfinite_mismatch == 0 and mere < t and mare < 10 * t
            criterion = (
                f"MERE < {t:g} and MARE < {10 * t:g} ({gname}; r = |a-g|/(|g|+1e-7)"
                " over finite golden elements; NaN/inf positions must match)"
            )
            details = {"MERE": mere, "MARE": mare, "MERE limit": t, "MARE limit": 10 * t}
        if n:
            max_abs_index = self._index(self.max_abs_at)
            max_rel_index = self._index(self.max_rel_at)
        else:
            max_abs_index = max_rel_index = None
        return Comparison(
            standard=self.standard,
            dtype=gname,
            shape=self.shape,
            passed=bool(passed),
            criterion=criterion,
            elements=int(n),
            over=int(self.over),
            max_abs=self.max_abs,
            max_abs_index=max_abs_index,
            max_rel=self.max_rel,
            max_rel_index=max_rel_index,
            nan_golden_only=self.nan_g_only,
            nan_actual_only=self.nan_a_only,
            inf_mismatch=self.inf_mismatch,
            worst=[(self._index(f), g, a, ae, re) for f, _, g, a, ae, re in self.worst],
            details=details,
            actual_dtype="" if self.actual_dtype == self.golden_dtype else dtype_name(self.actual_dtype),
        )


def compare(actual, golden, standard: str = "exact", *, ratio_thresholds=RATIO_DEFAULT, rtol=None, atol=None,
            error_ratio=None, chunk: int = CHUNK) -> Comparison:
    """Compare ``actual`` with ``golden`` under ``standard`` (see :class:`Comparer`).

    ``actual`` must have as many elements as ``golden`` and is read in ``golden``'s shape; its
    dtype may differ (the values are compared as numbers, with ``golden``'s thresholds).
    """
    golden = np.ascontiguousarray(golden)
    actual = np.ascontiguousarray(actual)
    if actual.size != golden.size:
        raise ValueError(f"size mismatch: actual {actual.size} elements, golden {golden.size}")
    comparer = Comparer(standard, golden.dtype, golden.shape, actual_dtype=actual.dtype,
                        ratio_thresholds=ratio_thresholds, rtol=rtol, atol=atol, error_ratio=error_ratio)
    a, g = actual.reshape(-1), golden.reshape(-1)
    for lo in range(0, g.size, max(1, int(chunk))):
        comparer.update(a[lo:lo + chunk], g[lo:lo + chunk])
    return comparer.result()
