"""Every constraint of LeakyRelu and of the kernel model is a clear error that names the rule,
and a rejected call writes nothing."""

from __future__ import annotations

import numpy as np
import pytest
from _ascendc_testutil import SENTINEL

from leakyops import ascendc as ac


def _pair(dtype=ac.half, n=256):
    alloc = ac.LocalMemAllocator()
    src, dst = alloc.Alloc(dtype, n), alloc.Alloc(dtype, n)
    src.numpy()[:] = 1
    dst.numpy()[:] = SENTINEL.get(np.dtype(dtype), 0)
    return dst, src


def _raises_untouched(dst, exc, match, *call, **kw):
    before = dst.numpy().copy()
    with pytest.raises(exc, match=match):
        ac.LeakyRelu(*call, **kw)
    assert np.array_equal(dst.numpy().view(np.uint8), before.view(np.uint8))


# ---------------------------------------------------------------------- LeakyRelu rules

@pytest.mark.parametrize("dtype", [ac.int32_t, ac.int16_t, ac.uint8_t, ac.bfloat16_t])
def test_type_must_be_half_or_float(core, dtype):
    dst, src = _pair(dtype, 64)
    with pytest.raises(ac.AscendCTypeError, match="supports half and float"):
        ac.LeakyRelu(dst, src, 1, 64)
    assert issubclass(ac.AscendCTypeError, TypeError)


def test_src_type_must_match_dst(core):
    alloc = ac.LocalMemAllocator()
    dst, src = alloc.Alloc(ac.half, 64), alloc.Alloc(ac.float32, 64)
    _raises_untouched(dst, ac.AscendCTypeError, "src is float but dst is half",
                      dst, src, 1, 64)


def test_operands_must_be_local_tensors(core):
    dst, _ = _pair()
    with pytest.raises(ac.AscendCTypeError, match="src must be a LocalTensor"):
        ac.LeakyRelu(dst, np.zeros(256, np.float16), 1, 64)


@pytest.mark.parametrize("position", [ac.TPosition.A1, ac.TPosition.B2, ac.TPosition.CO1,
                                      ac.TPosition.GM])
@pytest.mark.parametrize("which", ["dst", "src"])
def test_position_must_be_vecin_veccalc_vecout(core, position, which):
    ub = core.ub
    a = ac.LocalTensor(ub, ub.allocate(512, "t"), ac.half, 256)
    b = ac.LocalTensor(ub, ub.allocate(512, "t"), ac.half, 256, position)
    dst, src = (b, a) if which == "dst" else (a, b)
    with pytest.raises(ac.ConstraintError, match=f"{which} is at TPosition {position.name}.*VECIN"):
        ac.LeakyRelu(dst, src, 1, 16)


@pytest.mark.parametrize("which", ["dst", "src"])
@pytest.mark.parametrize("form", ["count", "mask"])
def test_start_address_must_be_32_byte_aligned(core, which, form):
    dst, src = _pair(ac.half, 512)
    if which == "dst":
        dst = dst[3:]           # 6 bytes past a 32-byte boundary
    else:
        src = src[8:]           # 16 bytes past
    args = (64,) if form == "count" else (64, 1, (1, 1, 8, 8))
    _raises_untouched(dst, ac.ConstraintError, f"{which} start address .* not 32-byte aligned",
                      dst, src, 1, *args)


@pytest.mark.parametrize("which", ["dst", "src"])
def test_count_past_the_end(core, which):
    alloc = ac.LocalMemAllocator()
    big, small = alloc.Alloc(ac.float32, 128), alloc.Alloc(ac.float32, 64)
    dst, src = (small, big) if which == "dst" else (big, small)
    _raises_untouched(dst, ac.ConstraintError, f"count 65 is past the end of {which}, which "
                      "has 64 elements", dst, src, 1, 65)


def test_count_must_be_a_non_negative_int(core):
    dst, src = _pair()
    _raises_untouched(dst, ac.ConstraintError, "count must be >= 0", dst, src, 1, -1)
    _raises_untouched(dst, ac.ConstraintError, "count must be an integer", dst, src, 1, 3.0)


@pytest.mark.parametrize("repeat", [256, 1000])
def test_repeat_times_at_most_255(core, repeat):
    dst, src = _pair()
    _raises_untouched(dst, ac.ConstraintError, "repeatTime .* at most 255",
                      dst, src, 1, 128, repeat, (1, 1, 8, 8))
    _raises_untouched(dst, ac.ConstraintError, "repeatTime .* at most 255",
                      dst, src, 1, ac.MASK_PLACEHOLDER, repeat, (1, 1, 8, 8), isSetMask=False)


def test_repeat_times_negative(core):
    dst, src = _pair()
    _raises_untouched(dst, ac.ConstraintError, "repeatTime must be >= 0",
                      dst, src, 1, 128, -1, (1, 1, 8, 8))


def test_partial_overlap_count_form(core):
    t = ac.LocalMemAllocator().Alloc(ac.half, 256)
    t.numpy()[:] = -1
    before = t.numpy().copy()
    with pytest.raises(ac.ConstraintError, match="overlap partially"):
        ac.LeakyRelu(t[16:], t, 2, 64)          # dst starts 32 bytes into src's range
    with pytest.raises(ac.ConstraintError, match="overlap partially"):
        ac.LeakyRelu(t, t[48:], 2, 64)
    assert np.array_equal(t.numpy(), before)
    ac.LeakyRelu(t[64:], t, 2, 64)              # adjacent, no overlap: fine
    ac.LeakyRelu(t, t, 2, 16)                   # complete overlap (in place): fine
    assert np.all(t.numpy()[:16] == -2) and np.all(t.numpy()[64:128] == -2)


def test_partial_overlap_mask_form(core):
    t = ac.LocalMemAllocator().Alloc(ac.half, 1024)
    t.numpy()[:] = -1
    before = t.numpy().copy()
    # repeat N writes what repeat N+1 reads: dst = src shifted by one repeat
    with pytest.raises(ac.ConstraintError, match="overlap partially"):
        ac.LeakyRelu(t[128:], t, 2, 128, 2, (1, 1, 8, 8))
    # same start but different block strides: partial overlap inside a repeat
    with pytest.raises(ac.ConstraintError, match="overlap partially"):
        ac.LeakyRelu(t, t, 2, 128, 1, (2, 1, 16, 8))
    assert np.array_equal(t.numpy(), before)


def test_mask_form_past_the_end(core):
    dst, src = _pair(ac.half, 256)
    _raises_untouched(dst, ac.ConstraintError, "repeat 2 reaches element .* of dst, which has "
                      "256 elements", dst, src, 1, 128, 3, (1, 1, 8, 0))
    _raises_untouched(dst, ac.ConstraintError, "of src, which has 256", dst, src, 1, 128, 1,
                      (1, 3, 8, 8))


def test_bitwise_mask_words(core):
    dst, src = _pair(ac.half, 256)
    _raises_untouched(dst, ac.ConstraintError, r"mask\[0\]", dst, src, 1, [1 << 64, 0], 1,
                      (1, 1, 8, 8))
    _raises_untouched(dst, ac.ConstraintError, r"mask\[1\]", dst, src, 1, [1, -1], 1,
                      (1, 1, 8, 8))
    fdst, fsrc = _pair(ac.float32, 128)
    _raises_untouched(fdst, ac.ConstraintError, r"mask\[1\] must be 0 for a 32-bit type",
                      fdst, fsrc, 1, [1, 1], 1, (1, 1, 8, 8))
    # the vendor reads mask[0] and mask[1] ("数组长度大于等于2"): one word is too few
    _raises_untouched(dst, ac.AscendCTypeError, "mask must be an int", dst, src, 1, [1],
                      1, (1, 1, 8, 8))
    _raises_untouched(dst, ac.ConstraintError, "continuous mode.*>= 0", dst, src, 1, -5, 1,
                      (1, 1, 8, 8))


@pytest.mark.parametrize("params, name", [((1, 1, 256, 8), "dstRepStride"),
                                          ((1, 1, 8, -1), "srcRepStride"),
                                          ((65536, 1, 8, 8), "dstBlkStride")])
def test_repeat_params_ranges(core, params, name):
    dst, src = _pair()
    _raises_untouched(dst, ac.ConstraintError, name, dst, src, 1, 128, 1, params)


def test_repeat_params_type(core):
    dst, src = _pair()
    _raises_untouched(dst, ac.AscendCTypeError, "repeatParams must be", dst, src, 1, 128, 1,
                      "1,1,8,8")


@pytest.mark.parametrize("scalar", [1j, "0.1", np.array([0.1, 0.2]), None])
def test_scalar_must_be_real(core, scalar):
    dst, src = _pair()
    _raises_untouched(dst, ac.AscendCTypeError, "scalarValue must be a real number",
                      dst, src, scalar, 16)


def test_wrong_number_of_arguments(core):
    dst, src = _pair()
    with pytest.raises(TypeError, match="LeakyRelu"):
        ac.LeakyRelu(dst, src, 1, 128, 1)
    with pytest.raises(TypeError, match="LeakyRelu"):
        ac.LeakyRelu(dst, src, 1)


def test_dst_block_stride_zero_is_an_error(core):
    # 高维切分.md: "dstBlkStride不支持设置为0" (undefined behaviour on the device)
    dst, src = _pair()
    _raises_untouched(dst, ac.ConstraintError, "dstBlkStride = 0 is not supported",
                      dst, src, 1, 128, 1, (0, 1, 8, 8))
    _raises_untouched(dst, ac.ConstraintError, "dstBlkStride = 0 is not supported",
                      dst, src, 1, 128, 1, ac.UnaryRepeatParams(0, 1, 8, 8))


def test_operands_from_different_cores():
    with ac.AICore():
        a = ac.LocalMemAllocator().Alloc(ac.half, 64)
    with ac.AICore():
        b = ac.LocalMemAllocator().Alloc(ac.half, 64)
        with pytest.raises(ac.ConstraintError, match="different Unified Buffers"):
            ac.LeakyRelu(a, b, 1, 16)


# ----------------------------------------------------------------- memory and queues

def test_unified_buffer_overflow_says_asked_and_left():
    with ac.AICore(ub_size=4096):
        pipe = ac.TPipe()
        q = ac.TQue(ac.TPosition.VECIN, 2)
        pipe.InitBuffer(q, 2, 1500)           # 2 x 1504 bytes
        buf = ac.TBuf()
        with pytest.raises(ac.UnifiedBufferOverflowError,
                           match=r"asked for 1100 bytes \(1120 in 32-byte blocks\) but only "
                                 r"1088 of 4096 bytes are left"):
            pipe.InitBuffer(buf, 1100)
        assert issubclass(ac.UnifiedBufferOverflowError, ac.ConstraintError)


def test_unified_buffer_capacity_rules():
    with pytest.raises(ac.ConstraintError, match="multiple of 32"):
        ac.AICore(ub_size=1000)
    with pytest.raises(ac.ConstraintError, match="capacity"):
        ac.AICore(ub_size=0)


@pytest.mark.parametrize("size", [2**40, ac.MAX_UB_SIZE + 32])
def test_unified_buffer_size_is_bounded(size):
    # a huge UB is refused, naming the limit, before anything is allocated (2**40 bytes would
    # otherwise be tried), in AICore, UnifiedBuffer and launch alike
    assert ac.MAX_UB_SIZE == 1 << 20 and ac.MAX_UB_SIZE >= 4 * ac.ASCEND950_UB_SIZE
    msg = rf"at most MAX_UB_SIZE = 1048576 bytes .* got {size}"
    with pytest.raises(ac.ConstraintError, match=msg):
        ac.AICore(ub_size=size)
    with pytest.raises(ac.ConstraintError, match=msg):
        ac.UnifiedBuffer(size)
    ran = []
    with pytest.raises(ac.ConstraintError, match=msg):
        ac.launch(lambda: ran.append(1), 2, ub_size=size)
    assert ran == []
    with ac.AICore(ub_size=ac.MAX_UB_SIZE) as core:           # the limit itself is fine
        assert core.ub.capacity == ac.MAX_UB_SIZE


def test_queue_misuse(core):
    pipe = ac.TPipe()
    q = ac.TQue(ac.TPosition.VECIN, 2)
    with pytest.raises(ac.QueueError, match="InitBuffer"):
        q.AllocTensor(ac.half)
    pipe.InitBuffer(q, 2, 256)
    with pytest.raises(ac.QueueError, match="empty"):
        q.DeQue(ac.half)
    a, b = q.AllocTensor(ac.half), q.AllocTensor(ac.half)
    with pytest.raises(ac.QueueError, match="all 2 buffers .* in use"):
        q.AllocTensor(ac.half)
    q.EnQue(a)
    with pytest.raises(ac.QueueError, match="enqueued"):
        q.EnQue(a)
    with pytest.raises(ac.QueueError, match="enqueued"):
        q.FreeTensor(a)
    with pytest.raises(ac.QueueError, match="not allocated from this queue"):
        q.EnQue(b[16:])
    other = ac.LocalMemAllocator().Alloc(ac.half, 128)
    with pytest.raises(ac.QueueError, match="not allocated from this queue"):
        q.FreeTensor(other)
    q.FreeTensor(q.DeQue(ac.half))
    with pytest.raises(ac.QueueError, match="free"):
        q.FreeTensor(a)                       # double free
    with pytest.raises(ac.ConstraintError, match="already has its buffers"):
        pipe.InitBuffer(q, 2, 256)


def test_queue_position_and_pipe_arguments(core):
    with pytest.raises(ac.ConstraintError, match="not emulated"):
        ac.TQue(ac.TPosition.A1, 1)
    with pytest.raises(ac.AscendCTypeError, match="TPosition"):
        ac.TQue("VECIN", 1)
    pipe = ac.TPipe()
    with pytest.raises(ac.AscendCTypeError, match="TQue or TBuf"):
        pipe.InitBuffer(object(), 1, 32)
    with pytest.raises(TypeError, match="num, len"):
        pipe.InitBuffer(ac.TQue(ac.TPosition.VECOUT), 32)
    with pytest.raises(ac.ConstraintError, match="TBuf.Get: call TPipe.InitBuffer"):
        ac.TBuf().Get(ac.half)


# ------------------------------------------------------------------------ DataCopy

def test_datacopy_rules(core):
    alloc = ac.LocalMemAllocator()
    t = alloc.Alloc(ac.half, 64)
    g = ac.GlobalTensor(ac.half)
    g.SetGlobalBuffer(np.zeros(64, np.float16))
    with pytest.raises(ac.ConstraintError, match="not 32-byte aligned"):
        ac.DataCopy(t[1:], g, 16)
    with pytest.raises(ac.ConstraintError, match="count 65 is past the end"):
        ac.DataCopy(t, g, 65)
    f = ac.GlobalTensor(ac.float32)
    f.SetGlobalBuffer(np.zeros(64, np.float32))
    with pytest.raises(ac.AscendCTypeError, match="types must match"):
        ac.DataCopy(t, f, 16)
    with pytest.raises(ac.AscendCTypeError, match="GlobalTensor<->LocalTensor"):
        ac.DataCopy(g, g, 16)
    with pytest.raises(ac.ConstraintError, match="multiple of sizeof"):
        ac.DataCopyPad(t, g, ac.DataCopyExtParams(1, 3, 0, 0, 0))
    with pytest.raises(ac.ConstraintError, match="reads 130 bytes but src holds 128"):
        ac.DataCopyPad(t, g, ac.DataCopyExtParams(2, 64, 2, 0, 0))
    with pytest.raises(ac.ConstraintError, match="may not exceed 32 bytes"):
        ac.DataCopyPad(t, g, ac.DataCopyExtParams(1, 32, 0, 0, 0),
                       ac.DataCopyPadExtParams(True, 17, 0, 0))


def test_global_tensor_rules():
    g = ac.GlobalTensor(ac.half)
    with pytest.raises(ac.ConstraintError, match="SetGlobalBuffer has not been called"):
        g.GetSize()
    with pytest.raises(ac.AscendCTypeError, match="NumPy array"):
        g.SetGlobalBuffer([1.0, 2.0])
    with pytest.raises(ac.AscendCTypeError, match="dtype float32"):
        g.SetGlobalBuffer(np.zeros(4, np.float32))
    with pytest.raises(ac.ConstraintError, match="C-contiguous"):
        g.SetGlobalBuffer(np.zeros(8, np.float16)[::2])
    with pytest.raises(ac.ConstraintError, match="bufferSize must be <= 8"):
        g.SetGlobalBuffer(np.zeros(8, np.float16), 9)


def test_tensor_indexing_rules(core):
    t = ac.LocalMemAllocator().Alloc(ac.half, 16)
    with pytest.raises(TypeError, match=r"t\[3:\]|\[3:\]"):
        t[3]
    with pytest.raises(ac.ConstraintError, match="out of range"):
        t[17:]
    with pytest.raises(ac.ConstraintError, match="index must be <= 15"):
        t.GetValue(16)
    with pytest.raises(TypeError, match="offset"):
        t[::2]


def test_launch_rules():
    with pytest.raises(ac.ConstraintError, match="block_dim must be >= 1"):
        ac.launch(lambda: None, 0)
    with pytest.raises(ac.ConstraintError, match="permutation"):
        ac.launch(lambda: None, 3, block_order=[0, 1, 1])
    with pytest.raises(TypeError, match="callable"):
        ac.launch(None, 1)
