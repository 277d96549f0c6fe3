"""aclnnPreluBackward's ``gradWeight`` on Ascend 950 (the ``Ascend950`` SoC profile).

On Ascend 950 ``aclnn_prelu_backward.cpp`` runs two kernels: PReluGradUpdate writes ``dx`` and
``update = 0 if self > 0 else self * gradOutput`` **in the tensor's dtype** (its register-API
compute struct multiplies T registers: one rounding of each product to T), then
PReluGradReduce casts ``update`` to float32 (exact), sums it per channel in float32 and casts
the sum back with ``CAST_RINT`` (``prelu_grad_reduce_dag.h``: ``Cast<float, T, 0>``,
``ReduceSumOp<float>``, ``Cast<T, float, 1>``). The core instead sums the exact products and
rounds once, so the two differ on every dtype, float32 included (``docs/aclnn.md``
measures by how much).

The values come from the exact arithmetic of the vector unit (``leakyops._vector_math``: the
products, the comparison, the casts) and the core's float64 partial sums; this module only
arranges them the way the two kernels do. ``dx`` is the core's (the kernel's Mul-then-Select
gives the same bits).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from .. import _vector_math as vm

__all__ = ["prelu_update", "prelu_grad_weight"]


def prelu_update(grad_output: np.ndarray[Any, Any], x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """PReluGradUpdate's ``update``: ``0`` where ``x > 0`` (IEEE: NaN is not), else
    ``x * grad_output`` rounded once to x's dtype; shaped like ``x``."""
    g = np.broadcast_to(grad_output, x.shape)
    keep_zero = vm.compare(x, np.zeros((), x.dtype), "gt").reshape(x.shape)
    products = vm.mul(np.ascontiguousarray(x), np.ascontiguousarray(g)).reshape(x.shape)
    return np.where(keep_zero, np.zeros((), x.dtype), products)


def prelu_grad_weight(grad_output: np.ndarray[Any, Any], x: np.ndarray[Any, Any],
                      per_channel: bool) -> np.ndarray[Any, Any]:
    """PReluGradReduce over PReluGradUpdate's ``update``: per channel (dim 1 of ``x``) when
    ``per_channel``, else over everything; float32 sums cast back to x's dtype with
    ``CAST_RINT``. Returns a 1-D array (C elements, or 1).

    The float32 sum is modelled as the float64 sum of the float32 terms (NumPy's order),
    rounded once to float32; the device adds in float32 in its reduce template's order, which
    is not modelled (the two can differ when the sum lies within float32 accumulation error of
    a rounding boundary of T)."""
    update = prelu_update(grad_output, x)
    if per_channel and x.ndim > 1:
        parts = np.moveaxis(update, 1, -1).reshape(-1, x.shape[1])
    else:
        parts = update.reshape(-1, 1)
    # Cast<float, T, 0>: exact (so is the float64 view of it)
    acc = _core.sum_grad_weight_parts(parts.astype(np.float64), axis=0)
    acc32 = _core.round_grad_weight(acc, np.float32)
    if x.dtype == np.float32:
        return acc32
    return vm.cast(acc32, x.dtype, "rint")
