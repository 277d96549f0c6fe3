"""The measured table of ``docs/aclnn.md``: PreluBackward's ``gradWeight`` on ``Ascend950`` against
the core's.

    python tools/ascend950_gradweight_table.py                # the doc's table, then a summary
    python tools/ascend950_gradweight_table.py --sizes 64,1024 --dtypes float16

The recipe (the doc's): ``x`` and ``g`` standard normal, shape ``(1, 64, L)`` (64 channels of
``L`` elements), drawn in float64 with ``numpy.random.default_rng(2026)`` (``x`` first, a fresh
generator per row) and rounded once to the dtype T (to nearest even). For each channel:

- the 950's ``gradWeight`` is ``leakyops.aclnn._ascend950.prelu_grad_weight`` (what the
  ``Ascend950`` profile of ``aclnnPreluBackward`` returns), the core's is
  ``leakyops._core.prelu_backward_impl``'s (what the other profiles return);
- "ulps" is ``|950 - core|`` in units in the last place of T at the larger of the two;
- the exact sum is ``math.fsum`` of the terms ``x * g`` (exact in float64 for these dtypes)
  where ``x <= 0``, and the two error columns divide ``|result - exact|`` by the sum of the
  terms' magnitudes;
- MERE, MARE and the verdict are ``leakyops.verify``'s default standard for ``grad_weight``
  (``relative-error``) with the 950's result as the actual data and the core's as the golden.

Nothing here is timed; this is not a benchmark. ``tests/aclnn/test_ascend950.py`` re-derives the
small rows with :func:`measure` and checks them against the doc.
"""

from __future__ import annotations

import argparse
import math
import sys

import ml_dtypes
import numpy as np

from leakyops import _core, _verify
from leakyops import _vector_math as vm
from leakyops.aclnn import _ascend950

SEED = 2026
CHANNELS = 64
DTYPES = ("float16", "bfloat16", "float32")
SIZES = (64, 1024, 16384, 131072)
FAR_ULPS = 10     # a difference this large comes from a nearly cancelling sum (summary line)
HEADER = ("| dtype | L | channels where 950 ≠ core | median ulps where they differ | max ulps "
          "| max \\|950 − exact\\| / Σ\\|terms\\| | max \\|core − exact\\| / Σ\\|terms\\| "
          "| MERE, MARE of 950 vs core | `relative-error` verdict |\n"
          "|---|---|---|---|---|---|---|---|---|")

# significand bits (with the implicit one) and the smallest normal exponent of each T
_FORMATS = {"float16": (11, -14), "bfloat16": (8, -126), "float32": (24, -126)}


def _dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _ulp(v: np.ndarray, name: str) -> np.ndarray:
    """The unit in the last place of T at ``|v|`` (the subnormal spacing below the normals)."""
    p, emin = _FORMATS[name]
    _, e = np.frexp(np.abs(v))                     # |v| = m * 2**e, 0.5 <= m < 1
    return np.ldexp(1.0, np.maximum(e - 1, emin) - (p - 1))


def data(name: str, length: int, channels: int = CHANNELS, seed: int = SEED):
    """``(g, x)`` of shape ``(1, channels, length)`` in T, by the recipe."""
    dt = _dtype(name)
    rng = np.random.default_rng(seed)
    shape = (1, channels, length)
    x = vm.cast(rng.standard_normal(shape).reshape(-1), dt, "rint").reshape(shape)
    g = vm.cast(rng.standard_normal(shape).reshape(-1), dt, "rint").reshape(shape)
    return g, x


def measure(name: str, length: int, channels: int = CHANNELS, seed: int = SEED) -> dict:
    """The figures of one row of the table, for dtype ``name`` and ``length`` elements per channel."""
    g, x = data(name, length, channels, seed)
    dt = x.dtype
    weight = np.full(channels, 0.25, dt)            # (grad_weight does not depend on it)
    core = _core.prelu_backward_impl(g, x, weight, 1)[1]
    a950 = _ascend950.prelu_grad_weight(g, x, True)
    c64, a64 = core.astype(np.float64), a950.astype(np.float64)
    x64, g64 = x[0].astype(np.float64), g[0].astype(np.float64)
    terms = np.where(x64 > 0, 0.0, x64 * g64)       # exact products: at most 48 significant bits
    exact = np.array([math.fsum(t) for t in terms])
    magnitude = np.abs(terms).sum(axis=1)
    differ = a64 != c64
    ulps = np.abs(a64 - c64) / _ulp(np.maximum(np.abs(a64), np.abs(c64)), name)
    verdict = _verify.compare(a950, core, "relative-error")
    far = ulps >= FAR_ULPS
    return {
        "dtype": name, "L": length,
        "differ": float(differ.mean()),
        "one_ulp": int((ulps == 1).sum()), "differing": int(differ.sum()),
        # how far the sum cancels where the two lie FAR_ULPS or more apart: |core| / sum |terms|
        "far_cancel": float((np.abs(c64[far]) / magnitude[far]).max()) if far.any() else 0.0,
        "median_ulps": float(np.median(ulps[differ])) if differ.any() else 0.0,
        "max_ulps": float(ulps.max()),
        "err950": float((np.abs(a64 - exact) / magnitude).max()),
        "err_core": float((np.abs(c64 - exact) / magnitude).max()),
        "mere": float(verdict.details["MERE"]), "mare": float(verdict.details["MARE"]),
        "passed": bool(verdict.passed),
    }


def format_row(m: dict) -> str:
    """One Markdown row of the table, as ``docs/aclnn.md`` has it."""
    return (f"| {m['dtype']} | {m['L']} | {m['differ']:.0%} | {m['median_ulps']:g} | {m['max_ulps']:g} "
            f"| {m['err950']:.1e} | {m['err_core']:.1e} | {m['mere']:.1e}, {m['mare']:.1e} "
            f"| {'pass' if m['passed'] else 'FAIL'} |")


def summary(rows: list[dict]) -> list[str]:
    """The figures the doc's prose quotes."""
    failed = [f"{m['dtype']} L={m['L']}" for m in rows if not m["passed"]]
    ratio = max((m["err950"] / m["err_core"] for m in rows if m["err_core"] > 0), default=0.0)
    one = [m["one_ulp"] / m["differing"] for m in rows if m["differing"]]
    total = sum(m["differing"] for m in rows)
    return [
        f"channels that differ: {min(m['differ'] for m in rows):.0%} to {max(m['differ'] for m in rows):.0%}"
        f"; median ulps where they differ: {', '.join(sorted({format(m['median_ulps'], 'g') for m in rows}))}"
        f"; max ulps: {max(m['max_ulps'] for m in rows):g}",
        f"of the channels that differ, by one ulp: {sum(m['one_ulp'] for m in rows) / max(total, 1):.0%}"
        f" ({min(one, default=0):.0%} to {max(one, default=0):.0%} per row)",
        f"channels {FAR_ULPS} ulps or more apart: |core| / sum |terms| at most "
        f"{max(m['far_cancel'] for m in rows):.1e}",
        f"950's error / core's error (max over rows): {ratio:.1f}",
        "relative-error standard fails at: " + (", ".join(failed) if failed else "none"),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated (default: %(default)s)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help="comma-separated L, elements per channel (default: %(default)s)")
    args = ap.parse_args(argv)
    names = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    bad = [d for d in names if d not in _FORMATS]
    if bad:
        ap.error(f"--dtypes: {', '.join(bad)} not among {', '.join(DTYPES)}")
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes: integers expected, got {args.sizes!r}")
    if not sizes or min(sizes) < 1:
        ap.error("--sizes: at least one L, each >= 1")
    rows = []
    print(HEADER)
    for name in names:
        for length in sizes:
            rows.append(measure(name, length))
            print(format_row(rows[-1]), flush=True)
    print()
    for line in summary(rows):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
