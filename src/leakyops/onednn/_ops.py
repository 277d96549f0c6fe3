"""Op kinds, attributes, the schemas of the three supported ops, and their compute.

The compute functions translate one op into one call of :mod:`leakyops._core`;
all arithmetic happens there.  See the package docstring for the formulas.
"""

from __future__ import annotations

import enum
import numbers

import numpy as np

from .. import _core
from ._errors import Error, Status, fail

# oneDNN's CPU kernels select with ``src > 0`` although the Graph docs write
# ``src >= 0`` (checked against oneDNN 3.2: ``+0.0`` with a negative alpha gives
# ``-0.0``, and ``+0.0`` with an infinite alpha gives NaN).  SPEC §7: follow the
# library.
_COMPARE = ">"


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
        # beyond f32's range round to ±inf without a warning
        with np.errstate(over="ignore"):
            return np.float32(_core._slope_value(value, op_name, key.name))
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
# shapes (checked at compile time; ``invalid_shape`` as oneDNN returns it)


def _prelu_doable(src, wei, data_format, per_channel_broadcast) -> bool:
    """oneDNN's rule (``prelu_doable``, dnnl backend ``utils.cpp``) for slope vs src."""
    rs, rw = len(src), len(wei)
    if rs < rw or rw == 0:
        return False
    if rw == 1:
        if not per_channel_broadcast or rs == rw:
            return wei[0] in (src[-1], 1)
        channel = 1 if data_format == "NCX" else rs - 1
        return src[channel] == wei[0]
    return all(w in (1, s) for w, s in zip(wei[::-1], src[::-1]))


def _slope_axis(src_ndim, wei, data_format, per_channel_broadcast) -> int:
    """The axis of ``src`` a 1-D slope runs along (passed to the core)."""
    if len(wei) == 1 and per_channel_broadcast and src_ndim > 1 and data_format == "NCX":
        return 1
    return -1


def infer_shapes(kind, attrs, in_shapes):
    """Output shapes from input shapes; raises ``invalid_shape`` as oneDNN does."""
    if kind == OpKind.LeakyReLU:
        return [in_shapes[0]]
    src, wei = in_shapes[0], in_shapes[1]
    fmt = attrs[OpAttr.data_format]
    if kind == OpKind.PReLU:
        pcb = attrs[OpAttr.per_channel_broadcast]
        if not _prelu_doable(src, wei, fmt, pcb):
            fail(Status.invalid_shape,
                 f"PReLU: slope of shape {wei} does not broadcast to src of shape {src} "
                 f"(data_format={fmt}, per_channel_broadcast={pcb})")
        return [src]
    # PReLUBackward: per-channel when the slope is 1-D with more than one element
    pcb = len(wei) == 1 and wei[0] != 1
    if not _prelu_doable(src, wei, fmt, pcb):
        fail(Status.invalid_shape,
             f"PReLUBackward: slope of shape {wei} does not broadcast to src of shape {src} "
             f"(data_format={fmt})")
    if tuple(in_shapes[2]) != tuple(src):
        fail(Status.invalid_shape,
             f"PReLUBackward: diff_dst has shape {in_shapes[2]} but src has shape {src}")
    return [src, wei]


# ---------------------------------------------------------------------------------------------
# compute: one core call per op


def _core_call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (TypeError, ValueError) as exc:  # validated before; a core error is ours to map
        raise Error(Status.invalid_arguments, str(exc)) from exc


def _relu_alpha_zero(src, dst):
    # WORKAROUND (kernel option requested from the core): with alpha == 0 oneDNN's
    # eltwise kernel is ``max(src, +0)`` (x86 ``maxps``): negative, -0, -inf and NaN
    # all give +0, where ``src * 0`` would give -0 and NaN.  The core has no such
    # option, so this one case is a select (no arithmetic) here.
    with np.errstate(invalid="ignore"):
        np.copyto(dst, np.where(src > 0, src, np.zeros((), src.dtype)))


def compute(kind, attrs, ins, outs):
    """Run one op: ``ins``/``outs`` are NumPy views over the tensors' buffers."""
    if ins[0].size == 0:
        # nothing to compute (diff_slope of an empty src is zero).  Also works around
        # the core rejecting an empty ``out=`` as "internal overlap".
        for out in outs[1:]:
            out[...] = 0
        return
    if kind == OpKind.LeakyReLU:
        alpha = attrs[OpAttr.alpha]
        if alpha == 0:
            _relu_alpha_zero(ins[0], outs[0])
            return
        _core_call(_core.leaky_relu_impl, ins[0], alpha, outs[0], compare=_COMPARE,
                   fname="LeakyReLU")
        return
    fmt = attrs[OpAttr.data_format]
    src, wei = ins[0], ins[1]
    if kind == OpKind.PReLU:
        axis = _slope_axis(src.ndim, wei.shape, fmt, attrs[OpAttr.per_channel_broadcast])
        _core_call(_core.prelu_impl, src, wei, axis, outs[0], compare=_COMPARE, fname="PReLU")
        return
    pcb = wei.ndim == 1 and wei.shape[0] != 1
    axis = _slope_axis(src.ndim, wei.shape, fmt, pcb)
    diff_src, diff_slope = _core_call(_core.prelu_backward_impl, ins[2], src, wei, axis,
                                      compare=_COMPARE, fname="PReLUBackward")
    np.copyto(outs[0], diff_src)
    np.copyto(outs[1], diff_slope)
