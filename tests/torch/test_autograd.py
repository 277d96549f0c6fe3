"""torch.library.opcheck on every operator, gradcheck / gradgradcheck in
float64, and the in-place autograd path."""

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F
from torch.autograd import gradcheck, gradgradcheck

import leakyops.torch as lt

ops = torch.ops.leakyops


def rand(*shape, dtype=torch.float32, grad=True, channels_last=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    if channels_last:
        t = t.to(memory_format=torch.channels_last)
    return t.requires_grad_(grad)


def opcheck_cases():
    bf16, f64 = torch.bfloat16, torch.float64
    yield "leaky_relu", ops.leaky_relu.default, (rand(3, 4), 0.1)
    yield "leaky_relu_cl_bf16", ops.leaky_relu.default, (
        rand(2, 3, 4, 5, dtype=bf16, channels_last=True), -0.5)
    yield "leaky_relu_noncontig", ops.leaky_relu.default, (rand(4, 6, grad=False)[:, ::2].requires_grad_(), 2.0)
    yield "leaky_relu_", ops.leaky_relu_.default, (rand(3, 4, grad=False), 0.1)
    yield "leaky_relu_backward", ops.leaky_relu_backward.default, (
        rand(3, 4), rand(3, 4, seed=1), 0.1, False)
    yield "leaky_relu_backward_result", ops.leaky_relu_backward.default, (
        rand(3, 4, dtype=f64), rand(3, 4, dtype=f64, seed=1), 0.3, True)
    yield "leaky_relu_backward_broadcast", ops.leaky_relu_backward.default, (
        rand(2, 3, 4), rand(4, seed=1), 0.1, False)
    yield "prelu_channels", ops.prelu.default, (rand(2, 3, 4), rand(3, seed=1))
    yield "prelu_shared_cl", ops.prelu.default, (
        rand(2, 3, 4, 5, channels_last=True), rand(1, seed=1))
    yield "prelu_1d_0dweight", ops.prelu.default, (rand(5, dtype=f64), rand(dtype=f64, seed=2))


CASES = list(opcheck_cases())


@pytest.mark.parametrize("op,args", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_opcheck(op, args):
    torch.library.opcheck(op, args)


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
def test_opcheck_prelu_backward(channels_last):
    args = (rand(2, 3, 4, 5, grad=False), rand(2, 3, 4, 5, seed=1, grad=False,
                                               channels_last=channels_last),
            rand(3, seed=2, grad=False))
    torch.library.opcheck(ops.prelu_backward.default, args)
    # with gradients required: everything but differentiating through it
    # (prelu's double backward is not implemented, see test below)
    args = tuple(a.clone().requires_grad_() for a in args)
    torch.library.opcheck(ops.prelu_backward.default, args,
                          test_utils=("test_schema", "test_autograd_registration",
                                      "test_faketensor"))


@pytest.mark.parametrize("slope", [0.01, 0.0, -0.7, 1.5])
def test_gradcheck_and_gradgradcheck_leaky_relu(slope):
    x = rand(3, 5, dtype=torch.float64)
    # keep away from the kink at 0, where finite differences are meaningless
    with torch.no_grad():
        x += torch.sign(x) * 0.1
    fn = lambda t: lt.leaky_relu(t, slope)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_gradcheck_and_gradgradcheck_leaky_relu_backward():
    g = rand(2, 3, 4, dtype=torch.float64)
    x = rand(3, 4, dtype=torch.float64, seed=1, grad=False)  # broadcast
    fn = lambda gg: lt.leaky_relu_backward(gg, x, 0.2)
    assert gradcheck(fn, (g,))
    assert gradgradcheck(fn, (g,))


def test_gradcheck_inplace():
    x = rand(4, 3, dtype=torch.float64)
    with torch.no_grad():
        x += torch.sign(x) * 0.1

    def fn(t):
        return lt.leaky_relu(t * 1.0, 0.3, inplace=True)  # not on the leaf

    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("shape,wn", [((2, 3, 4), 3), ((2, 3, 4), 1), ((5,), 1), ((), 1)])
def test_gradcheck_prelu(shape, wn):
    x = rand(*shape, dtype=torch.float64)
    with torch.no_grad():
        x += torch.sign(x) * 0.1
    w = rand(wn, dtype=torch.float64, seed=3)
    assert gradcheck(lt.prelu, (x, w))


def test_double_backward_equals_pytorch():
    x = rand(4, 5, dtype=torch.float64)
    results = []
    for fn in (lt.leaky_relu, F.leaky_relu):
        xx = x.detach().clone().requires_grad_()
        y = fn(xx, 0.2)
        (g,) = torch.autograd.grad(y, xx, torch.ones_like(y) * 3, create_graph=True)
        (gg,) = torch.autograd.grad((g * g).sum(), xx, allow_unused=True, materialize_grads=True)
        results.append((g.detach(), gg))
    assert torch.equal(results[0][0], results[1][0])
    assert torch.equal(results[0][1], results[1][1])  # zero: the mask has no gradient


def test_inplace_backward_uses_the_result_and_matches_pytorch():
    x = rand(6, 7)
    grads = []
    for fn in (lt.leaky_relu_, F.leaky_relu_):
        xx = x.detach().clone().requires_grad_()
        h = xx * 2.0
        out = fn(h, 0.1)
        assert out is h and h.grad_fn is not None
        assert "LeakyReLUInplace" in type(h.grad_fn).__name__ or fn is F.leaky_relu_
        out.sum().backward()
        grads.append(xx.grad)
    assert torch.equal(grads[0], grads[1])


def test_inplace_backward_with_negative_slope_raises_like_pytorch():
    x = rand(5)
    h = x * 1.0
    lt.leaky_relu_(h, -0.1)
    with pytest.raises(ValueError, match="self_is_result"):
        h.sum().backward()
    h2 = x * 1.0
    F.leaky_relu_(h2, -0.1)
    with pytest.raises(RuntimeError, match="negative slope"):
        h2.sum().backward()


def test_inplace_then_use_of_a_saved_input_is_detected():
    a = rand(4)
    b = a * 1.0
    c = b * b  # saves b
    lt.leaky_relu_(b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_inplace_without_grad_takes_the_plain_path():
    x = rand(4)
    with torch.no_grad():
        h = x * 1.0
        assert lt.leaky_relu_(h) is h
        assert h.grad_fn is None


def test_prelu_double_backward_is_a_clear_error():
    x, w = rand(2, 3, 4), rand(3, seed=1)
    y = lt.prelu(x, w)
    (gx,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match="double backward"):
        gx.sum().backward()


def test_grad_modes_and_needs_input_grad():
    x = rand(2, 3, 4)
    w = rand(3, seed=1, grad=False)
    lt.prelu(x, w).sum().backward()
    assert x.grad is not None and w.grad is None
    with torch.inference_mode():
        y = lt.leaky_relu(torch.randn(3))
        assert not y.requires_grad
