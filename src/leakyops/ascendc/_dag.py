"""ATVOSS's elementwise DAG (``Ops::Base`` in ``atvoss/util``: ``dag.h``, ``vec.h``,
``placeholder.h``, ``node.h``, ``aux1.h``), emulated: placeholders, ``Vec`` functions,
:class:`Bind`, :class:`Elems` and :class:`DAGSch` with its buffer analysis.

A vendor DAG reads the same in Python::

    using OpCopyInX = Bind<Vec::CopyIn<U>, Placeholder::In0<U>>;      # C++
    OpCopyInX = Bind(Vec.CopyIn[U], Placeholder.In0[U])                # Python

Types are C++ types, so two ``Bind`` of the same function and arguments are the same node
(they compare equal). :class:`DAGSch` derives what the schedulers and the host tiling read:
the function list in execution order (``FunList``), the placeholders, the variables, and the
buffer counts of ``aux1.h``/``node.h`` (``MaxAliveNode``, ``BufferNum`` at each memory level,
``MaxDtypeBytes``, ...) computed by the same rules. The schedulers and tilings that run a DAG
over Unified Buffer tiles are in ``_elewise.py``.

>>> from leakyops.ascendc import Bind, DAGSch, Elems, Placeholder, Vec, half
>>> x = Bind(Vec.CopyIn[half], Placeholder.In0[half])
>>> dag = DAGSch(Elems(Bind(Vec.CopyOut[half], Placeholder.Out0[half], x)))
>>> (len(dag.FunList), dag.BufferNum, dag.MaxDtypeBytes, dag.BufLevel.name)
(2, 2, 2, 'LEVEL_2')
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ._errors import AscendCTypeError, ConstraintError
from ._types import as_dtype, type_name

__all__ = ["Placeholder", "Vec", "Bind", "Elems", "DAGSch", "MemOptCfg", "MemLevel",
           "MAX_BUFFER_NUMBER"]

MAX_BUFFER_NUMBER = 10   # dag.h: the most buffers LEVEL_0 may pick LEVEL_2 or LEVEL_1 with
_MAX_DTYPE_BYTES = 32


# --- placeholders ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class InAttr:
    """``Placeholder::InAttr<scope, isScalar>``: ``IsScalar = 1`` marks an input read as one
    scalar from GM (``ScalarAttr<1>``)."""

    Scope: str = "GM"
    IsScalar: int = 0


@dataclass(frozen=True)
class Holder:
    """A placeholder: ``In<i><T, Attr>``, ``Out<i><T>`` or ``Var<T, i>``."""

    kind: str            # "in", "out" or "var"
    Pos: int
    DType: np.dtype[Any]
    Attr: InAttr = field(default=InAttr())

    def __repr__(self) -> str:
        name = {"in": f"In{self.Pos}", "out": f"Out{self.Pos}", "var": "Var"}[self.kind]
        extra = f", {self.Pos}" if self.kind == "var" else ""
        scalar = ", ScalarAttr<1>" if self.Attr.IsScalar else ""
        return f"{name}<{type_name(self.DType)}{extra}{scalar}>"


class _HolderTemplate:
    def __init__(self, kind: str, pos: int | None):
        self.kind, self.pos = kind, pos

    def __getitem__(self, key: Any) -> Holder:
        key = key if isinstance(key, tuple) else (key,)
        if self.kind == "var":
            if len(key) != 2:
                raise AscendCTypeError("Placeholder::Var<T, index>: give the type and the index")
            dt, pos = as_dtype(key[0], "Placeholder::Var<T>"), key[1]
            if isinstance(pos, bool) or not isinstance(pos, int) or pos < 0:
                raise AscendCTypeError(f"Placeholder::Var<T, index>: index must be an int >= 0, "
                                       f"got {pos!r}")
            return Holder("var", pos, dt)
        dt = as_dtype(key[0], f"Placeholder::{self.kind}<T>")
        attr = key[1] if len(key) > 1 else InAttr()
        if not isinstance(attr, InAttr) or len(key) > 2:
            raise AscendCTypeError(f"Placeholder: expected <T> or <T, InAttr>, got {key!r}")
        return Holder(self.kind, self.pos, dt, attr if self.kind == "in" else InAttr())


class _PlaceholderNamespace:
    """``Ops::Base::Placeholder``: ``In0`` ... ``In11``, ``Out0`` ... ``Out9``, ``Var``."""

    def __init__(self) -> None:
        for i in range(12):
            setattr(self, f"In{i}", _HolderTemplate("in", i))
        for i in range(10):
            setattr(self, f"Out{i}", _HolderTemplate("out", i))
        self.Var = _HolderTemplate("var", None)
        self.InAttr = InAttr

    @staticmethod
    def ScalarAttr(isScalar: int = 0) -> InAttr:
        return InAttr("GM", isScalar)

    def __repr__(self) -> str:
        return "<namespace Ops::Base::Placeholder>"


Placeholder = _PlaceholderNamespace()


# --- Vec functions -------------------------------------------------------------------------------
class FunBase:
    """``Vec::FunBase``: a vector function of the DAG. Its specialisations carry
    ``DataTypes`` (the output type, then the inputs' types), ``InputSize`` and ``TempSize``.

    A custom compute struct derives from one of the ``Elemwise...OP`` bases, names its
    template parameters and its data types, and does its work in ``__init__`` (the C++
    constructor the scheduler calls as ``Func(dst, inputs..., count)``)::

        class LeakyReluCustom(Vec.ElemwiseBinaryOP, template=("T",), types=("T", "T", float32)):
            def __init__(self, dst, src, negativeSlope, count): ...

    ``LeakyReluCustom[half]`` is ``LeakyReluCustom<half>`` (one class per argument list, so
    the same specialisation is the same node type).
    """

    InputSize: ClassVar[int] = 0
    TempSize: ClassVar[int] = 0
    kind: ClassVar[str] = "compute"
    template: ClassVar[tuple] = ()
    types: ClassVar[tuple] = ()
    DataTypes: ClassVar[tuple] = ()
    targs: ClassVar[tuple] = ()
    _specs: ClassVar[dict]

    def __init_subclass__(cls, template: tuple = (), types: tuple = (), tempSize: int | None = None,
                          **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.targs:          # a specialisation made by __class_getitem__
            return
        cls._specs = {}
        if template or types:
            cls.template, cls.types = tuple(template), tuple(types)
            if len(cls.types) != 1 + cls.InputSize:
                raise AscendCTypeError(
                    f"{cls.__name__}: {len(cls.types)} data types for a function of "
                    f"{cls.InputSize} inputs (the output type, then one per input)")
        if tempSize is not None:
            cls.TempSize = tempSize

    def __class_getitem__(cls, key: Any) -> type[FunBase]:
        key = key if isinstance(key, tuple) else (key,)
        if not cls.template:
            raise AscendCTypeError(f"{cls.__name__} is not a template")
        if len(key) != len(cls.template):
            raise AscendCTypeError(f"{cls.__name__}<{', '.join(cls.template)}>: got {len(key)} "
                                   f"template arguments")
        targs = tuple(as_dtype(k, f"{cls.__name__}<{p}>") for k, p in zip(key, cls.template))
        spec = cls._specs.get(targs)
        if spec is None:
            env = dict(zip(cls.template, targs))
            types = tuple(env[t] if isinstance(t, str) else as_dtype(t, cls.__name__)
                          for t in cls.types)
            name = f"{cls.__name__}<{', '.join(type_name(t) for t in targs)}>"
            spec = type(name, (cls,), {"targs": targs, "DataTypes": types, **env,
                                       "__module__": cls.__module__, "__qualname__": name})
            cls._specs[targs] = spec
        return spec

    @classmethod
    def FunRetArgType(cls, offset: int = 0) -> np.dtype[Any]:
        return cls.DataTypes[offset]

    @classmethod
    def FunInArgType(cls, offset: int) -> np.dtype[Any]:
        return cls.DataTypes[1 + offset]


class ElemwiseUnaryOP(FunBase):
    InputSize = 1


class ElemwiseBinaryOP(FunBase):
    InputSize = 2


class ElemwiseTernaryOP(FunBase):
    InputSize = 3


class ElemwiseQuaternaryOP(FunBase):
    InputSize = 4


class CopyIn(ElemwiseUnaryOP, template=("T",), types=("T", "T")):
    """``Vec::CopyIn<T>``: one tile of an input, GM -> UB (``DataCopyPad``)."""

    kind = "copyin"


class CopyInBrc(ElemwiseUnaryOP, template=("T",), types=("T", "T"), tempSize=1):
    """``Vec::CopyInBrc<T>``: one tile of an input broadcast to the output's shape (NDDMA or a
    UB broadcast on the device)."""

    kind = "copyinbrc"


class CopyOut(ElemwiseUnaryOP, template=("T",), types=("T", "T")):
    """``Vec::CopyOut<T>``: one tile of an output, UB -> GM (``DataCopyPad``)."""

    kind = "copyout"


class _VecNamespace:
    """``Ops::Base::Vec``: the function bases and the copy functions."""

    FunBase = FunBase
    ElemwiseUnaryOP = ElemwiseUnaryOP
    ElemwiseBinaryOP = ElemwiseBinaryOP
    ElemwiseTernaryOP = ElemwiseTernaryOP
    ElemwiseQuaternaryOP = ElemwiseQuaternaryOP
    CopyIn = CopyIn
    CopyInBrc = CopyInBrc
    CopyOut = CopyOut

    def __repr__(self) -> str:
        return "<namespace Ops::Base::Vec>"


Vec = _VecNamespace()


def _is_copy_in(fun: type[FunBase]) -> bool:        # Vec::IsCopyInOp (CopyIn and CopyInBrc)
    return fun.kind in ("copyin", "copyinbrc")


# --- Bind, Elems ------------------------------------------------------------------------------------
class Elems(tuple):
    """``Elems<Ts...>``: an ordered list of DAG nodes."""

    def __new__(cls, *items: Any) -> Elems:
        return super().__new__(cls, items)

    @property
    def Size(self) -> int:
        return len(self)


def _unique(items: Any) -> list:
    out: list = []
    for x in items:
        if x not in out:
            out.append(x)
    return out


def _union(*lists: Any) -> list:
    return _unique(x for lst in lists for x in lst)


class Bind:
    """``Bind<Func, Args...>``: a DAG node, ``Func`` applied to placeholders, variables and
    other nodes. Equal when the function and the arguments are (C++ type identity)."""

    __slots__ = ("Fun", "Args", "_hash")

    def __init__(self, Fun: Any, *Args: Any):
        if not (isinstance(Fun, type) and issubclass(Fun, FunBase) and Fun.targs):
            raise AscendCTypeError(f"Bind: the function must be a Vec function specialisation such "
                                   f"as Vec.CopyIn[half], got {Fun!r}")
        for a in Args:
            if not isinstance(a, (Holder, Bind)):
                raise AscendCTypeError(f"Bind<{Fun.__name__}>: an argument must be a placeholder "
                                       f"or a Bind, got {a!r}")
        self.Fun, self.Args = Fun, tuple(Args)
        self._hash = hash((Fun, self.Args))
        self._check()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Bind) and self.Fun is other.Fun and self.Args == other.Args

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Bind<{self.Fun.__name__}, {', '.join(map(repr, self.Args))}>"

    # the lists of dag.h's Bind
    @property
    def OutHolders(self) -> list[Holder]:
        return _unique(a for a in self.Args if isinstance(a, Holder) and a.kind == "out")

    @property
    def InArgs(self) -> list:
        return [a for a in self.Args if not (isinstance(a, Holder) and a.kind == "out")]

    @property
    def InHolders(self) -> list[Holder]:
        return [a for a in self.Args if isinstance(a, Holder) and a.kind == "in"]

    @property
    def InFuns(self) -> list[Bind]:
        return [a for a in self.Args if isinstance(a, Bind)]

    @property
    def Vars(self) -> list[Holder]:
        return [a for a in self.Args if isinstance(a, Holder) and a.kind == "var"]

    @property
    def IsScalarOp(self) -> bool:
        holders, funs = self.InHolders, self.InFuns
        return (all(h.Attr.IsScalar == 1 for h in holders)
                and all(f.IsScalarOp for f in funs))

    @property
    def InNonScalarFuns(self) -> list[Bind]:
        return [f for f in self.InFuns if not f.IsScalarOp]

    @property
    def OutDataType(self) -> np.dtype[Any]:
        return self.Fun.FunRetArgType(0)

    @property
    def DependFuns(self) -> list[Bind]:
        return _union(*(f.DependFuns for f in self.InFuns)) + [self] if self.InFuns else [self]

    @property
    def SourceInHolders(self) -> list[Holder]:
        return _union(*(f.SourceInHolders for f in self.InFuns), self.InHolders)

    def _check(self) -> None:
        """What the C++ compiler checks (static_asserts of the schedulers, the argument lists)."""
        fun, name = self.Fun, f"Bind<{self.Fun.__name__}>"
        ins = self.InArgs
        if fun.kind == "copyout":
            if len(self.Args) != 2 or not isinstance(self.Args[0], Holder) \
                    or self.Args[0].kind != "out" or not isinstance(self.Args[1], Bind):
                raise AscendCTypeError(f"{name}: CopyOut takes (Placeholder::Out<i>, node)")
            if self.Args[0].DType != fun.FunInArgType(0) or self.Args[1].OutDataType != fun.FunInArgType(0):
                raise AscendCTypeError(f"{name}: CopyOut data type is inconsistent with the out "
                                       f"holder's or the node's data type")
            return
        if any(isinstance(a, Holder) and a.kind == "out" for a in self.Args):
            raise AscendCTypeError(f"{name}: only CopyOut takes an output placeholder")
        if _is_copy_in(fun):
            if len(ins) != 1 or len(self.InHolders) != 1:
                raise AscendCTypeError(f"{name}: CopyIn input inHolders num should be 1")
            if self.InHolders[0].DType != fun.FunInArgType(0):
                raise AscendCTypeError(f"{name}: CopyIn data type is inconsistent with in holder "
                                       f"data type")
            return
        if len(ins) != fun.InputSize:
            raise AscendCTypeError(f"{name}: {fun.__name__} takes {fun.InputSize} inputs, got "
                                   f"{len(ins)}")
        if self.InHolders:
            raise AscendCTypeError(f"{name}: an input placeholder goes through CopyIn first")
        for i, a in enumerate(ins):
            want = fun.FunInArgType(i)
            got = a.OutDataType if isinstance(a, Bind) else a.DType
            if got != want:
                raise AscendCTypeError(f"{name}: input {i} is {type_name(got)} but {fun.__name__} "
                                       f"takes {type_name(want)} there")


# --- DAGSch -----------------------------------------------------------------------------------------
class MemLevel(enum.IntEnum):
    """``MemLevel``: how a DAG's tiles share the Unified Buffer (2: inputs and outputs double
    buffered, temporaries shared; 0: buffers reused as soon as possible)."""

    LEVEL_0 = 0
    LEVEL_1 = 1
    LEVEL_2 = 2


@dataclass(frozen=True)
class MemOptCfg:
    """``MemOptCfg<MemLevel = LEVEL_0, ReuseIn = false>`` (LEVEL_0 lets :class:`DAGSch` pick
    LEVEL_2, LEVEL_1 or LEVEL_0 by buffer count)."""

    memoryLevel: MemLevel = MemLevel.LEVEL_0
    reuseIn: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.memoryLevel, MemLevel):
            raise AscendCTypeError(f"MemOptCfg: Buffer level should be in [0, 1, 2], got "
                                   f"{self.memoryLevel!r}")


@dataclass
class DagMaxAliveInfo:
    """``__aux::DagMaxAliveInfo``."""

    aliveNode: int = 0
    tempCalcNode: int = 0
    maxDtypeBytes: int = 0
    minDtypeBytes: int = _MAX_DTYPE_BYTES
    aliveNodeNoCopyBrcTmpBuf: int = 0
    tempCalcNodeNoCopyBrcTmpBuf: int = 0


def _is_input_later(fun_list: list[Bind], start: int, node: Bind) -> bool:
    """``__aux::CheckIsInput``: is ``node`` an input of a function from ``start`` on?"""
    return any(node in f.InArgs for f in fun_list[start:])


def _max_alive_node(fun_list: list[Bind], out_list: list[Bind], rsv: list[Bind]) -> DagMaxAliveInfo:
    """``__aux::MaxAliveNode``: walk the functions in order, counting the live nodes."""
    info = DagMaxAliveInfo()
    acc: list[Bind] = []
    for start, func in enumerate(fun_list):
        fun = func.Fun
        in_out = list(func.InNonScalarFuns)
        if not (fun.kind == "copyout" or func.IsScalarOp):
            in_out.append(func)
        alive = [n for n in _union(acc, in_out) if n not in rsv]
        brc = [n for n in alive if n.Fun.kind == "copyinbrc"]

        def temp_filter(nodes: list[Bind], skip_brc: bool) -> list[Bind]:
            keep = []
            for n in nodes:
                copy_in = _is_copy_in(n.Fun)
                is_brc = n.Fun.kind == "copyinbrc"
                to_out = _is_input_later(out_list, 0, n)
                if not (to_out or (copy_in and not is_brc if skip_brc else copy_in)):
                    keep.append(n)
            return keep

        temp_with_brc = temp_filter(alive, True)
        temp = temp_filter(temp_with_brc, False)
        func_tmp = 0 if fun.kind == "copyinbrc" else fun.TempSize
        info.aliveNode = max(len(alive) - len(brc) + 2 * len(brc) + func_tmp, info.aliveNode)
        info.tempCalcNode = max(len(temp_with_brc) + func_tmp, info.tempCalcNode)
        if fun.kind == "copyinbrc":
            info.aliveNodeNoCopyBrcTmpBuf = max(len(alive), info.aliveNodeNoCopyBrcTmpBuf)
            info.tempCalcNodeNoCopyBrcTmpBuf = max(len(temp), info.tempCalcNodeNoCopyBrcTmpBuf)
        else:
            info.aliveNodeNoCopyBrcTmpBuf = max(len(alive) + fun.TempSize,
                                                info.aliveNodeNoCopyBrcTmpBuf)
            info.tempCalcNodeNoCopyBrcTmpBuf = max(len(temp) + fun.TempSize,
                                                   info.tempCalcNodeNoCopyBrcTmpBuf)
        size = func.OutDataType.itemsize
        info.maxDtypeBytes = max(size, info.maxDtypeBytes)
        info.minDtypeBytes = min(size, info.minDtypeBytes)
        deletable = [n for n in func.InNonScalarFuns
                     if n not in rsv and not _is_input_later(fun_list, start + 1, n)]
        acc = [n for n in alive if n not in deletable]
    return info


class DAGSch:
    """``DAGSch<OutList, ComputeOrder = void, MemOptCfg = MemOptCfg<>>``: a DAG ready to
    schedule. Its attributes are the C++ struct's (``FunList``, ``InHolders``, ``OutHolders``,
    ``Vars``, ``CopyBrcNodes``, ``InputSize``, ``OutputSize``, ``MaxAliveNode``,
    ``TempCalcNode``, ``MaxDtypeBytes``, ``MinDtypeBytes``, ``BufLevel``, ``BufferNum``,
    ``Mte2Num``, ``Mte3Num``) and ``GetBufferNum(use_nddma, cache_brc)``."""

    def __init__(self, OutList: Any, ComputeOrder: Any = None, MemOptCfg_: MemOptCfg | None = None):
        if not isinstance(OutList, Elems) or not OutList:
            raise AscendCTypeError("DAGSch<OutList>: OutList must be a non-empty Elems of CopyOut "
                                   "nodes")
        for n in OutList:
            if not isinstance(n, Bind):
                raise AscendCTypeError(f"DAGSch: an output must be a Bind, got {n!r}")
        mem = MemOptCfg() if MemOptCfg_ is None else MemOptCfg_
        if not isinstance(mem, MemOptCfg):
            raise AscendCTypeError(f"DAGSch: the memory option must be a MemOptCfg, got {mem!r}")
        self.OutList = list(OutList)
        self.MemOpt = mem
        self.HasComputeOrder = ComputeOrder is not None
        order = _union(*(o.DependFuns for o in self.OutList)) if ComputeOrder is None \
            else _unique(ComputeOrder)
        self.FunList: list[Bind] = order
        self._check_order()
        fl = self.FunList
        self.InHolders = _unique(h for f in fl for h in f.InHolders)
        self.OutHolders = _unique(h for f in fl for h in f.OutHolders)
        self.InScalarHolders = [h for h in self.InHolders if h.Attr.IsScalar == 1]
        self.ScalarOpNodes = [f for f in fl if f.IsScalarOp]
        self.CopyBrcNodes = [f for f in fl if f.Fun.kind == "copyinbrc" and f not in self.ScalarOpNodes]
        self.VecBrcNodes: list[Bind] = []
        self.Vars = _unique(v for f in fl for v in f.Vars)
        self.InputSize, self.OutputSize = len(self.InHolders), len(self.OutHolders)
        self.CopyBrcSize, self.VecBrcSize = len(self.CopyBrcNodes), 0
        self.TensorScalarSize = len(self.InScalarHolders)
        self.InputSizeWoScalar = self.InputSize - self.TensorScalarSize
        self.VarSize = len(self.Vars)
        self._check_holders()
        info = _max_alive_node(fl, self.OutList, [])
        self.MaxAliveNodeInfo = info
        self.MaxAliveNode, self.TempCalcNode = info.aliveNode, info.tempCalcNode
        self.MaxDtypeBytes, self.MinDtypeBytes = info.maxDtypeBytes, info.minDtypeBytes
        self.MaxAliveNodeForNddma = info.aliveNodeNoCopyBrcTmpBuf
        self.TempCalcNodeForNddma = info.tempCalcNodeNoCopyBrcTmpBuf
        rsv = self.CopyBrcNodes + self.VecBrcNodes
        self.MaxAliveNodeInfoForCacheBrc = info if not rsv else _max_alive_node(fl, self.OutList, rsv)
        self.BufLevel = self.ChooseBufferLevel(True, False)
        self.BufferNum = self.GetBufferNum(True, False)
        self.Mte2Num = self.GetMte2Num(True, False)
        self.Mte3Num = self.GetMte3Num(True, False)

    def _check_order(self) -> None:
        seen: set = set()
        for f in self.FunList:
            if not isinstance(f, Bind):
                raise AscendCTypeError(f"DAGSch: ComputeOrder holds {f!r}, not a Bind")
            for dep in f.InFuns:
                if dep not in seen:
                    raise AscendCTypeError(f"DAGSch: {f!r} comes before its input {dep!r}")
            seen.add(f)
        for o in self.OutList:
            if o.Fun.kind != "copyout":
                raise AscendCTypeError(f"DAGSch: the outputs must be CopyOut nodes, got {o!r}")

    def _check_holders(self) -> None:
        for kind, holders in (("In", self.InHolders), ("Out", self.OutHolders)):
            pos = sorted(h.Pos for h in holders)
            if len(set(pos)) != len(pos):
                raise AscendCTypeError(f"DAGSch: two {kind} placeholders share a position with "
                                       f"different types ({holders})")
            if pos != list(range(len(pos))):
                raise AscendCTypeError(f"DAGSch: {kind} placeholders must be {kind}0..{kind}"
                                       f"{len(pos) - 1}, got {pos}")
        pos = sorted(v.Pos for v in self.Vars)
        if pos != list(range(len(pos))):
            raise AscendCTypeError(f"DAGSch: Var indices must be 0..{len(pos) - 1} once each, "
                                   f"got {pos}")

    # node.h's DagNodeInfo
    def _nodes_to_out(self, nodes: list[Bind]) -> list[Bind]:
        return [n for n in nodes if _is_input_later(self.OutList, 0, n)]

    def _max_alive(self, nddma: bool, cache: bool) -> int:
        i = self.MaxAliveNodeInfoForCacheBrc if cache else self.MaxAliveNodeInfo
        return i.aliveNodeNoCopyBrcTmpBuf if nddma else i.aliveNode

    def _temp_calc(self, nddma: bool, cache: bool) -> int:
        i = self.MaxAliveNodeInfoForCacheBrc if cache else self.MaxAliveNodeInfo
        return i.tempCalcNodeNoCopyBrcTmpBuf if nddma else i.tempCalcNode

    def _gm_before_first_calc(self, cache: bool) -> int:
        rsv = self.CopyBrcNodes + self.VecBrcNodes if cache else []
        count = 0
        for f in self.FunList:
            if f.IsScalarOp:
                continue
            if _is_copy_in(f.Fun):
                count += f not in rsv
            elif f.Fun.kind != "copyout":
                break
        return count

    def _persist_mte2(self, cache: bool) -> int:
        return self.CopyBrcSize if cache else 0

    def _persist_mte3(self, nddma: bool, cache: bool) -> int:
        brc_out = 0 if nddma else len(self._nodes_to_out(self.CopyBrcNodes))
        return brc_out + len(self._nodes_to_out(self.VecBrcNodes)) if cache else 0

    def _persist_temp(self, nddma: bool, cache: bool) -> int:
        cached1 = 0 if nddma else (self.CopyBrcSize if cache else 0)
        cached2 = self.VecBrcSize if cache else 0
        return cached1 + cached2 - self._persist_mte3(nddma, cache)

    def _first_copy_out_gm(self, nddma: bool, cache: bool) -> int:
        return 1 if self._max_alive(nddma, cache) > self._gm_before_first_calc(cache) else 0

    def _lvl12_mte3(self, nddma: bool, cache: bool) -> int:
        copy_ins = [f for f in self.FunList if _is_copy_in(f.Fun) and f not in self.ScalarOpNodes]
        mte2_as_mte3 = len(self._nodes_to_out(copy_ins)) - (
            0 if nddma else len(self._nodes_to_out(self.CopyBrcNodes)))
        return len(self.OutList) - self._persist_mte3(nddma, cache) - mte2_as_mte3

    def _lvl1_tmp(self, nddma: bool, cache: bool) -> int:
        alive = self._max_alive(nddma, cache)
        non_persist = self.InputSizeWoScalar - (self.CopyBrcSize if cache else 0)
        return (max(alive - non_persist, 0)) if self._temp_calc(nddma, cache) > 0 else 0

    def GetBufferNumLevel0(self, nddma: bool = True, cache: bool = False) -> int:
        return (self._max_alive(nddma, cache) + self._persist_temp(nddma, cache)
                + self._gm_before_first_calc(cache) + 2 * self._persist_mte2(cache)
                + self._first_copy_out_gm(nddma, cache) + 2 * self._persist_mte3(nddma, cache))

    def GetBufferNumLevel1(self, nddma: bool = True, cache: bool = False) -> int:
        return (self._lvl1_tmp(nddma, cache) + self._persist_temp(nddma, cache)
                + 2 * self.InputSizeWoScalar + 2 * self._lvl12_mte3(nddma, cache)
                + 2 * self._persist_mte3(nddma, cache))

    def GetBufferNumLevel2(self, nddma: bool = True, cache: bool = False) -> int:
        return (self._temp_calc(nddma, cache) + self._persist_temp(nddma, cache)
                + 2 * self.InputSizeWoScalar + 2 * self._lvl12_mte3(nddma, cache)
                + 2 * self._persist_mte3(nddma, cache))

    def ChooseBufferLevel(self, use_nddma: bool = True, cache_brc: bool = False) -> MemLevel:
        if self.MemOpt.memoryLevel is MemLevel.LEVEL_0:
            if self.GetBufferNumLevel2(use_nddma, cache_brc) <= MAX_BUFFER_NUMBER:
                return MemLevel.LEVEL_2
            if self.GetBufferNumLevel1(use_nddma, cache_brc) <= MAX_BUFFER_NUMBER:
                return MemLevel.LEVEL_1
            return MemLevel.LEVEL_0
        return self.MemOpt.memoryLevel

    def GetBufferNum(self, use_nddma: bool = True, cache_brc: bool = False) -> int:
        level = self.ChooseBufferLevel(use_nddma, cache_brc)
        return (self.GetBufferNumLevel0, self.GetBufferNumLevel1,
                self.GetBufferNumLevel2)[level](use_nddma, cache_brc)

    def GetMte2Num(self, use_nddma: bool = True, cache_brc: bool = False) -> int:
        if self.ChooseBufferLevel(use_nddma, cache_brc) is MemLevel.LEVEL_0:
            return self._gm_before_first_calc(cache_brc) + self._persist_mte2(cache_brc)
        return self.InputSizeWoScalar

    def GetMte3Num(self, use_nddma: bool = True, cache_brc: bool = False) -> int:
        persist = self._persist_mte3(use_nddma, cache_brc)
        if self.ChooseBufferLevel(use_nddma, cache_brc) is MemLevel.LEVEL_0:
            return self._first_copy_out_gm(use_nddma, cache_brc) + persist
        return self._lvl12_mte3(use_nddma, cache_brc) + persist

    # the emulation's own buffer plan
    def buffer_plan(self) -> tuple[dict, int]:
        """``({node: buffer id}, buffers used)``: each node that produces a tile gets a buffer
        when it runs, the lowest id free; a buffer is freed after the last function that reads
        it. (The vendor assigns ids by its own order, with ping/pong copies that only let the
        pipes overlap; the results do not depend on the ids.)"""
        fl = self.FunList
        plan: dict = {}
        free: list[int] = []
        used = 0
        for i, f in enumerate(fl):
            if f.Fun.kind != "copyout" and not f.IsScalarOp:
                if free:
                    free.sort()
                    plan[f] = free.pop(0)
                else:
                    plan[f] = used
                    used += 1
            for dep in _unique(f.InNonScalarFuns):
                if not _is_input_later(fl, i + 1, dep) and dep in plan:
                    free.append(plan[dep])
        return plan, used

    def __repr__(self) -> str:
        return (f"DAGSch({len(self.FunList)} functions, {self.InputSize} in, {self.OutputSize} "
                f"out, BufferNum {self.BufferNum}, {self.BufLevel.name})")


def check_buffers(dag: DAGSch, budget: int, what: str) -> dict:
    """The emulation's buffer plan, checked against the number of buffers the tiling sized the
    Unified Buffer for."""
    plan, used = dag.buffer_plan()
    if used > budget:
        raise ConstraintError(f"{what}: a tile needs {used} live buffers but the tiling sized the "
                              f"Unified Buffer for {budget}")
    return plan
