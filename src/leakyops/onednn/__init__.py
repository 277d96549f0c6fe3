"""The oneDNN Graph API (``dnnl::graph``) for LeakyReLU, PReLU and PReLUBackward, in Python.

Classes map one-to-one onto ``dnnl::graph`` (oneDNN 3.2): :class:`LogicalTensor`,
:class:`Op` (:class:`OpKind`, :class:`OpAttr`), :class:`Graph`, :class:`Partition`,
:class:`CompiledPartition`, :class:`Tensor` (NumPy-backed, zero-copy),
:class:`Engine` (CPU) and :class:`Stream`.  Every failure raises :class:`Error`,
whose ``status`` is oneDNN's :class:`Status` (``invalid_graph_op``,
``invalid_arguments``, ``invalid_shape``, ``invalid_graph``, ``unimplemented``).
All arithmetic is done by :mod:`leakyops._core`; this package only translates.

The model follows the real library (PyPI ``onednn-cpu-gomp==2023.2.0``, its tests' oracle)
where it and its docs disagree, kernel for kernel (``docs/onednn.md`` has the sources, the
full rules and the few differences left):

* ``LeakyReLU`` — input ``src``, output ``dst``, attribute ``alpha`` (f32, required:
  adding the op without it is ``invalid_graph_op``).  The docs say
  ``dst = src if src >= 0 else alpha*src``; the library's eltwise kernel computes
  ``alpha*src if src <= 0 else src`` (both zeros take the alpha branch; NaN keeps src, an
  f32 signalling NaN unchanged), and with ``alpha == 0`` ``max(src, +0)``.
* ``PReLU`` — inputs ``src``, ``slope``; output ``dst``; attributes ``data_format``
  (``"NXC"`` default, or ``"NCX"``) and ``per_channel_broadcast`` (default true).  The
  slope must pass the backend's ``prelu_doable`` (1-D and per channel: the channel's
  length; 1-D otherwise or 1-D src: the last dim's or 1; n-D: right-aligned, each dim
  equal or 1) and is then reshaped to src's rank with ones in front, except that with NCX
  and per-channel broadcast it moves to dim 1: ``(3, 3)`` runs as ``(1, 3, 3, 1)`` on a
  4-D src.  A full slope (src's shape) or a per-channel one runs the jit kernel,
  ``fma(min(0, src), slope, max(0, src))``; every other layout the reference kernel,
  ``src if src > 0 else slope*src``.  The slope may have its own data type.
* ``PReLUBackward`` — inputs ``src``, ``slope``, ``diff_dst``; outputs ``diff_src``,
  ``diff_slope``; attribute ``data_format``; per channel exactly when the slope is 1-D
  with length != 1.  The jit kernel: ``diff_src = slope*diff_dst`` where ``src <= 0``,
  ``diff_dst`` where ``src > 0``, ``0*diff_dst`` where src is NaN; ``diff_slope`` sums
  the float32 products ``diff_dst*src`` where ``src <= 0`` (NaN left out).  The
  reference kernel: ``src > 0`` decides, NaN src included in the sum.

:class:`Engine` takes ``isa=`` (``"AVX2"``, ``"AVX512_CORE_BF16"``, …, or ``"host"``: the one
oneDNN dispatches for on this CPU) to compute as the library does on a CPU with that
instruction set: the AVX2, AVX and SSE4.1 variants of the jit kernels, bf16 results below
2**-126 flushed to zero on AVX512-BF16 CPUs, data types without kernels.  By default
(``$LEAKYOPS_ONEDNN_ISA`` unset) it is an AVX-512 CPU that rounds bf16 exactly.

:class:`Graph` checks more than the library by default (two producers of one logical tensor,
a cycle, two ops with one id); ``Graph(strict=False)`` partitions exactly as oneDNN 3.2.

Binding and errors follow the library: :meth:`CompiledPartition.execute` binds tensors by
position (the i-th tensor is the buffer of the i-th logical tensor given to compile) and
reads them as compiled; compile tolerates extra and repeated logical tensors of any kind; a
negative dim (``-1`` included: only ``DNNL_GRAPH_UNKNOWN_DIM`` is unknown) is accepted until
compile (``invalid_shape``); ``get_inplace_ports`` is empty.  Where the
library aborts or crashes (mixed src/dst types, PReLU above 5 dims, a reshaped slope that
does not broadcast, ``diff_dst`` unlike src, PReLUBackward operands of different layouts,
a 1-D src with NXC), compile raises the status the library's own checks intend.

Example: LeakyReLU on four values.

>>> import numpy as np
>>> from leakyops import onednn as dg
>>> src = dg.LogicalTensor(0, dg.DataType.f32, (4,))
>>> dst = dg.LogicalTensor(1, dg.DataType.f32, ndims=-1)  # shape inferred at compile
>>> op = dg.Op(0, dg.OpKind.LeakyReLU, "lrelu", [src], [dst])
>>> op.set_attr(dg.OpAttr.alpha, 0.5)
>>> g = dg.Graph(dg.EngineKind.cpu)
>>> g.add_op(op)
>>> g.finalize()
>>> (part,) = g.get_partitions()
>>> eng = dg.Engine(dg.EngineKind.cpu, 0)
>>> cp = part.compile([src], [dst], eng)
>>> out_lt = cp.query_logical_tensor(1)
>>> out_lt.get_dims()
[4]
>>> x = dg.Tensor(src, eng, np.array([-2.0, -0.0, 1.0, 3.0], np.float32))
>>> y = dg.Tensor(out_lt, eng)
>>> cp.execute(dg.Stream(eng), [x], [y])
>>> y.to_numpy()
array([-1., -0.,  1.,  3.], dtype=float32)
"""

from ._errors import Error, Status
from ._graph import (
    DNNL_GRAPH_UNKNOWN_DIM,
    DNNL_GRAPH_UNKNOWN_NDIMS,
    CompiledPartition,
    DataType,
    Engine,
    EngineKind,
    Graph,
    LayoutType,
    LogicalTensor,
    Op,
    Partition,
    PartitionPolicy,
    PropertyType,
    Stream,
    Tensor,
    data_type_of,
)
from ._ops import OpAttr, OpKind

__all__ = [
    "DNNL_GRAPH_UNKNOWN_DIM",
    "DNNL_GRAPH_UNKNOWN_NDIMS",
    "CompiledPartition",
    "DataType",
    "Engine",
    "EngineKind",
    "Error",
    "Graph",
    "LayoutType",
    "LogicalTensor",
    "Op",
    "OpAttr",
    "OpKind",
    "Partition",
    "PartitionPolicy",
    "PropertyType",
    "Status",
    "Stream",
    "Tensor",
    "data_type_of",
]
