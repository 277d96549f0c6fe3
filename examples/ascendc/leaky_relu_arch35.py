"""``hicann/ops-nn`` ``activation/leaky_relu`` for Ascend 950 (arch35), ported line by line to Python.

Device side: ``op_kernel/arch35/leaky_relu_dag.h`` (``LeakyReluCustom<T>``, a compute struct
written with the register API, and ``LeakyReluDag<U, T>``, an ATVOSS elementwise DAG) and the
entry ``op_kernel/leaky_relu_apt.cpp`` (``leaky_relu<schMode, dType>``: an
``ElementwiseSchWithScalar`` over the DAG). Host side: ``op_host/arch35/leaky_relu_tiling_arch35.cpp``
(``LeakyReluTiling::RunTiling``: dtype and shape checks, ``ElewiseBaseTiling::DoTiling24B``, the
slope as the tiling's scalar).

``y = x if x > 0 else x * negativeSlope``: float computes on float registers; half and
bfloat16_t are loaded with ``DIST_UNPACK_B16``, cast to float, computed in float and cast back
with ``CAST_RINT`` (stored with ``DIST_PACK_B32``). So the result is the core's
``leaky_relu_impl(x, s, compare=">", slope_dtype=np.float32)`` bit for bit (NaN stays NaN).

Run it: ``python examples/ascendc/leaky_relu_arch35.py``.
"""

from __future__ import annotations

import numpy as np

from leakyops import ascendc as ac
from leakyops.ascendc import (CMPMODE, GRAPH_FAILED, GRAPH_SUCCESS, Bind, DAGSch, Elems, Placeholder,
                              Reg, Ref, UbufPtr, Vec, __VEC_SCOPE__, bfloat16_t, float32, half)

# --------------------------------------------------------------------- leaky_relu_dag.h
castTrait0 = Reg.CastTrait(Reg.RegLayout.ZERO, Reg.SatMode.UNKNOWN, Reg.MaskMergeMode.ZEROING,
                           Reg.RoundMode.UNKNOWN)
castTrait1 = Reg.CastTrait(Reg.RegLayout.ZERO, Reg.SatMode.NO_SAT, Reg.MaskMergeMode.ZEROING,
                           ac.RoundMode.CAST_RINT)


class LeakyReluCustom(Vec.ElemwiseBinaryOP, template=("T",), types=("T", "T", float32)):
    """``template <class T> struct LeakyReluCustom : public Vec::ElemwiseBinaryOP<T, T, float>``."""

    def __init__(self, dst, src, negativeSlope, count):
        T = self.T
        dtypeSize = float32.itemsize                       # sizeof(float)
        VECTOR_REG_WIDTH = 256
        vl = VECTOR_REG_WIDTH // dtypeSize
        loopNum = (count + vl - 1) // vl
        vlSize = vl

        srcAddr = UbufPtr[T](src.GetPhyAddr())
        dstAddr = UbufPtr[T](dst.GetPhyAddr())

        vregInputfloat = Reg.RegTensor[float32, Reg.RegTraitNumOne]()
        vregNegPart = Reg.RegTensor[float32, Reg.RegTraitNumOne]()
        vregOutput = Reg.RegTensor[float32, Reg.RegTraitNumOne]()
        vregZero = Reg.RegTensor[float32, Reg.RegTraitNumOne]()
        mask, cmpMask = Reg.MaskReg(), Reg.MaskReg()
        count = Ref(count)                                 # UpdateMask takes uint32_t& count

        if T == float32:
            with __VEC_SCOPE__():
                Reg.Duplicate(vregZero, 0.0)
                mask = Reg.UpdateMask[float32, Reg.RegTraitNumOne](count)
                for loopIdx in range(loopNum):
                    Reg.LoadAlign[T, Reg.LoadDist.DIST_NORM](vregInputfloat,
                                                             UbufPtr[T](srcAddr + loopIdx * vlSize))
                    Reg.Muls(vregNegPart, vregInputfloat, negativeSlope, mask)
                    Reg.Compare[float32, CMPMODE.GT](cmpMask, vregInputfloat, vregZero, mask)
                    Reg.Select[float32](vregOutput, vregInputfloat, vregNegPart, cmpMask)
                    Reg.StoreAlign[T, Reg.StoreDist.DIST_NORM_B32](UbufPtr[T](dstAddr + loopIdx * vlSize),
                                                                   vregOutput, mask)
        else:
            vregInputT = Reg.RegTensor[T, Reg.RegTraitNumOne]()
            vregOutputT = Reg.RegTensor[T, Reg.RegTraitNumOne]()
            with __VEC_SCOPE__():
                Reg.Duplicate(vregZero, 0.0)
                mask = Reg.UpdateMask[float32, Reg.RegTraitNumOne](count)
                for loopIdx in range(loopNum):
                    Reg.LoadAlign[T, Reg.LoadDist.DIST_UNPACK_B16](vregInputT,
                                                                   UbufPtr[T](srcAddr + loopIdx * vlSize))
                    Reg.Cast[float32, T, castTrait0](vregInputfloat, vregInputT, mask)
                    Reg.Muls(vregNegPart, vregInputfloat, negativeSlope, mask)
                    Reg.Compare[float32, CMPMODE.GT](cmpMask, vregInputfloat, vregZero, mask)
                    Reg.Select[float32](vregOutput, vregInputfloat, vregNegPart, cmpMask)
                    Reg.Cast[T, float32, castTrait1](vregOutputT, vregOutput, mask)
                    Reg.StoreAlign[T, Reg.StoreDist.DIST_PACK_B32](UbufPtr[T](dstAddr + loopIdx * vlSize),
                                                                   vregOutputT, mask)


class LeakyReluDag:
    """``template <typename U, typename T = float> struct LeakyReluDag``."""

    def __init__(self, U, T=float32):
        self.OpCopyInX = Bind(Vec.CopyIn[U], Placeholder.In0[U])
        self.OpLeakyRelu = Bind(LeakyReluCustom[U], self.OpCopyInX, Placeholder.Var[T, 0])
        self.OpCopyOut = Bind(Vec.CopyOut[U], Placeholder.Out0[U], self.OpLeakyRelu)
        self.Outputs = Elems(self.OpCopyOut)
        self.OpDag = DAGSch(self.Outputs)


# ------------------------------------------------------------------- leaky_relu_apt.cpp
# leaky_relu_struct.h's template values (their numbers are not in the sources read; any
# distinct values select the same branches)
TPL_FP16, TPL_BF16, TPL_FP32 = 1, 2, 3


def leaky_relu(x, y, workspace, tiling, *, schMode, dType):
    """``template <uint64_t schMode, uint64_t dType> __global__ __aicore__ void leaky_relu(...)``."""
    tilingData = tiling      # GET_TILING_DATA_PTR_WITH_STRUCT(EleBaseTilingData24B, tilingData, tiling)
    if dType == TPL_FP16:
        sch = ac.ElementwiseSchWithScalar[ac.EleBaseTilingData24B, schMode,
                                          LeakyReluDag(half, float32).OpDag](tilingData)
        sch.Init(x, y)
        sch.Process()
    elif dType == TPL_BF16:
        sch = ac.ElementwiseSchWithScalar[ac.EleBaseTilingData24B, schMode,
                                          LeakyReluDag(bfloat16_t, float32).OpDag](tilingData)
        sch.Init(x, y)
        sch.Process()
    elif dType == TPL_FP32:
        sch = ac.ElementwiseSchWithScalar[ac.EleBaseTilingData24B, schMode,
                                          LeakyReluDag(float32, float32).OpDag](tilingData)
        sch.Init(x, y)
        sch.Process()


# ------------------------------------------------------- leaky_relu_tiling_arch35.cpp
ASCEND_WORKSPACE = 16777216   # 16M


class LeakyReluTiling:
    """``optiling::LeakyReluTiling``."""

    def __init__(self, context):
        self.tilingContext = context
        self.inputDtype = self.outputDtype = None
        self.dType = 0
        self.schMode = 1   # the header's member (not in the sources read); the kernel UT runs <1, ...>

    def CalcInputDtype(self):
        inputDesc = self.tilingContext.GetInputDesc(0)
        if inputDesc is None:
            return self.tilingContext.log_error("input desc is null")
        self.inputDtype = inputDesc.GetDataType()
        if self.inputDtype not in (half, bfloat16_t, float32):
            return self.tilingContext.log_error(
                f"x: {self.inputDtype}: The dtype of x must be DT_FLOAT16, DT_BF16, or DT_FLOAT")
        return GRAPH_SUCCESS

    def CheckShape(self):
        inputStorageShape = self.tilingContext.GetInputShape(0)
        if inputStorageShape is None:
            return self.tilingContext.log_error("input shape is null")
        inputYShape = ac.EnsureNotScalar(inputStorageShape.GetStorageShape())
        outputStorageShape = self.tilingContext.GetOutputShape(0)
        if outputStorageShape is None:
            return self.tilingContext.log_error("output shape is null")
        outputZShape = ac.EnsureNotScalar(outputStorageShape.GetStorageShape())
        if inputYShape != outputZShape:
            return self.tilingContext.log_error(
                f"x, y: {list(inputYShape)}, {list(outputZShape)}: The shapes of x and y must be the same")
        return GRAPH_SUCCESS

    def CalcOutputDtype(self):
        outputDesc = self.tilingContext.GetOutputDesc(0)
        if outputDesc is None:
            return self.tilingContext.log_error("output desc is null")
        self.outputDtype = outputDesc.GetDataType()
        if self.outputDtype != self.inputDtype:
            return self.tilingContext.log_error(
                f"x, y: {self.inputDtype}, {self.outputDtype}: The dtypes of x and y must be the same")
        return GRAPH_SUCCESS

    def RunTiling(self):
        eleBaseTiling = ac.ElewiseBaseTiling(self.tilingContext)

        if self.CalcInputDtype() == GRAPH_FAILED:
            return self.tilingContext.log_error("get input dtype failed")
        if self.CalcOutputDtype() == GRAPH_FAILED:
            return self.tilingContext.log_error("get output dtype failed")
        if self.CheckShape() == GRAPH_FAILED:
            return self.tilingContext.log_error("check shape failed")

        attrs = self.tilingContext.GetAttrs()
        scaleValueAttr = attrs.GetAttrPointer(0)
        negativeSlope = np.float32(scaleValueAttr) if scaleValueAttr is not None else np.float32(0.0)

        baseTilingResult = GRAPH_FAILED
        if self.outputDtype == half:
            self.dType = TPL_FP16
            baseTilingResult = eleBaseTiling.DoTiling24B(LeakyReluDag(half, float32).OpDag)
        elif self.outputDtype == bfloat16_t:
            self.dType = TPL_BF16
            baseTilingResult = eleBaseTiling.DoTiling24B(LeakyReluDag(bfloat16_t, float32).OpDag)
        elif self.outputDtype == float32:
            self.dType = TPL_FP32
            baseTilingResult = eleBaseTiling.DoTiling24B(LeakyReluDag(float32, float32).OpDag)
        else:
            return self.tilingContext.log_error(f"y: {self.outputDtype}: DT_FLOAT16, DT_BF16, DT_FLOAT")
        if baseTilingResult == GRAPH_FAILED:
            return self.tilingContext.log_error(
                f"elewiseBaseTiling failed, output dtype: {self.outputDtype}.")

        eleBaseTiling.SetScalar[float32](negativeSlope)

        currentWorkspace = self.tilingContext.GetWorkspaceSizes(1)
        currentWorkspace[0] = ASCEND_WORKSPACE

        tilingKey = ac.GET_TPL_TILING_KEY(self.schMode, self.dType)
        self.tilingContext.SetTilingKey(tilingKey)
        self.tilingContext.SetBlockDim(eleBaseTiling.GetBlockDim())
        return GRAPH_SUCCESS


def TilingForLeakyRelu(context):
    if context is None:
        return GRAPH_FAILED
    tiling = LeakyReluTiling(context)
    return tiling.RunTiling()


# ------------------------------------------------------------------------------ host
def run(x, negative_slope: float = 0.0, *, core_num: int = ac.ASCEND950_CORE_NUM,
        ub_size: int = ac.ASCEND950_UB_SIZE, block_order=None):
    """Host code: the tiling, device buffers, the launch over the tiling's block count, the
    copy back. Returns ``(y, context)`` (the context holds the tiling data and block dim).
    An empty ``x`` gives an empty ``y`` without a launch (aclnn returns before the kernel)."""
    x = np.asarray(x)
    if x.size == 0:
        return np.empty_like(x), None
    context = ac.TilingContext([(x.shape, x.dtype)], [(x.shape, x.dtype)], (np.float32(negative_slope),),
                               core_num=core_num, ub_size=ub_size, node_name="LeakyRelu")
    if TilingForLeakyRelu(context) != GRAPH_SUCCESS:
        raise ValueError("; ".join(context.errors))
    schMode, dType = context.tiling_key
    x_dev = np.ascontiguousarray(x).reshape(-1).copy()
    y_dev = np.zeros_like(x_dev)
    ac.launch(leaky_relu, context.block_dim, x_dev, y_dev, None, context.tiling_data,
              schMode=schMode, dType=dType, ub_size=ub_size, block_order=block_order)
    return y_dev.reshape(x.shape), context


if __name__ == "__main__":
    from leakyops import _core

    rng = np.random.default_rng(0)
    for dtype in (np.float16, ac.bfloat16_t, np.float32):
        x = (rng.standard_normal(20_001) * 10).astype(dtype)
        y, ctx = run(x, 0.2)
        ref = _core.leaky_relu_impl(x, 0.2, compare=">", slope_dtype=np.float32)
        same = np.array_equal(y.view(np.uint8), ref.view(np.uint8))
        print(f"{np.dtype(dtype).name}: {x.size} elements on {ctx.block_dim} blocks, "
              f"ubFormer {ctx.tiling_data.ubFormer}, first values {y[:3].tolist()}, "
              f"bit-exact vs the core: {same}")
