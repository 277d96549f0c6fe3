"""Op kinds, attributes, the schemas of the three supported ops, their shape rules, the
kernel oneDNN 3.2 dispatches for each, and their compute.

The compute functions translate one op into one call of :mod:`leakyops._core` with the
``compare=`` option that names oneDNN's kernel (``"dnnl-eltwise"``, ``"dnnl-ref"``,
``"dnnl-jit"`` and its per-instruction-set variants); all arithmetic happens there. See the
package docstring and ``docs/onednn.md`` for the formulas.
"""

from __future__ import annotations

import enum
import math
import numbers
import os
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .. import _core, _cpu
from ._errors import Error, Status, fail


class OpKind(enum.IntEnum):
    """``dnnl_graph_op_kind_t`` / ``dnnl::graph::op::kind`` (oneDNN 3.2 values)."""

    Abs = 0
    AbsBackward = 1
    Add = 2
    AvgPool = 3
    AvgPoolBackward = 4
    BatchNormBackward = 5
    BatchNormForwardTraining = 6
    BatchNormInference = 7
    BiasAdd = 8
    BiasAddBackward = 9
    Clamp = 10
    ClampBackward = 11
    Concat = 12
    Convolution = 13
    ConvolutionBackwardData = 14
    ConvolutionBackwardWeights = 15
    ConvTranspose = 16
    ConvTransposeBackwardData = 17
    ConvTransposeBackwardWeights = 18
    Dequantize = 19
    Divide = 20
    DynamicDequantize = 21
    DynamicQuantize = 22
    Elu = 23
    EluBackward = 24
    End = 25
    Exp = 26
    GELU = 27
    GELUBackward = 28
    HardSwish = 29
    HardSwishBackward = 30
    Interpolate = 31
    InterpolateBackward = 32
    LayerNorm = 33
    LayerNormBackward = 34
    LeakyReLU = 35
    Log = 36
    LogSoftmax = 37
    LogSoftmaxBackward = 38
    MatMul = 39
    Maximum = 40
    MaxPool = 41
    MaxPoolBackward = 42
    Minimum = 43
    Mish = 44
    MishBackward = 45
    Multiply = 46
    PReLU = 47
    PReLUBackward = 48
    Quantize = 49
    Reciprocal = 50
    ReduceL1 = 51
    ReduceL2 = 52
    ReduceMax = 53
    ReduceMean = 54
    ReduceMin = 55
    ReduceProd = 56
    ReduceSum = 57
    ReLU = 58
    ReLUBackward = 59
    Reorder = 60
    Round = 61
    Sigmoid = 62
    SigmoidBackward = 63
    SoftMax = 64
    SoftMaxBackward = 65
    SoftPlus = 66
    SoftPlusBackward = 67
    Sqrt = 68
    SqrtBackward = 69
    Square = 70
    SquaredDifference = 71
    StaticReshape = 72
    StaticTranspose = 73
    Subtract = 74
    Tanh = 75
    TanhBackward = 76
    TypeCast = 77
    Wildcard = 78
    HardSigmoid = 79
    HardSigmoidBackward = 80
    Select = 81
    Pow = 82


class OpAttr(enum.IntEnum):
    """``dnnl_graph_op_attr_t`` / ``dnnl::graph::op::attr`` (the values of oneDNN 3.2)."""

    undef = 0
    alpha = 0x1
    beta = 0x2
    epsilon = 0x3
    max = 0x4
    min = 0x5
    momentum = 0x6
    scales = 0x20
    axis = 0x30
    begin_norm_axis = 0x31
    groups = 0x32
    axes = 0x40
    dilations = 0x41
    dst_shape = 0x42
    kernel = 0x43
    order = 0x44
    output_padding = 0x45
    pads_begin = 0x46
    pads_end = 0x47
    shape = 0x48
    sizes = 0x49
    src_shape = 0x4A
    strides = 0x4B
    weights_shape = 0x4C
    zps = 0x4D
    exclude_pad = 0x60
    keep_dims = 0x61
    keep_stats = 0x62
    per_channel_broadcast = 0x63
    special_zero = 0x64
    transpose_a = 0x65
    transpose_b = 0x66
    use_affine = 0x67
    use_dst = 0x68
    auto_broadcast = 0x80
    auto_pad = 0x81
    coordinate_transformation_mode = 0x82
    data_format = 0x83
    mode = 0x84
    qtype = 0x85
    rounding_type = 0x86
    weights_format = 0x87


# name -> (kind, required, default, allowed values) per supported op; the schemas
# of ``src/graph/interface/op_def.hpp`` (oneDNN 3.2).
_F32, _BOOL, _STR = "f32", "bool", "str"
SCHEMAS = {
    OpKind.LeakyReLU: {
        "inputs": ("src",),
        "outputs": ("dst",),
        "attrs": {OpAttr.alpha: (_F32, True, None, None)},
    },
    OpKind.PReLU: {
        "inputs": ("src", "slope"),
        "outputs": ("dst",),
        "attrs": {
            OpAttr.data_format: (_STR, False, "NXC", ("NCX", "NXC")),
            OpAttr.per_channel_broadcast: (_BOOL, False, True, None),
        },
    },
    OpKind.PReLUBackward: {
        "inputs": ("src", "slope", "diff_dst"),
        "outputs": ("diff_src", "diff_slope"),
        "attrs": {OpAttr.data_format: (_STR, False, "NXC", ("NCX", "NXC"))},
    },
}


def attr_key(name) -> OpAttr:
    if isinstance(name, OpAttr):
        return name
    if isinstance(name, str):
        try:
            return OpAttr[name]
        except KeyError:
            pass
    fail(Status.invalid_arguments, f"unknown op attribute {name!r}")


def convert_attr(op_name: str, key: OpAttr, kind: str, value):
    """An attribute value as oneDNN stores it (``alpha`` rounded to f32)."""
    if kind == _F32:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            fail(Status.invalid_graph_op,
                 f"{op_name}: attribute {key.name!r} must be an f32 number, got {value!r}")
        # through the core's slope rule: ints beyond float range round to ±inf, and values
        # beyond f32's range round to ±inf without a warning; what it refuses (a timedelta64,
        # which NumPy registers as an Integral) is an attribute of the wrong type, so
        # invalid_graph_op as above: the status of add_op's schema check, where oneDNN
        # checks attribute types (its typed set_attr takes no such value)
        try:
            return np.float32(_core.slope_value(value, op_name, key.name, dtype=np.float32))
        except (TypeError, ValueError) as exc:
            fail(Status.invalid_graph_op, str(exc))
    if kind == _BOOL:
        if not isinstance(value, (bool, np.bool_)):
            fail(Status.invalid_graph_op,
                 f"{op_name}: attribute {key.name!r} must be a bool, got {value!r}")
        return bool(value)
    if not isinstance(value, str):
        fail(Status.invalid_graph_op,
             f"{op_name}: attribute {key.name!r} must be a string, got {value!r}")
    return value


# ---------------------------------------------------------------------------------------------
# shapes (checked at compile time, with oneDNN's statuses)


def _prelu_doable(src, wei, data_format, per_channel_broadcast) -> bool:
    """oneDNN's rule (``prelu_doable``, dnnl backend ``passes/utils.cpp``) for slope vs src."""
    rs, rw = len(src), len(wei)
    if rs < rw or rw == 0:
        return False
    if rw == 1:
        if not per_channel_broadcast or rs == rw:
            return wei[0] in (src[-1], 1)
        channel = 1 if data_format == "NCX" else rs - 1
        return src[channel] == wei[0]
    return all(w in (1, s) for w, s in zip(wei[::-1], src[::-1]))


def unsqueezed_slope(src_ndim: int, wei: Sequence[int], data_format: str,
                     per_channel_broadcast: bool) -> tuple[int, ...]:
    """The slope's shape at src's rank, as the backend reshapes it (``insert_unsqueeze_for_prelu``):
    dims of 1 inserted in front, except that with NCX and per-channel broadcast the slope
    moves to dim 1 (``(C,)`` -> ``(1, C, 1, 1)``, ``(3, 3)`` -> ``(1, 3, 3, 1)`` for a 4-D src)."""
    k = src_ndim - len(wei)
    if k <= 0:
        return tuple(wei)
    axes = list(range(k))
    if data_format == "NCX" and per_channel_broadcast and k >= 2:
        axes.pop(1)
        axes.append(-1)
    ones = {a % src_ndim for a in axes}
    it = iter(wei)
    return tuple(1 if i in ones else next(it) for i in range(src_ndim))


def _bwd_per_channel(wei: Sequence[int]) -> bool:
    """PReLUBackward broadcasts per channel exactly when the slope is 1-D with length != 1."""
    return len(wei) == 1 and wei[0] != 1


def infer_shapes(kind, attrs, in_shapes) -> list[tuple[int, ...]]:
    """Output shapes from input shapes; ``invalid_shape`` as oneDNN returns it."""
    for shape in in_shapes:
        if any(d < 0 for d in shape):
            fail(Status.invalid_shape, f"{kind.name}: an input has the negative dim(s) {shape}")
    if kind == OpKind.LeakyReLU:
        return [tuple(in_shapes[0])]
    src, wei = tuple(in_shapes[0]), tuple(in_shapes[1])
    fmt = attrs[OpAttr.data_format]
    if kind == OpKind.PReLU:
        pcb = attrs[OpAttr.per_channel_broadcast]
        if not _prelu_doable(src, wei, fmt, pcb):
            fail(Status.invalid_shape,
                 f"PReLU: slope of shape {wei} does not broadcast to src of shape {src} "
                 f"(data_format={fmt}, per_channel_broadcast={pcb})")
        return [src]
    if not _prelu_doable(src, wei, fmt, _bwd_per_channel(wei)):
        fail(Status.invalid_shape,
             f"PReLUBackward: slope of shape {wei} does not broadcast to src of shape {src} "
             f"(data_format={fmt})")
    return [src, wei]


class Plan(NamedTuple):
    """What a compiled op runs: the core's ``compare=`` value, the slope's shape at src's rank
    (PReLU ops) and whether bf16 results are flushed as on AVX512-BF16 CPUs."""

    compare: str
    slope_shape: tuple[int, ...] | None
    flush_bf16: bool


_ISAS = ("sse41", "avx", "avx2", "avx2_vnni", "avx2_vnni_2", "avx512_core", "avx512_core_vnni",
         "avx512_core_bf16", "avx512_core_fp16", "avx512_core_amx", "avx512_core_amx_fp16")
#: The jit PReLU variant per instruction set (``jit_uni_prelu_*_kernel``: Zmm from
#: avx512_core, Ymm on AVX2 and AVX, Xmm on SSE4.1; FMA from AVX2).
_JIT_OF = {"sse41": "dnnl-jit-sse41", "avx": "dnnl-jit-avx", "avx2": "dnnl-jit-avx2",
           "avx2_vnni": "dnnl-jit-avx2", "avx2_vnni_2": "dnnl-jit-avx2"}
#: Instruction sets whose bf16 stores use vcvtneps2bf16 (results below 2**-126 flush to ±0).
_FLUSHING = {"avx2_vnni_2", "avx512_core_bf16", "avx512_core_fp16", "avx512_core_amx",
             "avx512_core_amx_fp16"}
#: Data types without kernels below an instruction set (oneDNN 3.2 aborts there).
_NEEDS = {"bf16": ("avx2_vnni_2", "avx512_core"), "f16": ("avx2_vnni_2", "avx512_core_fp16")}


#: oneDNN 3.2's instruction sets as sets of its feature bits (``cpu_isa_t`` in
#: ``cpu_isa_traits.hpp``): ``ONEDNN_MAX_CPU_ISA`` allows an instruction set when its bits are a
#: subset of the cap's, so AVX2_VNNI is not below AVX512_CORE.
_ISA_BITS: dict[str, frozenset[str]] = {}
for _name, _base, _bits in (
        ("sse41", None, {"sse41"}), ("avx", "sse41", {"avx"}), ("avx2", "avx", {"avx2"}),
        ("avx2_vnni", "avx2", {"vex_vnni"}), ("avx2_vnni_2", "avx2_vnni", {"vex_vnni_2"}),
        ("avx512_core", "avx2", {"evex_core"}), ("avx512_core_vnni", "avx512_core", {"evex_vnni"}),
        ("avx512_core_bf16", "avx512_core_vnni", {"evex_bf16"}),
        ("avx512_core_fp16", "avx512_core_bf16", {"evex_fp16", "vex_vnni"}),
        ("avx512_core_amx", "avx512_core_fp16", {"amx_tile", "amx_int8", "amx_bf16"}),
        ("avx512_core_amx_fp16", "avx512_core_amx", {"amx_fp16"})):
    _ISA_BITS[_name] = frozenset(_bits) | (_ISA_BITS[_base] if _base else frozenset())

#: The CPU features (LLVM's names) oneDNN 3.2 asks for each instruction set (``mayiuse``).
_ISA_NEEDS: dict[str, frozenset[str]] = {}
for _name, _base, _needs in (
        ("sse41", None, {"sse4.1"}), ("avx", None, {"avx"}), ("avx2", None, {"avx2"}),
        ("avx2_vnni", "avx2", {"avxvnni"}),
        ("avx2_vnni_2", "avx2_vnni", {"avxvnniint8", "avxneconvert"}),
        ("avx512_core", None, {"avx512f", "avx512bw", "avx512vl", "avx512dq"}),
        ("avx512_core_vnni", "avx512_core", {"avx512vnni"}),
        ("avx512_core_bf16", "avx512_core_vnni", {"avx512bf16"}),
        ("avx512_core_fp16", "avx512_core_bf16", {"avx512fp16", "avxvnni"}),
        ("avx512_core_amx", "avx512_core_fp16", {"amx-tile", "amx-int8", "amx-bf16"}),
        ("avx512_core_amx_fp16", "avx512_core_amx", {"amx-fp16"})):
    _ISA_NEEDS[_name] = frozenset(_needs) | (_ISA_NEEDS[_base] if _base else frozenset())
del _name, _base, _bits, _needs

#: The environment variable that sets the instruction set of an ``Engine()`` made without one.
ISA_ENV = "LEAKYOPS_ONEDNN_ISA"


def _library_cap() -> str | None:
    """oneDNN's ``ONEDNN_MAX_CPU_ISA`` (or ``DNNL_MAX_CPU_ISA``), as the library reads it: any
    case; ``default`` and names it does not know mean no cap."""
    raw = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or ""
    name = raw.strip().lower()
    return name if name in _ISA_BITS else None


def host_isa(features: frozenset[str] | None = None) -> str:
    """The instruction set oneDNN 3.2 dispatches for on this CPU (``dnnl_get_effective_cpu_isa``):
    the best one whose features the CPU has (``features``: LLVM's names, default the host's,
    :func:`leakyops._cpu.host_features`) and, under ``ONEDNN_MAX_CPU_ISA``, that the cap
    allows. ``unimplemented`` on a CPU without SSE4.1, where oneDNN has no kernels at all."""
    have = _cpu.host_features() if features is None else features
    cap = _library_cap()
    for name in reversed(_ISAS):
        if _ISA_NEEDS[name] <= have and (cap is None or _ISA_BITS[name] <= _ISA_BITS[cap]):
            return name
    fail(Status.unimplemented,
         "isa='host': this CPU has no SSE4.1, and oneDNN 3.2 has no kernels without it "
         f"(CPU features found: {', '.join(sorted(have)) or 'none'})")


#: The name of the model's fixed default CPU (an AVX-512 one that rounds bf16 exactly and has
#: kernels for every data type): ``isa="model"``, the same on every machine.
MODEL_ISA = "model"


def isa_name(isa: str | None, *, source: str = "isa") -> str | None:
    """A checked instruction-set name (``ONEDNN_MAX_CPU_ISA`` spelling, any case), ``"host"``
    (this CPU's, :func:`host_isa`), or None for ``None`` and ``"model"`` (the model's fixed
    default). ``source`` names where the value came from."""
    if isa is None:
        return None
    if not isinstance(isa, str):
        fail(Status.invalid_arguments, f"{source} must be a string, got {isa!r}")
    name = isa.strip().lower()
    if name == MODEL_ISA:
        return None
    if name == "host":
        return host_isa()
    if name not in _ISAS:
        fail(Status.invalid_arguments,
             f"{source}: unknown instruction set {isa!r}; one of MODEL, HOST, "
             f"{', '.join(i.upper() for i in _ISAS)}")
    return name


def isa_names() -> tuple[str, ...]:
    """Every name ``isa=`` takes: ``model``, ``host`` and oneDNN 3.2's instruction sets."""
    return (MODEL_ISA, "host", *_ISAS)


def default_isa() -> str | None:
    """The instruction set of an ``Engine()`` made without one: ``$LEAKYOPS_ONEDNN_ISA`` if set
    (a name, ``host`` or ``model``), else None (the model's fixed default)."""
    raw = os.environ.get(ISA_ENV, "")
    return isa_name(raw, source=f"${ISA_ENV}") if raw.strip() else None


def flushes_bf16(isa: str | None) -> bool:
    """Whether oneDNN's bf16 stores flush on ``isa`` (vcvtneps2bf16: AVX512-BF16, AVX2-VNNI-2)."""
    return isa in _FLUSHING


def isa_lacks(isa: str | None, dtype_name: str) -> str | None:
    """Why oneDNN has no kernel for ``dtype_name`` on ``isa`` (None: it has, or no isa)."""
    if isa is None or dtype_name not in _NEEDS:
        return None
    alt, base = _NEEDS[dtype_name]
    if isa == alt or _ISAS.index(isa) >= _ISAS.index(base):
        return None
    return f"oneDNN 3.2 has no {dtype_name} kernels below {base.upper()} (or {alt.upper()})"


def _nxc_to_ncx(seq: Sequence[int]) -> tuple[int, ...]:
    """N, X..., C -> N, C, X... (the permute the backend inserts for NXC; rank >= 3)."""
    seq = tuple(seq)
    return (seq[0], seq[-1], *seq[1:-1]) if len(seq) >= 3 else seq


def _contiguous_strides(dims: Sequence[int]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


def prelu_kernel(src_dims, src_strides, slope_shape, fmt, isa) -> str:
    """The ``compare=`` value of the PReLU kernel oneDNN 3.2 dispatches (forward and backward):
    its jit kernels (``jit_prelu_fwd_t``/``jit_prelu_bwd_t``, ``prelu::get_bcast_type``) take a
    dense src with a slope of src's shape and strides ("full") or a per-channel slope
    ``(1, C, 1, …)`` over a plain layout with C innermost or outermost after N; every other
    layout runs the reference kernel (``ref_prelu.cpp``)."""
    jit = _JIT_OF.get(isa, "dnnl-jit") if isa is not None else "dnnl-jit"
    if math.prod(src_dims) == 0 or not _core.dense_layout(src_dims, src_strides):
        return "dnnl-ref"
    s_dims, s_st = (_nxc_to_ncx(src_dims), _nxc_to_ncx(src_strides)) if fmt == "NXC" \
        else (tuple(src_dims), tuple(src_strides))
    w_dims = _nxc_to_ncx(slope_shape) if fmt == "NXC" else tuple(slope_shape)
    w_st = _nxc_to_ncx(_contiguous_strides(slope_shape)) if fmt == "NXC" \
        else _contiguous_strides(slope_shape)
    if w_dims == s_dims:  # "full": also the same strides
        return jit if tuple(w_st) == tuple(s_st) else "dnnl-ref"
    n = len(s_dims)
    if n < 2 or w_dims[0] != 1 or w_dims[1] != s_dims[1] or any(d != 1 for d in w_dims[2:]):
        return "dnnl-ref"
    nc_spatial = s_st[1] == 1 or (s_st[0] >= s_st[1] and (n < 3 or s_st[1] >= s_st[2]))
    supported = (s_st[0] >= s_st[1] and (s_st[1] <= 1 or n < 3 or s_st[1] >= s_st[2])
                 and w_st[0] >= w_st[1])
    return jit if nc_spatial and supported else "dnnl-ref"


def check_library_limits(kind, attrs, ins, outs) -> None:
    """The cases oneDNN 3.2 crashes or aborts on (an uncaught C++ exception), raised here as an
    :class:`Error` with the status the library's own checks intend.

    ``ins``/``outs`` are the compiled logical tensors (shapes known). The statuses are those
    oneDNN's primitive API returns for the same descriptors (``prelu_desc_init``, the eltwise
    and PReLU implementation lists); see ``docs/onednn.md``.
    """
    src = ins[0]
    dts = [lt.data_type.name for lt in ins + outs]
    if kind == OpKind.LeakyReLU:
        if dts[0] != dts[1]:
            fail(Status.unimplemented,
                 f"LeakyReLU: src is {dts[0]} and dst is {dts[1]}: oneDNN 3.2 has no eltwise "
                 "kernel converting between them (the library aborts here)")
        return
    fmt = attrs[OpAttr.data_format]
    if fmt == "NXC" and len(src.dims) == 1:
        fail(Status.invalid_shape,
             f"{kind.name}: a 1-D src has no channel axis for data_format NXC (oneDNN 3.2 "
             "crashes here: its NXC-to-NCX permutation needs rank >= 2)")
    if kind == OpKind.PReLUBackward:
        if not dts[0] == dts[2] == dts[3]:
            fail(Status.unimplemented,
                 f"PReLUBackward: src, diff_dst and diff_src must share a data type, got "
                 f"{dts[0]}, {dts[2]}, {dts[3]} (the library aborts here)")
        if tuple(ins[2].dims) != tuple(src.dims):
            fail(Status.invalid_arguments,
                 f"PReLUBackward: diff_dst has shape {ins[2].dims} but src has shape "
                 f"{src.dims} (the library aborts here)")
        if tuple(src.strides) != tuple(ins[2].strides):
            # (diff_src and diff_slope may have any layout: the backend writes them through a
            # reorder from the primitive's own)
            fail(Status.unimplemented,
                 f"PReLUBackward: src and diff_dst must have one layout, got strides "
                 f"{src.strides} and {ins[2].strides} (the library aborts here)")
    if len(src.dims) > 5:
        fail(Status.invalid_arguments,
             f"{kind.name}: src has {len(src.dims)} dims; oneDNN 3.2's PReLU takes at most 5 "
             "(the library aborts here)")
    wei = ins[1].dims
    pcb = attrs[OpAttr.per_channel_broadcast] if kind == OpKind.PReLU else _bwd_per_channel(wei)
    shape = unsqueezed_slope(len(src.dims), wei, fmt, pcb)
    if any(w not in (1, s) for w, s in zip(shape, src.dims)):
        fail(Status.invalid_arguments,
             f"{kind.name}: the backend reshapes the slope {tuple(wei)} to {shape}, which does "
             f"not broadcast to src {tuple(src.dims)} (the library aborts here)")


def plan(kind, attrs, ins, isa, flush_bf16) -> Plan:
    """The kernel a compiled op runs (see :func:`prelu_kernel`)."""
    if kind == OpKind.LeakyReLU:
        return Plan("dnnl-eltwise", None, flush_bf16)
    src, wei = ins[0], ins[1].dims
    fmt = attrs[OpAttr.data_format]
    pcb = attrs[OpAttr.per_channel_broadcast] if kind == OpKind.PReLU else _bwd_per_channel(wei)
    shape = unsqueezed_slope(len(src.dims), wei, fmt, pcb)
    return Plan(prelu_kernel(src.dims, src.strides, shape, fmt, isa), shape, flush_bf16)


# ---------------------------------------------------------------------------------------------
# compute: one core call per op


def _run_core_or_invalid_arguments(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (TypeError, ValueError) as exc:  # validated before; a core error is ours to map
        raise Error(Status.invalid_arguments, str(exc)) from exc


def _slope_arg(wei: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """The slope as the core takes it: ``(1-D weight, axis)`` when one axis carries it, else
    the slope viewed at src's rank (broadcast NumPy-style)."""
    axes = [i for i, d in enumerate(shape) if d != 1]
    if len(axes) == 1 and wei.size > 1:
        return wei.reshape(-1), axes[0]
    return wei.reshape(shape), 1


def compute(kind, attrs, the_plan: Plan, ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
    """Run one op: ``ins``/``outs`` are NumPy views over the tensors' buffers."""
    flush = the_plan.flush_bf16
    if kind == OpKind.LeakyReLU:
        _run_core_or_invalid_arguments(_core.leaky_relu_impl, ins[0], attrs[OpAttr.alpha],
                                       outs[0], compare=the_plan.compare, bf16_flush=flush,
                                       fname="LeakyReLU")
        return
    src = ins[0]
    assert the_plan.slope_shape is not None
    wei, axis = _slope_arg(ins[1], the_plan.slope_shape)
    if kind == OpKind.PReLU:
        _run_core_or_invalid_arguments(_core.prelu_impl, src, wei, axis, outs[0],
                                       compare=the_plan.compare, bf16_flush=flush,
                                       fname="PReLU")
        return
    diff_src, acc = _run_core_or_invalid_arguments(
        _core.prelu_backward_parts, ins[2], src, wei, axis, compare=the_plan.compare,
        bf16_flush=flush, fname="PReLUBackward")
    np.copyto(outs[0], diff_src)
    outs[1][...] = _core.round_grad_weight(acc, outs[1].dtype, bf16_flush=flush).reshape(
        outs[1].shape)
