"""The contract of docs/semantics.md, point by point, for the functional core."""

from __future__ import annotations

import fractions

import ml_dtypes
import numpy as np
import pytest

import leakyops
from leakyops import _core, _cpu
from leakyops._kernels._plain import PATTERN_MAX, prelu_layout
from leakyops._kernels._team import LAST_GROUP
from refs import (BF16, DTYPE_IDS, DTYPES, assert_same, assert_same_sum, bits, random_values, ref_leaky_relu,
                  ref_leaky_relu_backward, ref_prelu, ref_prelu_backward, special_values)

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
SLOPES = [0.01, 0.2, -0.5, 0.0, -0.0, 1.0, 3.75, np.inf, -np.inf, np.nan, 1e-30, 1e30]


# §1 — the operators and their values at the edges ------------------------------------------


@dtypes
@pytest.mark.parametrize("slope", SLOPES)
def test_leaky_relu_formula_on_special_values(dtype, slope):
    x = np.concatenate([special_values(dtype), random_values(np.random.default_rng(0), 200, dtype)])
    assert_same(leakyops.leaky_relu(x, slope), ref_leaky_relu(x, slope))


@dtypes
@pytest.mark.parametrize("slope", SLOPES)
def test_leaky_relu_backward_formula_on_special_values(dtype, slope):
    rng = np.random.default_rng(1)
    x = np.concatenate([special_values(dtype), random_values(rng, 200, dtype)])
    g = random_values(rng, x.shape, dtype)
    assert_same(leakyops.leaky_relu_backward(g, x, slope), ref_leaky_relu_backward(g, x, slope))


@dtypes
def test_nan_input_gives_nan_and_backward_at_nan_is_g_times_s(dtype):
    x = np.array([np.nan, -np.nan], dtype)
    assert np.isnan(leakyops.leaky_relu(x, 0.5).astype(np.float64)).all()
    g = np.array([2.0, -4.0], dtype)
    assert_same(leakyops.leaky_relu_backward(g, x, 0.5), np.array([1.0, -2.0], dtype))


@dtypes
def test_signed_zeros(dtype):
    x = np.array([-0.0, 0.0], dtype)
    # -0.0 * 0.5 = -0.0 ; +0.0 * 0.5 = +0.0
    assert_same(leakyops.leaky_relu(x, 0.5), np.array([-0.0, 0.0], dtype))
    # a negative slope flips both signs: -0.0 * -0.5 = +0.0 ; +0.0 * -0.5 = -0.0
    assert_same(leakyops.leaky_relu(x, -0.5), np.array([0.0, -0.0], dtype))


@dtypes
def test_infinities(dtype):
    x = np.array([-np.inf, np.inf], dtype)
    y = leakyops.leaky_relu(x, 0.0)
    assert np.isnan(float(y[0])) and float(y[1]) == np.inf
    assert_same(leakyops.leaky_relu(x, 2.0), np.array([-np.inf, np.inf], dtype))


@dtypes
def test_backward_at_zero_is_the_slope(dtype):
    g = np.ones(2, dtype)
    x = np.array([0.0, -0.0], dtype)
    assert_same(leakyops.leaky_relu_backward(g, x, 0.25), np.array([0.25, 0.25], dtype))


@dtypes
def test_prelu_formula(dtype):
    rng = np.random.default_rng(2)
    x = random_values(rng, (3, 4, 5), dtype)
    w = np.array([0.25, -1.5, 0.0, np.nan], np.float64).astype(dtype)
    wb = w.reshape(1, 4, 1)
    assert_same(leakyops.prelu(x, w), ref_prelu(x, wb))


@dtypes
def test_prelu_backward_formula(dtype):
    rng = np.random.default_rng(3)
    x = random_values(rng, (3, 4, 5), dtype, special_share=0)
    g = random_values(rng, (3, 4, 5), dtype, special_share=0)
    w = np.array([0.25, -1.5, 0.0, 2.0], np.float64).astype(dtype)
    gi, gw = leakyops.prelu_backward(g, x, w)
    egi, terms = ref_prelu_backward(g, x, w.reshape(1, 4, 1), None)
    assert_same(gi, egi)
    expected = terms.sum(axis=(0, 2)).astype(dtype)
    assert gw.dtype == dtype and gw.shape == (4,)
    np.testing.assert_allclose(gw.astype(np.float64), expected.astype(np.float64), rtol=1e-2 if dtype.itemsize == 2 else 1e-6)


def test_prelu_backward_special_values():
    x = np.array([[np.nan, 1.0], [-np.inf, -2.0]], np.float32)
    g = np.array([[1.0, np.nan], [0.0, 3.0]], np.float32)
    gi, gw = leakyops.prelu_backward(g, x, np.array([0.5, 0.5], np.float32))
    # x NaN: gi = w*g, dw term NaN; x > 0 with g NaN: gi NaN, dw term 0; -inf*0 = NaN
    assert np.isnan(gi[0, 1]) and gi[0, 0] == 0.5 and gi[1, 0] == 0.0 and gi[1, 1] == 1.5
    assert np.isnan(gw[0]) and gw[1] == -6.0


@pytest.mark.parametrize("compare", [">", ">="])
def test_compare_option_differs_only_at_zero(compare):
    x = np.array([-0.0, 0.0, -1.0, 1.0, np.nan], np.float32)
    y = _core.leaky_relu_impl(x, -2.0, compare=compare)
    assert_same(y, ref_leaky_relu(x, -2.0, ge=compare == ">="))
    if compare == ">=":
        assert_same(y[:2], np.array([-0.0, 0.0], np.float32))  # kept as they are
    else:
        assert_same(y[:2], np.array([0.0, -0.0], np.float32))  # multiplied by -2


def test_compare_option_reaches_every_kernel():
    x = np.array([-0.0, 0.0, -1.0, 1.0], np.float32)
    g = np.full(4, 3.0, np.float32)
    w = np.array([-2.0], np.float32)
    for ge in (False, True):
        c = ">=" if ge else ">"
        assert_same(_core.leaky_relu_backward_impl(g, x, -2.0, compare=c),
                    ref_leaky_relu_backward(g, x, -2.0, ge=ge))
        assert_same(_core.prelu_impl(x, w, compare=c), ref_prelu(x, w, ge=ge))
        gi, gw = _core.prelu_backward_impl(g, x, w, compare=c)
        egi, terms = ref_prelu_backward(g, x, w, None, ge=ge)
        assert_same(gi, egi)
        assert gw[0] == np.float32(terms.sum())
    with pytest.raises(ValueError, match="compare"):
        _core.leaky_relu_impl(x, 0.1, compare="<")


# §2 — dtypes and precision --------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.int32, np.int64, np.uint8, np.bool_, np.complex64, object, "U3",
                                 ">f4"], ids=str)
def test_unsupported_dtypes_are_type_errors(bad):
    x = np.zeros(3, dtype=bad)
    with pytest.raises(TypeError, match=r"leaky_relu: x has dtype .*supported: float16, bfloat16"):
        leakyops.leaky_relu(x)
    with pytest.raises(TypeError, match=r"prelu: x has dtype"):
        leakyops.prelu(x, np.float32(0.1))
    with pytest.raises(TypeError, match=r"leaky_relu_backward: grad_output has dtype"):
        leakyops.leaky_relu_backward(x, np.zeros(3, np.float32), 0.1)
    # a weight of x's own (unsupported) dtype, contiguous: the contiguous paths' layout does
    # not take it (it reached numba's typing, or a KeyError, before)
    x3 = np.zeros((2, 3, 4), dtype=bad)
    for w in (np.zeros(3, dtype=bad), np.zeros(1, dtype=bad)):
        with pytest.raises(TypeError, match=r"prelu: x has dtype .*supported: float16, bfloat16"):
            leakyops.prelu(x3, w)
    with pytest.raises(TypeError, match=r"prelu_backward: x has dtype .*supported: float16"):
        leakyops.prelu_backward(x3, x3, np.zeros(3, dtype=bad))


def test_half_types_round_once_from_float32():
    # float16: 1.0009765625 (1 + 2**-10) * 0.5 is exact; pick values whose float32 product
    # lands on a float16 tie and check the rounding is to even, as float32 -> float16 does
    x = np.array([-(1 + 2 ** -10), -(1 + 3 * 2 ** -10)], np.float16)
    s = 1.5
    expected = (x.astype(np.float32) * np.float32(s)).astype(np.float16)
    assert_same(leakyops.leaky_relu(x, s), expected)
    xb = np.array([-(1 + 2 ** -7), -(1 + 3 * 2 ** -7)], np.float64).astype(BF16)
    expected = (xb.astype(np.float32) * np.float32(s)).astype(BF16)
    assert_same(leakyops.leaky_relu(xb, s), expected)


def test_float32_slope_rounded_to_float32_and_float64_kept():
    s = 0.1  # not representable: float32(0.1) != 0.1
    x32 = np.array([-1.0], np.float32)
    assert leakyops.leaky_relu(x32, s)[0] == np.float32(-1.0) * np.float32(0.1)
    x64 = np.array([-1.0], np.float64)
    assert leakyops.leaky_relu(x64, s)[0] == -0.1


def test_half_slope_is_float32_not_half():
    # 0.1 as float32 differs from 0.1 as float16; the result must use the float32 value
    x = np.array([-1000.0], np.float16)
    expected = np.float16(np.float32(-1000.0) * np.float32(0.1))
    assert leakyops.leaky_relu(x, 0.1)[0] == expected


@pytest.mark.parametrize("slope", [True, False, 2, np.int8(-3), np.int16(2), np.int32(2), np.int64(-2),
                                   np.uint8(2), np.uint16(2), np.uint32(2), np.uint64(2), np.bool_(True),
                                   np.float16(0.5), ml_dtypes.bfloat16(0.5), np.float32(0.5),
                                   np.float64(0.5), np.array(0.5), np.array(2, np.int64),
                                   np.array(0.5, BF16), fractions.Fraction(1, 4)],
                         ids=lambda v: f"{type(v).__name__}({v})")
def test_every_real_scalar_type_is_a_slope(slope):
    x = np.array([-4.0, 4.0], np.float32)
    expected = np.array([np.float32(-4.0) * np.float32(float(np.asarray(slope, np.float64))), 4.0], np.float32)
    assert_same(leakyops.leaky_relu(x, slope), expected)


def test_integer_slopes_beyond_2_24_round_to_float32():
    x = np.array([-1.0], np.float32)
    assert leakyops.leaky_relu(x, 2 ** 24 + 1)[0] == -16777216.0
    assert leakyops.leaky_relu(x.astype(np.float64), 2 ** 24 + 1)[0] == -16777217.0


def test_huge_python_int_slope_is_infinite():
    assert leakyops.leaky_relu(np.array([-1.0]), 10 ** 400)[0] == -np.inf


@pytest.mark.parametrize("bad,err", [(1j, TypeError), (np.complex64(1), TypeError), ("0.1", TypeError),
                                     (None, TypeError), (object(), TypeError), ([0.1], TypeError),
                                     (np.array([0.1, 0.2]), ValueError), (np.array([[0.1, 0.2]]), ValueError),
                                     (np.array("a"), TypeError)],
                         ids=["complex", "np.complex64", "str", "None", "object", "list", "array2", "array2d", "str0d"])
def test_bad_slopes(bad, err):
    with pytest.raises(err, match="leaky_relu: negative_slope"):
        leakyops.leaky_relu(np.zeros(2, np.float32), bad)


@dtypes
@pytest.mark.parametrize("out_dtype", DTYPES, ids=DTYPE_IDS)
def test_out_with_another_dtype_is_the_result_cast(dtype, out_dtype):
    rng = np.random.default_rng(4)
    x = random_values(rng, 50, dtype)
    out = np.empty(50, out_dtype)
    r = leakyops.leaky_relu(x, 0.3, out=out)
    assert r is out
    with np.errstate(over="ignore"):
        expected = ref_leaky_relu(x, 0.3).astype(out_dtype)
    assert_same(out, expected)


@pytest.mark.parametrize("bad", [np.int32, np.bool_, np.complex128])
def test_out_must_be_a_float_dtype(bad):
    with pytest.raises(TypeError, match="leaky_relu: out has dtype"):
        leakyops.leaky_relu(np.zeros(3, np.float32), out=np.zeros(3, bad))


def test_out_must_be_an_ndarray():
    with pytest.raises(TypeError, match="out must be a numpy.ndarray"):
        leakyops.leaky_relu(np.zeros(3, np.float32), out=[0.0, 0.0, 0.0])


@pytest.mark.parametrize("a,b,r", [(F16, F16, F16), (BF16, BF16, BF16), (F16, BF16, F32), (BF16, F16, F32),
                                   (F16, F32, F32), (BF16, F32, F32), (F32, F64, F64), (F16, F64, F64),
                                   (F64, BF16, F64), (F32, F32, F32), (F64, F64, F64)])
def test_backward_promotion(a, b, r):
    rng = np.random.default_rng(5)
    g = random_values(rng, 64, a)
    x = random_values(rng, 64, b)
    y = leakyops.leaky_relu_backward(g, x, 0.3)
    assert y.dtype == r
    assert_same(y, ref_leaky_relu_backward(g, x, 0.3))


def test_prelu_does_not_promote():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="prelu: weight has dtype float64 but x has dtype float32"):
        leakyops.prelu(x, np.zeros(3, np.float64))
    with pytest.raises(TypeError, match="prelu_backward: grad_output has dtype float16 but x has dtype float32"):
        leakyops.prelu_backward(np.zeros((2, 3), np.float16), x, np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="prelu_backward: weight has dtype"):
        leakyops.prelu_backward(x, x, np.zeros(3, BF16))


# §3 — shapes, layouts, memory ---------------------------------------------------------------


def test_array_likes_and_ranks():
    assert_same(leakyops.leaky_relu([[-2.0, 2.0]], 0.5), np.array([[-1.0, 2.0]]))
    y = leakyops.leaky_relu(np.float32(-2.0), 0.5)
    assert isinstance(y, np.ndarray) and y.shape == () and y == -1.0
    for nd in range(0, 7):
        x = random_values(np.random.default_rng(nd), (2,) * nd, np.float32)
        assert_same(leakyops.leaky_relu(x, 0.1), ref_leaky_relu(x, 0.1))


@dtypes
def test_empty_inputs(dtype):
    x = np.empty((0, 3), dtype)
    assert leakyops.leaky_relu(x).shape == (0, 3)
    assert leakyops.leaky_relu_backward(x, x, 0.1).shape == (0, 3)
    assert leakyops.prelu(x, np.ones(3, dtype), axis=1).shape == (0, 3)
    gi, gw = leakyops.prelu_backward(x, x, np.ones(3, dtype))
    assert gi.shape == (0, 3) and gw.shape == (3,) and gw.dtype == dtype and (gw.astype(float) == 0).all()
    # an empty out= (even a broadcast one, with zero strides) is fine: nothing is written
    empty_out = np.broadcast_to(np.empty((0, 1), dtype), (0, 3)).copy()
    assert leakyops.leaky_relu(x, out=empty_out) is empty_out
    assert leakyops.prelu(x, np.ones(3, dtype), out=np.empty((0, 3), dtype)).shape == (0, 3)


def _layouts(rng, dtype):
    base = random_values(rng, (6, 7, 8), dtype)
    yield "c", base
    yield "f", np.asfortranarray(base)
    yield "sliced", base[::2, 1:, ::3]
    yield "negative", base[::-1, :, ::-2]
    yield "transposed", base.transpose(2, 0, 1)
    yield "broadcast", np.broadcast_to(base[:, :1, :], (6, 7, 8))
    yield "many-axes", random_values(rng, (3, 4, 5, 6, 7), dtype)[:, ::2, :, ::-1, 1:]


@dtypes
def test_small_array_path_takes_every_layout_and_slope(dtype):
    # the small-array path calls a compiled kernel without numba's type checks: whatever it
    # accepts must come out right, and what it does not accept must reach the general path
    rng = np.random.default_rng(16)
    base = random_values(rng, 4 * 300 + 1, dtype)
    read_only = base[:300].copy()
    read_only.flags.writeable = False
    raw = np.zeros(300 * dtype.itemsize + 1, np.uint8)[1:]  # an unaligned buffer
    unaligned = raw.view(dtype)
    unaligned[...] = base[:300]
    assert not unaligned.flags.aligned
    cases = [base[:300], base[:300].reshape(3, 4, 25), np.asarray(base[7]), base[:0], read_only,
             unaligned, base[::4], base[:300][::-1]]
    for x in cases:
        for slope in (0.01, 0.01, -0.0, 0.0, float("nan"), 1e30, 2):
            got = leakyops.leaky_relu(x, slope)
            assert got.shape == x.shape and got.dtype == dtype
            assert_same(got, ref_leaky_relu(x, slope))
        # ">=" differs from ">" only at zero, and only where 0 * slope is not 0
        assert_same(_core.leaky_relu_impl(x, np.inf, compare=">="), ref_leaky_relu(x, np.inf, ge=True))
    with pytest.raises(TypeError):
        leakyops.leaky_relu(base[:300].astype(dtype.newbyteorder()), 0.01)
    with pytest.raises(ValueError, match="compare"):
        _core.leaky_relu_impl(base[:300], 0.01, compare="<")


@dtypes
def test_small_array_paths_of_in_place_and_backward(dtype):
    rng = np.random.default_rng(18)
    base = random_values(rng, 1200, dtype)
    gbase = random_values(rng, 1200, dtype)
    raw = np.zeros(300 * dtype.itemsize + 1, np.uint8)[1:]  # unaligned
    unaligned = raw.view(dtype)
    unaligned[...] = base[:300]
    xs = [base[:300], base[:300].reshape(3, 4, 25), np.asarray(base[7]), base[:0], unaligned,
          base[::4], base[:300][::-1]]
    for x in xs:
        g = gbase[:x.size].reshape(x.shape)
        for slope in (0.01, 0.01, -0.0, 0.0, float("nan"), 1e30, 2, -0.5):
            y = x.copy()
            assert leakyops.leaky_relu_(y, slope) is y
            assert_same(y, ref_leaky_relu(x, slope))
            assert_same(leakyops.leaky_relu_backward(g, x, slope), ref_leaky_relu_backward(g, x, slope))
            if not slope >= 0:  # self_is_result refuses negative and NaN slopes on every path
                with pytest.raises(ValueError, match="self_is_result"):
                    leakyops.leaky_relu_backward(g, x, slope, True)
            else:
                assert_same(leakyops.leaky_relu_backward(g, x, slope, True),
                            ref_leaky_relu_backward(g, x, slope))
        y = x.copy()
        assert_same(_core.leaky_relu_inplace_impl(y, np.inf, compare=">="), ref_leaky_relu(x, np.inf, ge=True))
        assert_same(_core.leaky_relu_backward_impl(g, x, np.inf, compare=">="),
                    ref_leaky_relu_backward(g, x, np.inf, ge=True))
    x, g = base[:300], gbase[:300]
    with np.errstate(over="ignore"):  # float64's largest values become ±inf in float32
        g2 = g.astype(F64 if dtype != F64 else F32)
    assert_same(leakyops.leaky_relu_backward(g2, x, 0.3), ref_leaky_relu_backward(g2, x, 0.3))  # promotes
    assert_same(leakyops.leaky_relu_backward(g[:1], x, 0.3), ref_leaky_relu_backward(g[:1], x, 0.3))
    for out in (np.empty_like(x), g.copy(), x.copy()):
        assert leakyops.leaky_relu_backward(g, x, 0.3, out=out) is out
        assert_same(out, ref_leaky_relu_backward(g, x, 0.3))
    gg, xx = g.copy(), x.copy()  # out is one of the inputs
    assert_same(leakyops.leaky_relu_backward(gg, x, 0.3, out=gg), ref_leaky_relu_backward(g, x, 0.3))
    assert_same(leakyops.leaky_relu_backward(g, xx, 0.3, out=xx), ref_leaky_relu_backward(g, x, 0.3))
    for shift in (1, -1):  # out overlaps an input by all but one element
        z = np.concatenate([gbase[:301]])
        gs, outs = (z[1:301], z[:300]) if shift > 0 else (z[:300], z[1:301])
        expected = ref_leaky_relu_backward(gs.copy(), x, 0.3)
        leakyops.leaky_relu_backward(gs, x, 0.3, out=outs)
        assert_same(outs, expected)
    ro = x.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        leakyops.leaky_relu_(ro, 0.3)
    with pytest.raises(TypeError):
        leakyops.leaky_relu_(list(x), 0.3)
    with pytest.raises(TypeError):
        leakyops.leaky_relu_backward(g, x, 0.3, self_is_result=1)


@dtypes
def test_small_array_path_of_prelu(dtype):
    rng = np.random.default_rng(19)
    for shape, axis in [((2, 5, 30), 1), ((2, 5, 30), -2), ((4, 6), 1), ((4, 6), -1), ((7,), 0),
                        ((3, 4, 5), 0), ((2, 3, 4, 5), 3)]:
        x = random_values(rng, shape, dtype)
        wfull = random_values(rng, 2 * shape[axis], dtype)
        for w in (wfull[:shape[axis]], wfull[::2]):  # contiguous, and strided (general path)
            wb = w.reshape([n if i == axis % x.ndim else 1 for i, n in enumerate(shape)])
            assert_same(leakyops.prelu(x, w, axis=axis), ref_prelu(x, wb))
            assert_same(_core.prelu_impl(x, w, axis, compare=">="), ref_prelu(x, wb, ge=True))
            for out in (np.empty_like(x), np.empty(shape[::-1], dtype).T, x.copy()):
                assert leakyops.prelu(x, w, axis=axis, out=out) is out
                assert_same(out, ref_prelu(x, wb))
            y = x.copy()
            assert leakyops.prelu(y, w, axis=axis, out=y) is y  # out is x
            assert_same(y, ref_prelu(x, wb))
            # prelu_backward: the same bits as the general path (prelu_backward_parts, which
            # has no small path), and grad_input as the reference
            g = random_values(rng, shape, dtype)
            for compare in (">", ">="):
                gi, gw = _core.prelu_backward_impl(g, x, w, axis, compare=compare)
                egi, acc = _core.prelu_backward_parts(g, x, w, axis, compare=compare)
                assert_same(gi, egi)
                assert_same(gw, _core.round_grad_weight(acc, dtype))
                assert gw.shape == w.shape and gw.dtype == dtype
            assert_same(leakyops.prelu_backward(g, x, w, axis=axis)[0], ref_prelu_backward(g, x, wb, None)[0])
            gb = g[(0,) * (len(shape) - 1)][None] if len(shape) > 1 else g  # broadcast grad_output
            if gb.shape != shape:
                egi, acc = _core.prelu_backward_parts(gb, x, w, axis)
                assert_same(leakyops.prelu_backward(gb, x, w, axis=axis)[0], egi)
    x = random_values(rng, (2, 4, 3), dtype)
    w = random_values(rng, 4, dtype)
    wb = w.reshape(1, 4, 1)
    z = np.concatenate([w, x.ravel()])  # out shares memory with the weight
    assert_same(leakyops.prelu(x, z[:4], out=z[:24].reshape(2, 4, 3)), ref_prelu(x, wb))
    assert_same(leakyops.prelu(x[:, :, ::-1], w), ref_prelu(x[:, :, ::-1], wb))
    with pytest.raises(ValueError, match="axis"):
        leakyops.prelu(x, w, axis=3)
    with pytest.raises(ValueError):
        leakyops.prelu(x, w, axis=0)
    with pytest.raises(TypeError):
        leakyops.prelu(x, w.astype(F64 if dtype != F64 else F32))
    with pytest.raises(TypeError):
        leakyops.prelu(x, w, axis=1.0)


@dtypes
def test_small_array_path_with_out(dtype):
    # out= on the small-array path: written directly only when it is a plain, separate,
    # writable array of x's dtype and shape; every other out still gets the documented result
    rng = np.random.default_rng(17)
    buf = random_values(rng, 1201, dtype)
    x = buf[:600].reshape(20, 30)
    want = ref_leaky_relu(x, -0.3)
    out = np.empty_like(x)
    assert leakyops.leaky_relu(x, -0.3, out=out) is out
    assert_same(out, want)
    other = F64 if dtype != F64 else F32
    for make in (lambda: np.empty((30, 20), dtype).T, lambda: np.empty_like(x, dtype=other),
                 lambda: np.zeros(600 * dtype.itemsize + 1, np.uint8)[1:].view(dtype).reshape(20, 30)):
        o = make()
        assert leakyops.leaky_relu(x, -0.3, out=o) is o
        with np.errstate(over="ignore"):  # float64's largest values cast to float32 are ±inf
            assert_same(o, want.astype(o.dtype))
    y = x.copy()  # out is x: in place
    assert leakyops.leaky_relu(y, -0.3, out=y) is y
    assert_same(y, want)
    for shift in (1, -1):  # out overlaps x by all but one element: as if it did not
        z = buf.copy()
        xs, outs = (z[1:601], z[:600]) if shift > 0 else (z[:600], z[1:601])
        expected = ref_leaky_relu(xs.copy(), -0.3)
        leakyops.leaky_relu(xs, -0.3, out=outs)
        assert_same(outs, expected)
    ro = np.zeros_like(x)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        leakyops.leaky_relu(x, -0.3, out=ro)
    assert not ro.any()
    with pytest.raises(ValueError, match="shape"):
        leakyops.leaky_relu(x, -0.3, out=np.empty((30, 20), dtype))
    with pytest.raises(TypeError):
        leakyops.leaky_relu(x, -0.3, out=[0.0] * 600)


def _abs_terms(g, x, w_shape, axis):
    """Per channel, the sum of |term| of grad_weight (float64), shaped like the weight."""
    terms = np.abs(np.where(x > 0, 0.0, x.astype(np.float64) * g.astype(np.float64)))
    if len(w_shape) == 0:
        return terms.sum()
    return np.moveaxis(terms, axis, -1).reshape(-1, w_shape[0]).sum(axis=0)


@dtypes
def test_prelu_backward_in_other_layouts(dtype):
    # the same values in other memory layouts (broadcast, sliced, Fortran order, reversed, a
    # strided out=): grad_input the same bits; grad_weight summed in memory order, so within
    # the compensated sums' error bound (the same layout gives the same bits, tested with
    # threads in tests/reliability)
    rng = np.random.default_rng(31)
    differed = 0
    for _ in range(40):
        shape = tuple(int(n) for n in rng.integers(1, 9, rng.integers(2, 5)))
        # terms of many magnitudes and both signs: sums in another order round differently
        low = -3 if dtype in (np.float16, BF16) else -12
        x = (-10.0 ** rng.uniform(low, 3, shape) * rng.choice([1, 1, -1], shape)).astype(dtype)
        g = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-2, 2, shape)).astype(dtype)
        for w_shape, axis in [((), 1), ((shape[1],), 1), ((shape[-1],), -1)]:
            w = rng.uniform(0.1, 1, w_shape).astype(dtype)
            xb = np.broadcast_to(x[:1], shape)
            egi, egw = leakyops.prelu_backward(g, np.ascontiguousarray(xb), w, axis=axis)
            gi, gw = leakyops.prelu_backward(g, xb, w, axis=axis)
            assert_same(gi, egi)
            assert_same_sum(gw, egw, _abs_terms(g, xb, w_shape, axis))
            differed += _order_sensitive(g, x)
            egi, egw = leakyops.prelu_backward(g, x, w, axis=axis)
            sliced = np.repeat(x, 2, axis=0)[::2]
            reversed_ = x[..., ::-1].copy()[..., ::-1]
            gi_out = np.zeros(tuple(2 * n for n in shape), dtype)[
                tuple(slice(1, None, 2) for _ in shape)]
            for gg, xx, out in [(np.asfortranarray(g), np.asfortranarray(x), None),
                                (g, sliced, None), (g, reversed_, None), (g, x, gi_out)]:
                gi, gw = leakyops.prelu_backward(gg, xx, w, axis=axis,
                                                 out=None if out is None else (out, None))
                assert_same(gi, egi)
                assert_same_sum(gw, egw, _abs_terms(g, x, w_shape, axis))
    if dtype == np.float64:
        # the data does exercise other orders of the additions: plain float64 sums of its terms
        # in two orders differ (the compensated sums, rounded once, mostly agree bit for bit)
        assert differed


def _order_sensitive(g, x) -> bool:
    """Whether plain float64 sums of prelu_backward's terms differ forwards and backwards."""
    x64, g64 = x.astype(np.float64).ravel(), g.astype(np.float64).ravel()
    terms = np.where(x64 > 0, 0.0, x64 * g64)
    forwards, backwards = 0.0, 0.0
    for t in terms:
        forwards += t
    for t in terms[::-1]:
        backwards += t
    return forwards != backwards


@dtypes
def test_prelu_backward_out(dtype):
    # out=(grad_input, grad_weight), either None; the rules of out= elsewhere
    rng = np.random.default_rng(23)
    x = random_values(rng, (3, 4, 50), dtype)
    g = random_values(rng, x.shape, dtype)
    w = random_values(rng, 4, dtype, special_share=0)
    egi, egw = leakyops.prelu_backward(g, x, w)
    gi, gw = np.empty_like(x), np.empty_like(w)
    res = leakyops.prelu_backward(g, x, w, out=(gi, gw))
    assert res[0] is gi and res[1] is gw
    assert_same(gi, egi)
    assert_same(gw, egw)
    for out in ((None, np.empty_like(w)), (np.empty_like(x), None), [np.empty_like(x), None]):
        got = leakyops.prelu_backward(g, x, w, out=out)
        for given, r, e in zip(out, got, (egi, egw)):
            assert given is None or r is given
            assert_same(r, e)
    # another dtype: computed in x's dtype, then cast
    other = F64 if dtype != F64 else F32
    gi64, gw64 = np.empty(x.shape, other), np.empty(w.shape, other)
    leakyops.prelu_backward(g, x, w, out=(gi64, gw64))
    with np.errstate(over="ignore"):
        assert_same(gi64, egi.astype(other))
        assert_same(gw64, egw.astype(other))
    # grad_input may be an input, or overlap one, or the weight: as if it did not
    for target in ("x", "g"):
        xx, gg = x.copy(), g.copy()
        arr = xx if target == "x" else gg
        got, _ = leakyops.prelu_backward(gg, xx, w, out=(arr, None))
        assert got is arr
        assert_same(arr, egi)
    z = np.concatenate([w, g.ravel()])
    gi_over = z[: x.size].reshape(x.shape)  # overlaps the weight and grad_output
    want_gi, want_gw = leakyops.prelu_backward(z[4:].reshape(x.shape).copy(), x, z[:4].copy())
    got = leakyops.prelu_backward(z[4:].reshape(x.shape), x, z[:4], out=(gi_over, None))
    assert_same(got[0], want_gi)
    assert_same(got[1], want_gw)
    # errors: nothing written, the message names the output
    ro_gw = np.full_like(w, 7)
    ro_gw.flags.writeable = False
    fresh = np.zeros_like(x)
    with pytest.raises(ValueError, match=r"out\[1\].*read-only"):
        leakyops.prelu_backward(g, x, w, out=(fresh, ro_gw))
    assert not fresh.any()
    with pytest.raises(ValueError, match=r"out\[0\].*shape"):
        leakyops.prelu_backward(g, x, w, out=(np.empty((3, 4, 49), dtype), None))
    with pytest.raises(ValueError, match=r"out\[1\].*shape"):
        leakyops.prelu_backward(g, x, w, out=(None, np.empty((1, 4), dtype)))
    with pytest.raises(TypeError, match="out must be None or a tuple"):
        leakyops.prelu_backward(g, x, w, out=np.empty_like(x))
    with pytest.raises(TypeError, match="length 3"):
        leakyops.prelu_backward(g, x, w, out=(None, None, None))
    with pytest.raises(TypeError, match=r"out\[0\]"):
        leakyops.prelu_backward(g, x, w, out=(x.tolist(), None))
    both = np.empty(x.size + 4, dtype)
    with pytest.raises(ValueError, match="overlap"):
        leakyops.prelu_backward(g, x, w, out=(both[: x.size].reshape(x.shape), both[x.size - 2: x.size + 2]))


@dtypes
def test_any_strides(dtype):
    rng = np.random.default_rng(6)
    for name, x in _layouts(rng, dtype):
        assert_same(leakyops.leaky_relu(x, -0.3), ref_leaky_relu(x, -0.3)), name
        g = random_values(rng, x.shape, dtype)[..., ::-1]
        assert_same(leakyops.leaky_relu_backward(g, x, 0.3), ref_leaky_relu_backward(g, x, 0.3)), name
        w = random_values(rng, x.shape[1], dtype)
        wb = w.reshape((1, -1) + (1,) * (x.ndim - 2))
        assert_same(leakyops.prelu(x, w), ref_prelu(x, wb)), name
        gi, gw = leakyops.prelu_backward(g, x, w)
        egi, terms = ref_prelu_backward(g, x, wb, None)
        assert_same(gi, egi)
        with np.errstate(all="ignore"):
            expected = terms.sum(axis=tuple(a for a in range(x.ndim) if a != 1)).astype(dtype)
        np.testing.assert_allclose(gw.astype(np.float64), expected.astype(np.float64),
                                   rtol=1e-2 if dtype.itemsize == 2 else 1e-6)
        out = np.empty(x.shape[::-1], dtype).T  # a Fortran-ordered out
        leakyops.leaky_relu(x, -0.3, out=out)
        assert_same(out, ref_leaky_relu(x, -0.3))


def test_backward_broadcasts_both_ways():
    g = np.arange(-3.0, 3.0).reshape(6, 1)
    x = np.array([[-1.0, 0.0, 2.0]])
    y = leakyops.leaky_relu_backward(g, x, 0.5)
    assert y.shape == (6, 3)
    assert_same(y, ref_leaky_relu_backward(g, x, 0.5))
    with pytest.raises(ValueError, match=r"leaky_relu_backward: grad_output of shape \(2,\) and x of shape \(3,\) do not broadcast"):
        leakyops.leaky_relu_backward(np.ones(2), np.ones(3), 0.1)


def test_prelu_weight_rules():
    rng = np.random.default_rng(7)
    x = random_values(rng, (2, 3, 4), np.float32)
    # one element, any shape: a shared slope
    for w in (np.float32(0.25), np.array([0.25], np.float32), np.full((1, 1), 0.25, np.float32)):
        assert_same(leakyops.prelu(x, w), ref_leaky_relu(x, 0.25))
    # 1-D along axis 1 (default), along -1 (channels-last)
    w3 = np.array([0.1, 0.2, 0.3], np.float32)
    assert_same(leakyops.prelu(x, w3), ref_prelu(x, w3.reshape(1, 3, 1)))
    w4 = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    assert_same(leakyops.prelu(x, w4, axis=-1), ref_prelu(x, w4))
    assert_same(leakyops.prelu(x, w4, axis=2), ref_prelu(x, w4))
    # rank >= 2: unidirectional broadcasting (ONNX PRelu)
    w2 = random_values(rng, (3, 1), np.float32)
    assert_same(leakyops.prelu(x, w2), ref_prelu(x, w2))
    wfull = random_values(rng, (2, 3, 4), np.float32)
    assert_same(leakyops.prelu(x, wfull), ref_prelu(x, wfull))
    with pytest.raises(ValueError, match=r"weight of shape \(2, 4\) does not broadcast to x of shape \(2, 3, 4\)"):
        leakyops.prelu(x, np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"does not broadcast"):
        leakyops.prelu(x, np.ones((5, 2, 3, 4), np.float32))
    # a length mismatch names the length, the axis and the size found there
    with pytest.raises(ValueError, match=r"prelu: weight has 4 elements but x has size 3 along axis 1"):
        leakyops.prelu(x, w4)


def test_prelu_one_dimensional_input_needs_an_axis():
    x = np.array([-1.0, -2.0, 3.0], np.float32)
    w = np.array([0.5, 0.25, 2.0], np.float32)
    with pytest.raises(ValueError, match=r"prelu: weight has 3 elements .*pass axis=0"):
        leakyops.prelu(x, w)
    assert_same(leakyops.prelu(x, w, axis=0), np.array([-0.5, -0.5, 3.0], np.float32))
    assert_same(leakyops.prelu(x, np.float32(0.5)), np.array([-0.5, -1.0, 3.0], np.float32))
    with pytest.raises(ValueError, match="prelu: weight has 2 elements"):
        leakyops.prelu(np.float32(1.0), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="axis must be an int"):
        leakyops.prelu(x, w, axis=0.5)


def test_prelu_backward_shapes():
    rng = np.random.default_rng(8)
    x = random_values(rng, (2, 3, 4), np.float64, special_share=0)
    g = random_values(rng, (3, 4), np.float64, special_share=0)  # broadcasts to x
    for w in (np.array(0.5), np.array([0.5]), np.full((1, 1, 1), 0.5), np.full(3, 0.5),
              np.full((3, 1), 0.5), np.full((2, 3, 4), 0.5), np.full((4,), 0.5)):
        axis = -1 if w.shape == (4,) else 1
        gi, gw = leakyops.prelu_backward(g, x, w, axis=axis)
        assert gi.shape == x.shape and gw.shape == w.shape
        if w.ndim <= 1 and w.size > 1:
            wb = w.reshape((1, 3, 1) if axis == 1 else (1, 1, 4))
        else:
            wb = w
        egi, terms = ref_prelu_backward(g, x, wb, None)
        assert_same(gi, egi)
        full_w = np.broadcast_to(w.reshape(wb.shape) if w.size > 1 else w.reshape((1,) * min(w.ndim, 3)), x.shape)
        expected = terms.sum(axis=tuple(a for a in range(3) if full_w.strides[a] == 0), keepdims=True)
        np.testing.assert_allclose(gw.reshape(-1), expected.reshape(-1), rtol=1e-12)
    with pytest.raises(ValueError, match=r"prelu_backward: grad_output of shape \(2, 1, 4, 1\) does not broadcast to x's shape"):
        leakyops.prelu_backward(np.ones((2, 1, 4, 1)), x, np.full(3, 0.5))


@dtypes
def test_prelu_rows_of_every_length_around_the_vector_widths(dtype):
    """Rows of 1 to 70 elements, slope per row and channels last: the explicit half-type
    vectors (32 lanes) with their tails (masked on AVX-512, element by element on AVX2) give
    the reference's bits."""
    rng = np.random.default_rng(37)
    for n in range(1, 71):
        x = random_values(rng, (2, 3, n), dtype)
        w = rng.uniform(-1, 1, 3).astype(dtype)
        assert_same(leakyops.prelu(x, w), ref_prelu(x, w.reshape(1, 3, 1)))
        wl = rng.uniform(-1, 1, n).astype(dtype)
        assert_same(leakyops.prelu(x, wl, axis=-1), ref_prelu(x, wl.reshape(1, 1, n)))


@dtypes
@pytest.mark.parametrize("threaded", [False, True], ids=["serial", "threaded"])
def test_prelus_short_rows_give_the_same_bits_on_every_path(dtype, threaded, monkeypatch):
    """Rows shorter than the half types' vectors run as channels last over the slopes laid out
    per element (where ``_core._SHORT_ROW`` says so on this CPU), on one thread or several
    (the outer rows split): the reference's bits, the row lengths around the limits included,
    and the same bits as the row-by-row kernel."""
    if threaded:
        monkeypatch.setattr(_core, "PARALLEL_MIN_BYTES", 1)
    rng = np.random.default_rng(43)
    for inner in (1, 2, 4, 15, 16, 17, 31, 32, 33, 55, 56, 57, 63, 64, 65):
        x = random_values(rng, (5, 7, inner), dtype)
        w = rng.uniform(-1, 1, 7).astype(dtype)
        want = ref_prelu(x, w.reshape(1, 7, 1))
        assert_same(leakyops.prelu(x, w), want)
        rowwise = np.empty_like(x)
        with monkeypatch.context() as m:
            m.setattr(_core, "_SHORT_ROW", {dt: 0 for dt in _core._SHORT_ROW})
            assert_same(leakyops.prelu(x, w, out=rowwise), want)


@dtypes
@pytest.mark.parametrize("threaded", [False, True], ids=["serial", "threaded"])
def test_prelus_channels_last_rows_of_few_channels_run_in_groups_with_each_elements_slope(
        dtype, threaded, monkeypatch):
    """Channels last (the channel the last axis, a slope per element of a row): rows of fewer
    than ``LAST_GROUP // 2`` elements run in groups of ``LAST_GROUP // C`` rows over the slopes
    repeated, the rows that fill no group after them: the reference's bits for channel counts
    around the group sizes and row counts around the groups' (one group, two, two and one row
    more), special values in x and among the slopes; one thread or the groups split among the
    threads."""
    if threaded:
        monkeypatch.setattr(_core, "PARALLEL_MIN_BYTES", 1)
    rng = np.random.default_rng(45)
    special = special_values(dtype)
    for c in (2, 3, 16, 17, 85, 127, 128, 129):
        g = max(1, LAST_GROUP // c)
        for rows in (1, g, 2 * g - 1, 2 * g, 2 * g + 1, 7 * g + 5):
            x = random_values(rng, (rows, c), dtype)
            x[:, 0] = special[rng.integers(0, len(special), rows)]
            w = rng.uniform(-2, 2, c).astype(dtype)
            w[:len(special)] = special[:c]
            want = ref_prelu(x, w.reshape(1, c))
            assert_same(leakyops.prelu(x, w), want)
            out = np.empty_like(x)
            assert leakyops.prelu(x, w, out=out) is out
            assert_same(out, want)


@dtypes
@pytest.mark.parametrize("threaded", [False, True], ids=["serial", "threaded"])
def test_prelus_rows_run_across_their_ends_with_each_rows_slope(dtype, threaded, monkeypatch):
    """A half type's rows of 32 elements or more run as one stretch of vectors, a vector
    across two rows taking each row's slope: the reference's bits for row lengths around the
    vectors' width and its multiples, every channel's slope different (special slopes among
    them), the element at each row's start and end special; one thread, or the outer axis
    split among the threads (6 outer rows) or the channels (3), into a new array or ``out=``."""
    if threaded:
        monkeypatch.setattr(_core, "PARALLEL_MIN_BYTES", 1)
    rng = np.random.default_rng(44)
    special = special_values(dtype)
    slopes = np.concatenate([special, rng.uniform(-2, 2, 13).astype(dtype)])
    for outer in (6, 3):
        for inner in (32, 33, 47, 63, 64, 65, 95, 96, 97, 391):
            c = 5 + inner % 3
            x = random_values(rng, (outer, c, inner), dtype)
            x[:, :, 0] = special[rng.integers(0, len(special), (outer, c))]
            x[:, :, -1] = -x[:, :, 0]
            w = rng.permutation(slopes)[:c]
            want = ref_prelu(x, w.reshape(1, c, 1))
            assert_same(leakyops.prelu(x, w), want)
            out = np.full_like(x, 7)
            assert leakyops.prelu(x, w, out=out) is out
            assert_same(out, want)


@dtypes
def test_a_one_element_weight_takes_leaky_relus_loop_with_the_weights_bits(dtype):
    """PReLU(1)'s weight (one element, 1-D) on a contiguous x runs leaky_relu's loop with the
    weight's value as the slope: the reference's bits for every special weight (NaN, ±inf,
    ±0, subnormals) and both comparisons, any rank and any axis the general path accepts,
    into a new array or ``out=``; an axis out of range is still refused."""
    rng = np.random.default_rng(41)
    weights = np.concatenate([special_values(dtype), rng.uniform(-2, 2, 8).astype(dtype)])
    for shape, axis in (((), 0), ((37,), 1), ((37,), -2), ((2, 3, 33), 1), ((2, 3, 33), -3),
                        ((4, 1, 5, 7), 3)):
        x = random_values(rng, shape, dtype)
        for wv in weights:
            w = np.array([wv], dtype)
            wb = w.reshape((1,) * x.ndim)
            for c, ge in ((">", False), (">=", True)):
                assert_same(_core.prelu_impl(x, w, axis, compare=c), ref_prelu(x, wb, ge=ge))
            out = np.empty_like(x)
            assert leakyops.prelu(x, w, axis=axis, out=out) is out
            assert_same(out, ref_prelu(x, wb))
    with pytest.raises(ValueError, match="out of bounds"):
        leakyops.prelu(np.ones(4, dtype), np.ones(1, dtype), axis=2)
    assert prelu_layout((2, 3), 6, 1, 1) == (1, 1, 6, False)  # (the path this test means to
    # take: one shared slope, in the compiled half of the contiguous path's test)


@dtypes
@pytest.mark.parametrize("dense_max", [_core.DENSE_BROADCAST_MAX, 0], ids=["copied", "in-place"])
def test_a_broadcast_grad_output_gives_what_its_dense_copy_gives(dtype, dense_max, monkeypatch):
    """A broadcast grad_output (autograd's gradient of a sum() is one value broadcast) is
    copied to a dense temporary up to DENSE_BROADCAST_MAX elements, so the contiguous kernels
    run: the same bits as the dense copy, grad_weight included. Above (here: any size), the
    general path reads it in place: the same grad_input, grad_weight within the sums' error."""
    monkeypatch.setattr(_core, "DENSE_BROADCAST_MAX", dense_max)
    rng = np.random.default_rng(31)
    def values(shape):
        return (rng.standard_normal(shape) * 10.0 ** rng.uniform(-2, 2, shape)).astype(dtype)

    x = values((4, 6, 37))
    w = rng.uniform(0.1, 1, 6).astype(dtype)
    for g in (np.broadcast_to(np.asarray(1.5, dtype), x.shape),
              np.broadcast_to(values((1, 6, 37)), x.shape),
              np.broadcast_to(values((4, 6, 1)), x.shape)):
        dense = np.ascontiguousarray(g)
        egi, egw = leakyops.prelu_backward(dense, x, w)
        gi, gw = leakyops.prelu_backward(g, x, w)
        assert_same(gi, egi)
        if dense_max:
            assert_same(gw, egw)
        else:
            assert_same_sum(gw, egw, _abs_terms(dense, x, w.shape, 1))
        assert_same(leakyops.leaky_relu_backward(g, x, 0.25),
                    leakyops.leaky_relu_backward(dense, x, 0.25))
        assert_same(leakyops.leaky_relu_backward(dense, g, 0.25),
                    leakyops.leaky_relu_backward(dense, np.ascontiguousarray(g), 0.25))


@dtypes
def test_out_may_be_the_input(dtype):
    rng = np.random.default_rng(9)
    x = random_values(rng, (5, 6), dtype)
    expected = ref_leaky_relu(x, 0.3)
    assert leakyops.leaky_relu(x, 0.3, out=x) is x
    assert_same(x, expected)
    g = random_values(rng, (5, 6), dtype)
    t = random_values(rng, (5, 6), dtype)
    expected = ref_leaky_relu_backward(g, t, 0.3)
    leakyops.leaky_relu_backward(g, t, 0.3, out=g)
    assert_same(g, expected)
    w = random_values(rng, 6, dtype)
    expected = ref_prelu(x, w)
    leakyops.prelu(x, w, axis=1, out=x)
    assert_same(x, expected)


def test_partial_overlap_is_as_if_no_overlap():
    rng = np.random.default_rng(10)
    buf = random_values(rng, 100, np.float32)
    x = buf[:80].copy()
    expected = ref_leaky_relu(x, -0.5)
    x_view, out_view = buf[:80], buf[20:]
    leakyops.leaky_relu(x_view, -0.5, out=out_view)
    assert_same(buf[20:], expected)
    buf = random_values(rng, 100, np.float32)
    x = buf[20:].copy()
    leakyops.leaky_relu(buf[20:], -0.5, out=buf[:80])
    assert_same(buf[:80], ref_leaky_relu(x, -0.5))
    # reversed view of itself
    a = random_values(rng, 50, np.float32)
    expected = ref_leaky_relu(a[::-1].copy(), 0.1)
    leakyops.leaky_relu(a[::-1], 0.1, out=a)
    assert_same(a, expected)
    # backward: out overlapping a broadcast grad
    g = random_values(rng, (4, 4), np.float32)
    x2 = random_values(rng, (4, 4), np.float32)
    expected = ref_leaky_relu_backward(g[0].copy(), x2, 0.2)
    out = g  # g[0] is read as a broadcast row while out (all of g) is written
    leakyops.leaky_relu_backward(g[0], x2, 0.2, out=out)
    assert_same(out, expected)
    # prelu: out overlapping the weight
    xw = random_values(rng, (3, 4), np.float32)
    w = xw[0].copy()
    expected = ref_prelu(xw, w)
    leakyops.prelu(xw, xw[0], axis=1, out=xw)
    assert_same(xw, expected)


def _bwd_threads_from(dtype) -> int:
    """The elements from which prelu_backward's contiguous path runs threaded (the thread
    thresholds the core's weights give)."""
    return _cpu.thread_thresholds()["prelu_backward"][np.dtype(dtype).name]


@dtypes
@pytest.mark.parametrize("threaded", [False, True], ids=["one-thread", "threaded"])
@pytest.mark.parametrize("inner", [5, 300], ids=["short-rows", "rows"])
def test_prelu_out_beside_or_over_x_and_the_weight(dtype, threaded, inner):
    """prelu's out given in one buffer with x or the weight, one element past its end or
    before its start (the contiguous path) and overlapping it by one element (the kernels'
    bounds tests send it the general way): the results of copies, on one thread and on the
    threads, rows short enough for the laid-out slopes where this CPU takes them and long."""
    rng = np.random.default_rng(37)
    c = 4
    outer = 2 * -(-_bwd_threads_from(dtype) // (c * inner)) if threaded else 3
    shape, n = (outer, c, inner), outer * c * inner
    x = random_values(rng, shape, dtype)
    w = random_values(rng, c, dtype, special_share=0)
    want = leakyops.prelu(x, w)
    for name, size in (("x", n), ("w", c)):
        for gap in (0, -1):
            for out_first in (False, True):
                buf = np.zeros(n + size + 1, dtype)
                at, op_at = (size + gap, 0) if not out_first else (0, n + gap)
                out = buf[at:at + n].reshape(shape)
                arrays = {"x": x, "w": w}
                held = buf[op_at:op_at + size]
                held[...] = arrays[name].reshape(-1)
                arrays[name] = held.reshape(arrays[name].shape)
                got = leakyops.prelu(arrays["x"], arrays["w"], out=out)
                assert got is out, (name, gap, out_first)
                assert_same(out, want)


@dtypes
@pytest.mark.parametrize("outer", [1, 2, 3, 4, 8])
def test_prelus_threaded_split_gives_the_same_bits(dtype, outer):
    """The threaded forward splits the outer axis where it divides evenly among the threads
    (else the larger of the outer axis and the channels): every split gives the reference's
    bits, on two threads and on three (thread counts a 2-CPU machine allows: numba's pool
    may have fewer, then the count is capped)."""
    rng = np.random.default_rng(35)
    c = 6
    inner = PATTERN_MAX // c + 4099 // outer  # (threaded for every dtype; long rows)
    x = random_values(rng, (outer, c, inner), dtype)
    w = random_values(rng, c, dtype, special_share=0)
    want = ref_prelu(x, w.reshape(1, c, 1))
    for threads in (2, 3):
        with leakyops.thread_limit(threads):
            assert_same(leakyops.prelu(x, w), want)
            out = np.empty_like(x)
            leakyops.prelu(x, w, out=out)
            assert_same(out, want)


@dtypes
@pytest.mark.parametrize("threaded", [False, True], ids=["one-thread", "threaded"])
def test_prelu_backward_grad_input_beside_or_over_each_operand(dtype, threaded):
    """grad_input given in one buffer with another operand, one element past its end or
    before its start (no overlap: the contiguous path) and overlapping it by one element
    (the kernel's own bounds test on one thread, Python's on the threads, sends it the general
    way): grad_output, x, the weight as if they did not share (the results of copies), a
    grad_weight that overlaps grad_input refused. The sizes: one thread, and the threads."""
    rng = np.random.default_rng(31)
    c, n2 = 4, (_bwd_threads_from(dtype) // 4 + 7 if threaded else 13)
    shape, n = (1, c, n2), c * n2
    x, g = random_values(rng, shape, dtype), random_values(rng, shape, dtype)
    w = random_values(rng, c, dtype, special_share=0)
    want_gi, want_gw = leakyops.prelu_backward(g, x, w)
    for name, size in (("g", n), ("x", n), ("w", c), ("gw", c)):
        for gap in (0, -1):  # (gi right after the operand; gi over its last element)
            for gi_first in (False, True):
                buf = np.zeros(n + size + 1, dtype)
                at = size + gap if not gi_first else 0
                op_at = 0 if not gi_first else n + gap
                gi = buf[at:at + n].reshape(shape)
                arrays = {"g": g, "x": x, "w": w, "gw": np.zeros(c, dtype)}
                held = buf[op_at:op_at + size]
                if name != "gw":
                    held[...] = arrays[name].reshape(-1)
                arrays[name] = held.reshape(arrays[name].shape)
                if name == "gw" and gap == -1:
                    with pytest.raises(ValueError, match="overlap"):
                        leakyops.prelu_backward(arrays["g"], arrays["x"], arrays["w"],
                                                out=(gi, arrays["gw"]))
                    continue
                got = leakyops.prelu_backward(arrays["g"], arrays["x"], arrays["w"],
                                              out=(gi, arrays["gw"]))
                assert got[0] is gi and got[1] is arrays["gw"], (name, gap, gi_first)
                assert_same(gi, want_gi)
                assert_same(arrays["gw"], want_gw)


@pytest.mark.parametrize("shared", ["x", "grad_output", "weight"])
def test_prelu_backward_grad_weight_sharing_an_input_is_as_if_it_did_not(shared):
    """grad_weight written over memory an input still needs, on the threaded contiguous path:
    the results are those of unshared copies. Each thread takes half the channels; the first
    half rounds its bfloat16 grad_input through the slower subnormal branch (g * w below
    2**-126), so the second half finishes first. It wrote its grad_weight there before the
    first half had read the last row of channel 0, where grad_weight lies (2 threads: the x and
    grad_output cases failed before the fix; the weight case is there for completeness)."""
    rng = np.random.default_rng(28)
    n0, c, n2 = 64, 64, 300
    x = -np.abs(rng.standard_normal((n0, c, n2))).astype(BF16)
    g = rng.standard_normal((n0, c, n2)).astype(BF16)
    g[:, :c // 2] = (g[:, :c // 2].astype(np.float32) * 2.0 ** -125).astype(BF16)
    w = np.full(c, 0.25, BF16)
    expected = leakyops.prelu_backward(g.copy(), x.copy(), w.copy())
    with leakyops.thread_limit(2):
        for _ in range(5):
            xs, gs = x.copy(), g.copy()
            ws = np.concatenate([w, w])  # (room for a grad_weight that overlaps half of it)
            if shared == "x":
                out = xs.reshape(-1)[(n0 - 1) * c * n2:][:c]  # the last row of channel 0
            elif shared == "grad_output":
                out = gs.reshape(-1)[(n0 - 1) * c * n2:][:c]
            else:
                out = ws[c // 2:][:c]  # weight elements 32-63 and beyond
            gi, gw = leakyops.prelu_backward(gs, xs, ws[:c], out=(None, out))
            assert gw is out
            assert_same(gi, expected[0])
            assert_same(gw, expected[1])


def test_read_only_outputs_are_rejected_and_untouched():
    x = np.array([-1.0, 2.0], np.float32)
    out = np.full(2, 7.0, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="leaky_relu: out is read-only"):
        leakyops.leaky_relu(x, out=out)
    assert (out == 7.0).all()
    ro = x.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="leaky_relu_: x is read-only"):
        leakyops.leaky_relu_(ro)
    assert_same(ro, x)
    with pytest.raises(TypeError, match="leaky_relu_: x must be a numpy.ndarray"):
        leakyops.leaky_relu_([1.0, -1.0])
    with pytest.raises(ValueError, match="internal overlap"):
        leakyops.leaky_relu(x, out=np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (2,), (0,)))


def test_in_place_returns_x_and_matches_forward():
    rng = np.random.default_rng(11)
    for dtype in DTYPES:
        x = random_values(rng, (7, 9), dtype)[:, ::2]
        expected = ref_leaky_relu(x, 0.2)
        assert leakyops.leaky_relu_(x, 0.2) is x
        assert_same(x, expected)


# §4 — errors ---------------------------------------------------------------------------------


def test_errors_never_leave_a_partial_out():
    x = np.array([-1.0, 2.0], np.float32)
    sentinel = np.full(2, 7.0, np.float32)
    for call in (lambda o: leakyops.leaky_relu(x, "bad", out=o),
                 lambda o: leakyops.leaky_relu(x, np.array([1.0, 2.0]), out=o),
                 lambda o: leakyops.leaky_relu_backward(x, x, -0.1, True, out=o),
                 lambda o: leakyops.leaky_relu_backward(x, np.ones(3, np.float32), 0.1, out=o),
                 lambda o: leakyops.prelu(x, np.ones(3, np.float32), axis=0, out=o),
                 lambda o: leakyops.prelu(x, np.ones(2, np.float64), axis=0, out=o),
                 lambda o: leakyops.leaky_relu(np.ones(3, np.float32), out=o)):
        out = sentinel.copy()
        with pytest.raises((TypeError, ValueError)):
            call(out)
        assert (out == 7.0).all()


def test_out_shape_must_match_exactly():
    with pytest.raises(ValueError, match=r"leaky_relu: out has shape \(1, 2\), the result has shape \(2,\)"):
        leakyops.leaky_relu(np.zeros(2, np.float32), out=np.zeros((1, 2), np.float32))
    with pytest.raises(ValueError, match=r"leaky_relu_backward: out has shape"):
        leakyops.leaky_relu_backward(np.zeros((2, 1)), np.zeros(3), 0.1, out=np.zeros(3))


@pytest.mark.parametrize("slope", [-0.1, -np.inf, np.nan])
def test_self_is_result_needs_a_non_negative_slope(slope):
    with pytest.raises(ValueError, match="leaky_relu_backward: self_is_result=True needs negative_slope >= 0"):
        leakyops.leaky_relu_backward(np.ones(2), np.ones(2), slope, True)


@pytest.mark.parametrize("slope", [0.0, -0.0, 0.01, 2.0])
def test_self_is_result_with_non_negative_slopes(slope):
    x = np.array([-2.0, -0.0, 0.0, 3.0])
    y = leakyops.leaky_relu(x, slope)
    g = np.array([1.0, 2.0, 3.0, 4.0])
    got = leakyops.leaky_relu_backward(g, y, slope, self_is_result=True)
    assert_same(got, ref_leaky_relu_backward(g, y, slope))


def test_error_messages_name_function_argument_and_value():
    with pytest.raises(TypeError) as e:
        leakyops.prelu_backward(np.zeros(3, np.int8), np.zeros(3, np.float32), np.float32(1))
    msg = str(e.value)
    assert msg.startswith("prelu_backward: ") and "int8" in msg and "float32" in msg
    with pytest.raises(TypeError, match="leaky_relu: x must be an array"):
        leakyops.leaky_relu(None)
    with pytest.raises(TypeError, match="leaky_relu: x"):
        leakyops.leaky_relu("abc")
    with pytest.raises(TypeError, match="self_is_result must be a bool"):
        leakyops.leaky_relu_backward(np.ones(2), np.ones(2), 0.1, "yes")


def test_bits_helper_detects_sign_of_zero():
    # the comparisons in this file rest on bit equality: make sure it tells -0.0 from +0.0
    with pytest.raises(AssertionError):
        assert_same(np.array([0.0]), np.array([-0.0]))
    assert bits(np.array([-0.0], np.float16))[0] == 0x8000
