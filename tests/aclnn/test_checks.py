"""Every status path of the aclnn rules (docs/aclnn.md), in the vendor's check order, per SoC profile; failed calls
leave every output untouched; nothing ever raises."""

import ml_dtypes
import numpy as np
import pytest

import leakyops
from leakyops import aclnn

OK, NULL, INVALID = aclnn.ACLNN_SUCCESS, aclnn.ACLNN_ERR_PARAM_NULLPTR, aclnn.ACLNN_ERR_PARAM_INVALID
BF16 = ml_dtypes.bfloat16
SENTINEL = 7.0


def T(shape=(2, 3), dtype=np.float32, fill=None, readonly=False):
    """A wrapped array: inputs get data, outputs (fill=SENTINEL) a recognisable value."""
    if fill is None:
        a = (np.arange(int(np.prod(shape)), dtype=np.float64) - 2.5).reshape(shape).astype(dtype)
    else:
        a = np.full(shape, fill, dtype=dtype)
    if readonly:
        a.flags.writeable = False
    t = aclnn.from_numpy(a)
    assert t is not None
    _HOSTS[id(t)] = (t, a)  # the wrapped array, for the assertions (keeps both alive)
    return t


_HOSTS = {}


def S(value=0.1, dtype=aclnn.ACL_FLOAT):
    s = aclnn.aclCreateScalar(value, dtype)
    assert s is not None
    return s


def _host(x):
    entry = _HOSTS.get(id(x))
    return entry[1] if entry is not None and entry[0] is x else None


def _check_first_phase(fn, args, code, msg=None):
    outs = [(_host(a), _host(a).copy()) for a in args if _host(a) is not None]
    ws, ex, st = fn(*args)
    assert st == code, aclnn.aclGetRecentErrMsg()
    err = aclnn.aclGetRecentErrMsg()
    if code == OK:
        assert ex is not None and err is None
        return ws, ex
    assert ex is None and ws == 0
    assert err is not None and str(code) in err
    if msg is not None:
        assert msg in err, err
    for arr, before in outs:  # nothing was touched
        np.testing.assert_array_equal(arr, before)
    return ws, ex


# ------------------------------------------------------------------ LeakyRelu / InplaceLeakyRelu
LEAKY = [
    # (id, builder -> (self, slope, out), expected, message fragment)
    ("ok", lambda: (T(), S(), T(fill=SENTINEL)), OK, None),
    ("null-self", lambda: (None, S(), T(fill=SENTINEL)), NULL, "argument self"),
    ("null-slope", lambda: (T(), None, T(fill=SENTINEL)), NULL, "argument negativeSlope"),
    ("null-out", lambda: (T(), S(), None), NULL, "argument out"),
    # null is checked before dtype
    ("null-before-dtype", lambda: (T(dtype=np.uint32), S(), None), NULL, "argument out"),
    ("self-uint32", lambda: (T(dtype=np.uint32), S(1, aclnn.ACL_INT32), T(dtype=np.uint32, fill=1)), INVALID,
     "self dtype DT_UINT32"),
    ("self-int64", lambda: (T(dtype=np.int64), S(), T(fill=SENTINEL)), INVALID, "DT_INT64"),
    ("out-int32-not-castable", lambda: (T(), S(), T(dtype=np.int32, fill=7)), INVALID,
     "Cast dtype DT_FLOAT to DT_INT32"),
    ("out-bool-not-castable", lambda: (T(), S(), T(dtype=np.bool_, fill=1)), INVALID, "DT_BOOL"),
    ("out-f16-castable", lambda: (T(), S(), T(dtype=np.float16, fill=SENTINEL)), OK, None),
    ("out-f64-castable", lambda: (T(dtype=np.float16), S(), T(dtype=np.float64, fill=SENTINEL)), OK, None),
    ("out-complex-castable", lambda: (T(), S(), T(dtype=np.complex64, fill=SENTINEL)), OK, None),
    ("9-dims", lambda: (T((1,) * 9), S(), T((1,) * 9, fill=SENTINEL)), INVALID, "dim num 9"),
    ("8-dims", lambda: (T((2, 1, 1, 1, 1, 1, 1, 2)), S(), T((2, 1, 1, 1, 1, 1, 1, 2), fill=SENTINEL)), OK, None),
    ("out-shape", lambda: (T(), S(), T((3, 2), fill=SENTINEL)), INVALID, "out shape [3,2]"),
    # dtype is checked before shape
    ("dtype-before-shape", lambda: (T(dtype=np.int32), S(), T((3, 2), fill=SENTINEL)), INVALID, "DT_INT32"),
    ("dims-before-out-shape", lambda: (T((1,) * 9), S(), T((1,), fill=SENTINEL)), INVALID, "dim num 9"),
    ("readonly-out", lambda: (T(), S(), T(fill=SENTINEL, readonly=True)), INVALID, "read-only"),
    ("readonly-self-ok", lambda: (T(readonly=True), S(), T(fill=SENTINEL)), OK, None),
    ("foreign-self", lambda: (np.zeros((2, 3), np.float32), S(), T(fill=SENTINEL)), INVALID,
     "self must be an aclTensor"),
    ("foreign-slope", lambda: (T(), 0.1, T(fill=SENTINEL)), INVALID, "negativeSlope must be an aclScalar"),
    ("tensor-as-slope", lambda: (T(), T(), T(fill=SENTINEL)), INVALID, "negativeSlope must be an aclScalar"),
    ("empty", lambda: (T((0, 3)), S(), T((0, 3), fill=SENTINEL)), OK, None),
    ("0-d", lambda: (T(()), S(), T((), fill=SENTINEL)), OK, None),
]
# every slope type is accepted by the forward (it only calls ToFloat())
LEAKY += [(f"slope-{dt.name}", (lambda dt=dt: (T(), S(1, dt), T(fill=SENTINEL))), OK, None)
          for dt in (aclnn.ACL_FLOAT16, aclnn.ACL_BF16, aclnn.ACL_DOUBLE, aclnn.ACL_INT8, aclnn.ACL_INT16,
                     aclnn.ACL_INT32, aclnn.ACL_INT64, aclnn.ACL_UINT8, aclnn.ACL_UINT64, aclnn.ACL_BOOL)]


@pytest.mark.parametrize("build,code,msg", [c[1:] for c in LEAKY], ids=[c[0] for c in LEAKY])
def test_leaky_relu_checks(build, code, msg):
    _check_first_phase(aclnn.aclnnLeakyReluGetWorkspaceSize, build(), code, msg)


@pytest.mark.parametrize("build,code,msg", [
    (lambda: (T(), S()), OK, None),
    (lambda: (None, S()), NULL, "argument self"),
    (lambda: (T(), None), NULL, "argument negativeSlope"),
    (lambda: (T(dtype=np.uint32), S()), INVALID, "DT_UINT32"),
    (lambda: (T((2,) * 9), S()), INVALID, "dim num 9"),
    (lambda: (T(readonly=True), S()), INVALID, "read-only"),
    (lambda: (T((0,)), S()), OK, None),
], ids=["ok", "null-self", "null-slope", "uint32", "9-dims", "readonly", "empty"])
def test_inplace_leaky_relu_checks(build, code, msg):
    _check_first_phase(aclnn.aclnnInplaceLeakyReluGetWorkspaceSize, build(), code, msg)


@pytest.mark.parametrize("fn", ["LeakyRelu", "InplaceLeakyRelu"])
def test_leaky_relu_soc_profiles(fn, h):
    first = h.OPS[fn][0]
    args = (lambda: (T(dtype=BF16), S(), T(dtype=BF16, fill=SENTINEL))) if fn == "LeakyRelu" \
        else (lambda: (T(dtype=BF16), S()))
    assert aclnn.get_soc_version() == "Ascend910B"  # the default
    _check_first_phase(first, args(), OK)
    aclnn.set_soc_version("Ascend910")
    assert aclnn.aclrtGetSocName() == "Ascend910"
    _check_first_phase(first, args(), INVALID, "DT_BF16")
    for dt in (np.float32, np.float16, np.float64):  # FLOAT, FLOAT16, DOUBLE on both
        a = (lambda dt=dt: (T(dtype=dt), S(), T(dtype=dt, fill=SENTINEL))) if fn == "LeakyRelu" \
            else (lambda dt=dt: (T(dtype=dt), S()))
        _check_first_phase(first, a(), OK)
    aclnn.set_soc_version("Ascend910B")
    _check_first_phase(first, args(), OK)


def test_set_soc_version_rejects_unknown():
    with pytest.raises(ValueError, match="Ascend310"):
        aclnn.set_soc_version("Ascend310")
    assert aclnn.get_soc_version() == "Ascend910B"


def test_empty_self_gives_zero_workspace_and_runs(stream, h):
    self, out = T((0, 4)), T((0, 4), fill=SENTINEL)
    ws, ex = _check_first_phase(aclnn.aclnnLeakyReluGetWorkspaceSize, (self, S(), out), OK)
    assert ws == 0
    assert aclnn.aclnnLeakyRelu(None, 0, ex, stream) == OK
    assert aclnn.aclrtSynchronizeStream(stream) == 0


def test_non_empty_asks_for_workspace():
    ws, _ = _check_first_phase(aclnn.aclnnLeakyReluGetWorkspaceSize, (T(), S(), T(fill=SENTINEL)), OK)
    assert ws >= 6 * 4


# ------------------------------------------------------------------ LeakyReluBackward
def BW(grad=None, self=None, slope=None, is_result=False, out=None):
    return (T() if grad is None else grad, T() if self is None else self, S() if slope is None else slope,
            is_result, T(fill=SENTINEL) if out is None else out)


_NONE = object()

BACKWARD = [
    ("ok", lambda: BW(), OK, None),
    ("null-grad", lambda: (None,) + BW()[1:], NULL, "argument gradOutput"),
    ("null-self", lambda: BW()[:1] + (None,) + BW()[2:], NULL, "argument self"),
    ("null-slope", lambda: BW()[:2] + (None,) + BW()[3:], NULL, "argument negativeSlope"),
    ("null-out", lambda: BW()[:4] + (None,), NULL, "argument out"),
    ("grad-int32", lambda: BW(grad=T(dtype=np.int32)), INVALID, "gradOutput dtype DT_INT32"),
    ("self-int32", lambda: BW(self=T(dtype=np.int32)), INVALID, "self dtype DT_INT32"),
    ("grad-before-self", lambda: BW(grad=T(dtype=np.uint8), self=T(dtype=np.int32)), INVALID, "gradOutput"),
    ("slope-uint16", lambda: BW(slope=S(1, aclnn.ACL_UINT16)), INVALID, "negativeSlope dtype DT_UINT16"),
    ("slope-uint32", lambda: BW(slope=S(1, aclnn.ACL_UINT32)), INVALID, "DT_UINT32"),
    ("slope-uint64", lambda: BW(slope=S(1, aclnn.ACL_UINT64)), INVALID, "DT_UINT64"),
    ("9-dims-grad", lambda: BW(grad=T((1,) * 9), out=T((1,) * 9, fill=1)), INVALID, "gradOutput dim num 9"),
    ("9-dims-self", lambda: BW(self=T((1,) * 9), grad=T((1,)), out=T((1,) * 9, fill=1)), INVALID,
     "self dim num 9"),
    ("no-broadcast", lambda: BW(grad=T((2, 4)), out=T((2, 4), fill=1)), INVALID, "can not broadcast"),
    ("out-not-broadcast-shape", lambda: BW(grad=T((3,)), self=T((2, 1)), out=T((2, 1), fill=1)), INVALID,
     "Shape of out should be [2,3]"),
    ("broadcast-ok", lambda: BW(grad=T((3,)), self=T((2, 1)), out=T((2, 3), fill=1)), OK, None),
    ("isresult-negative", lambda: BW(slope=S(-0.5), is_result=True), INVALID, "negativeSlope: [-5.000000e-01]"),
    ("isresult-negative-int", lambda: BW(slope=S(-1, aclnn.ACL_INT8), is_result=True), INVALID, "In-place"),
    ("isresult-tiny-negative-double", lambda: BW(slope=S(-1e-300, aclnn.ACL_DOUBLE), is_result=True), INVALID,
     "In-place"),
    ("isresult-zero", lambda: BW(slope=S(0.0), is_result=True), OK, None),
    ("isresult-minus-zero", lambda: BW(slope=S(-0.0), is_result=True), OK, None),
    ("isresult-nan", lambda: BW(slope=S(np.nan), is_result=True), OK, None),
    ("negative-not-result", lambda: BW(slope=S(-0.5), is_result=False), OK, None),
    ("isresult-not-bool", lambda: BW(is_result=None), INVALID, "selfIsResult must be a bool"),
    ("out-int-not-castable", lambda: BW(out=T(dtype=np.int32, fill=1)), INVALID, "Cast dtype DT_FLOAT to DT_INT32"),
    ("promoted-f16-bf16-to-out-f16", lambda: BW(grad=T(dtype=np.float16), self=T(dtype=BF16),
                                                out=T(dtype=np.float16, fill=1)), OK, None),
    ("promoted-to-out-bool", lambda: BW(grad=T(dtype=np.float16), self=T(dtype=BF16),
                                        out=T(dtype=np.bool_, fill=1)), INVALID, "Cast dtype DT_FLOAT to DT_BOOL"),
    # order: dtype < shape < selfIsResult < promote/cast
    ("dtype-before-shape", lambda: BW(grad=T((2, 4), dtype=np.int32), out=T((5,), fill=1)), INVALID, "DT_INT32"),
    ("shape-before-isresult", lambda: BW(slope=S(-1.0), is_result=True, out=T((5,), fill=1)), INVALID,
     "Shape of out"),
    ("isresult-before-cast", lambda: BW(slope=S(-1.0), is_result=True, out=T(dtype=np.int32, fill=1)), INVALID,
     "In-place"),
    ("readonly-out", lambda: BW(out=T(fill=SENTINEL, readonly=True)), INVALID, "read-only"),
    ("destroyed-grad", lambda: BW(grad=_destroyed(T())), INVALID, "gradOutput was destroyed"),
    ("destroyed-slope", lambda: BW(slope=_destroyed_scalar(S())), INVALID, "negativeSlope was destroyed"),
    ("empty-self", lambda: BW(grad=T((0, 3)), self=T((0, 3)), out=T((0, 3), fill=1)), OK, None),
]
BACKWARD += [(f"slope-{dt.name}", (lambda dt=dt: BW(slope=S(1, dt))), OK, None)
             for dt in (aclnn.ACL_FLOAT, aclnn.ACL_FLOAT16, aclnn.ACL_DOUBLE, aclnn.ACL_INT32, aclnn.ACL_INT64,
                        aclnn.ACL_INT8, aclnn.ACL_UINT8, aclnn.ACL_BOOL, aclnn.ACL_INT16, aclnn.ACL_BF16)]


def _destroyed(t):
    assert aclnn.aclDestroyTensor(t) == 0
    return t


def _destroyed_scalar(s):
    assert aclnn.aclDestroyScalar(s) == 0
    return s


@pytest.mark.parametrize("build,code,msg", [c[1:] for c in BACKWARD], ids=[c[0] for c in BACKWARD])
def test_leaky_relu_backward_checks(build, code, msg):
    _check_first_phase(aclnn.aclnnLeakyReluBackwardGetWorkspaceSize, build(), code, msg)


def test_leaky_relu_backward_soc_profiles():
    first = aclnn.aclnnLeakyReluBackwardGetWorkspaceSize
    aclnn.set_soc_version("Ascend910")
    _check_first_phase(first, BW(slope=S(1, aclnn.ACL_BF16)), INVALID, "negativeSlope dtype DT_BF16")
    _check_first_phase(first, BW(grad=T(dtype=BF16)), INVALID, "gradOutput dtype DT_BF16")
    _check_first_phase(first, BW(self=T(dtype=BF16)), INVALID, "self dtype DT_BF16")
    _check_first_phase(first, BW(grad=T(dtype=np.float16), self=T(dtype=np.float64), slope=S(1, aclnn.ACL_UINT8),
                                 out=T(dtype=np.float64, fill=1)), OK)
    aclnn.set_soc_version("Ascend910B")
    _check_first_phase(first, BW(grad=T(dtype=BF16), self=T(dtype=BF16), slope=S(1, aclnn.ACL_BF16),
                                 out=T(dtype=BF16, fill=1)), OK)


# ------------------------------------------------------------------ Prelu
def PF(self=None, weight=None, out=None):
    return (T((2, 3, 4)) if self is None else self, T((3,)) if weight is None else weight,
            T((2, 3, 4), fill=SENTINEL) if out is None else out)


PRELU = [
    ("ok", lambda: PF(), OK, None),
    ("null-self", lambda: (None,) + PF()[1:], NULL, "argument self"),
    ("null-weight", lambda: PF()[:1] + (None,) + PF()[2:], NULL, "argument weight"),
    ("null-out", lambda: PF()[:2] + (None,), NULL, "argument out"),
    ("self-double", lambda: PF(self=T((2, 3, 4), dtype=np.float64)), INVALID, "self dtype DT_DOUBLE"),
    ("weight-double", lambda: PF(weight=T((3,), dtype=np.float64)), INVALID, "weight dtype DT_DOUBLE"),
    ("out-double", lambda: PF(out=T((2, 3, 4), dtype=np.float64, fill=1)), INVALID, "out dtype DT_DOUBLE"),
    ("promote-f16-f32-out-f16", lambda: PF(self=T((2, 3, 4), dtype=np.float16),
                                           out=T((2, 3, 4), dtype=np.float16, fill=1)), OK, None),
    ("9-dims-self", lambda: PF(self=T((1,) * 9), weight=T((1,)), out=T((1,) * 9, fill=1)), INVALID,
     "self dim num 9"),
    ("9-dims-weight", lambda: PF(weight=T((1,) * 9)), INVALID, "weight dim num 9"),
    ("self-out-shape", lambda: PF(out=T((2, 3, 5), fill=1)), INVALID, "self shape [2,3,4]"),
    ("weight-size", lambda: PF(weight=T((4,))), INVALID, "found 4 does not equal 3"),
    ("weight-one", lambda: PF(weight=T((1, 1, 1))), OK, None),
    ("weight-C-any-shape", lambda: PF(weight=T((1, 3))), OK, None),
    ("1d-self-channel-1", lambda: PF(self=T((5,)), weight=T((5,)), out=T((5,), fill=1)), INVALID,
     "found 5 does not equal 1"),
    ("0d-self", lambda: PF(self=T(()), weight=T(()), out=T((), fill=1)), OK, None),
    ("empty-self", lambda: PF(self=T((0, 3, 4)), out=T((0, 3, 4), fill=1)), OK, None),
    ("empty-weight-zero-channels", lambda: PF(self=T((2, 0)), weight=T((0,)), out=T((2, 0), fill=1)), OK, None),
    ("dtype-before-shape", lambda: PF(self=T((2, 3, 4), dtype=np.float64), out=T((9,), fill=1)), INVALID,
     "DT_DOUBLE"),
]


@pytest.mark.parametrize("build,code,msg", [c[1:] for c in PRELU], ids=[c[0] for c in PRELU])
def test_prelu_checks(build, code, msg):
    _check_first_phase(aclnn.aclnnPreluGetWorkspaceSize, build(), code, msg)


def test_prelu_soc_profiles():
    args = lambda: PF(self=T((2, 3, 4), dtype=BF16), weight=T((3,), dtype=BF16),  # noqa: E731
                      out=T((2, 3, 4), dtype=BF16, fill=1))
    _check_first_phase(aclnn.aclnnPreluGetWorkspaceSize, args(), OK)
    aclnn.set_soc_version("Ascend910")
    _check_first_phase(aclnn.aclnnPreluGetWorkspaceSize, args(), INVALID, "DT_BF16")


# ------------------------------------------------------------------ PreluBackward
def PB(grad=None, self=None, weight=None, gi=None, gw=None, shape=(2, 3, 4), c=3, dtype=np.float32):
    return (T(shape, dtype) if grad is None else grad, T(shape, dtype) if self is None else self,
            T((c,), dtype) if weight is None else weight,
            T(shape, dtype, fill=SENTINEL) if gi is None else gi,
            T((c,), dtype, fill=SENTINEL) if gw is None else gw)


PRELU_BWD = [
    ("ok", lambda: PB(), OK, None),
    *[(f"null-{name}", (lambda i=i: PB()[:i] + (None,) + PB()[i + 1:]), NULL, f"argument {name}")
      for i, name in enumerate(["gradOutput", "self", "weight", "gradInput", "gradWeight"])],
    ("self-double", lambda: PB(dtype=np.float64), INVALID, "self dtype DT_DOUBLE"),
    ("self-int32", lambda: PB(dtype=np.int32), INVALID, "self dtype DT_INT32"),
    ("grad-dtype", lambda: PB(grad=T((2, 3, 4), np.float16)), INVALID, "gradOutput dtype DT_FLOAT16"),
    ("weight-dtype", lambda: PB(weight=T((3,), np.float16)), INVALID, "weight dtype DT_FLOAT16"),
    ("gi-dtype", lambda: PB(gi=T((2, 3, 4), np.float16, fill=1)), INVALID, "gradInput dtype"),
    ("gw-dtype", lambda: PB(gw=T((3,), np.float16, fill=1)), INVALID, "gradWeight dtype"),
    ("9-dims-grad", lambda: PB(grad=T((1,) * 9)), INVALID, "gradOutput dim num 9"),     # UT 027
    ("9-dims-self", lambda: PB(self=T((1,) * 9)), INVALID, "self dim num 9"),           # UT 028
    ("9-dims-weight", lambda: PB(weight=T((1,) * 9)), INVALID, "weight dim num 9"),
    ("9-dims-gi", lambda: PB(gi=T((1,) * 9, fill=1)), INVALID, "gradInput dim num 9"),
    ("9-dims-gw", lambda: PB(gw=T((1,) * 9, fill=1)), INVALID, "gradWeight dim num 9"),
    ("gi-shape", lambda: PB(gi=T((2, 3, 5), fill=1)), INVALID, "gradInput shape"),
    ("0d-self-weight-2", lambda: PB(shape=(), c=2), INVALID, "self dim num 0"),
    ("0d-self-weight-1", lambda: PB(shape=(), c=1), OK, None),
    ("weight-not-channels", lambda: PB(weight=T((4,))), INVALID, "must be 1 or self channel size"),  # UT 021
    ("weight-empty", lambda: PB(weight=T((0,))), INVALID, "must be 1 or self channel size"),      # UT 019
    ("gw-shape", lambda: PB(gw=T((1, 3), fill=1)), INVALID, "gradWeight shape [1,3]"),
    ("weight-multidim-gw-C", lambda: PB(weight=T((1, 3, 1))), INVALID,                        # UT 038
     "weight shape [1,3,1] should be the same as gradWeight shape [3]"),
    ("weight-multidim-gw-same", lambda: PB(weight=T((1, 3, 1)), gw=T((1, 3, 1), fill=1)), OK, None),
    ("weight-one", lambda: PB(weight=T((1,)), gw=T((1,), fill=1)), OK, None),                    # UT 022
    ("weight-one-2d", lambda: PB(weight=T((1, 1)), gw=T((1, 1), fill=1)), OK, None),             # UT 023
    ("weight-one-gw-shape", lambda: PB(weight=T((1, 1)), gw=T((1,), fill=1)), INVALID,           # UT 024
     "weight shape [1,1]"),
    ("1d-self", lambda: PB(shape=(5,), c=1), OK, None),
    ("grad-not-to-self", lambda: PB(grad=T((2, 2, 3, 2)), self=T((1, 2, 3, 2)), gi=T((1, 2, 3, 2), fill=1),
                                    c=2), INVALID, "broadcastShape[[2,2,3,2]]"),                 # UT 029
    ("grad-no-broadcast", lambda: PB(grad=T((2, 3, 5))), INVALID, "can not broadcast"),
    ("grad-broadcasts", lambda: PB(grad=T((1, 3, 1))), OK, None),
    ("readonly-gw", lambda: PB(gw=T((3,), fill=1, readonly=True)), INVALID, "gradWeight wraps read-only"),
    ("empty-self", lambda: PB(shape=(0, 3, 4)), OK, None),                                        # UT 017
    ("8-dims", lambda: PB(shape=(1, 2, 1, 1, 1, 1, 1, 2), c=2), OK, None),                        # UT 031
    # order: dtype before shape
    ("dtype-before-shape", lambda: PB(grad=T((9,), np.float16)), INVALID, "DT_FLOAT16"),
]


@pytest.mark.parametrize("build,code,msg", [c[1:] for c in PRELU_BWD], ids=[c[0] for c in PRELU_BWD])
def test_prelu_backward_checks(build, code, msg):
    _check_first_phase(aclnn.aclnnPreluBackwardGetWorkspaceSize, build(), code, msg)


def test_prelu_backward_soc_profiles():
    _check_first_phase(aclnn.aclnnPreluBackwardGetWorkspaceSize, PB(dtype=BF16), OK)
    aclnn.set_soc_version("Ascend910")
    _check_first_phase(aclnn.aclnnPreluBackwardGetWorkspaceSize, PB(dtype=BF16), INVALID, "DT_BF16")
    _check_first_phase(aclnn.aclnnPreluBackwardGetWorkspaceSize, PB(dtype=np.float16), OK)
    # SocVersion in [ASCEND910B, ASCEND910E] takes the BF16 list: A2, A3 and 950
    for soc in ("Ascend910_93", "Ascend950"):
        aclnn.set_soc_version(soc)
        _check_first_phase(aclnn.aclnnPreluBackwardGetWorkspaceSize, PB(dtype=BF16), OK)
        _check_first_phase(aclnn.aclnnPreluBackwardGetWorkspaceSize, PB(dtype=np.float64), INVALID,
                           "DT_DOUBLE")


def _ut(self_shape, w_shape, gw_shape, grad_shape=None):
    """A case of ops-nn's test_aclnn_prelu_backward.cpp: shapes of self, weight, gradWeight."""
    return PB(grad=T(self_shape if grad_shape is None else grad_shape), self=T(self_shape),
              weight=T(w_shape), gi=T(self_shape, fill=SENTINEL), gw=T(gw_shape, fill=SENTINEL))


# (case, self, weight, gradWeight, gradOutput, status under "newest", status under "legacy")
PRELU_BWD_REVISIONS = [
    ("025", (2, 4, 3, 2), (2, 2), (4,), None, INVALID, OK),
    ("034", (1, 45000), (1, 45000), (1, 45000), (1, 1), OK, INVALID),
    ("035", (1, 2, 3), (1, 2, 1), (1, 2, 1), None, OK, INVALID),
    ("036", (1, 2, 3), (2,), (2,), None, OK, OK),
    ("037", (1, 2, 3), (2, 1), (2, 1), None, INVALID, INVALID),
    ("038", (1, 2, 3), (1, 2, 1), (2,), None, INVALID, OK),
    ("037-legacy-gw", (1, 2, 3), (2, 1), (2,), None, INVALID, OK),
    ("weight-C-in-dim-0", (1, 2, 3), (2, 1, 1), (2, 1, 1), None, INVALID, INVALID),
    ("022", (2, 4, 3, 2), (1,), (1,), None, OK, OK),
    ("024", (2, 4, 3, 2), (1, 1), (1,), None, INVALID, INVALID),
]


@pytest.mark.parametrize("rule", ["newest", "legacy"])
@pytest.mark.parametrize("case", PRELU_BWD_REVISIONS, ids=[c[0] for c in PRELU_BWD_REVISIONS])
def test_prelu_backward_rule_revisions(rule, case):
    """The newest ops-nn unit tests (025 and 034-038 changed or added) against the older rule,
    which stays selectable with ``set_prelu_backward_rule("legacy")``."""
    _, self_shape, w_shape, gw_shape, grad_shape, newest, legacy = case
    aclnn.set_prelu_backward_rule(rule)
    assert aclnn.get_prelu_backward_rule() == rule
    want = newest if rule == "newest" else legacy
    _check_first_phase(aclnn.aclnnPreluBackwardGetWorkspaceSize,
                       _ut(self_shape, w_shape, gw_shape, grad_shape), want,
                       None if want == OK else "shape")


def test_prelu_backward_rule_selection():
    assert aclnn.PRELU_BACKWARD_RULES == ("newest", "legacy")
    assert aclnn.get_prelu_backward_rule() == "newest"          # the default
    with pytest.raises(ValueError, match="unknown rule 'v1'"):
        aclnn.set_prelu_backward_rule("v1")
    assert aclnn.get_prelu_backward_rule() == "newest"


@pytest.mark.parametrize("soc", ["Ascend910_93", "Ascend950"])
def test_a3_and_950_profiles_take_the_a2_lists(soc, h):
    """DAV_2201 (A2, A3) and regbase (950) archs take the "910B" lists in aclnn_leaky_relu.cpp,
    aclnn_leaky_relu_backward.cpp and aclnn_prelu.cpp."""
    aclnn.set_soc_version(soc)
    assert aclnn.get_soc_version() == soc == aclnn.aclrtGetSocName()
    _check_first_phase(aclnn.aclnnLeakyReluGetWorkspaceSize,
                       (T(dtype=BF16), S(), T(dtype=BF16, fill=SENTINEL)), OK)
    _check_first_phase(aclnn.aclnnLeakyReluGetWorkspaceSize,
                       (T(dtype=np.float64), S(), T(dtype=np.float64, fill=SENTINEL)), OK)
    _check_first_phase(aclnn.aclnnLeakyReluBackwardGetWorkspaceSize,
                       (T(dtype=BF16), T(dtype=BF16), aclnn.aclCreateScalar(0.5, aclnn.ACL_BF16),
                        False, T(dtype=BF16, fill=SENTINEL)), OK)
    _check_first_phase(aclnn.aclnnPreluGetWorkspaceSize,
                       PF(self=T((2, 3, 4), dtype=BF16), weight=T((3,), dtype=BF16),
                          out=T((2, 3, 4), dtype=BF16, fill=1)), OK)
    _check_first_phase(aclnn.aclnnPreluGetWorkspaceSize,
                       PF(self=T((2, 3, 4), dtype=np.float64), weight=T((3,), dtype=np.float64),
                          out=T((2, 3, 4), dtype=np.float64, fill=1)), INVALID, "DT_DOUBLE")


def test_prelu_backward_empty_runs_nothing(stream, h):
    """ops-nn returns an executor with no work for an empty input: gradWeight stays as it was."""
    args = PB(shape=(0, 3, 4))
    st = h.run(aclnn.aclnnPreluBackwardGetWorkspaceSize, aclnn.aclnnPreluBackward, *args, stream=stream)
    assert st == (OK, OK, 0)
    np.testing.assert_array_equal(_host(args[4]), np.full(3, SENTINEL, np.float32))


# ------------------------------------------------------------------ second phase (launch)
@pytest.fixture
def planned():
    """A LeakyRelu executor with a real workspace requirement."""
    x, out = T((4, 8)), T((4, 8), fill=SENTINEL)
    ws_size, ex, st = aclnn.aclnnLeakyReluGetWorkspaceSize(x, S(0.5), out)
    assert st == OK and ws_size > 0
    return x, out, ws_size, ex


def _alloc(n):
    ptr, ret = aclnn.aclrtMalloc(n)
    assert ret == 0
    return ptr


def test_launch_null_executor(stream):
    assert aclnn.aclnnLeakyRelu(None, 0, None, stream) == NULL
    assert "executor is nullptr" in aclnn.aclGetRecentErrMsg()


@pytest.mark.parametrize("bad", [object(), 3, "executor", np.zeros(2)])
def test_launch_foreign_executor(stream, bad):
    assert aclnn.aclnnPreluBackward(None, 0, bad, stream) == INVALID
    assert "aclOpExecutor" in aclnn.aclGetRecentErrMsg()


def test_executor_runs_once(stream, planned):
    x, out, ws_size, ex = planned
    ws = _alloc(ws_size)
    assert aclnn.aclnnLeakyRelu(ws, ws_size, ex, stream) == OK
    assert aclnn.aclrtSynchronizeStream(stream) == 0
    first = _host(out).copy()
    np.testing.assert_array_equal(first, leakyops.leaky_relu(_host(x), np.float32(0.5)))
    _host(x)[...] = 1.0  # a second run would change out
    assert aclnn.aclnnLeakyRelu(ws, ws_size, ex, stream) == INVALID
    assert "runs once" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclrtSynchronizeStream(stream) == 0
    np.testing.assert_array_equal(_host(out), first)


def test_workspace_too_small_then_right(stream, planned):
    x, out, ws_size, ex = planned
    ws = _alloc(ws_size)
    assert aclnn.aclnnLeakyRelu(ws, ws_size - 1, ex, stream) == INVALID
    assert "smaller than" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclrtSynchronizeStream(stream) == 0
    assert (_host(out) == SENTINEL).all()
    # the executor was not consumed by the refused launch
    assert aclnn.aclnnLeakyRelu(ws, ws_size, ex, stream) == OK
    assert aclnn.aclrtSynchronizeStream(stream) == 0
    np.testing.assert_array_equal(_host(out), leakyops.leaky_relu(_host(x), np.float32(0.5)))


def test_workspace_buffer_smaller_than_claimed(stream, planned):
    _, out, ws_size, ex = planned
    small = _alloc(ws_size - 1)
    assert aclnn.aclnnLeakyRelu(small, ws_size, ex, stream) == INVALID
    assert "fewer than" in aclnn.aclGetRecentErrMsg()
    # an interior pointer near the end of a big buffer is also too small
    big = _alloc(ws_size)
    assert aclnn.aclnnLeakyRelu(big + 8, ws_size, ex, stream) == INVALID
    aclnn.aclGetRecentErrMsg()
    assert aclnn.aclrtSynchronizeStream(stream) == 0
    assert (_host(out) == SENTINEL).all()


def test_workspace_null_consumes_executor(stream, planned):
    _, out, ws_size, ex = planned
    assert aclnn.aclnnLeakyRelu(None, ws_size, ex, stream) == NULL
    assert "workspace is nullptr" in aclnn.aclGetRecentErrMsg()
    # CANN deletes the executor on this error (DeleteExecutorForError)
    assert aclnn.aclnnLeakyRelu(_alloc(ws_size), ws_size, ex, stream) == INVALID
    assert aclnn.aclrtSynchronizeStream(stream) == 0
    assert (_host(out) == SENTINEL).all()


def test_workspace_host_memory_refused(stream, planned):
    _, out, ws_size, ex = planned
    assert aclnn.aclnnLeakyRelu(np.zeros(ws_size, np.uint8), ws_size, ex, stream) == INVALID
    assert "device memory" in aclnn.aclGetRecentErrMsg()
    assert (_host(out) == SENTINEL).all()


@pytest.mark.parametrize("bad_size", [-1, 2.5, None, True])
def test_bad_workspace_size(stream, planned, bad_size):
    _, out, ws_size, ex = planned
    assert aclnn.aclnnLeakyRelu(_alloc(ws_size), bad_size, ex, stream) == INVALID
    assert "workspaceSize" in aclnn.aclGetRecentErrMsg()


def test_freed_workspace_is_runtime_error(stream, planned):
    _, out, ws_size, ex = planned
    ws = _alloc(ws_size)
    assert aclnn.aclrtFree(ws) == 0
    assert aclnn.aclnnLeakyRelu(ws, ws_size, ex, stream) == aclnn.ACLNN_ERR_RUNTIME_ERROR
    assert "freed" in aclnn.aclGetRecentErrMsg()


def test_destroyed_or_foreign_stream_is_runtime_error(planned):
    _, out, ws_size, ex = planned
    st, _ = aclnn.aclrtCreateStream()
    assert aclnn.aclrtDestroyStream(st) == 0
    ws = _alloc(ws_size)
    assert aclnn.aclnnLeakyRelu(ws, ws_size, ex, st) == aclnn.ACLNN_ERR_RUNTIME_ERROR
    assert "destroyed" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclnnLeakyRelu(ws, ws_size, ex, "stream") == aclnn.ACLNN_ERR_RUNTIME_ERROR
    assert "aclrtStream" in aclnn.aclGetRecentErrMsg()
    # the executor is still usable on a live stream (the default one: None)
    assert aclnn.aclnnLeakyRelu(ws, ws_size, ex, None) == OK
    assert aclnn.aclrtSynchronizeStream(None) == 0
    assert not (_host(out) == SENTINEL).any()


def test_tensor_memory_freed_between_phases(stream, h):
    xp, x = h.device_tensor(np.arange(6, dtype=np.float32))
    op, out = h.device_tensor(np.zeros(6, dtype=np.float32))
    ws_size, ex, st = aclnn.aclnnLeakyReluGetWorkspaceSize(x, S(), out)
    assert st == OK
    assert aclnn.aclrtFree(xp) == 0
    assert aclnn.aclnnLeakyRelu(_alloc(ws_size), ws_size, ex, stream) == aclnn.ACLNN_ERR_RUNTIME_ERROR
    assert "freed" in aclnn.aclGetRecentErrMsg()
    # and a tensor over freed memory is refused by the first phase
    ws_size, ex, st = aclnn.aclnnLeakyReluGetWorkspaceSize(x, S(), out)
    assert st == INVALID and "freed" in aclnn.aclGetRecentErrMsg()


def test_destroyed_tensor_after_planning_still_runs(stream, h):
    """The executor owns what it needs: destroying descriptors after phase 1 is fine."""
    x, out = T((3,)), T((3,), fill=SENTINEL)
    ws_size, ex, st = aclnn.aclnnLeakyReluGetWorkspaceSize(x, S(0.5), out)
    aclnn.aclDestroyTensor(x)
    aclnn.aclDestroyTensor(out)
    assert aclnn.aclnnLeakyRelu(_alloc(ws_size), ws_size, ex, stream) == OK
    assert aclnn.aclrtSynchronizeStream(stream) == 0
    np.testing.assert_array_equal(_host(out), leakyops.leaky_relu(_host(x), np.float32(0.5)))


# ------------------------------------------------------------------ internal failures
def test_executor_creation_failure(monkeypatch):
    def boom(op):
        raise MemoryError("no memory for the executor")
    monkeypatch.setattr(aclnn._ops, "_create_executor", boom)
    # LeakyRelu creates the executor before checking (CREATE_EXECUTOR first)...
    ws, ex, st = aclnn.aclnnLeakyReluGetWorkspaceSize(None, S(), T(fill=1))
    assert (ws, ex, st) == (0, None, aclnn.ACLNN_ERR_INNER_CREATE_EXECUTOR)
    assert "could not create the aclOpExecutor" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclnnLeakyReluBackwardGetWorkspaceSize(*BW())[2] == aclnn.ACLNN_ERR_INNER_CREATE_EXECUTOR
    assert aclnn.aclnnPreluBackwardGetWorkspaceSize(*PB())[2] == aclnn.ACLNN_ERR_INNER_CREATE_EXECUTOR
    # ...aclnnPrelu checks its parameters first, then creates the executor
    assert aclnn.aclnnPreluGetWorkspaceSize(None, T((3,)), T((2, 3), fill=1))[2] == NULL
    assert aclnn.aclnnPreluGetWorkspaceSize(*PF())[2] == aclnn.ACLNN_ERR_INNER_CREATE_EXECUTOR


def test_unexpected_internal_error_is_a_status(monkeypatch):
    def broken():
        raise RuntimeError("platform info unavailable")
    monkeypatch.setattr(aclnn._ops, "get_soc_version", broken)
    for name, args in (("LeakyRelu", (T(), S(), T(fill=1))), ("LeakyReluBackward", BW()),
                       ("Prelu", PF()), ("PreluBackward", PB())):
        first = getattr(aclnn, f"aclnn{name}GetWorkspaceSize")
        assert first(*args) == (0, None, aclnn.ACLNN_ERR_INNER)
        assert "platform info unavailable" in aclnn.aclGetRecentErrMsg()


@pytest.mark.parametrize("exc,code", [(ValueError("bad kernel arg"), aclnn.ACLNN_ERR_INNER_NULLPTR),
                                      (RuntimeError("device fault"), aclnn.ACLNN_ERR_INNER)])
def test_kernel_failure_reported_at_synchronize(monkeypatch, stream, exc, code):
    """A kernel that fails on the stream: sync returns ACL_ERROR_RT_AICORE_EXCEPTION, the
    message carries the aclnn status, and the output is untouched."""
    def failing(*args, **kwargs):
        raise exc
    monkeypatch.setattr(leakyops._core, "leaky_relu_impl", failing)
    x, out = T(), T(fill=SENTINEL)
    ws_size, ex, st = aclnn.aclnnLeakyReluGetWorkspaceSize(x, S(), out)
    assert st == OK
    assert aclnn.aclnnLeakyRelu(_alloc(ws_size), ws_size, ex, stream) == OK
    assert aclnn.aclrtSynchronizeStream(stream) == aclnn.ACL_ERROR_RT_AICORE_EXCEPTION
    msg = aclnn.aclGetRecentErrMsg()
    assert str(code) in msg and str(exc) in msg and "aclnnLeakyRelu" in msg
    assert (_host(out) == SENTINEL).all()
    # the error is reported once; the stream keeps working
    assert aclnn.aclrtSynchronizeStream(stream) == 0


# ------------------------------------------------------------------ never raises
GARBAGE = [None, 0, 1.5, "x", b"x", object(), np.zeros(3), [1, 2], aclnn.aclCreateScalar(1.0, aclnn.ACL_FLOAT)]


@pytest.mark.parametrize("name", ["LeakyRelu", "InplaceLeakyRelu", "LeakyReluBackward", "Prelu", "PreluBackward"])
def test_no_exception_escapes(name, h):
    first, launch = h.OPS[name]
    nargs = first.__code__.co_argcount
    rng = np.random.default_rng(0)
    for _ in range(60):
        args = [GARBAGE[i] for i in rng.integers(0, len(GARBAGE), nargs)]
        ws, ex, st = first(*args)
        assert st in (NULL, INVALID) and ex is None and ws == 0
        assert isinstance(aclnn.aclGetRecentErrMsg(), str)
    for args in ([None, None, None, None], [1, -5, "ex", 3], [object(), 2**70, object(), None]):
        assert launch(*args) in (NULL, INVALID, aclnn.ACLNN_ERR_RUNTIME_ERROR)
