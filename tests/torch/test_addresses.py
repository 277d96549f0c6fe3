"""leakyops.torch's element-wise operators and prelu's forward on a tensor's memory
(``_core.rows_at``, ``_core.prelu_at``): plain C-contiguous tensors of a supported dtype go
to the kernels by their addresses (``prelu`` with one shared slope on leaky_relu's rows as
the core runs it, with a slope per channel on the core's prelu kernels), with the NumPy
path's kernels, threads and bits (PyTorch's, here); every other tensor (strided, with the
negative bit, at an address that is not a multiple of its element size, a subclass) takes
the NumPy path as before, with the same results."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import leakyops  # noqa: E402
import leakyops.torch as lt  # noqa: E402
from leakyops import _core  # noqa: E402

F = torch.nn.functional
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
IDS = ["float16", "bfloat16", "float32", "float64"]
#: A small call (one thread) and one past every dtype's threshold of threads.
SIZES = [1001, 3 * 2**20 + 5]


def bits(t):
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def assert_same(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.stride() == expected.stride()
    assert torch.equal(bits(actual), bits(expected))


@pytest.fixture
def calls(monkeypatch):
    """The ``rows_at`` calls made: (operator, what it returned)."""
    made = []
    real = _core.rows_at

    def spy(op, *args):
        done = real(op, *args)
        made.append((op, done))
        return done

    monkeypatch.setattr(_core, "rows_at", spy)
    return made


def data(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g).to(dtype)
    x.view(-1)[::7] = 0.0  # (zeros and a negative zero: the comparison's edge)
    x.view(-1)[3::11] = -0.0
    return x, torch.randn(shape, generator=g).to(dtype)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_plain_tensors_go_by_address_with_pytorchs_bits(calls, dtype, n):
    x, g = data((n,), dtype)
    assert_same(lt.leaky_relu(x, 0.2), F.leaky_relu(x, 0.2))
    y, z = x.clone(), x.clone()
    assert lt.leaky_relu_(y, 0.2) is y
    F.leaky_relu_(z, 0.2)
    assert_same(y, z)
    assert_same(lt.leaky_relu_backward(g, x, 0.2),
                torch.ops.aten.leaky_relu_backward(g, x, 0.2, False))
    assert calls == [("leaky_relu", True), ("leaky_relu_", True), ("leaky_relu_backward", True)]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_modules_and_autograd_go_by_address(calls, dtype):
    x, g = data((4, 8, 33), dtype)
    a = x.clone().requires_grad_()
    y = lt.LeakyReLU(0.1)(a)
    y.backward(g)
    b = x.clone().requires_grad_()
    F.leaky_relu(b, 0.1).backward(g)
    assert_same(y.detach(), F.leaky_relu(x, 0.1))
    assert_same(a.grad, b.grad)
    assert [op for op, _ in calls] == ["leaky_relu", "leaky_relu_backward"]
    assert all(done for _, done in calls)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_prelu_with_one_shared_slope_goes_by_address(calls, dtype):
    x, g = data((4, 8, 33), dtype)
    m = lt.PReLU(1, init=-0.375, dtype=dtype)
    w = m.weight.detach()
    with torch.no_grad():
        assert_same(m(x), F.prelu(x, w))
    assert_same(lt.prelu(x, w.reshape(())), F.prelu(x, w))
    a = x.clone().requires_grad_()
    m(a).backward(g)
    b = x.clone().requires_grad_()
    F.prelu(b, w).backward(g)
    assert_same(a.grad, b.grad)
    assert calls == [("leaky_relu", True)] * 3
    assert_same(lt.prelu(x, torch.full((8,), -0.375, dtype=dtype)), F.prelu(x, w))
    assert len(calls) == 3  # (a slope per channel: prelu_at)


def test_a_parameter_in_place_under_no_grad_goes_by_address(calls):
    x, _ = data((64,), torch.float32)
    p = torch.nn.Parameter(x.clone())
    with torch.no_grad():
        lt.leaky_relu_(p, 0.3)
    assert_same(p.detach(), F.leaky_relu(x, 0.3))
    assert calls == [("leaky_relu_", True)]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_strided_and_negative_bit_tensors_take_the_numpy_path(calls, dtype):
    x, g = data((40, 30), dtype)
    t, gt = x.t(), g.t()  # (strided)
    assert_same(lt.leaky_relu(t, 0.2), F.leaky_relu(t, 0.2))
    assert_same(lt.leaky_relu_backward(gt, t, 0.2),
                torch.ops.aten.leaky_relu_backward(gt, t, 0.2, False))
    y, z = x.clone().t(), x.clone().t()
    lt.leaky_relu_(y, 0.2)
    F.leaky_relu_(z, 0.2)
    assert_same(y, z)
    neg = torch._neg_view(x)  # (memory holding the values negated)
    assert neg.is_neg() and neg.is_contiguous()
    assert_same(lt.leaky_relu(neg, 0.2), F.leaky_relu(neg.resolve_neg(), 0.2))
    assert_same(lt.leaky_relu_backward(g, neg, 0.2),
                torch.ops.aten.leaky_relu_backward(g, neg.resolve_neg(), 0.2, False))
    assert calls == []


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_memory_off_the_element_size_takes_the_numpy_path(calls, dtype):
    x, g = data((100,), dtype)
    size = x.element_size()
    buf = bytearray(size * 102)
    t = torch.frombuffer(buf, dtype=dtype, offset=1, count=100)  # (1 byte past a boundary)
    assert t.is_contiguous() and t.data_ptr() % size == 1
    t.copy_(x)
    assert_same(lt.leaky_relu(t, 0.2), F.leaky_relu(x, 0.2))
    assert_same(lt.leaky_relu_backward(g, t, 0.2),
                torch.ops.aten.leaky_relu_backward(g, x, 0.2, False))
    lt.leaky_relu_(t, 0.2)
    assert_same(t.clone(), F.leaky_relu(x, 0.2))
    assert calls == [("leaky_relu", False), ("leaky_relu_backward", False),
                     ("leaky_relu_", False)]


def test_a_tensor_subclass_takes_the_numpy_path(calls):
    class Tagged(torch.Tensor):
        pass

    x, _ = data((50,), torch.float32)
    t = x.clone().as_subclass(Tagged)
    assert torch.equal(lt.leaky_relu(t, 0.2).as_subclass(torch.Tensor), F.leaky_relu(x, 0.2))
    assert calls == []


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rows_at_refuses_memory_off_the_element_size_and_writes_nothing(dtype):
    dt = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    raw = np.zeros(8 * 40 + 1, np.uint8)
    src = raw[1:1 + 8 * 20].view(np.uint8)  # (1 byte past an aligned address)
    out = np.full(20, 7, dt)
    before = out.copy()
    assert not _core.rows_at("leaky_relu", dt, 10, src.ctypes.data, out.ctypes.data, 0, 0.5)
    assert np.array_equal(out.view(np.uint8), before.view(np.uint8))
    x = np.linspace(-2, 2, 20).astype(dt)
    assert _core.rows_at("leaky_relu", dt, 20, x.ctypes.data, out.ctypes.data, 0, 0.5)
    assert np.array_equal(out.view(np.uint8), leakyops.leaky_relu(x, 0.5).view(np.uint8))


@pytest.fixture
def prelu_calls(monkeypatch):
    """The ``prelu_at`` calls made: (the layout ``(outer, c, inner)``, what it returned)."""
    made = []
    real = _core.prelu_at

    def spy(dt, outer, c, inner, *args):
        done = real(dt, outer, c, inner, *args)
        made.append(((outer, c, inner), done))
        return done

    monkeypatch.setattr(_core, "prelu_at", spy)
    return made


#: A slope per channel in each of the core's layouts, small (one thread) and past every
#: dtype's threshold of threads: channels last (2-D, a slope per element of a row), short
#: rows (over the slopes laid out per element), rows.
PRELU_SHAPES = [(6, 8), (4, 8, 5), (3, 8, 300), (200_001, 16), (65_536, 16, 3),
                (4, 16, 49_157)]


@pytest.mark.parametrize("shape", PRELU_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_prelu_with_a_slope_per_channel_goes_by_address(prelu_calls, dtype, shape):
    x, _ = data(shape, dtype)
    w = torch.linspace(-1.5, 1.25, shape[1]).to(dtype)
    w[3] = -0.0
    assert_same(lt.prelu(x, w), F.prelu(x, w))
    outer = shape[0]
    assert prelu_calls == [((outer, shape[1], x.numel() // (outer * shape[1])), True)]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_prelu_modules_with_a_slope_per_channel_go_by_address(prelu_calls, dtype):
    x, g = data((4, 8, 33), dtype)
    m = lt.PReLU(8, dtype=dtype)
    with torch.no_grad():
        m.weight.copy_(torch.linspace(-0.5, 0.5, 8))
    w = m.weight.detach()
    with torch.no_grad():
        assert_same(m(x), F.prelu(x, w))
    a = x.clone().requires_grad_()
    y = m(a)
    assert_same(y.detach(), F.prelu(x, w))
    y.backward(g)
    b = x.clone().requires_grad_()
    F.prelu(b, w).backward(g)
    assert_same(a.grad, b.grad)
    assert prelu_calls == [((4, 8, 33), True)] * 2


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_prelu_off_the_element_size_or_with_strided_slopes_takes_the_numpy_path(
        prelu_calls, dtype):
    x, _ = data((3, 8, 7), dtype)
    w = torch.linspace(-1.5, 1.25, 8).to(dtype)
    expected = F.prelu(x, w)
    size = x.element_size()
    bx, bw = bytearray(size * (x.numel() + 2)), bytearray(size * 10)
    tx = torch.frombuffer(bx, dtype=dtype, offset=1, count=x.numel()).view(x.shape)
    tw = torch.frombuffer(bw, dtype=dtype, offset=1, count=8)  # (1 byte past a boundary)
    tx.copy_(x), tw.copy_(w)
    assert tx.data_ptr() % size == 1 and tw.data_ptr() % size == 1
    assert_same(lt.prelu(tx, w), expected)
    assert_same(lt.prelu(x, tw), expected)
    assert prelu_calls == [((3, 8, 7), False)] * 2
    wide = torch.stack([w, w], 1).reshape(-1)[::2]  # (strided slopes: never by address)
    assert_same(lt.prelu(x, wide), expected)
    t = x.transpose(0, 2).contiguous().transpose(0, 2)  # (strided input)
    assert_same(lt.prelu(t, w), F.prelu(t, w))
    assert len(prelu_calls) == 2


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_prelu_at_refuses_memory_off_the_element_size_and_writes_nothing(dtype):
    dt = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    raw = np.zeros(8 * 40 + 1, np.uint8)
    src = raw[1:1 + 8 * 24]  # (1 byte past an aligned address)
    w = np.array([0.5, -2.0, 0.25], dt)
    out = np.full((2, 3, 4), 7, dt)
    before = out.copy()
    assert not _core.prelu_at(dt, 2, 3, 4, src.ctypes.data, w.ctypes.data, out.ctypes.data)
    assert np.array_equal(out.view(np.uint8), before.view(np.uint8))
    x = np.linspace(-2, 2, 24).astype(dt).reshape(2, 3, 4)
    assert _core.prelu_at(dt, 2, 3, 4, x.ctypes.data, w.ctypes.data, out.ctypes.data)
    assert np.array_equal(out.view(np.uint8), leakyops.prelu(x, w).view(np.uint8))


#: Channels-last tensors (4-D and 5-D), small and past every dtype's threshold of threads,
#: and shapes whose strides are both C-contiguous and channels last (a channel of one element,
#: or one channel).
CHANNELS_LAST = [((2, 8, 5, 3), torch.channels_last), ((4, 24, 181, 181), torch.channels_last),
                 ((2, 8, 3, 4, 5), torch.channels_last_3d), ((3, 16, 1, 1), torch.channels_last),
                 ((3, 1, 4, 5), torch.channels_last)]


@pytest.mark.parametrize("shape,fmt", CHANNELS_LAST,
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else "")
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_channels_last_tensors_go_by_address_with_pytorchs_bits(calls, prelu_calls, dtype,
                                                                shape, fmt):
    x, g = (t.contiguous(memory_format=fmt) for t in data(shape, dtype))
    assert x.is_contiguous(memory_format=fmt)
    assert_same(lt.leaky_relu(x, 0.2), F.leaky_relu(x, 0.2))
    y, z = x.clone(), x.clone()
    assert y.stride() == x.stride()
    lt.leaky_relu_(y, 0.2)
    F.leaky_relu_(z, 0.2)
    assert_same(y, z)
    assert_same(lt.leaky_relu_backward(g, x, 0.2),
                torch.ops.aten.leaky_relu_backward(g, x, 0.2, False))
    assert_same(lt.prelu(x, torch.tensor([-0.25], dtype=dtype)),
                F.prelu(x, torch.tensor([-0.25], dtype=dtype)))
    assert calls == [("leaky_relu", True), ("leaky_relu_", True), ("leaky_relu_backward", True),
                     ("leaky_relu", True)]
    c = shape[1]
    w = torch.linspace(-1.5, 1.25, c).to(dtype)
    assert_same(lt.prelu(x, w), F.prelu(x, w))
    if c > 1:  # (a channel's elements one apart in memory, or C-contiguous where H = W = 1)
        assert prelu_calls == [((x.numel() // c, c, 1), True)]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_layouts_that_differ_take_the_numpy_path(calls, prelu_calls, dtype):
    x, g = data((3, 8, 5, 7), dtype)
    xc = x.contiguous(memory_format=torch.channels_last)
    # grad_output C-contiguous, x channels last: not one order, the NumPy path decides
    assert_same(lt.leaky_relu_backward(g, xc, 0.2),
                torch.ops.aten.leaky_relu_backward(g, xc, 0.2, False))
    assert calls == []
    p = x.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)  # (dense, no named format)
    assert p.shape == x.shape and not p.is_contiguous()
    assert not p.is_contiguous(memory_format=torch.channels_last)
    w = torch.linspace(-1.5, 1.25, 8).to(dtype)
    assert_same(lt.leaky_relu(p, 0.2), F.leaky_relu(p, 0.2))
    assert_same(lt.prelu(p, w), F.prelu(p, w))
    assert calls == [] and prelu_calls == []


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_channels_last_modules_and_autograd_go_by_address(calls, prelu_calls, dtype):
    x, g = (t.contiguous(memory_format=torch.channels_last) for t in data((4, 8, 6, 5), dtype))
    m = lt.PReLU(8, dtype=dtype)
    with torch.no_grad():
        m.weight.copy_(torch.linspace(-0.5, 0.5, 8))
    w = m.weight.detach()
    for ours, theirs in ((lt.LeakyReLU(0.1), lambda t: F.leaky_relu(t, 0.1)),
                         (m, lambda t: F.prelu(t, w))):
        a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
        y = ours(a)
        assert_same(y.detach(), theirs(x))
        y.backward(g)
        theirs(b).backward(g)
        assert_same(a.grad, b.grad)
    assert calls == [("leaky_relu", True), ("leaky_relu_backward", True)]
    assert prelu_calls == [((4 * 6 * 5, 8, 1), True)]
