"""prelu_backward's grad_weight promise (issue 28, Decision 1), shown on data made to break it.

(a) At least as accurate as PyTorch's CPU result: for every channel of every data set and
    dtype, |leakyops - exact| <= |PyTorch - exact|, where "exact" is the exact sum of the
    float64 terms (the products of float16, bfloat16 and float32 values are exact there; for
    float64 data the terms are the rounded float64 products, as PyTorch forms them too). Each
    error is computed exactly and rounded once (``math.fsum`` over the terms and the result),
    so the comparison cannot be decided by the reference's own rounding.
(b) The same bits for any number of threads (1...8, in a process with a pool of 8) and on any
    CPU whatever its vector width (this process's native code against SSE2 code in a child
    process): ``grad_input``, ``grad_weight`` and the unrounded float64 sums of
    ``_core.prelu_backward_parts`` (which Dask and the oneDNN model add up).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import pathlib
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import leakyops
from leakyops import _core
from leakyops import _reference as reference
from refs import BF16, DTYPE_IDS, DTYPES, bits, exact_sum, random_values, to_torch

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
PRECISION = {F16: 11, BF16: 8, F32: 24, F64: 53}  # significand bits


def _finfo(dtype):
    return ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)


def _cast(values, dtype) -> np.ndarray:
    return np.asarray(values, np.float64).astype(dtype)


def _signs(rng, n) -> np.ndarray:
    return rng.choice([-1.0, 1.0], n)


# ---- (a) accuracy: the data sets ----------------------------------------------------------
# Each makes the (x, g) of one channel, n elements; x <= 0 throughout, so that every element
# adds its term x * g. Terms stay finite in the dtype (PyTorch rounds each product to it).


def _cancellation(rng, dtype, n):
    """Large terms of both signs that nearly cancel: pairs (x, g), (x', -g) with x' one to
    three units in the last place away from x, shuffled; the sum is about 2**-p of the sum of
    the magnitudes."""
    m = n // 2
    top = 6 if dtype == F16 else 20
    x = _cast(-np.exp2(rng.uniform(0, top, m)), dtype)
    g = _cast(_signs(rng, m) * np.exp2(rng.uniform(0, top, m)), dtype)
    step = rng.integers(1, 4, m) * 2.0 ** (1 - PRECISION[dtype])
    x2 = _cast(x.astype(np.float64) * (1 + step), dtype)
    order = rng.permutation(2 * m)
    return np.concatenate([x, x2])[order], np.concatenate([g, -g])[order]


def _dynamic_range(rng, dtype, n):
    """Magnitudes spread evenly over the binades, both signs: x over 2**60 (float16: 2**36,
    its subnormals included), the products over 2**64 (float16: 2**40)."""
    lo, hi, glo, ghi = (-24, 12, -4, 0) if dtype == F16 else (-30, 30, -2, 2)
    x = -np.exp2(rng.uniform(lo, hi, n))
    g = _signs(rng, n) * np.exp2(rng.uniform(glo, ghi, n))
    return _cast(x, dtype), _cast(g, dtype)


def _all_equal(rng, dtype, n):
    """One term repeated n times (a different one for each call)."""
    c = rng.integers(0, 4)
    return _cast(np.full(n, -0.1 * (1 + c / 4)), dtype), _cast(np.full(n, (1 + c / 4) / 3), dtype)


def _huge_among_tiny(rng, dtype, n):
    """Many tiny terms of one sign, and three huge pairs +H, -H at random places: the sum is
    the tiny terms' alone, which an accumulator that held H has lost."""
    x = -rng.uniform(1, 2, n) * 2.0 ** -10
    g = rng.uniform(0.5, 1, n) * 2.0 ** -2
    ex, eg = {F16: (7, 6), F64: (30, 30)}.get(dtype, (20, 20))
    where = rng.choice(n, 6, replace=False)
    hx = -rng.uniform(1, 2, 3) * 2.0 ** ex
    x[where] = np.concatenate([hx, hx])
    g[where] = np.concatenate([np.full(3, 2.0 ** eg), np.full(3, -2.0 ** eg)])
    return _cast(x, dtype), _cast(g, dtype)


def _long(rng, dtype, n):
    """One sign throughout, so that a running sum grows to n/256 and each addition rounds."""
    return _cast(-rng.uniform(0, 1, n), dtype), _cast(rng.uniform(0, 1, n) * 2.0 ** -6, dtype)


def _midpoint_terms(dtype, t: float) -> list[float]:
    """Seven terms whose sum lies a hair, t * b, above a rounding midpoint of ``dtype``: b and
    b * 2**-p (their sum is the midpoint), +c, +c, -c, -c, and t * b; c is three quarters of
    half a float32 unit of b (float64 data: of a float64 unit), so that a float32 (float64)
    running sum that adds c + c to the midpoint rounds up, one that adds c alone does not.
    Rounded once, the sum goes up; rounded through a type that has lost t * b, it lands on
    the midpoint and ties to even, down."""
    b = 2.0 ** 10 if dtype == F16 else 1.0
    c = 0.75 * 2.0 ** -(53 if dtype == F64 else 24) * b
    return [b, b * 2.0 ** -PRECISION[dtype], c, c, -c, -c, t * b]


def _midpoint_channels(dtype):
    """``(x, g)`` of shape (1, 2 * 5040, 7): each channel the midpoint terms in one of their
    7! orders, each term the product of a power of two x < 0 and g; first with t = 2**-40
    (exact in float64, lost in float32: a rounding through float32 errs), then with t = 2**-58
    (lost in float64: a rounding of a float64 sum errs). float64 data: 2**-60 and 2**-80."""
    ts = (2.0 ** -60, 2.0 ** -80) if dtype == F64 else (2.0 ** -40, 2.0 ** -58)
    orders = np.array([o for t in ts for o in itertools.permutations(_midpoint_terms(dtype, t))])
    x = -np.exp2(np.floor(np.log2(np.abs(orders)) / 2))  # about the square root of the term
    x, g = _cast(x, dtype), _cast(orders / x, dtype)
    assert (x.astype(np.float64) * g.astype(np.float64) == orders).all(), "a term is not exact"
    return x[None], g[None]


DATASETS = {  # name: (generator, (rows, channels, row length)); row lengths not multiples of 8
    "cancellation": (_cancellation, (2, 16, (1 << 15) + 3)),
    "dynamic_range": (_dynamic_range, (2, 16, 2048 + 37)),
    "all_equal": (_all_equal, (2, 4, 50_001)),
    "huge_among_tiny": (_huge_among_tiny, (2, 16, (1 << 15) + 3)),
    "one_channel_1e6": (_long, (1, 1, 10 ** 6)),
    "one_channel_1e7": (_long, (1, 1, 10 ** 7)),
}


def dataset(name: str, dtype, seed: int = 28):
    """``(x, g)`` of a data set, channel axis 1."""
    dtype = np.dtype(dtype)
    if name == "near_midpoint":
        return _midpoint_channels(dtype)
    make, (rows, channels, length) = DATASETS[name]
    rng = np.random.default_rng(seed)
    xs, gs = [], []
    for _ in range(channels):
        x, g = make(rng, dtype, rows * length)
        xs.append(x.reshape(rows, length))
        gs.append(g.reshape(rows, length))
    return np.stack(xs, 1), np.stack(gs, 1)


def _fsum(values: np.ndarray, *more: float) -> float:
    """The correctly rounded sum of ``values`` and ``more`` (``math.fsum``, in chunks)."""
    chunks = (values[i:i + (1 << 20)].tolist() for i in range(0, values.size, 1 << 20))
    return math.fsum(itertools.chain(more, *chunks))


def torch_grad_weight(x, g, w) -> np.ndarray:
    """PyTorch's grad_weight through autograd, as float64."""
    torch = pytest.importorskip("torch")
    tx, tw = to_torch(x).requires_grad_(), to_torch(w).requires_grad_()
    torch.nn.functional.prelu(tx, tw).backward(to_torch(g))
    return tw.grad.double().numpy()


def measure(name: str, dtype) -> list[dict]:
    """Per channel of a data set: the exact sum (rounded to float64), leakyops' and PyTorch's
    results, and their errors, each |result - exact sum| computed exactly and rounded once."""
    dtype = np.dtype(dtype)
    x, g = dataset(name, dtype)
    w = _cast(np.full(x.shape[1], 0.25), dtype)
    terms = reference.grad_weight_terms(g, x)
    info = _finfo(dtype)
    assert np.abs(terms).max() <= float(info.max), "a term overflows the dtype"  # (the data's)
    _, gw = leakyops.prelu_backward(g, x, w)
    ours, theirs = gw.astype(np.float64), torch_grad_weight(x, g, w)
    rows = []
    for c in range(x.shape[1]):
        tc = np.ascontiguousarray(terms[:, c]).reshape(-1)
        rows.append({"sum": _fsum(tc), "ours": float(ours[c]), "theirs": float(theirs[c]),
                     "ours_error": abs(_fsum(tc, -float(ours[c]))),
                     "theirs_error": abs(_fsum(tc, -float(theirs[c])))})
    assert max(abs(r["sum"]) for r in rows) <= float(info.max), "a sum overflows the dtype"
    return rows


ACCURACY_CASES = ["cancellation", "dynamic_range", "all_equal", "huge_among_tiny",
                  "one_channel_1e6", pytest.param("one_channel_1e7", marks=pytest.mark.slow),
                  "near_midpoint"]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", ACCURACY_CASES)
def test_grad_weight_at_least_as_accurate_as_torch(name, dtype):
    rows = measure(name, dtype)
    worse = [(c, r) for c, r in enumerate(rows) if not r["ours_error"] <= r["theirs_error"]]
    table = "\n".join(f"  channel {c}: exact sum {r['sum']!r}; leakyops {r['ours']!r}, error "
                      f"{r['ours_error']!r}; PyTorch {r['theirs']!r}, error {r['theirs_error']!r}"
                      for c, r in worse[:10])
    assert not worse, (f"{name}, {np.dtype(dtype).name}: leakyops' grad_weight is further from "
                       f"the exact sum than PyTorch's in {len(worse)} of {len(rows)} channels "
                       f"(first {min(len(worse), 10)}):\n{table}")


# ---- (b) the same bits: cases, results, digests -------------------------------------------

TESTS_DIR = pathlib.Path(__file__).resolve().parents[1]


def _wide(rng, shape, dtype):
    """``(x, g)`` over many binades and both signs (a quarter of x positive: zero terms), the
    products over more than 2**53 (float16: x down to its subnormals), so that float64 sums
    round and another order of the additions changes their last bits."""
    lo, hi, glo, ghi = (-24, 6, -14, 2) if dtype == F16 else (-30, 30, -10, 10)
    x = -np.exp2(rng.uniform(lo, hi, shape))
    x[rng.random(shape) < 0.25] *= -1
    g = _signs(rng, shape) * np.exp2(rng.uniform(glo, ghi, shape))
    return _cast(x, dtype), _cast(g, dtype)


def _case(rng, dtype, layout: str, shape, channels: int):
    """``(g, x, w, axis)`` of a layout, built from (x, g) of ``shape``.

    rows: C-contiguous (rows, C, length), axis 1. one_slope: the same with a one-element
    weight (PyTorch's ``PReLU()``). channels_last: C-contiguous (n, C), axis -1.
    strided: every other element of the last axis, axis 1. one_channel_strided: the same
    with one slope (no axis a thread split can keep whole: partial sums). transposed: the
    reverse-axes view of a contiguous array, axis 1. channels_last_strided: every other row
    of (n, C), axis -1.
    """
    x, g = _wide(rng, shape, dtype)
    if layout in ("strided", "one_channel_strided"):
        x, g = x[..., ::2], g[..., ::2]
    elif layout == "channels_last_strided":
        x, g = x[::2], g[::2]
    elif layout == "transposed":
        x, g = x.T, g.T
    axis = -1 if layout.startswith("channels_last") else 1
    w = _cast(np.linspace(0.1, 0.3, channels), dtype)
    return g, x, w, axis


def width_cases(dtype_ids=tuple(DTYPE_IDS)):
    """Small cases for the vector-width comparison: every layout, rows that end in a tail
    (lengths not multiples of 8) and rows longer than a stretch of 2,048 elements."""
    cases = {}
    for dtype, did in zip(DTYPES, DTYPE_IDS):
        if did not in dtype_ids:
            continue
        rng = np.random.default_rng(2028 + DTYPE_IDS.index(did))
        for layout, shape, channels in [
                ("rows", (2, 3, 2 * 2048 + 13), 3),   # several stretches and a tail
                ("rows", (5, 3, 37), 3),              # short rows: mostly tail
                ("rows", (9, 3, 5), 3),               # rows of at most 8: the first lanes only
                ("rows", (9, 3, 8), 3),
                ("one_slope", (3, 2, 2 * 4096 + 13), 1),  # PReLU(): units and a tail
                ("strided", (2, 3, 2 * (2048 + 301)), 3),
                ("one_channel_strided", (2, 1, 2 * 2053), 1),
                ("channels_last", (3001, 5), 5),
                ("channels_last_strided", (2 * 1501, 5), 5),
                ("transposed", (2101, 3, 4), 3)]:      # .T: (4, 3, 2101), memory order reversed
            cases[f"{layout}{shape}-{did}"] = _case(rng, dtype, layout, shape, channels)
    return cases


def thread_cases():
    """Cases of about 3e5 elements (threaded for every dtype), each split a different way."""
    rng = np.random.default_rng(1028)
    cases = {}
    for dtype, did in zip(DTYPES, DTYPE_IDS):
        for layout, shape, channels in [
                ("rows", (16, 8, 40 * 40 + 3), 8),             # split by channels
                ("one_slope", (16, 8, 40 * 40 + 3), 1),        # one weight: split by units
                ("one_channel_strided", (4, 1, 2 * 75_001), 1),  # a reduced axis: partial sums
                ("channels_last", (75_001, 4), 4),              # units of rows: partial sums
                ("channels_last_strided", (2 * 75_001, 4), 4),  # general path, partial sums
                ("transposed", (40 * 40 + 3, 8, 24), 8)]:      # general path, split by channels
            cases[f"{layout}{shape}-{did}"] = _case(rng, dtype, layout, shape, channels)
    return cases


def results(g, x, w, axis):
    """``{"grad_input", "grad_weight", "sums"}``: the public call's results and the unrounded
    float64 sums of ``_core.prelu_backward_parts`` (its grad_input must be the same)."""
    gi, gw = leakyops.prelu_backward(g, x, w, axis=axis)
    gi2, acc = _core.prelu_backward_parts(g, x, w, axis)
    assert np.array_equal(bits(gi), bits(gi2))
    return {"grad_input": gi, "grad_weight": gw, "sums": acc}


def digest(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    return hashlib.sha256(f"{a.dtype.str}{a.shape}".encode() + bits(a).tobytes()).hexdigest()[:16]


def _child(code: str, env_extra: dict) -> dict:
    env = dict(os.environ)
    env.update(env_extra)
    prelude = (f"import sys; sys.path[:0] = [{str(TESTS_DIR)!r}]\n"
               f"import importlib.util\n"
               f"spec = importlib.util.spec_from_file_location('_gw', {__file__!r})\n"
               f"cases = importlib.util.module_from_spec(spec); spec.loader.exec_module(cases)\n")
    r = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---- (b) threads ---------------------------------------------------------------------------

THREADS_CHILD = """
import json
import leakyops
from leakyops import _kernels, _threads

entered, nd_parts = [0], []
_enter, _team, _nd_par = _threads.enter_parallel, _threads.team_call, _kernels.prelu_bwd_nd_par

def counting_enter():  # evidence that a call ran threaded (numba's region: the general path)
    entered[0] += 1
    return _enter()

def counting_team(own):  # (leakyops' team: the contiguous path)
    n, words = _team(own)
    entered[0] += n > 1
    return n, words

def recording_nd_par(*args):  # the general path's split: how many (acc, comp) pairs
    nd_parts.append(int(args[4].shape[0]))
    return _nd_par(*args)

_threads.enter_parallel, _kernels.prelu_bwd_nd_par = counting_enter, recording_nd_par
_threads.team_call = counting_team
out = {}
for key, case in cases.thread_cases().items():
    for k in range(1, 9):
        leakyops.set_num_threads(k)
        entered[0], nd_parts[:] = 0, []
        res = cases.results(*case)
        out[f"{key}|{k}"] = {"digests": {n: cases.digest(a) for n, a in res.items()},
                             "threads": leakyops.get_num_threads(), "entered": entered[0],
                             "nd_parts": list(nd_parts)}
print(json.dumps(out))
"""


def test_grad_weight_bits_do_not_depend_on_the_thread_count():
    report = _child(THREADS_CHILD, {"NUMBA_NUM_THREADS": "8", "LEAKYOPS_NUM_THREADS": "8",
                                    "LEAKYOPS_PARALLEL_MIN_BYTES": "131072"})  # (the default)
    here = {key: {n: digest(a) for n, a in results(*case).items()}
            for key, case in thread_cases().items()}
    for key in here:
        runs = [report[f"{key}|{k}"] for k in range(1, 9)]
        assert [r["threads"] for r in runs] == list(range(1, 9)), key
        unthreaded = [k for k, r in zip(range(2, 9), runs[1:]) if r["entered"] < 2]
        assert not unthreaded, f"{key}: not threaded with {unthreaded} threads (tests nothing)"
        if key.startswith("one_slope"):  # (the contiguous path's units, not the general split)
            assert all(r["nd_parts"] == [] for r in runs), (
                f"{key}: a one-element weight went the general way: {runs}")
        if key.startswith(("one_channel_strided", "channels_last_strided")):
            parts = {tuple(r["nd_parts"]) for r in runs[1:]}  # (one thread: the serial loop)
            assert len(parts) == 1 and min(parts.pop()) > 1, (
                f"{key}: expected the general path's split into partial sums, fixed in number, "
                f"got {[r['nd_parts'] for r in runs[1:]]}")
        for what in ("grad_input", "grad_weight", "sums"):
            by_k = {k: r["digests"][what] for k, r in zip(range(1, 9), runs)}
            assert len(set(by_k.values())) == 1, f"{key}: {what} differs by thread count: {by_k}"
            assert by_k[1] == here[key][what], f"{key}: {what} differs from this process's"


# ---- (b) vector width ----------------------------------------------------------------------

WIDTH_CHILD = """
import json
import leakyops

info = leakyops.runtime_info()
out = {"target": [info["target"], info["numba_cpu_features"]],
       "float16": info["paths"]["prelu_backward"]["float16"], "results": {}}
with leakyops.thread_limit(1):
    for key, case in cases.width_cases({dtype_ids!r}).items():
        res = cases.results(*case)
        out["results"][key] = {n: cases.digest(a) for n, a in res.items()}
        out["results"][key]["sums as hex"] = [v.hex() for v in res["sums"].ravel().tolist()]
print(json.dumps(out))
"""


@pytest.mark.parametrize("dtype_ids", [
    pytest.param(("f16",), id="f16"),  # (compiling for SSE2 takes about 40 s a dtype here)
    pytest.param(("bf16", "f32", "f64"), id="bf16-f32-f64", marks=pytest.mark.slow)])
def test_grad_weight_bits_do_not_depend_on_the_vector_width(dtype_ids):
    report = _child(WIDTH_CHILD.replace("{dtype_ids!r}", repr(dtype_ids)),
                    {"NUMBA_CPU_NAME": "x86-64", "NUMBA_CPU_FEATURES": ""})  # (cache files of its own)
    # the child compiled for the SSE2 baseline, float16 conversions in software
    assert report["target"] == ["x86-64", ""], report["target"]
    assert "software float16" in report["float16"], report["float16"]
    differ = []
    with leakyops.thread_limit(1):
        for key, case in width_cases(dtype_ids).items():
            theirs = report["results"][key]
            for what, a in results(*case).items():
                if digest(a) != theirs[what]:
                    differ.append(f"{key} {what}" + (
                        f": native {[v.hex() for v in a.ravel().tolist()]}, "
                        f"SSE2 {theirs['sums as hex']}" if what == "sums" else ""))
    assert not differ, "native and SSE2 code differ in:\n" + "\n".join(differ)


# ---- the half types' float32 blocks beyond float32's range ---------------------------------


def _assert_finite_sums_correctly_rounded(g, x, gw) -> None:
    """Each channel c of (rows, channels, n) data: its terms' exact sum is finite, and
    ``gw[c]`` is that sum rounded once to ``gw``'s dtype."""
    terms = reference.grad_weight_terms(g, x)
    for c in range(x.shape[1]):
        exact = _fsum(np.ascontiguousarray(terms[:, c]).reshape(-1))
        assert math.isfinite(exact)
        assert bits(gw[c:c + 1]).tobytes() == bits(_cast([exact], gw.dtype)).tobytes(), (
            c, float(gw[c]), exact)


@pytest.mark.parametrize("channels", [3, 1], ids=["channels", "one_slope"])
def test_grad_weight_float32_blocks_that_overflow_are_summed_again(channels):
    """bfloat16 terms beyond float32's range (products of two bfloat16 values up to 2**256)
    make a float32 block inf or NaN; the channel is then summed from float64 terms, so a
    finite exact sum comes out correctly rounded, as from the float64 loops. Rows of 300
    elements (blocks of 8 vectors and a tail); channel 0: +T, -T pairs (exact sum: the small
    terms alone), channel 1: 3 of +T and 2 of -T (a block holds two +T: inf in float32; the
    exact sum T is finite), channel 2: finite terms only (the float32 blocks as they are)."""
    rng = np.random.default_rng(36)
    n = 300
    x = -rng.uniform(1, 2, (2, 3, n))
    g = rng.uniform(0.5, 1, (2, 3, n))
    big_x, big_g = -2.0 ** 100, 2.0 ** 27  # T = 2**127: two of them overflow float32
    for c, signs in [(0, [1, -1, 1, -1]), (1, [1, 1, 1, -1, -1])]:
        for k, sign in enumerate(signs):  # (in lanes 0..4 of the first rows' blocks)
            x[0, c, 16 * k], g[0, c, 16 * k] = big_x, sign * big_g
    x, g = _cast(x, BF16), _cast(g, BF16)
    if channels == 1:
        x, g = np.ascontiguousarray(x[:, 1:2]), np.ascontiguousarray(g[:, 1:2])
    w = _cast(np.full(channels, 0.25), BF16)
    _, gw = leakyops.prelu_backward(g, x, w)  # (the contiguous path: C-contiguous operands)
    _assert_finite_sums_correctly_rounded(g, x, gw)


# ---- float32's fused terms where a kept element's grad_output is not finite -----------------


@pytest.mark.parametrize("channels", [4, 1], ids=["channels", "one_slope"])
def test_float32_fused_terms_with_a_kept_inf_or_nan_are_summed_again(channels):
    """float32's contiguous loop adds x' * g in one fused multiply-add, x' being +0 where x is
    kept, so a kept element whose g is inf or NaN makes its term 0 * inf = NaN where the
    operator's term is 0. Such a channel is summed again from the plain terms: its weight
    gradient is the exact sum of the finite terms, correctly rounded. Rows of 300 (full
    vectors and a tail): channel 0 a kept +inf g in a full vector, channel 1 a kept NaN g in
    the tail, channel 2 a kept -inf g, channel 3 none (the fused sum as it is)."""
    rng = np.random.default_rng(39)
    x = rng.standard_normal((2, 4, 300)).astype(np.float32)
    g = rng.standard_normal((2, 4, 300)).astype(np.float32)
    for c, k, value in [(0, 17, np.inf), (1, 295, np.nan), (2, 160, -np.inf)]:
        x[1, c, k], g[1, c, k] = 1.5, value
    if channels == 1:  # (one slope for every element: the one-slope units)
        x, g = np.ascontiguousarray(x[:, :1]), np.ascontiguousarray(g[:, :1])
    w = np.full(channels, 0.25, np.float32)
    gi, gw = leakyops.prelu_backward(g, x, w)
    _assert_finite_sums_correctly_rounded(g, x, gw)
    expected, _ = reference.prelu_backward(g, x, w)
    assert np.array_equal(gi, expected, equal_nan=True)  # (the NaN's payload: unspecified)


# ---- float64 terms and sums beyond float64's range -----------------------------------------
# float64 products round to ±inf where they overflow, and sums of finite terms can overflow
# where their exact sum does not: which of ±inf and NaN comes out then depends on the order of
# the additions (the kernels' lanes; PyTorch's cascade). Such an element is summed again
# exactly: NaN for a NaN term or infinite terms of both signs, ±inf for one sign's, else the
# exact sum of the finite terms rounded once.

_BIG = float(np.finfo(np.float64).max)
#: channel -> the (index in the channel's first row, x, g) of its special elements; every
#: other element is x = -1 with a small integer g (a term -g: ``exact_sum`` adds them as one
#: integer)
_OVERFLOW_CHANNELS = [
    # +0.9·max twice in lanes 0 and 4, a product beyond the range (-inf) in lane 5: -inf
    # (a hypothesis draw: the kernels' tree added lanes 0 and 4 first, inf + -inf = NaN)
    [(0, -0.9 * _BIG, -1.0), (4, -0.9 * _BIG, -1.0), (5, -2.5, _BIG)],
    # +0.9·max twice in one lane, -0.5·max twice: the lane overflows, the exact sum is finite
    [(0, -0.9 * _BIG, -1.0), (16, -0.9 * _BIG, -1.0), (2, -0.5 * _BIG, 1.0),
     (3, -0.5 * _BIG, 1.0)],
    # ±0.9·max twice each, the exact sum the small terms and a subnormal one
    [(0, -0.9 * _BIG, -1.0), (16, -0.9 * _BIG, -1.0), (2, -0.9 * _BIG, 1.0),
     (3, -0.9 * _BIG, 1.0), (7, -5e-324, 1.0)],
    # terms +inf and -inf: NaN
    [(1, -np.inf, -1.0), (9, -np.inf, 1.0)],
    # a NaN x: NaN
    [(3, np.nan, 1.0), (4, -0.9 * _BIG, -1.0), (20, -0.9 * _BIG, -1.0)],
    # 0.9 + 0.9 + 0.05 of max: the exact sum beyond the range, +inf
    [(0, -0.9 * _BIG, -1.0), (16, -0.9 * _BIG, -1.0), (2, -0.05 * _BIG, -1.0)],
    # no special element: the compensated sum as the kernels give it
    [],
]


def _overflow_data(rows: int, n: int):
    """``(x, g)`` of shape (rows, channels, n), float64, channel c as ``_OVERFLOW_CHANNELS``
    says (its specials in row 0)."""
    rng = np.random.default_rng(45)
    channels = len(_OVERFLOW_CHANNELS)
    x = np.full((rows, channels, n), -1.0)
    g = rng.integers(-3, 4, (rows, channels, n)).astype(np.float64)
    for c, specials in enumerate(_OVERFLOW_CHANNELS):
        for k, xv, gv in specials:
            x[0, c, k], g[0, c, k] = xv, gv
    return x, g


@pytest.mark.parametrize("layout", ["rows", "rows_out", "channels_last", "strided", "threaded",
                                    "one_slope"])
def test_float64_grad_weight_beyond_the_range_is_the_exact_sum(layout):
    """Every layout, the contiguous path (a slope per row, channels last, one shared slope,
    threaded, into given outputs) and the general one (strided views): each channel's
    grad_weight is the exact sum of its terms rounded once (the NaN channels NaN)."""
    rows, n = {"threaded": (24, 20_000), "one_slope": (8, 5_000)}.get(layout, (2, 40))
    x, g = _overflow_data(rows, n)
    axis, channels = 1, x.shape[1]
    if layout == "channels_last":
        x, g = (np.ascontiguousarray(np.moveaxis(a, 1, 2)) for a in (x, g))
        axis = -1
    elif layout == "strided":
        x, g = (np.repeat(a, 2, axis=2)[..., ::2] for a in (x, g))
        assert not x.flags.c_contiguous
    elif layout == "one_slope":  # (channel 0's elements, contiguous: the one-slope units)
        x, g, channels = np.ascontiguousarray(x[:, :1]), np.ascontiguousarray(g[:, :1]), 1
    w = np.full(channels, 0.25)
    out = (np.empty_like(x), np.empty(channels)) if layout == "rows_out" else None
    gi, gw = leakyops.prelu_backward(g, x, w, axis=axis, out=out)
    expected_gi, reference_gw = reference.prelu_backward(g, x, w, axis=axis)
    assert np.array_equal(gi, expected_gi, equal_nan=True)
    # (the naive reference sums its non-finite float64 channels again exactly too; its finite
    # sums are NumPy's, which can lose the small terms next to ±0.9·max)
    beyond = ~np.isfinite(gw)
    assert beyond.any() and np.array_equal(gw[beyond], reference_gw[beyond], equal_nan=True)
    for c in range(channels):
        at = (slice(None), c) if axis == 1 else (..., c)
        exact = exact_sum(reference.grad_weight_terms(g[at], x[at]))
        if math.isnan(exact):
            assert math.isnan(gw[c]), (c, gw[c])
        else:
            assert bits(gw[c:c + 1]).tobytes() == bits(np.array([exact])).tobytes(), (
                c, gw[c], exact)


# ---- strided rows: the same lanes as contiguous rows -------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", [5, 16, 40, 2053])
@pytest.mark.parametrize("specials", [False, True], ids=["finite", "specials"])
def test_strided_rows_give_the_bits_of_contiguous_rows(dtype, n, specials):
    """The general path sums a row of a slope per row in sixteen lanes whatever its stride:
    rows with unit stride as vectors (``_row_sum_c``), strided rows gathered into the same
    vectors and their tail into the same lanes (``_row_sum_strided``). The same values in both
    layouts (the outer axis strided, then the inner one) give the same bits: grad_input always,
    grad_weight for finite data (with special values mixed in, its NaNs where they are: a NaN's
    sign and payload are not specified, and under the AVX2 caps they differed)."""
    rng = np.random.default_rng(n)
    if specials:
        x, g = (random_values(rng, (4, 6, n), dtype) for _ in range(2))
    else:
        x, g = ((rng.standard_normal((4, 6, n)) * 4).astype(dtype) for _ in range(2))
    w = random_values(rng, (6,), dtype) if specials else _cast(rng.uniform(-1, 1, 6), dtype)
    rows, strided = [], []
    for a in (x, g):
        outer = np.empty((8, 6, n), dtype)
        outer[::2] = a
        inner = np.empty((4, 6, 2 * n), dtype)
        inner[..., ::2] = a
        rows.append(outer[::2])
        strided.append(inner[..., ::2])
    assert rows[0].strides[2] == dtype.itemsize and strided[0].strides[2] == 2 * dtype.itemsize
    gi_a, gw_a = leakyops.prelu_backward(rows[1], rows[0], w)
    gi_b, gw_b = leakyops.prelu_backward(strided[1], strided[0], w)
    assert np.array_equal(bits(gi_a), bits(gi_b))
    nan = np.isnan(gw_a.astype(np.float64))
    assert np.array_equal(nan, np.isnan(gw_b.astype(np.float64)))
    assert specials or not nan.any()
    assert np.array_equal(bits(gw_a)[~nan], bits(gw_b)[~nan])
