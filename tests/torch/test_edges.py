"""leakyops.torch at the edges (docs/torch.md, "Memory and layouts"): tensors with the negative bit set are resolved as
``torch.nn.functional`` resolves them; sparse, mkldnn and nested tensors are a TypeError
naming the function; a slope is rounded once, from its exact value, as PyTorch rounds it."""

import warnings
from fractions import Fraction

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F

import leakyops.torch as lt

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
DTYPE_IDS = ["f16", "bf16", "f32", "f64"]


def negated(values, dtype):
    """A tensor with the negative bit set whose values are ``values`` (a lazily negated view,
    like ``c.conj().imag`` of a complex tensor; ``torch._neg_view`` makes one of any dtype)."""
    t = torch._neg_view(-torch.tensor(values, dtype=dtype))
    assert t.is_neg()
    return t


def assert_same(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(actual.resolve_neg(), expected.resolve_neg()), (actual, expected)


def test_the_imaginary_part_of_a_conjugate():
    x = torch.tensor([1 - 2j, 3 + 4j]).conj().imag
    assert x.is_neg()
    assert_same(lt.leaky_relu(x, 0.5), F.leaky_relu(x, 0.5))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_negative_bit_inputs_give_pytorchs_results(dtype):
    values = [[-2.0, 3.0, -0.0], [0.5, -4.0, 1.0]]
    x = negated(values, dtype)
    plain = torch.tensor(values, dtype=dtype)
    w = negated([0.25, 2.0, -1.0], dtype)
    g = negated([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], dtype)
    assert_same(lt.leaky_relu(x, 0.5), F.leaky_relu(plain, 0.5))
    assert_same(lt.prelu(x, w), F.prelu(plain, w.resolve_neg()))
    assert_same(lt.leaky_relu_backward(g, x, 0.5),
                torch.ops.aten.leaky_relu_backward(g.resolve_neg(), plain, 0.5, False))
    gi, gw = lt.prelu_backward(g, x, w)
    egi, _ = torch.ops.aten._prelu_kernel_backward(g.resolve_neg(), plain, w.resolve_neg())
    assert_same(gi, egi)
    assert_same(gw, lt.prelu_backward(g.resolve_neg(), plain, w.resolve_neg())[1])
    assert_same(lt.LeakyReLU(0.25)(x), F.leaky_relu(plain, 0.25))
    m = lt.PReLU(3, dtype=dtype)
    assert_same(m(x), F.prelu(plain, m.weight.detach()))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_in_place_on_a_negative_bit_tensor_writes_through_the_view(dtype):
    """As ``F.leaky_relu_`` does: the view shows the results, its base holds their negation."""
    base = torch.tensor([2.0, -4.0, 0.5], dtype=dtype)
    x = torch._neg_view(base)                        # values [-2, 4, -0.5]
    expected = F.leaky_relu_(torch._neg_view(base.clone()), 0.5)
    assert lt.leaky_relu_(x, 0.5) is x
    assert_same(x, expected)
    assert base.tolist() == [1.0, -4.0, 0.25]
    y = torch._neg_view(torch.tensor([2.0, -4.0], dtype=dtype))
    assert lt.leaky_relu(y, 0.5, inplace=True) is y and y.tolist() == [-1.0, 4.0]
    z = torch._neg_view(torch.tensor([2.0, -4.0], dtype=dtype))
    lt.LeakyReLU(0.5, inplace=True)(z)
    assert z.tolist() == [-1.0, 4.0]


def test_negative_bit_tensors_with_autograd():
    base = torch.tensor([2.0, -4.0, 0.5])
    x = torch._neg_view(base).requires_grad_()
    y = lt.leaky_relu(x, 0.5)
    y.sum().backward()
    x2 = torch._neg_view(base).requires_grad_()
    F.leaky_relu(x2, 0.5).sum().backward()
    assert_same(x.grad, x2.grad)


def _tensor_of_layout(kind: str):
    dense = torch.tensor([[-1.0, 2.0], [3.0, -4.0]])
    nested = [torch.tensor([-1.0]), torch.tensor([2.0, -3.0])]
    with warnings.catch_warnings():  # (torch warns that some of these layouts are beta)
        warnings.simplefilter("ignore")
        return {"sparse_coo": dense.to_sparse, "sparse_csr": dense.to_sparse_csr,
                "mkldnn": dense.to_mkldnn, "nested": lambda: torch.nested.nested_tensor(nested),
                "jagged": lambda: torch.nested.nested_tensor(nested, layout=torch.jagged)}[kind]()


@pytest.mark.parametrize("kind", ["sparse_coo", "sparse_csr", "mkldnn", "nested", "jagged"])
def test_sparse_mkldnn_and_nested_tensors_are_a_type_error_naming_the_function(kind):
    t = _tensor_of_layout(kind)
    kind = "nested" if kind == "jagged" else kind
    w = torch.tensor([0.25])
    calls = {
        "leaky_relu": lambda: lt.leaky_relu(t, 0.5),
        "leaky_relu_": lambda: lt.leaky_relu_(t, 0.5),
        "leaky_relu_backward": lambda: lt.leaky_relu_backward(t, t, 0.5),
        "prelu": lambda: lt.prelu(t, w),
        "prelu_backward": lambda: lt.prelu_backward(t, t, w),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError, match=rf"^leakyops\.torch\.{name}: '(input|self|grad_output)' "
                                            rf"is a {kind} tensor, but leakyops takes dense"):
            call()
    with pytest.raises(TypeError, match=rf"'weight' is a {kind} tensor"):
        lt.prelu(torch.ones(2), t)


BIG = 2**60 + 2**36 + 1


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("slope", [BIG, np.int64(BIG), np.uint64(BIG)], ids=["int", "int64", "uint64"])
def test_an_integer_slope_is_rounded_once_as_pytorch_does(dtype, slope):
    x = torch.tensor([-1.0, 2.0], dtype=dtype)
    assert_same(lt.leaky_relu(x, slope), F.leaky_relu(x, BIG))
    assert_same(lt.LeakyReLU(slope)(x), F.leaky_relu(x, BIG))
    assert_same(lt.leaky_relu_backward(torch.ones_like(x), x, slope),
                torch.ops.aten.leaky_relu_backward(torch.ones_like(x), x, BIG, False))
    y = x.clone()
    assert_same(lt.leaky_relu_(y, slope), F.leaky_relu(x, BIG))


def test_a_fraction_slope_is_rounded_once():
    x = torch.tensor([-1.0])
    slope = Fraction(2**24 + 1, 2**24) + Fraction(1, 2**60)  # just above a float32 tie
    assert lt.leaky_relu(x, slope).item() == -(1 + 2.0**-23)
    assert lt.leaky_relu(x.double(), slope).item() == -float(slope)


def test_an_integer_slope_is_rounded_once_under_torch_compile():
    f = torch.compile(lambda t: lt.leaky_relu(t, BIG), fullgraph=True, backend="aot_eager")
    x = torch.tensor([-1.0, 2.0])
    assert_same(f(x), F.leaky_relu(x, BIG))
