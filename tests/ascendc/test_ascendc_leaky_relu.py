"""LeakyRelu of the Ascend C front-end: documented examples, the three forms, masks, edges."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from _ascendc_testutil import SENTINEL, naive_leaky_relu, naive_masked, same_bits

from leakyops import _core
from leakyops import ascendc as ac

DTYPES = [pytest.param(ac.half, id="half"), pytest.param(ac.float32, id="float")]
UINT64_MAX = (1 << 64) - 1


def _pair(dtype, n_src, n_dst=None, fill=None):
    alloc = ac.LocalMemAllocator()
    src = alloc.Alloc(dtype, n_src)
    dst = alloc.Alloc(dtype, n_src if n_dst is None else n_dst)
    dst.numpy()[:] = SENTINEL[np.dtype(dtype)] if fill is None else fill
    return dst, src


# ----------------------------------------------------------------- documented examples

@pytest.mark.parametrize("dtype", DTYPES)
def test_doc_example_scalar_2(core, dtype):
    # seed 000: half scalar = 2; LeakyRelu(dst, src, scalar, 512)
    dst, src = _pair(dtype, 512)
    x = np.arange(1, 513, dtype=dtype)
    x[:2] = [-1, -2]
    src.numpy()[:] = x
    ac.LeakyRelu(dst, src, dtype.type(2), 512)
    expected = np.arange(1, 513, dtype=dtype)
    expected[:2] = [-2, -4]
    assert same_bits(dst.numpy(), expected)


DOC_X = [-287, 246, -438, 177, 596, -950, -293, 322]
DOC_Y = [-0.287, 246, -0.438, 177, 596, -0.950, -0.293, 322]


@pytest.mark.parametrize("form", ["count", "continuous", "bitwise"])
def test_doc_example_scalar_0_001_half(core, form):
    # asc-devkit LeakyRelu.md: half scalar = 0.001, 512 elements, the three call forms
    dst, src = _pair(ac.half, 512)
    x = np.array(DOC_X * 64, dtype=np.float16)
    x[-1] = -900
    src.numpy()[:] = x
    scalar = np.float16(0.001)
    if form == "count":
        ac.LeakyRelu(dst, src, scalar, 512)
    elif form == "continuous":
        ac.LeakyRelu(dst, src, scalar, 128, 4, ac.UnaryRepeatParams(1, 1, 8, 8))
    else:
        ac.LeakyRelu(dst, src, scalar, [UINT64_MAX, UINT64_MAX], 4, (1, 1, 8, 8))
    y = dst.numpy()
    np.testing.assert_allclose(y[:8].astype(np.float64), DOC_Y, rtol=1e-3)   # "to half precision"
    np.testing.assert_allclose(float(y[-1]), -0.900, rtol=1e-3)
    assert same_bits(y, naive_leaky_relu(x, 0.001))


def test_element_wise_arithmetic_sample(core):
    # asc-devkit examples/.../element_wise_arithmetic: mask 128, repeat 4, {1,1,8,8}, half 0.01
    x = np.linspace(-100, 100, 512).astype(np.float16)
    out = np.zeros_like(x)
    src_g, dst_g = ac.GlobalTensor(ac.half), ac.GlobalTensor(ac.half)
    src_g.SetGlobalBuffer(x)
    dst_g.SetGlobalBuffer(out)
    alloc = ac.LocalMemAllocator()
    src, dst = alloc.Alloc(ac.half, 512), alloc.Alloc(ac.half, 512)
    ac.DataCopy(src, src_g, 512)
    ac.SetFlag[ac.HardEvent.MTE2_V](ac.EVENT_ID0)
    ac.WaitFlag[ac.HardEvent.MTE2_V](ac.EVENT_ID0)
    ac.LeakyRelu(dst, src, np.float16(0.01), 128, 4, (1, 1, 8, 8))
    ac.SetFlag(ac.HardEvent.V_MTE3, ac.EVENT_ID0)
    ac.WaitFlag(ac.HardEvent.V_MTE3, ac.EVENT_ID0)
    ac.DataCopy(dst_g, dst, 512)
    ac.PipeBarrier[ac.PIPE_ALL]()
    assert same_bits(out, naive_leaky_relu(x, 0.01))


# ------------------------------------------------------------------------ count form

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("count", [1, 15, 16, 17, 63, 64, 65, 200])
def test_count_form_first_n_only(core, dtype, count):
    rng = np.random.default_rng(count)
    dst, src = _pair(dtype, 256)
    x = (rng.standard_normal(256) * 50).astype(dtype)
    src.numpy()[:] = x
    ac.LeakyRelu(dst, src, -0.37, count)
    y = dst.numpy()
    assert same_bits(y[:count], naive_leaky_relu(x[:count], -0.37))
    assert np.all(y[count:] == SENTINEL[np.dtype(dtype)])       # past count: not written
    assert same_bits(src.numpy(), x)                             # src unchanged


@pytest.mark.parametrize("dtype", DTYPES)
def test_count_form_equals_core_with_ascend_options(core, dtype):
    rng = np.random.default_rng(7)
    dst, src = _pair(dtype, 1024)
    x = (rng.standard_normal(1024) * 1e3).astype(dtype)
    src.numpy()[:] = x
    ac.LeakyRelu(dst, src, 0.2, 1024)
    ref = _core.leaky_relu_impl(x, 0.2, compare=">=", slope_dtype="storage")
    assert same_bits(dst.numpy(), ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values(core, dtype):
    t = dtype.type
    info = np.finfo(dtype)
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, info.max, -info.max,
                  info.smallest_subnormal, -info.smallest_subnormal, 1, -1, 0.5, -0.5, 3, -3],
                 dtype=dtype)
    for scalar in (0.01, -2.0, 0.0, np.inf, -np.inf, np.nan, 1e30):
        dst, src = _pair(dtype, 16)
        src.numpy()[:] = x
        ac.LeakyRelu(dst, src, scalar, 16)
        y = dst.numpy()
        ref = naive_leaky_relu(x, scalar)
        assert np.array_equal(np.isnan(y), np.isnan(ref))
        ok = ~np.isnan(ref)
        assert same_bits(y[ok], ref[ok]), scalar
    # the documented rule is src >= 0 -> src: -0.0 passes through unchanged, even for s = -2
    dst, src = _pair(dtype, 16)
    src.numpy()[:2] = [t(-0.0), t(0.0)]
    ac.LeakyRelu(dst, src, -2.0, 2)
    assert np.signbit(dst.numpy()[0]) and not np.signbit(dst.numpy()[1])
    # -inf * 0 is NaN
    src.numpy()[0] = -np.inf
    ac.LeakyRelu(dst, src, 0, 1)
    assert np.isnan(dst.numpy()[0])


def test_scalar_is_rounded_to_half(core):
    # a half tensor's scalar is a half: 0.1 becomes 0.0999755859375 before the product
    x = np.arange(-2048, 0, dtype=np.float16)
    dst, src = _pair(ac.half, x.size)
    src.numpy()[:] = x
    ac.LeakyRelu(dst, src, 0.1, x.size)
    y = dst.numpy()
    with_half = (x.astype(np.float32) * np.float32(np.float16(0.1))).astype(np.float16)
    with_float = (x.astype(np.float32) * np.float32(0.1)).astype(np.float16)
    assert same_bits(y, with_half)
    assert not same_bits(y, with_float)      # the rounding matters for some of these inputs


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_count_form(core, dtype):
    t = ac.LocalMemAllocator().Alloc(dtype, 96)
    x = np.linspace(-5, 5, 96).astype(dtype)
    t.numpy()[:] = x
    ac.LeakyRelu(t, t, 0.5, 96)
    assert same_bits(t.numpy(), naive_leaky_relu(x, 0.5))


def test_offset_tensor_aligned(core):
    # operator[] at a 32-byte boundary: t[16:] of a half tensor is aligned
    t = ac.LocalMemAllocator().Alloc(ac.half, 64)
    t.numpy()[:] = -1
    ac.LeakyRelu(t[16:], t[16:], 0.5, 16)
    y = t.numpy()
    assert np.all(y[:16] == -1) and np.all(y[16:32] == -0.5) and np.all(y[32:] == -1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_noops(core, dtype):
    dst, src = _pair(dtype, 256)
    src.numpy()[:] = -1
    before = dst.numpy().copy()
    ac.LeakyRelu(dst, src, 2, 0)                                    # count 0
    ac.LeakyRelu(dst, src, 2, 0, 4, (1, 1, 8, 8))                   # continuous mask 0
    ac.LeakyRelu(dst, src, 2, 64, 0, (1, 1, 8, 8))                  # repeatTime 0
    ac.LeakyRelu(dst, src, 2, [0, 0], 2, (1, 1, 8, 8))              # empty bitwise mask
    assert same_bits(dst.numpy(), before)


# ------------------------------------------------------------------------- mask forms

@pytest.mark.parametrize("dtype", DTYPES)
def test_continuous_mask_partial_lanes(core, dtype):
    lanes = 256 // dtype.itemsize
    dst, src = _pair(dtype, 3 * lanes)
    x = np.linspace(-9, 9, 3 * lanes).astype(dtype)
    src.numpy()[:] = x
    ac.LeakyRelu(dst, src, 0.25, 37, 3, (1, 1, 8, 8))
    expected = naive_masked(dst.numpy(), x, 0.25, range(37), 3, 1, 1, 8, 8)
    assert same_bits(dst.numpy(), expected)
    # lanes 37.. of each repeat keep their old value
    assert np.all(dst.numpy().reshape(3, lanes)[:, 37:] == SENTINEL[np.dtype(dtype)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_continuous_mask_is_clamped_to_the_lane_count(core, dtype):
    lanes = 256 // dtype.itemsize
    dst, src = _pair(dtype, 4 * lanes)
    x = np.linspace(-9, 9, 4 * lanes).astype(dtype)
    src.numpy()[:] = x
    ac.LeakyRelu(dst, src, 0.5, 1000, 2, (1, 1, 8, 8))
    y = dst.numpy()
    assert same_bits(y[:2 * lanes], naive_leaky_relu(x[:2 * lanes], 0.5))
    assert np.all(y[2 * lanes:] == SENTINEL[np.dtype(dtype)])


def test_bitwise_mask_selects_lanes_half(core):
    dst, src = _pair(ac.half, 256)
    x = -np.arange(1, 257, dtype=np.float16)
    src.numpy()[:] = x
    low, high = 0x5555555555555555, 0x8000000000000001   # even lanes 0..63, lanes 64 and 127
    ac.LeakyRelu(dst, src, 2, [low, high], 2, (1, 1, 8, 8))
    selected = [j for j in range(64) if j % 2 == 0] + [64, 127]
    expected = naive_masked(dst.numpy(), x, 2, selected, 2, 1, 1, 8, 8)
    assert same_bits(dst.numpy(), expected)
    assert dst.numpy()[1] == SENTINEL[np.dtype(np.float16)] and dst.numpy()[64] == -130


def test_bitwise_mask_float_uses_mask0_only(core):
    dst, src = _pair(ac.float32, 128)
    x = -np.arange(1, 129, dtype=np.float32)
    src.numpy()[:] = x
    ac.LeakyRelu(dst, src, 0.5, [(1 << 63) | 1, 0], 2, (1, 1, 8, 8))
    expected = naive_masked(dst.numpy(), x, 0.5, [0, 63], 2, 1, 1, 8, 8)
    assert same_bits(dst.numpy(), expected)


CASES = [  # (dstBlk, srcBlk, dstRep, srcRep, repeats)
    (1, 1, 8, 8, 3), (2, 1, 16, 8, 2), (1, 2, 8, 16, 2), (1, 1, 9, 11, 3),
    (3, 2, 24, 17, 2), (1, 1, 4, 4, 1), (1, 0, 8, 8, 2), (2, 2, 0, 3, 2),
]   # (dstBlkStride 0 is an error: test_ascendc_errors.py; srcBlkStride 0 re-reads block 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "blk{}-{}_rep{}-{}_x{}".format(*c))
@pytest.mark.parametrize("maskkind", ["full", "continuous", "bits"])
def test_strides_and_masks_against_a_loop_reference(core, dtype, case, maskkind):
    dblk, sblk, drep, srep, repeats = case
    lanes = 256 // dtype.itemsize
    rng = np.random.default_rng(hash((case, maskkind)) % 2**32)
    if maskkind == "full":
        mask, selected = lanes, list(range(lanes))
    elif maskkind == "continuous":
        n = int(rng.integers(1, lanes))
        mask, selected = n, list(range(n))
    else:
        bits = [int(b) for b in rng.integers(0, 2, lanes)]
        selected = [j for j in range(lanes) if bits[j]]
        word = sum(b << j for j, b in enumerate(bits))
        mask = [word & UINT64_MAX, word >> 64]
    e = 32 // dtype.itemsize
    span = lambda blk, rep: (repeats - 1) * rep * e + 7 * blk * e + e   # noqa: E731
    dst, src = _pair(dtype, span(sblk, srep), span(dblk, drep))
    x = (rng.standard_normal(src.GetSize()) * 10).astype(dtype)
    src.numpy()[:] = x
    before = dst.numpy().copy()
    # with a dst stride of 0 some elements are written more than once: repeats run in
    # order, in the emulation as in the reference, so the last write wins in both
    ac.LeakyRelu(dst, src, 0.125, mask, repeats, ac.UnaryRepeatParams(dblk, sblk, drep, srep))
    expected = naive_masked(before, x, 0.125, selected, repeats, dblk, sblk, drep, srep)
    assert same_bits(dst.numpy(), expected)
    assert same_bits(src.numpy(), x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_mask_form(core, dtype):
    lanes = 256 // dtype.itemsize
    t = ac.LocalMemAllocator().Alloc(dtype, 4 * lanes)
    x = np.linspace(-3, 3, 4 * lanes).astype(dtype)
    t.numpy()[:] = x
    ac.LeakyRelu(t, t, 0.5, lanes, 4, (1, 1, 8, 8))
    assert same_bits(t.numpy(), naive_leaky_relu(x, 0.5))


# ------------------------------------------------------------- isSetMask = False

def test_is_set_mask_false_normal_mode_bits(core):
    dst, src = _pair(ac.half, 256)
    x = -np.arange(1, 257, dtype=np.float16)
    src.numpy()[:] = x
    ac.SetMaskNorm()
    ac.SetVectorMask(0x1, 0xF, dtype=ac.half, mode=ac.MaskMode.NORMAL)   # lanes 0-3 and 64
    ac.LeakyRelu(dst, src, 2, ac.MASK_PLACEHOLDER, 2, (1, 1, 8, 8), isSetMask=False)
    expected = naive_masked(dst.numpy(), x, 2, [0, 1, 2, 3, 64], 2, 1, 1, 8, 8)
    assert same_bits(dst.numpy(), expected)
    # the mask register is sticky until ResetMask: all lanes afterwards
    ac.ResetMask()
    ac.LeakyRelu(dst, src, 2, ac.MASK_PLACEHOLDER, 2, (1, 1, 8, 8), isSetMask=False)
    assert same_bits(dst.numpy(), naive_leaky_relu(x, 2))


def test_is_set_mask_false_normal_mode_length(core):
    dst, src = _pair(ac.float32, 128)
    x = -np.arange(1, 129, dtype=np.float32)
    src.numpy()[:] = x
    ac.SetVectorMask(10, dtype=ac.float32)
    ac.LeakyRelu(dst, src, 3, ac.MASK_PLACEHOLDER, 2, (1, 1, 8, 8), isSetMask=False)
    expected = naive_masked(dst.numpy(), x, 3, range(10), 2, 1, 1, 8, 8)
    assert same_bits(dst.numpy(), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_is_set_mask_false_counter_mode(core, dtype):
    lanes = 256 // dtype.itemsize
    n = 2 * lanes + 5
    dst, src = _pair(dtype, 3 * lanes)
    x = np.linspace(-8, 8, 3 * lanes).astype(dtype)
    src.numpy()[:] = x
    ac.SetMaskCount()
    ac.SetVectorMask(n, dtype=dtype, mode=ac.MaskMode.COUNTER)
    # high-dimension form: the counter decides how many elements (repeatTime is not used)
    ac.LeakyRelu(dst, src, 0.5, ac.MASK_PLACEHOLDER, 1, (1, 1, 8, 8), isSetMask=False)
    y = dst.numpy()
    assert same_bits(y[:n], naive_leaky_relu(x[:n], 0.5))
    assert np.all(y[n:] == SENTINEL[np.dtype(dtype)])
    # count form: the count argument is ignored, the counter applies
    dst2 = ac.LocalMemAllocator().Alloc(dtype, 3 * lanes)
    dst2.numpy()[:] = 0
    ac.LeakyRelu(dst2, src, 0.5, 1, isSetMask=False)
    assert same_bits(dst2.numpy()[:n], naive_leaky_relu(x[:n], 0.5))
    assert np.all(dst2.numpy()[n:] == 0)
    ac.SetMaskNorm()
    assert ac.GetMaskMode() is ac.MaskMode.NORMAL


def test_is_set_mask_true_overwrites_the_register(core):
    dst, src = _pair(ac.half, 128)
    src.numpy()[:] = -1
    ac.SetVectorMask(0, 1)          # only lane 0 in the register
    ac.LeakyRelu(dst, src, 2, 128, 1, (1, 1, 8, 8))
    assert np.all(dst.numpy() == -2)
    # the call's mask (continuous 128: every bit) is what the register holds afterwards
    assert (core.mask_high, core.mask_low) == (UINT64_MAX, UINT64_MAX)


def test_each_launch_block_starts_with_the_default_mask():
    seen = []

    def kernel():
        seen.append((ac.GetMaskMode(), ac.current_core().mask_low, ac.current_core().mask_high))
        ac.SetMaskCount()
        ac.SetVectorMask(3, mode=ac.MaskMode.COUNTER)

    ac.launch(kernel, 3)
    assert seen == [(ac.MaskMode.NORMAL, UINT64_MAX, UINT64_MAX)] * 3


# ------------------------------------------------------------------ property-based



@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from([ac.half, ac.float32]),
       repeats=st.integers(0, 6),
       dblk=st.integers(1, 3), sblk=st.integers(0, 3),
       drep=st.integers(0, 20), srep=st.integers(0, 20),
       bits=st.integers(0, (1 << 128) - 1),
       continuous=st.one_of(st.none(), st.integers(0, 200)),
       seed=st.integers(0, 2**32 - 1))
def test_mask_forms_property(dtype, repeats, dblk, sblk, drep, srep, bits, continuous, seed):
    lanes = 256 // dtype.itemsize
    e = 32 // dtype.itemsize
    if continuous is None:
        bits &= (1 << lanes) - 1
        mask = [bits & UINT64_MAX, bits >> 64]
        selected = [j for j in range(lanes) if bits >> j & 1]
    else:
        mask, selected = continuous, list(range(min(continuous, lanes)))
    span = lambda blk, rep: max(repeats - 1, 0) * rep * e + 7 * blk * e + e   # noqa: E731
    with ac.AICore():
        dst, src = _pair(dtype, span(sblk, srep), span(dblk, drep))
        rng = np.random.default_rng(seed)
        x = (rng.standard_normal(src.GetSize()) * 4).astype(dtype)
        src.numpy()[:] = x
        before = dst.numpy().copy()
        ac.LeakyRelu(dst, src, -1.5, mask, repeats, (dblk, sblk, drep, srep))
        expected = naive_masked(before, x, -1.5, selected, repeats, dblk, sblk, drep, srep)
        assert same_bits(dst.numpy(), expected)
