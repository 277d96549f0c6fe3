"""``hicann/ops-nn`` ``activation/p_relu_grad_update`` for Ascend 950 (arch35), ported line by line.

Device side: ``op_kernel/arch35/prelu_grad_update_dag.h`` (``PReluGradDxCustom<T>`` and
``PReluGradDaCustom<T>``, compute structs written with the register API, and
``PReluGradUpdateDAG<U>``, an ATVOSS DAG whose inputs are ``CopyInBrc``, with
``MemOptCfg<MemLevel::LEVEL_2>``) and the entry ``prelu_grad_update<schMode>``
(a ``BroadcastSch`` over the DAG). Host side: ``op_host/arch35/prelu_grad_update_tiling_arch35.cpp``
(``PReluGradUpdateTiling``: dtype checks, the weight reshaped to broadcast against the features,
``BroadcastBaseTiling<OpDag>``).

Inputs ``grads`` (dy), ``features`` (x), ``weights`` (w); outputs ``dx = dy if x > 0 else
w * dy`` and ``update = 0 if x > 0 else x * dy``, each product computed in the tensor's type
(``Reg::Mul`` on T registers: one rounding to T). aclnnPreluBackward then reduces ``update``
per channel with PReluGradReduce (see ``docs/aclnn.md``).

Run it: ``python examples/ascendc/prelu_grad_update_arch35.py``.
"""

from __future__ import annotations

import numpy as np

from leakyops import ascendc as ac
from leakyops.ascendc import (CMPMODE, GRAPH_FAILED, GRAPH_SUCCESS, VECTOR_REG_WIDTH, Bind, CeilDivision,
                              DAGSch, Elems, MemLevel, MemOptCfg, Placeholder, Reg, Ref, UbufPtr, Vec,
                              __VEC_SCOPE__, bfloat16_t, float32, half)

# --------------------------------------------------------------- prelu_grad_update_dag.h
FP32_ZERO = np.float32(0.0)


class PReluGradDxCustom(Vec.ElemwiseTernaryOP, template=("T",), types=("T", "T", "T", "T")):
    """``template <class T> struct PReluGradDxCustom : public Vec::ElemwiseTernaryOP<T, T, T, T>``."""

    def __init__(self, dst, src0, src1, src2, count):
        T = self.T
        dtypeSize = T.itemsize
        vl = VECTOR_REG_WIDTH // dtypeSize
        loopNum = CeilDivision(count, vl)
        vlSize = vl
        src0Addr = UbufPtr[T](src0.GetPhyAddr())
        src1Addr = UbufPtr[T](src1.GetPhyAddr())
        src2Addr = UbufPtr[T](src2.GetPhyAddr())
        dstAddr = UbufPtr[T](dst.GetPhyAddr())
        vRegTensorInputFeatures = Reg.RegTensor[T, Reg.RegTraitNumOne]()
        vRegTensorInputWeights = Reg.RegTensor[T, Reg.RegTraitNumOne]()
        vRegTensorInputGradients = Reg.RegTensor[T, Reg.RegTraitNumOne]()
        vRegTensorOutputDx = Reg.RegTensor[T, Reg.RegTraitNumOne]()
        vRegTensorInputZero = Reg.RegTensor[T, Reg.RegTraitNumOne]()

        mask = Reg.MaskReg()
        cmpMaskReg = Reg.MaskReg()
        with __VEC_SCOPE__():
            Reg.Duplicate(vRegTensorInputZero, FP32_ZERO)
            sregMask = Ref(count)
            for loopIdx in range(loopNum):
                mask = Reg.UpdateMask[T, Reg.RegTraitNumOne](sregMask)
                # OpCopyIn
                Reg.DataCopy(vRegTensorInputGradients, UbufPtr[T](src0Addr + loopIdx * vlSize))
                Reg.DataCopy(vRegTensorInputFeatures, UbufPtr[T](src1Addr + loopIdx * vlSize))
                Reg.DataCopy(vRegTensorInputWeights, UbufPtr[T](src2Addr + loopIdx * vlSize))

                # compute
                Reg.Mul(vRegTensorOutputDx, vRegTensorInputWeights, vRegTensorInputGradients, mask)
                Reg.Compare[T, CMPMODE.GT](cmpMaskReg, vRegTensorInputFeatures, vRegTensorInputZero, mask)
                Reg.Select[T](vRegTensorOutputDx, vRegTensorInputGradients, vRegTensorOutputDx, cmpMaskReg)
                # OpCopyOut
                Reg.DataCopy(UbufPtr[T](dstAddr + loopIdx * vlSize), vRegTensorOutputDx, mask)


class PReluGradDaCustom(Vec.ElemwiseBinaryOP, template=("T",), types=("T", "T", "T")):
    """``template <class T> struct PReluGradDaCustom : public Vec::ElemwiseBinaryOP<T, T, T>``."""

    def __init__(self, dst, src0, src1, count):
        T = self.T
        dtypeSize = T.itemsize
        vl = VECTOR_REG_WIDTH // dtypeSize
        loopNum = CeilDivision(count, vl)
        vlSize = vl
        src0Addr = UbufPtr[T](src0.GetPhyAddr())
        src1Addr = UbufPtr[T](src1.GetPhyAddr())
        dstAddr = UbufPtr[T](dst.GetPhyAddr())
        vRegTensorInputFeatures = Reg.RegTensor[T, Reg.RegTraitNumOne]()
        vRegTensorInputGradients = Reg.RegTensor[T, Reg.RegTraitNumOne]()
        vRegTensorOutputDa = Reg.RegTensor[T, Reg.RegTraitNumOne]()
        vRegTensorInputZero = Reg.RegTensor[T, Reg.RegTraitNumOne]()

        mask = Reg.MaskReg()
        cmpMaskReg = Reg.MaskReg()
        with __VEC_SCOPE__():
            Reg.Duplicate(vRegTensorInputZero, FP32_ZERO)
            sregMask = Ref(count)
            for loopIdx in range(loopNum):
                mask = Reg.UpdateMask[T, Reg.RegTraitNumOne](sregMask)
                # OpCopyIn
                Reg.DataCopy(vRegTensorInputGradients, UbufPtr[T](src0Addr + loopIdx * vlSize))
                Reg.DataCopy(vRegTensorInputFeatures, UbufPtr[T](src1Addr + loopIdx * vlSize))

                # compute
                Reg.Mul(vRegTensorOutputDa, vRegTensorInputFeatures, vRegTensorInputGradients, mask)
                Reg.Compare[T, CMPMODE.GT](cmpMaskReg, vRegTensorInputFeatures, vRegTensorInputZero, mask)
                Reg.Select[T](vRegTensorOutputDa, vRegTensorInputZero, vRegTensorOutputDa, cmpMaskReg)
                # OpCopyOut
                Reg.DataCopy(UbufPtr[T](dstAddr + loopIdx * vlSize), vRegTensorOutputDa, mask)


class PReluGradUpdateDAG:
    """``template <typename U> struct PReluGradUpdateDAG``."""

    def __init__(self, U):
        self.OpCopyIn0 = Bind(Vec.CopyInBrc[U], Placeholder.In0[U])
        self.OpCopyIn1 = Bind(Vec.CopyInBrc[U], Placeholder.In1[U])
        self.OpCopyIn2 = Bind(Vec.CopyInBrc[U], Placeholder.In2[U])
        self.OpResultDx = Bind(PReluGradDxCustom[U], self.OpCopyIn0, self.OpCopyIn1, self.OpCopyIn2)
        self.OpResultDa = Bind(PReluGradDaCustom[U], self.OpCopyIn0, self.OpCopyIn1)

        self.OpCopyOutDx = Bind(Vec.CopyOut[U], Placeholder.Out0[U], self.OpResultDx)
        self.OpCopyOutDa = Bind(Vec.CopyOut[U], Placeholder.Out1[U], self.OpResultDa)
        self.Outputs = Elems(self.OpCopyOutDx, self.OpCopyOutDa)
        self.MemCfg = MemOptCfg(MemLevel.LEVEL_2)
        self.OpDag = DAGSch(self.Outputs, None, self.MemCfg)


# ------------------------------------------------------------- p_relu_grad_update_apt.cpp
def prelu_grad_update(grads, features, weights, dx, update, workspace, tiling, *, schMode, DTYPE_GRADS):
    """``template <uint64_t schMode> __global__ __aicore__ void prelu_grad_update(...)``."""
    OpDag = PReluGradUpdateDAG(DTYPE_GRADS).OpDag
    sch = ac.BroadcastSch[schMode, OpDag](tiling)
    sch.Process(grads, features, weights, dx, update)


# ------------------------------------------------------ prelu_grad_update_tiling_arch35.cpp
INPUT_FEATURE_INDEX = 1
INPUT_WEIGHT_INDEX = 2
INPUT_GRADIENT_INDEX = 0
OUT_BACKPROPS_DX_INDEX = 0
OUT_BACKPROPS_DA_INDEX = 1


class PReluGradUpdateTiling:
    """``optiling::PReluGradUpdateTiling``."""

    def __init__(self, context):
        self.context_ = context
        self.tilingKey = None

    def CalcInputDtype(self):
        ctx = self.context_
        self.inputFeturesDtype = ctx.GetInputDesc(INPUT_FEATURE_INDEX).GetDataType()
        if self.inputFeturesDtype not in (half, bfloat16_t, float32):
            return ctx.log_error(f"input features dtype allow {{float16, bfloat16, float32}} ,but not "
                                 f"support {self.inputFeturesDtype}")
        self.inputWeightsDtype = ctx.GetInputDesc(INPUT_WEIGHT_INDEX).GetDataType()
        if self.inputWeightsDtype not in (half, bfloat16_t, float32):
            return ctx.log_error(f"input weights dtype {{float16, bfloat16, float32}} ,but not support "
                                 f"{self.inputWeightsDtype}")
        self.inputGradientsDtype = ctx.GetInputDesc(INPUT_GRADIENT_INDEX).GetDataType()
        if self.inputGradientsDtype not in (half, bfloat16_t, float32):
            return ctx.log_error(f"input gradients dtype {{float16, bfloat16, float32}} ,but not support "
                                 f"{self.inputGradientsDtype}")
        if self.inputGradientsDtype != self.inputWeightsDtype or \
                self.inputGradientsDtype != self.inputFeturesDtype:
            return ctx.log_error("input gradients features weights dtype are not the same")
        return GRAPH_SUCCESS

    def CheckAndInferShape(self, inputShapes):
        ctx = self.context_
        inputFeatureShape = ac.EnsureNotScalar(ctx.GetInputShape(INPUT_FEATURE_INDEX).GetStorageShape())
        featureDimNum = len(inputFeatureShape)
        inputWeightShape = ac.EnsureNotScalar(ctx.GetInputShape(INPUT_WEIGHT_INDEX).GetStorageShape())
        weightDimNum = len(inputWeightShape)
        inputGradientShape = ac.EnsureNotScalar(ctx.GetInputShape(INPUT_GRADIENT_INDEX).GetStorageShape())

        # the weight has 1 element or the features' dim 1 many
        weightSize = int(np.prod(inputWeightShape))
        if weightSize != 1 and (featureDimNum < 2 or weightSize != inputFeatureShape[1]):
            return ctx.log_error("weight shape size must be 1 or features dim1 size")

        inputShapes.append(inputGradientShape)
        inputShapes.append(inputFeatureShape)
        weightReshape = []
        if weightDimNum == featureDimNum - 1 and weightDimNum != 1:
            weightReshape.append(1)
            for i in range(weightDimNum):
                weightReshape.append(inputWeightShape[i])
        else:
            for i in range(featureDimNum):
                if i == 1:
                    weightReshape.append(inputWeightShape[0])
                    continue
                weightReshape.append(1)
        inputShapes.append(tuple(weightReshape))
        return GRAPH_SUCCESS

    def CalcOutputDtype(self):
        ctx = self.context_
        self.outputBackpropsDxDtype = ctx.GetOutputDesc(OUT_BACKPROPS_DX_INDEX).GetDataType()
        if self.outputBackpropsDxDtype != self.inputFeturesDtype:
            return ctx.log_error("output backprops dx dtype not same as input features")
        self.outputBackpropsDaDtype = ctx.GetOutputDesc(OUT_BACKPROPS_DA_INDEX).GetDataType()
        if self.outputBackpropsDaDtype != self.inputFeturesDtype:
            return ctx.log_error("output backprops da dtype not same as input features")
        return GRAPH_SUCCESS

    def DoOpTiling(self):
        if self.CalcInputDtype() == GRAPH_FAILED:
            return self.context_.log_error("get input dtype failed")
        if self.CalcOutputDtype() == GRAPH_FAILED:
            return self.context_.log_error("get output dtype failed")
        inputShapes = []
        if self.CheckAndInferShape(inputShapes) == GRAPH_FAILED:
            return self.context_.log_error("check and infer shape failed")

        inputDtype = self.context_.GetInputDesc(INPUT_FEATURE_INDEX).GetDataType()
        if inputDtype in (half, bfloat16_t, float32):
            brcBaseTiling = ac.BroadcastBaseTiling[PReluGradUpdateDAG(inputDtype).OpDag](self.context_)
            brcBaseTiling.SetOpInputStorageShapes(inputShapes)
            status = brcBaseTiling.DoTiling()
            self.tilingKey = ac.GET_TPL_TILING_KEY(brcBaseTiling.GetSchMode())
        else:
            return self.context_.log_error(f"Input dtype only support fp16, bf16, fp32 currently is {inputDtype}.")

        if status != GRAPH_SUCCESS:
            return self.context_.log_error("BroadcastBaseTiling do tiling failed.")
        self.context_.SetTilingKey(self.tilingKey)
        return GRAPH_SUCCESS


def Tiling4PReluGradUpdate(context):
    if context is None:
        return GRAPH_FAILED
    tiling = PReluGradUpdateTiling(context)
    return tiling.DoOpTiling()


# ------------------------------------------------------------------------------ host
def run(grad_output, x, weight, *, core_num: int = ac.ASCEND950_CORE_NUM,
        ub_size: int = ac.ASCEND950_UB_SIZE, block_order=None):
    """What aclnnPreluBackward hands PReluGradUpdate, then the tiling, the launch and the copy
    back: a 1-D ``x`` is seen as ``(1, N)`` and the weight as 1-D (``aclnn_prelu_backward.cpp``).
    Returns ``(dx, update, context)`` shaped like ``x``; empty inputs give empty outputs
    without a launch (aclnn returns before the kernels)."""
    g, x, w = np.asarray(grad_output), np.asarray(x), np.asarray(weight)
    if g.size == 0 or x.size == 0 or w.size == 0:
        return np.empty_like(x), np.empty_like(x), None
    xs = (1, x.size) if x.ndim == 1 else x.shape
    ws = w.reshape(-1).shape
    context = ac.TilingContext([(g.shape, g.dtype), (xs, x.dtype), (ws, w.dtype)],
                               [(xs, x.dtype), (xs, x.dtype)], core_num=core_num, ub_size=ub_size,
                               node_name="PReluGradUpdate")
    if Tiling4PReluGradUpdate(context) != GRAPH_SUCCESS:
        raise ValueError("; ".join(context.errors))
    (schMode,) = context.tiling_key
    dev = [np.ascontiguousarray(a).reshape(-1).copy() for a in (g, x, w)]
    dx, update = np.zeros(x.size, x.dtype), np.zeros(x.size, x.dtype)
    ac.launch(prelu_grad_update, context.block_dim, *dev, dx, update, None, context.tiling_data,
              schMode=schMode, DTYPE_GRADS=x.dtype, ub_size=ub_size, block_order=block_order)
    return dx.reshape(x.shape), update.reshape(x.shape), context


if __name__ == "__main__":
    from leakyops import _core
    from leakyops.aclnn import _ascend950

    rng = np.random.default_rng(0)
    for dtype in (np.float16, ac.bfloat16_t, np.float32):
        x = rng.standard_normal((4, 8, 33)).astype(dtype)
        w = rng.standard_normal(8).astype(dtype)
        g = rng.standard_normal(x.shape).astype(dtype)
        dx, da, ctx = run(g, x, w)
        same_dx = np.array_equal(dx.view(np.uint8), _core.prelu_backward_impl(g, x, w, 1)[0].view(np.uint8))
        same_da = np.array_equal(da.view(np.uint8), _ascend950.prelu_update(g, x).view(np.uint8))
        print(f"{np.dtype(dtype).name}: {x.shape} on {ctx.block_dim} blocks, schMode {ctx.tiling_key[0]}, "
              f"dx {dx.reshape(-1)[:2].tolist()}, update {da.reshape(-1)[:2].tolist()}, "
              f"dx bit-exact vs the core: {same_dx}, update vs Ascend950's: {same_da}")
