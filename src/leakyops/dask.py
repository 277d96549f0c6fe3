"""The LeakyReLU family on :mod:`dask.array` arrays: lazy, block by block, with leakyops' kernels.

For data that outgrows one machine's memory (or one machine): every function here builds a
dask graph whose tasks call :mod:`leakyops`' core on one block each, so the results are the
core's, block for block, whatever scheduler runs the graph (threads, processes, or a
``dask.distributed`` cluster).

- ``leaky_relu``, ``leaky_relu_`` (returns a new lazy array: dask arrays are immutable),
  ``leaky_relu_backward``, ``prelu`` and ``prelu_backward`` take the core's arguments and
  follow its rules: dtypes and promotion, NumPy broadcasting between chunked arrays, ``axis``
  for PReLU's channel weight.
- Errors are raised when the graph is built, wherever the information is there (dtypes,
  shapes, slopes, axis): each call checks its arguments on tiny *probe* arrays through the
  core itself, so the rules and messages are the core's. Only values (never known before
  compute) can fail later, and the core's value rules need none.
- ``prelu_backward`` makes one pass: each block task returns its ``grad_input`` block and its
  float64 per-channel partial sums (``_core.prelu_backward_parts``); the partials are
  tree-reduced in a fixed order and rounded once to the weight's dtype
  (``_core.round_grad_weight``). Compute both results together (``dask.compute(gi, gw)``)
  so that the inputs are read once.
- Tasks are module-level functions, so they pickle by reference: workers import
  ``leakyops`` and use their own compiled (and disk-cached) kernels.
- Threads: a dask scheduler (threads, processes, or a ``dask.distributed`` worker with any
  number of threads) already runs one task per thread, so every task runs its kernels on one
  thread (``leakyops.set_num_threads(1, this_thread_only=True)`` for the task's duration;
  the thread's previous setting is restored after it). Worker threads x 1 kernel thread
  never oversubscribe the cores. A worker whose environment sets
  ``LEAKYOPS_DASK_TASK_THREADS=n`` runs n kernel threads per task instead (useful with few,
  large blocks).

Example::

    >>> import numpy as np, dask.array as da
    >>> import leakyops.dask as lod
    >>> x = da.from_array(np.array([[-2.0, 1.0], [3.0, -4.0]], np.float32), chunks=1)
    >>> lod.leaky_relu(x, 0.5).compute()
    array([[-1.,  1.],
           [ 3., -2.]], dtype=float32)
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, TypeAlias, Union

import dask
import dask.array as da
import numpy as np

from leakyops import _core, _threads

if TYPE_CHECKING:
    import numpy.typing as npt

    from leakyops._typing import SlopeLike

    # what the functions take as an array: a dask array, or any array-like (one block)
    _ArrayLike: TypeAlias = Union[da.Array, npt.ArrayLike]

__all__ = [
    "leaky_relu",
    "leaky_relu_",
    "leaky_relu_backward",
    "prelu",
    "prelu_backward",
]

#: How many partial sums one combine task of ``prelu_backward``'s reduction adds.
SPLIT_EVERY = 8


# --------------------------------------------------------------------------------------
# Tasks (module level: pickled by reference, run on the workers)
# --------------------------------------------------------------------------------------

#: Kernel threads per task. The worker's threads are the parallelism of a dask computation;
#: kernels splitting every block over all cores as well would oversubscribe them. Read on the
#: worker, so a worker's environment may raise it (``LEAKYOPS_DASK_TASK_THREADS``).
_TASK_THREADS_ENV = "LEAKYOPS_DASK_TASK_THREADS"


def _task_threads():
    """Run the kernels of this task on one thread (this thread only), then restore.

    :func:`leakyops.thread_limit` puts the thread's previous setting back afterwards, so a
    task run on the user's own thread (the synchronous scheduler) leaves that thread as it
    found it.
    """
    try:
        n = max(1, int(os.environ.get(_TASK_THREADS_ENV, "1")))
    except ValueError:
        n = 1
    return _threads.thread_limit(n)


def _leaky_relu_block(x, negative_slope):
    with _task_threads():
        return _core.leaky_relu_impl(x, negative_slope)


def _leaky_relu_backward_block(grad_output, x, negative_slope, self_is_result):
    with _task_threads():
        return _core.leaky_relu_backward_impl(grad_output, x, negative_slope, self_is_result)


def _prelu_block(x, weight, axis):
    with _task_threads():
        return _core.prelu_impl(x, weight, axis)


def _prelu_backward_block(grad_output, x, weight, axis, kept):
    """One block of prelu's backward: ``(grad_input block, float64 partial)``.

    The partial (shaped like the block's weight) is laid out along ``x``'s axes: the block's
    extent on the axes in ``kept`` (the axes the weight varies along), 1 elsewhere. Only a
    reshape, no arithmetic.
    """
    with _task_threads():
        grad_input, partial = _core.prelu_backward_parts(grad_output, x, weight, axis)
    shape = tuple(n if d in kept else 1 for d, n in enumerate(grad_input.shape))
    return grad_input, partial.reshape(shape)


def _first(pair):
    return pair[0]


def _second(pair):
    return pair[1]


def _sum_partials(a, axis=None, keepdims=False, **kwargs):
    """Combine float64 partial sums (a reduction's chunk/combine/aggregate step).

    Adds float64 partials that the core produced; the order is fixed by the block layout,
    so the result is reproducible for a fixed chunking.
    """
    return _core.sum_grad_weight_parts(a, axis=axis, keepdims=keepdims)


def _round_block(acc, dtype):
    return _core.round_grad_weight(acc, dtype)


# --------------------------------------------------------------------------------------
# Graph-build checks
# --------------------------------------------------------------------------------------


def _as_dask(a, fname="leakyops.dask", arg="input"):
    """A dask array; other inputs are checked by the core's rules first (dtype, array-like),
    so that e.g. object arrays are a TypeError, not an error of dask's rechunking."""
    if isinstance(a, da.Array):
        return a
    return da.asarray(_core.as_array(a, fname, arg))


def _known(shape) -> bool:
    return not any(isinstance(n, float) and math.isnan(n) for n in shape)


def _meta(ndim, dtype):
    return np.empty((0,) * ndim, dtype=dtype)


def _aligned_indices(ndim, arr_ndim):
    """Block indices of an array right-aligned against ``ndim`` output axes (NumPy rule)."""
    return tuple(range(ndim - arr_ndim, ndim))


def _broadcast_shape(fname, name_a, shape_a, name_b, shape_b):
    if not (_known(shape_a) and _known(shape_b)):
        return None
    try:
        return np.broadcast_shapes(shape_a, shape_b)
    except ValueError:
        raise ValueError(
            f"{fname}: {name_a} of shape {shape_a} and {name_b} of shape {shape_b} "
            "do not broadcast together"
        ) from None


# --------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------


def leaky_relu(x: _ArrayLike, negative_slope: SlopeLike = 0.01) -> da.Array:
    """LeakyReLU of a dask array, block by block: ``y = x if x > 0 else x*negative_slope``.

    Lazy: returns a dask array with ``x``'s shape, chunks and dtype; nothing is computed
    until it is. Each block is :func:`leakyops.leaky_relu` of that block, so the rules are
    the core's: float16/bfloat16 computed in float32 and rounded once, NaN passes through,
    ``-0.0`` gives ``-0.0*slope``. Unsupported dtypes and slopes raise here, when the graph is
    built. ``x`` may be any array-like (converted with ``dask.array.asarray``).

    >>> import numpy as np, dask.array as da
    >>> import leakyops.dask as lod
    >>> y = lod.leaky_relu(da.arange(-2.0, 3.0, chunks=2), 0.1)
    >>> y.chunks, y.compute().tolist()
    (((2, 2, 1),), [-0.2, -0.1, 0.0, 1.0, 2.0])
    """
    return _leaky_relu(x, negative_slope, "leaky_relu")


def _leaky_relu(x, negative_slope, fname):
    x = _as_dask(x, fname, "x")
    _core.check_dtype(x.dtype, fname, "x")
    _core.slope_value(negative_slope, fname)
    return da.map_blocks(
        _leaky_relu_block,
        x,
        negative_slope,
        dtype=x.dtype,
        meta=_meta(x.ndim, x.dtype),
        name="leaky_relu-" + dask.base.tokenize(x, negative_slope),
    )


def leaky_relu_(x: _ArrayLike, negative_slope: SlopeLike = 0.01) -> da.Array:
    """The "in-place" LeakyReLU: returns a NEW lazy array, ``x`` is left as it is.

    Dask arrays are immutable (a block may be shared by several tasks), so there is nothing
    to write into; this is :func:`leaky_relu` under the in-place name, for code written
    against the core or PyTorch. Rebind the name: ``x = leaky_relu_(x, s)``. To store the
    result into existing storage (a zarr array, a memory map), use ``dask.array.store``.

    >>> import dask.array as da
    >>> import leakyops.dask as lod
    >>> x = da.from_array([-1.0, 2.0], chunks=1)
    >>> y = lod.leaky_relu_(x, 0.5)
    >>> y is x, y.compute().tolist(), x.compute().tolist()
    (False, [-0.5, 2.0], [-1.0, 2.0])
    """
    return _leaky_relu(x, negative_slope, "leaky_relu_")


def leaky_relu_backward(grad_output: _ArrayLike, x: _ArrayLike, negative_slope: SlopeLike,
                        self_is_result: bool = False) -> da.Array:
    """Gradient of LeakyReLU, block by block: ``dx = g if t > 0 else g*negative_slope``.

    ``t`` is the forward input ``x``, or the forward result when ``self_is_result`` (then a
    negative slope is a ``ValueError``, raised here). ``grad_output`` and ``x`` broadcast
    NumPy-style, also when chunked differently (dask aligns their blocks; a length-1 axis
    broadcasts); the result has the broadcast shape and the promoted dtype of
    :func:`leakyops.leaky_relu_backward` (float16+bfloat16 -> float32, anything with
    float64 -> float64).

    >>> import dask.array as da
    >>> import leakyops.dask as lod
    >>> g = da.ones((2, 3), chunks=(1, 2))
    >>> x = da.from_array([-1.0, 0.0, 2.0], chunks=2)
    >>> lod.leaky_relu_backward(g, x, 0.25).compute().tolist()
    [[0.25, 0.25, 1.0], [0.25, 0.25, 1.0]]
    """
    fname = "leaky_relu_backward"
    grad_output = _as_dask(grad_output, "leaky_relu_backward", "grad_output")
    x = _as_dask(x, "leaky_relu_backward", "x")
    _core.check_dtype(grad_output.dtype, fname, "grad_output")
    _core.check_dtype(x.dtype, fname, "x")
    _core.slope_value(negative_slope, fname)
    _core.check_self_is_result(negative_slope, self_is_result, fname)
    dtype = _core.result_dtype(grad_output.dtype, x.dtype)
    _broadcast_shape(fname, "grad_output", grad_output.shape, "x", x.shape)
    ndim = max(grad_output.ndim, x.ndim)
    out_ind = tuple(range(ndim))
    return da.blockwise(
        _leaky_relu_backward_block,
        out_ind,
        grad_output,
        _aligned_indices(ndim, grad_output.ndim),
        x,
        _aligned_indices(ndim, x.ndim),
        negative_slope,
        None,
        bool(self_is_result),
        None,
        dtype=dtype,
        meta=_meta(ndim, dtype),
        name="leaky_relu_backward-"
        + dask.base.tokenize(grad_output, x, negative_slope, bool(self_is_result)),
    )


# --------------------------------------------------------------------------------------
# PReLU: how the weight meets the blocks
# --------------------------------------------------------------------------------------


def _prelu_plan(fname, grad_output, x, weight, axis):
    """Check everything known before compute; return ``(x, w, w_ind, kept, axis, w_shape)``.

    ``grad_output`` is a dask array (``prelu_backward``) or ``None`` (``prelu``).
    ``weight`` comes back as a dask array to be indexed with ``w_ind`` (its blocks line up
    with ``x``'s), or as a NumPy one-element array passed whole to every block
    (``w_ind is None``). ``kept`` is the set of ``x``'s axes the weight varies along (those
    ``grad_weight`` is not summed over).
    """
    x = _as_dask(x, fname, "x")
    _core.check_dtype(x.dtype, fname, "x")
    w_is_dask = isinstance(weight, da.Array)
    if not w_is_dask:
        weight = _core.as_array(weight, fname, "weight")  # small: passed whole, or split below
    _core.prelu_dtype(x.dtype, weight.dtype,
                      None if grad_output is None else grad_output.dtype, fname=fname)
    w_shape = weight.shape
    # the core's shape rule; x's unknown extents are left unchecked there, and must not be
    # on the axes the weight varies along (its blocks are cut to match x's chunks)
    wb_shape = _core.prelu_weight_shape(x.shape, w_shape, axis, fname=fname)
    along = {d for d, n in enumerate(wb_shape) if n != 1}
    for d in sorted(along):
        if not _known((x.shape[d],)):
            raise ValueError(
                f"{fname}: x has unknown chunk sizes along axis {d}, which the weight applies "
                "along; call x.compute_chunk_sizes() first"
            )
    kept = frozenset(along)
    if math.prod(w_shape) == 1:
        if w_is_dask:
            return x, weight.reshape(()), (), kept, axis, w_shape
        return x, weight, None, kept, axis, w_shape
    if len(w_shape) == 1:
        (axis,) = along
        chunks = (x.chunks[axis],)
        w_ind = (axis,)
    else:
        off = x.ndim - len(w_shape)
        chunks = tuple(
            x.chunks[off + i] if off + i in along else (n,) for i, n in enumerate(w_shape)
        )
        w_ind = tuple(range(off, x.ndim))
    if w_is_dask:
        w = weight.rechunk(chunks)
    else:
        w = da.from_array(weight, chunks=chunks)
    return x, w, w_ind, kept, axis, w_shape


def _weight_args(w, w_ind):
    return (w, None) if w_ind is None else (w, w_ind)


def prelu(x: _ArrayLike, weight: _ArrayLike, *, axis: int = 1) -> da.Array:
    """PReLU of a dask array, block by block: ``y = x if x > 0 else w[c]*x``.

    ``weight`` (``x``'s dtype; a NumPy or a dask array) follows :func:`leakyops.prelu`: one
    element is a shared slope; a 1-D weight of length ``C`` applies along ``axis`` (default
    1; ``axis=-1`` channels-last; a 1-D ``x`` needs ``axis=0``) and is split to match
    ``x``'s chunks along that axis (chunks may split the channels); a weight of rank >= 2
    broadcasts against ``x`` NumPy-style (right-aligned, unidirectional). Dtype, shape and
    axis errors are raised here, when the graph is built, with the core's messages.

    >>> import numpy as np, dask.array as da
    >>> import leakyops.dask as lod
    >>> x = da.from_array(np.array([[-1.0, -1.0, -1.0], [2.0, -4.0, 4.0]]), chunks=(1, 2))
    >>> lod.prelu(x, np.array([0.5, 0.25, 2.0])).compute()
    array([[-0.5 , -0.25, -2.  ],
           [ 2.  , -1.  ,  4.  ]])
    """
    fname = "prelu"
    x, w, w_ind, _kept, axis, _ = _prelu_plan(fname, None, x, weight, axis)
    ind = tuple(range(x.ndim))
    return da.blockwise(
        _prelu_block,
        ind,
        x,
        ind,
        *_weight_args(w, w_ind),
        axis,
        None,
        dtype=x.dtype,
        meta=_meta(x.ndim, x.dtype),
        name="prelu-" + dask.base.tokenize(x, w, axis),
    )


def prelu_backward(grad_output: _ArrayLike, x: _ArrayLike, weight: _ArrayLike, *,
                   axis: int = 1) -> tuple[da.Array, da.Array]:
    """Gradients of PReLU on dask arrays, in one pass: ``(grad_input, grad_weight)``.

    ``grad_input = g if x > 0 else w[c]*g`` has ``x``'s shape and chunks;
    ``grad_weight[c] = sum over channel c of (0 if x > 0 else x*g)`` has ``weight``'s shape
    and dtype. Each block task computes its ``grad_input`` block and its float64
    per-channel partial sums at once (``_core.prelu_backward_parts``); the partials are
    added in a tree (:data:`SPLIT_EVERY` at a time, in block order) and rounded once to the
    weight's dtype, so ``grad_weight`` is as accurate as the core's and bit-for-bit
    reproducible for a fixed chunking (other chunkings may differ in the last float64 bit
    before rounding). Compute the two together, ``dask.compute(grad_input, grad_weight)``
    (or ``dask.array.store`` with ``grad_weight`` in the same call), so that the inputs are
    read once. ``grad_output`` must broadcast to ``x`` (``x``'s dtype); ``weight`` and
    ``axis`` as in :func:`prelu`.

    >>> import numpy as np, dask, dask.array as da
    >>> import leakyops.dask as lod
    >>> x = da.from_array(np.arange(-4.0, 4.0).reshape(4, 2), chunks=(3, 1))
    >>> gi, gw = lod.prelu_backward(da.ones((4, 2), chunks=2), x, np.array([0.5, 0.25]))
    >>> gi, gw = dask.compute(gi, gw)
    >>> gi.tolist(), gw.tolist()
    ([[0.5, 0.25], [0.5, 0.25], [0.5, 1.0], [1.0, 1.0]], [-6.0, -4.0])
    """
    fname = "prelu_backward"
    g = _as_dask(grad_output, "prelu_backward", "grad_output")
    x, w, w_ind, kept, axis, w_shape = _prelu_plan(fname, g, x, weight, axis)
    if _known(g.shape) and _known(x.shape):
        try:
            ok = np.broadcast_shapes(g.shape, x.shape) == x.shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                f"{fname}: grad_output of shape {g.shape} does not broadcast to x's shape "
                f"{x.shape}"
            )
    elif g.ndim > x.ndim:
        raise ValueError(
            f"{fname}: grad_output has {g.ndim} dimensions, more than x's {x.ndim}"
        )
    ndim = x.ndim
    ind = tuple(range(ndim))
    token = dask.base.tokenize(g, x, w, axis)
    parts = da.blockwise(
        _prelu_backward_block,
        ind,
        g,
        _aligned_indices(ndim, g.ndim),
        x,
        ind,
        *_weight_args(w, w_ind),
        axis,
        None,
        kept,
        None,
        dtype=x.dtype,
        meta=_meta(ndim, x.dtype),
        name="prelu_backward-parts-" + token,
    )
    grad_input = da.map_blocks(
        _first,
        parts,
        dtype=x.dtype,
        meta=_meta(ndim, x.dtype),
        name="prelu_backward-grad_input-" + token,
    )
    pchunks = tuple(c if d in kept else (1,) * len(c) for d, c in enumerate(parts.chunks))
    partials = da.map_blocks(
        _second,
        parts,
        chunks=pchunks,
        dtype=np.float64,
        meta=_meta(ndim, np.float64),
        name="prelu_backward-partials-" + token,
    )
    reduced = tuple(d for d in range(ndim) if d not in kept)
    if reduced:
        acc = da.reduction(
            partials,
            _sum_partials,
            _sum_partials,
            combine=_sum_partials,
            axis=reduced,
            keepdims=True,
            dtype=np.float64,
            split_every=SPLIT_EVERY,
            concatenate=True,
            meta=_meta(ndim, np.float64),
            name="prelu_backward-grad_weight-sum",
        )
    else:
        acc = partials
    grad_weight = acc.map_blocks(
        _round_block, x.dtype, dtype=x.dtype, meta=_meta(ndim, x.dtype)
    ).reshape(w_shape)
    return grad_input, grad_weight
