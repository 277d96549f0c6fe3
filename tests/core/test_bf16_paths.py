"""bfloat16 rounded by AVX512-BF16's ``vcvtneps2bf16`` (issue 28, Decision 2) gives the bits of
the portable integer rounding, the payloads of NaN included, on every operator.

The instruction flushes float32 subnormals to zero; the kernels take the integer rounding for
a vector that holds one (``_vector.round_bf16_hw``). The data here put subnormal results in
some lanes of a vector and normal ones in the others, results that round up from the largest
subnormal to the smallest normal, ties, overflow, infinities and NaN with payloads. Every
result is compared bit for bit with the reference (``leakyops._reference``, float64 rounded
once) and with the same call in a child process capped at ``LEAKYOPS_MAX_CPU_ISA=f16c``
(the integer rounding). On a CPU without the instruction both are the portable path, and the
tests that need the instruction say so when they skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import leakyops
from leakyops import _core, _cpu
from refs import (BF16, assert_same, bits, ref_leaky_relu, ref_leaky_relu_backward, ref_prelu,
                  ref_prelu_backward)

HW = _cpu.bf16_convert()
needs_hw = pytest.mark.skipif(not HW, reason="this CPU (or numba's target, or the cap) has no "
                                             "AVX512-BF16 with -VL and -DQ")

#: Slopes whose products put normal inputs into the subnormal range and back (2**-120 times a
#: value near 2**-10 is subnormal), plus ordinary ones and a slope that overflows.
SLOPES = (0.01, -0.37, 2.0 ** -120, 3.0 * 2.0 ** -125, 1.5, 2.0 ** 100, -(2.0 ** -126))


def _all_bf16(seed: int) -> np.ndarray:
    """Every bfloat16 bit pattern once, shuffled (so that vectors mix subnormal and normal
    lanes), as a bfloat16 array."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)).view(BF16)


def _cases() -> dict[str, np.ndarray]:
    """Every operator whose result is rounded to bfloat16, on all bit patterns and slopes."""
    x = _all_bf16(1)
    g = _all_bf16(2)
    out = {}
    for n, s in enumerate(SLOPES):
        out[f"leaky_relu {n}"] = leakyops.leaky_relu(x, s)
        y = x.copy()
        leakyops.leaky_relu_(y, s)
        out[f"leaky_relu_ {n}"] = y
        out[f"leaky_relu_backward {n}"] = leakyops.leaky_relu_backward(g, x, s)
    w = np.array(SLOPES, np.float64).astype(BF16)
    c = w.size
    xs = x[: (x.size // c) * c]
    gs = g[: xs.size]
    rows = xs.reshape(2, c, -1)
    out["prelu rows"] = leakyops.prelu(rows, w)
    out["prelu channels last"] = leakyops.prelu(xs.reshape(-1, c), w, axis=1)
    out["prelu_backward grad_input"] = leakyops.prelu_backward(gs.reshape(rows.shape), rows, w)[0]
    return out


def _expected() -> dict[str, np.ndarray]:
    x = _all_bf16(1)
    g = _all_bf16(2)
    out = {}
    for n, s in enumerate(SLOPES):
        out[f"leaky_relu {n}"] = ref_leaky_relu(x, s)
        out[f"leaky_relu_ {n}"] = ref_leaky_relu(x, s)
        out[f"leaky_relu_backward {n}"] = ref_leaky_relu_backward(g, x, s)
    w = np.array(SLOPES, np.float64).astype(BF16)
    c = w.size
    xs = x[: (x.size // c) * c]
    gs = g[: xs.size]
    rows = xs.reshape(2, c, -1)
    out["prelu rows"] = ref_prelu(rows, w.reshape(1, c, 1))
    out["prelu channels last"] = ref_prelu(xs.reshape(-1, c), w.reshape(1, c))
    out["prelu_backward grad_input"] = ref_prelu_backward(gs.reshape(rows.shape), rows,
                                                          w.reshape(1, c, 1))[0]
    return out


def test_every_bfloat16_input_gives_the_reference_bits():
    """All 65,536 inputs, seven slopes, five operators: the reference's bits (any NaN for
    NaN). On this CPU the kernels take the path ``kernel_paths`` names."""
    got, want = _cases(), _expected()
    assert got.keys() == want.keys()
    for name in got:
        try:
            assert_same(got[name], want[name])
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
    word = "vcvtneps2bf16" if HW else "integer rounding"
    assert all(word in p["bfloat16"] for p in _cpu.kernel_paths().values())


def _zero_lane_data() -> np.ndarray:
    """Vectors of 32 bfloat16 lanes (the instruction's step): ordinary values with one +-0
    lane (a zero result, no subnormal), +-0 with a lane whose product with a small slope is
    subnormal, a subnormal input alone, and vectors of zeros only."""
    rng = np.random.default_rng(46)
    v = (rng.standard_normal((12, 32)) * 3).astype(np.float32)
    v[0, 5] = 0.0
    v[1, 31] = -0.0
    v[2, 0], v[2, 17] = 0.0, -0.0
    v[3, 9], v[3, 20] = 0.0, 2.0 ** -120  # (times 0.01: a float32 subnormal)
    v[4, 3] = 2.0 ** -130  # (a bfloat16 subnormal input)
    v[5] = 0.0
    v[6] = -0.0
    v[7, ::2] = 0.0
    return v.ravel().astype(BF16)


def test_vectors_with_a_zero_lane_give_the_reference_bits():
    """A vector whose rounded result has a +-0 lane takes the instruction's second test (any
    subnormal?) and, only then, the integer rounding (``_vector.round_bf16_hw``): zero lanes
    beside normal ones, beside subnormal ones, and whole vectors of zeros, in every operator
    that rounds to bfloat16, at one and two threads' worth of data, at offsets across a
    vector."""
    x = _zero_lane_data()
    g = x[::-1].copy()
    for s in (0.01, -0.37, 2.0 ** -120):
        for k in (0, 1, 17):  # (where the vectors start)
            xs, gs = x[k:], g[k:]
            assert_same(leakyops.leaky_relu(xs, s), ref_leaky_relu(xs, s))
            y = xs.copy()
            leakyops.leaky_relu_(y, s)
            assert_same(y, ref_leaky_relu(xs, s))
            assert_same(leakyops.leaky_relu_backward(gs, xs, s), ref_leaky_relu_backward(gs, xs, s))
        w = np.array([s, 0.5], np.float64).astype(BF16)
        rows = x.reshape(1, 2, -1)
        assert_same(leakyops.prelu(rows, w), ref_prelu(rows, w.reshape(1, 2, 1)))
        assert_same(leakyops.prelu_backward(g.reshape(rows.shape), rows, w)[0],
                    ref_prelu_backward(g.reshape(rows.shape), rows, w.reshape(1, 2, 1))[0])
    big = np.tile(x, 200)  # (threaded)
    assert_same(leakyops.leaky_relu(big, 0.01), ref_leaky_relu(big, 0.01))


def _grad_weight_cases() -> dict[str, np.ndarray]:
    """prelu_backward on rows of every length around its loop's steps: the two-vector step of
    the instruction's path (32 elements) and the one-vector step (16), the float32 blocks (128)
    and the compensated blocks (2,048); finite bfloat16 data over a range of 2**60, signs
    mixed. The channels' float64 sums before their rounding to bfloat16
    (``_core.prelu_backward_parts``) show the order of the float32 additions in their last bits."""
    rng = np.random.default_rng(40)
    out = {}
    for n in (16, 31, 32, 33, 48, 63, 64, 96, 127, 128, 129, 160, 2047, 2048, 2049, 2080, 4144):
        x, g, w = ((rng.standard_normal(shape) * np.exp2(rng.integers(-30, 30, shape)))
                   .astype(BF16) for shape in ((2, 3, n), (2, 3, n), 3))
        gi, gw = leakyops.prelu_backward(g, x, w)
        out[f"grad_input {n}"], out[f"grad_weight {n}"] = gi, gw
        out[f"sums {n}"] = _core.prelu_backward_parts(g, x, w, 1)[1]
    return out


_CHILD = textwrap.dedent("""
    import json, sys
    sys.path[:0] = [{tests!r}, {here!r}]
    from leakyops import _cpu
    import test_bf16_paths as t
    print(json.dumps({{"hw": _cpu.bf16_convert(), "pairs": _cpu.bf16_pairs(),
                       "bits": {{f.__name__: {{k: t.bits(v).tobytes().hex()
                                             for k, v in f().items()}}
                                for f in (t._cases, t._grad_weight_cases)}}}}))
""")


def _child_bits(cap: str) -> dict:
    """Both sets of cases computed in one child with ``LEAKYOPS_MAX_CPU_ISA=cap`` (it compiles
    its kernels once: about 45 s)."""
    env = dict(os.environ, LEAKYOPS_MAX_CPU_ISA=cap)
    here = os.path.dirname(os.path.abspath(__file__))
    code = _CHILD.format(tests=os.path.dirname(here), here=here)
    r = subprocess.run([sys.executable, "-c", code], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def capped_child() -> dict:
    """The cases capped below the instruction (``f16c``: the integer rounding)."""
    return _child_bits("f16c")


@needs_hw
@pytest.mark.parametrize("cases", [_cases, _grad_weight_cases], ids=["all inputs", "grad_weight"])
def test_the_instruction_and_the_integer_rounding_give_the_same_bits(cases, capped_child):
    """The same calls in a child capped below the instruction (``LEAKYOPS_MAX_CPU_ISA=f16c``:
    the integer rounding, and prelu_backward's rows one vector a step): the same bits, NaN
    payloads included."""
    assert capped_child["hw"] is False
    theirs = capped_child["bits"][cases.__name__]
    here = cases()
    assert here.keys() == theirs.keys()
    for name, value in here.items():
        assert bits(value).tobytes().hex() == theirs[name], name


@pytest.mark.skipif(not _cpu.bf16_pairs(), reason="this CPU (or numba's target, or the cap) "
                    "takes no bfloat16 vectors in pair order (AVX2 with the integer rounding)")
def test_pair_order_gives_the_bits_of_element_order():
    """leaky_relu, leaky_relu_ and leaky_relu_backward in pair order (``_rules._bf16_pairs``:
    even and odd elements in separate lanes) against the same calls in a child capped at
    ``avx`` (element order, the portable loops): every input, seven slopes; the same bits, NaN
    payloads included. (prelu's cases, which keep the element order below the streaming
    threshold, are compared too.)"""
    theirs = _child_bits("avx")
    assert theirs["pairs"] is False and theirs["hw"] is False
    here = _cases()
    assert here.keys() == theirs["bits"]["_cases"].keys()
    for name, value in here.items():
        assert bits(value).tobytes().hex() == theirs["bits"]["_cases"][name], name


def _rounding_kernel():
    """An njit function that rounds float32 lanes to bfloat16 with the kernels' own vector
    rounding (``_rules._f2bf`` on a ``Vec``: the instruction where the CPU has it)."""
    from numba import njit

    from leakyops._kernels._rules import _f2bf
    from leakyops._kernels._vector import LANES, vload, vstore

    @njit
    def round_all(src, dst):
        for k in range(0, src.shape[0], LANES):
            vstore(dst, (k,), _f2bf(vload(src, (k,), LANES)))

    return round_all


def _integer_rounding(u: np.ndarray) -> np.ndarray:
    """float32 bits to bfloat16 bits, to nearest even; NaN quiet with its top payload."""
    hi = u >> np.uint32(16)
    rounded = (u + np.uint32(0x7FFF) + (hi & np.uint32(1))) >> np.uint32(16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(nan, hi | np.uint32(0x40), rounded).astype(np.uint16)


def _check_range(round_all, u: np.ndarray) -> None:
    got = np.empty(u.size, np.int16)
    round_all(u.view(np.float32), got)
    want = _integer_rounding(u)
    bad = np.nonzero(got.view(np.uint16) != want)[0]
    assert bad.size == 0, [(hex(u[i]), hex(got.view(np.uint16)[i]), hex(want[i]))
                           for i in bad[:5]]


@needs_hw
def test_the_vector_rounding_on_every_upper_half():
    """Every float32 upper half with the lower halves that decide the rounding (0, just below
    and above a tie, the tie, all ones): 327,680 values, shuffled."""
    uppers = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    lows = np.array([0x0000, 0x0001, 0x7FFF, 0x8000, 0xFFFF], np.uint32)
    u = (uppers[:, None] | lows[None, :]).ravel()
    u = np.random.default_rng(3).permutation(u)
    _check_range(_rounding_kernel(), u)


@pytest.mark.slow
@needs_hw
def test_the_vector_rounding_on_every_float32():
    """All 2**32 float32 values, in order, 2**26 at a time."""
    round_all = _rounding_kernel()
    step = 1 << 26
    for start in range(0, 1 << 32, step):
        _check_range(round_all, np.arange(start, start + step, dtype=np.uint64).astype(np.uint32))
