"""A small ctypes harness for the real oneDNN Graph C API (``dnnl_graph.h``).

The oracle for :mod:`leakyops.onednn`: the tests build the same single-op (or
chained) graph here and in leakyops, execute both, and compare bit for bit.

The library comes from PyPI (``onednn-cpu-gomp==2023.2.0``, oneDNN 3.2) and is
found, in this order, at ``$LEAKYOPS_DNNL_LIB``, next to the interpreter's
prefix (``<prefix>/lib/libdnnl.so.3``), or through ``ctypes.util.find_library``.
:func:`load` returns ``None`` when it is absent, so the tests can skip.

Only what the tests need is wrapped: engine, stream, logical tensors, ops with
f32/bool/str attributes, graph, partitions, compile, execute.  Every C call is
checked; a failing call raises :class:`DnnlError` with oneDNN's status name,
the same names :class:`leakyops.onednn.Error` carries.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import subprocess
import sys
from dataclasses import dataclass

import numpy as np

from leakyops._bench._peers import cpu_flags, onednn_missing_feature  # noqa: F401 - re-exported

try:  # the bfloat16 NumPy dtype; leakyops depends on ml_dtypes anyway
    from ml_dtypes import bfloat16 as _bf16
except ImportError:  # pragma: no cover
    _bf16 = None

MAX_NDIMS = 12
UNKNOWN_DIM = -(2**63)  # DNNL_GRAPH_UNKNOWN_DIM (INT64_MIN)

STATUS_NAMES = {
    0: "success",
    1: "out_of_memory",
    2: "invalid_arguments",
    3: "unimplemented",
    4: "last_impl_reached",
    5: "runtime_error",
    6: "not_required",
    7: "invalid_graph",
    8: "invalid_graph_op",
    9: "invalid_shape",
    10: "invalid_data_type",
}

# dnnl_data_type_t
DT = {"f16": 1, "bf16": 2, "f32": 3, "s32": 4, "s8": 5, "u8": 6, "f64": 7, "boolean": 8}
# dnnl_graph_layout_type_t
LAYOUT_UNDEF, LAYOUT_ANY, LAYOUT_STRIDED, LAYOUT_OPAQUE = 0, 1, 2, 3
# dnnl_graph_op_kind_t (enum order of dnnl_graph_types.h, oneDNN 3.2)
OP_KINDS = [
    "Abs", "AbsBackward", "Add", "AvgPool", "AvgPoolBackward",
    "BatchNormBackward", "BatchNormForwardTraining", "BatchNormInference",
    "BiasAdd", "BiasAddBackward", "Clamp", "ClampBackward", "Concat",
    "Convolution", "ConvolutionBackwardData", "ConvolutionBackwardWeights",
    "ConvTranspose", "ConvTransposeBackwardData", "ConvTransposeBackwardWeights",
    "Dequantize", "Divide", "DynamicDequantize", "DynamicQuantize", "Elu",
    "EluBackward", "End", "Exp", "GELU", "GELUBackward", "HardSwish",
    "HardSwishBackward", "Interpolate", "InterpolateBackward", "LayerNorm",
    "LayerNormBackward", "LeakyReLU", "Log", "LogSoftmax", "LogSoftmaxBackward",
    "MatMul", "Maximum", "MaxPool", "MaxPoolBackward", "Minimum", "Mish",
    "MishBackward", "Multiply", "PReLU", "PReLUBackward", "Quantize",
    "Reciprocal", "ReduceL1", "ReduceL2", "ReduceMax", "ReduceMean",
    "ReduceMin", "ReduceProd", "ReduceSum", "ReLU", "ReLUBackward", "Reorder",
    "Round", "Sigmoid", "SigmoidBackward", "SoftMax", "SoftMaxBackward",
    "SoftPlus", "SoftPlusBackward", "Sqrt", "SqrtBackward", "Square",
    "SquaredDifference", "StaticReshape", "StaticTranspose", "Subtract", "Tanh",
    "TanhBackward", "TypeCast", "Wildcard", "HardSigmoid", "HardSigmoidBackward",
    "Select", "Pow",
]
OP_KIND = {name: i for i, name in enumerate(OP_KINDS)}
# dnnl_graph_op_attr_t (the ones the tests use)
ATTR = {
    "alpha": 0x1,
    "beta": 0x2,
    "per_channel_broadcast": 0x63,
    "data_format": 0x83,
}
ATTR_KIND = {"alpha": "f32", "beta": "f32", "per_channel_broadcast": "bool",
             "data_format": "str"}

POLICY_FUSION, POLICY_DEBUG = 1, 2
ENGINE_CPU = 1


class DnnlError(RuntimeError):
    """A oneDNN C call returned a status other than ``dnnl_success``."""

    def __init__(self, func: str, status: int):
        self.func = func
        self.status = STATUS_NAMES.get(status, f"status_{status}")
        super().__init__(f"{func}: {self.status} ({status})")


class LogicalTensorC(ctypes.Structure):
    class _Layout(ctypes.Union):
        _fields_ = [("strides", ctypes.c_int64 * MAX_NDIMS), ("layout_id", ctypes.c_size_t)]

    _fields_ = [
        ("id", ctypes.c_size_t),
        ("ndims", ctypes.c_int),
        ("dims", ctypes.c_int64 * MAX_NDIMS),
        ("data_type", ctypes.c_int),
        ("property", ctypes.c_int),
        ("layout_type", ctypes.c_int),
        ("layout", _Layout),
    ]

    @property
    def shape(self):
        return tuple(self.dims[i] for i in range(self.ndims)) if self.ndims >= 0 else None

    @property
    def strides(self):
        return tuple(self.layout.strides[i] for i in range(self.ndims))


def bits(a):
    """The raw bits of an array of 16- or 32-bit floats, as unsigned integers."""
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def assert_bits(got, want, *, nan_payload=True):
    """Bit equality, zero signs and NaN payloads included (``nan_payload=False``: any NaN
    equals any NaN)."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                 got.dtype, want.dtype)
    differ = bits(got).ravel() != bits(want).ravel()
    if not nan_payload:
        differ &= ~(np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))).ravel()
    mismatch = np.flatnonzero(differ)
    assert mismatch.size == 0, (
        f"{mismatch.size} elements differ, first at {mismatch[:5]}: "
        f"got {[hex(v) for v in bits(got).ravel()[mismatch[:5]]]} "
        f"want {[hex(v) for v in bits(want).ravel()[mismatch[:5]]]}")


def np_dtype(name: str) -> np.dtype:
    return {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16),
            "bf16": np.dtype(_bf16)}[name]


def dt_name(dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return "f32"
    if dtype == np.float16:
        return "f16"
    if _bf16 is not None and dtype == np.dtype(_bf16):
        return "bf16"
    raise TypeError(f"no oneDNN data type for {dtype}")


def _candidates():
    env = os.environ.get("LEAKYOPS_DNNL_LIB")
    if env:
        yield env
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix]):
        for name in ("libdnnl.so.3", "libdnnl.so"):
            yield os.path.join(prefix, "lib", name)
    found = ctypes.util.find_library("dnnl")
    if found:
        yield found


_LIB = None
_TRIED = False


def load():
    """Return the loaded ``libdnnl`` (a :class:`ctypes.CDLL`), or ``None``."""
    global _LIB, _TRIED
    if _TRIED:
        return _LIB
    _TRIED = True
    for path in _candidates():
        if not (os.path.sep not in path or os.path.exists(path)):
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.dnnl_graph_graph_create  # noqa: B018 - must have the Graph API
        except (OSError, AttributeError):
            continue
        _declare(lib)
        _LIB = lib
        break
    return _LIB


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint),
                ("gpu_runtime", ctypes.c_uint)]


def _declare(lib):
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    lt_p = ctypes.POINTER(LogicalTensorC)
    sigs = {
        "dnnl_engine_create": [ctypes.POINTER(vp), ctypes.c_int, sz],
        "dnnl_engine_destroy": [vp],
        "dnnl_stream_create": [ctypes.POINTER(vp), vp, ctypes.c_uint],
        "dnnl_stream_wait": [vp],
        "dnnl_stream_destroy": [vp],
        "dnnl_graph_logical_tensor_init": [lt_p, sz, ctypes.c_int, ctypes.c_int32,
                                           ctypes.c_int, ctypes.c_int],
        "dnnl_graph_logical_tensor_init_with_dims": [lt_p, sz, ctypes.c_int, ctypes.c_int32,
                                                     ctypes.c_int64 * MAX_NDIMS,
                                                     ctypes.c_int, ctypes.c_int],
        "dnnl_graph_logical_tensor_init_with_strides": [lt_p, sz, ctypes.c_int, ctypes.c_int32,
                                                        ctypes.c_int64 * MAX_NDIMS,
                                                        ctypes.c_int64 * MAX_NDIMS,
                                                        ctypes.c_int],
        "dnnl_graph_logical_tensor_get_mem_size": [lt_p, ctypes.POINTER(sz)],
        "dnnl_graph_tensor_create": [ctypes.POINTER(vp), lt_p, vp, vp],
        "dnnl_graph_tensor_destroy": [vp],
        "dnnl_graph_op_create": [ctypes.POINTER(vp), sz, ctypes.c_int, ctypes.c_char_p],
        "dnnl_graph_op_destroy": [vp],
        "dnnl_graph_op_add_input": [vp, lt_p],
        "dnnl_graph_op_add_output": [vp, lt_p],
        "dnnl_graph_op_set_attr_f32": [vp, ctypes.c_int, ctypes.POINTER(ctypes.c_float), sz],
        "dnnl_graph_op_set_attr_bool": [vp, ctypes.c_int, ctypes.POINTER(ctypes.c_uint8), sz],
        "dnnl_graph_op_set_attr_str": [vp, ctypes.c_int, ctypes.c_char_p, sz],
        "dnnl_graph_graph_create": [ctypes.POINTER(vp), ctypes.c_int],
        "dnnl_graph_graph_destroy": [vp],
        "dnnl_graph_add_op": [vp, vp],
        "dnnl_graph_graph_finalize": [vp],
        "dnnl_graph_graph_filter": [vp, ctypes.c_int],
        "dnnl_graph_graph_get_partition_num": [vp, ctypes.POINTER(sz)],
        "dnnl_graph_graph_get_partitions": [vp, sz, ctypes.POINTER(vp)],
        "dnnl_graph_partition_destroy": [vp],
        "dnnl_graph_partition_get_op_num": [vp, ctypes.POINTER(sz)],
        "dnnl_graph_partition_get_ops": [vp, sz, ctypes.POINTER(sz)],
        "dnnl_graph_partition_is_supported": [vp, ctypes.POINTER(ctypes.c_uint8)],
        "dnnl_graph_partition_get_input_ports_num": [vp, ctypes.POINTER(sz)],
        "dnnl_graph_partition_get_input_ports": [vp, sz, lt_p],
        "dnnl_graph_partition_get_output_ports_num": [vp, ctypes.POINTER(sz)],
        "dnnl_graph_partition_get_output_ports": [vp, sz, lt_p],
        "dnnl_graph_compiled_partition_create": [ctypes.POINTER(vp), vp],
        "dnnl_graph_partition_compile": [vp, vp, sz, ctypes.POINTER(lt_p), sz,
                                         ctypes.POINTER(lt_p), vp],
        "dnnl_graph_compiled_partition_query_logical_tensor": [vp, sz, lt_p],
        "dnnl_graph_compiled_partition_execute": [vp, vp, sz, ctypes.POINTER(vp), sz,
                                                  ctypes.POINTER(vp)],
        "dnnl_graph_compiled_partition_destroy": [vp],
        "dnnl_graph_compiled_partition_get_inplace_ports": [vp, ctypes.POINTER(sz),
                                                            ctypes.POINTER(vp)],
        "dnnl_memory_desc_create_with_strides": [ctypes.POINTER(vp), ctypes.c_int,
                                                 ctypes.c_int64 * MAX_NDIMS, ctypes.c_int,
                                                 ctypes.c_int64 * MAX_NDIMS],
        "dnnl_memory_desc_destroy": [vp],
        "dnnl_primitive_desc_destroy": [vp],
        "dnnl_prelu_forward_primitive_desc_create": [ctypes.POINTER(vp), vp, ctypes.c_int, vp,
                                                     vp, vp, vp],
        "dnnl_prelu_backward_primitive_desc_create": [ctypes.POINTER(vp), vp, vp, vp, vp, vp,
                                                      vp, vp, vp],
        "dnnl_eltwise_forward_primitive_desc_create": [ctypes.POINTER(vp), vp, ctypes.c_int,
                                                       ctypes.c_int, vp, vp, ctypes.c_float,
                                                       ctypes.c_float, vp],
    }
    for name, args in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int
    lib.dnnl_version.restype = ctypes.POINTER(_Version)
    lib.dnnl_version.argtypes = []
    lib.dnnl_get_effective_cpu_isa.restype = ctypes.c_int
    lib.dnnl_get_effective_cpu_isa.argtypes = []


#: dnnl_cpu_isa_t values (dnnl_types.h) and their ONEDNN_MAX_CPU_ISA names.
ISA_NAMES = {0x1: "sse41", 0x3: "avx", 0x7: "avx2", 0xF: "avx2_vnni", 0x1F: "avx2_vnni_2",
             0x27: "avx512_core", 0x67: "avx512_core_vnni", 0xE7: "avx512_core_bf16",
             0x1EF: "avx512_core_fp16", 0xFEF: "avx512_core_amx",
             0x1FEF: "avx512_core_amx_fp16"}


def effective_isa() -> str:
    """The instruction set the library dispatches for here (the CPU's, or the cap's), in the
    spelling of ``ONEDNN_MAX_CPU_ISA`` and of ``leakyops.onednn.Engine(isa=...)``."""
    return ISA_NAMES[load().dnnl_get_effective_cpu_isa()]


def version():
    """``(major, minor, patch)`` of the loaded library."""
    v = load().dnnl_version().contents
    return (v.major, v.minor, v.patch)


def _check(func, status):
    if status != 0:
        raise DnnlError(func, status)


def _call(name, *args):
    _check(name, getattr(_LIB, name)(*args))


def _dims(values):
    arr = (ctypes.c_int64 * MAX_NDIMS)()
    for i, v in enumerate(values):
        arr[i] = v
    return arr


def logical_tensor(tid, dtype, shape=None, strides=None, layout=LAYOUT_STRIDED, ndims=None,
                   *, raw=False):
    """A ``dnnl_graph_logical_tensor_t``; ``shape=None`` leaves dims unknown.

    ``shape`` may contain ``-1`` for an unknown dimension (``DNNL_GRAPH_UNKNOWN_DIM``, INT64_MIN),
    unless ``raw``: then every dim goes to the library as given (``-1`` is a negative dim).
    ``dtype`` is an oneDNN name (``"f32"``) or a NumPy dtype.
    """
    dt = DT[dtype] if isinstance(dtype, str) else DT[dt_name(dtype)]
    lt = LogicalTensorC()
    if shape is None:
        _call("dnnl_graph_logical_tensor_init", ctypes.byref(lt), tid, dt,
              -1 if ndims is None else ndims, layout, 1)
    elif strides is None:
        dims = list(shape) if raw else [UNKNOWN_DIM if d == -1 else d for d in shape]
        _call("dnnl_graph_logical_tensor_init_with_dims", ctypes.byref(lt), tid, dt,
              len(shape), _dims(dims), layout, 1)
    else:
        _call("dnnl_graph_logical_tensor_init_with_strides", ctypes.byref(lt), tid, dt,
              len(shape), _dims(shape), _dims(strides), 1)
    return lt


@dataclass
class OpSpec:
    """One op of a graph: id, kind name, inputs, outputs, attributes."""

    id: int
    kind: str
    inputs: list
    outputs: list
    attrs: dict


class Session:
    """An engine and a stream on the CPU; create with :func:`session`."""

    def __init__(self):
        if load() is None:
            raise RuntimeError("libdnnl (oneDNN 3.x with the Graph API) was not found")
        self.engine = ctypes.c_void_p()
        self.stream = ctypes.c_void_p()
        _call("dnnl_engine_create", ctypes.byref(self.engine), ENGINE_CPU, 0)
        _call("dnnl_stream_create", ctypes.byref(self.stream), self.engine, 1)

    def close(self):
        if self.stream:
            _LIB.dnnl_stream_destroy(self.stream)
            self.stream = ctypes.c_void_p()
        if self.engine:
            _LIB.dnnl_engine_destroy(self.engine)
            self.engine = ctypes.c_void_p()


def make_op(spec: OpSpec):
    """Create a ``dnnl_graph_op_t`` for ``spec`` (caller destroys it)."""
    op = ctypes.c_void_p()
    _call("dnnl_graph_op_create", ctypes.byref(op), spec.id, OP_KIND[spec.kind],
          spec.kind.encode())
    try:
        for lt in spec.inputs:
            _call("dnnl_graph_op_add_input", op, ctypes.byref(lt))
        for lt in spec.outputs:
            _call("dnnl_graph_op_add_output", op, ctypes.byref(lt))
        for name, value in spec.attrs.items():
            kind = ATTR_KIND[name]
            if kind == "f32":
                v = ctypes.c_float(value)
                _call("dnnl_graph_op_set_attr_f32", op, ATTR[name], ctypes.byref(v), 1)
            elif kind == "bool":
                v = ctypes.c_uint8(1 if value else 0)
                _call("dnnl_graph_op_set_attr_bool", op, ATTR[name], ctypes.byref(v), 1)
            else:
                b = value.encode()
                _call("dnnl_graph_op_set_attr_str", op, ATTR[name], b, len(b))
    except DnnlError:
        _LIB.dnnl_graph_op_destroy(op)
        raise
    return op


@dataclass
class PartitionInfo:
    handle: ctypes.c_void_p
    supported: bool
    op_ids: list
    inputs: list
    outputs: list


def build_graph(specs, policy=POLICY_FUSION):
    """Add ``specs`` to a new graph, finalize, partition.

    Returns a list of :class:`PartitionInfo`; raises :class:`DnnlError` (with
    the function that failed, e.g. ``dnnl_graph_add_op``) on error.  The
    graph and its partitions are destroyed by :func:`destroy_partitions`.
    """
    graph = ctypes.c_void_p()
    _call("dnnl_graph_graph_create", ctypes.byref(graph), ENGINE_CPU)
    ops = []
    try:
        for spec in specs:
            op = make_op(spec)
            ops.append(op)
            _call("dnnl_graph_add_op", graph, op)
        _call("dnnl_graph_graph_finalize", graph)
        _call("dnnl_graph_graph_filter", graph, policy)
        n = ctypes.c_size_t()
        _call("dnnl_graph_graph_get_partition_num", graph, ctypes.byref(n))
        handles = (ctypes.c_void_p * n.value)()
        if n.value:
            _call("dnnl_graph_graph_get_partitions", graph, n.value, handles)
        parts = []
        for h in handles:
            h = ctypes.c_void_p(h)
            sup = ctypes.c_uint8()
            _call("dnnl_graph_partition_is_supported", h, ctypes.byref(sup))
            nops = ctypes.c_size_t()
            _call("dnnl_graph_partition_get_op_num", h, ctypes.byref(nops))
            ids = (ctypes.c_size_t * max(nops.value, 1))()
            if nops.value:
                _call("dnnl_graph_partition_get_ops", h, nops.value, ids)
            nin, nout = ctypes.c_size_t(), ctypes.c_size_t()
            _call("dnnl_graph_partition_get_input_ports_num", h, ctypes.byref(nin))
            _call("dnnl_graph_partition_get_output_ports_num", h, ctypes.byref(nout))
            ins = (LogicalTensorC * max(nin.value, 1))()
            outs = (LogicalTensorC * max(nout.value, 1))()
            if nin.value:
                _call("dnnl_graph_partition_get_input_ports", h, nin.value, ins)
            if nout.value:
                _call("dnnl_graph_partition_get_output_ports", h, nout.value, outs)
            parts.append(PartitionInfo(h, bool(sup.value), list(ids[: nops.value]),
                                       list(ins[: nin.value]), list(outs[: nout.value])))
        return parts
    finally:
        for op in ops:
            _LIB.dnnl_graph_op_destroy(op)
        _LIB.dnnl_graph_graph_destroy(graph)


def destroy_partitions(parts):
    for p in parts:
        _LIB.dnnl_graph_partition_destroy(p.handle)


class Compiled:
    """A compiled partition (``dnnl_graph_compiled_partition_t``)."""

    def __init__(self, sess: Session, part: PartitionInfo, inputs, outputs):
        self.sess = sess
        self.handle = ctypes.c_void_p()
        _call("dnnl_graph_compiled_partition_create", ctypes.byref(self.handle), part.handle)
        lt_p = ctypes.POINTER(LogicalTensorC)
        ins = (lt_p * max(len(inputs), 1))(*[ctypes.pointer(lt) for lt in inputs])
        outs = (lt_p * max(len(outputs), 1))(*[ctypes.pointer(lt) for lt in outputs])
        try:
            _call("dnnl_graph_partition_compile", part.handle, self.handle, len(inputs), ins,
                  len(outputs), outs, sess.engine)
        except DnnlError:
            self.destroy()
            raise

    def query(self, tid) -> LogicalTensorC:
        lt = LogicalTensorC()
        _call("dnnl_graph_compiled_partition_query_logical_tensor", self.handle, tid,
              ctypes.byref(lt))
        return lt

    def execute(self, inputs, outputs):
        """Run with ``inputs``/``outputs`` as ``[(logical_tensor, ndarray), ...]``.

        The arrays are used in place (no copy): outputs must be writeable,
        C-contiguous or laid out as their logical tensor's strides say.
        """
        made = []
        try:
            def mk(pairs):
                arr = (ctypes.c_void_p * max(len(pairs), 1))()
                for i, (lt, buf) in enumerate(pairs):
                    t = ctypes.c_void_p()
                    _call("dnnl_graph_tensor_create", ctypes.byref(t), ctypes.byref(lt),
                          self.sess.engine, ctypes.c_void_p(buf.ctypes.data))
                    made.append(t)
                    arr[i] = t
                return arr

            ins, outs = mk(inputs), mk(outputs)
            _call("dnnl_graph_compiled_partition_execute", self.handle, self.sess.stream,
                  len(inputs), ins, len(outputs), outs)
            _call("dnnl_stream_wait", self.sess.stream)
        finally:
            for t in made:
                _LIB.dnnl_graph_tensor_destroy(t)

    def inplace_ports(self):
        """``[(input_id, output_id), ...]`` of ``dnnl_graph_compiled_partition_get_inplace_ports``."""
        n, p = ctypes.c_size_t(), ctypes.c_void_p()
        _call("dnnl_graph_compiled_partition_get_inplace_ports", self.handle, ctypes.byref(n),
              ctypes.byref(p))
        if not n.value:
            return []
        pairs = (ctypes.c_size_t * (2 * n.value)).from_address(p.value)
        return [(pairs[2 * i], pairs[2 * i + 1]) for i in range(n.value)]

    def execute_tensors(self, inputs, outputs):
        """Execute with ``[(logical_tensor, ndarray), ...]`` exactly as given: the library binds
        them by position, so the order, extras and repeats are the caller's."""
        self.execute(inputs, outputs)

    def destroy(self):
        if self.handle:
            _LIB.dnnl_graph_compiled_partition_destroy(self.handle)
            self.handle = ctypes.c_void_p()


def run_single(sess, kind, attrs, in_arrays, out_specs, *, in_strides=None):
    """Build, compile and execute a one-op graph; return the output arrays.

    ``in_arrays``: the input NumPy arrays (C-contiguous; their dtype gives the
    data type).  ``out_specs``: ``[(shape, dtype), ...]`` for the outputs
    (``shape=None``: unknown, inferred at compile time).  Raises
    :class:`DnnlError` at whatever stage the library rejects.
    """
    in_lts = [logical_tensor(i, a.dtype, a.shape) for i, a in enumerate(in_arrays)]
    n = len(in_arrays)
    out_lts = [logical_tensor(n + j, dt, shape, ndims=None if shape is not None else -1)
               for j, (shape, dt) in enumerate(out_specs)]
    parts = build_graph([OpSpec(100, kind, in_lts, out_lts, attrs)])
    try:
        if len(parts) != 1 or not parts[0].supported:
            raise DnnlError("dnnl_graph_partition_is_supported", 3)
        cp = Compiled(sess, parts[0], in_lts, out_lts)
        try:
            outs = []
            pairs = []
            for lt in out_lts:
                q = cp.query(lt.id)
                buf = np.empty(q.shape, dtype=np_dtype(
                    {v: k for k, v in DT.items()}[q.data_type]))
                outs.append(buf)
                pairs.append((q, buf))
            ins = [(lt, np.ascontiguousarray(a)) for lt, a in zip(in_lts, in_arrays)]
            cp.execute(ins, pairs)
            return outs
        finally:
            cp.destroy()
    finally:
        destroy_partitions(parts)


# ---------------------------------------------------------------------------------------------
# What the library can run on this CPU, probed in a subprocess
#
# oneDNN 3.2's Graph API throws a C++ exception through its C interface when no kernel exists
# for a data type on the CPU (f16 without avx512_fp16, for instance); that aborts the whole
# process. So before a test runs an op kind with a data type in-process, the same op kind and
# data type run once in a child process (per test session, cached here); the test is skipped
# when the child dies.

#: Slope layouts and formats each probe runs: every kernel family the tests reach.
_PROBE_CASES = {
    "LeakyReLU": [((2, 3), None, {"alpha": 0.5})],
    "PReLU": [((2, 3, 4, 5), (3,), {"data_format": "NCX"}),
              ((2, 3, 4, 5), (5,), {"data_format": "NXC"}),
              ((2, 3, 4, 5), (1,), {"per_channel_broadcast": False}),
              ((2, 3, 4, 5), (3, 4, 5), {"data_format": "NCX"}),
              ((5,), (5,), {"data_format": "NCX"})],
    "PReLUBackward": [((2, 3, 4, 5), (3,), {"data_format": "NCX"}),
                      ((2, 4, 5, 3), (3,), {"data_format": "NXC"}),
                      ((2, 3, 4, 5), (1,), {}),
                      ((2, 3, 4, 5), (3, 4, 5), {"data_format": "NCX"})],
}

_PROBE_SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import dnnl_oracle as o
kind, dt = sys.argv[2], sys.argv[3]
if o.load() is None:
    print("absent"); sys.exit(0)
sess = o.Session()
for src, wei, attrs in o._PROBE_CASES[kind]:
    x = np.linspace(-2.0, 2.0, int(np.prod(src))).reshape(src).astype(o.np_dtype(dt))
    ins = [x] if wei is None else [x, np.full(wei, 0.25, x.dtype)]
    outs = [(src, dt)]
    if kind == "PReLUBackward":
        ins.append(np.ones(src, x.dtype))
        outs.append((wei, dt))
    o.run_single(sess, kind, attrs, ins, outs)
print("ok")
"""


def missing_feature(dt: str, flags=None) -> str | None:
    """Why a CPU with ``flags`` (default: this one) has no oneDNN kernels of ``dt``, or None
    (the rule the benchmark's oneDNN peer uses too)."""
    return onednn_missing_feature(np_dtype(dt).name if dt != "bf16" else "bfloat16", flags)


def isa_cap() -> str | None:
    """The instruction-set cap set for the library in the environment, if any."""
    return os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or None


@functools.lru_cache(maxsize=None)
def probe(kind: str, dt: str) -> str | None:
    """``None`` when the library runs ``kind`` with data type ``dt`` here, else the reason."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE_SCRIPT, here, kind, dt],
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return f"oneDNN 3.2 hung running {kind} with {dt} on this CPU (probe timed out)"
    if proc.returncode == 0 and proc.stdout.strip().endswith(("ok", "absent")):
        return None
    said = [ln.strip() for ln in proc.stderr.splitlines() if "what()" in ln or "Error" in ln]
    detail = said[0] if said else f"exit status {proc.returncode}"
    feature = missing_feature(dt)
    if feature is not None:
        return f"oneDNN 3.2 has no {dt} kernels for {kind} on this CPU: {feature} ({detail})"
    cap = isa_cap()
    where = f" with ONEDNN_MAX_CPU_ISA={cap}" if cap else " on this CPU"
    return f"oneDNN 3.2 cannot run {kind} with {dt}{where} ({detail})"


def require(kind: str, dtype) -> None:
    """Skip the calling test unless the library runs ``kind`` with ``dtype`` on this CPU."""
    reason = probe(kind, dtype if isinstance(dtype, str) else dt_name(dtype))
    if reason is not None:
        import pytest

        pytest.skip(reason)


_FLUSH_SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import dnnl_oracle as o
o.load()
x = np.array([1, 0x8001, 0x7F, 0x807F, 0x80, 0x8080], np.uint16).view(o.np_dtype("bf16"))
(y,) = o.run_single(o.Session(), "LeakyReLU", {"alpha": 1.0}, [x], [(x.shape, "bf16")])
print(" ".join(str(int(v)) for v in y.view(np.uint16)))
"""


@functools.lru_cache(maxsize=None)
def bf16_flushes_subnormals() -> bool:
    """Whether the library's bf16 results flush subnormals to zero on this CPU.

    Asked of the library itself (LeakyReLU with alpha 1 on subnormals of both signs and the
    smallest normals): with ``vcvtneps2bf16`` (CPUs with avx512_bf16) every f32 value below
    2**-126 in magnitude becomes a zero of its sign; with oneDNN's emulated conversion values
    pass unchanged. Raises when the answer is neither (the rule in docs/onednn.md is wrong).
    """
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", _FLUSH_SCRIPT, here],
                          capture_output=True, text=True, timeout=120, check=True)
    got = [int(v) for v in proc.stdout.split()]
    if got == [1, 0x8001, 0x7F, 0x807F, 0x80, 0x8080]:
        return False
    if got == [0, 0x8000, 0, 0x8000, 0x80, 0x8080]:
        return True
    raise AssertionError(f"oneDNN's bf16 conversion does something unexpected: {got}")


# ---------------------------------------------------------------------------------------------
# The primitive API's own answer where the Graph API aborts
#
# oneDNN 3.2's Graph backend creates its primitives through the C++ API, which throws when a
# primitive descriptor cannot be created; the exception crosses the C interface and aborts the
# process. The status the library meant is the one its primitive C API returns for the same
# memory descriptors, asked here without aborting.

_PROP_FORWARD_TRAINING, _ALG_ELTWISE_RELU = 64, 0x20


def _md(dims, dt, strides=None):
    md = ctypes.c_void_p()
    strides = strides or [int(np.prod(dims[i + 1:])) or 1 for i in range(len(dims))]
    _call("dnnl_memory_desc_create_with_strides", ctypes.byref(md), len(dims), _dims(dims),
          DT[dt], _dims(strides))
    return md


def primitive_status(sess, kind, tensors):
    """The status oneDNN's primitive API returns for an eltwise ReLU (``kind="LeakyReLU"``,
    tensors ``[src, dst]``) or a PReLU forward/backward (``[src, weights, dst]`` /
    ``[src, weights, diff_src, diff_weights, diff_dst]``), each ``(dims, dt[, strides])``
    with the weights already at src's rank. The backward needs a forward hint, created from
    src, weights and diff_dst; its status comes first."""
    mds = [_md(*t) for t in tensors]
    pd, hint = ctypes.c_void_p(), ctypes.c_void_p()
    try:
        if kind == "LeakyReLU":
            st = _LIB.dnnl_eltwise_forward_primitive_desc_create(
                ctypes.byref(pd), sess.engine, _PROP_FORWARD_TRAINING, _ALG_ELTWISE_RELU,
                mds[0], mds[1], 0.5, 0.0, None)
        elif kind == "PReLU":
            st = _LIB.dnnl_prelu_forward_primitive_desc_create(
                ctypes.byref(pd), sess.engine, _PROP_FORWARD_TRAINING, mds[0], mds[1], mds[2],
                None)
        else:
            st = _LIB.dnnl_prelu_forward_primitive_desc_create(
                ctypes.byref(hint), sess.engine, _PROP_FORWARD_TRAINING, mds[0], mds[1], mds[4],
                None)
            if st == 0:
                st = _LIB.dnnl_prelu_backward_primitive_desc_create(
                    ctypes.byref(pd), sess.engine, mds[0], mds[1], mds[2], mds[3], mds[4], hint,
                    None)
        return STATUS_NAMES.get(st, f"status_{st}")
    finally:
        for h in (pd, hint):
            if h:
                _LIB.dnnl_primitive_desc_destroy(h)
        for md in mds:
            _LIB.dnnl_memory_desc_destroy(md)


_CRASH_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import dnnl_oracle as o
o.load()
exec(sys.argv[2])
print("survived")
"""


def crashes(code: str) -> str | None:
    """Run ``code`` (with ``o`` the oracle, the library loaded) in a child process: how the
    library ended it (``"abort: <what()>"``, ``"signal N"``), or None when it survived."""
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT, here, code],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode == 0 and proc.stdout.strip().endswith("survived"):
        return None
    what = [ln.strip() for ln in proc.stderr.splitlines() if "what()" in ln]
    if what:
        return "abort: " + what[0]
    return f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
