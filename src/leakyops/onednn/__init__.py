"""The oneDNN Graph API (``dnnl::graph``) for LeakyReLU, PReLU and PReLUBackward, in Python.

Classes map one-to-one onto ``dnnl::graph`` (oneDNN 3.2): :class:`LogicalTensor`,
:class:`Op` (:class:`OpKind`, :class:`OpAttr`), :class:`Graph`, :class:`Partition`,
:class:`CompiledPartition`, :class:`Tensor` (NumPy-backed, zero-copy),
:class:`Engine` (CPU) and :class:`Stream`.  Every failure raises :class:`Error`,
whose ``status`` is oneDNN's :class:`Status` (``invalid_graph_op``,
``invalid_arguments``, ``invalid_shape``, ``invalid_graph``, ``unimplemented``).
All arithmetic is done by :mod:`leakyops._core`; this package only translates.

Formulas and rules (sources: the oneDNN Graph op docs ``doc/graph_api/operations/
{LeakyReLU,PReLU,PReLUBackward}.md`` / ``dev_guide_op_*`` pages, the op schemas in
``src/graph/interface/op_def.hpp``, ``prelu_doable`` and
``insert_unsqueeze[_and_squeeze]_for_prelu[_bwd]`` in the dnnl backend
(``src/graph/backend/dnnl/``), the primitive docs ``eltwise.md`` and ``prelu.md``;
then checked against the real library, PyPI ``onednn-cpu-gomp==2023.2.0``):

* ``LeakyReLU`` — input ``src``, output ``dst``, attribute ``alpha`` (f32, required:
  adding the op without it is ``invalid_graph_op``).  The docs say
  ``dst = src if src >= 0 else alpha*src``; the library computes
  ``dst = src if src > 0 else alpha*src`` (it differs at ``src = +0``: ``+0*alpha``,
  i.e. ``-0`` for a negative alpha and NaN for an infinite one), and with
  ``alpha == 0`` it computes ``max(src, +0)``: negatives, ``-0``, ``-inf`` and NaN
  all give ``+0`` (``src*0`` would give ``-0`` and NaN).  This package follows the
  library.  bf16/f16 are computed in f32 and rounded once (nearest-even).
* ``PReLU`` — inputs ``src``, ``slope``; output ``dst``; attributes ``data_format``
  (``"NXC"`` default, or ``"NCX"``) and ``per_channel_broadcast`` (default true).
  ``dst = src if src > 0 else slope*src`` (docs: ``>=``; library: ``>``, as above;
  a zero slope is ``src*0`` here, no ``max``).  The slope broadcasts to ``src``
  (unidirectionally) when:

  1. it is 1-D and ``per_channel_broadcast`` is true: its length equals the channel
     dim (dim 1 for NCX, the last dim for NXC) — a length-1 slope is *not* accepted
     then unless the channel dim is 1;
  2. it is 1-D and ``per_channel_broadcast`` is false, or ``src`` is 1-D: its length
     equals the last dim of ``src`` or is 1;
  3. it is n-D (n ≥ 2): right-aligned, each dim equal to ``src``'s or 1, rank at
     most ``src``'s.

  A 0-d slope, or a slope of higher rank than ``src``, is ``invalid_shape``.
* ``PReLUBackward`` — inputs ``src``, ``slope``, ``diff_dst``; outputs ``diff_src``,
  ``diff_slope``; attribute ``data_format``.  ``diff_src = diff_dst if src > 0 else
  slope*diff_dst``; ``diff_slope`` = the sum over the broadcast dims of
  ``(0 if src > 0 else src*diff_dst)``, shaped like ``slope``.  Slope shapes: the
  "PyTorch case" (1-D of the channel length, or of length 1 — per tensor) and the
  "TensorFlow case" (``slope.shape == src.shape[1:]``), plus rule 3 above;
  per-channel is used exactly when the slope is 1-D with length ≠ 1.  ``diff_dst``
  must have ``src``'s shape.

Graph rules: op ids are unique; ops connect through logical-tensor ids; a logical
tensor has at most one producer (checked by :meth:`Graph.finalize`); op kinds other
than the three come back as unsupported partitions; each supported op is its own
partition (oneDNN 3.2 fuses none of them); compiling takes the compile-time logical
tensors (they may differ in shape and type from the graph's, as in oneDNN), infers
unknown output shapes, and checks types (``invalid_arguments``) and shapes
(``invalid_shape``); executing checks each tensor against the compiled logical
tensor of its id (``invalid_arguments``).

Where the library departs from its docs or misbehaves, and what this package does
(see ``docs/onednn.md`` for the full table and the tests that pin it):

* ``>`` instead of ``>=`` and ``max(src, +0)`` for ``alpha == 0``: followed.
* n-D slope of rank ≤ ``src.ndim - 2`` with ``NCX`` and ``per_channel_broadcast``:
  the library unsqueezes the slope wrongly and aborts the process (uncaught C++
  exception); here rule 3 of the docs applies.
* 1-D ``src`` with ``NXC`` and ``per_channel_broadcast``: the library crashes
  (SIGSEGV); here rule 2 applies.
* ``diff_dst`` of another shape than ``src``, or mixed data types at compile time:
  the library aborts (or silently accepts a mixed f32/bf16 PReLU); here
  ``invalid_shape`` / ``invalid_arguments``.
* Execute with tensors of other shapes or ids than compiled: the library does not
  check; here ``invalid_arguments``.
* A second, different op with an id already in the graph: the library silently
  ignores it; here ``invalid_graph_op``.
* ``diff_slope`` is summed in float64 and rounded once (the core); oneDNN sums in
  f32, so sums that are not exact in f32 may differ in the last bits.
* Not matched (they need core options): f32 signalling NaNs, which oneDNN's
  LeakyReLU passes through unchanged and ``alpha*src`` quiets; bf16 subnormals,
  which oneDNN flushes to zero on AVX512-BF16 CPUs; the sign of a zero PReLU
  result for ``src = ±0`` in some of oneDNN's slope layouts (always ``+0`` there).

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
