"""``dnnl::graph`` objects: logical tensors, ops, graph, partitions, tensors."""

from __future__ import annotations

import enum
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from .. import _core, _memory
from ._errors import Status, fail
from ._ops import (
    SCHEMAS,
    OpAttr,
    OpKind,
    Plan,
    attr_key,
    check_library_limits,
    compute,
    convert_attr,
    default_isa,
    infer_shapes,
    flushes_bf16,
    isa_lacks,
    isa_name,
    plan,
)

if TYPE_CHECKING:
    from typing import TypeAlias

    #: The typed, shaped view of a tensor's data: float32, float16 or bfloat16 elements.
    ElementArray: TypeAlias = np.ndarray[tuple[int, ...], np.dtype[np.generic[float]]]

DNNL_GRAPH_UNKNOWN_NDIMS = -1
DNNL_GRAPH_UNKNOWN_DIM = -(2**63)  # INT64_MIN, as in dnnl_graph_types.h
DNNL_MAX_NDIMS = 12
#: The id of the empty logical tensor :meth:`CompiledPartition.query_logical_tensor` returns
#: for an id that is not one of the partition's ports (``size_t`` -1, as oneDNN).
EMPTY_ID = 2**64 - 1


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


def data_type_of(dtype: Any) -> DataType:
    """The :class:`DataType` of a NumPy dtype (``invalid_arguments`` if none).

    >>> data_type_of(np.float32).name
    'f32'
    """
    dtype = np.dtype(dtype)
    for dt, npdt in _NP.items():
        if npdt == dtype:
            return dt
    fail(Status.invalid_arguments, f"no oneDNN Graph data type for NumPy dtype {dtype} "
                                   "(supported: float32, float16, bfloat16)")


def _int(value: object, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        fail(Status.invalid_arguments, f"{what} must be an integer, got {value!r}")
    return int(value)


def _id(value: object, what: str) -> int:
    """An op or logical-tensor id: oneDNN's ``size_t``, 0 … 2**64 - 1."""
    n = _int(value, what)
    if not 0 <= n <= EMPTY_ID:
        fail(Status.invalid_arguments, f"{what} must be in 0 … 2**64 - 1 (a size_t), got {value!r}")
    return n


class LogicalTensor:
    """``dnnl::graph::logical_tensor``: id, data type, shape and layout, no data.

    ``shape`` is a sequence of dims or ``None`` with ``ndims`` (``ndims=-1``: unknown rank,
    the default). As in oneDNN 3.2, :data:`DNNL_GRAPH_UNKNOWN_DIM` (INT64_MIN) is an unknown
    dim; any dim is accepted here, and a negative one is an error only where the tensor is
    used (``invalid_shape``, or ``invalid_arguments`` for an unknown input dim at compile).
    A strided layout without ``strides`` is row-major contiguous (unknown while a dim is
    negative). More than 12 dims is ``invalid_arguments`` at once (oneDNN would write past
    its 12-element arrays).

    >>> lt = LogicalTensor(3, DataType.f32, (2, 3))
    >>> lt.get_id(), lt.get_dims(), lt.get_strides(), lt.get_mem_size()
    (3, [2, 3], [3, 1], 24)
    """

    def __init__(self, tid: int, data_type: DataType | int,
                 shape: Sequence[int] | int | None = None,
                 layout_type: LayoutType | int = LayoutType.strided,
                 property_type: PropertyType | int = PropertyType.undef, *,
                 strides: Sequence[int] | None = None, ndims: int | None = None) -> None:
        self.id = _id(tid, "logical tensor id")
        try:
            self.data_type = DataType(data_type)
        except ValueError:
            fail(Status.invalid_arguments, f"unknown data type {data_type!r}")
        self.layout_type = LayoutType(layout_type)
        self.property_type = PropertyType(property_type)
        self.dims: tuple[int, ...] | None
        if shape is None:
            n = DNNL_GRAPH_UNKNOWN_NDIMS if ndims is None else _int(ndims, "ndims")
            if n > DNNL_MAX_NDIMS:
                fail(Status.invalid_arguments,
                     f"logical tensor {self.id}: {n} dims, at most {DNNL_MAX_NDIMS}")
            self.ndims = n
            self.dims = None if n < 0 else (DNNL_GRAPH_UNKNOWN_DIM,) * n
        else:
            if isinstance(shape, (numbers.Integral, np.integer)):
                shape = (int(shape),)
            try:
                items = tuple(shape)
            except TypeError:
                fail(Status.invalid_arguments,
                     f"logical tensor {self.id}: shape must be a sequence of ints, got {shape!r}")
            dims = tuple(_int(d, "dim") for d in items)
            if len(dims) > DNNL_MAX_NDIMS:
                fail(Status.invalid_arguments,
                     f"logical tensor {self.id}: {len(dims)} dims, at most {DNNL_MAX_NDIMS}")
            self.dims = dims
            self.ndims = len(dims)
        self.strides: tuple[int, ...] | None
        if strides is not None:
            if self.layout_type not in (LayoutType.strided, LayoutType.any):
                fail(Status.invalid_arguments, "strides need a strided or any layout")
            self.strides = tuple(_int(s, "stride") for s in strides)
            if self.ndims < 0 or len(self.strides) != self.ndims:
                fail(Status.invalid_arguments,
                     f"logical tensor {self.id}: {len(self.strides)} strides for {self.ndims} dims")
        elif self.layout_type == LayoutType.strided and self.is_shape_known():
            assert self.dims is not None
            self.strides = _contiguous(self.dims)
        else:
            self.strides = None

    # -- queries (names of the C++ API) --
    def get_id(self) -> int:
        return self.id

    def get_data_type(self) -> DataType:
        return self.data_type

    def get_layout_type(self) -> LayoutType:
        return self.layout_type

    def get_property_type(self) -> PropertyType:
        return self.property_type

    def get_dims(self) -> list[int]:
        if self.dims is None:
            fail(Status.invalid_arguments, f"logical tensor {self.id} has an unknown rank")
        return list(self.dims)

    def get_strides(self) -> list[int]:
        if self.layout_type != LayoutType.strided or self.strides is None:
            fail(Status.invalid_arguments,
                 f"logical tensor {self.id} has no strides (layout {self.layout_type.name})")
        return list(self.strides)

    def is_shape_known(self) -> bool:
        """Whether every dim is known: a negative dim counts as unknown (as oneDNN)."""
        return self.dims is not None and all(d >= 0 for d in self.dims)

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The dims as a tuple (``None`` if the rank is unknown)."""
        return self.dims

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype of the elements."""
        if self.data_type not in _NP:
            fail(Status.invalid_data_type,
                 f"logical tensor {self.id}: no NumPy dtype for {self.data_type.name}")
        return _NP[self.data_type]

    def get_mem_size(self) -> int:
        """Bytes the tensor spans (0 for unknown shapes, as oneDNN)."""
        if not self.is_shape_known() or self.data_type not in _NP:
            return 0
        assert self.dims is not None
        if any(d == 0 for d in self.dims):
            return 0
        strides = self.strides if self.strides is not None else _contiguous(self.dims)
        span = 1 + sum((d - 1) * abs(s) for d, s in zip(self.dims, strides))
        return span * self.dtype.itemsize

    def is_equal(self, other: LogicalTensor) -> bool:
        return (self.id, self.data_type, self.dims, self.layout_type, self.strides) == (
            other.id, other.data_type, other.dims, other.layout_type, other.strides)

    def __repr__(self) -> str:
        return (f"LogicalTensor(id={self.id}, data_type={self.data_type.name}, "
                f"dims={self.dims}, layout={self.layout_type.name}, strides={self.strides})")

    def _with(self, dims: Sequence[int], strides: Sequence[int]) -> LogicalTensor:
        lt = LogicalTensor.__new__(LogicalTensor)
        lt.__dict__.update(self.__dict__)
        lt.dims, lt.ndims, lt.strides = tuple(dims), len(dims), tuple(strides)
        lt.layout_type = LayoutType.strided
        return lt


def _empty_logical_tensor() -> LogicalTensor:
    """oneDNN's empty logical tensor: id ``size_t`` -1, unknown rank, undef type, any layout."""
    return LogicalTensor(EMPTY_ID, DataType.undef, None, LayoutType.any, ndims=-1)


def _contiguous(dims: Sequence[int]) -> tuple[int, ...]:
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

    def __init__(self, oid: int, kind: OpKind | int | str, name: str = "",
                 inputs: Sequence[LogicalTensor] = (),
                 outputs: Sequence[LogicalTensor] = ()) -> None:
        self.id = _id(oid, "op id")
        try:
            self.kind = OpKind(kind) if not isinstance(kind, str) else OpKind[kind]
        except (ValueError, KeyError):
            fail(Status.invalid_arguments, f"unknown op kind {kind!r}")
        self.name = name or self.kind.name
        self.attrs: dict[OpAttr, object] = {}
        self.inputs: list[LogicalTensor] = []
        self.outputs: list[LogicalTensor] = []
        self.add_inputs(inputs)
        self.add_outputs(outputs)

    def get_id(self) -> int:
        return self.id

    def get_kind(self) -> OpKind:
        return self.kind

    def set_attr(self, name: OpAttr | str, value: float | bool | str) -> None:
        """Set an attribute (checked against the op's schema when added to a graph)."""
        self.attrs[attr_key(name)] = value

    def get_attr(self, name: OpAttr | str) -> float | bool | str:
        key = attr_key(name)
        if key not in self.attrs:
            fail(Status.invalid_arguments, f"{self.name}: attribute {key.name!r} is not set")
        value = self.attrs[key]
        if isinstance(value, np.floating):
            return float(value)
        return value  # type: ignore[return-value]  # (set_attr's types)

    def add_input(self, lt: LogicalTensor) -> None:
        self.inputs.append(_lt(lt))

    def add_inputs(self, lts: Sequence[LogicalTensor]) -> None:
        for lt in lts:
            self.add_input(lt)

    def add_output(self, lt: LogicalTensor) -> None:
        self.outputs.append(_lt(lt))

    def add_outputs(self, lts: Sequence[LogicalTensor]) -> None:
        for lt in lts:
            self.add_output(lt)

    def __repr__(self) -> str:
        return f"Op(id={self.id}, kind={self.kind.name}, name={self.name!r})"


def _lt(lt: object) -> LogicalTensor:
    if not isinstance(lt, LogicalTensor):
        fail(Status.invalid_arguments, f"expected a LogicalTensor, got {type(lt).__name__}")
    return lt


class _Node:
    """An op as added to a graph: a snapshot with its attributes checked and defaulted."""

    def __init__(self, op: Op, attrs: dict[OpAttr, Any], supported: bool) -> None:
        self.id, self.kind, self.name = op.id, op.kind, op.name
        self.attrs = attrs
        self.inputs = list(op.inputs)
        self.outputs = list(op.outputs)
        self.supported = supported

    def signature(self) -> tuple[object, ...]:
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
    """``dnnl::engine``: only the CPU engine with index 0 exists here.

    ``isa`` (keyword, optional) makes the engine compute as oneDNN 3.2 does on a CPU whose
    best instruction set is this one, spelled as ``ONEDNN_MAX_CPU_ISA`` spells it
    (``"AVX2"``, ``"AVX512_CORE_BF16"``, …, any case), or ``"host"``: the one oneDNN itself
    dispatches for on this CPU (its features, capped by ``ONEDNN_MAX_CPU_ISA`` as the library
    caps itself), or ``"model"``: the model's fixed default, an AVX-512 CPU that rounds bf16
    exactly, the same on every machine (``isa`` is then None). Without it,
    ``$LEAKYOPS_ONEDNN_ISA`` (any of these names) if set, else ``"model"``. It selects the variant of the jit PReLU kernels (the AVX2, AVX
    and SSE4.1 ones differ from AVX-512's at NaN, ±0 and underflow), the flush of bf16
    results below 2**-126 to zeros of their sign on CPUs with AVX512-BF16 (or AVX2-VNNI-2),
    and which data types have kernels (bf16 from AVX512_CORE, f16 from AVX512_CORE_FP16,
    both on AVX2_VNNI_2; the library aborts elsewhere, compiling here is ``unimplemented``).

    >>> Engine(EngineKind.cpu, 0, isa="AVX512_CORE_AMX").isa
    'avx512_core_amx'
    """

    kind: EngineKind

    def __init__(self, kind: EngineKind | int = EngineKind.cpu, index: int = 0, *,
                 isa: str | None = None) -> None:
        if EngineKind(kind) != EngineKind.cpu or index != 0:
            fail(Status.invalid_arguments,
                 f"no engine of kind {EngineKind(kind).name} with index {index} (CPU 0 only)")
        self.kind = EngineKind.cpu
        self.index = 0
        self.isa = isa_name(isa) if isa is not None else default_isa()

    def get_kind(self) -> EngineKind:
        return self.kind

    @property
    def flushes_bf16(self) -> bool:
        """Whether bf16 results below 2**-126 in magnitude become zeros (``vcvtneps2bf16``)."""
        return flushes_bf16(self.isa)


class Stream:
    """``dnnl::stream``: execution is synchronous, so :meth:`wait` returns at once."""

    def __init__(self, engine: Engine) -> None:
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

    As ``dnnl_graph_tensor_create``, any logical tensor is accepted (an unknown shape, an
    ``any`` layout, a type without kernels): a tensor is a handle, and only one bound to a
    compiled port at :meth:`CompiledPartition.execute` is read or written, as that port's
    compiled logical tensor. ``None`` then allocates the :meth:`LogicalTensor.get_mem_size`
    bytes the logical tensor spans (none for an unknown shape, as oneDNN).
    """

    def __init__(self, lt: LogicalTensor, engine: Engine,
                 handle: np.ndarray[Any, Any] | None = None) -> None:
        self.logical_tensor = _lt(lt)
        if not isinstance(engine, Engine):
            fail(Status.invalid_arguments,
                 f"tensor {lt.id}: needs an Engine, got {type(engine).__name__}")
        self.engine = engine
        self.set_data_handle(handle)

    def set_data_handle(self, handle: np.ndarray[Any, Any] | None) -> None:
        lt = self.logical_tensor
        size = lt.get_mem_size()
        if handle is None:
            # more than the machine holds is refused before asking (under an overcommitting
            # kernel the allocation would succeed, and the first pages touched beyond memory
            # kill the process); more than an address space is NumPy's ValueError
            limit = _memory.memory_and_swap()
            try:
                if limit is not None and size > limit:
                    raise MemoryError
                if _typed(lt):
                    handle = np.zeros(max(size, 1) // lt.dtype.itemsize or 1, lt.dtype)
                else:
                    handle = np.zeros(size, np.uint8)
            except (MemoryError, ValueError):
                fail(Status.out_of_memory,
                     f"tensor {lt.id}: cannot allocate the {size} bytes it spans")
        _check_buffer(handle, lt, f"tensor {lt.id}")
        self.handle = handle

    def get_data_handle(self) -> np.ndarray[Any, Any]:
        return self.handle

    def get_engine(self) -> Engine:
        return self.engine

    def get_logical_tensor(self) -> LogicalTensor:
        return self.logical_tensor

    def to_numpy(self) -> ElementArray:
        """The elements as an array of the logical tensor's shape (a view, no copy);
        ``invalid_arguments`` for a logical tensor without a known strided shape."""
        lt = self.logical_tensor
        if not _viewable(lt):
            fail(Status.invalid_arguments,
                 f"tensor {lt.id}: to_numpy needs a known shape and a strided layout, got {lt!r}")
        assert lt.dims is not None and lt.strides is not None
        return _view(self.handle, lt.dims, lt.strides, lt.dtype)


def _viewable(lt: LogicalTensor) -> bool:
    """Whether a logical tensor's elements can be viewed: a known shape and strides."""
    return lt.is_shape_known() and lt.layout_type == LayoutType.strided and lt.strides is not None


def _typed(lt: LogicalTensor) -> bool:
    """Whether a logical tensor describes elements NumPy can view and type."""
    return _viewable(lt) and lt.data_type in _NP


def _plain(handle: object, what: str) -> np.ndarray[Any, Any]:
    """A buffer as the core's plain view of its memory (``np.matrix`` and other subclasses
    viewed as ``np.ndarray``, so that reshaping stays flat; masked arrays refused)."""
    try:
        return _core.plain_view(handle, "Tensor", what, writable=False, any_dtype=True)
    except (TypeError, ValueError) as exc:
        fail(Status.invalid_arguments, str(exc))


def _check_buffer(handle: object, lt: LogicalTensor, what: str) -> None:
    if not isinstance(handle, np.ndarray):
        fail(Status.invalid_arguments,
             f"{what}: the handle must be a NumPy array, got {type(handle).__name__}")
    _plain(handle, what)
    if handle.dtype.hasobject:
        fail(Status.invalid_arguments,
             f"{what}: the handle holds Python objects ({handle.dtype}), not raw memory")
    if not handle.flags.c_contiguous:
        fail(Status.invalid_arguments, f"{what}: the handle must be C-contiguous memory")
    if handle.nbytes < lt.get_mem_size():
        fail(Status.invalid_arguments,
             f"{what}: buffer of {handle.nbytes} bytes, the logical tensor spans "
             f"{lt.get_mem_size()}")


def _view(buf: np.ndarray[Any, Any], dims: Sequence[int], strides: Sequence[int],
          dtype: np.dtype[Any]) -> ElementArray:
    flat = _plain(buf, "buffer").reshape(-1).view(np.uint8)
    if any(d == 0 for d in dims):
        return np.empty(tuple(dims), dtype)
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

    def __init__(self, engine_kind: EngineKind | int = EngineKind.cpu,
                 fpmath_mode: object = None, *, strict: bool = True) -> None:
        if not isinstance(strict, (bool, np.bool_)):
            fail(Status.invalid_arguments, f"Graph: strict must be a bool, got {strict!r}")
        self.engine_kind = EngineKind(engine_kind)
        self.fpmath_mode = fpmath_mode
        self.strict = bool(strict)
        self._nodes: list[_Node] = []
        self._finalized = False

    def add_op(self, op: Op, allow_exception: bool = True) -> Status | None:
        """Check ``op`` against its schema and add it (``invalid_graph_op`` if wrong).

        Op ids are unique: adding the same op again is a no-op (as in oneDNN); a
        different op with an id already in the graph is ``invalid_graph_op`` (with
        ``strict=False``, ignored, as oneDNN 3.2 does). With ``allow_exception=False`` the
        status comes back instead of an exception.
        """
        try:
            if not isinstance(op, Op):
                fail(Status.invalid_arguments, f"expected an Op, got {type(op).__name__}")
            if self._finalized:
                fail(Status.invalid_graph, "the graph is finalized; no op can be added")
            node = _check_op(op)
            for other in self._nodes:
                if other.id == node.id:
                    if other.signature() == node.signature() or not self.strict:
                        return None if allow_exception else Status.success
                    fail(Status.invalid_graph_op,
                         f"op id {op.id} is already used by {other.kind.name} op {other.id}")
            self._nodes.append(node)
        except Exception as exc:
            if allow_exception or not hasattr(exc, "status"):
                raise
            return Status(exc.status)
        return None if allow_exception else Status.success

    def finalize(self) -> None:
        """No more ops; every logical tensor id has at most one producer (``invalid_graph``;
        with ``strict=False`` not checked, as oneDNN 3.2)."""
        producers: dict[int, int] = {}
        for node in self._nodes if self.strict else ():
            for lt in node.outputs:
                if lt.id in producers:
                    fail(Status.invalid_graph,
                         f"logical tensor {lt.id} is an output of op {producers[lt.id]} "
                         f"and of op {node.id}")
                producers[lt.id] = node.id
        self._finalized = True

    def is_finalized(self) -> bool:
        return self._finalized

    def get_partitions(self, policy: PartitionPolicy | int = PartitionPolicy.fusion
                       ) -> list[Partition]:
        """One partition per op, in topological order (oneDNN 3.2 fuses none of these ops).

        A cycle (an op reading its own output included) is ``invalid_graph``; with
        ``strict=False`` its ops get no partition, as in oneDNN 3.2, and an op that reads
        a cycle's output is ``invalid_graph`` still: the library never returns there (it
        loops until it runs out of memory)."""
        if not self._finalized:
            fail(Status.invalid_graph, "get_partitions needs a finalized graph")
        PartitionPolicy(policy)
        return [Partition(i, node, self.engine_kind) for i, node in enumerate(self._topo())]

    def _topo(self) -> list[_Node]:
        producer = {lt.id: n for n in self._nodes for lt in n.outputs}
        done: set[int] = set()
        cyclic: set[int] = set()
        order: list[_Node] = []

        def visit(node: _Node, path: list[int]) -> None:
            if node.id in done or node.id in cyclic:
                return
            if node.id in path:
                if self.strict:
                    fail(Status.invalid_graph, f"the graph has a cycle through op {node.id}")
                cyclic.update(path[path.index(node.id):])
                return
            path.append(node.id)
            for lt in node.inputs:
                if lt.id in producer:
                    visit(producer[lt.id], path)
            path.pop()
            if node.id in cyclic:
                return
            feeders = [producer[lt.id].id for lt in node.inputs if lt.id in producer]
            if any(f in cyclic for f in feeders):
                fail(Status.invalid_graph,
                     f"op {node.id} reads the output of a cycle (ops {sorted(cyclic)}); "
                     "oneDNN 3.2 never returns here (it loops until it runs out of memory)")
            done.add(node.id)
            order.append(node)

        for node in self._nodes:
            visit(node, [])
        return order


class Partition:
    """``dnnl::graph::partition``: here always a single op."""

    def __init__(self, pid: int, node: _Node, engine_kind: EngineKind) -> None:
        self._id, self._node, self._engine_kind = pid, node, engine_kind

    def get_id(self) -> int:
        return self._id

    def get_ops(self) -> list[int]:
        return [self._node.id]

    def get_ops_num(self) -> int:
        return 1

    def is_supported(self) -> bool:
        return self._node.supported

    def get_engine_kind(self) -> EngineKind:
        return self._engine_kind

    def get_input_ports(self) -> list[LogicalTensor]:
        """The op's inputs in order (a tensor given twice appears twice, as in oneDNN)."""
        return list(self._node.inputs)

    def get_output_ports(self) -> list[LogicalTensor]:
        return list(self._node.outputs)

    def compile(self, inputs: Sequence[LogicalTensor], outputs: Sequence[LogicalTensor],
                engine: Engine) -> CompiledPartition:
        """Check the compile-time logical tensors and infer unknown output shapes.

        As oneDNN 3.2 (``set_given_inputs_outputs`` and the dnnl backend's passes): each
        port takes the first logical tensor of ``inputs``/``outputs`` with its id, others
        (extra ids, repeats) are kept for their position and otherwise ignored; a port
        without one, an undef data type or layout, an unknown rank or an unknown
        (INT64_MIN) input dim is ``invalid_arguments``; another negative input dim, a
        slope that does not broadcast, or a known output shape other than the inferred one
        is ``invalid_shape``; PReLU whose first output given has another data type than the
        first input given (src and dst, unless extras come first) is ``unimplemented``. The cases the library aborts or crashes on come next
        (``_ops.check_library_limits``).
        """
        node = self._node
        if not node.supported:
            fail(Status.invalid_arguments, f"{node.kind.name} op {node.id} is not supported "
                                           "(an unsupported partition cannot be compiled)")
        if not isinstance(engine, Engine):
            fail(Status.invalid_arguments, "compile needs an Engine")
        given_in = [_lt(lt) for lt in inputs]
        given_out = [_lt(lt) for lt in outputs]
        in_pos = [_port("input", p, given_in) for p in node.inputs]
        out_pos = [_port("output", p, given_out) for p in node.outputs]
        ins = [given_in[i] for i in in_pos]
        outs = [given_out[i] for i in out_pos]
        for lt in ins:
            if lt.dims is None or any(d == DNNL_GRAPH_UNKNOWN_DIM for d in lt.dims):
                fail(Status.invalid_arguments,
                     f"input logical tensor {lt.id} needs a known shape at compile time")
            if lt.layout_type != LayoutType.strided:
                fail(Status.invalid_arguments,
                     f"input logical tensor {lt.id} needs a strided layout, got "
                     f"{lt.layout_type.name} (the library aborts here)")
        for lt in ins + outs:
            if lt.data_type not in _COMPUTE_TYPES:
                fail(Status.unimplemented,
                     f"{node.kind.name} op {node.id}: logical tensor {lt.id} has data type "
                     f"{lt.data_type.name}; oneDNN 3.2's kernels take f32, bf16 or f16 "
                     "(the library aborts here, or for an f64 slope reads it: not modelled)")
        # (the library compares the first logical tensors given, whatever their ids: an extra
        # input of another type in front of src fails this check too)
        if node.kind == OpKind.PReLU and given_out[0].data_type != given_in[0].data_type:
            fail(Status.unimplemented,
                 f"PReLU op {node.id}: the first output given ({given_out[0].id}) is "
                 f"{given_out[0].data_type.name} but the first input given "
                 f"({given_in[0].id}) is {given_in[0].data_type.name}; oneDNN's PReLU keeps "
                 "src's data type, and compares these two")
        shapes = infer_shapes(node.kind, node.attrs, [lt.dims for lt in ins])
        final_outs = []
        for lt, shape in zip(outs, shapes):
            if lt.dims is not None:
                if len(lt.dims) != len(shape) or any(
                        d != s and d != DNNL_GRAPH_UNKNOWN_DIM for d, s in zip(lt.dims, shape)):
                    fail(Status.invalid_shape,
                         f"output logical tensor {lt.id} has shape {lt.dims}, the op gives "
                         f"{shape}")
            known = lt.is_shape_known() and lt.strides is not None \
                and lt.layout_type == LayoutType.strided
            strides = lt.strides if known and lt.strides is not None else _contiguous(shape)
            final_outs.append(lt._with(shape, strides))
        for lt in ins + final_outs:
            reason = isa_lacks(engine.isa, lt.data_type.name)
            if reason is not None:
                fail(Status.unimplemented,
                     f"{node.kind.name} op {node.id} with {lt.data_type.name} on "
                     f"{str(engine.isa).upper()}: {reason} (the library aborts here)")
        check_library_limits(node.kind, node.attrs, ins, final_outs)
        the_plan = plan(node.kind, node.attrs, ins, engine.isa, engine.flushes_bf16)
        return CompiledPartition(node, given_in, in_pos, given_out, out_pos, final_outs,
                                 the_plan, engine)


def _port(what: str, port: LogicalTensor, given: list[LogicalTensor]) -> int:
    """The position of the first of ``given`` with the port's id (``invalid_arguments`` if none)."""
    for i, lt in enumerate(given):
        if lt.id == port.id:
            if lt.data_type == DataType.undef or lt.layout_type == LayoutType.undef:
                fail(Status.invalid_arguments,
                     f"compile: {what} logical tensor {lt.id} has an undef data type or layout")
            if lt.ndims < 0 and what == "input":
                fail(Status.invalid_arguments,
                     f"compile: input logical tensor {lt.id} has an unknown rank")
            return i
    fail(Status.invalid_arguments,
         f"compile: no {what} logical tensor with id {port.id} among "
         f"{[lt.id for lt in given]} (the partition's {what} port)")


class CompiledPartition:
    """``dnnl::graph::compiled_partition``: query logical tensors, execute."""

    def __init__(self, node: _Node, given_in: list[LogicalTensor], in_pos: list[int],
                 given_out: list[LogicalTensor], out_pos: list[int],
                 outs: list[LogicalTensor], the_plan: Plan, engine: Engine) -> None:
        self._node, self._engine, self._plan = node, engine, the_plan
        self._in_pos, self._out_pos = in_pos, out_pos
        self._ins = [given_in[i] for i in in_pos]
        self._outs = outs

    def query_logical_tensor(self, tid: int) -> LogicalTensor:
        """The compiled logical tensor of a port (the first with that id); for any other id an
        empty logical tensor (id ``2**64 - 1``, unknown rank), as oneDNN returns."""
        for lt in self._ins + self._outs:
            if lt.id == tid:
                return lt
        return _empty_logical_tensor()

    def get_inplace_ports(self) -> list[tuple[int, int]]:
        """In-place hints ``(input_id, output_id)``: none for these ops in oneDNN 3.2 (an
        in-place LeakyReLU still works: give the same buffer as src and dst)."""
        return []

    def execute(self, stream: Stream, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> None:
        """Run the op. Tensors bind **by position**, as in oneDNN 3.2: ``inputs[i]`` is the
        buffer of the i-th logical tensor given to :meth:`Partition.compile` (a port takes
        the first one with its id), and only its buffer is used, read with the compiled
        logical tensor's shape, strides and data type; the tensor's own logical tensor is
        not looked at. A list too short for a port (oneDNN reads past it and crashes), or a
        buffer smaller than the compiled logical tensor spans (oneDNN reads or writes past
        it), is ``invalid_arguments``, as is a read-only output. On error nothing is
        written.
        """
        if not isinstance(stream, Stream):
            fail(Status.invalid_arguments, "execute needs a Stream")
        for what, tensors in (("inputs", inputs), ("outputs", outputs)):
            if not isinstance(tensors, (list, tuple)):
                fail(Status.invalid_arguments,
                     f"execute: {what} must be a list of Tensors, got {type(tensors).__name__}")
        ins = [_bound("input", lt, pos, inputs) for lt, pos in zip(self._ins, self._in_pos)]
        outs = [_bound("output", lt, pos, outputs) for lt, pos in zip(self._outs, self._out_pos)]
        for view, lt in zip(outs, self._outs):
            if not view.flags.writeable:
                fail(Status.invalid_arguments,
                     f"output tensor of logical tensor {lt.id}: the buffer is read-only")
            assert lt.dims is not None and lt.strides is not None
            if not _core.disjoint_layout(lt.dims, lt.strides):  # (the core's one rule)
                fail(Status.invalid_arguments,
                     f"output logical tensor {lt.id}: strides {list(lt.strides)} make elements "
                     f"of shape {list(lt.dims)} share memory (the library writes them in an "
                     "unspecified order; the model refuses)")
        compute(self._node.kind, self._node.attrs, self._plan, ins, outs)


def _bound(what: str, lt: LogicalTensor, pos: int, tensors: Sequence[Tensor]) -> ElementArray:
    """The view of ``tensors[pos]``'s buffer as the compiled logical tensor ``lt``."""
    if pos >= len(tensors):
        fail(Status.invalid_arguments,
             f"execute: the compiled {what} logical tensor {lt.id} binds {what} tensor "
             f"{pos}, and {len(tensors)} were given (tensors bind by position)")
    t = tensors[pos]
    if not isinstance(t, Tensor):
        fail(Status.invalid_arguments,
             f"execute: {what} {pos} must be a Tensor, got {type(t).__name__}")
    _check_buffer(t.handle, lt, f"execute: {what} tensor {pos} (bound to logical tensor {lt.id})")
    assert lt.dims is not None and lt.strides is not None
    return _view(t.handle, lt.dims, lt.strides, lt.dtype)


__all__ = [
    "DNNL_GRAPH_UNKNOWN_DIM", "DNNL_GRAPH_UNKNOWN_NDIMS", "DataType", "LayoutType",
    "PropertyType", "EngineKind", "PartitionPolicy", "LogicalTensor", "Op", "OpKind",
    "OpAttr", "Graph", "Partition", "CompiledPartition", "Tensor", "Engine", "Stream",
    "data_type_of",
]
