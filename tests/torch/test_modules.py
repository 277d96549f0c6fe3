"""The nn.Module drop-ins: same API, parameters and state dicts as PyTorch's,
and a short training run equal to PyTorch's step by step."""

import copy
import pickle

import pytest

torch = pytest.importorskip("torch")
from torch import nn

import leakyops.torch as lt


@pytest.mark.parametrize("args,kwargs", [((), {}), ((0.2,), {}), ((), {"inplace": True}),
                                         ((0.3, True), {}), ((), {"negative_slope": -1})])
def test_leaky_relu_module_mirrors_pytorch(args, kwargs):
    ours, theirs = lt.LeakyReLU(*args, **kwargs), nn.LeakyReLU(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert ours.extra_repr() == theirs.extra_repr()
    assert (ours.negative_slope, ours.inplace) == (theirs.negative_slope, theirs.inplace)
    assert isinstance(ours, nn.LeakyReLU)
    assert ours.state_dict() == theirs.state_dict() == {}
    x = torch.randn(3, 4)
    expected = theirs(x.clone())
    y = x.clone()
    out = ours(y)
    assert torch.equal(out, expected)
    assert (out is y) == ours.inplace


@pytest.mark.parametrize("num_parameters,init", [(1, 0.25), (3, 0.1), (4, -2.0)])
def test_prelu_module_mirrors_pytorch(num_parameters, init):
    ours, theirs = lt.PReLU(num_parameters, init), nn.PReLU(num_parameters, init)
    assert repr(ours) == repr(theirs) == f"PReLU(num_parameters={num_parameters})"
    assert isinstance(ours, nn.PReLU)
    assert [n for n, _ in ours.named_parameters()] == ["weight"]
    assert ours.weight.shape == (num_parameters,)
    assert torch.equal(ours.weight, theirs.weight)
    assert ours.init == init and ours.num_parameters == num_parameters
    x = torch.randn(2, num_parameters, 5)
    assert torch.equal(ours(x), theirs(x))


def test_prelu_factory_kwargs_and_reset():
    m = lt.PReLU(2, 0.5, dtype=torch.float64)
    assert m.weight.dtype == torch.float64
    with torch.no_grad():
        m.weight.fill_(3.0)
    m.reset_parameters()
    assert m.weight.tolist() == [0.5, 0.5]
    m = lt.PReLU(2, dtype=torch.bfloat16)
    assert m(torch.randn(3, 2, dtype=torch.bfloat16)).dtype == torch.bfloat16


def test_state_dicts_load_into_either_class():
    def net(act_cls, prelu_cls):
        return nn.Sequential(nn.Linear(4, 3), act_cls(0.2), nn.Linear(3, 3), prelu_cls(3))

    torch.manual_seed(0)
    theirs = net(nn.LeakyReLU, nn.PReLU)
    with torch.no_grad():
        theirs[3].weight.copy_(torch.tensor([0.1, 0.2, 0.3]))
    ours = net(lt.LeakyReLU, lt.PReLU)
    ours.load_state_dict(theirs.state_dict())  # strict: same keys, same shapes
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    x = torch.randn(5, 4)
    assert torch.equal(ours(x), theirs(x))
    back = net(nn.LeakyReLU, nn.PReLU)
    back.load_state_dict(ours.state_dict())
    assert torch.equal(back[3].weight, theirs[3].weight)


def test_modules_copy_and_pickle():
    m = nn.Sequential(lt.LeakyReLU(0.3, inplace=True), lt.PReLU(2, 0.7))
    for clone in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert type(clone[0]) is lt.LeakyReLU and type(clone[1]) is lt.PReLU
        assert repr(clone) == repr(m)
        x = torch.randn(3, 2)
        assert torch.equal(clone(x.clone()), m(x.clone()))


# ---------------------------------------------------------------------------
# a short end-to-end training run


def synthetic_batches(steps, batch=16, size=12, seed=0):
    """Images with a bright square in one of four quadrants; the label is the quadrant."""
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        labels = torch.randint(0, 4, (batch,), generator=g)
        images = torch.randn(batch, 1, size, size, generator=g) * 0.3
        half = size // 2
        for i, lab in enumerate(labels.tolist()):
            r, c = divmod(lab, 2)
            images[i, 0, r * half + 1:r * half + 5, c * half + 1:c * half + 5] += 1.5
        yield images, labels


def convnet(act, prelu, inplace):
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), act(0.1, inplace=inplace),
        nn.Conv2d(8, 16, 3, stride=2), prelu(16),
        nn.Conv2d(16, 16, 3), act(0.2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4),
    )


def train(model, steps, dtype, channels_last=False):
    model = model.to(dtype)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for images, labels in synthetic_batches(steps):
        images = images.to(dtype)
        if channels_last:
            images = images.to(memory_format=torch.channels_last)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


@pytest.mark.parametrize("dtype,channels_last", [(torch.float32, False),
                                                 (torch.float64, False),
                                                 (torch.float32, True)],
                         ids=["f32", "f64", "f32-channels_last"])
def test_training_run_matches_pytorch_step_by_step(dtype, channels_last):
    torch.manual_seed(0)
    reference = convnet(nn.LeakyReLU, nn.PReLU, inplace=True)
    ours = convnet(lt.LeakyReLU, lt.PReLU, inplace=True)
    ours.load_state_dict(reference.state_dict())
    steps = 8
    ref_losses, reference = train(reference, steps, dtype, channels_last)
    our_losses, ours = train(ours, steps, dtype, channels_last)
    # PReLU's weight gradient is a sum taken in another order than PyTorch's,
    # so parameters may drift by a few ulps; everything else is identical.
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-13}
    torch.testing.assert_close(our_losses, ref_losses, **tol)
    assert our_losses[-1] < our_losses[0]  # it learns
    for (name, p), (_, q) in zip(ours.named_parameters(), reference.named_parameters()):
        torch.testing.assert_close(p, q, **tol, msg=name)


def test_training_run_without_prelu_is_bit_identical():
    torch.manual_seed(1)

    def net(act):
        return nn.Sequential(nn.Conv2d(1, 6, 3), act(0.1, inplace=True), nn.Conv2d(6, 8, 3),
                             act(0.05), nn.Flatten(), nn.Linear(8 * 8 * 8, 4))

    reference, ours = net(nn.LeakyReLU), net(lt.LeakyReLU)
    ours.load_state_dict(reference.state_dict())
    ref_losses, reference = train(reference, 6, torch.float32)
    our_losses, ours = train(ours, 6, torch.float32)
    assert our_losses == ref_losses
    for p, q in zip(ours.parameters(), reference.parameters()):
        assert torch.equal(p, q)


def test_modules_in_inference_mode_and_no_grad():
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(3, 4), lt.LeakyReLU(0.1, inplace=True), lt.PReLU(4, 0.3))
    reference = nn.Sequential(nn.Linear(3, 4), nn.LeakyReLU(0.1, inplace=True), nn.PReLU(4, 0.3))
    reference.load_state_dict(model.state_dict())
    x = torch.randn(5, 3)
    with torch.inference_mode():
        y = model(x)
        assert torch.equal(y, reference(x)) and not y.requires_grad
    with torch.no_grad():
        assert torch.equal(model(x), reference(x))
