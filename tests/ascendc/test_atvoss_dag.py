"""ATVOSS's elementwise DAG (``leakyops.ascendc``: ``Bind``, ``Elems``, ``DAGSch``, placeholders,
``Vec``), the buffer analysis of ``aux1.h``/``node.h`` on DAGs worked by hand, the ported host
tilings (``ElewiseTiling``, ``DimensionCollapse``, ``BroadcastBaseTiling``) and the rules the
C++ compiler or the schedulers enforce."""

from __future__ import annotations

import numpy as np
import pytest

from leakyops import ascendc as ac
from leakyops.ascendc import (Bind, DAGSch, Elems, MemLevel, MemOptCfg, Placeholder, Reg, UbufPtr,
                              Vec, __VEC_SCOPE__)
from leakyops.ascendc._elewise import DimensionCollapse, ElewiseTiling

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


class AddCustom(Vec.ElemwiseBinaryOP, template=("T",), types=("T", "T", "T")):
    """dst = src0 + src1 with the register API (a DAG function of the tests)."""

    def __init__(self, dst, src0, src1, count):
        T = self.T
        vl = ac.VECTOR_REG_WIDTH // T.itemsize
        a, b, d = (UbufPtr[T](t.GetPhyAddr()) for t in (src0, src1, dst))
        r0, r1 = Reg.RegTensor[T](), Reg.RegTensor[T]()
        n = ac.Ref(count)
        with __VEC_SCOPE__():
            for i in range(ac.CeilDivision(count, vl)):
                m = Reg.UpdateMask[T](n)
                Reg.LoadAlign(r0, a + i * vl)
                Reg.LoadAlign(r1, b + i * vl)
                Reg.Add(r0, r0, r1, m)
                Reg.StoreAlign(d + i * vl, r0, m)


class ScaleCustom(Vec.ElemwiseBinaryOP, template=("T",), types=("T", "T", F32)):
    def __init__(self, dst, src, scale, count):
        T = self.T
        vl = ac.VECTOR_REG_WIDTH // T.itemsize
        s, d = UbufPtr[T](src.GetPhyAddr()), UbufPtr[T](dst.GetPhyAddr())
        r = Reg.RegTensor[T]()
        n = ac.Ref(count)
        with __VEC_SCOPE__():
            for i in range(ac.CeilDivision(count, vl)):
                m = Reg.UpdateMask[T](n)
                Reg.LoadAlign(r, s + i * vl)
                Reg.Muls(r, r, scale, m)
                Reg.StoreAlign(d + i * vl, r, m)


def _leaky_like(U):
    x = Bind(Vec.CopyIn[U], Placeholder.In0[U])
    y = Bind(ScaleCustom[U], x, Placeholder.Var[F32, 0])
    return DAGSch(Elems(Bind(Vec.CopyOut[U], Placeholder.Out0[U], y)))


def _prelu_like(U, mem=MemLevel.LEVEL_2):
    c0, c1, c2 = (Bind(Vec.CopyInBrc[U], getattr(Placeholder, f"In{i}")[U]) for i in range(3))

    class Tern(Vec.ElemwiseTernaryOP, template=("T",), types=("T", "T", "T", "T")):
        pass

    dx = Bind(Tern[U], c0, c1, c2)
    da = Bind(AddCustom[U], c0, c1)
    outs = Elems(Bind(Vec.CopyOut[U], Placeholder.Out0[U], dx), Bind(Vec.CopyOut[U], Placeholder.Out1[U], da))
    return DAGSch(outs, None, MemOptCfg(mem)), (c0, c1, c2, dx, da)


# ------------------------------------------------------------------------------ the graph
def test_binds_are_types():
    a = Bind(Vec.CopyIn[F16], Placeholder.In0[F16])
    b = Bind(Vec.CopyIn[F16], Placeholder.In0[F16])
    assert a == b and hash(a) == hash(b) and a is not b
    assert Bind(Vec.CopyIn[F32], Placeholder.In0[F32]) != a
    assert AddCustom[F16] is AddCustom[F16] and AddCustom[F16].DataTypes == (F16, F16, F16)
    assert ScaleCustom[F16].FunInArgType(1) == F32 and AddCustom[F16].T == F16


def test_funlist_is_the_dependency_order():
    dag, (c0, c1, c2, dx, da) = _prelu_like(F16)
    names = [f.Fun.__name__.split("<")[0] for f in dag.FunList]
    assert names == ["CopyInBrc", "CopyInBrc", "CopyInBrc", "Tern", "CopyOut", "AddCustom", "CopyOut"]
    assert dag.FunList[:4] == [c0, c1, c2, dx] and dag.FunList[5] == da
    assert (dag.InputSize, dag.OutputSize, dag.CopyBrcSize, dag.VarSize) == (3, 2, 3, 0)


def test_buffer_analysis_elementwise():
    # CopyIn -> compute -> CopyOut: at most 2 live nodes, no temporary; LEVEL_2 holds the input
    # and the output double-buffered: 2 * 1 + 2 * 1 = 4 buffers
    dag = _leaky_like(F16)
    assert (dag.MaxAliveNode, dag.TempCalcNode, dag.MaxDtypeBytes, dag.MinDtypeBytes) == (2, 0, 2, 2)
    assert (dag.BufLevel, dag.BufferNum, dag.Mte2Num, dag.Mte3Num) == (MemLevel.LEVEL_2, 4, 1, 1)
    assert dag.VarSize == 1 and dag.Vars[0].DType == F32


def test_buffer_analysis_broadcast():
    # three CopyInBrc (each a CopyIn plus a broadcast buffer when not cached), a ternary and a
    # binary function: worked by hand from aux1.h's MaxAliveNode
    dag, _ = _prelu_like(F32)
    info = dag.MaxAliveNodeInfo
    assert (info.aliveNode, info.tempCalcNode) == (7, 3)
    assert (info.aliveNodeNoCopyBrcTmpBuf, info.tempCalcNodeNoCopyBrcTmpBuf) == (4, 0)
    cache = dag.MaxAliveNodeInfoForCacheBrc
    assert (cache.aliveNode, cache.tempCalcNode, cache.aliveNodeNoCopyBrcTmpBuf) == (1, 0, 1)
    # LEVEL_2: 3 inputs and 2 outputs double-buffered, +3 cached broadcasts without NDDMA
    assert dag.GetBufferNum(True, True) == 10 and dag.GetBufferNum(False, True) == 13
    assert dag.BufferNum == 10 and dag.BufLevel is MemLevel.LEVEL_2


def _chain(n_inputs):
    xs = [Bind(Vec.CopyIn[F32], getattr(Placeholder, f"In{i}")[F32]) for i in range(n_inputs)]
    acc = Bind(AddCustom[F32], xs[0], xs[1])
    for x in xs[2:]:
        acc = Bind(AddCustom[F32], acc, x)
    return DAGSch(Elems(Bind(Vec.CopyOut[F32], Placeholder.Out0[F32], acc)))


def test_level0_picks_a_level_by_buffer_count():
    # ((x0 + x1) + x2) + x3: two temporaries live at once; LEVEL_2 needs 2 + 8 + 2 = 12 > 10,
    # LEVEL_1 needs 0 + 8 + 2 = 10
    four = _chain(4)
    assert four.TempCalcNode == 2 and four.BufLevel is MemLevel.LEVEL_1 and four.BufferNum == 10
    # a fifth input: LEVEL_1 needs 12; LEVEL_0 = 3 live + 2 loaded before the first function
    # + 1 for the first CopyOut
    five = _chain(5)
    assert five.BufLevel is MemLevel.LEVEL_0 and five.BufferNum == 6 and five.Mte2Num == 2
    plan, used = five.buffer_plan()
    assert used <= five.BufferNum


# ------------------------------------------------------------------------ compile-time rules
def test_bind_rules():
    with pytest.raises(ac.AscendCTypeError, match="inconsistent with in holder data type"):
        Bind(Vec.CopyIn[F16], Placeholder.In0[F32])
    x = Bind(Vec.CopyIn[F16], Placeholder.In0[F16])
    with pytest.raises(ac.AscendCTypeError, match="takes 2 inputs, got 1"):
        Bind(AddCustom[F16], x)
    with pytest.raises(ac.AscendCTypeError, match="input 1 is half but .* takes float"):
        Bind(ScaleCustom[F16], x, Placeholder.Var[F16, 0])
    with pytest.raises(ac.AscendCTypeError, match="goes through CopyIn first"):
        Bind(AddCustom[F16], x, Placeholder.In1[F16])
    with pytest.raises(ac.AscendCTypeError, match="CopyOut takes"):
        Bind(Vec.CopyOut[F16], x, Placeholder.Out0[F16])
    with pytest.raises(ac.AscendCTypeError, match="only CopyOut takes an output placeholder"):
        Bind(AddCustom[F16], x, Placeholder.Out0[F16])
    with pytest.raises(ac.AscendCTypeError, match="specialisation"):
        Bind(AddCustom, x, x)
    with pytest.raises(ac.AscendCTypeError, match="got 2 template arguments"):
        AddCustom[F16, F32]


def test_dag_rules():
    x = Bind(Vec.CopyIn[F16], Placeholder.In0[F16])
    out = Bind(Vec.CopyOut[F16], Placeholder.Out0[F16], x)
    with pytest.raises(ac.AscendCTypeError, match="outputs must be CopyOut"):
        DAGSch(Elems(x))
    y = Bind(Vec.CopyIn[F16], Placeholder.In2[F16])
    with pytest.raises(ac.AscendCTypeError, match="must be In0..In1"):
        DAGSch(Elems(out, Bind(Vec.CopyOut[F16], Placeholder.Out1[F16], y)))
    s = Bind(AddCustom[F16], x, x)
    with pytest.raises(ac.AscendCTypeError, match="comes before its input"):
        DAGSch(Elems(Bind(Vec.CopyOut[F16], Placeholder.Out0[F16], s)), [s, x])
    with pytest.raises(ac.AscendCTypeError, match="Buffer level should be in"):
        MemOptCfg(3)


# ------------------------------------------------------------------------------ host tilings
def test_elewise_tiling_port():
    # LeakyRelu half, 50001 elements, 64 cores, 248 KiB UB, 4 buffers: 25 cores by 4 KiB of
    # data each, a block factor aligned to 512 elements, a UB factor aligned to 256 bytes
    t = ElewiseTiling(64, (50001,), ac.ASCEND950_UB_SIZE, 16, 16, 0, 4 * 16)
    assert (t.coreNum, t.blockFormer, t.blockNum, t.ubFormer) == (25, 2048, 25, 31744)
    assert (t.ubLoopOfFormerBlock, t.ubTailOfFormerBlock, t.ubTailOfTailBlock) == (1, 2048, 50001 - 24 * 2048)
    assert ElewiseTiling(64, (3, 0), 1024, 16, 16, 0, 64) == "elewiseTiling dim can not be 0"
    assert ElewiseTiling(64, (8,), 64, 32, 32, 0, 4 * 32) == "ubFormer can not be 0"


def test_elewise_base_tiling_and_scalars():
    ctx = ac.TilingContext([((5, 7), F16)], [((5, 7), F16)], core_num=8)
    tiling = ac.ElewiseBaseTiling(ctx)
    assert tiling.DoTiling24B(_leaky_like(F16)) == ac.GRAPH_SUCCESS
    tiling.SetScalar[ac.float32](0.5)
    data = ctx.tiling_data
    assert (data.dim0, data.coreNum, tiling.GetBlockDim()) == (35, 1, 1)
    assert np.frombuffer(bytes(data.scalarData[:4]), np.float32)[0] == 0.5
    with pytest.raises(ac.ConstraintError, match="do not fit the tiling data's 8-byte scalarData"):
        tiling.SetScalar(np.float64(1.0))
    with pytest.raises(ac.AscendCTypeError, match="NumPy scalar"):
        tiling.SetScalar(1.0)
    bad = ac.TilingContext([((5, 7), F16)], [((5, 8), F16)])
    assert ac.ElewiseBaseTiling(bad).DoTiling24B(_leaky_like(F16)) == ac.GRAPH_FAILED
    assert "Input[0] shape is not equal with output shape" in bad.errors[0]


def test_elewise_base_tiling_32b_by_hand():
    # DoTiling32B with an extra size and an extra buffer, worked by hand: 100000 halves on 64
    # cores and 253952 bytes of UB, the DAG's 4 buffers + 1 of 16 bits each
    ctx = ac.TilingContext([((100000,), F16)], [((100000,), F16)], core_num=64)
    tiling = ac.ElewiseBaseTiling(ctx)
    assert tiling.DoTiling32B(_leaky_like(F16), 1024, 1) == ac.GRAPH_SUCCESS
    data = ctx.tiling_data
    assert isinstance(data, ac.EleBaseTilingData32B) and len(data.scalarData) == 16
    # cores: ceil(100000 * 16 / 32768) = ceil(48.83) = 49; the block factor
    # ceil(ceil(100000 / 49) / 512) * 512 = ceil(2041 / 512) * 512 = 2048, so ceil(100000 / 2048)
    # = 49 blocks; the UB factor (253952 - 1024) * 8 // (5 * 16) = 25292, down to a multiple of
    # 256 bytes of half (128 elements): 197 * 128 = 25216
    assert (data.dim0, data.coreNum, data.ubFormer, tiling.GetBlockDim()) == (100000, 49, 25216, 49)
    # 16 bytes of scalars: a float and a double fit (packed in order), a third scalar does not
    tiling.SetScalar[ac.float32](0.5)
    tiling.SetScalar(np.float64(0.25))
    assert np.frombuffer(bytes(data.scalarData[:4]), np.float32)[0] == 0.5
    assert np.frombuffer(bytes(data.scalarData[4:12]), np.float64)[0] == 0.25
    with pytest.raises(ac.ConstraintError, match="do not fit the tiling data's 16-byte scalarData"):
        tiling.SetScalar(np.float64(1.0))
    # and the schedule runs from it: Var 0 is the float 0.5, every element halved exactly
    x = ((np.arange(100000) % 2048) - 1024).astype(F16)
    y = np.zeros_like(x)

    def kernel(x_gm, y_gm, tilingData):
        sch = ac.ElementwiseSchWithScalar[ac.EleBaseTilingData32B, 1, _leaky_like(F16)](tilingData)
        sch.Init(x_gm, y_gm)
        sch.Process()

    ac.launch(kernel, tiling.GetBlockDim(), x, y, data, ub_size=ac.ASCEND950_UB_SIZE)
    assert y.tolist() == (x.astype(np.float64) / 2).tolist()


def test_dimension_collapse():
    # grads and features (2, 3, 4, 5), the weight (1, 3, 1, 1): the two trailing axes merge
    dims, strides = DimensionCollapse([(2, 3, 4, 5), (2, 3, 4, 5), (1, 3, 1, 1)], (2, 3, 4, 5))
    assert dims == [[2, 3, 20], [2, 3, 20], [1, 3, 1], [2, 3, 20]]
    assert strides[2] == [0, 1, 0] and strides[3] == [60, 20, 1]
    # a shared weight: every axis broadcasts alike, one axis
    assert DimensionCollapse([(4, 6), (4, 6), (1, 1)], (4, 6))[0] == [[24], [24], [1], [24]]
    # axes that are 1 everywhere are dropped; a missing leading axis is 1
    assert DimensionCollapse([(3, 1, 5), (5,)], (3, 1, 5))[0] == [[3, 5], [1, 5], [3, 5]]
    assert DimensionCollapse([(3, 4)], (3, 5)) == "The 0 input's dim index(1) is not same with out, and not 1"


def test_broadcast_tiling_choices():
    dag, _ = _prelu_like(F32)
    shapes = [(64, 16, 100), (64, 16, 100), (1, 16, 1)]

    def tile(dtype, shapes, **kw):
        ctx = ac.TilingContext([(s, dtype) for s in shapes], [(shapes[1], dtype)] * 2, **kw)
        brc = ac.BroadcastBaseTiling[_prelu_like(dtype)[0]](ctx)
        assert brc.SetOpInputStorageShapes(shapes) == ac.GRAPH_SUCCESS
        assert brc.DoTiling() == ac.GRAPH_SUCCESS, ctx.errors
        return brc.GetSchMode(), ctx.tiling_data, ctx.block_dim

    # float: NDDMA, 10 buffers: 6336 elements per tile = 3 rows of 16 x 100 on axis 0
    mode, t, blocks = tile(F32, shapes)
    assert (mode, t.bufferNum, t.elemNum, t.ubSplitAxis, t.ubFormer, t.ubOuter, t.ubTail) == \
        (1, 10, 6336, 0, 3, 22, 1)
    assert (t.blockFormer, blocks, t.outputDims, t.strides[2]) == (1, 22, [64, 16, 100], [0, 1, 0])
    # half, last axis 64 (a multiple of 16 elements): UB broadcast, 13 buffers, mode 100 + rank
    mode, t, blocks = tile(F16, [(8, 16, 64), (8, 16, 64), (1, 16, 1)])
    assert (mode, t.bufferNum) == (103, 13)
    # one element of weight: one axis, the one-dim tiling (5 GM arguments > 4: not "advance")
    mode, t, blocks = tile(F32, [(4, 6, 50), (4, 6, 50), (1, 1, 1)], core_num=2)
    assert mode == 201 and t.scalarFlag == 0b100 and t.bufferNum == 10
    assert (t.ubFormer, t.blockNum) == (6336, 1)
