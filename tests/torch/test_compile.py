"""torch.compile(fullgraph=True) around models using the modules: no graph
breaks, the same values and gradients as eager mode."""

import pytest

torch = pytest.importorskip("torch")
from torch import nn

import leakyops.torch as lt


def small_net(inplace):
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1), lt.LeakyReLU(0.1, inplace=inplace),
        nn.Conv2d(4, 4, 3), lt.PReLU(4),
        nn.Flatten(), nn.Linear(4 * 4 * 4, 3), lt.LeakyReLU(-0.2),
    )


def run(model, x):
    """Forward and backward; returns the output and every gradient."""
    model.zero_grad()
    xx = x.clone().requires_grad_()
    y = model(xx)
    y.square().sum().backward()
    return [y.detach(), xx.grad] + [p.grad for p in model.parameters()]


def check_compiled(backend, inplace, dynamic=False):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = small_net(inplace)
    x = torch.randn(2, 2, 6, 6)
    expected = run(model, x)
    compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=dynamic)
    actual = run(compiled, x)
    for a, e in zip(actual, expected):
        # the leakyops kernels run unchanged inside the graph; the convolutions
        # and the linear layer may be fused or reordered by the compiler
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6)
    return model, compiled


@pytest.mark.parametrize("inplace", [False, True], ids=["out_of_place", "inplace"])
def test_compile_fullgraph_aot_eager(inplace):
    check_compiled("aot_eager", inplace)


def test_compiled_graph_calls_the_leakyops_operators():
    torch._dynamo.reset()
    seen = []

    def backend(gm, example_inputs):
        seen.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    f = torch.compile(lambda x, w: lt.prelu(lt.leaky_relu(x, 0.3), w) + 1,
                      backend=backend, fullgraph=True)
    x, w = torch.randn(2, 3, 4), torch.rand(3)
    torch.testing.assert_close(f(x, w), lt.prelu(lt.leaky_relu(x, 0.3), w) + 1)
    assert "leakyops.leaky_relu.default" in seen and "leakyops.prelu.default" in seen


def test_compile_reports_errors_while_tracing():
    torch._dynamo.reset()
    f = torch.compile(lambda x: lt.leaky_relu(x), backend="aot_eager", fullgraph=True)
    with pytest.raises(Exception, match="not supported"):
        f(torch.zeros(3, dtype=torch.int32))


@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_inplace_mutates_the_graph_input(backend):
    torch._dynamo.reset()
    f = torch.compile(lambda x: lt.leaky_relu_(x, 0.5), backend=backend, fullgraph=True)
    x = torch.randn(4, 5)
    expected = torch.nn.functional.leaky_relu(x, 0.5)
    out = f(x)
    assert torch.equal(x, expected)
    assert out.data_ptr() == x.data_ptr()


# Inductor's own code generation (not leakyops) emits this DeprecationWarning in torch 2.13.
INDUCTOR_WARNING = "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"


@pytest.mark.slow
@pytest.mark.filterwarnings(INDUCTOR_WARNING)
@pytest.mark.parametrize("inplace", [False, True], ids=["out_of_place", "inplace"])
def test_compile_fullgraph_inductor(inplace):
    check_compiled("inductor", inplace)


@pytest.mark.slow
@pytest.mark.filterwarnings(INDUCTOR_WARNING)
def test_compile_inductor_dynamic_shapes():
    model, compiled = check_compiled("inductor", False, dynamic=True)
    x = torch.randn(5, 2, 6, 6)  # another batch size, the same graph
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)


def test_torch_export_keeps_the_operators():
    model = nn.Sequential(nn.Linear(4, 3), lt.LeakyReLU(0.2), lt.PReLU(3))
    x = torch.randn(2, 4)
    exported = torch.export.export(model, (x,))
    targets = [str(n.target) for n in exported.graph.nodes if n.op == "call_function"]
    assert targets == ["aten.linear.default", "leakyops.leaky_relu.default",
                       "leakyops.prelu.default"]
    assert torch.equal(exported.module()(x), model(x))
