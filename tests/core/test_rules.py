"""The core's shape-only and dtype rules that front-ends call (dask's planner, torch's fake
kernels, oneDNN's model), and the ``bf16_flush=`` option of oneDNN's bfloat16 conversion."""

import math

import ml_dtypes
import numpy as np
import pytest

from leakyops import _core

BF16 = np.dtype(ml_dtypes.bfloat16)
NAN = float("nan")


@pytest.mark.parametrize("x_shape, w_shape, axis, expected", [
    ((2, 3, 4), (), 1, (1, 1, 1)),
    ((2, 3, 4), (1, 1), 1, (1, 1, 1)),
    ((2, 3, 4), (3,), 1, (1, 3, 1)),
    ((2, 3, 4), (4,), -1, (1, 1, 4)),
    ((5,), (5,), 0, (5,)),
    ((2, 3, 4), (3, 1), 1, (1, 3, 1)),
    ((2, 3, 4), (2, 1, 4), 1, (2, 1, 4)),
    ((NAN, 3, 4), (3,), 1, (1, 3, 1)),     # unknown extents elsewhere: fine
    ((2, NAN, 4), (3,), 1, (1, 3, 1)),     # unknown along the weight: not compared
    ((None, 3), (7, 3), 1, (7, 3)),
])
def test_prelu_weight_shape(x_shape, w_shape, axis, expected):
    assert _core.prelu_weight_shape(x_shape, w_shape, axis) == expected


@pytest.mark.parametrize("x_shape, w_shape, axis, error, match", [
    ((2, 3, 4), (4,), 1, ValueError, r"^prelu: weight has 4 elements but x has size 3 along axis 1"),
    ((2, 3, 4), (3,), 3, ValueError, r"axis=3 is out of range for x of shape \(2, 3, 4\)"),
    ((5,), (5,), 1, ValueError, r"for a 1-D x pass axis=0"),
    ((), (2,), 0, ValueError, r"out of range"),
    ((2, 3, 4), (3,), 1.0, TypeError, r"axis must be an int, got float"),
    ((2, 3, 4), (2, 4), 1, ValueError, r"weight of shape \(2, 4\) does not broadcast to x of shape"),
    ((3, 4), (1, 3, 4), 1, ValueError, r"does not broadcast"),
    ((NAN, 3), (2, 4), 1, ValueError, r"does not broadcast"),  # known extents still count
    # a one-element weight ignores the axis, but it must still be one (docs/semantics.md, section 4)
    ((2, 3, 4), (), 5, ValueError, r"^prelu: axis 5 is out of bounds for x of shape \(2, 3, 4\)"),
    ((2, 3, 4), (1,), "1", TypeError, r"^prelu: axis must be an int, got str"),
    ((2, 3, 4), (3,), True, TypeError, r"^prelu: axis must be an int, got bool"),
    ((2, 3, 4), (1,), np.True_, TypeError, r"^prelu: axis must be an int, got bool"),
])
def test_prelu_weight_shape_errors(x_shape, w_shape, axis, error, match):
    with pytest.raises(error, match=match):
        _core.prelu_weight_shape(x_shape, w_shape, axis)


def test_prelu_weight_shape_is_the_rule_prelu_applies():
    x = np.ones((2, 3, 4), np.float32)
    for w_shape, axis in [((3,), 1), ((4,), -1), ((3, 1), 1), ((2, 3, 4), 0), ((), -3)]:
        w = np.full(w_shape, 0.5, np.float32)
        placed = _core.prelu_weight_shape(x.shape, w.shape, axis)
        expected = np.where(x > 0, x, x * w.reshape(placed))
        np.testing.assert_array_equal(_core.prelu_impl(x, w, axis), expected)


def test_prelu_dtype():
    assert _core.prelu_dtype(np.float16, np.float16, np.float16) == np.float16
    with pytest.raises(TypeError, match=r"^p: weight has dtype float64 but x has dtype float32; "
                                        r"prelu does not promote"):
        _core.prelu_dtype(np.float32, np.float64, fname="p")
    with pytest.raises(TypeError, match=r"grad_output has dtype float16 .* prelu_backward does not"):
        _core.prelu_dtype(np.float32, np.float32, np.float16)
    with pytest.raises(TypeError, match=r"^prelu: x has dtype int8; supported"):
        _core.prelu_dtype(np.int8, np.int8)


def test_check_dtype_and_slope_value():
    assert _core.check_dtype("float32", "f", "x") == np.float32
    assert _core.check_dtype(BF16, "f", "x") == BF16
    with pytest.raises(TypeError, match=r"^f: x has dtype int64"):
        _core.check_dtype(np.int64, "f", "x")
    assert _core.slope_value(np.float16(0.1)) == float(np.float16(0.1))
    assert _core.slope_value(True) == 1.0 and _core.slope_value(10**400) == math.inf
    with pytest.raises(TypeError, match=r"^leaky_relu: negative_slope must be a real scalar"):
        _core.slope_value("0.1")


@pytest.mark.parametrize("slope, ok", [(0.0, True), (0.5, True), (-0.5, False), (NAN, False),
                                       (-0.0, True)])
def test_check_self_is_result(slope, ok):
    _core.check_self_is_result(slope, False)  # only True needs the rule
    if ok:
        _core.check_self_is_result(slope, True)
    else:
        with pytest.raises(ValueError, match="^leaky_relu_backward: self_is_result=True needs "
                                             "negative_slope >= 0"):
            _core.check_self_is_result(slope, True)
    with pytest.raises(TypeError, match="self_is_result must be a bool"):
        _core.check_self_is_result(slope, 1)


def _bits(a):
    return np.asarray(a).view(np.uint16)


def test_bf16_flush_leaky_relu():
    tiny = 2.0**-126
    s = 0.4999
    # x * s in float32: just below 2**-126 (which rounds up to 2**-126 in bfloat16 without
    # the flush), further below, above, and values the slope does not touch
    x = np.array([-tiny * 2, -tiny * 1.5, -tiny * 4, -1.0, 3.0, tiny * 1.5], np.float32).astype(BF16)
    plain = _core.leaky_relu_impl(x, s, compare="dnnl-eltwise")
    flushed = _core.leaky_relu_impl(x, s, compare="dnnl-eltwise", bf16_flush=True)
    x32 = x.astype(np.float32)
    wide = np.where(x32 > 0, x32, x32 * np.float32(s))
    expected = np.where(np.abs(wide) < np.float32(tiny), np.copysign(0.0, wide), wide).astype(BF16)
    assert (_bits(flushed) == _bits(expected)).all()
    assert list(_bits(flushed)[:2]) == [0x8000, 0x8000]
    assert plain[0] == np.float32(-tiny)  # without the flush: rounded up to the normal -2**-126
    assert (_bits(plain)[2:] == _bits(flushed)[2:]).all()
    # the option concerns bfloat16 results only
    y = np.array([-tiny * 2, -tiny], np.float32)
    assert (_core.leaky_relu_impl(y, s, bf16_flush=True).view(np.uint32)
            == _core.leaky_relu_impl(y, s).view(np.uint32)).all()


def test_bf16_flush_prelu_and_grad_weight():
    tiny = 2.0**-126
    x = np.array([[-tiny * 1.5, 2.0], [-1.0, -tiny]], np.float32).astype(BF16)
    w = np.array([0.5, 0.25], np.float32).astype(BF16)
    y = _core.prelu_impl(x, w, 1, compare="dnnl-jit", bf16_flush=True)
    assert _bits(y)[0, 0] == 0x8000 and _bits(y)[1, 1] == 0x8000  # -0.0
    assert y[1, 0] == np.float32(-0.5)
    g = np.full_like(x, -tiny)  # where x < 0 the gradient w * g lies below 2**-126
    gi, _ = _core.prelu_backward_parts(g, x, w, 1, compare="dnnl-jit", bf16_flush=True)
    assert (_bits(gi) == np.array([[0x8000, _bits(g)[0, 1]], [0x8000, 0x8000]])).all()
    gi_plain, _ = _core.prelu_backward_parts(g, x, w, 1, compare="dnnl-jit")
    assert _bits(gi_plain)[0, 0] != 0x8000
    gw = _core.round_grad_weight(np.array([tiny * 0.75, -tiny * 0.9, 1.0]), BF16, bf16_flush=True)
    assert list(_bits(gw)) == [0x0000, 0x8000, 0x3F80]
