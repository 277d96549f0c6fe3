"""Property-based tests (hypothesis): random shapes, strides, dtypes, slopes and overlaps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import leakyops
from refs import (DTYPES, assert_same, exact_sum, ref_leaky_relu, ref_leaky_relu_backward,
                  ref_prelu, ref_prelu_backward, special_values)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

dtypes = st.sampled_from(DTYPES)
slopes = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                   st.integers(-(2 ** 40), 2 ** 40), st.booleans())
shapes = st.lists(st.integers(0, 5), min_size=0, max_size=5).map(tuple)


@st.composite
def arrays(draw, dtype=None, shape=None):
    """An array of random values (specials mixed in) seen through a random strided view."""
    dtype = draw(dtypes) if dtype is None else dtype
    shape = draw(shapes) if shape is None else shape
    swap = len(shape) >= 2 and draw(st.booleans())
    if swap:  # build the transposed shape, swap back below: same shape, other strides
        shape = (shape[-1],) + tuple(shape[1:-1]) + (shape[0],)
    steps = [draw(st.sampled_from([1, 2, -1, -2])) for _ in shape]
    base_shape = tuple(max(1, n * abs(s)) for n, s in zip(shape, steps))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    base = (rng.standard_normal(base_shape) * 3).astype(dtype)
    flat = base.reshape(-1)
    sp = special_values(dtype)
    mask = rng.random(flat.size) < 0.2
    flat[mask] = sp[rng.integers(0, sp.size, int(mask.sum()))]
    view = base[tuple(slice(None, None, s) if n else slice(0, 0) for n, s in zip(shape, steps))]
    if swap:
        view = view.swapaxes(0, -1)
    return view


@SETTINGS
@given(arrays(), slopes)
def test_leaky_relu_matches_reference(x, slope):
    s = float(slope)
    assert_same(leakyops.leaky_relu(x, slope), ref_leaky_relu(x, s))


@SETTINGS
@given(st.data(), slopes)
def test_backward_matches_reference_with_broadcasting(data, slope):
    x = data.draw(arrays())
    # grad_output: x's shape with some axes collapsed to 1 (broadcast), in another dtype
    gshape = tuple(n if data.draw(st.booleans()) else 1 for n in x.shape)
    g = data.draw(arrays(shape=gshape))
    s = float(slope)
    assert_same(leakyops.leaky_relu_backward(g, x, slope), ref_leaky_relu_backward(g, x, s))


@SETTINGS
@given(st.data())
def test_prelu_and_backward_match_reference(data):
    dtype = data.draw(dtypes)
    x = data.draw(arrays(dtype=dtype, shape=data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple))))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    c = x.shape[axis]
    w = (np.random.default_rng(c).standard_normal(c) * 0.5).astype(dtype)
    wb = w.reshape([c if a == axis % x.ndim else 1 for a in range(x.ndim)])
    assert_same(leakyops.prelu(x, w, axis=axis), ref_prelu(x, wb))
    g = data.draw(arrays(dtype=dtype, shape=x.shape))
    gi, gw = leakyops.prelu_backward(g, x, w, axis=axis)
    egi, terms = ref_prelu_backward(g, x, wb, None)
    assert_same(gi, egi)
    if dtype == np.float64:  # (float64 terms and their sums can overflow: the exact sum)
        per_channel = np.moveaxis(terms, axis, 0).reshape(c, -1)
        expected = np.array([exact_sum(t) for t in per_channel])
    else:  # (the other kinds' terms are exact, their float64 sum finite where theirs is)
        with np.errstate(all="ignore"):
            expected = terms.sum(axis=tuple(a for a in range(x.ndim) if a != axis % x.ndim)).astype(dtype)
    np.testing.assert_allclose(gw.astype(np.float64), expected.astype(np.float64),
                               rtol=1e-2 if dtype.itemsize == 2 else 1e-6, atol=0)


@SETTINGS
@given(st.data(), st.floats(-3, 3))
def test_out_overlapping_the_input_is_as_if_it_did_not(data, slope):
    dtype = data.draw(dtypes)
    n = data.draw(st.integers(1, 60))
    buf = (np.random.default_rng(n).standard_normal(2 * n) * 3).astype(dtype)
    a, b = data.draw(st.integers(0, n)), data.draw(st.integers(0, n))
    step_in, step_out = data.draw(st.sampled_from([1, -1])), data.draw(st.sampled_from([1, -1]))
    x = buf[a:a + n][::step_in]
    out = buf[b:b + n][::step_out]
    expected = ref_leaky_relu(x.copy(), slope)
    leakyops.leaky_relu(x, slope, out=out)
    assert_same(out, expected)


@SETTINGS
@given(arrays(), st.sampled_from(DTYPES))
def test_out_of_any_float_dtype_is_the_cast_result(x, out_dtype):
    out = np.empty(x.shape, out_dtype)
    with np.errstate(over="ignore"):
        expected = ref_leaky_relu(x, 0.25).astype(out_dtype)
    assert leakyops.leaky_relu(x, 0.25, out=out) is out
    assert_same(out, expected)


@pytest.mark.parametrize("bad", ["x", None, object(), [[1.0], [1.0, 2.0]], {"a": 1}, np.array(["a"]),
                                 np.array([1, 2], object), 10 ** 30, [10 ** 30]],
                         ids=["str", "None", "object", "ragged", "dict", "str-array", "object-array",
                              "huge-int", "huge-int-list"])
def test_hostile_inputs_get_a_type_error(bad):
    for call in (lambda: leakyops.leaky_relu(bad), lambda: leakyops.leaky_relu_backward(bad, np.ones(1), 0.1),
                 lambda: leakyops.prelu(bad, np.ones(1)), lambda: leakyops.prelu_backward(np.ones(1), bad, np.ones(1))):
        with pytest.raises(TypeError):
            call()
