"""The mask register behaves like the device's: the vendor's mask documents (通用说明.md,
接口内设置Mask.md, 接口外设置Mask.md, SetVectorMask.md) as tests, and the four fixes of issue 16
(a Counter-mode in-call mask is an element count; the count form leaves Normal mode with a
full mask; maskHigh must be 0 in Counter mode; dstBlkStride = 0 and > 64 TPipe buffers are
errors)."""

from __future__ import annotations

import numpy as np
import pytest
from _ascendc_testutil import lane_walk, same_bits

from leakyops import ascendc as ac

UINT64_MAX = (1 << 64) - 1
DOC_BITS = 0x69A569A569A569A5          # the documents' bitwise example
DTYPES = [pytest.param(ac.half, id="half"), pytest.param(ac.float32, id="float")]


def _pair(dtype, n_src, n_dst=None, fill=0):
    alloc = ac.LocalMemAllocator()
    src = alloc.Alloc(dtype, n_src)
    dst = alloc.Alloc(dtype, n_src if n_dst is None else n_dst)
    src.numpy()[:] = np.arange(1, n_src + 1) % 1000
    dst.numpy()[:] = fill
    return dst, src


def _expect_adds(dst_before, src, scalar, walk):
    out = dst_before.copy()
    for i in walk:
        out[i] = src[i] + src.dtype.type(scalar)
    return out


def _bits(word_low, word_high, lanes):
    return [j for j in range(lanes) if ((word_high << 64) | word_low) >> j & 1]


# -------------------------------------------------- 接口内设置Mask.md (mask given in the call)

def test_doc_in_call_counter_first_n(core):
    # "uint64_t count = 128; Adds(dstLocal, srcLocal, addsValue, count)"
    dst, src = _pair(ac.half, 256)
    ac.Adds(dst, src, np.float16(1.0), 128)
    walk = lane_walk(128, 2, 1, 8, counter=128)
    assert same_bits(dst.numpy(), _expect_adds(np.zeros(256, np.float16), src.numpy(), 1, walk))
    assert ac.GetMaskMode() is ac.MaskMode.NORMAL


@pytest.mark.parametrize("api", ["Adds", "LeakyRelu"])
def test_doc_in_call_counter_high_dimension_130(core, api):
    # "SetMaskCount(); uint64_t mask[2] = {130, 0}; Adds(dst, src, v, mask, 1, {2, 2, 16, 16})":
    # mask[0] is an element count (130), repeatTime is ignored, blocks one apart
    dst, src = _pair(ac.half, 512)
    src.numpy()[:] = -np.arange(2, 514)
    ac.SetMaskCount()
    if api == "Adds":
        ac.Adds(dst, src, np.float16(1.0), [130, 0], 1, ac.UnaryRepeatParams(2, 2, 16, 16))
    else:
        ac.LeakyRelu(dst, src, 2.0, [130, 0], 1, ac.UnaryRepeatParams(2, 2, 16, 16))
    ac.SetMaskNorm()
    walk = lane_walk(128, 2, 2, 16, counter=130)
    assert len(walk) == 130 and walk[-1] == 257            # the second repeat's first 2 lanes
    x = src.numpy()
    want = np.zeros(512, np.float16)
    want[walk] = x[walk] + np.float16(1) if api == "Adds" else x[walk] * np.float16(2)
    assert same_bits(dst.numpy(), want)
    assert np.count_nonzero(dst.numpy()) == 130


def test_doc_in_call_normal_bitwise_and_continuous(core):
    dst, src = _pair(ac.half, 512)
    ac.Adds(dst, src, np.float16(1.0), [DOC_BITS, DOC_BITS], 1, (2, 2, 16, 16))
    walk = lane_walk(128, 2, 2, 16, 1, _bits(DOC_BITS, DOC_BITS, 128))
    assert same_bits(dst.numpy(), _expect_adds(np.zeros(512, np.float16), src.numpy(), 1, walk))
    dst2, _ = _pair(ac.half, 512)
    ac.Adds(dst2, src, np.float16(1.0), 128, 1, (2, 2, 16, 16))
    walk = lane_walk(128, 2, 2, 16, 1)
    assert same_bits(dst2.numpy(), _expect_adds(np.zeros(512, np.float16), src.numpy(), 1, walk))


def test_in_call_mask_stays_in_the_register(core):
    # AscendCUtils::SetMask writes the register; a later isSetMask=false call uses it
    dst, src = _pair(ac.float32, 128)
    ac.Muls(dst, src, 2.0, [0b1011, 0], 1, (1, 1, 8, 8))
    assert (ac.current_core().mask_high, ac.current_core().mask_low) == (0, 0b1011)
    dst.numpy()[:] = 0
    ac.Muls(dst, src, 3.0, ac.MASK_PLACEHOLDER, 2, (1, 1, 8, 8), isSetMask=False)
    assert np.flatnonzero(dst.numpy()).tolist() == [0, 1, 3, 64, 65, 67]
    # a continuous mask is stored as the device stores it (64 -> low word only)
    ac.Muls(dst, src, 2.0, 64, 1, (1, 1, 8, 8))
    assert (ac.current_core().mask_high, ac.current_core().mask_low) == (0, UINT64_MAX)


# -------------------------------------------------- 接口外设置Mask.md (SetVectorMask first)

def test_doc_external_counter_first_n(core):
    # "SetMaskCount(); SetVectorMask<half, COUNTER>(128); Adds<half, false>(dst, src, v, 1);"
    dst, src = _pair(ac.half, 256)
    ac.SetMaskCount()
    ac.SetVectorMask(128, dtype=ac.half, mode=ac.MaskMode.COUNTER)
    ac.Adds(dst, src, np.float16(1.0), 1, isSetMask=False)
    ac.SetMaskNorm()
    ac.ResetMask()
    walk = lane_walk(128, 2, 1, 8, counter=128)
    assert same_bits(dst.numpy(), _expect_adds(np.zeros(256, np.float16), src.numpy(), 1, walk))


def test_doc_external_counter_high_dimension_130(core):
    dst, src = _pair(ac.half, 512)
    ac.SetMaskCount()
    ac.SetVectorMask(130, dtype=ac.half, mode=ac.MaskMode.COUNTER)
    ac.Adds(dst, src, np.float16(1.0), ac.MASK_PLACEHOLDER, 1, (2, 2, 16, 16), isSetMask=False)
    ac.SetMaskNorm()
    ac.ResetMask()
    walk = lane_walk(128, 2, 2, 16, counter=130)
    assert same_bits(dst.numpy(), _expect_adds(np.zeros(512, np.float16), src.numpy(), 1, walk))


def test_doc_external_normal_bitwise_and_continuous(core):
    dst, src = _pair(ac.half, 512)
    ac.SetMaskNorm()
    ac.SetVectorMask(DOC_BITS, DOC_BITS, dtype=ac.half, mode=ac.MaskMode.NORMAL)
    ac.Adds(dst, src, np.float16(1.0), ac.MASK_PLACEHOLDER, 1, (2, 2, 16, 16), isSetMask=False)
    ac.ResetMask()
    walk = lane_walk(128, 2, 2, 16, 1, _bits(DOC_BITS, DOC_BITS, 128))
    assert same_bits(dst.numpy(), _expect_adds(np.zeros(512, np.float16), src.numpy(), 1, walk))
    dst2, _ = _pair(ac.half, 512)
    ac.SetVectorMask(128, dtype=ac.half)
    ac.Adds(dst2, src, np.float16(1.0), ac.MASK_PLACEHOLDER, 1, (2, 2, 16, 16), isSetMask=False)
    ac.ResetMask()
    walk = lane_walk(128, 2, 2, 16, 1)
    assert same_bits(dst2.numpy(), _expect_adds(np.zeros(512, np.float16), src.numpy(), 1, walk))


def test_doc_set_vector_mask_examples(core):
    # SetVectorMask.md, Normal mode: SetVectorMask(FULL, FULL); Add, Sub, Mul with
    # {2, 2, 2, 8, 8, 8}; Counter mode: SetVectorMask<COUNTER>(128) with {1, 1, 1, 8, 8, 8}
    alloc = ac.LocalMemAllocator()
    d, s0, s1 = (alloc.Alloc(ac.half, 512) for _ in range(3))
    a, b = np.arange(1, 513, dtype=np.float16) % 64, np.full(512, 3, np.float16)
    s0.numpy()[:], s1.numpy()[:], d.numpy()[:] = a, b, 0
    ac.SetMaskNorm()
    ac.SetVectorMask(UINT64_MAX, UINT64_MAX, dtype=ac.half)
    ac.Add(d, s0, s1, ac.MASK_PLACEHOLDER, 1, (2, 2, 2, 8, 8, 8), isSetMask=False)
    walk = lane_walk(128, 2, 2, 8, 1)
    want = np.zeros(512, np.float16)
    want[walk] = a[walk] + b[walk]
    assert same_bits(d.numpy(), want)
    ac.Sub(s0, d, s1, ac.MASK_PLACEHOLDER, 1, (2, 2, 2, 8, 8, 8), isSetMask=False)
    a2 = a.copy()
    a2[walk] = want[walk] - b[walk]
    assert same_bits(s0.numpy(), a2)
    ac.Mul(s1, d, s0, ac.MASK_PLACEHOLDER, 1, (2, 2, 2, 8, 8, 8), isSetMask=False)
    b2 = b.copy()
    b2[walk] = want[walk] * a2[walk]
    assert same_bits(s1.numpy(), b2)
    ac.ResetMask()
    # Counter mode with the count form's companion: Adds and Muls with count 1, isSetMask=false
    x = alloc.Alloc(ac.half, 256)
    y = alloc.Alloc(ac.half, 256)
    x.numpy()[:] = np.arange(256) % 50
    y.numpy()[:] = 0
    ac.SetMaskCount()
    ac.SetVectorMask(128, dtype=ac.half, mode=ac.MaskMode.COUNTER)
    ac.Adds(y, x, np.float16(2), 1, isSetMask=False)
    ac.Muls(y, x, np.float16(2), 1, isSetMask=False)
    ac.SetMaskNorm()
    ac.ResetMask()
    want = np.zeros(256, np.float16)
    want[:128] = x.numpy()[:128] * np.float16(2)
    assert same_bits(y.numpy(), want)


# -------------------------------------------------------------- the four fixes of issue 16

@pytest.mark.parametrize("dtype", DTYPES)
def test_count_form_leaves_normal_mode_with_a_full_mask(core, dtype):
    # AddsImpl (count): SetMaskCount; SetMask(0, count); ...; ResetMask(); SetMaskNorm()
    lanes = 256 // dtype.itemsize
    dst, src = _pair(dtype, 4 * lanes)
    src.numpy()[:] = -1
    ac.SetMaskCount()
    ac.SetVectorMask(lanes, dtype=dtype, mode=ac.MaskMode.COUNTER)
    ac.LeakyRelu(dst, src, 2.0, 16)                     # the count form, isSetMask=true
    core_ = ac.current_core()
    assert ac.GetMaskMode() is ac.MaskMode.NORMAL
    assert (core_.mask_high, core_.mask_low) == (UINT64_MAX, UINT64_MAX)
    # so a following isSetMask=false call covers its 4 full repeats, not a 64-element count
    ac.LeakyRelu(dst, src, 3.0, ac.MASK_PLACEHOLDER, 4, (1, 1, 8, 8), isSetMask=False)
    assert np.all(dst.numpy() == -3)


def test_count_zero_still_resets_the_register(core):
    dst, src = _pair(ac.half, 128)
    ac.SetMaskCount()
    ac.SetVectorMask(5, mode=ac.MaskMode.COUNTER)
    ac.Adds(dst, src, np.float16(1), 0)
    assert not dst.numpy().any()                         # documented NOP
    assert ac.GetMaskMode() is ac.MaskMode.NORMAL and ac.current_core().mask_low == UINT64_MAX


def test_counter_mode_mask_high_must_be_zero(core):
    dst, src = _pair(ac.float32, 256)
    ac.SetMaskCount()
    ac.SetVectorMask(UINT64_MAX, UINT64_MAX)     # NORMAL encoding while the mode is Counter
    before = dst.numpy().copy()
    for call in (lambda: ac.LeakyRelu(dst, src, 3.0, ac.MASK_PLACEHOLDER, 4, (1, 1, 8, 8),
                                      isSetMask=False),
                 lambda: ac.LeakyRelu(dst, src, 3.0, 1, isSetMask=False),
                 lambda: ac.LeakyRelu(dst, src, 3.0, [130, 1], 1, (1, 1, 8, 8))):
        with pytest.raises(ac.ConstraintError, match="high word must be 0"):
            call()
    assert same_bits(dst.numpy(), before)
    # the counter is 32 bits: a count beyond UINT32_MAX is refused before any work
    ac.SetVectorMask(0, 1 << 40)
    with pytest.raises(ac.ConstraintError, match=r"\[0, UINT32_MAX\]"):
        ac.LeakyRelu(dst, src, 3.0, 1, isSetMask=False)
    # a count within 32 bits that reaches past the tensors is refused by the range check
    ac.SetVectorMask(0, 1 << 31)
    with pytest.raises(ac.ConstraintError, match="limit|past the end|reaches element"):
        ac.LeakyRelu(dst, src, 3.0, ac.MASK_PLACEHOLDER, 1, (1, 1, 8, 8), isSetMask=False)
    assert same_bits(dst.numpy(), before)


def test_counter_mode_continuous_mask_is_read_as_a_count(core):
    # AscendCUtils::SetMask<T>(len) stores len as a bit pattern in either mode, so in Counter
    # mode a continuous mask n counts 2**n - 1 elements, and n > 64 sets maskHigh
    dst, src = _pair(ac.half, 256)
    src.numpy()[:] = -1
    ac.SetMaskCount()
    ac.LeakyRelu(dst, src, 2.0, 3, 1, (1, 1, 8, 8))
    assert np.flatnonzero(dst.numpy()).tolist() == list(range(7))
    with pytest.raises(ac.ConstraintError, match="high word must be 0"):
        ac.LeakyRelu(dst, src, 2.0, 100, 1, (1, 1, 8, 8))


def test_count_form_without_set_mask_in_normal_mode_runs_one_repeat(core):
    # the vendor runs the instruction once (repeatTime 1, contiguous strides) on whatever the
    # register holds; in Normal mode that is one masked repeat, whatever count says
    dst, src = _pair(ac.half, 512)
    src.numpy()[:] = -1
    ac.LeakyRelu(dst, src, 2.0, 1, isSetMask=False)      # default register: all 128 lanes
    assert np.flatnonzero(dst.numpy()).tolist() == list(range(128))
    dst.numpy()[:] = 0
    ac.SetVectorMask(0, 0b101)
    ac.LeakyRelu(dst, src, 2.0, 400, isSetMask=False)
    assert np.flatnonzero(dst.numpy()).tolist() == [0, 2]


@pytest.mark.parametrize("call", ["Adds", "Add", "Duplicate", "Cast"])
def test_dst_block_stride_zero_is_an_error_for_every_instruction(core, call):
    alloc = ac.LocalMemAllocator()
    d, s, t = (alloc.Alloc(ac.float32, 256) for _ in range(3))
    d.numpy()[:] = 7
    with pytest.raises(ac.ConstraintError, match="dstB.*= 0 is not supported"):
        if call == "Adds":
            ac.Adds(d, s, 1.0, 64, 1, (0, 1, 8, 8))
        elif call == "Add":
            ac.Add(d, s, t, 64, 1, ac.BinaryRepeatParams(0, 1, 1, 8, 8, 8))
        elif call == "Duplicate":
            ac.Duplicate(d, 1.0, 64, 1, 0, 8)
        else:
            ac.Cast(d, s, ac.RoundMode.CAST_RINT, 64, 1, (0, 1, 8, 8))
    assert np.all(d.numpy() == 7)


def test_at_most_64_buffers_in_one_tpipe(core):
    pipe = ac.TPipe()
    ques = [ac.TQue(ac.TPosition.VECIN, 2) for _ in range(32)]
    for q in ques[:31]:
        pipe.InitBuffer(q, 2, 32)                       # 62 buffers
    pipe.InitBuffer(ac.TBuf(), 32)                      # 63
    used = core.ub.used
    with pytest.raises(ac.ConstraintError, match="65 buffers; at most 64"):
        pipe.InitBuffer(ques[31], 2, 32)
    assert core.ub.used == used                         # refused before allocating
    pipe.InitBuffer(ac.TBuf(), 32)                      # 64: allowed
    with pytest.raises(ac.ConstraintError, match="at most 64"):
        pipe.InitBuffer(ac.TBuf(), 32)
    pipe.Destroy()                                      # the count goes with the memory
    pipe.InitBuffer(ques[31], 2, 32)


def test_init_soc_state_restores_normal_mode_and_full_mask(core):
    ac.SetMaskCount()
    ac.SetVectorMask(0, 5)
    ac.InitSocState()
    assert ac.GetMaskMode() is ac.MaskMode.NORMAL
    assert (core.mask_high, core.mask_low) == (UINT64_MAX, UINT64_MAX)
