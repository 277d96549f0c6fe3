"""The kernel model: Unified Buffer, tensors, pipe and queues, data movement, launching."""

from __future__ import annotations

import numpy as np
import pytest
from _ascendc_testutil import naive_leaky_relu, same_bits

from leakyops import ascendc as ac


def test_unified_buffer_default_and_configurable_capacity():
    with ac.AICore() as c:
        assert c.ub.capacity == 192 * 1024 == ac.DEFAULT_UB_SIZE
    with ac.AICore(ub_size=256 * 1024) as c:
        assert c.ub.capacity == 262144 and c.ub.free == 262144


def test_allocations_are_32_byte_aligned_and_rounded_up(core):
    alloc = ac.LocalMemAllocator()
    a = alloc.Alloc(ac.half, 3)          # 6 bytes -> one 32-byte block
    b = alloc.Alloc(ac.float32, 9)       # 36 bytes -> two blocks
    c = alloc.Alloc(ac.half, 16)
    assert (a.GetPhyAddr(), b.GetPhyAddr(), c.GetPhyAddr()) == (0, 32, 96)
    assert core.ub.used == 128


def test_pipe_destroy_gives_memory_back(core):
    pipe = ac.TPipe()
    pipe.InitBuffer(ac.TBuf(), 1000)
    assert core.ub.used == 1024
    pipe.Destroy()
    assert core.ub.used == 0


def test_local_tensor_basics(core):
    t = ac.LocalMemAllocator().Alloc(ac.float32, 32)
    assert t.GetSize() == 32 and t.GetLength() == 128 and t.dtype == np.float32
    assert t.GetPosition() is ac.TPosition.VECCALC
    t.SetValue(5, 2.5)
    assert t.GetValue(5) == np.float32(2.5) and isinstance(t.GetValue(5), np.float32)
    v = t.numpy()
    v[7] = -3
    assert t.GetValue(7) == -3                    # the view shares the UB memory
    off = t[8:]                                   # operator[]: a tensor 8 elements on
    assert off.GetPhyAddr() == t.GetPhyAddr() + 32 and off.GetSize() == 24
    off.SetValue(0, 9)
    assert t.GetValue(8) == 9
    assert t[8:12].GetSize() == 4
    r = t.ReinterpretCast(ac.half)
    assert r.GetSize() == 64 and r.GetPhyAddr() == t.GetPhyAddr()
    assert "LocalTensor<float>" in repr(t)


def test_fresh_unified_buffer_reads_as_nan(core):
    # uninitialised Unified Buffer is garbage on the device; here it is NaN, so a kernel that
    # reads before writing produces visible NaNs instead of plausible numbers
    t = ac.LocalMemAllocator().Alloc(ac.half, 16)
    assert np.all(np.isnan(t.numpy()))


def test_global_tensor(core):
    x = np.arange(10, dtype=np.float32)
    g = ac.GlobalTensor(ac.float32)
    g.SetGlobalBuffer(x[2:], 5)                  # (__gm__ float*)x + 2, 5 elements
    assert g.GetSize() == 5 and g.GetValue(0) == 2
    g[1:].SetValue(0, 100)                       # gm[1] then SetValue
    assert x[3] == 100
    raw = np.zeros(16, np.uint8)                 # raw bytes viewed as half
    h = ac.GlobalTensor(ac.half)
    h.SetGlobalBuffer(raw)
    assert h.GetSize() == 8
    h.SetValue(0, 1.0)
    assert raw[:2].view(np.float16)[0] == 1
    auto = ac.GlobalTensor()                     # element type from the array
    auto.SetGlobalBuffer(np.zeros((2, 3), np.float16))
    assert auto.dtype == np.float16 and auto.GetSize() == 6


def test_queue_life_cycle_and_double_buffering(core):
    pipe = ac.TPipe()
    q = ac.TQue(ac.TPosition.VECIN, 2)
    pipe.InitBuffer(q, 2, 512)
    a = q.AllocTensor(ac.half)
    b = q.AllocTensor(ac.half)                   # two buffers in flight: double buffering
    assert a.GetPhyAddr() != b.GetPhyAddr() and a.GetSize() == 256
    assert a.GetPosition() is ac.TPosition.VECIN
    assert not q.VacantInQue()
    q.EnQue(a)
    q.EnQue(b)
    assert q.GetTensorCountInQue() == 2
    first = q.DeQue(ac.half)
    assert first.GetPhyAddr() == a.GetPhyAddr()  # FIFO
    q.FreeTensor(first)
    c = q.AllocTensor(ac.float32)                # the freed buffer comes back
    assert c.GetPhyAddr() == a.GetPhyAddr() and c.GetSize() == 128
    assert q.DeQue(ac.float32).dtype == np.float32   # DeQue<T> reinterprets
    assert q.HasTensorInQue() is False


def test_tbuf(core):
    pipe = ac.TPipe()
    buf = ac.TBuf(ac.TPosition.VECCALC)
    pipe.InitBuffer(buf, 256)
    assert buf.Get(ac.float32).GetSize() == 64
    assert buf.Get(ac.half, 10).GetSize() == 10
    part = buf.GetWithOffset(ac.half, 16, 64)
    assert part.GetPhyAddr() == buf.Get(ac.half).GetPhyAddr() + 64


def test_datacopy_round_trip_and_rounding_down(core):
    x = np.arange(40, dtype=np.float16)
    y = np.full(40, -1, np.float16)
    xg, yg = ac.GlobalTensor(ac.half), ac.GlobalTensor(ac.half)
    xg.SetGlobalBuffer(x)
    yg.SetGlobalBuffer(y)
    t = ac.LocalMemAllocator().Alloc(ac.half, 48)
    ac.DataCopy(t, xg, 40)                       # 80 bytes -> 64 are moved (rounded down)
    assert np.array_equal(t.numpy()[:32], x[:32]) and np.all(np.isnan(t.numpy()[32:]))
    t.numpy()[32:40] = x[32:]
    ac.DataCopy(yg, t, 40)
    assert np.array_equal(y[:32], x[:32]) and np.all(y[32:] == -1)
    u = ac.LocalMemAllocator().Alloc(ac.half, 48)
    ac.DataCopy(u, t, 48)                        # UB -> UB
    assert same_bits(u.numpy(), t.numpy())


def test_datacopy_with_block_params(core):
    x = np.arange(64, dtype=np.float32)
    xg = ac.GlobalTensor(ac.float32)
    xg.SetGlobalBuffer(x)
    t = ac.LocalMemAllocator().Alloc(ac.float32, 64)
    t.numpy()[:] = 0
    # 3 blocks of one DataBlock (8 floats), skipping one block in GM, two in UB
    ac.DataCopy(t, xg, ac.DataCopyParams(3, 1, 1, 2))
    v = t.numpy()
    assert np.array_equal(v[0:8], x[0:8]) and np.array_equal(v[24:32], x[16:24])
    assert np.array_equal(v[48:56], x[32:40]) and np.all(v[8:24] == 0)


def test_datacopypad_gm_to_ub_padding(core):
    x = np.arange(1, 31, dtype=np.float16)       # 3 rows of 10 halves = 20 bytes each
    xg = ac.GlobalTensor(ac.half)
    xg.SetGlobalBuffer(x)
    t = ac.LocalMemAllocator().Alloc(ac.half, 64)
    t.numpy()[:] = 0
    ac.DataCopyPad(t, xg, ac.DataCopyExtParams(3, 20, 0, 0, 0),
                   ac.DataCopyPadExtParams(True, 0, 6, -1))
    rows = t.numpy()[:48].reshape(3, 16)         # each row padded to 32 bytes
    assert np.array_equal(rows[:, :10], x.reshape(3, 10))
    assert np.all(rows[:, 10:] == -1)
    # no padding asked: the filler repeats the row's first element (the device's dummy)
    t.numpy()[:] = 0
    ac.DataCopyPad(t, xg, ac.DataCopyExtParams(1, 20, 0, 0, 0))
    assert np.array_equal(t.numpy()[:10], x[:10]) and np.all(t.numpy()[10:16] == x[0])
    # left padding and a GM stride in bytes
    t.numpy()[:] = 0
    ac.DataCopyPad(t, xg, ac.DataCopyExtParams(2, 8, 12, 1, 0),
                   ac.DataCopyPadExtParams(True, 2, 0, 7))
    v = t.numpy()
    assert np.array_equal(v[:8], [7, 7, 1, 2, 3, 4, 7, 7])
    assert np.array_equal(v[32:40], [7, 7, 11, 12, 13, 14, 7, 7])   # row pitch 32 B + 1 block


def test_datacopypad_ub_to_gm_exact_bytes(core):
    y = np.full(30, -1, np.float16)
    yg = ac.GlobalTensor(ac.half)
    yg.SetGlobalBuffer(y)
    t = ac.LocalMemAllocator().Alloc(ac.half, 64)
    t.numpy()[:] = np.arange(64)
    ac.DataCopyPad(yg, t, ac.DataCopyExtParams(2, 10, 1, 4, 0))
    # block 0: UB [0, 5) -> GM [0, 5); block 1: UB from 32+32 bytes -> GM from 10+4 bytes
    assert np.array_equal(y[:5], [0, 1, 2, 3, 4]) and y[5] == -1 and y[6] == -1
    assert np.array_equal(y[7:12], [32, 33, 34, 35, 36]) and np.all(y[12:] == -1)
    ac.DataCopyPad(yg, t, ac.DataCopyExtParams(0, 10, 0, 0, 0))   # blockCount 0: NOP


def test_launch_runs_every_block_on_its_own_core():
    seen = []

    def kernel(out, scale, *, extra):
        core = ac.current_core()
        pipe = ac.TPipe()
        buf = ac.TBuf()
        pipe.InitBuffer(buf, 160 * 1024)         # would not fit twice in one UB
        seen.append((ac.GetBlockIdx(), ac.GetBlockNum(), core.ub.used, core))
        out[ac.GetBlockIdx()] = ac.GetBlockIdx() * scale + extra

    out = np.zeros(4)
    ac.launch(kernel, 4, out, 10, extra=1)
    assert [s[:3] for s in seen] == [(i, 4, 160 * 1024) for i in range(4)]
    assert len({id(s[3]) for s in seen}) == 4       # the cores are kept alive in seen
    assert out.tolist() == [1, 11, 21, 31]
    seen.clear()
    ac.launch(kernel, 4, out, 10, extra=1, block_order=[3, 1, 0, 2])
    assert [s[0] for s in seen] == [3, 1, 0, 2]


def test_outside_a_launch_there_is_a_default_core():
    assert ac.GetBlockIdx() == 0 and ac.GetBlockNum() == 1
    with ac.AICore(block_idx=1, block_num=2):
        assert ac.GetBlockIdx() == 1
        with ac.AICore(block_idx=0, block_num=3):
            assert ac.GetBlockNum() == 3
        assert ac.GetBlockNum() == 2


def test_queue_pipeline_in_a_kernel():
    # a small CopyIn/Compute/CopyOut kernel with the mask form inside a launch
    x = np.linspace(-4, 4, 8 * 256).astype(np.float16)
    y = np.zeros_like(x)

    def kernel(x_gm, y_gm):
        n = 256
        off = ac.GetBlockIdx() * n
        xg, yg = ac.GlobalTensor(ac.half), ac.GlobalTensor(ac.half)
        xg.SetGlobalBuffer(x_gm[off:], n)
        yg.SetGlobalBuffer(y_gm[off:], n)
        pipe = ac.TPipe()
        qi, qo = ac.TQue(ac.TPosition.VECIN, 1), ac.TQue(ac.TPosition.VECOUT, 1)
        pipe.InitBuffer(qi, 1, n * 2)
        pipe.InitBuffer(qo, 1, n * 2)
        t = qi.AllocTensor(ac.half)
        ac.DataCopy(t, xg, n)
        qi.EnQue(t)
        src, dst = qi.DeQue(ac.half), qo.AllocTensor(ac.half)
        ac.LeakyRelu(dst, src, 0.1, 128, 2, (1, 1, 8, 8))
        qo.EnQue(dst)
        qi.FreeTensor(src)
        out = qo.DeQue(ac.half)
        ac.DataCopy(yg, out, n)
        qo.FreeTensor(out)

    ac.launch(kernel, 8, x, y)
    assert same_bits(y, naive_leaky_relu(x, 0.1))


def test_threads_have_their_own_current_core():
    import threading

    results = {}

    def worker(i):
        with ac.AICore(block_idx=i, block_num=4):
            t = ac.LocalMemAllocator().Alloc(ac.float32, 64)
            t.numpy()[:] = -i
            ac.LeakyRelu(t, t, 0.5, 64)
            results[i] = (ac.GetBlockIdx(), float(t.GetValue(63)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == {i: (i, -0.5 * i) for i in range(4)}


@pytest.mark.parametrize("position", [ac.TPosition.VECIN, ac.TPosition.VECOUT])
def test_queue_tensors_have_the_queue_position(core, position):
    pipe = ac.TPipe()
    q = ac.TQue(position, 1)
    pipe.InitBuffer(q, 1, 64)
    assert q.AllocTensor(ac.half).GetPosition() is position
