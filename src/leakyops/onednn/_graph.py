"""``dnnl::graph`` objects: logical tensors, ops, graph, partitions, tensors."""

from __future__ import annotations

import enum
import numbers
from collections.abc import Sequence

import ml_dtypes
import numpy as np

from ._errors import Status, fail
from ._ops import SCHEMAS, OpAttr, OpKind, attr_key, compute, convert_attr, infer_shapes

DNNL_GRAPH_UNKNOWN_NDIMS = -1
DNNL_GRAPH_UNKNOWN_DIM = -(2**63)  # INT64_MIN, as in dnnl_graph_types.h
DNNL_MAX_NDIMS = 12


class DataType(enum.IntEnum):
    """``dnnl_data_type_t`` (values of ``dnnl_common_types.h``)."""

    undef = 0
    f16 = 1
    bf16 = 2
    f32 = 3
    s32 = 4
    s8 = 5
    u8 = 6
    f64 = 7
    boolean = 8


class LayoutType(enum.IntEnum):
    """``dnnl_graph_layout_type_t``."""

    undef = 0
    any = 1
    strided = 2
    opaque = 3


class PropertyType(enum.IntEnum):
    """``dnnl_graph_tensor_property_t``."""

    undef = 0
    variable = 1
    constant = 2


class EngineKind(enum.IntEnum):
    """``dnnl_engine_kind_t``."""

    any = 0
    cpu = 1
    gpu = 2


class PartitionPolicy(enum.IntEnum):
    """``dnnl_graph_partition_policy_t``."""

    fusion = 1
    debug = 2


_NP = {
    DataType.f32: np.dtype(np.float32),
    DataType.f16: np.dtype(np.float16),
    DataType.bf16: np.dtype(ml_dtypes.bfloat16),
}
_COMPUTE_TYPES = tuple(_NP)  # f32, f16, bf16: the type constraint "T" of all three ops


def data_type_of(dtype) -> DataType:
    """The :class:`DataType` of a NumPy dtype (``invalid_arguments`` if none)."""
    dtype = np.dtype(dtype)
    for dt, npdt in _NP.items():
        if npdt == dtype:
            return dt
    fail(Status.invalid_arguments, f"no oneDNN Graph data type for NumPy dtype {dtype} "
                                   "(supported: float32, float16, bfloat16)")


def _int(value, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        fail(Status.invalid_arguments, f"{what} must be an integer, got {value!r}")
    return int(value)


class LogicalTensor:
    """``dnnl::graph::logical_tensor``: id, data type, shape and layout, no data.

    ``shape`` is a sequence of dims (``-1`` or :data:`DNNL_GRAPH_UNKNOWN_DIM`
    for an unknown dim) or ``None`` with ``ndims`` for unknown dims (``ndims=-1``:
    unknown rank).  A strided layout without ``strides`` is row-major contiguous.

    >>> lt = LogicalTensor(3, DataType.f32, (2, 3))
    >>> lt.get_id(), lt.get_dims(), lt.get_strides(), lt.get_mem_size()
    (3, [2, 3], [3, 1], 24)
    """

    def __init__(self, tid, data_type, shape=None, layout_type=LayoutType.strided,
                 property_type=PropertyType.undef, *, strides=None, ndims=None):
        self.id = _int(tid, "logical tensor id")
        if self.id < 0:
            fail(Status.invalid_arguments, f"logical tensor id must be >= 0, got {tid}")
        try:
            self.data_type = DataType(data_type)
        except ValueError:
            fail(Status.invalid_arguments, f"unknown data type {data_type!r}")
        self.layout_type = LayoutType(layout_type)
        self.property_type = PropertyType(property_type)
        if shape is None:
            n = DNNL_GRAPH_UNKNOWN_NDIMS if ndims is None else _int(ndims, "ndims")
            self.ndims = n
            self.dims = None if n < 0 else (-1,) * n
        else:
            if isinstance(shape, (numbers.Integral, np.integer)):
                shape = (shape,)
            try:
                items = tuple(shape)
            except TypeError:
                fail(Status.invalid_arguments,
                     f"logical tensor {self.id}: shape must be a sequence of ints, got {shape!r}")
            dims = tuple(_int(d, "dim") for d in items)
            if len(dims) > DNNL_MAX_NDIMS:
                fail(Status.invalid_arguments,
                     f"logical tensor {self.id}: {len(dims)} dims, at most {DNNL_MAX_NDIMS}")
            if any(d < 0 and d not in (-1, DNNL_GRAPH_UNKNOWN_DIM) for d in dims):
                fail(Status.invalid_arguments, f"logical tensor {self.id}: bad dims {shape}")
            self.dims = tuple(-1 if d < 0 else d for d in dims)
            self.ndims = len(dims)
        if strides is not None:
            if self.layout_type not in (LayoutType.strided, LayoutType.any):
                fail(Status.invalid_arguments, "strides need a strided or any layout")
            strides = tuple(_int(s, "stride") for s in strides)
            if self.ndims < 0 or len(strides) != self.ndims:
                fail(Status.invalid_arguments,
                     f"logical tensor {self.id}: {len(strides)} strides for {self.ndims} dims")
        elif self.layout_type == LayoutType.strided and self.is_shape_known():
            strides = _contiguous(self.dims)
        self.strides = strides

    # -- queries (names of the C++ API) --
    def get_id(self) -> int:
        return self.id

    def get_data_type(self) -> DataType:
        return self.data_type

    def get_layout_type(self) -> LayoutType:
        return self.layout_type

    def get_property_type(self) -> PropertyType:
        return self.property_type

    def get_dims(self) -> list:
        if self.dims is None:
            fail(Status.invalid_arguments, f"logical tensor {self.id} has an unknown rank")
        return [DNNL_GRAPH_UNKNOWN_DIM if d < 0 else d for d in self.dims]

    def get_strides(self) -> list:
        if self.layout_type != LayoutType.strided or self.strides is None:
            fail(Status.invalid_arguments,
                 f"logical tensor {self.id} has no strides (layout {self.layout_type.name})")
        return list(self.strides)

    def is_shape_known(self) -> bool:
        return self.dims is not None and all(d >= 0 for d in self.dims)

    @property
    def shape(self):
        """The dims as a tuple (``None`` if the rank is unknown; ``-1`` unknown dims)."""
        return self.dims

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the elements."""
        if self.data_type not in _NP:
            fail(Status.invalid_data_type,
                 f"logical tensor {self.id}: no NumPy dtype for {self.data_type.name}")
        return _NP[self.data_type]

    def get_mem_size(self) -> int:
        """Bytes the tensor spans (0 for unknown shapes, as oneDNN)."""
        if not self.is_shape_known() or self.data_type not in _NP:
            return 0
        if any(d == 0 for d in self.dims):
            return 0
        strides = self.strides if self.strides is not None else _contiguous(self.dims)
        span = 1 + sum((d - 1) * abs(s) for d, s in zip(self.dims, strides))
        return span * self.dtype.itemsize

    def is_equal(self, other: LogicalTensor) -> bool:
        return (self.id, self.data_type, self.dims, self.layout_type, self.strides) == (
            other.id, other.data_type, other.dims, other.layout_type, other.strides)

    def __repr__(self):
        return (f"LogicalTensor(id={self.id}, data_type={self.data_type.name}, "
                f"dims={self.dims}, layout={self.layout_type.name}, strides={self.strides})")

    def _with(self, dims, strides):
        lt = LogicalTensor.__new__(LogicalTensor)
        lt.__dict__.update(self.__dict__)
        lt.dims, lt.ndims, lt.strides = tuple(dims), len(dims), tuple(strides)
        lt.layout_type = LayoutType.strided
        return lt


def _contiguous(dims):
    strides, acc = [], 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


class Op:
    """``dnnl::graph::op``: id, kind, verbose name, attributes, inputs and outputs.

    >>> op = Op(0, OpKind.LeakyReLU, "lrelu")
    >>> op.set_attr(OpAttr.alpha, 0.1)
    >>> op.add_input(LogicalTensor(0, DataType.f32, (4,)))
    >>> op.add_output(LogicalTensor(1, DataType.f32, (4,)))
    >>> op.get_kind().name, op.get_attr("alpha")
    ('LeakyReLU', 0.1)
    """

    def __init__(self, oid, kind, name: str = "", inputs: Sequence = (), outputs: Sequence = ()):
        self.id = _int(oid, "op id")
        try:
            self.kind = OpKind(kind) if not isinstance(kind, str) else OpKind[kind]
        except (ValueError, KeyError):
            fail(Status.invalid_arguments, f"unknown op kind {kind!r}")
        self.name = name or self.kind.name
        self.attrs: dict = {}
        self.inputs: list = []
        self.outputs: list = []
        self.add_inputs(inputs)
        self.add_outputs(outputs)

    def get_id(self) -> int:
        return self.id

    def get_kind(self) -> OpKind:
        return self.kind

    def set_attr(self, name, value) -> None:
        """Set an attribute (checked against the op's schema when added to a graph)."""
        self.attrs[attr_key(name)] = value

    def get_attr(self, name):
        key = attr_key(name)
        if key not in self.attrs:
            fail(Status.invalid_arguments, f"{self.name}: attribute {key.name!r} is not set")
        value = self.attrs[key]
        return float(value) if isinstance(value, np.floating) else value

    def add_input(self, lt: LogicalTensor) -> None:
        self.inputs.append(_lt(lt))

    def add_inputs(self, lts) -> None:
        for lt in lts:
            self.add_input(lt)

    def add_output(self, lt: LogicalTensor) -> None:
        self.outputs.append(_lt(lt))

    def add_outputs(self, lts) -> None:
        for lt in lts:
            self.add_output(lt)

    def __repr__(self):
        return f"Op(id={self.id}, kind={self.kind.name}, name={self.name!r})"


def _lt(lt) -> LogicalTensor:
    if not isinstance(lt, LogicalTensor):
        fail(Status.invalid_arguments, f"expected a LogicalTensor, got {type(lt).__name__}")
    return lt


class _Node:
    """An op as added to a graph: a snapshot with its attributes checked and defaulted."""

    def __init__(self, op: Op, attrs: dict, supported: bool):
        self.id, self.kind, self.name = op.id, op.kind, op.name
        self.attrs = attrs
        self.inputs = list(op.inputs)
        self.outputs = list(op.outputs)
        self.supported = supported

    def signature(self):
        return (self.kind, sorted((k, str(v)) for k, v in self.attrs.items()),
                [lt.id for lt in self.inputs], [lt.id for lt in self.outputs])


def _check_op(op: Op) -> _Node:
    """The schema check of ``dnnl_graph_add_op`` (``invalid_graph_op`` on failure)."""
    schema = SCHEMAS.get(op.kind)
    where = f"{op.kind.name} op {op.id}"
    if schema is None:
        # not emulated: accepted as it is and returned as an unsupported partition
        return _Node(op, dict(op.attrs), supported=False)
    n_in, n_out = len(schema["inputs"]), len(schema["outputs"])
    if len(op.inputs) != n_in:
        fail(Status.invalid_graph_op, f"{where} takes {n_in} inputs "
                                      f"{schema['inputs']}, got {len(op.inputs)}")
    if len(op.outputs) != n_out:
        fail(Status.invalid_graph_op, f"{where} takes {n_out} outputs "
                                      f"{schema['outputs']}, got {len(op.outputs)}")
    attrs = {}
    for key, value in op.attrs.items():
        if key not in schema["attrs"]:
            fail(Status.invalid_graph_op, f"{where} has no attribute {key.name!r}")
        kind, _, _, allowed = schema["attrs"][key]
        value = convert_attr(where, key, kind, value)
        if allowed is not None and value not in allowed:
            fail(Status.invalid_graph_op,
                 f"{where}: attribute {key.name!r} must be one of {allowed}, got {value!r}")
        attrs[key] = value
    for key, (_, required, default, _) in schema["attrs"].items():
        if key not in attrs:
            if required:
                fail(Status.invalid_graph_op, f"{where} requires the attribute {key.name!r}")
            attrs[key] = default
    dts = [lt.data_type for lt in op.inputs + op.outputs]
    known = {dt for dt in dts if dt != DataType.undef}
    if any(dt not in _COMPUTE_TYPES for dt in known) or len(known) > 1:
        fail(Status.invalid_graph_op,
             f"{where}: all inputs and outputs must have one data type among f32, bf16, f16; "
             f"got {[dt.name for dt in dts]}")
    return _Node(op, attrs, supported=True)


class Engine:
    """``dnnl::engine``: only the CPU engine with index 0 exists here."""

    kind = EngineKind

    def __init__(self, kind=EngineKind.cpu, index: int = 0):
        if EngineKind(kind) != EngineKind.cpu or index != 0:
            fail(Status.invalid_arguments,
                 f"no engine of kind {EngineKind(kind).name} with index {index} (CPU 0 only)")
        self.kind = EngineKind.cpu
        self.index = 0

    def get_kind(self) -> EngineKind:
        return self.kind


class Stream:
    """``dnnl::stream``: execution is synchronous, so :meth:`wait` returns at once."""

    def __init__(self, engine: Engine):
        if not isinstance(engine, Engine):
            fail(Status.invalid_arguments, "a stream needs an Engine")
        self.engine = engine

    def get_engine(self) -> Engine:
        return self.engine

    def wait(self) -> None:
        return None


class Tensor:
    """``dnnl::graph::tensor``: a logical tensor plus a buffer (NumPy, zero-copy).

    ``handle`` is a writeable NumPy array whose bytes hold the data the way the
    logical tensor's strides describe (any C-contiguous array of at least
    :meth:`LogicalTensor.get_mem_size` bytes, typically one of the logical
    tensor's shape and dtype); ``None`` allocates one.  :meth:`to_numpy` is
    the typed, shaped view of the data.
    """

    def __init__(self, lt: LogicalTensor, engine: Engine, handle=None):
        self.logical_tensor = _lt(lt)
        self.engine = engine
        if not lt.is_shape_known() or lt.layout_type != LayoutType.strided:
            fail(Status.invalid_arguments,
                 f"tensor {lt.id}: needs a known shape and a strided layout, got {lt!r}")
        lt.dtype  # noqa: B018 - invalid_data_type for a type without NumPy dtype
        self.set_data_handle(handle)

    def set_data_handle(self, handle) -> None:
        lt = self.logical_tensor
        size = lt.get_mem_size()
        if handle is None:
            handle = np.zeros(max(size, 1) // lt.dtype.itemsize or 1, lt.dtype)
        if not isinstance(handle, np.ndarray):
            fail(Status.invalid_arguments,
                 f"tensor {lt.id}: the handle must be a NumPy array, got {type(handle).__name__}")
        if not handle.flags.c_contiguous:
            fail(Status.invalid_arguments,
                 f"tensor {lt.id}: the handle must be C-contiguous memory")
        if handle.nbytes < size:
            fail(Status.invalid_arguments,
                 f"tensor {lt.id}: buffer of {handle.nbytes} bytes, the logical tensor "
                 f"spans {size}")
        self.handle = handle

    def get_data_handle(self) -> np.ndarray:
        return self.handle

    def get_engine(self) -> Engine:
        return self.engine

    def get_logical_tensor(self) -> LogicalTensor:
        return self.logical_tensor

    def to_numpy(self) -> np.ndarray:
        """The elements as an array of the logical tensor's shape (a view, no copy)."""
        lt = self.logical_tensor
        return _view(self.handle, lt.dims, lt.strides, lt.dtype)


def _view(buf: np.ndarray, dims, strides, dtype) -> np.ndarray:
    flat = buf.reshape(-1).view(np.uint8)
    if any(d == 0 for d in dims):
        return np.empty(dims, dtype)
    # only the bytes the view spans (a buffer may end in a partial element)
    span = (sum((d - 1) * abs(s) for d, s in zip(dims, strides)) + 1) * dtype.itemsize
    # negative strides: the first element sits after the span of those axes
    offset = sum((d - 1) * -s for d, s in zip(dims, strides) if s < 0) * dtype.itemsize
    return np.lib.stride_tricks.as_strided(
        flat[:span][offset:].view(dtype), shape=tuple(dims),
        strides=tuple(s * dtype.itemsize for s in strides),
        writeable=buf.flags.writeable)


class Graph:
    """``dnnl::graph::graph``: add ops, finalize, get partitions.

    >>> g = Graph(EngineKind.cpu)
    >>> op = Op(0, OpKind.LeakyReLU, inputs=[LogicalTensor(0, DataType.f32, (2,))],
    ...         outputs=[LogicalTensor(1, DataType.f32, (2,))])
    >>> g.add_op(op)
    Traceback (most recent call last):
    ...
    leakyops.onednn._errors.Error: invalid_graph_op: LeakyReLU op 0 requires the attribute 'alpha'
    >>> op.set_attr(OpAttr.alpha, 0.5)
    >>> g.add_op(op)
    >>> g.finalize()
    >>> [p.get_ops() for p in g.get_partitions()]
    [[0]]
    """

    def __init__(self, engine_kind=EngineKind.cpu, fpmath_mode=None):
        self.engine_kind = EngineKind(engine_kind)
        self.fpmath_mode = fpmath_mode
        self._nodes: list = []
        self._finalized = False

    def add_op(self, op: Op, allow_exception: bool = True):
        """Check ``op`` against its schema and add it (``invalid_graph_op`` if wrong).

        Op ids are unique: adding the same op again is a no-op (as in oneDNN); a
        different op with an id already in the graph is ``invalid_graph_op``.
        """
        try:
            if not isinstance(op, Op):
                fail(Status.invalid_arguments, f"expected an Op, got {type(op).__name__}")
            if self._finalized:
                fail(Status.invalid_graph, "the graph is finalized; no op can be added")
            node = _check_op(op)
            for other in self._nodes:
                if other.id == node.id:
                    if other.signature() == node.signature():
                        return None if allow_exception else Status.success
                    fail(Status.invalid_graph_op,
                         f"op id {op.id} is already used by {other.kind.name} op {other.id}")
            self._nodes.append(node)
        except Exception as exc:
            if allow_exception or not hasattr(exc, "status"):
                raise
            return exc.status
        return None if allow_exception else Status.success

    def finalize(self) -> None:
        """No more ops; every logical tensor id has at most one producer (``invalid_graph``)."""
        producers = {}
        for node in self._nodes:
            for lt in node.outputs:
                if lt.id in producers:
                    fail(Status.invalid_graph,
                         f"logical tensor {lt.id} is an output of op {producers[lt.id]} "
                         f"and of op {node.id}")
                producers[lt.id] = node.id
        self._finalized = True

    def is_finalized(self) -> bool:
        return self._finalized

    def get_partitions(self, policy=PartitionPolicy.fusion) -> list:
        """One partition per op, in topological order (oneDNN 3.2 fuses none of these ops)."""
        if not self._finalized:
            fail(Status.invalid_graph, "get_partitions needs a finalized graph")
        PartitionPolicy(policy)
        return [Partition(i, node, self.engine_kind) for i, node in enumerate(self._topo())]

    def _topo(self):
        producer = {lt.id: n for n in self._nodes for lt in n.outputs}
        done, order = set(), []

        def visit(node, path):
            if node.id in done:
                return
            if node.id in path:
                fail(Status.invalid_graph, f"the graph has a cycle through op {node.id}")
            path.add(node.id)
            for lt in node.inputs:
                if lt.id in producer:
                    visit(producer[lt.id], path)
            path.discard(node.id)
            done.add(node.id)
            order.append(node)

        for node in self._nodes:
            visit(node, set())
        return order


class Partition:
    """``dnnl::graph::partition``: here always a single op."""

    def __init__(self, pid, node: _Node, engine_kind):
        self._id, self._node, self._engine_kind = pid, node, engine_kind

    def get_id(self) -> int:
        return self._id

    def get_ops(self) -> list:
        return [self._node.id]

    def get_ops_num(self) -> int:
        return 1

    def is_supported(self) -> bool:
        return self._node.supported

    def get_engine_kind(self) -> EngineKind:
        return self._engine_kind

    def get_input_ports(self) -> list:
        return list(self._node.inputs)

    def get_output_ports(self) -> list:
        return list(self._node.outputs)

    def compile(self, inputs, outputs, engine: Engine) -> CompiledPartition:
        """Check the compile-time logical tensors and infer unknown output shapes.

        ``inputs``/``outputs`` must cover the partition's ports by id
        (``invalid_arguments``); inputs need known shapes (``invalid_arguments``)
        and one data type among f32/bf16/f16 (``invalid_arguments``); shapes
        must satisfy the op's broadcast rules and known output shapes must equal
        the inferred ones (``invalid_shape``).
        """
        node = self._node
        if not node.supported:
            fail(Status.unimplemented, f"{node.kind.name} op {node.id} is not supported "
                                       "(an unsupported partition cannot be compiled)")
        if not isinstance(engine, Engine):
            fail(Status.invalid_arguments, "compile needs an Engine")
        ins = _match_ports("input", node.inputs, inputs)
        outs = _match_ports("output", node.outputs, outputs)
        for lt in ins:
            if not lt.is_shape_known():
                fail(Status.invalid_arguments,
                     f"input logical tensor {lt.id} needs a known shape at compile time")
            if lt.layout_type != LayoutType.strided:
                fail(Status.invalid_arguments,
                     f"input logical tensor {lt.id} needs a strided layout")
        dts = {lt.data_type for lt in ins} | {lt.data_type for lt in outs
                                              if lt.data_type != DataType.undef}
        if len(dts) != 1 or next(iter(dts)) not in _COMPUTE_TYPES:
            fail(Status.invalid_arguments,
                 f"{node.kind.name} op {node.id}: inputs and outputs must share one data type "
                 f"among f32, bf16, f16; got {sorted(dt.name for dt in dts)}")
        dtype = next(iter(dts))
        shapes = infer_shapes(node.kind, node.attrs, [lt.dims for lt in ins])
        final_outs = []
        for lt, shape in zip(outs, shapes):
            if lt.dims is not None and -1 not in lt.dims and tuple(lt.dims) != tuple(shape):
                fail(Status.invalid_shape,
                     f"output logical tensor {lt.id} has shape {lt.dims}, the op gives {shape}")
            strides = (lt.strides if lt.layout_type == LayoutType.strided
                       and lt.strides is not None and lt.dims is not None
                       and -1 not in lt.dims else _contiguous(shape))
            out = lt._with(shape, strides)
            out.data_type = dtype
            final_outs.append(out)
        return CompiledPartition(node, ins, final_outs, engine)


def _match_ports(what, ports, given):
    given = [_lt(lt) for lt in given]
    by_id = {lt.id: lt for lt in given}
    want = [p.id for p in ports]
    if len(by_id) != len(given) or set(by_id) != set(want):
        fail(Status.invalid_arguments,
             f"compile: {what} logical tensors have ids {[lt.id for lt in given]}, "
             f"the partition's {what}s are {want}")
    return [by_id[i] for i in want]


class CompiledPartition:
    """``dnnl::graph::compiled_partition``: query logical tensors, execute."""

    def __init__(self, node, ins, outs, engine):
        self._node, self._ins, self._outs, self._engine = node, ins, outs, engine

    def query_logical_tensor(self, tid) -> LogicalTensor:
        for lt in self._ins + self._outs:
            if lt.id == tid:
                return lt
        fail(Status.invalid_arguments, f"logical tensor {tid} is not a port of this partition")

    def get_inplace_ports(self) -> list:
        """In-place hints ``(input_id, output_id)``: LeakyReLU's ``src`` and ``dst``."""
        if self._node.kind == OpKind.LeakyReLU:
            return [(self._ins[0].id, self._outs[0].id)]
        return []

    def execute(self, stream: Stream, inputs, outputs) -> None:
        """Run the op on ``inputs``/``outputs`` (:class:`Tensor`, matched by id).

        Every tensor's logical tensor must equal the compiled one with the same
        id in data type, shape and strides (``invalid_arguments``).  On error
        no output is written.
        """
        if not isinstance(stream, Stream):
            fail(Status.invalid_arguments, "execute needs a Stream")
        ins = [_match_tensor("input", lt, inputs) for lt in self._ins]
        outs = [_match_tensor("output", lt, outputs) for lt in self._outs]
        for t in outs:
            if not t.handle.flags.writeable:
                fail(Status.invalid_arguments,
                     f"output tensor {t.logical_tensor.id}: the buffer is read-only")
        compute(self._node.kind, self._node.attrs,
                [t.to_numpy() for t in ins], [t.to_numpy() for t in outs])


def _match_tensor(what, lt: LogicalTensor, tensors) -> Tensor:
    found = [t for t in tensors if isinstance(t, Tensor) and t.logical_tensor.id == lt.id]
    if len(tensors) != len({id(t) for t in tensors}) or len(found) != 1:
        fail(Status.invalid_arguments,
             f"execute: expected one {what} tensor with logical tensor id {lt.id}")
    t = found[0].logical_tensor
    if (t.data_type, tuple(t.dims), tuple(t.strides)) != (lt.data_type, tuple(lt.dims),
                                                           tuple(lt.strides)):
        fail(Status.invalid_arguments,
             f"execute: {what} tensor {lt.id} is {t.data_type.name}{list(t.dims)} strides "
             f"{list(t.strides)}, compiled as {lt.data_type.name}{list(lt.dims)} strides "
             f"{list(lt.strides)}")
    return found[0]


__all__ = [
    "DNNL_GRAPH_UNKNOWN_DIM", "DNNL_GRAPH_UNKNOWN_NDIMS", "DataType", "LayoutType",
    "PropertyType", "EngineKind", "PartitionPolicy", "LogicalTensor", "Op", "OpKind",
    "OpAttr", "Graph", "Partition", "CompiledPartition", "Tensor", "Engine", "Stream",
    "data_type_of",
]
