"""aclnnPreluBackward with the ``Ascend950`` SoC profile: ``gradWeight`` as Ascend 950's pipeline
computes it (PReluGradUpdate's ``update`` rounded to the tensor's dtype per element, then
PReluGradReduce's float32 sum cast back with round-to-nearest-even), ``gradInput`` the core's;
the other profiles keep the core's ``gradWeight``."""

from __future__ import annotations

import importlib.util
import sys
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from leakyops import _core, aclnn

ROOT = Path(__file__).resolve().parents[2]
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [pytest.param(np.dtype(np.float16), id="half"), pytest.param(BF16, id="bf16"),
          pytest.param(np.dtype(np.float32), id="float")]
_FMT = {np.dtype(np.float16): (11, -14), BF16: (8, -126), np.dtype(np.float32): (24, -126)}


def _round(v: Fraction, dtype) -> float:
    """Round the exact ``v`` to nearest-even in ``dtype`` (finite, normal or subnormal)."""
    if v == 0:
        return 0.0
    p, emin = _FMT[np.dtype(dtype)]
    a = abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    q = max(e, emin) - (p - 1)
    s = a / Fraction(2) ** q
    t = s.numerator // s.denominator
    rem = s - t
    t += rem > Fraction(1, 2) or (rem == Fraction(1, 2) and t % 2 == 1)
    return float(t * Fraction(2) ** q) * (1 if v > 0 else -1)


def _reference(g, x, per_channel):
    """Independent of the emulation: each term rounded to T, the exact sum rounded to float32,
    then to T."""
    g = np.broadcast_to(g, x.shape)
    xs = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1]) if per_channel else x.reshape(-1, 1)
    gs = np.moveaxis(g, 1, -1).reshape(-1, g.shape[1]) if per_channel else g.reshape(-1, 1)
    out = []
    for c in range(xs.shape[1]):
        total = Fraction(0)
        for a, b in zip(xs[:, c], gs[:, c]):
            if float(a) > 0:
                continue
            total += Fraction(_round(Fraction(float(a)) * Fraction(float(b)), x.dtype))
        out.append(_round(Fraction(_round(total, np.float32)), x.dtype))
    return np.array(out, np.float64)


@pytest.fixture
def backward(h, stream):
    """aclnnPreluBackward through both phases; returns (gradInput, gradWeight) as host arrays."""
    return lambda g, x, w: _prelu_backward(h, g, x, w, stream)


def _prelu_backward(h, g, x, w, stream):
    gi = np.full(x.shape, 7, x.dtype)
    gw = np.full(w.shape, 7, w.dtype)
    tensors = [h.device_tensor(a) for a in (g, x, w, gi, gw)]
    st = h.run(aclnn.aclnnPreluBackwardGetWorkspaceSize, aclnn.aclnnPreluBackward,
               *(t for _, t in tensors), stream=stream)
    assert st == (0, 0, 0), aclnn.aclGetRecentErrMsg()
    outs = []
    for (ptr, _), host in zip(tensors[3:], (gi, gw)):
        assert aclnn.aclrtMemcpy(host, host.nbytes, ptr, host.nbytes, aclnn.ACL_MEMCPY_DEVICE_TO_HOST) == 0
        outs.append(host)
    return outs


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,wshape", [((3, 4, 9), (4,)), ((5, 3), (3,)), ((2, 3, 2, 2), (1, 3, 1, 1)),
                                          ((6, 2, 5), (1,)), ((40,), (1,))])
def test_ascend950_grad_weight_is_the_pipelines(backward, dtype, shape, wshape):
    aclnn.set_soc_version("Ascend950")
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3).astype(np.float32).astype(dtype)
    g = (rng.standard_normal(shape) * 3).astype(np.float32).astype(dtype)
    w = rng.standard_normal(wshape).astype(np.float32).astype(dtype)
    gi, gw = backward(g, x, w)
    per_channel = w.size != 1
    want_gi, _ = _core.prelu_backward_impl(g, x, w.reshape(-1) if per_channel else w.reshape(()),
                                           1 if per_channel and x.ndim > 1 else -1)
    assert np.array_equal(gi.view(f"u{x.itemsize}"), want_gi.view(f"u{x.itemsize}"))
    assert gw.shape == wshape
    assert np.array_equal(gw.reshape(-1).astype(np.float64), _reference(g, x, per_channel))


def test_ascend950_differs_from_the_core_where_terms_round(backward):
    # three terms x*g = 1 + 2**-11 - 2**-21 each round to half 1.0, so the 950 sum is 3.0; the
    # exact sum, 3.0015 and a bit, rounds to 3.001953125 (the core's)
    x = np.full((3, 1), -(1 + 2**-10), np.float16)
    g = np.full((3, 1), -(1 - 2**-11), np.float16)
    w = np.array([0.5], np.float16)
    aclnn.set_soc_version("Ascend950")
    _, gw950 = backward(g, x, w)
    aclnn.set_soc_version("Ascend910B")
    _, gw910b = backward(g, x, w)
    assert gw950.tolist() == [3.0] and gw910b.tolist() == [3.001953125]
    assert gw910b.tolist() == _core.prelu_backward_impl(g, x, w.reshape(()))[1].reshape(1).tolist()


@pytest.mark.parametrize("soc", ["Ascend910", "Ascend910B", "Ascend910_93"])
def test_other_socs_keep_the_cores_grad_weight(backward, soc):
    aclnn.set_soc_version(soc)
    x = np.full((3, 1), -(1 + 2**-10), np.float16)
    g = np.full((3, 1), -(1 - 2**-11), np.float16)
    _, gw = backward(g, x, np.array([0.5], np.float16))
    assert gw.tolist() == [3.001953125]


def test_ascend950_special_values_and_broadcast_grad(backward):
    aclnn.set_soc_version("Ascend950")
    x = np.array([[[-1.0, np.nan], [2.0, -0.0]], [[np.inf, -np.inf], [-3.0, 1.0]]], np.float16)
    g = np.array([[[1.0], [2.0]]], np.float16)                    # (1, 2, 1) broadcast
    gi, gw = backward(g, x, np.array([0.25, 0.5], np.float16))
    assert np.isnan(gw[0]) and gw[1] == -6.0                       # NaN term; -0*2 + -3*2
    want_gi, _ = _core.prelu_backward_impl(g, x, np.array([0.25, 0.5], np.float16), 1)
    assert np.array_equal(gi.view(np.uint16), want_gi.view(np.uint16))


def test_ascend950_vendor_example_and_empty(backward):
    aclnn.set_soc_version("Ascend950")
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    gi, gw = backward(np.ones_like(x), x, np.array([0.5, 0.5], np.float32))
    assert gi.reshape(-1).tolist() == [0.5, 1, 1, 1, 1, 1, 1, 1] and gw.tolist() == [0, 0]
    e = np.zeros((0, 2), np.float16)
    gi, gw = backward(e, e, np.array([1.0, 2.0], np.float16))
    assert gw.tolist() == [7.0, 7.0]                               # nothing written


@pytest.fixture(scope="module")
def table_tool():
    """tools/ascend950_gradweight_table.py, which makes docs/aclnn.md's measured table."""
    spec = importlib.util.spec_from_file_location("ascend950_gradweight_table",
                                                  ROOT / "tools" / "ascend950_gradweight_table.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_docs_table_rows_are_measured(table_tool, dtype):
    # the L = 64 rows of docs/aclnn.md's table, re-derived by the script that prints it
    doc = (ROOT / "docs" / "aclnn.md").read_text(encoding="utf-8")
    m = table_tool.measure(dtype, 64)
    row = table_tool.format_row(m)
    assert row in doc.splitlines(), f"docs/aclnn.md lacks the measured row {row}"
