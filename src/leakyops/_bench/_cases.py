"""What is timed: operators, dtypes, sizes, shapes, bytes moved and the inputs, for every peer.

Every peer builds its inputs with :func:`inputs` (NumPy arrays from one seed), so all of them
compute the same thing on the same data.
"""

from __future__ import annotations

import math

import numpy as np

OPS = ("leaky_relu", "leaky_relu_", "leaky_relu_backward", "prelu", "prelu_backward")
DTYPES = ("float16", "bfloat16", "float32", "float64")
DEFAULT_SIZES = (1_000, 10_000, 100_000, 1_000_000, 4_000_000, 16_000_000, 64_000_000)
QUICK_SIZES = (1_000, 10_000, 100_000, 1_000_000)
BATCH, CHANNELS = 4, 64  # prelu*: (BATCH, CHANNELS, L) with L = n / (BATCH * CHANNELS)
SLOPE = 0.01
#: The in-place runs use slope 1.0: repeated calls with 0.01 would drive the negative half of
#: the data into subnormals within a few dozen calls (slow on some CPUs), while 1.0 keeps the
#: data, and the share of negative elements, as they are.
SLOPE_INPLACE = 1.0

#: Arrays read + written per element (the weight and grad_weight are negligible).
TRAFFIC = {"leaky_relu": 2, "leaky_relu_": 2, "leaky_relu_backward": 3, "prelu": 2,
           "prelu_backward": 3}


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def shape_of(op: str, n: int) -> tuple[int, ...]:
    """The shape timed for a nominal size ``n``: 1-D, or (4, 64, L) for the prelu operators."""
    if op.startswith("prelu"):
        return (BATCH, CHANNELS, max(1, round(n / (BATCH * CHANNELS))))
    return (n,)


def case(op: str, dtype: str, n: int) -> dict:
    """One case as the runner and the workers pass it around (JSON-friendly)."""
    shape = shape_of(op, n)
    elements = math.prod(shape)
    return {"op": op, "dtype": dtype, "size": n, "shape": list(shape), "elements": elements,
            "bytes": TRAFFIC[base_op(op)] * elements * np_dtype(dtype).itemsize}


def base_op(op: str) -> str:
    """The operator of a case name: ``leaky_relu:alloc`` (a variant) is ``leaky_relu``."""
    return op.partition(":")[0]


def inputs(op: str, dtype: str, shape) -> dict:
    """The inputs of a case: ``x`` (and ``g``, ``w`` where the operator takes them)."""
    op = base_op(op)
    rng = np.random.default_rng(0)
    dt = np_dtype(dtype)
    shape = tuple(shape)
    arrays = {"x": rng.standard_normal(shape, dtype=np.float32).astype(dt)}
    if op in ("leaky_relu_backward", "prelu_backward"):
        arrays["g"] = rng.standard_normal(shape, dtype=np.float32).astype(dt)
    if op.startswith("prelu"):
        arrays["w"] = (rng.random(CHANNELS, dtype=np.float32) * 0.5).astype(dt)
    return arrays
