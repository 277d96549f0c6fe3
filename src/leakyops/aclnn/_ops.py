"""The aclnn operators: two-phase ``...GetWorkspaceSize`` / launch, checks in CANN's order.

The checks follow ops-nn's L2 sources (``aclnn_leaky_relu.cpp``,
``aclnn_leaky_relu_backward.cpp``, ``aclnn_prelu.cpp``, ``aclnn_prelu_backward.cpp``); see
``docs/aclnn.md`` for the list. Computation is delegated to ``leakyops._core`` with
``compare=">"``; this module only checks, builds views and copies/casts memory. With the
``Ascend950`` profile, PreluBackward's ``gradWeight`` is the 950 pipeline's (``_ascend950``).
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _core
from . import _ascend950
from ._objects import aclScalar, aclTensor
from ._runtime import (DevicePtr, _TaskFailed, aclrtStream, get_prelu_backward_rule,
                       get_soc_version, resolve_stream)
from ._status import (
    ACLNN_ERR_INNER,
    ACLNN_ERR_INNER_CREATE_EXECUTOR,
    ACLNN_ERR_INNER_NULLPTR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_ERR_RUNTIME_ERROR,
    ACLNN_SUCCESS,
    NP_DTYPES,
    aclDataType,
    can_cast,
    dtype_name,
    promote_type,
    record_error,
)

MAX_DIMS = 8  # MAX_SUPPORT_DIMS_NUMS in ops-nn's op_api_def_nn.h
_WS_ALIGN = 32

F32, F16, BF16, F64 = (aclDataType.ACL_FLOAT, aclDataType.ACL_FLOAT16, aclDataType.ACL_BF16,
                       aclDataType.ACL_DOUBLE)
I8, I16, I32, I64, U8, BOOL = (aclDataType.ACL_INT8, aclDataType.ACL_INT16, aclDataType.ACL_INT32,
                               aclDataType.ACL_INT64, aclDataType.ACL_UINT8, aclDataType.ACL_BOOL)

# Support lists per SoC profile, as in the L2 sources. LeakyRelu, LeakyReluBackward and Prelu
# take the "910B" list when the NPU arch is DAV_2201 (A2 and A3) or a regbase arch (950:
# DAV_3510); PreluBackward when the SocVersion lies in [ASCEND910B, ASCEND910E], which in
# ops-nn's enum order (910, 910B, 910_93, 950, 350, 910E) holds A2, A3 and 950.
_A2_LIKE = ("Ascend910B", "Ascend910_93", "Ascend950")


def _per_soc(training, a2):
    return {"Ascend910": training, **{name: a2 for name in _A2_LIKE}}


_LEAKY_TENSOR = _per_soc((F32, F16, F64), (F32, F16, F64, BF16))
_LEAKY_BWD_SCALAR = _per_soc((F32, F16, F64, I32, I64, I8, U8, BOOL, I16),
                             (F32, F16, F64, I32, I64, I8, U8, BOOL, I16, BF16))
_PRELU_TENSOR = _per_soc((F32, F16), (F32, F16, BF16))


class _Fail(Exception):
    """A failed check: carries the status code; the message goes to aclGetRecentErrMsg."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _names(types) -> str:
    return "[" + ", ".join(dtype_name(t) for t in types) + "]"


def _shape(dims) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


# --- the executor ---------------------------------------------------------------------------
class aclOpExecutor:
    """The plan made by ``...GetWorkspaceSize``. It runs once (CANN frees it after the
    launch); a second launch returns ``ACLNN_ERR_PARAM_INVALID``."""

    __slots__ = ("op", "workspace_size", "_run", "_tensors", "_spent", "_lock")

    def __init__(self, op: str):
        self.op = op
        self.workspace_size = 0
        # callable(workspace_bytes_or_None), or None for "nothing to do"
        self._run: Callable[[np.ndarray[Any, Any] | None], None] | None = None
        self._tensors: tuple[aclTensor, ...] = ()
        self._spent = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<aclOpExecutor {self.op}{' spent' if self._spent else ''}>"


def _create_executor(op: str) -> aclOpExecutor:
    """CREATE_EXECUTOR(). A failure here maps to ACLNN_ERR_INNER_CREATE_EXECUTOR."""
    return aclOpExecutor(op)


def _phase1(op: str, build: Callable[[aclOpExecutor, str], None],
            executor_first: bool = True) -> tuple[int, aclOpExecutor | None, int]:
    """Run a first-phase body; never raise. Returns ``(workspace_size, executor, status)``.

    ``build(executor, fname)`` checks the arguments (raising ``_Fail``) and fills in the
    executor's plan. ``executor_first`` follows the vendor's order: most L2 APIs create the
    executor before checking, ``aclnnPrelu`` checks first.
    """
    fname = f"{op}GetWorkspaceSize"
    try:
        executor = None
        if executor_first:
            executor = _new_executor(op, fname)
        plan = aclOpExecutor(op)
        build(plan, fname)
        if executor is None:
            executor = _new_executor(op, fname)
        executor.workspace_size, executor._run, executor._tensors = plan.workspace_size, plan._run, plan._tensors
        return executor.workspace_size, executor, ACLNN_SUCCESS
    except _Fail as fail:
        return 0, None, record_error(fail.code, f"{fname}: {fail}")
    except Exception as exc:  # noqa: BLE001 -- the C API returns codes, never raises
        return 0, None, record_error(ACLNN_ERR_INNER, f"{fname}: internal error {type(exc).__name__}: {exc}")


def _new_executor(op: str, fname: str) -> aclOpExecutor:
    try:
        return _create_executor(op)
    except Exception as exc:  # noqa: BLE001
        raise _Fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, f"could not create the aclOpExecutor: {exc}") from None


# --- checks, in the vendor's macro vocabulary ---------------------------------------------------
def _check_not_null(**args):
    """OP_CHECK_NULL, in argument order."""
    for name, value in args.items():
        if value is None:
            raise _Fail(ACLNN_ERR_PARAM_NULLPTR, f"Expected a proper Tensor or Scalar but got null for argument {name}.")


def _check_handles(**args):
    """Not in the C sources (a bad pointer there is undefined behaviour): foreign objects,
    destroyed tensors/scalars and freed memory are refused with ACLNN_ERR_PARAM_INVALID."""
    for name, value in args.items():
        want = aclScalar if name == "negativeSlope" else aclTensor
        if not isinstance(value, want):
            raise _Fail(ACLNN_ERR_PARAM_INVALID,
                        f"{name} must be an {want.__name__}, got {type(value).__name__}.")
        if value.destroyed:
            raise _Fail(ACLNN_ERR_PARAM_INVALID, f"{name} was destroyed.")
        if isinstance(value, aclTensor) and value.memory_freed:
            raise _Fail(ACLNN_ERR_PARAM_INVALID, f"the device memory of {name} was freed.")


def _check_dtype_supported(name, dt, support):
    """OP_CHECK_DTYPE_NOT_SUPPORT."""
    if dt not in support:
        raise _Fail(ACLNN_ERR_PARAM_INVALID,
                    f"{name} dtype {dtype_name(dt)} should be in dtype support list {_names(support)}.")


def _check_dtype_same(name, t, ref_name, ref):
    """OP_CHECK_DTYPE_NOT_SAME."""
    if t.data_type != ref.data_type:
        raise _Fail(ACLNN_ERR_PARAM_INVALID,
                    f"{name} dtype {dtype_name(t.data_type)} should be the same as {ref_name} dtype "
                    f"{dtype_name(ref.data_type)}.")


def _check_cast(src, dst):
    """OP_CHECK_RESULT_DTYPE_CAST_FAILED."""
    if not can_cast(src, dst):
        raise _Fail(ACLNN_ERR_PARAM_INVALID, f"Cast dtype {dtype_name(src)} to {dtype_name(dst)} failed.")


def _check_max_dim(name, t):
    """OP_CHECK_MAX_DIM."""
    if t.ndim > MAX_DIMS:
        raise _Fail(ACLNN_ERR_PARAM_INVALID, f"{name} dim num {t.ndim} should be <= {MAX_DIMS}.")


def _check_shape_equal(name, t, ref_name, ref):
    """OP_CHECK_SHAPE_NOT_EQUAL."""
    if tuple(t.view_dims) != tuple(ref.view_dims):
        raise _Fail(ACLNN_ERR_PARAM_INVALID,
                    f"{name} shape {_shape(t.view_dims)} should be the same as {ref_name} shape {_shape(ref.view_dims)}.")


def _broadcast(a_name, a, b_name, b):
    """OP_CHECK_BROADCAST_AND_INFER_SHAPE."""
    try:
        return tuple(np.broadcast_shapes(tuple(a.view_dims), tuple(b.view_dims)))
    except ValueError:
        raise _Fail(ACLNN_ERR_PARAM_INVALID,
                    f"{a_name} shape {_shape(a.view_dims)} and {b_name} shape {_shape(b.view_dims)} "
                    "can not broadcast.") from None


def _check_writable(**outs):
    """Not in the C sources (device memory is always writable): a read-only wrapped array
    cannot be an output."""
    for name, t in outs.items():
        if t.readonly:
            raise _Fail(ACLNN_ERR_PARAM_INVALID, f"{name} wraps read-only memory and cannot be written.")


def _views(fname, **tensors):
    """``Contiguous``' analogue: NumPy views of the tensors (a failure is ACLNN_ERR_INNER_NULLPTR)."""
    try:
        return {name: t.view() for name, t in tensors.items()}
    except Exception as exc:  # noqa: BLE001
        raise _TaskFailed(f"{fname}: could not view tensor memory ({ACLNN_ERR_INNER_NULLPTR}): {exc}") from None


def _ws_bytes(*parts) -> int:
    total = 0
    for numel, dt in parts:
        nbytes = numel * NP_DTYPES[dt].itemsize
        total += -(-nbytes // _WS_ALIGN) * _WS_ALIGN
    return total


def _cast_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``Cast`` + ``ViewCopy``: write ``src`` into the (possibly strided) ``dst``, converting
    with round-to-nearest-even."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            np.copyto(dst, src, casting="unsafe")
        except TypeError:  # a cast ml_dtypes lacks (e.g. bfloat16 <-> complex): go via float32
            np.copyto(dst, src.astype(np.float32), casting="unsafe")


def _scratch(workspace: np.ndarray | None, shape, dt: aclDataType, byte_offset: int = 0) -> np.ndarray:
    """An array of ``shape`` over the workspace bytes (the intermediate results' home)."""
    npdt = NP_DTYPES[dt]
    n = math.prod(shape) * npdt.itemsize
    return workspace[byte_offset:byte_offset + n].view(npdt).reshape(shape)


def _run_core_as_task(label, fn, /, *args, **kwargs):
    """Call the core; map anything it raises (the l0op "returned nullptr" case)."""
    try:
        return fn(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        raise _TaskFailed(f"kernel failed, status {ACLNN_ERR_INNER_NULLPTR} (ACLNN_ERR_INNER_NULLPTR): {exc}") from None
    except Exception as exc:  # noqa: BLE001
        raise _TaskFailed(f"kernel failed, status {ACLNN_ERR_INNER} (ACLNN_ERR_INNER): "
                          f"{type(exc).__name__}: {exc}") from None


# --- LeakyRelu / InplaceLeakyRelu -----------------------------------------------------------
def _leaky_relu_build(op, self, negativeSlope, out):
    def build(ex: aclOpExecutor, fname: str):
        soc = get_soc_version()
        # 1. CheckNotNull
        _check_not_null(self=self, negativeSlope=negativeSlope, out=out)
        _check_handles(self=self, negativeSlope=negativeSlope, out=out)
        # 2. CheckDtypeValid: self in the support list; self castable to out
        _check_dtype_supported("self", self.data_type, _LEAKY_TENSOR[soc])
        _check_cast(self.data_type, out.data_type)
        # 3. CheckShape: self <= 8 dims; out shape == self shape
        _check_max_dim("self", self)
        _check_shape_equal("out", out, "self", self)
        _check_writable(out=out)
        ex._tensors = (self, out)
        if self.is_empty():
            return
        slope = negativeSlope.to_float()  # ToFloat(): float32 for every dtype, DOUBLE included
        dt, shape = self.data_type, tuple(self.view_dims)
        ex.workspace_size = _ws_bytes((self.numel(), dt))

        def run(workspace):
            v = _views(fname, self=self, out=out)
            tmp = _scratch(workspace, shape, dt)
            _run_core_as_task(fname, _core.leaky_relu_impl, v["self"], slope, out=tmp,
                              compare=">", slope_dtype=np.float32, fname=op)
            _cast_copy(v["out"], tmp)
        ex._run = run
    return build


def aclnnLeakyReluGetWorkspaceSize(self: aclTensor | None, negativeSlope: aclScalar | None,
                                   out: aclTensor | None) -> tuple[int, aclOpExecutor | None, int]:
    """First phase of ``aclnnLeakyRelu``: ``out = self if self > 0 else self * negativeSlope``.

    Returns ``(workspace_size, executor, status)``.
    """
    return _phase1("aclnnLeakyRelu", _leaky_relu_build("aclnnLeakyRelu", self, negativeSlope, out))


def aclnnInplaceLeakyReluGetWorkspaceSize(selfRef: aclTensor | None, negativeSlope: aclScalar | None
                                          ) -> tuple[int, aclOpExecutor | None, int]:
    """First phase of ``aclnnInplaceLeakyRelu`` (LeakyRelu with ``out = selfRef``)."""
    return _phase1("aclnnInplaceLeakyRelu",
                   _leaky_relu_build("aclnnInplaceLeakyRelu", selfRef, negativeSlope, selfRef))


# --- LeakyReluBackward ------------------------------------------------------------------------
def aclnnLeakyReluBackwardGetWorkspaceSize(gradOutput: aclTensor | None, self: aclTensor | None,
                                           negativeSlope: aclScalar | None, selfIsResult: bool,
                                           out: aclTensor | None
                                           ) -> tuple[int, aclOpExecutor | None, int]:
    """First phase of ``aclnnLeakyReluBackward``:
    ``out = gradOutput if self > 0 else gradOutput * negativeSlope``, broadcast."""
    op = "aclnnLeakyReluBackward"

    def build(ex: aclOpExecutor, fname: str):
        soc = get_soc_version()
        # 1. CheckNotNull
        _check_not_null(gradOutput=gradOutput, self=self, negativeSlope=negativeSlope, out=out)
        _check_handles(gradOutput=gradOutput, self=self, negativeSlope=negativeSlope, out=out)
        if not isinstance(selfIsResult, (bool, np.bool_)):
            raise _Fail(ACLNN_ERR_PARAM_INVALID, f"selfIsResult must be a bool, got {type(selfIsResult).__name__}.")
        # 2. CheckDtypeValid: gradOutput, self, negativeSlope
        _check_dtype_supported("gradOutput", gradOutput.data_type, _LEAKY_TENSOR[soc])
        _check_dtype_supported("self", self.data_type, _LEAKY_TENSOR[soc])
        _check_dtype_supported("negativeSlope", negativeSlope.data_type, _LEAKY_BWD_SCALAR[soc])
        # 3. CheckShape: gradOutput, self <= 8 dims; broadcast; out == broadcast shape
        _check_max_dim("gradOutput", gradOutput)
        _check_max_dim("self", self)
        bshape = _broadcast("gradOutput", gradOutput, "self", self)
        if bshape != tuple(out.view_dims):
            raise _Fail(ACLNN_ERR_PARAM_INVALID,
                        f"Shape of out should be {_shape(bshape)}, but current is {_shape(out.view_dims)}.")
        # 4. CheckIsResult (ToDouble() < 0)
        if selfIsResult and negativeSlope.to_double() < 0.0:
            raise _Fail(ACLNN_ERR_PARAM_INVALID,
                        "In-place leakyRelu backward calculation is triggered with a negativeSlope which is "
                        f"not supported, while negativeSlope: [{negativeSlope.to_double():e}], selfIsResult: "
                        "[1]. This is caused by calling in-place forward function with a negative slope, "
                        "please call out-of-place version instead.")
        # 5. CheckPromoteType: promote(gradOutput, self) castable to out
        promoted = promote_type(gradOutput.data_type, self.data_type)
        _check_cast(promoted, out.data_type)
        _check_writable(out=out)
        ex._tensors = (gradOutput, self, out)
        if self.is_empty():
            return
        slope = negativeSlope.to_float()
        # selfIsResult only gates the check above (vendor: ToDouble() < 0); the formula is the
        # same either way. The core's own check is stricter (it also refuses a NaN slope, which
        # the vendor accepts), so it is told False once the vendor's check has passed.
        ex.workspace_size = _ws_bytes((math.prod(bshape), promoted))

        def run(workspace):
            v = _views(fname, gradOutput=gradOutput, self=self, out=out)
            tmp = _scratch(workspace, bshape, promoted)
            _run_core_as_task(fname, _core.leaky_relu_backward_impl, v["gradOutput"], v["self"],
                              slope, False, out=tmp, compare=">", slope_dtype=np.float32,
                              fname=op)
            _cast_copy(v["out"], tmp)
        ex._run = run

    return _phase1(op, build)


# --- Prelu (forward) --------------------------------------------------------------------------
def aclnnPreluGetWorkspaceSize(self: aclTensor | None, weight: aclTensor | None,
                               out: aclTensor | None) -> tuple[int, aclOpExecutor | None, int]:
    """First phase of ``aclnnPrelu``: ``out = self if self > 0 else weight[c] * self`` with
    ``c`` the channel (dim 1); ``weight`` has 1 element or ``self.shape[1]`` elements."""
    op = "aclnnPrelu"

    def build(ex: aclOpExecutor, fname: str):
        soc = get_soc_version()
        support = _PRELU_TENSOR[soc]
        # 1. CheckNotNull
        _check_not_null(self=self, weight=weight, out=out)
        _check_handles(self=self, weight=weight, out=out)
        # 2. CheckDtypeValid: self, weight, out in the support list
        _check_dtype_supported("self", self.data_type, support)
        _check_dtype_supported("weight", weight.data_type, support)
        _check_dtype_supported("out", out.data_type, support)
        # 3. CheckPromoteType
        promoted = promote_type(self.data_type, weight.data_type)
        if promoted == aclDataType.ACL_DT_UNDEFINED:
            raise _Fail(ACLNN_ERR_PARAM_INVALID, f"Self dtype {dtype_name(self.data_type)} and weight dtype "
                                                 f"{dtype_name(weight.data_type)} can not promote dtype.")
        _check_cast(promoted, out.data_type)
        # 4. CheckShape: dims <= 8; self == out; weight size 1 or channels
        _check_max_dim("self", self)
        _check_max_dim("weight", weight)
        _check_max_dim("out", out)
        _check_shape_equal("self", self, "out", out)
        channels = 1 if self.ndim <= 1 else self.view_dims[1]
        wsize = weight.numel()
        if wsize != channels and wsize != 1:
            raise _Fail(ACLNN_ERR_PARAM_INVALID,
                        f"expected weight tensor size equal input channels, but found {wsize} does not equal {channels}")
        _check_writable(out=out)
        ex._tensors = (self, weight, out)
        if self.is_empty() or weight.is_empty():
            return
        shape = tuple(self.view_dims)
        ex.workspace_size = _ws_bytes((self.numel(), promoted))
        npdt = NP_DTYPES[promoted]

        def run(workspace):
            v = _views(fname, self=self, weight=weight, out=out)
            x = v["self"].astype(npdt, copy=False)
            w = v["weight"].astype(npdt, copy=False).reshape(-1 if wsize != 1 else ())
            tmp = _scratch(workspace, shape, promoted)
            _run_core_as_task(fname, _core.prelu_impl, x, w,
                              1 if (wsize != 1 and x.ndim > 1) else -1, out=tmp, compare=">",
                              fname=op)
            _cast_copy(v["out"], tmp)
        ex._run = run

    return _phase1(op, build, executor_first=False)


# --- PreluBackward ----------------------------------------------------------------------------
def _check_weight_layout(weight, self, channels: int) -> None:
    """The newest ops-nn rule for a weight of C > 1 elements: 1-D ``(C,)``, or ``self``'s rank
    with ``C`` in dim 1 and 1 everywhere else (ops-nn UT 025, 034-037; aclnnPreluBackward.md)."""
    dims = tuple(weight.view_dims)
    if len(dims) == 1:
        return
    wanted = tuple(channels if i == 1 else 1 for i in range(self.ndim))
    if dims != wanted:
        raise _Fail(ACLNN_ERR_PARAM_INVALID,
                    f"weight shape {_shape(dims)} is invalid: a weight of {channels} elements must be "
                    f"1-D [{channels}] or have self's dim num {self.ndim} with the channel in dim 1 "
                    f"and 1 elsewhere, i.e. {_shape(wanted)}.")


def aclnnPreluBackwardGetWorkspaceSize(gradOutput: aclTensor | None, self: aclTensor | None,
                                       weight: aclTensor | None, gradInput: aclTensor | None,
                                       gradWeight: aclTensor | None
                                       ) -> tuple[int, aclOpExecutor | None, int]:
    """First phase of ``aclnnPreluBackward``: ``gradInput = gradOutput if self > 0 else
    weight[c] * gradOutput``; ``gradWeight[c] = Σ (0 if self > 0 else self * gradOutput)``."""
    op = "aclnnPreluBackward"

    def build(ex: aclOpExecutor, fname: str):
        soc = get_soc_version()
        # 1. CheckNotNull
        _check_not_null(gradOutput=gradOutput, self=self, weight=weight, gradInput=gradInput, gradWeight=gradWeight)
        _check_handles(gradOutput=gradOutput, self=self, weight=weight, gradInput=gradInput, gradWeight=gradWeight)
        # 2. CheckDtypeValid: self supported; the others have self's dtype
        _check_dtype_supported("self", self.data_type, _PRELU_TENSOR[soc])
        _check_dtype_same("gradOutput", gradOutput, "self", self)
        _check_dtype_same("weight", weight, "self", self)
        _check_dtype_same("gradInput", gradInput, "self", self)
        _check_dtype_same("gradWeight", gradWeight, "self", self)
        # 3. CheckShape
        for name, t in (("gradOutput", gradOutput), ("self", self), ("weight", weight),
                        ("gradInput", gradInput), ("gradWeight", gradWeight)):
            _check_max_dim(name, t)
        _check_shape_equal("gradInput", gradInput, "self", self)
        wnum = weight.numel()
        if wnum != 1:
            if self.ndim < 1:  # OP_CHECK_MIN_DIM(self, 1)
                raise _Fail(ACLNN_ERR_PARAM_INVALID, "self dim num 0 should be >= 1.")
            channels = self.view_dims[1] if self.ndim > 1 else 1
            if wnum != channels:
                raise _Fail(ACLNN_ERR_PARAM_INVALID, "the number of weight elements must be 1 or self channel size")
            if get_prelu_backward_rule() == "legacy":
                if tuple(gradWeight.view_dims) != (channels,):
                    raise _Fail(ACLNN_ERR_PARAM_INVALID, f"gradWeight shape {_shape(gradWeight.view_dims)} should "
                                                         f"be the same as expected shape {_shape((channels,))}.")
            else:
                _check_weight_layout(weight, self, channels)
                _check_shape_equal("weight", weight, "gradWeight", gradWeight)
        else:
            _check_shape_equal("weight", weight, "gradWeight", gradWeight)
        bshape = _broadcast("self", self, "gradOutput", gradOutput)
        if bshape != tuple(self.view_dims):
            raise _Fail(ACLNN_ERR_PARAM_INVALID,
                        f"the broadcastShape[{_shape(bshape)}] of gradOutput and self must be equal with "
                        f"selfShape[{_shape(self.view_dims)}].")
        _check_writable(gradInput=gradInput, gradWeight=gradWeight)
        ex._tensors = (gradOutput, self, weight, gradInput, gradWeight)
        # empty input: nothing runs (gradWeight is not written, as in ops-nn)
        if gradOutput.is_empty() or self.is_empty() or weight.is_empty():
            return
        dt = self.data_type
        ex.workspace_size = _ws_bytes((self.numel(), dt), (wnum, dt))
        wshape = tuple(gradWeight.view_dims)

        def run(workspace):
            v = _views(fname, gradOutput=gradOutput, self=self, weight=weight,
                       gradInput=gradInput, gradWeight=gradWeight)
            w = v["weight"].reshape(-1 if wnum != 1 else ())
            axis = 1 if (wnum != 1 and v["self"].ndim > 1) else -1
            gi, gw = _run_core_as_task(fname, _core.prelu_backward_impl, v["gradOutput"],
                                       v["self"], w, axis, compare=">", fname=op)
            if soc == "Ascend950":  # PReluGradUpdate + PReluGradReduce: update rounded to T
                gw = _run_core_as_task(fname, _ascend950.prelu_grad_weight, v["gradOutput"],
                                       v["self"], wnum != 1)
            # stage through the workspace, then ViewCopy into the outputs
            tmp_gi = _scratch(workspace, gi.shape, dt)
            tmp_gw = _scratch(workspace, (wnum,), dt, _ws_bytes((self.numel(), dt)))
            tmp_gi[...] = gi
            tmp_gw[...] = np.reshape(gw, (wnum,))
            _cast_copy(v["gradInput"], tmp_gi)
            _cast_copy(v["gradWeight"], tmp_gw.reshape(wshape))
        ex._run = run

    return _phase1(op, build)


# --- the second phase, shared -----------------------------------------------------------------
def _launch(op: str, workspace, workspace_size, executor, stream) -> int:
    """CommonOpExecutorRun: check, then enqueue the executor's work on the stream."""
    try:
        if executor is None:
            return record_error(ACLNN_ERR_PARAM_NULLPTR, f"{op}: executor is nullptr.")
        if not isinstance(executor, aclOpExecutor):
            return record_error(ACLNN_ERR_PARAM_INVALID,
                                f"{op}: executor must be an aclOpExecutor from a GetWorkspaceSize call, "
                                f"got {type(executor).__name__}.")
        if isinstance(workspace_size, bool) or not isinstance(workspace_size, (int, np.integer)) \
                or workspace_size < 0:
            return record_error(ACLNN_ERR_PARAM_INVALID,
                                f"{op}: workspaceSize must be a non-negative integer, got {workspace_size!r}.")
        with executor._lock:
            if executor._spent:
                return record_error(ACLNN_ERR_PARAM_INVALID,
                                    f"{op}: the executor of {executor.op} has already been launched; "
                                    "an aclOpExecutor runs once (call GetWorkspaceSize again).")
            if workspace_size > 0 and workspace is None:
                executor._spent = True  # CANN deletes the executor on this error
                return record_error(ACLNN_ERR_PARAM_NULLPTR, f"{op}: workspace is nullptr.")
            need = executor.workspace_size
            ws_bytes = None
            if need > 0:
                if workspace_size < need:
                    return record_error(ACLNN_ERR_PARAM_INVALID,
                                        f"{op}: workspaceSize {workspace_size} is smaller than the {need} bytes "
                                        f"{executor.op}GetWorkspaceSize asked for.")
                if not isinstance(workspace, DevicePtr):
                    return record_error(ACLNN_ERR_PARAM_INVALID,
                                        f"{op}: workspace must be device memory from aclrtMalloc, "
                                        f"got {type(workspace).__name__}.")
                if workspace.freed:
                    return record_error(ACLNN_ERR_RUNTIME_ERROR, f"{op}: the workspace memory was freed.")
                if workspace.available < need:
                    return record_error(ACLNN_ERR_PARAM_INVALID,
                                        f"{op}: the workspace buffer holds {workspace.available} bytes, "
                                        f"fewer than the {need} required.")
                ws_bytes = workspace.bytes(need)
            st, err = resolve_stream(stream, op, ACLNN_ERR_RUNTIME_ERROR)
            if err is not None:
                return err
            for t in executor._tensors:
                if t.memory_freed:
                    return record_error(ACLNN_ERR_RUNTIME_ERROR,
                                        f"{op}: the device memory of a tensor of {executor.op} was freed "
                                        "before the launch.")
            executor._spent = True
        if executor._run is not None:
            st.submit(lambda run=executor._run: run(ws_bytes), op)
        return ACLNN_SUCCESS
    except Exception as exc:  # noqa: BLE001
        return record_error(ACLNN_ERR_INNER, f"{op}: internal error {type(exc).__name__}: {exc}")


def aclnnLeakyRelu(workspace: DevicePtr | None, workspaceSize: int, executor: aclOpExecutor | None,
                   stream: aclrtStream | None) -> int:
    """Second phase: launch the LeakyRelu executor on ``stream``; returns a status."""
    return _launch("aclnnLeakyRelu", workspace, workspaceSize, executor, stream)


def aclnnInplaceLeakyRelu(workspace: DevicePtr | None, workspaceSize: int, executor: aclOpExecutor | None,
                          stream: aclrtStream | None) -> int:
    return _launch("aclnnInplaceLeakyRelu", workspace, workspaceSize, executor, stream)


def aclnnLeakyReluBackward(workspace: DevicePtr | None, workspaceSize: int, executor: aclOpExecutor | None,
                           stream: aclrtStream | None) -> int:
    return _launch("aclnnLeakyReluBackward", workspace, workspaceSize, executor, stream)


def aclnnPrelu(workspace: DevicePtr | None, workspaceSize: int, executor: aclOpExecutor | None,
               stream: aclrtStream | None) -> int:
    return _launch("aclnnPrelu", workspace, workspaceSize, executor, stream)


def aclnnPreluBackward(workspace: DevicePtr | None, workspaceSize: int, executor: aclOpExecutor | None,
                       stream: aclrtStream | None) -> int:
    return _launch("aclnnPreluBackward", workspace, workspaceSize, executor, stream)
