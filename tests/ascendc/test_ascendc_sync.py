"""Pipes, events and the sync calls (SetFlag/WaitFlag, PipeBarrier, InitSocState) with the
argument and order checks the emulation can see, and the static-tensor constructor
``LocalTensor<T>(pos, addr, tileSize)``."""

from __future__ import annotations

import numpy as np
import pytest

from leakyops import ascendc as ac


def test_constants_have_the_vendors_values():
    assert [int(p) for p in (ac.PIPE_S, ac.PIPE_V, ac.PIPE_M, ac.PIPE_MTE1, ac.PIPE_MTE2,
                             ac.PIPE_MTE3, ac.PIPE_ALL)] == [1, 2, 3, 4, 5, 6, 10]
    assert [int(e) for e in (ac.EVENT_ID0, ac.EVENT_ID1, ac.EVENT_ID7)] == [0, 1, 7]
    assert ac.HardEvent.MTE2_MTE1 == 0 and ac.HardEvent.MTE2_V == 4 and ac.HardEvent.V_MTE3 == 7
    assert ac.HardEvent.FIX_FIX == 34


def test_doc_example_setflag_waitflag(core):
    # SetFlag-WaitFlag(ISASI).md: DataCopy (MTE2) writes src0Local, Maxs/Mins (V) read it
    alloc = ac.LocalMemAllocator()
    x = np.linspace(-4, 4, 256).astype(np.float32)
    g = ac.GlobalTensor(ac.float32)
    g.SetGlobalBuffer(x)
    src, t1, t2 = (alloc.Alloc(ac.float32, 256) for _ in range(3))
    ac.DataCopy(src, g, 256)
    ac.SetFlag[ac.HardEvent.MTE2_V](ac.EVENT_ID0)
    ac.WaitFlag[ac.HardEvent.MTE2_V](ac.EVENT_ID0)
    ac.Maxs(t1, src, 0.0, 256)
    ac.Mins(t2, src, 0.0, 256)
    assert np.array_equal(t1.numpy(), np.maximum(x, 0)) and np.array_equal(t2.numpy(),
                                                                          np.minimum(x, 0))
    assert not core.flags


def test_doc_example_pipe_barrier_between_dependent_vector_ops(core):
    # PipeBarrier(ISASI).md: Add, PipeBarrier<PIPE_V>, Mul reading Add's result
    alloc = ac.LocalMemAllocator()
    s0, s1, s2, d0, d1 = (alloc.Alloc(ac.half, 512) for _ in range(5))
    s0.numpy()[:], s1.numpy()[:], s2.numpy()[:] = 1, 2, 3
    ac.Add(d0, s0, s1, 512)
    ac.PipeBarrier[ac.PIPE_V]()
    ac.Mul(d1, d0, s2, 512)
    ac.PipeBarrier(ac.PIPE_ALL)
    assert np.all(d1.numpy() == 9)


def test_set_twice_wait_without_set(core):
    ac.SetFlag(ac.HardEvent.V_MTE3, ac.EVENT_ID1)
    with pytest.raises(ac.ConstraintError, match="already set.*undefined behaviour"):
        ac.SetFlag(ac.HardEvent.V_MTE3, ac.EVENT_ID1)
    ac.SetFlag(ac.HardEvent.V_MTE3, ac.EVENT_ID2)          # another ID is another flag
    ac.WaitFlag(ac.HardEvent.V_MTE3, ac.EVENT_ID1)
    ac.WaitFlag(ac.HardEvent.V_MTE3, ac.EVENT_ID2)
    with pytest.raises(ac.ConstraintError, match="no SetFlag<HardEvent::V_MTE3>\\(1\\) is pending"):
        ac.WaitFlag(ac.HardEvent.V_MTE3, ac.EVENT_ID1)
    # pairs must match in event and ID
    ac.SetFlag(ac.HardEvent.MTE2_V, 0)
    with pytest.raises(ac.ConstraintError, match="MTE3 pipe would wait"):
        ac.WaitFlag(ac.HardEvent.V_MTE3, 0)
    ac.WaitFlag(ac.HardEvent.MTE2_V, 0)


def test_argument_checks(core):
    with pytest.raises(ac.AscendCTypeError, match="must be a HardEvent"):
        ac.SetFlag("MTE2_V", 0)
    with pytest.raises(ac.ConstraintError, match="eventID must be <= 7"):
        ac.SetFlag(ac.HardEvent.MTE2_V, 8)
    with pytest.raises(ac.ConstraintError, match="eventID must be >= 0"):
        ac.WaitFlag(ac.HardEvent.MTE2_V, -1)
    with pytest.raises(ac.ConstraintError, match="does not have"):
        ac.SetFlag(ac.HardEvent.MTE1_M, 0)                  # a cube-core event
    with pytest.raises(ac.ConstraintError, match="PIPE_S.*not supported"):
        ac.PipeBarrier(ac.PIPE_S)
    with pytest.raises(ac.AscendCTypeError, match="must be a pipe_t"):
        ac.PipeBarrier(2)
    with pytest.raises(TypeError):
        ac.PipeBarrier()
    assert not core.flags


def test_launch_reports_a_flag_never_waited_for():
    def kernel():
        ac.SetFlag[ac.HardEvent.V_MTE2](ac.EVENT_ID0)

    with pytest.raises(ac.ConstraintError, match="block 0 returned with "
                       "SetFlag<HardEvent::V_MTE2>\\(0\\) never matched"):
        ac.launch(kernel, 2)

    def balanced():
        ac.InitSocState()
        ac.SetFlag[ac.HardEvent.V_MTE2](ac.EVENT_ID0)
        ac.WaitFlag[ac.HardEvent.V_MTE2](ac.EVENT_ID0)
        ac.PipeBarrier[ac.PIPE_ALL]()

    ac.launch(balanced, 3)


def test_static_local_tensor_constructor(core):
    # LocalTensor构造函数.md example 20: LocalTensor<float>(TPosition::VECIN, 128, 32)
    t = ac.LocalTensor[ac.float32](ac.TPosition.VECIN, 128, 32)
    assert (t.GetPhyAddr(), t.GetSize(), t.GetLength(), t.GetPosition()) == \
        (128, 32, 128, ac.TPosition.VECIN)
    t.numpy()[:] = 5
    alias = ac.LocalTensor[ac.half](ac.TPosition.VECCALC, 128, 64)   # the same bytes
    assert alias.numpy().view(np.float32).tolist() == [5.0] * 32
    with pytest.raises(ac.ConstraintError, match="not 32-byte aligned"):
        ac.LocalTensor[ac.float32](ac.TPosition.VECIN, 100, 8)
    with pytest.raises(ac.ConstraintError, match="outside the .*Unified Buffer"):
        ac.LocalTensor[ac.float32](ac.TPosition.VECOUT, core.ub.capacity - 32, 9)
    with pytest.raises(ac.ConstraintError, match="A1 is not emulated"):
        ac.LocalTensor[ac.half](ac.TPosition.A1, 0, 16)
    with pytest.raises(ac.AscendCTypeError, match="pos must be a TPosition"):
        ac.LocalTensor[ac.half]("VECIN", 0, 16)
    with pytest.raises(TypeError, match=r"LocalTensor\[T\]\(pos, addr, tileSize\)"):
        ac.LocalTensor(ac.TPosition.VECIN, 0, 16)
    # an instruction on static tensors
    x = ac.LocalTensor[ac.float32](ac.TPosition.VECIN, 0, 64)
    y = ac.LocalTensor[ac.float32](ac.TPosition.VECOUT, 256, 64)
    x.numpy()[:] = -2
    ac.LeakyRelu(y, x, 0.5, 64)
    assert np.all(y.numpy() == -1)
