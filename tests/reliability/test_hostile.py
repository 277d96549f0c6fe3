"""Hostile input at every public function of every front-end (hypothesis).

Each example draws arguments that are mostly valid with one or more replaced by something
nobody intended: random shapes, strides (negative, zero: broadcast views), dtypes (ints,
bool, complex, object, strings), scalars (NaN, inf, Python ints beyond int64, complex,
strings), ``None``, plain objects, nested and ragged lists, object arrays, read-only and
overlapping outputs. Every call must end in exactly one of:

* the front-end's documented error (aclnn: a status code, never an exception), with every
  output and in-place argument bit-for-bit unchanged; or
* a result equal, bit for bit, to the core's on the same data with the front-end's
  documented options.

Crashes abort the run; a hang is caught by ``faulthandler`` (see ``_watchdog``). The counts
of cases and outcomes are printed per front-end (``pytest -s``) and summed in
docs/guarantees.md.
"""

from __future__ import annotations

import collections
import faulthandler
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refs import BF16, assert_same, assert_same_sum, numpy_of, special_values

import leakyops
from leakyops import _core

TALLY: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
OTHERS = [np.dtype(t) for t in (np.int8, np.int32, np.int64, np.uint8, np.bool_, np.complex64, np.complex128)]
HOSTILE = settings(max_examples=250, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much])


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    for name, c in sorted(TALLY.items()):
        print(f"\n{name}: {sum(c.values())} hostile cases: {dict(c)}", file=sys.__stdout__)


@pytest.fixture(autouse=True)
def _aclnn_defaults():
    """aclnn tests switch the SoC profile; every test starts and ends on the default one."""
    from leakyops import aclnn as _aclnn
    _aclnn.set_soc_version("Ascend910B")
    yield
    _aclnn.set_soc_version("Ascend910B")
    _aclnn.aclGetRecentErrMsg()


@pytest.fixture(autouse=True)
def _watchdog():
    """A call that hangs dumps every thread's stack and exits instead of blocking the run."""
    faulthandler.dump_traceback_later(300, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


# ------------------------------------------------------------------ strategies
def _ragged():
    return [[1.0], [1.0, 2.0]]


JUNK = st.one_of(
    st.none(), st.text(max_size=4), st.builds(object), st.just({"a": 1}), st.just(()),
    st.integers(2 ** 63, 2 ** 200), st.integers(-(2 ** 200), -(2 ** 63) - 1),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
    st.recursive(st.floats(-10, 10), lambda c: st.lists(c, min_size=1, max_size=3), max_leaves=8),
    st.builds(_ragged),
    st.just(np.array([1.0, None], dtype=object)), st.just(np.array(["a", "b"])),
    st.just(np.array([10 ** 30, 1], dtype=object)), st.just([10 ** 30]),
    st.builds(lambda: np.ones((2, 3), np.float32).tolist()),
)
SCALARS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2 ** 70), 2 ** 70), st.booleans(),
    st.sampled_from([np.float16(np.nan), ml_dtypes.bfloat16(-0.0), np.float32(np.inf), np.int8(-3),
                     np.uint64(2 ** 64 - 1), np.bool_(True), np.array(0.5), np.array([0.5]),
                     np.array([0.5, 0.25]), "0.5", "nan", 1 + 2j, None, 10 ** 400, -(2 ** 64)]),
)


@st.composite
def np_arrays(draw, dtypes=None, shape=None, max_dims=4):
    """A NumPy array seen through a random view: steps of ±1/±2, a transpose, or a
    broadcast (zero strides); sometimes read-only."""
    dtype = draw(st.sampled_from(dtypes or FLOATS + OTHERS))
    if shape is None:
        shape = tuple(draw(st.lists(st.integers(0, 4), max_size=max_dims)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    how = draw(st.sampled_from(["plain", "steps", "transpose", "broadcast"]))
    if how == "steps" and shape:
        steps = [draw(st.sampled_from([1, 2, -1, -2])) for _ in shape]
        base = _values(rng, tuple(max(1, n * abs(s)) for n, s in zip(shape, steps)), dtype)
        a = base[tuple(slice(None, None, s) if n else slice(0, 0) for n, s in zip(shape, steps))]
    elif how == "transpose" and len(shape) >= 2:
        a = _values(rng, shape[::-1], dtype).T
    elif how == "broadcast" and shape:
        a = np.broadcast_to(_values(rng, (1,) + shape[1:], dtype), shape)
    else:
        a = _values(rng, shape, dtype)
    if draw(st.integers(0, 9)) == 0 and a.flags.writeable:
        a.flags.writeable = False
    return a


def _values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype == BF16:
        a = (rng.standard_normal(shape) * 3).astype(dtype)
        flat = a.reshape(-1)
        if flat.size:
            sp = special_values(dtype)
            m = rng.random(flat.size) < 0.2
            flat[m] = sp[rng.integers(0, sp.size, int(m.sum()))]
        return a
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j).astype(dtype)
    return rng.integers(0, 2, shape).astype(dtype)


def snapshot(*arrays):
    return [(a, np.array(a, copy=True)) for a in arrays if isinstance(a, np.ndarray)]


def unchanged(snaps):
    for a, before in snaps:
        assert a.tobytes() == before.tobytes(), "an output was partly written before an error"


def good_or(data, good, hostile, p_hostile=4):
    """The valid value, or (about 1 time in ``p_hostile``) a hostile one."""
    return data.draw(hostile) if data.draw(st.integers(0, p_hostile - 1)) == 0 else good


def core_ref(fn, *args, **kw):
    """The core's result on the same data, or the exception it raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return fn(*args, **kw), None
    except (TypeError, ValueError) as exc:
        return None, exc


# ================================================================== PyTorch
# (optional: without it only its tests skip; a module-level importorskip skipped every
# front-end's)
try:
    import torch

    import leakyops.torch as lt
except ImportError:
    torch = lt = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

TORCH_DT = [] if torch is None else [
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64,
    torch.bool, torch.complex64, torch.uint8]


@st.composite
def tensors(draw, shape=None, dtype=None):
    dtype = dtype if dtype is not None else draw(st.sampled_from(TORCH_DT))
    if shape is None:
        shape = tuple(draw(st.lists(st.integers(0, 4), max_size=4)))
    a = np_arrays(dtypes=[np.float64], shape=shape)
    t = torch.from_numpy(np.array(draw(a), copy=True))
    t = (t * 1).to(dtype) if dtype.is_complex or dtype.is_floating_point else (t > 0).to(dtype)
    how = draw(st.sampled_from(["plain", "transpose", "step", "expand", "meta"]))
    if how == "transpose" and t.dim() >= 2:
        t = t.transpose(0, -1).contiguous().transpose(0, -1)
    elif how == "step" and t.dim() >= 1:
        big = torch.repeat_interleave(t, 2, dim=-1)
        t = big[..., ::2]
    elif how == "expand" and t.dim() >= 1 and t.shape[0] > 0:
        t = t[:1].expand(*t.shape)
    elif how == "meta" and draw(st.integers(0, 4)) == 0:
        t = t.to("meta")
    return t


# OverflowError: a Python int slope beyond float's range, exactly as PyTorch's own functions
TORCH_ERRORS = (TypeError, ValueError, RuntimeError, NotImplementedError, OverflowError)


def _torch_case(name, call, inplace, ref, sums=None):
    """Run ``call``; on an error check it is documented and ``inplace`` is unchanged; on
    success compare with ``ref()`` (the core on the same data, C-contiguous). ``sums()``:
    ``{index: per-channel sum of |term|}`` for outputs that are sums over memory order
    (``grad_weight``), compared within their error bound when the layouts differ."""
    cpu = [t for t in inplace if isinstance(t, torch.Tensor) and t.device.type == "cpu"]
    before = [numpy_of(t).tobytes() for t in cpu]
    try:
        result = call()
    except TORCH_ERRORS as exc:
        TALLY["torch"][f"{name}: {type(exc).__name__}"] += 1
        assert [numpy_of(t).tobytes() for t in cpu] == before, f"{name}: partly written before {exc!r}"
        return
    expected, err = ref()
    assert err is None, f"{name}: leakyops.torch accepted what the core rejects: {err!r}"
    TALLY["torch"][f"{name}: ok"] += 1
    results = result if isinstance(result, tuple) else (result,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    bounds = sums() if sums is not None else {}
    for i, (r, e) in enumerate(zip(results, expected)):
        if i in bounds:
            assert_same_sum(numpy_of(r), e, bounds[i])
        else:
            assert_same(numpy_of(r), e)


@needs_torch
@HOSTILE
@given(st.data())
def test_torch_front_end_hostile(data):
    op = data.draw(st.sampled_from(["leaky_relu", "leaky_relu_", "leaky_relu_backward", "prelu",
                                    "prelu_backward", "LeakyReLU", "PReLU"]))
    shape = tuple(data.draw(st.lists(st.integers(0, 4), max_size=4)))
    fdt = data.draw(st.sampled_from(TORCH_DT[:4]))
    x = good_or(data, data.draw(tensors(shape, fdt)), st.one_of(JUNK, tensors()))
    s = good_or(data, data.draw(st.floats(-3, 3)), SCALARS)
    fs = None
    try:  # the reference slope: the core's rule (strings and arrays of 2+ elements fail)
        fs = leakyops._core.slope_value(s, "ref", "negative_slope")
    except (TypeError, ValueError, OverflowError):
        pass
    npx = numpy_of(x) if isinstance(x, torch.Tensor) and x.device.type == "cpu" else None
    if op in ("leaky_relu", "leaky_relu_", "LeakyReLU"):
        inplace = op == "leaky_relu_" or (op == "LeakyReLU" and data.draw(st.booleans()))
        if op == "LeakyReLU":
            call = lambda: lt.LeakyReLU(s, inplace=inplace)(x)
        elif op == "leaky_relu":
            call = lambda: lt.leaky_relu(x, s)
        else:
            call = lambda: lt.leaky_relu_(x, s)
        _torch_case(op, call, [x] if inplace else [],
                    lambda: core_ref(leakyops.leaky_relu, npx, fs) if npx is not None and fs is not None
                    else (None, TypeError("no reference")))
    elif op == "leaky_relu_backward":
        g = good_or(data, data.draw(tensors(shape, fdt)), st.one_of(JUNK, tensors()))
        res = data.draw(st.booleans())
        npg = numpy_of(g) if isinstance(g, torch.Tensor) and g.device.type == "cpu" else None
        _torch_case(op, lambda: lt.leaky_relu_backward(g, x, s, res), [],
                    lambda: core_ref(leakyops.leaky_relu_backward, npg, npx, fs, res)
                    if npx is not None and npg is not None and fs is not None else (None, TypeError("no ref")))
    else:
        c = shape[1] if len(shape) >= 2 else 1
        w = good_or(data, data.draw(tensors((data.draw(st.sampled_from([c, 1])),), fdt)),
                    st.one_of(JUNK, tensors()))
        npw = numpy_of(w) if isinstance(w, torch.Tensor) and w.device.type == "cpu" else None
        if npw is not None and npw.size == 1:
            npw = npw.reshape(())
        ok_ref = npx is not None and npw is not None and (npw.ndim <= 1)
        if op == "PReLU":
            m = lt.PReLU(max(c, 1), 0.25).to(fdt)
            npw = np.full(max(c, 1), 0.25).astype(numpy_of(m.weight).dtype)
            if npw.size == 1:
                npw = npw.reshape(())
            _torch_case(op, lambda: m(x), [], lambda: core_ref(leakyops.prelu, npx, npw)
                        if npx is not None else (None, TypeError("no ref")))
        elif op == "prelu":
            _torch_case(op, lambda: lt.prelu(x, w), [],
                        lambda: core_ref(leakyops.prelu, npx, npw) if ok_ref else (None, TypeError("no ref")))
        else:
            g = good_or(data, data.draw(tensors(shape, fdt)), st.one_of(JUNK, tensors()))
            npg = numpy_of(g) if isinstance(g, torch.Tensor) and g.device.type == "cpu" else None

            def ref():
                if not ok_ref or npg is None:
                    return None, TypeError("no ref")
                r, e = core_ref(leakyops.prelu_backward, npg, npx, npw)
                return (r[0], r[1].reshape(tuple(w.shape))) if r else None, e

            def sums():
                if x.is_contiguous() and g.is_contiguous() and g.shape == x.shape:
                    return {}  # the same memory order as the reference's: the same bits
                with np.errstate(all="ignore"):
                    terms = np.abs(np.where(npx > 0, 0.0, npx.astype(np.float64)
                                            * np.broadcast_to(npg, npx.shape).astype(np.float64)))
                if w.numel() == 1 or npx.ndim < 2:
                    return {1: terms.sum()}
                return {1: np.moveaxis(terms, 1, -1).reshape(-1, terms.shape[1]).sum(axis=0)}
            _torch_case(op, lambda: lt.prelu_backward(g, x, w), [], ref, sums)


@needs_torch
@pytest.mark.parametrize("fn", ["leaky_relu", "leaky_relu_", "leaky_relu_backward"])
def test_torch_string_slope_is_a_type_error(fn):
    x = torch.tensor([-1.0, 2.0])
    args = (x, x, "0.5") if fn == "leaky_relu_backward" else (x, "0.5")
    with pytest.raises(TypeError):
        getattr(lt, fn)(*args)
    assert x.tolist() == [-1.0, 2.0]


# ================================================================== aclnn (status codes)
from leakyops import aclnn

ACL_STATUSES = {aclnn.ACLNN_SUCCESS, aclnn.ACLNN_ERR_PARAM_NULLPTR, aclnn.ACLNN_ERR_PARAM_INVALID,
                aclnn.ACLNN_ERR_RUNTIME_ERROR, aclnn.ACLNN_ERR_INNER, aclnn.ACLNN_ERR_INNER_CREATE_EXECUTOR,
                aclnn.ACLNN_ERR_INNER_NULLPTR}
ACL_SCALAR_TYPES = [aclnn.ACL_FLOAT, aclnn.ACL_FLOAT16, aclnn.ACL_DOUBLE, aclnn.ACL_INT8, aclnn.ACL_INT32,
                    aclnn.ACL_INT64, aclnn.ACL_UINT8, aclnn.ACL_BOOL, aclnn.ACL_BF16, aclnn.ACL_COMPLEX64,
                    aclnn.ACL_STRING, 99, -1, None, "FLOAT"]


def _acl_tensor(data, arr):
    """An aclTensor over ``arr`` (zero-copy), or a hostile stand-in for one."""
    if isinstance(arr, np.ndarray) and data.draw(st.integers(0, 7)) > 0:
        t = aclnn.from_numpy(arr)  # None for dtypes CANN has no name for (reason logged)
        if t is not None or data.draw(st.booleans()):
            return t
    return data.draw(JUNK)


def _acl_scalar(data):
    v = good_or(data, data.draw(st.floats(-3, 3)), SCALARS, 6)
    dt = good_or(data, aclnn.ACL_FLOAT, st.sampled_from(ACL_SCALAR_TYPES))
    sc = aclnn.aclCreateScalar(v, dt)  # never raises: None for what it cannot hold
    return sc if sc is not None or data.draw(st.booleans()) else data.draw(JUNK)


@HOSTILE
@given(st.data())
def test_aclnn_front_end_hostile(data):
    op = data.draw(st.sampled_from(["LeakyRelu", "InplaceLeakyRelu", "LeakyReluBackward", "Prelu",
                                    "PreluBackward"]))
    aclnn.set_soc_version(data.draw(st.sampled_from(["Ascend910B", "Ascend910"])))
    shape = tuple(data.draw(st.lists(st.integers(0, 4), max_size=4)))
    fdt = data.draw(st.sampled_from(FLOATS))
    arr = lambda shp=shape: good_or(data, data.draw(np_arrays([fdt], shp)),
                                    np_arrays(None, None), 6)
    x = arr()
    overlap = data.draw(st.integers(0, 5)) == 0 and isinstance(x, np.ndarray) and x.flags.writeable
    out = x if overlap else arr()  # the output may be the input itself (or any other array)
    tx, tout = _acl_tensor(data, x), _acl_tensor(data, out)
    snaps = snapshot(x, out)
    if op == "LeakyRelu":
        sc = _acl_scalar(data)
        args, phase2 = (tx, sc, tout), aclnn.aclnnLeakyRelu
        r = aclnn.aclnnLeakyReluGetWorkspaceSize(*args)
    elif op == "InplaceLeakyRelu":
        sc = _acl_scalar(data)
        phase2 = aclnn.aclnnInplaceLeakyRelu
        r = aclnn.aclnnInplaceLeakyReluGetWorkspaceSize(tx, sc)
    elif op == "LeakyReluBackward":
        sc = _acl_scalar(data)
        g = arr()
        tg = _acl_tensor(data, g)
        snaps += snapshot(g)
        res = good_or(data, data.draw(st.booleans()), JUNK)
        phase2 = aclnn.aclnnLeakyReluBackward
        r = aclnn.aclnnLeakyReluBackwardGetWorkspaceSize(tg, tx, sc, res, tout)
    elif op == "Prelu":
        c = shape[1] if len(shape) >= 2 else 1
        w = arr((data.draw(st.sampled_from([c, 1])),))
        tw = _acl_tensor(data, w)
        snaps += snapshot(w)
        phase2 = aclnn.aclnnPrelu
        r = aclnn.aclnnPreluGetWorkspaceSize(tx, tw, tout)
    else:
        c = shape[1] if len(shape) >= 2 else 1
        w = arr((data.draw(st.sampled_from([c, 1])),))
        g, gw = arr(), arr(w.shape if isinstance(w, np.ndarray) else (c,))
        tw, tg, tgw = _acl_tensor(data, w), _acl_tensor(data, g), _acl_tensor(data, gw)
        snaps += snapshot(w, g, gw)
        phase2 = aclnn.aclnnPreluBackward
        r = aclnn.aclnnPreluBackwardGetWorkspaceSize(tg, tx, tw, tout, tgw)
    assert isinstance(r, tuple) and len(r) == 3, r
    ws_size, ex, status = r
    assert status in ACL_STATUSES, status
    if status != 0:
        assert ws_size == 0 and ex is None
        assert aclnn.aclGetRecentErrMsg(), "a failed call must say why"
        unchanged(snaps)
        TALLY["aclnn"][f"{op}: {status}"] += 1
        return
    # accepted: run it, and junk for the second phase's other arguments is a status too
    bad = data.draw(st.sampled_from(["none", "ws", "stream"]))
    if bad == "stream":
        st2 = phase2(None, ws_size, ex, data.draw(JUNK.filter(lambda v: v is not None)))
        assert st2 in ACL_STATUSES | {aclnn.ACL_ERROR_RT_PARAM_INVALID, aclnn.ACL_ERROR_INVALID_PARAM}, st2
        if st2 != 0:
            unchanged(snaps)
            TALLY["aclnn"][f"{op}: launch {st2}"] += 1
            return
    else:
        ws = aclnn.aclrtMalloc(ws_size)[0] if ws_size else None
        st2 = phase2(ws, ws_size, ex, None)
        assert st2 == 0, aclnn.aclGetRecentErrMsg()
    assert aclnn.aclrtSynchronizeStream(None) == 0
    # a second launch of the same executor is refused and writes nothing
    again = snapshot(x, out)
    assert phase2(None, ws_size, ex, None) != 0
    unchanged(again)
    before = {id(a): b for a, b in snaps}
    s32 = sc.to_float() if op in ("LeakyRelu", "InplaceLeakyRelu", "LeakyReluBackward") else None
    xb = before[id(x)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if op in ("LeakyRelu", "InplaceLeakyRelu"):
            dst = x if op == "InplaceLeakyRelu" else out
            exp = _core.leaky_relu_impl(xb, s32, np.empty(dst.shape, dst.dtype), slope_dtype=np.float32)
            assert_same(dst, exp)
        elif op == "LeakyReluBackward":
            exp = _core.leaky_relu_backward_impl(before[id(g)], xb, s32, bool(res), np.empty(out.shape, out.dtype),
                                                 slope_dtype=np.float32)
            assert_same(out, exp)
        elif op == "Prelu":
            wb = before[id(w)]
            pd = np.dtype(_core.result_dtype(xb.dtype, wb.dtype))
            w1 = wb.astype(pd).reshape(-1 if wb.size != 1 else ())
            exp = _core.prelu_impl(xb.astype(pd), w1, 1 if (wb.size != 1 and xb.ndim > 1) else -1,
                                   np.empty(out.shape, out.dtype))
            assert_same(out, exp)
        else:
            wb = before[id(w)]
            axis = 1 if (wb.size != 1 and xb.ndim > 1) else -1
            egi, egw = _core.prelu_backward_impl(before[id(g)], xb, wb.reshape(-1 if wb.size != 1 else ()), axis)
            if xb.size:
                assert_same(out, egi)
                assert_same(gw.reshape(-1), egw.reshape(-1))
    TALLY["aclnn"][f"{op}: ok"] += 1


@HOSTILE
@given(st.data())
def test_aclnn_object_constructors_and_runtime_never_raise(data):
    """aclCreateTensor/aclCreateScalar/aclrt* with hostile arguments return None or a status."""
    fn = data.draw(st.sampled_from(["tensor", "scalar", "malloc", "memcpy", "stream", "destroy"]))
    arg = lambda good: good_or(data, good, JUNK, 2)
    if fn == "tensor":
        ptr, _ = aclnn.aclrtMalloc(64)
        r = aclnn.aclCreateTensor(arg([2, 3]), arg(aclnn.ACL_FLOAT), arg([3, 1]), arg(0), arg(aclnn.ACL_FORMAT_ND),
                                  arg([6]), arg(ptr))
        assert r is None or isinstance(r, aclnn.aclTensor)
    elif fn == "scalar":
        value = data.draw(st.one_of(SCALARS, JUNK))
        r = aclnn.aclCreateScalar(value, data.draw(st.sampled_from(ACL_SCALAR_TYPES)))
        assert r is None or isinstance(r, aclnn.aclScalar)
    elif fn == "malloc":
        _, r = aclnn.aclrtMalloc(arg(64), arg(aclnn.ACL_MEM_MALLOC_HUGE_FIRST))
        assert isinstance(r, int)
    elif fn == "memcpy":
        ptr, _ = aclnn.aclrtMalloc(64)
        host = np.zeros(16, np.float32)
        r = aclnn.aclrtMemcpy(arg(ptr), arg(64), arg(host), arg(64), arg(aclnn.ACL_MEMCPY_HOST_TO_DEVICE))
        assert isinstance(r, int)
    elif fn == "stream":
        r = aclnn.aclrtSynchronizeStream(data.draw(JUNK.filter(lambda v: v is not None)))
        assert isinstance(r, int) and r != 0
    else:
        r = (aclnn.aclDestroyTensor(data.draw(JUNK)), aclnn.aclDestroyScalar(data.draw(JUNK)),
             aclnn.aclrtFree(data.draw(JUNK)))
        assert all(isinstance(v, int) for v in r)
    TALLY["aclnn-objects"][f"{fn}: {'None' if r is None else type(r).__name__}"] += 1


def test_aclnn_create_scalar_of_a_ragged_list_returns_none():
    assert aclnn.aclCreateScalar([[1.0], [1.0, 2.0]], aclnn.ACL_FLOAT) is None
    assert "aclCreateScalar" in aclnn.aclGetRecentErrMsg()


# ================================================================== Ascend C
from leakyops import ascendc as ac

ASCENDC_ERRORS = (ac.AscendCError,)  # AscendCTypeError is a TypeError, ConstraintError a ValueError
UINT64_MAX = (1 << 64) - 1


@HOSTILE
@given(st.data())
def test_ascendc_leaky_relu_hostile(data):
    dt = data.draw(st.sampled_from([ac.half, ac.float32]))
    lanes = 128 if np.dtype(dt).itemsize == 2 else 64
    with ac.AICore() as core:
        alloc = ac.LocalMemAllocator()
        a, b = alloc.Alloc(dt, 1024, ac.TPosition.VECIN), alloc.Alloc(dt, 1024, ac.TPosition.VECOUT)
        other = alloc.Alloc(ac.int16_t if dt is ac.half else ac.int32_t, 256)
        rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
        a.numpy()[:] = _values(rng, 1024, np.dtype(dt))
        b.numpy()[:] = _values(rng, 1024, np.dtype(dt))
        per_block = 32 // np.dtype(dt).itemsize
        weird = st.one_of(st.sampled_from([a, b, a[per_block:], b[1:], other, b[:64], a[:0], "dst"]), JUNK)
        src = good_or(data, a, weird, 5)
        dst = good_or(data, b, weird, 5)
        if isinstance(dst, str) and dst == "dst":
            dst = src  # in place (a complete overlap is allowed)
        if isinstance(src, str) and src == "dst":
            src = a[per_block:] if dst is a else a  # a partial overlap when dst is a
        scalar = good_or(data, data.draw(st.floats(-4, 4)), SCALARS, 5)
        form = data.draw(st.sampled_from(["count", "continuous", "bitwise", "setmask"]))
        bad_int = st.one_of(st.integers(-5, 5000), st.integers(2 ** 63, 2 ** 70), JUNK, st.floats(0, 10), st.booleans())
        if form == "count":
            args = (good_or(data, data.draw(st.integers(0, 1024)), bad_int, 5),)
        else:
            reps = good_or(data, data.draw(st.integers(0, 1024 // lanes)), st.one_of(st.integers(255, 300), bad_int), 5)
            params = good_or(data, ac.UnaryRepeatParams(1, 1, 8, 8),
                             st.one_of(st.tuples(*[st.integers(-1, 300)] * 4), JUNK, st.just((1, 1, 8))), 5)
            if form == "continuous":
                mask = good_or(data, data.draw(st.integers(0, lanes)), bad_int, 5)
            else:
                mask = good_or(data, [data.draw(st.integers(0, UINT64_MAX)), data.draw(st.integers(0, UINT64_MAX))],
                               st.one_of(st.lists(st.integers(-1, 2 ** 65), max_size=3), JUNK), 5)
            if form == "setmask":
                ac.SetVectorMask(0, data.draw(st.integers(0, UINT64_MAX)), dtype=dt)
                args, kw = (ac.MASK_PLACEHOLDER, reps, params), {"isSetMask": False}
            else:
                args, kw = (mask, reps, params), {}
        kw = kw if form != "count" else {}
        ub_before = core.ub.data.copy()
        try:
            ac.LeakyRelu(dst, src, scalar, *args, **kw)
        except ASCENDC_ERRORS as exc:
            assert core.ub.data.tobytes() == ub_before.tobytes(), f"UB written before {exc!r}"
            TALLY["ascendc"][f"{form}: {type(exc).__name__}"] += 1
            return
        # accepted: nothing outside dst changed, and dst holds old values or the right ones
        lo, hi = dst.GetPhyAddr(), dst.GetPhyAddr() + dst.GetLength()
        after = core.ub.data
        assert after[:lo].tobytes() == ub_before[:lo].tobytes() and after[hi:].tobytes() == ub_before[hi:].tobytes()
        old_dst = ub_before[lo:hi].view(dst.dtype)
        s0, s1 = src.GetPhyAddr(), src.GetPhyAddr() + src.GetLength()
        old_src = ub_before[s0:s1].view(src.dtype)
        ref, err = core_ref(_core.leaky_relu_impl, old_src, scalar, compare=">=", slope_dtype="storage")
        assert err is None, f"LeakyRelu accepted a scalar the core rejects: {scalar!r}: {err!r}"
        new = dst.numpy()
        if form == "count":
            n = int(args[0])
            assert_same(new[:n], ref[:n])
            assert new[n:].tobytes() == old_dst[n:].tobytes()
        elif isinstance(params, ac.UnaryRepeatParams) or tuple(params) == (1, 1, 8, 8):
            m = min(new.size, ref.size)
            same_old = new.view(f"u{new.itemsize}") == old_dst.view(f"u{new.itemsize}")
            same_ref = np.zeros_like(same_old)
            same_ref[:m] = (new[:m].view(f"u{new.itemsize}") == ref[:m].view(f"u{new.itemsize}")) | (
                np.isnan(new[:m].astype(np.float32)) & np.isnan(ref[:m].astype(np.float32)))
            assert (same_old | same_ref).all()
        TALLY["ascendc"][f"{form}: ok"] += 1


# ================================================================== oneDNN Graph
from leakyops import onednn as dg

ONEDNN_ERRORS = (dg.Error,)
DG_TYPES = {np.dtype(np.float32): dg.DataType.f32, BF16: dg.DataType.bf16, np.dtype(np.float16): dg.DataType.f16}


def _lt(tid, dt, shape):
    return dg.LogicalTensor(tid, dt, shape)


@HOSTILE
@given(st.data())
def test_onednn_graph_build_compile_execute_hostile(data):
    op_kind = data.draw(st.sampled_from(["LeakyReLU", "PReLU", "PReLUBackward"]))
    npdt = data.draw(st.sampled_from(list(DG_TYPES)))
    dt = good_or(data, DG_TYPES[npdt], st.one_of(st.sampled_from(list(dg.DataType)), JUNK), 8)
    shape = good_or(data, tuple(data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))),
                    st.one_of(JUNK, st.lists(st.integers(-3, 3), max_size=3)), 8)
    eng = dg.Engine(dg.EngineKind.cpu, 0)
    stage = "build"
    outputs = []
    try:
        src = _lt(0, dt, shape)
        shape = tuple(src.get_dims())  # an int n is taken as the shape (n,)
        dst = dg.LogicalTensor(1, dt, shape)
        rank = len(shape)
        c = (shape[1] if rank >= 2 else shape[0]) if rank else 1
        fmt = good_or(data, "NCX", st.one_of(st.just("NXC"), JUNK), 6)
        ncx = isinstance(fmt, str) and fmt == "NCX"
        slope_shape = (c if ncx else shape[-1],) if rank else (1,)
        slope = _lt(2, dt, good_or(data, slope_shape, st.one_of(JUNK, st.just((1,))), 8))
        if op_kind == "LeakyReLU":
            op = dg.Op(0, dg.OpKind.LeakyReLU, "lrelu", [src], [dst])
            alpha = good_or(data, data.draw(st.floats(-3, 3, width=32)), SCALARS, 4)
            if data.draw(st.integers(0, 9)):
                op.set_attr(dg.OpAttr.alpha, alpha)
            ins, outs = [src], [dst]
        elif op_kind == "PReLU":
            op = dg.Op(0, dg.OpKind.PReLU, "prelu", [src, slope], [dst])
            op.set_attr(dg.OpAttr.data_format, fmt)
            ins, outs = [src, slope], [dst]
        else:
            ddst = dg.LogicalTensor(3, dt, shape)
            dslope = dg.LogicalTensor(4, dt, slope.get_dims() if hasattr(slope, "get_dims") else slope_shape)
            op = dg.Op(0, dg.OpKind.PReLUBackward, "prelu_bwd", [src, slope, ddst], [dst, dslope])
            op.set_attr(dg.OpAttr.data_format, fmt)
            ins, outs = [src, slope, ddst], [dst, dslope]
        g = dg.Graph(dg.EngineKind.cpu)
        g.add_op(op)
        g.finalize()
        stage = "compile"
        (part,) = g.get_partitions()
        cp = part.compile(ins, outs, eng)
        stage = "execute"
        rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
        arrays_in = []
        def dims(lt):
            d = tuple(cp.query_logical_tensor(lt.get_id()).get_dims())
            return d if np.prod(d, dtype=float) < 1e6 else (2,)  # huge dims: a too-small buffer

        for lt in ins:
            good = _values(rng, dims(lt), npdt)
            arrays_in.append(good_or(data, good, np_arrays(None, None), 8))
        for lt in outs:
            good = np.full(dims(lt), 7, npdt)
            bad = st.one_of(np_arrays(None, None), st.just(arrays_in[0]))  # read-only, or the input itself
            outputs.append(good_or(data, good, bad, 8))
        snaps = snapshot(*outputs)
        before_in = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in arrays_in]
        stream = dg.Stream(eng)
        t_in = [dg.Tensor(cp.query_logical_tensor(lt.get_id()), eng, a) for lt, a in zip(ins, arrays_in)]
        t_out = [dg.Tensor(cp.query_logical_tensor(lt.get_id()), eng, a) for lt, a in zip(outs, outputs)]
        try:
            cp.execute(stream, t_in, t_out)
        except ONEDNN_ERRORS:
            unchanged(snaps)
            raise
    except ONEDNN_ERRORS as exc:
        TALLY["onednn"][f"{op_kind} {stage}: {exc.status.name}"] += 1
        return
        return
    # executed: compare with the core under the rule of the kernel the compiled partition
    # models (its compare= value, the slope as the front-end passes it), on the inputs as the
    # compiled logical tensors see their buffers
    x, *rest = [dg.Tensor(cp.query_logical_tensor(lt.get_id()), eng, b).to_numpy() for lt, b in zip(ins, before_in)]
    got = [t.to_numpy() for t in t_out]
    if op_kind == "LeakyReLU":
        with np.errstate(over="ignore"):  # alpha as oneDNN stores it: the core's slope rule, in f32
            a32 = np.float32(leakyops._core.slope_value(alpha, "ref", "alpha"))
        if a32 == 0:  # the library's max(src, +0) (the core's "dnnl-eltwise" rule, tested in tests/onednn)
            TALLY["onednn"][f"{op_kind}: ok (alpha 0)"] += 1
            with np.errstate(invalid="ignore"):
                assert_same(got[0], np.where(x > 0, x, np.zeros_like(x)))
            return
        assert_same(got[0], _core.leaky_relu_impl(x, a32, compare="dnnl-eltwise"))
    else:
        from leakyops.onednn._ops import _slope_arg

        rule = cp._plan.compare
        w, axis = _slope_arg(rest[0], cp._plan.slope_shape)
        if op_kind == "PReLU":
            assert_same(got[0], _core.prelu_impl(x, w, axis, compare=rule))
        else:
            egi, egw = _core.prelu_backward_impl(rest[1], x, w, axis, compare=rule)
            egw = egw.reshape(rest[0].shape)
            assert_same(got[0], egi)
            assert_same(got[1], egw)
    TALLY["onednn"][f"{op_kind}: ok"] += 1


def test_onednn_buffer_ending_in_a_partial_element_is_read_as_raw_memory():
    eng = dg.Engine(dg.EngineKind.cpu, 0)
    src, dst = dg.LogicalTensor(0, dg.DataType.f32, (3,)), dg.LogicalTensor(1, dg.DataType.f32, (3,))
    op = dg.Op(0, dg.OpKind.LeakyReLU, "lrelu", [src], [dst])
    op.set_attr(dg.OpAttr.alpha, 0.5)
    g = dg.Graph(dg.EngineKind.cpu)
    g.add_op(op)
    g.finalize()
    cp = g.get_partitions()[0].compile([src], [dst], eng)
    out = np.zeros(3, np.float32)
    buf = np.arange(-3, 4, dtype=np.int16)  # 14 bytes: three f32 elements and a partial one
    cp.execute(dg.Stream(eng), [dg.Tensor(src, eng, buf)], [dg.Tensor(dst, eng, out)])
    # a handle is raw memory (void* in C): the op reads the bytes the tensor spans
    expected = leakyops.leaky_relu(buf.view(np.uint8)[:12].view(np.float32), 0.5)
    assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))


def _leaky_graph(alpha):
    src, dst = dg.LogicalTensor(0, dg.DataType.f32, (2,)), dg.LogicalTensor(1, dg.DataType.f32, (2,))
    op = dg.Op(0, dg.OpKind.LeakyReLU, "lrelu", [src], [dst])
    op.set_attr(dg.OpAttr.alpha, alpha)
    g = dg.Graph(dg.EngineKind.cpu)
    g.add_op(op)
    return g


def test_onednn_alpha_int_beyond_float_range_rounds_to_inf():
    # the core's slope rule: an int beyond float range rounds to ±inf, like any f32 overflow
    g = _leaky_graph(10 ** 400)
    g.finalize()
    assert len(g.get_partitions()) == 1


def test_onednn_alpha_beyond_f32_range_rounds_to_inf_silently():
    g = _leaky_graph(1e300)
    g.finalize()
    eng = dg.Engine(dg.EngineKind.cpu, 0)
    src, dst = dg.LogicalTensor(0, dg.DataType.f32, (2,)), dg.LogicalTensor(1, dg.DataType.f32, (2,))
    cp = g.get_partitions()[0].compile([src], [dst], eng)
    out = np.zeros(2, np.float32)
    cp.execute(dg.Stream(eng), [dg.Tensor(src, eng, np.array([-1.0, 1.0], np.float32))], [dg.Tensor(dst, eng, out)])
    assert out.tolist() == [-np.inf, 1.0]


def test_onednn_logical_tensor_with_an_object_shape_is_invalid_arguments():
    with pytest.raises(dg.Error) as info:
        dg.LogicalTensor(0, dg.DataType.f32, object())
    assert info.value.status == dg.Status.invalid_arguments


# ================================================================== Dask
try:
    import dask.array as da

    import leakyops.dask as lod
except ImportError:
    da = lod = None
needs_dask = pytest.mark.skipif(da is None, reason="Dask is not installed")

DASK = settings(HOSTILE, max_examples=100)


def _dask_or_raw(data, a):
    """The array as a chunked dask array, or as it is (the functions take array-likes)."""
    if isinstance(a, np.ndarray) and data.draw(st.booleans()):
        chunks = tuple(max(1, n // 2) for n in a.shape)
        return da.from_array(a, chunks=chunks)
    return a


@needs_dask
@DASK
@given(st.data())
def test_dask_front_end_hostile(data):
    op = data.draw(st.sampled_from(["leaky_relu", "leaky_relu_", "leaky_relu_backward", "prelu",
                                    "prelu_backward"]))
    shape = tuple(data.draw(st.lists(st.integers(0, 4), max_size=4)))
    fdt = data.draw(st.sampled_from(FLOATS))
    arr = lambda shp=shape: good_or(data, data.draw(np_arrays([fdt], shp)),
                                    st.one_of(JUNK, np_arrays(None, None)), 4)
    x = arr()
    s = good_or(data, data.draw(st.floats(-3, 3)), SCALARS, 4)
    kw = {}
    if op in ("leaky_relu", "leaky_relu_"):
        args = (x, s)
        core_fn = leakyops.leaky_relu
    elif op == "leaky_relu_backward":
        args = (arr(), x, s, good_or(data, data.draw(st.booleans()), JUNK, 4))
        core_fn = leakyops.leaky_relu_backward
    else:
        c = shape[1] if len(shape) >= 2 else 1
        w = arr((data.draw(st.sampled_from([c, 1])),))
        kw = {"axis": good_or(data, 1 if len(shape) >= 2 else -1,
                              st.one_of(st.integers(-6, 6), st.integers(2 ** 63, 2 ** 64), JUNK), 4)}
        args = (arr(), x, w) if op == "prelu_backward" else (x, w)
        core_fn = getattr(leakyops, op)
    snaps = snapshot(*args)
    lazy_args = tuple(_dask_or_raw(data, a) for a in args)
    try:
        result = getattr(lod, op)(*lazy_args, **kw)
    except (TypeError, ValueError) as exc:
        unchanged(snaps)
        TALLY["dask"][f"{op}: {type(exc).__name__}"] += 1
        return
    expected, err = core_ref(core_fn, *args, **kw)
    assert err is None, f"{op}: leakyops.dask accepted what the core rejects: {err!r}"
    import dask
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = dask.compute(*(result if isinstance(result, tuple) else (result,)), scheduler="sync")
    unchanged(snaps)  # inputs are never written (leaky_relu_ returns a new array)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert_same(got[0], expected[0])
    if len(got) == 2:  # grad_weight: dask sums float64 block partials, the core its own way
        np.testing.assert_allclose(got[1].astype(np.float64), expected[1].astype(np.float64),
                                   rtol=1e-2 if got[1].dtype.itemsize == 2 else 1e-6, atol=0)
        assert got[1].dtype == expected[1].dtype and got[1].shape == expected[1].shape
    TALLY["dask"][f"{op}: ok"] += 1


@needs_dask
def test_dask_grad_weight_inf_minus_inf_does_not_warn():
    import dask
    x = np.array([[[-np.inf]], [[-np.inf]]], np.float32)
    g = np.array([[[1.0]], [[-1.0]]], np.float32)
    w = np.ones(1, np.float32)
    assert np.isnan(leakyops.prelu_backward(g, x, w)[1]).all()  # the core: NaN, no warning
    _, gw = lod.prelu_backward(da.from_array(g, chunks=1), da.from_array(x, chunks=1), w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(dask.compute(gw, scheduler="sync")[0]).all()


@needs_dask
@pytest.mark.parametrize("bad", [[10 ** 30], np.array([1.0, None], dtype=object)], ids=["huge-int-list", "object-array"])
def test_dask_object_input_is_a_type_error(bad):
    with pytest.raises(TypeError, match="leaky_relu"):
        lod.leaky_relu(bad, 0.1)


@needs_torch
def test_torch_self_is_result_rule_holds_for_empty_tensors():
    # found by test_torch_front_end_hostile in CI: empty tensors skipped the core and its check
    e = torch.empty(0, dtype=torch.float16)
    for slope in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="self_is_result=True needs negative_slope >= 0"):
            lt.leaky_relu_backward(e, e, slope, True)
    assert lt.leaky_relu_backward(e, e, 0.0, True).shape == (0,)
