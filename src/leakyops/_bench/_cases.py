"""What is timed: operators, dtypes, sizes, shapes, bytes moved and the inputs, for every peer.

The operators, their arrays and the bytes they move come from the operator table
(:mod:`leakyops._operators`). Every peer builds its inputs with :func:`inputs` (NumPy arrays
from one seed), so all of them compute the same thing on the same data.
"""

from __future__ import annotations

import math

import numpy as np

from leakyops._operators import DTYPES as _DTYPES
from leakyops._operators import OPERATORS, OPS, Operator

__all__ = ["OPS", "DTYPES", "DEFAULT_SIZES", "QUICK_SIZES", "BATCH", "CHANNELS", "SLOPE", "SLOPE_INPLACE",
           "np_dtype", "operator_of", "shape_of", "case", "slope_of", "inputs"]

DTYPES = tuple(_DTYPES)
DEFAULT_SIZES = (1_000, 10_000, 100_000, 1_000_000, 4_000_000, 16_000_000, 64_000_000)
QUICK_SIZES = (1_000, 10_000, 100_000, 1_000_000)
BATCH, CHANNELS = 4, 64  # operators with a weight: (BATCH, CHANNELS, L), L = n / (BATCH * CHANNELS)
SLOPE = 0.01
#: The in-place runs use slope 1.0: repeated calls with 0.01 would drive the negative half of
#: the data into subnormals within a few dozen calls (slow on some CPUs), while 1.0 keeps the
#: data, and the share of negative elements, as they are.
SLOPE_INPLACE = 1.0


def np_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a dtype name (``bfloat16`` is ``ml_dtypes.bfloat16``)."""
    return _DTYPES[name]


def operator_of(op: str) -> Operator:
    """The table's operator of a case name: ``leaky_relu:alloc`` (a variant) is ``leaky_relu``."""
    return OPERATORS[op.partition(":")[0]]


def shape_of(op: str, n: int) -> tuple[int, ...]:
    """The shape timed for a nominal size ``n``: 1-D, or (4, 64, L) for an operator with a weight."""
    if "weight" in operator_of(op).inputs:
        return (BATCH, CHANNELS, max(1, round(n / (BATCH * CHANNELS))))
    return (n,)


def case(op: str, dtype: str, n: int) -> dict:
    """One case as the runner and the workers pass it around (JSON-friendly)."""
    shape = shape_of(op, n)
    elements = math.prod(shape)
    return {"op": op, "dtype": dtype, "size": n, "shape": list(shape), "elements": elements,
            "bytes": operator_of(op).bytes_moved(elements, np_dtype(dtype).itemsize)}


def slope_of(op: str) -> float:
    """The slope a case is timed with (an operator that has one)."""
    return SLOPE_INPLACE if operator_of(op).in_place else SLOPE


def inputs(op: str, dtype: str, shape) -> dict:
    """The inputs of a case, named as the operator table names them.

    Drawn from one seed in the order ``x``, ``grad_output``, ``weight`` (whatever the
    operator's argument order), the weight as ``CHANNELS`` values in [0, 0.5) (a
    ``:one_slope`` case: the first of them alone).
    """
    names = operator_of(op).inputs
    rng = np.random.default_rng(0)
    dt = np_dtype(dtype)
    shape = tuple(shape)
    arrays = {"x": rng.standard_normal(shape, dtype=np.float32).astype(dt)}
    if "grad_output" in names:
        arrays["grad_output"] = rng.standard_normal(shape, dtype=np.float32).astype(dt)
    if "weight" in names:
        arrays["weight"] = (rng.random(CHANNELS, dtype=np.float32) * 0.5).astype(dt)
        if op.endswith(":one_slope"):
            arrays["weight"] = arrays["weight"][:1].copy()
    return arrays
