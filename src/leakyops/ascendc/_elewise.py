"""ATVOSS's schedulers and host tilings for a :class:`~._dag.DAGSch`, emulated.

Host side (ported from ``hicann/opbase``: ``elewise_tiling.h/.cpp``, ``broadcast_tiling.h/.cpp``,
``broadcast_tiling_base.h/.cpp``): :class:`ElewiseBaseTiling` (``DoTiling24B``/``DoTiling32B``:
``ElewiseTiling``'s core count, 512-element block alignment and UB factor) and
:class:`BroadcastBaseTiling` (dimension collapse, the one-dim tilings, the UB split and block
split of ``DoBrodcastTiling``, the NDDMA / UB-broadcast choice and its buffer count). They run
against a :class:`TilingContext`, the stand-in for ``gert::TilingContext``: shapes, dtypes,
attributes and the platform (Ascend 950: 64 vector cores, a 248 KiB Unified Buffer).

Device side: :class:`ElementwiseSchWithScalar` (``elewise_sch_with_scalar.h``: the block and UB
loop recomputed from ``dim0``, ``coreNum`` and ``ubFormer``, the scalars read from the tiling
data) and :class:`BroadcastSch`, which runs each DAG function over Unified Buffer tiles in
``FunList`` order: ``CopyIn`` by ``DataCopyPad``, ``CopyInBrc`` as the broadcast tile (what the
device's NDDMA or UB broadcast produces), the compute structs on ``LocalTensor`` tiles, and
``CopyOut`` by ``DataCopyPad``. ``BroadcastSch``'s loop is the emulation's reading of the
tiling data (its C++ is not ported); see ``docs/ascendc.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import _vector_math as vm
from ._aicore import GetBlockIdx, _check_int, current_core
from ._dag import Bind, DAGSch, check_buffers
from ._datacopy import DataCopyExtParams, DataCopyPad, DataCopyPadExtParams
from ._errors import AscendCTypeError, ConstraintError
from ._tensor import GlobalTensor, LocalTensor
from ._types import TPosition, as_dtype, type_name

__all__ = [
    "ASCEND950_CORE_NUM", "ASCEND950_UB_SIZE", "GRAPH_SUCCESS", "GRAPH_FAILED", "TilingContext",
    "PlatformAscendC", "CoreMemType", "EnsureNotScalar", "GET_TPL_TILING_KEY",
    "ElewiseTilingData", "EleBaseTilingData24B", "EleBaseTilingData32B", "ElewiseBaseTiling",
    "ElewiseTiling", "ElementwiseSchWithScalar", "BroadcastBaseTiling", "BroadcastSch",
    "DimensionCollapse", "BroadcastBaseTilingData", "BroadcastOneDimTilingData",
    "BroadcastOneDimTilingDataAdvance",
]

ASCEND950_CORE_NUM = 64        # vector cores (GetCoreNumAiv) of Ascend 950 in ops-nn's tests
ASCEND950_UB_SIZE = 253952     # GetCoreMemSize(UB) in ops-nn's arch35 PRelu tiling test (248 KiB)
GRAPH_SUCCESS, GRAPH_FAILED = 0, 1


# --- the tiling context ---------------------------------------------------------------------------
class _StorageShape:
    def __init__(self, shape: tuple):
        self._shape = tuple(int(d) for d in shape)

    def GetStorageShape(self) -> tuple:
        return self._shape

    GetShape = GetStorageShape
    GetOriginShape = GetStorageShape


class _Desc:
    def __init__(self, dtype: np.dtype[Any]):
        self._dtype = dtype

    def GetDataType(self) -> np.dtype[Any]:
        return self._dtype


class _Attrs:
    def __init__(self, values: tuple):
        self._values = values

    def GetAttrPointer(self, i: int) -> Any:
        return self._values[i] if 0 <= i < len(self._values) else None


@dataclass(frozen=True)
class _PlatformInfo:
    coreNum: int
    ubSize: int


class CoreMemType:
    UB = "UB"


class PlatformAscendC:
    """``platform_ascendc::PlatformAscendC``: ``GetCoreNumAiv()``, ``GetCoreMemSize(UB)``
    (returned, not written through an out-parameter)."""

    def __init__(self, info: _PlatformInfo):
        self._info = info

    def GetCoreNumAiv(self) -> int:
        return self._info.coreNum

    def GetCoreMemSize(self, memType: str = CoreMemType.UB) -> int:
        return self._info.ubSize


class TilingContext:
    """The stand-in for ``gert::TilingContext``: inputs and outputs as ``(shape, dtype)``,
    attributes, the platform, and what the tiling writes (the tiling data, the tiling key, the
    block dim, the workspace sizes; ``errors`` collects ``OP_LOGE`` messages)."""

    def __init__(self, inputs: Any, outputs: Any, attrs: tuple = (), *,
                 core_num: int = ASCEND950_CORE_NUM, ub_size: int = ASCEND950_UB_SIZE,
                 node_name: str = "Op"):
        self._inputs = [None if t is None else (tuple(t[0]), as_dtype(t[1], "TilingContext"))
                        for t in inputs]
        self._outputs = [None if t is None else (tuple(t[0]), as_dtype(t[1], "TilingContext"))
                         for t in outputs]
        self._attrs = _Attrs(tuple(attrs))
        self._platform = _PlatformInfo(_check_int(core_num, "TilingContext: core_num", lo=1),
                                       _check_int(ub_size, "TilingContext: ub_size", lo=32))
        self._name = node_name
        self.tiling_data: Any = None
        self.tiling_key: Any = None
        self.block_dim: int | None = None
        self.workspace_sizes: list[int] = []
        self.errors: list[str] = []

    def GetNodeName(self) -> str:
        return self._name

    def GetComputeNodeInputNum(self) -> int:
        return len(self._inputs)

    def GetInputShape(self, i: int) -> _StorageShape | None:
        t = self._inputs[i] if 0 <= i < len(self._inputs) else None
        return None if t is None else _StorageShape(t[0])

    def GetInputDesc(self, i: int) -> _Desc | None:
        t = self._inputs[i] if 0 <= i < len(self._inputs) else None
        return None if t is None else _Desc(t[1])

    def GetOutputShape(self, i: int) -> _StorageShape | None:
        t = self._outputs[i] if 0 <= i < len(self._outputs) else None
        return None if t is None else _StorageShape(t[0])

    def GetOutputDesc(self, i: int) -> _Desc | None:
        t = self._outputs[i] if 0 <= i < len(self._outputs) else None
        return None if t is None else _Desc(t[1])

    def GetAttrs(self) -> _Attrs:
        return self._attrs

    def GetPlatformInfo(self) -> _PlatformInfo:
        return self._platform

    def GetTilingData(self, cls: type) -> Any:
        if not isinstance(self.tiling_data, cls):
            self.tiling_data = cls()
        return self.tiling_data

    def SetTilingKey(self, key: Any) -> None:
        self.tiling_key = key

    def SetBlockDim(self, n: int) -> None:
        self.block_dim = int(n)

    def GetWorkspaceSizes(self, n: int) -> list[int]:
        if len(self.workspace_sizes) < n:
            self.workspace_sizes = [0] * n
        return self.workspace_sizes

    def log_error(self, message: str) -> int:
        """``OP_LOGE``: record the message; returns GRAPH_FAILED for ``return`` statements."""
        self.errors.append(f"{self._name}: {message}")
        return GRAPH_FAILED


def EnsureNotScalar(shape: tuple) -> tuple:
    """A scalar shape ``()`` becomes ``(1,)`` (``Ops::Base::EnsureNotScalar``)."""
    return (1,) if len(shape) == 0 else tuple(shape)


def GET_TPL_TILING_KEY(*params: Any) -> tuple:
    """The template parameters a tiling key selects (the emulation keeps them as a tuple;
    the device packs them into a uint64)."""
    return tuple(params)


def _pack_scalar(buf: bytearray, offset: int, value: Any, what: str) -> int:
    if not isinstance(value, np.generic):
        raise AscendCTypeError(f"{what}: give the scalar as a NumPy scalar of its C++ type (e.g. "
                               f"np.float32(x) for SetScalar<float>), got {type(value).__name__}")
    raw = np.asarray(value).tobytes()
    if offset + len(raw) > len(buf):
        raise ConstraintError(f"{what}: {offset + len(raw)} bytes of scalars do not fit the "
                              f"tiling data's {len(buf)}-byte scalarData")
    buf[offset:offset + len(raw)] = raw
    return offset + len(raw)


class _SetScalar:
    """``SetScalar<T>(value)``: ``obj.SetScalar[float32](x)`` or ``obj.SetScalar(np.float32(x))``."""

    def __init__(self, owner: Any):
        self._owner = owner

    def __getitem__(self, T: Any) -> Callable[[Any], None]:
        dt = as_dtype(T, "SetScalar<T>")
        return lambda value: self._owner._set_scalar(
            vm.cast(np.array([float(value)]), dt, "rint")[0] if dt.kind == "f"
            else np.array(value).astype(dt)[()])

    def __call__(self, value: Any) -> None:
        self._owner._set_scalar(value)


def _read_vars(dag: DAGSch, scalar_data: bytes | bytearray, what: str) -> dict:
    """``SetScalar<idx>``: each Var of the DAG from the tiling data's bytes, in index order."""
    out, offset = {}, 0
    for var in sorted(dag.Vars, key=lambda v: v.Pos):
        n = var.DType.itemsize
        if offset + n > len(scalar_data):
            raise ConstraintError(f"{what}: the DAG's Vars need {offset + n} bytes but the tiling "
                                  f"data holds {len(scalar_data)}")
        out[var] = np.frombuffer(bytes(scalar_data[offset:offset + n]), var.DType)[0]
        offset += n
    return out


# --- the elementwise tiling --------------------------------------------------------------------
REPEAT_BYTES = 256
MIN_TILING_BITS_SIZE_PER_CORE = 32768
CACHE_LINE_BYTE_LENGTH = 512
BITS_NUM = 8
DEFAULT_SCHEMODE = 1


@dataclass
class ElewiseTilingData:
    """``ElewiseTilingData`` (what ``ElewiseTiling`` computes)."""

    innerKey: int = 0
    dim0: int = 0
    ubFormer: int = 0
    blockFormer: int = 0
    blockNum: int = 0
    coreNum: int = 0
    ubLoopOfFormerBlock: int = 0
    ubLoopOfTailBlock: int = 0
    ubTailOfFormerBlock: int = 0
    ubTailOfTailBlock: int = 0
    elemNum: int = 0


@dataclass
class EleBaseTilingData24B:
    """``EleBaseTilingData24B{int64 dim0; int32 coreNum; int32 ubFormer; char scalarData[8]}``."""

    dim0: int = 0
    coreNum: int = 0
    ubFormer: int = 0
    scalarData: bytearray = field(default_factory=lambda: bytearray(8))


@dataclass
class EleBaseTilingData32B:
    """``EleBaseTilingData32B`` (16 bytes of scalars)."""

    dim0: int = 0
    coreNum: int = 0
    ubFormer: int = 0
    scalarData: bytearray = field(default_factory=lambda: bytearray(16))


def ElewiseTiling(coreNum: int, shape: tuple, ubSize: int, maxDtypeBits: int, minDtypeBits: int,
                  extraSize: int, bufferDivisor: int) -> ElewiseTilingData | str:
    """``ElewiseTiling``: the tiling data, or the failure message."""
    dim0 = 1
    for d in shape:
        if d == 0:
            return "elewiseTiling dim can not be 0"
        dim0 *= d
    if coreNum == 0:
        return "coreNum can not be 0"
    if ubSize < extraSize:
        return "ubSize is smaller than extra size"
    cores = min(-(-(dim0 * minDtypeBits) // MIN_TILING_BITS_SIZE_PER_CORE), coreNum)
    blockFormer = -(-(-(-dim0 // cores)) // CACHE_LINE_BYTE_LENGTH) * CACHE_LINE_BYTE_LENGTH
    blockNum = -(-dim0 // blockFormer)
    blockTail = dim0 - (blockNum - 1) * blockFormer
    align = REPEAT_BYTES * BITS_NUM // minDtypeBits
    ubFormer = (ubSize - extraSize) * BITS_NUM // bufferDivisor // align * align
    if ubFormer == 0:
        return "ubFormer can not be 0"
    t = ElewiseTilingData(dim0=dim0, ubFormer=ubFormer, blockFormer=blockFormer,
                          blockNum=blockNum, coreNum=cores, elemNum=ubFormer)
    t.ubLoopOfFormerBlock = -(-blockFormer // ubFormer)
    t.ubLoopOfTailBlock = -(-blockTail // ubFormer)
    t.ubTailOfFormerBlock = blockFormer - (t.ubLoopOfFormerBlock - 1) * ubFormer
    t.ubTailOfTailBlock = blockTail - (t.ubLoopOfTailBlock - 1) * ubFormer
    t.innerKey = 100
    return t


def _same_elewise_shape(a: tuple, b: tuple) -> bool:
    if len(a) == 0 or len(b) == 0 or math.prod(a) == 1 or math.prod(b) == 1:
        return True
    return tuple(a) == tuple(b)


class ElewiseBaseTiling:
    """``Ops::Base::ElewiseBaseTiling``: the host tiling of an elementwise DAG."""

    def __init__(self, context: TilingContext):
        self.context_ = context
        self.numBlocks = 0
        self._data: Any = None
        self._offset = 0
        self.SetScalar = _SetScalar(self)

    def _tiling(self, OpDag: DAGSch, extraSize: int, extraBufferNum: int,
                CheckShape: bool) -> ElewiseTilingData | None:
        ctx = self.context_
        if not isinstance(OpDag, DAGSch):
            raise AscendCTypeError(f"ElewiseBaseTiling: OpDag must be a DAGSch, got {OpDag!r}")
        platform = PlatformAscendC(ctx.GetPlatformInfo())
        out = ctx.GetOutputShape(0)
        if out is None:
            ctx.log_error("output shape is missing")
            return None
        shape = out.GetStorageShape()
        if CheckShape:
            for i in range(ctx.GetComputeNodeInputNum()):
                s = ctx.GetInputShape(i)
                if s is None or not _same_elewise_shape(shape, s.GetStorageShape()):
                    ctx.log_error(f"Input[{i}] shape is not equal with output shape")
                    return None
        max_bits, min_bits = OpDag.MaxDtypeBytes * BITS_NUM, OpDag.MinDtypeBytes * BITS_NUM
        result = ElewiseTiling(platform.GetCoreNumAiv(), shape, platform.GetCoreMemSize(),
                               max_bits, min_bits, extraSize,
                               (OpDag.BufferNum + extraBufferNum) * max_bits)
        if isinstance(result, str):
            ctx.log_error(result)
            return None
        return result

    def _adapt(self, cls: type, t: ElewiseTilingData) -> int:
        data = self.context_.GetTilingData(cls)
        data.dim0, data.ubFormer, data.coreNum = t.dim0, t.ubFormer, t.coreNum
        self._data, self._offset, self.numBlocks = data, 0, t.blockNum
        return GRAPH_SUCCESS

    def DoTiling24B(self, OpDag: DAGSch, extraSize: int = 0, extraBufferNum: int = 0,
                    CheckShape: bool = True) -> int:
        """``DoTiling24B<OpDag, CheckShape>(extraSize, extraBufferNum)``."""
        t = self._tiling(OpDag, extraSize, extraBufferNum, CheckShape)
        return GRAPH_FAILED if t is None else self._adapt(EleBaseTilingData24B, t)

    def DoTiling32B(self, OpDag: DAGSch, extraSize: int = 0, extraBufferNum: int = 0,
                    CheckShape: bool = True) -> int:
        """``DoTiling32B<OpDag, CheckShape>(extraSize, extraBufferNum)``."""
        t = self._tiling(OpDag, extraSize, extraBufferNum, CheckShape)
        return GRAPH_FAILED if t is None else self._adapt(EleBaseTilingData32B, t)

    def _set_scalar(self, value: Any) -> None:
        if self._data is None:
            raise ConstraintError("ElewiseBaseTiling.SetScalar: call DoTiling24B/DoTiling32B first")
        self._offset = _pack_scalar(self._data.scalarData, self._offset, value,
                                    "ElewiseBaseTiling.SetScalar")

    def GetBlockDim(self) -> int:
        return self.numBlocks


# --- running a DAG over one tile -------------------------------------------------------------------
def _convert_scalar(value: Any, dtype: np.dtype[Any]) -> np.generic:
    """A Var's value passed as a function argument of another type (C++ conversion)."""
    if np.asarray(value).dtype == dtype:
        return value
    if dtype.kind == "f":
        return vm.cast(np.array([value], np.float64), dtype, "rint")[0]
    return np.array(value).astype(dtype)[()]


class _TileRunner:
    """Runs a DAG's functions over one tile: UB buffers at ``id * blockLen``."""

    def __init__(self, dag: DAGSch, block_len: int, budget: int, what: str):
        for f in dag.FunList:
            if f.IsScalarOp and f.Fun.kind not in ("copyin", "copyinbrc"):
                raise AscendCTypeError(f"{what}: compute nodes on scalars only ({f!r}) are not "
                                       f"emulated")
        self.dag, self.block_len, self.what = dag, block_len, what
        self.plan = check_buffers(dag, budget, what)
        ub = current_core().ub.capacity
        need = max(self.plan.values(), default=-1) * block_len + block_len
        if need > ub:
            raise ConstraintError(f"{what}: the tile buffers end at byte {need}, past the "
                                  f"{ub}-byte Unified Buffer")

    def tensor(self, node: Bind, dtype: np.dtype[Any], pos: TPosition) -> LocalTensor:
        return LocalTensor[dtype](pos, self.plan[node] * self.block_len,
                                  self.block_len // dtype.itemsize)

    def run(self, count: int, load: Callable[[Bind, LocalTensor, int], None],
            store: Callable[[Bind, LocalTensor, int], None], scalars: dict,
            gm_scalar: Callable[[Any, np.dtype[Any]], Any]) -> None:
        op_scalars: dict = {}
        for f in self.dag.FunList:
            kind = f.Fun.kind
            if kind in ("copyin", "copyinbrc"):
                holder = f.InHolders[0]
                if f.IsScalarOp:
                    op_scalars[f] = gm_scalar(holder, f.Fun.FunInArgType(0))
                    continue
                load(f, self.tensor(f, f.Fun.FunInArgType(0), TPosition.VECIN), count)
            elif kind == "copyout":
                src = f.Args[1]
                store(f, self.tensor(src, f.Fun.FunInArgType(0), TPosition.VECOUT), count)
            else:
                args = []
                for i, a in enumerate(f.InArgs):
                    t = f.Fun.FunInArgType(i)
                    if isinstance(a, Bind):
                        args.append(op_scalars[a] if a.IsScalarOp
                                    else self.tensor(a, t, TPosition.VECCALC))
                    else:
                        args.append(_convert_scalar(scalars[a], t))
                out = self.tensor(f, f.Fun.FunRetArgType(0), TPosition.VECCALC)
                f.Fun(out, *args, count)


def _gm_tensors(dag: DAGSch, args: tuple, what: str) -> tuple[dict, dict]:
    """GM arrays in the order [In0, In1, ..., Out0, Out1, ...] as GlobalTensors."""
    n_in, n_out = dag.InputSize, dag.OutputSize
    if len(args) != n_in + n_out:
        raise AscendCTypeError(f"{what}: args num should match DAG holders: {n_in} inputs and "
                               f"{n_out} outputs, got {len(args)} arrays")
    ins, outs = {}, {}
    for holders, arrays, target in ((dag.InHolders, args[:n_in], ins),
                                    (dag.OutHolders, args[n_in:], outs)):
        by_pos = {h.Pos: h for h in holders}
        for pos, arr in enumerate(arrays):
            g = GlobalTensor(by_pos[pos].DType)
            g.SetGlobalBuffer(arr)
            target[by_pos[pos]] = g
    return ins, outs


def _copy_in(local: LocalTensor, gm: GlobalTensor, count: int) -> None:
    """``Vec::CopyIn``: ``DataCopyPad(dst, src, {1, count * sizeof(T), 0, 0, 0}, {false, 0, 0, 0})``."""
    DataCopyPad(local, gm, DataCopyExtParams(1, count * local.dtype.itemsize, 0, 0, 0),
                DataCopyPadExtParams(False, 0, 0, 0))


def _copy_out(gm: GlobalTensor, local: LocalTensor, count: int) -> None:
    """``Vec::CopyOut``: ``DataCopyPad(dst, src, {1, count * sizeof(T), 0, 0, 0})``."""
    DataCopyPad(gm, local, DataCopyExtParams(1, count * local.dtype.itemsize, 0, 0, 0))


class _SchTemplate:
    def __init__(self, cls: type, n: int):
        self.cls, self.n = cls, n

    def __getitem__(self, key: Any) -> Callable[[Any], Any]:
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != self.n:
            raise AscendCTypeError(f"{self.cls.__name__}: expected {self.n} template arguments")
        return lambda tiling: self.cls(*key, tiling)


class ElementwiseSchWithScalar:
    """``ElementwiseSchWithScalar<EleBaseTilingDataStruct, schMode, ElemDag> sch(tilingData)``:
    ``sch.Init(x, y)`` then ``sch.Process()``. The block and UB loop come from ``dim0``,
    ``coreNum`` and ``ubFormer`` as on the device (block factor aligned to 512 elements);
    ``Init`` takes the GM arrays of the DAG's inputs, then its outputs."""

    def __class_getitem__(cls, key: Any) -> Callable[[Any], ElementwiseSchWithScalar]:
        return _SchTemplate(cls, 3)[key]

    def __init__(self, TilingDataStruct: type, schMode: int, ElemDag: DAGSch, tilingData: Any):
        if not isinstance(ElemDag, DAGSch):
            raise AscendCTypeError(f"ElementwiseSchWithScalar: ElemDag must be a DAGSch, got {ElemDag!r}")
        if not isinstance(tilingData, TilingDataStruct):
            raise AscendCTypeError(f"ElementwiseSchWithScalar: tiling data of type "
                                   f"{type(tilingData).__name__}, expected {TilingDataStruct.__name__}")
        self.dag, self.schMode, self.tilingData = ElemDag, schMode, tilingData
        what = "ElementwiseSchWithScalar"
        self.dim0 = _check_int(tilingData.dim0, f"{what}: dim0", lo=1)
        self.ubFormer = _check_int(tilingData.ubFormer, f"{what}: ubFormer", lo=1)
        self.coreNum = _check_int(tilingData.coreNum, f"{what}: coreNum", lo=1)
        self.blockFormer = -(-(-(-self.dim0 // self.coreNum)) // CACHE_LINE_BYTE_LENGTH) \
            * CACHE_LINE_BYTE_LENGTH
        self.blockNum = -(-self.dim0 // self.blockFormer)
        blockTail = self.dim0 - (self.blockNum - 1) * self.blockFormer
        self.ubLoopOfFormerBlock = -(-self.blockFormer // self.ubFormer)
        self.ubLoopOfTailBlock = -(-blockTail // self.ubFormer)
        self.ubTailOfFormerBlock = self.blockFormer - (self.ubLoopOfFormerBlock - 1) * self.ubFormer
        self.ubTailOfTailBlock = blockTail - (self.ubLoopOfTailBlock - 1) * self.ubFormer
        self._ins: dict = {}
        self._outs: dict = {}
        self._runner: _TileRunner | None = None

    def Init(self, *args: np.ndarray[Any, Any]) -> None:
        what = "ElementwiseSchWithScalar.Init"
        ins, outs = _gm_tensors(self.dag, args, what)
        idx = GetBlockIdx()
        if idx >= self.blockNum:
            raise ConstraintError(f"{what}: block {idx} of a tiling for {self.blockNum} blocks")
        off = self.blockFormer * idx
        self._ins = {h: (g if h.Attr.IsScalar else g[off:]) for h, g in ins.items()}
        self._outs = {h: g[off:] for h, g in outs.items()}
        self._scalars = _read_vars(self.dag, self.tilingData.scalarData, what)
        self._runner = _TileRunner(self.dag, self.ubFormer * self.dag.MaxDtypeBytes,
                                   self.dag.BufferNum, "ElementwiseSchWithScalar")

    def Process(self) -> None:
        if self._runner is None:
            raise ConstraintError("ElementwiseSchWithScalar.Process: call Init first")
        last = GetBlockIdx() == self.blockNum - 1
        loops = self.ubLoopOfTailBlock if last else self.ubLoopOfFormerBlock
        tail = self.ubTailOfTailBlock if last else self.ubTailOfFormerBlock
        offset = 0
        for i in range(loops):
            n = self.ubFormer if i < loops - 1 else tail
            self._run(offset, n)
            offset += self.ubFormer

    def _run(self, offset: int, n: int) -> None:
        def load(f: Bind, local: LocalTensor, count: int) -> None:
            _copy_in(local, self._ins[f.InHolders[0]][offset:], count)

        def store(f: Bind, local: LocalTensor, count: int) -> None:
            _copy_out(self._outs[f.Args[0]][offset:], local, count)

        def gm_scalar(holder: Any, dtype: np.dtype[Any]) -> Any:
            return _convert_scalar(self._ins[holder].GetValue(0), dtype)

        assert self._runner is not None
        self._runner.run(n, load, store, self._scalars, gm_scalar)


# --- the broadcast tiling -----------------------------------------------------------------------
SCH_MODE_UB_BROADCAST = 100
SCH_MODE_NDDMA_WITHOUT_LOOP_CACHE_BRC = 1
SCH_MODE_NDDMA_WITH_LOOP_CACHE_BRC = 2
SCH_MODE_ONE_DIM = 201
SCH_MODE_ONE_DIM_ADVANCE = 202
MAX_NNDMA_DIM = 5
HIGH_PERF_RANK = 4
DEFAULT_ADD_VALUE = 9
MAX_IN_OUT_ARGS_NUMBER = 4
PER_CORE_MIN_UB_BYTE = 8 * 1024
HALF_CORE_NUM_DIVIDE = 2
CACHE_LINE = 128
CACHE_LINE_512 = 512
DB_LOOP = 2
BLOCK_LENGTH = 32
BROADCAST_MAX_DIMS = 8
NDDMA_DCACHE_SIZE = 8192
SPECIAL_DIM_THRESHOLD = 5
SPECIAL_DIM_IN_THRESHOLD = 64
SPECIAL_DIM_MAX_IN_OUT_NUM = 3
OUTER_PRODUCT_THRESHOLD = 32768
BROADCAST_SCALAR_BYTES = 32
KERNEL_TYPE_BOTH, KERNEL_TYPE_NDDMA, KERNEL_TYPE_UB_BROADCAST = 0, 1, 2
_UB_BRC_DTYPES = tuple(np.dtype(t) for t in ("int8", "uint8", "float16", "int16", "uint16")) + (
    as_dtype("bfloat16", "bf16"),)


def DimensionCollapse(inShapes: list, outShape: tuple) -> tuple[list, list] | str:
    """``DimensionCollapse``: merge neighbouring axes that broadcast alike (and drop axes that
    are 1 everywhere); returns ``(dims, strides)`` for each input then the output (a stride of 0
    on a broadcast axis), or the failure message."""
    out = list(outShape)
    nd = len(out)
    if nd == 0:
        return "The output shape's dim num can not be 0"
    ins = []
    for i, s in enumerate(inShapes):
        if len(s) > nd:
            return f"The {i} input's dim num is not same with output's dim num"
        ins.append([1] * (nd - len(s)) + list(s))
    flags = []
    for a in range(nd):
        if out[a] <= 0:
            return f"The output's dim index({a}) must be a positive number"
        flag = 0
        for j, s in enumerate(ins):
            flag <<= 1
            if s[a] != 1 and s[a] != out[a]:
                return f"The {j} input's dim index({a}) is not same with out, and not 1"
            if s[a] <= 0:
                return f"The {j} input's dim index({a}) must be a positive number"
            if s[a] == 1:
                flag += 1
        flags.append(flag)
    target = (1 << len(ins)) - 1

    def collapse(values: list) -> list:
        tmp = [values[0]]
        prev = flags[0]
        for a in range(1, nd):
            cur = flags[a]
            if prev == cur or (prev == target and out[a - 1] == 1):
                tmp[-1] *= values[a]
                prev = cur
                continue
            if cur == target and out[a] == 1:
                continue
            prev = cur
            tmp.append(values[a])
        return tmp

    dims = [collapse(s) for s in ins] + [collapse(out)]
    strides = []
    for i, d in enumerate(dims):
        st, base = [], 1
        for a in range(len(d) - 1, -1, -1):
            if d[a] == 1 and i != len(dims) - 1 and dims[-1][a] != 1:
                st.append(0)
            else:
                st.append(base)
                base *= d[a]
        strides.append(st[::-1])
    return dims, strides


@dataclass
class BroadcastBaseTilingData:
    """``BroadcastBaseTilingData<OpDag>`` (the fields the emulated schedule reads; ``dims`` and
    ``strides`` are the collapsed shapes of every input and of the output)."""

    blockFormer: int = 0
    ubFormer: int = 0
    ubOuter: int = 0
    ubTail: int = 0
    blockTail: int = 0
    shapeLen: int = 0
    ubSplitAxis: int = 0
    dimProductBeforeUbInner: int = 0
    elemNum: int = 0
    blockNum: int = 0
    bufferNum: int = 0
    outputDims: list = field(default_factory=list)
    outputStrides: list = field(default_factory=list)
    dims: list = field(default_factory=list)
    strides: list = field(default_factory=list)
    scalarData: bytearray = field(default_factory=lambda: bytearray(BROADCAST_SCALAR_BYTES))


@dataclass
class BroadcastOneDimTilingData:
    """``BroadcastOneDimTilingData``."""

    blockNum: int = 0
    ubFormer: int = 0
    ubTail: int = 0
    blockFormer: int = 0
    blockTail: int = 0
    scalarFlag: int = 0
    bufferNum: int = 0
    scalarData: bytearray = field(default_factory=lambda: bytearray(BROADCAST_SCALAR_BYTES))


@dataclass
class BroadcastOneDimTilingDataAdvance:
    """``BroadcastOneDimTilingDataAdvance``."""

    tileNum: int = 0
    blockNum: int = 0
    dimLen: int = 0
    scalarFlag: int = 0
    bufferNum: int = 0
    scalarData: bytearray = field(default_factory=lambda: bytearray(BROADCAST_SCALAR_BYTES))


class BroadcastBaseTiling:
    """``Ops::Base::BroadcastBaseTiling<OpDag> brcBaseTiling(context)``: the host tiling of a
    broadcast DAG (contiguous inputs; the non-contiguous and PCIe-through paths are not
    emulated)."""

    def __class_getitem__(cls, OpDag: Any) -> Callable[..., BroadcastBaseTiling]:
        return lambda context, kernelType=KERNEL_TYPE_BOTH: cls(OpDag, context, kernelType)

    def __init__(self, OpDag: DAGSch, context: TilingContext, kernelType: int = KERNEL_TYPE_BOTH):
        if not isinstance(OpDag, DAGSch):
            raise AscendCTypeError(f"BroadcastBaseTiling: OpDag must be a DAGSch, got {OpDag!r}")
        self.dag, self.context_, self.kernelType_ = OpDag, context, kernelType
        self.inShapes: list = []
        self.schMode = 0
        self.dims: list = []
        self.strides: list = []
        self._data: Any = None
        self._pending: list = []
        self.SetScalar = _SetScalar(self)

    def SetOpInputStorageShapes(self, shapes: list) -> int:
        if not shapes:
            return self.context_.log_error("The size of opInputStorageShapes must be greater than 0.")
        self.inShapes = [tuple(s) for s in shapes]
        return GRAPH_SUCCESS

    def GetSchMode(self) -> int:
        return self.schMode

    def _set_scalar(self, value: Any) -> None:
        self._pending.append(value)
        if self._data is not None:
            self._pack()

    def _pack(self) -> None:
        offset = 0
        for v in self._pending:
            offset = _pack_scalar(self._data.scalarData, offset, v, "BroadcastBaseTiling.SetScalar")

    def DoTiling(self, extraSize: int = 0, extraBufferNum: int = 0, preferMultiCore: bool = False) -> int:
        ctx = self.context_
        platform = PlatformAscendC(ctx.GetPlatformInfo())
        self.coreNum, self.ubSize = platform.GetCoreNumAiv(), platform.GetCoreMemSize()
        self.extraSize, self.extraBufferNum = extraSize, extraBufferNum
        out = ctx.GetOutputShape(0)
        if out is None:
            return ctx.log_error("output shape is missing")
        self.outShape = EnsureNotScalar(out.GetStorageShape())
        if not self.inShapes:
            for i in range(ctx.GetComputeNodeInputNum()):
                s = ctx.GetInputShape(i)
                if s is None:
                    return ctx.log_error(f"input {i} shape is missing")
                self.inShapes.append(EnsureNotScalar(s.GetStorageShape()))
        collapsed = DimensionCollapse(self.inShapes, self.outShape)
        if isinstance(collapsed, str):
            return ctx.log_error(f"dimension collapse failed: {collapsed}")
        self.dims, self.strides = collapsed
        if len(self.dims[-1]) > BROADCAST_MAX_DIMS:
            return ctx.log_error("broadcast can't support dim size greater than 8.")
        if len(self.dims[-1]) == 1:
            if self.dag.InputSize + self.dag.OutputSize <= MAX_IN_OUT_ARGS_NUMBER \
                    and self.dag.VarSize <= 0:
                status = self._one_dim_advance()
            else:
                status = self._one_dim()
        else:
            status = self._broadcast(preferMultiCore)
        if status == GRAPH_SUCCESS:
            ctx.GetWorkspaceSizes(1)[0] = 16 * 1024 * 1024
            self._pack()
        return status

    # one-dim
    def _scalar_flag(self) -> int:
        return sum((1 << i) for i, d in enumerate(self.dims[:-1]) if d[0] == 1)

    def _one_dim(self) -> int:
        ctx, dag = self.context_, self.dag
        data = self._data = ctx.GetTilingData(BroadcastOneDimTilingData)
        alive = dag.GetBufferNum(True, True) + self.extraBufferNum
        size = dag.MaxDtypeBytes
        data.scalarFlag, data.bufferNum = self._scalar_flag(), alive
        ub_former = (self.ubSize - self.extraSize) // alive // CACHE_LINE * CACHE_LINE // size
        if ub_former == 0:
            return ctx.log_error("ub size or CACHE_LINE check failed")
        length, cores = self.dims[-1][0], self.coreNum

        def split(ub_former: int) -> tuple:
            ub_outer = -(-length // ub_former)
            ub_tail = length % ub_former or ub_former
            block_former = -(-ub_outer // cores)
            block_tail = ub_outer % block_former or block_former
            return ub_former, ub_tail, block_former, block_tail, -(-ub_outer // block_former)

        ub_former, ub_tail, block_former, block_tail, block_num = split(ub_former)
        if block_num < cores // HALF_CORE_NUM_DIVIDE and ub_former * size * alive > PER_CORE_MIN_UB_BYTE:
            per_core = length * 2 // cores
            aligned = -(-(per_core * size) // CACHE_LINE) * CACHE_LINE // size
            ub_former = min(ub_former, aligned)
            lowest = PER_CORE_MIN_UB_BYTE // alive // CACHE_LINE * CACHE_LINE // size
            ub_former = max(ub_former, lowest)
            ub_former, ub_tail, block_former, block_tail, block_num = split(ub_former)
        data.blockNum, data.ubFormer, data.ubTail = block_num, ub_former, ub_tail
        data.blockFormer, data.blockTail = block_former, block_tail
        self.schMode = SCH_MODE_ONE_DIM
        ctx.SetBlockDim(block_num)
        return GRAPH_SUCCESS

    def _one_dim_advance(self) -> int:
        ctx, dag = self.context_, self.dag
        data = self._data = ctx.GetTilingData(BroadcastOneDimTilingDataAdvance)
        alive = dag.GetBufferNum(True, True) + self.extraBufferNum
        data.scalarFlag, data.bufferNum = self._scalar_flag(), alive
        size, in_size = dag.MaxDtypeBytes, dag.MinDtypeBytes
        tile = (self.ubSize - self.extraSize) // alive // CACHE_LINE_512 * CACHE_LINE_512 // size
        if tile == 0:
            return ctx.log_error("ub size or CACHE_LINE_512 check failed")
        length, cores = self.dims[-1][0], self.coreNum
        in_line, line = CACHE_LINE_512 // in_size, CACHE_LINE_512 // size
        if cores * in_line > length:
            tile = in_line
        elif cores * tile > length:
            tile = length // cores // line * line
        ub_outer = -(-length // tile)
        block_former = -(-ub_outer // cores)
        if block_former == 1:
            block_former = DB_LOOP
        data.tileNum, data.blockNum, data.dimLen = tile, -(-ub_outer // block_former), length
        self.schMode = SCH_MODE_ONE_DIM_ADVANCE
        ctx.SetBlockDim(data.blockNum)
        return GRAPH_SUCCESS

    # the general broadcast
    def _copy_in_brc_pos(self) -> set:
        return {n.InHolders[0].Pos for n in self.dag.CopyBrcNodes}

    def _is_big_nlast_brc(self, brc_pos: set) -> bool:
        out_strides = self.strides[-1]
        for i, st in enumerate(self.strides[:-1]):
            if i not in brc_pos or st[-1] == 0:
                continue
            if any(st[j] == 0 and out_strides[j] != 0 for j in range(len(st) - 1)):
                size = self.context_.GetInputDesc(i).GetDataType().itemsize
                if self.dims[i][-1] * size >= NDDMA_DCACHE_SIZE // 2:
                    return True
        return False

    def _is_special_dim_above_five(self, size: int) -> bool:
        if len(self.dims) > SPECIAL_DIM_MAX_IN_OUT_NUM or size not in (2, 4):
            return False
        out = self.dims[-1]
        if len(out) <= SPECIAL_DIM_THRESHOLD:
            return False
        inner = len(out) - SPECIAL_DIM_THRESHOLD
        if out[inner] > 2:
            return False
        check_a = check_b = False
        for d, st in zip(self.dims[:-1], self.strides[:-1]):
            if st[-1] == 0:
                if math.prod(d) * size >= CACHE_LINE_512:
                    return False
                check_b = True
            else:
                if any(s == 0 for s in st):
                    return False
                inner_p, outer_p = math.prod(d[inner:]), math.prod(d[:inner])
                if inner_p > SPECIAL_DIM_IN_THRESHOLD or not (
                        OUTER_PRODUCT_THRESHOLD <= outer_p <= 2 * OUTER_PRODUCT_THRESHOLD):
                    return False
                check_a = True
        return check_a and check_b

    def _is_ub_broadcast(self, brc_pos: set) -> bool:
        if self.kernelType_ == KERNEL_TYPE_NDDMA:
            return False
        if self.kernelType_ == KERNEL_TYPE_UB_BROADCAST:
            return True
        out_strides = self.strides[-1]
        idx = next((i for i, st in enumerate(self.strides[:-1])
                    if any(st[j] == 0 and out_strides[j] != 0 for j in range(len(out_strides)))), -1)
        if idx == -1:
            return False
        if self.dag.CopyBrcSize == 0:
            return True
        if self._is_big_nlast_brc(brc_pos):
            return True
        dtype = self.context_.GetInputDesc(idx).GetDataType()
        if self._is_special_dim_above_five(dtype.itemsize):
            return True
        return self.dims[-1][-1] % (BLOCK_LENGTH // dtype.itemsize) == 0 and dtype in _UB_BRC_DTYPES

    def _split(self, max_elem: int) -> tuple:
        """``GetBlockSplitFactor``: (fused outer product, ubFormer, ubSplitAxis, ubOuter, ubTail)."""
        out = self.dims[-1]
        product, axis, fits = 1, 0, True
        for i in range(len(out) - 1, -1, -1):
            product *= out[i]
            if product > max_elem:
                product //= out[i]
                axis, fits = i, False
                break
        if fits:
            product //= out[0]
        ub_former = max_elem if len(out) == 1 else max_elem // product
        ub_outer = -(-out[axis] // ub_former)
        ub_tail = out[axis] - (ub_outer - 1) * ub_former
        fused = ub_outer * math.prod(out[:axis])
        return fused, ub_former, axis, ub_outer, ub_tail

    def _broadcast(self, preferMultiCore: bool) -> int:
        ctx, dag = self.context_, self.dag
        data = self._data = ctx.GetTilingData(BroadcastBaseTilingData)
        brc_pos = self._copy_in_brc_pos()
        is_ub = self._is_ub_broadcast(brc_pos)
        buffers = dag.GetBufferNum(not is_ub, True) + self.extraBufferNum
        max_bits, min_bits = dag.MaxDtypeBytes * BITS_NUM, dag.MinDtypeBytes * BITS_NUM
        if self.ubSize < self.extraSize:
            return ctx.log_error("ubSize is smaller than extra size.")
        align = REPEAT_BYTES * BITS_NUM // min_bits
        max_elem = (self.ubSize - self.extraSize) * BITS_NUM // (buffers * max_bits) // align * align
        if max_elem == 0:
            return ctx.log_error("maxElemNum can not be 0")
        fused, ub_former, axis, ub_outer, ub_tail = self._split(max_elem)
        cores = self.coreNum
        block_former = -(-fused // cores)
        block_num = -(-fused // block_former)
        if preferMultiCore and block_num < cores:
            target, tmp = block_former * cores, fused
            while tmp < target:
                max_elem -= CACHE_LINE
                if max_elem <= CACHE_LINE_512:
                    break
                tmp = self._split(max_elem)[0]
            max_elem = -(-(max_elem + CACHE_LINE) // CACHE_LINE) * CACHE_LINE
            fused, ub_former, axis, ub_outer, ub_tail = self._split(max_elem)
            block_former = -(-fused // cores)
            block_num = -(-fused // block_former)
        data.ubSplitAxis, data.ubFormer, data.ubOuter, data.ubTail = axis, ub_former, ub_outer, ub_tail
        data.blockFormer, data.blockNum = block_former, block_num
        data.blockTail = fused - (block_num - 1) * block_former
        data.dimProductBeforeUbInner, data.elemNum = fused, max_elem
        data.shapeLen, data.bufferNum = len(self.dims[-1]), buffers
        data.outputDims, data.outputStrides = list(self.dims[-1]), list(self.strides[-1])
        data.dims, data.strides = [list(d) for d in self.dims], [list(s) for s in self.strides]
        running = data.shapeLen - axis
        if is_ub:
            self.schMode = SCH_MODE_UB_BROADCAST + (DEFAULT_ADD_VALUE if running > HIGH_PERF_RANK
                                                    else running)
        else:
            self.schMode = (SCH_MODE_NDDMA_WITH_LOOP_CACHE_BRC if running > MAX_NNDMA_DIM
                            else SCH_MODE_NDDMA_WITHOUT_LOOP_CACHE_BRC)
        ctx.SetBlockDim(block_num)
        return GRAPH_SUCCESS


# --- the broadcast schedule ------------------------------------------------------------------------
def _broadcast_view(gm: GlobalTensor, dims: list, strides: list, out_dims: list) -> np.ndarray[Any, Any]:
    """An input (collapsed shape ``dims``) seen in the collapsed output shape: stride 0 on its
    broadcast axes."""
    arr = gm.numpy()
    need = sum((d - 1) * s for d, s in zip(dims, strides)) + 1
    if need > arr.size:
        raise ConstraintError(f"BroadcastSch: an input holds {arr.size} elements but its shape "
                              f"{dims} needs {need}")
    return np.lib.stride_tricks.as_strided(arr, shape=tuple(out_dims),
                                           strides=tuple(s * arr.itemsize for s in strides),
                                           writeable=False)


class BroadcastSch:
    """``BroadcastSch<schMode, OpDag> sch(tiling); sch.Process(in0, ..., out0, ...)``.

    For the one-dim modes the block loops over UB tiles of the flat data (an input of one
    element is broadcast); otherwise each block takes ``blockFormer`` consecutive points of the
    fused space outside the UB split axis and each point is one tile: ``ubFormer`` (or
    ``ubTail``) along the split axis times every axis inside it, contiguous in the outputs.
    """

    def __class_getitem__(cls, key: Any) -> Callable[[Any], BroadcastSch]:
        return _SchTemplate(cls, 2)[key]

    def __init__(self, schMode: int, OpDag: DAGSch, tiling: Any):
        if not isinstance(OpDag, DAGSch):
            raise AscendCTypeError(f"BroadcastSch: OpDag must be a DAGSch, got {OpDag!r}")
        one_dim = (BroadcastOneDimTilingData, BroadcastOneDimTilingDataAdvance)
        if schMode in (SCH_MODE_ONE_DIM, SCH_MODE_ONE_DIM_ADVANCE):
            want = one_dim[schMode - SCH_MODE_ONE_DIM]
        else:
            want = BroadcastBaseTilingData
        if not isinstance(tiling, want):
            raise AscendCTypeError(f"BroadcastSch<{schMode}>: tiling data of type "
                                   f"{type(tiling).__name__}, expected {want.__name__}")
        self.schMode, self.dag, self.tiling = schMode, OpDag, tiling

    def Process(self, *args: np.ndarray[Any, Any]) -> None:
        what = f"BroadcastSch<{self.schMode}>.Process"
        dag, t = self.dag, self.tiling
        ins, outs = _gm_tensors(dag, args, what)
        scalars = _read_vars(dag, t.scalarData, what)
        idx = GetBlockIdx()
        if idx >= t.blockNum:
            raise ConstraintError(f"{what}: block {idx} of a tiling for {t.blockNum} blocks")
        if self.schMode in (SCH_MODE_ONE_DIM, SCH_MODE_ONE_DIM_ADVANCE):
            self._one_dim(ins, outs, scalars, idx, what)
        else:
            self._tiles(ins, outs, scalars, idx, what)

    def _gm_scalar(self, ins: dict) -> Callable[[Any, np.dtype[Any]], Any]:
        return lambda holder, dtype: _convert_scalar(ins[holder].GetValue(0), dtype)

    def _one_dim(self, ins: dict, outs: dict, scalars: dict, idx: int, what: str) -> None:
        t = self.tiling
        if self.schMode == SCH_MODE_ONE_DIM:
            tile = t.ubFormer
            first = idx * t.blockFormer
            count_tiles = t.blockTail if idx == t.blockNum - 1 else t.blockFormer
            length = next(iter(outs.values())).GetSize()
        else:
            tile = t.tileNum
            ub_outer = -(-t.dimLen // tile)
            per_block = -(-ub_outer // t.blockNum)
            first = idx * per_block
            count_tiles = max(0, min(per_block, ub_outer - first))
            length = t.dimLen
        budget = t.bufferNum
        if self.schMode == SCH_MODE_ONE_DIM_ADVANCE and budget == 0:
            # ops-nn's kernel unit test writes this tiling by hand without bufferNum and runs:
            # the buffers are then the DAG's own count (see docs/ascendc.md)
            budget = self.dag.buffer_plan()[1]
        runner = _TileRunner(self.dag, tile * self.dag.MaxDtypeBytes, budget, what)
        scalar_inputs = {h for h in ins if (t.scalarFlag >> h.Pos) & 1}
        for k in range(first, first + count_tiles):
            off = k * tile
            n = min(tile, length - off)

            def load(f: Bind, local: LocalTensor, count: int, off: int = off) -> None:
                h = f.InHolders[0]
                if h in scalar_inputs:
                    local.numpy()[:count] = ins[h].GetValue(0)
                else:
                    _copy_in(local, ins[h][off:], count)

            def store(f: Bind, local: LocalTensor, count: int, off: int = off) -> None:
                _copy_out(outs[f.Args[0]][off:], local, count)

            runner.run(n, load, store, scalars, self._gm_scalar(ins))

    def _tiles(self, ins: dict, outs: dict, scalars: dict, idx: int, what: str) -> None:
        t = self.tiling
        out_dims, axis = t.dims[-1], t.ubSplitAxis
        inner = math.prod(out_dims[axis + 1:])
        runner = _TileRunner(self.dag, t.elemNum * self.dag.MaxDtypeBytes, t.bufferNum, what)
        views = {h: _broadcast_view(g, t.dims[h.Pos], t.strides[h.Pos], out_dims)
                 for h, g in ins.items() if not h.Attr.IsScalar}
        outer_shape = tuple(out_dims[:axis]) + (t.ubOuter,)
        out_strides = t.strides[-1]
        count_points = t.blockTail if idx == t.blockNum - 1 else t.blockFormer
        for point in range(idx * t.blockFormer, idx * t.blockFormer + count_points):
            index = np.unravel_index(point, outer_shape)
            u = int(index[-1])
            n_axis = t.ubTail if u == t.ubOuter - 1 else t.ubFormer
            key = tuple(int(i) for i in index[:-1]) + (slice(u * t.ubFormer, u * t.ubFormer + n_axis),)
            off = sum(int(i) * s for i, s in zip(index[:-1], out_strides)) \
                + u * t.ubFormer * out_strides[axis]
            n = n_axis * inner

            def load(f: Bind, local: LocalTensor, count: int, key: tuple = key) -> None:
                local.numpy()[:count] = views[f.InHolders[0]][key].reshape(-1)

            def store(f: Bind, local: LocalTensor, count: int, off: int = off) -> None:
                _copy_out(outs[f.Args[0]][off:], local, count)

            runner.run(n, load, store, scalars, self._gm_scalar(ins))
