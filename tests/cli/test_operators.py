"""The operator table (``leakyops._operators``) that the command line, the demo, the benchmark
and these tests read: it describes the public functions, and every row's core call gives its
reference's results."""

import inspect

import numpy as np
import pytest
from refs import DTYPE_IDS, DTYPES, assert_same, random_values

import leakyops
from leakyops import _reference, _verify
from leakyops._operators import OPERATORS, OPS, SUMS

OPERATOR_IDS = list(OPERATORS)


def _arrays(op, dtype, rng, special_share=0.1):
    """Inputs of ``op`` on an NCHW-like shape: a strided x, a broadcast gradient, 4 channels."""
    base = random_values(rng, (3, 4, 10), dtype, special_share)
    pool = {"x": base[:, :, ::2],
            "grad_output": random_values(rng, (3, 4, 1) if op.name == "leaky_relu_backward" else (3, 4, 5),
                                         dtype, special_share),
            "weight": random_values(rng, (4,), dtype, special_share)}
    return {name: pool[name] for name in op.inputs}


def test_the_table_lists_the_public_operators_with_their_arguments():
    assert OPS == ("leaky_relu", "leaky_relu_", "leaky_relu_backward", "prelu", "prelu_backward")
    assert set(OPS) <= set(leakyops.__all__)
    for op in OPERATORS.values():
        params = list(inspect.signature(getattr(leakyops, op.name)).parameters)
        assert params[:len(op.inputs)] == list(op.inputs), op.name
        assert ("out" in params) != op.in_place, op.name


def test_bytes_moved_counts_the_arrays_of_x_size():
    # what docs/cli.md states: 2 arrays for the forwards, 3 for the backwards, the weight negligible
    assert {name: op.arrays_moved for name, op in OPERATORS.items()} == {
        "leaky_relu": 2, "leaky_relu_": 2, "leaky_relu_backward": 3, "prelu": 2, "prelu_backward": 3}
    assert OPERATORS["prelu_backward"].bytes_moved(1000, 2) == 6000


@pytest.mark.parametrize("compare", [">", ">="])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", OPERATOR_IDS)
def test_every_core_call_gives_its_reference(name, dtype, compare):
    op = OPERATORS[name]
    arrays = _arrays(op, dtype, np.random.default_rng(7))
    params = {"slope": -0.75, "axis": 1}
    expected = op.reference(arrays, params, compare=compare)
    given = {k: v.copy() for k, v in arrays.items()}
    results = op.call(given, params, compare=compare)
    if op.in_place:
        assert results["y"] is given["x"]
    for out in op.outputs:
        if out not in SUMS:  # the sums, over special values, are checked below on finite data
            assert_same(results[out], expected[out])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", [n for n, op in OPERATORS.items() if set(op.outputs) & SUMS])
def test_sums_are_the_references_to_the_relative_error_standard(name, dtype):
    op = OPERATORS[name]
    arrays = _arrays(op, dtype, np.random.default_rng(8), special_share=0)
    results, expected = op.call(arrays), op.reference(arrays)
    for out in SUMS & set(op.outputs):
        assert results[out].dtype == expected[out].dtype and results[out].shape == expected[out].shape
        assert _verify.compare(results[out], expected[out], "relative-error").passed


@pytest.mark.parametrize("name", OPERATOR_IDS)
def test_the_public_function_is_the_table_call(name):
    op = OPERATORS[name]
    arrays = _arrays(op, np.dtype(np.float32), np.random.default_rng(9))
    args = [arrays[n].copy() for n in op.inputs] + ([0.2] if "slope" in op.params else [])
    public = getattr(leakyops, name)(*args)
    table = op.call({n: a.copy() for n, a in arrays.items()}, {"slope": 0.2})
    for got, want in zip(public if len(op.outputs) > 1 else (public,), table.values(), strict=True):
        assert_same(got, want)


def test_the_references_place_the_weight_by_prelus_rules():
    x = np.zeros((2, 3, 4), np.float32)
    assert _reference.place_weight(np.ones(1), x.shape).shape == ()             # shared
    assert _reference.place_weight(np.ones(3), x.shape).shape == (1, 3, 1)      # along axis 1
    assert _reference.place_weight(np.ones(4), x.shape, -1).shape == (1, 1, 4)  # channels-last
    assert _reference.place_weight(np.ones((3, 1)), x.shape).shape == (1, 3, 1)  # right-aligned
    for weight, axis in ((np.ones(4), 1), (np.ones(3), 3), (np.ones((2, 4)), 1), (np.ones((1, 2, 3, 4)), 1)):
        with pytest.raises(ValueError):
            _reference.place_weight(weight, x.shape, axis)
