"""leakyops.torch against PyTorch's own CPU kernels: values (bit for bit),
gradients, layouts and errors."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
import torch.nn.functional as F

import leakyops.torch as lt

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
DTYPE_IDS = ["f16", "bf16", "f32", "f64"]
INT_VIEW = {torch.float16: torch.int16, torch.bfloat16: torch.int16,
            torch.float32: torch.int32, torch.float64: torch.int64}
SLOPES = [0.01, 0.0, -0.0, 0.2, -0.5, 1.0, 1.5, 3, True, 1e-30, 1e30,
          math.inf, -math.inf, math.nan]


def bits(t):
    """The raw bits, so that NaN == NaN, -0.0 != +0.0 and every ulp counts."""
    return t.contiguous().view(INT_VIEW[t.dtype])


def assert_bitwise(actual, expected):
    """Equal bits everywhere except inside NaNs, which must be NaN in both.

    NaN payloads are not compared: PyTorch's own bfloat16 results write a NaN
    as 0x7FC0 or as 0xFFFF depending on whether the element went through its
    vectorised or its scalar loop, so they are not a stable reference."""
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    nan = torch.isnan(expected)
    assert torch.equal(torch.isnan(actual), nan), (actual, expected)
    assert torch.equal(bits(actual)[~nan], bits(expected)[~nan]), (actual, expected)


def special_values(dtype):
    """±0, the smallest subnormal, the largest finite, ±inf, NaN, and randoms."""
    info = torch.finfo(dtype)
    tiny_sub = torch.tensor(info.smallest_normal, dtype=dtype) / 2 ** (info.bits - 6)
    specials = torch.tensor(
        [0.0, -0.0, math.inf, -math.inf, math.nan, info.max, -info.max,
         info.smallest_normal, -info.smallest_normal, 1.0, -1.0], dtype=dtype)
    sub = torch.stack([tiny_sub, -tiny_sub]).to(dtype)
    g = torch.Generator().manual_seed(0)
    rand = (torch.randn(45, generator=g, dtype=torch.float64) * 10).to(dtype)
    return torch.cat([specials, sub, rand])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("slope", SLOPES)
def test_leaky_relu_forward_bitwise(dtype, slope):
    x = special_values(dtype)
    assert_bitwise(lt.leaky_relu(x, slope), F.leaky_relu(x, slope))
    y = x.clone()
    out = lt.leaky_relu(y, slope, inplace=True)
    assert out is y
    assert_bitwise(y, F.leaky_relu(x, slope))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("slope", [0.01, 0.0, -0.5, 2.5, math.inf, math.nan])
def test_leaky_relu_backward_bitwise(dtype, slope):
    x = special_values(dtype)
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    g[:3] = torch.tensor([math.nan, math.inf, -0.0])
    xr = x.clone().requires_grad_()
    (expected,) = torch.autograd.grad(F.leaky_relu(xr, slope), xr, g)
    xl = x.clone().requires_grad_()
    (actual,) = torch.autograd.grad(lt.leaky_relu(xl, slope), xl, g)
    assert_bitwise(actual, expected)
    expected_op = torch.ops.aten.leaky_relu_backward(g, x, slope, False)
    assert_bitwise(lt.leaky_relu_backward(g, x, slope), expected_op)
    if slope >= 0:  # the backward from the result, as the in-place op uses it
        r = F.leaky_relu(x, slope)
        assert_bitwise(lt.leaky_relu_backward(g, r, slope, True),
                       torch.ops.aten.leaky_relu_backward(g, r, slope, True))


def test_leaky_relu_backward_promotes_and_broadcasts_like_pytorch():
    g = torch.randn(4, 1, 5, dtype=torch.float16)
    x = torch.randn(3, 1, dtype=torch.bfloat16)
    out = lt.leaky_relu_backward(g, x, 0.1)
    assert out.dtype == torch.float32 and out.shape == (4, 3, 5)
    assert_bitwise(out, torch.ops.aten.leaky_relu_backward(g.float(), x.float(), 0.1, False))
    out = lt.leaky_relu_backward(g.double(), x, 0.1)
    assert out.dtype == torch.float64


def test_leaky_relu_backward_at_zero_is_the_slope_and_nan_gives_g_times_slope():
    x = torch.tensor([0.0, -0.0, math.nan, 1.0]).requires_grad_()
    lt.leaky_relu(x, 0.25).backward(torch.ones(4))
    assert x.grad.tolist() == [0.25, 0.25, 0.25, 1.0]


def weights_for(x, dtype, per_channel, gen):
    c = x.shape[1] if (per_channel and x.dim() > 1) else 1
    w = torch.randn(c, generator=gen, dtype=torch.float64)
    w[0] = -0.75 if c == 1 else w[0]
    if c > 2:
        w[1] = 0.0
        w[2] = math.inf
    return w.to(dtype)


PRELU_SHAPES = [(), (7,), (5, 3), (2, 3, 4), (2, 4, 3, 5), (1, 3, 2, 2, 2), (0, 3, 4)]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", PRELU_SHAPES, ids=str)
@pytest.mark.parametrize("per_channel", [False, True], ids=["shared", "channels"])
def test_prelu_forward_bitwise_and_gradients(dtype, shape, per_channel):
    gen = torch.Generator().manual_seed(len(shape))
    x = (torch.randn(shape, generator=gen, dtype=torch.float64) * 4).to(dtype)
    if x.numel() > 4:
        x.view(-1)[:4] = torch.tensor([0.0, -0.0, math.nan, -math.inf], dtype=dtype)
    w = weights_for(x, dtype, per_channel, gen)
    assert_bitwise(lt.prelu(x, w), F.prelu(x, w))

    g = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
    xl, wl = x.clone().requires_grad_(), w.clone().requires_grad_()
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    lt.prelu(xl, wl).backward(g)
    F.prelu(xr, wr).backward(g)
    assert_bitwise(xl.grad, xr.grad)
    assert wl.grad.shape == w.shape and wl.grad.dtype == dtype
    # grad_weight: a sum in another order than PyTorch's. Check it against the
    # exactly rounded sum (math.fsum of the float64 terms): for the half types
    # and float32 it must be at least as accurate as PyTorch's (docs/semantics.md); in
    # float64 within a few ulps of the sum of magnitudes.
    x64, g64 = x.double(), g.double()
    term = torch.where(x64 > 0, 0.0, x64 * g64)
    if w.numel() > 1:
        groups = [term.select(1, c).reshape(-1) for c in range(w.numel())]
    else:
        groups = [term.reshape(-1)]
    ref = torch.tensor([math.fsum(t.tolist()) for t in groups], dtype=torch.float64)
    mag = torch.tensor([t.abs().sum().item() for t in groups], dtype=torch.float64)
    ours, theirs = wl.grad.double().reshape(-1), wr.grad.double().reshape(-1)
    assert torch.equal(torch.isnan(ours), torch.isnan(ref))
    finite = torch.isfinite(ref)
    err_ours = (ours - ref)[finite].abs()
    err_torch = (theirs - ref)[finite].abs()
    if dtype == torch.float64:
        assert torch.all(err_ours <= 8 * torch.finfo(dtype).eps * mag[finite])
    else:
        assert torch.all(err_ours <= err_torch + torch.finfo(dtype).eps * ref[finite].abs())


def test_prelu_weight_gradient_shape_follows_weight():
    x = torch.randn(2, 3, 4)
    for w in (torch.tensor(0.25), torch.tensor([0.25]), torch.full((3,), 0.25)):
        wl = w.clone().requires_grad_()
        lt.prelu(x, wl).sum().backward()
        assert wl.grad.shape == w.shape
        gi, gw = lt.prelu_backward(torch.ones_like(x), x, w)
        assert gw.shape == w.shape and gi.shape == x.shape


# ---------------------------------------------------------------------------
# layouts: channels-last, non-contiguous, broadcast views


def layouts():
    base = torch.randn(2, 6, 5, 8, dtype=torch.float64)
    yield "contiguous", base
    yield "channels_last", base.to(memory_format=torch.channels_last)
    yield "channels_last_3d", torch.randn(2, 3, 2, 4, 3).to(memory_format=torch.channels_last_3d)
    yield "transposed", base.transpose(2, 3)
    yield "sliced", base[:, ::2, 1:, ::3]
    yield "permuted_sliced", base.permute(0, 3, 1, 2)[:, 1:7, ::2]
    yield "expanded", torch.randn(1, 6, 1, 8).expand(2, 6, 5, 8)
    yield "storage_offset", base.reshape(-1)[7:7 + 2 * 6 * 4 * 3].view(2, 6, 4, 3)


@pytest.mark.parametrize("name,x", list(layouts()), ids=[n for n, _ in layouts()])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
def test_layouts_values_and_memory_format(name, x, dtype):
    x = x.to(dtype)  # .to keeps the strides of dense inputs
    y = lt.leaky_relu(x, 0.1)
    ref = F.leaky_relu(x, 0.1)
    assert_bitwise(y, ref)
    assert y.stride() == torch.empty_like(x).stride() == ref.stride()
    if x.is_contiguous(memory_format=torch.channels_last):
        assert y.is_contiguous(memory_format=torch.channels_last)
        assert ref.is_contiguous(memory_format=torch.channels_last)
    w = torch.linspace(-1, 2, x.shape[1], dtype=dtype)
    assert_bitwise(lt.prelu(x, w), F.prelu(x, w))
    assert lt.prelu(x, w).stride() == F.prelu(x, w).stride()
    g = torch.randn(x.shape, dtype=dtype).to(memory_format=torch.channels_last) \
        if x.dim() == 4 else torch.randn(x.shape, dtype=dtype)
    gi, gw = lt.prelu_backward(g, x, w)
    assert gi.stride() == torch.empty_like(x).stride()
    xr, wr = x.detach().clone().requires_grad_(), w.clone().requires_grad_()
    F.prelu(xr, wr).backward(g)
    assert_bitwise(gi, xr.grad)
    # grad_weight: the float64 sum rounded once, so within an ulp of the float64
    # reference (PyTorch's own bfloat16 sum can be much further off)
    x64, g64 = x.double(), g.double()
    ref = torch.where(x64 > 0, 0.0, x64 * g64).transpose(0, 1).reshape(x.shape[1], -1).sum(1)
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(gw.double(), ref, rtol=eps, atol=eps * ref.abs().max().item())
    assert_bitwise(lt.leaky_relu_backward(g, x, 0.1),
                   torch.ops.aten.leaky_relu_backward(g, x, 0.1, False))
    if name != "expanded":
        z = x.clone() if name == "contiguous" else x
        zz = z.clone()
        lt.leaky_relu_(z, 0.1)
        assert_bitwise(z, F.leaky_relu(zz, 0.1))


def test_inplace_writes_through_a_view_into_its_base():
    base = torch.arange(-6.0, 6.0).reshape(3, 4)
    view = base[:, 1::2]
    assert lt.leaky_relu_(view, 0.5) is view
    expected = torch.arange(-6.0, 6.0).reshape(3, 4)
    expected[:, 1::2] = F.leaky_relu(expected[:, 1::2], 0.5)
    assert torch.equal(base, expected)


def test_inputs_are_not_copied():
    """The kernels read and write the tensors' memory (zero-copy)."""
    x = torch.randn(1000, dtype=torch.bfloat16)
    ptr = x.data_ptr()
    lt.leaky_relu_(x, 0.1)
    assert x.data_ptr() == ptr
    assert lt._to_numpy(x).__array_interface__["data"][0] == ptr
    assert lt._to_numpy(x[::3]).__array_interface__["data"][0] == ptr


def test_inplace_increments_the_version_counter():
    x = torch.randn(5)
    v = x._version
    lt.leaky_relu_(x)
    assert x._version > v


def test_inplace_without_grad_is_seen_by_autograd_as_torch_inplace_ops_are():
    """The eager in-place path skips the operator's dispatch; the version counter (shared
    with the base of a view) still counts the change, so autograd detects a saved tensor
    modified under no_grad, as with F.leaky_relu_."""
    for fn in (lambda t: F.leaky_relu_(t, 0.1), lambda t: lt.leaky_relu_(t, 0.1)):
        a = torch.randn(4, requires_grad=True)
        b = a.exp()  # saves its result
        base_version = b._version
        with torch.no_grad():
            fn(b.detach()[1:])
        assert b._version > base_version
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            b.sum().backward()


def test_inplace_on_an_inference_tensor_outside_inference_mode_is_refused_unwritten():
    """Refused as PyTorch refuses it, but before anything is written (PyTorch's own
    F.leaky_relu_ writes the values, then raises)."""
    with torch.inference_mode():
        x = torch.tensor([-2.0, 3.0])
    for inplace in (lambda t: lt.leaky_relu_(t, 0.5), lambda t: lt.leaky_relu(t, 0.5, True),
                    lambda t: lt.LeakyReLU(0.5, inplace=True)(t)):
        with pytest.raises(RuntimeError, match="[Ii]nference tensor"):
            inplace(x)
        assert x.tolist() == [-2.0, 3.0]
    with pytest.raises(RuntimeError, match="[Ii]nference tensor"):
        F.leaky_relu_(x, 0.5)
    with torch.inference_mode():
        y = torch.tensor([-2.0, 3.0])
        assert lt.leaky_relu_(y, 0.5) is y
        assert y.tolist() == [-1.0, 3.0]


def test_empty_and_zero_dim():
    for dtype in DTYPES:
        e = torch.empty(0, 3, dtype=dtype)
        assert lt.leaky_relu(e).shape == (0, 3)
        assert lt.prelu(e, torch.ones(3, dtype=dtype)).shape == (0, 3)
        gi, gw = lt.prelu_backward(e, e, torch.ones(3, dtype=dtype))
        assert gi.shape == (0, 3) and torch.equal(gw, torch.zeros(3, dtype=dtype))
        s = torch.tensor(-2.0, dtype=dtype)
        assert_bitwise(lt.leaky_relu(s, 0.5), F.leaky_relu(s, 0.5))


# ---------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("fn", [
    lambda x: lt.leaky_relu(x),
    lambda x: lt.leaky_relu(x, inplace=True),
    lambda x: lt.leaky_relu_backward(x, x, 0.1),
    lambda x: lt.prelu(x, torch.ones(1, device=x.device, dtype=x.dtype)),
    lambda x: lt.prelu_backward(x, x, torch.ones(1, device=x.device, dtype=x.dtype)),
    lambda x: lt.LeakyReLU()(x),
    lambda x: lt.PReLU(device=x.device)(x),
], ids=["leaky_relu", "inplace", "backward", "prelu", "prelu_backward", "LeakyReLU", "PReLU"])
def test_other_device_is_a_clear_error(fn):
    x = torch.zeros(2, 3, device="meta")
    with pytest.raises(RuntimeError, match=r"device 'meta'.*CPU tensors only"):
        fn(x)


def test_mixed_devices_name_the_tensor_on_the_other_device():
    with pytest.raises(RuntimeError, match=r"'weight' is on device 'meta'"):
        lt.prelu(torch.zeros(2, 3), torch.ones(3, device="meta"))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bool,
                                   torch.complex64, torch.float8_e4m3fn])
def test_unsupported_dtype_is_a_type_error_naming_it(dtype):
    x = torch.zeros(3, dtype=dtype)
    pattern = rf"dtype {dtype}.*supported dtypes are torch.float16, torch.bfloat16"
    with pytest.raises(TypeError, match=pattern):
        lt.leaky_relu(x)
    with pytest.raises(TypeError, match=pattern):
        lt.leaky_relu_(x)
    with pytest.raises(TypeError, match=pattern):
        lt.prelu(x, torch.ones(1, dtype=dtype))
    assert torch.equal(x, torch.zeros(3, dtype=dtype))  # nothing written


def test_not_a_tensor():
    with pytest.raises(TypeError, match="must be a torch.Tensor, got list"):
        lt.leaky_relu([1.0, -1.0])


def test_prelu_weight_errors_follow_pytorch_rules():
    x = torch.randn(2, 3, 4)
    with pytest.raises(TypeError, match="'weight' has dtype torch.float64 but 'input' has dtype torch.float32"):
        lt.prelu(x, torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="4 elements but 'input' has 3 channels"):
        lt.prelu(x, torch.ones(4))
    with pytest.raises(ValueError, match="scalar or a 1-D tensor"):
        lt.prelu(x, torch.ones(1, 3))
    with pytest.raises(ValueError, match="2 elements but a 1-D 'input' has a single channel"):
        lt.prelu(torch.randn(5), torch.ones(2))
    with pytest.raises(ValueError, match="0-d 'input'"):
        lt.prelu(torch.tensor(1.0), torch.ones(2))
    # the same inputs are errors in PyTorch too
    for xx, w in [(x, torch.ones(4)), (torch.randn(5), torch.ones(2))]:
        with pytest.raises(RuntimeError):
            F.prelu(xx, w)


def test_backward_shape_and_self_is_result_errors():
    with pytest.raises(ValueError, match="do not broadcast"):
        lt.leaky_relu_backward(torch.ones(3), torch.ones(4), 0.1)
    with pytest.raises(ValueError, match="self_is_result"):
        lt.leaky_relu_backward(torch.ones(3), torch.ones(3), -0.1, True)
    with pytest.raises(ValueError, match="does not broadcast"):
        lt.prelu_backward(torch.ones(2, 4), torch.ones(2, 3), torch.ones(3))
    with pytest.raises(TypeError, match="'grad_output' has dtype torch.float64"):
        lt.prelu_backward(torch.ones(2, 3, dtype=torch.float64), torch.ones(2, 3), torch.ones(3))


def test_inplace_on_a_broadcast_view_is_refused_and_writes_nothing():
    base = torch.tensor([-1.0, 2.0])
    x = base.expand(3, 2)
    with pytest.raises(RuntimeError, match="single memory location"):
        lt.leaky_relu_(x, 0.5)
    assert base.tolist() == [-1.0, 2.0]


def test_inplace_on_a_leaf_requiring_grad_is_refused_like_pytorch():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        lt.leaky_relu_(x)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.leaky_relu_(x)


def test_calls_from_several_threads_at_once():
    """DataLoader-style concurrency: each thread gets its own correct result."""
    from concurrent.futures import ThreadPoolExecutor

    xs = [torch.randn(2, 3, 25_000, generator=torch.Generator().manual_seed(i)) for i in range(6)]
    w = torch.tensor([0.1, -0.2, 3.0])

    def work(x):
        return lt.leaky_relu(x, 0.3), lt.prelu(x.transpose(0, 2).contiguous().transpose(0, 2), w)

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(work, xs))
    for x, (a, b) in zip(xs, results):
        assert_bitwise(a, F.leaky_relu(x, 0.3))
        assert_bitwise(b, F.prelu(x, w))


# ---------------------------------------------------------------------------
# random layouts (hypothesis): the permutation logic of prelu_backward and the
# layout rule of every result


@st.composite
def strided_tensors(draw):
    ndim = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim))
    dtype = draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2**16))
    steps = draw(st.lists(st.integers(1, 2), min_size=ndim, max_size=ndim))
    perm = draw(st.permutations(range(ndim)))
    big = [n * s for n, s in zip(shape, steps)]
    base = torch.randn(big, generator=torch.Generator().manual_seed(seed)).to(dtype)
    x = base[tuple(slice(None, None, s) for s in steps)]
    # a layout whose memory order is `perm`: materialise permuted, view back
    inverse = sorted(range(ndim), key=perm.__getitem__)
    x = x.permute(perm).contiguous().permute(inverse) if draw(st.booleans()) else x
    return x


@settings(max_examples=60, deadline=None)
@given(x=strided_tensors(), slope=st.sampled_from([0.01, 0.0, -0.3, 2.0]),
       per_channel=st.booleans())
def test_random_layouts_against_pytorch(x, slope, per_channel):
    empty = torch.empty_like(x).stride()
    y = lt.leaky_relu(x, slope)
    assert y.stride() == empty
    assert_bitwise(y, F.leaky_relu(x, slope))
    g = torch.randn(x.shape).to(x.dtype)
    assert_bitwise(lt.leaky_relu_backward(g, x, slope),
                   torch.ops.aten.leaky_relu_backward(g, x, slope, False))
    c = x.shape[1] if per_channel and x.dim() > 1 else 1
    w = torch.linspace(-0.5, 1.5, c).to(x.dtype)
    assert_bitwise(lt.prelu(x, w), F.prelu(x, w))
    gi, gw = lt.prelu_backward(g, x, w)
    assert gi.stride() == empty and gw.shape == w.shape
    xr = x.detach().clone().requires_grad_()
    F.prelu(xr, w).backward(g)
    assert_bitwise(gi, xr.grad)


class _ForkedDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        x = torch.randn(3, 20_000, generator=torch.Generator().manual_seed(i))
        return lt.leaky_relu(x, 0.2), F.leaky_relu(x, 0.2)


# Python >= 3.12 warns about fork() in a multi-threaded process; forking is the point here.
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")
def test_dataloader_workers_forked_after_the_kernels_ran():
    lt.leaky_relu(torch.randn(3, 200_000))  # the parent's thread pool is running
    loader = torch.utils.data.DataLoader(_ForkedDataset(), batch_size=2, num_workers=2,
                                         multiprocessing_context="fork")
    batches = list(loader)
    assert len(batches) == 3
    for ours, theirs in batches:
        assert_bitwise(ours, theirs)
