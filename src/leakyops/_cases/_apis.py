"""The aclnn APIs the case files name: their arguments, how a case runs through them, its golden.

Each API is called through :mod:`leakyops.aclnn`'s public functions, both phases
(``...GetWorkspaceSize``, then the launch on a stream). The golden is the suite's golden
rule for this family, PyTorch's ``aten`` op, computed by the core (:mod:`leakyops._core`,
bit for bit PyTorch's CPU result; ``grad_weight`` sums to within its accuracy promise):

=========================  =======================================================
API                        golden
=========================  =======================================================
aclnnLeakyRelu             ``torch.nn.functional.leaky_relu(self, negativeSlope)``
aclnnInplaceLeakyRelu      the same, into ``selfRef``
aclnnLeakyReluBackward     ``aten.leaky_relu_backward(gradOutput, self, negativeSlope, selfIsResult)``
aclnnPrelu                 ``torch.nn.functional.prelu(self, weight)``
aclnnPreluBackward         autograd of ``prelu``: ``(self.grad, weight.grad)``
=========================  =======================================================

ATK suites name an executor (``api_type``) whose ``__call__`` reads its inputs by name;
:data:`ATK_EXECUTORS` restates, for the executors published with the suites, which API
argument each name is and the API the executor's golden stands for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from leakyops import _core, aclnn
from leakyops._operators import OPERATORS

from ._spec import NP_DTYPES


@dataclasses.dataclass(frozen=True)
class Api:
    """An aclnn API: its tensor arguments in C order, the ones it writes, its host values.

    ``plan`` says how a large case is split: ``flat`` (element-wise over tensors of one
    shape: consecutive elements), ``rows`` (along dim 0, the weight whole) or ``whole``.
    """

    name: str
    tensors: tuple
    outputs: tuple
    scalars: tuple
    attrs: tuple
    plan: str
    first: Callable  # (tensors, values) -> (workspace size, executor, status)
    launch: Callable  # (workspace, size, executor, stream) -> status
    golden: Callable  # (arrays by param, values by param) -> {output param: array}
    infer: Callable  # (input TensorSpecs by param) -> {output param: (shape, dtype name)}
    in_place: tuple = ()  # outputs that are inputs too

    @property
    def inputs(self) -> tuple:
        """The tensors read: all but the written-only ones."""
        return tuple(p for p in self.tensors if p not in self.outputs or p in self.in_place)


def _leaky(src: str, dst: str) -> Callable:
    return lambda a, v: {dst: OPERATORS["leaky_relu"].call({"x": a[src]}, {"slope": v["negativeSlope"]})["y"]}


def _like(src: str, dst: str) -> Callable:
    return lambda t: {dst: (t[src].shape, t[src].dtype)}


def _promoted(a: str, b: str) -> str:
    """leaky_relu_backward's promotion (the API checks what it makes of other dtypes)."""
    wide = np.dtype(_core.result_dtype(NP_DTYPES[a], NP_DTYPES[b]))
    return next(k for k, v in NP_DTYPES.items() if v == wide)


def _broadcast(a: tuple, b: tuple) -> tuple:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:  # the API rejects it; the out tensor takes self's shape meanwhile
        return b


APIS = {api.name: api for api in (
    Api("aclnnLeakyRelu", ("self", "out"), ("out",), ("negativeSlope",), (), "flat",
        first=lambda t, v: aclnn.aclnnLeakyReluGetWorkspaceSize(t["self"], v["negativeSlope"], t["out"]),
        launch=aclnn.aclnnLeakyRelu, golden=_leaky("self", "out"), infer=_like("self", "out")),
    Api("aclnnInplaceLeakyRelu", ("selfRef",), ("selfRef",), ("negativeSlope",), (), "flat",
        first=lambda t, v: aclnn.aclnnInplaceLeakyReluGetWorkspaceSize(t["selfRef"], v["negativeSlope"]),
        launch=aclnn.aclnnInplaceLeakyRelu, golden=_leaky("selfRef", "selfRef"),
        infer=_like("selfRef", "selfRef"), in_place=("selfRef",)),
    Api("aclnnLeakyReluBackward", ("gradOutput", "self", "out"), ("out",), ("negativeSlope",),
        ("selfIsResult",), "flat",
        first=lambda t, v: aclnn.aclnnLeakyReluBackwardGetWorkspaceSize(
            t["gradOutput"], t["self"], v["negativeSlope"], v["selfIsResult"], t["out"]),
        launch=aclnn.aclnnLeakyReluBackward,
        golden=lambda a, v: {"out": OPERATORS["leaky_relu_backward"].call(
            {"grad_output": a["gradOutput"], "x": a["self"]},
            {"slope": v["negativeSlope"], "self_is_result": v["selfIsResult"]})["grad_input"]},
        infer=lambda t: {"out": (_broadcast(t["gradOutput"].shape, t["self"].shape),
                                 _promoted(t["gradOutput"].dtype, t["self"].dtype))}),
    Api("aclnnPrelu", ("self", "weight", "out"), ("out",), (), (), "rows",
        first=lambda t, v: aclnn.aclnnPreluGetWorkspaceSize(t["self"], t["weight"], t["out"]),
        launch=aclnn.aclnnPrelu,
        golden=lambda a, v: {"out": OPERATORS["prelu"].call({"x": a["self"], "weight": a["weight"]})["y"]},
        infer=_like("self", "out")),
    Api("aclnnPreluBackward", ("gradOutput", "self", "weight", "gradInput", "gradWeight"),
        ("gradInput", "gradWeight"), (), (), "whole",
        first=lambda t, v: aclnn.aclnnPreluBackwardGetWorkspaceSize(
            t["gradOutput"], t["self"], t["weight"], t["gradInput"], t["gradWeight"]),
        launch=aclnn.aclnnPreluBackward,
        golden=lambda a, v: dict(zip(("gradInput", "gradWeight"), OPERATORS["prelu_backward"].call(
            {"grad_output": a["gradOutput"], "x": a["self"], "weight": a["weight"]}).values())),
        # gradWeight has weight's shape (ops-nn's newest rule, the emulation's default)
        infer=lambda t: {"gradInput": (t["self"].shape, t["self"].dtype),
                         "gradWeight": (t["weight"].shape, t["self"].dtype)}),
)}


@dataclasses.dataclass(frozen=True)
class Executor:
    """An ATK executor (``@register(api_type)`` in an ``executor_*.py``): the API it stands
    for and, for each name it reads from ``input_data.kwargs``, the API argument."""

    api: str
    names: dict


#: The executors published beside the four ATK suites of this family (restated, not run).
ATK_EXECUTORS = {
    # F.LeakyReLU(kwargs["a"])(kwargs["x"])
    "aclnn_leaky_relu": Executor("aclnnLeakyRelu", {"x": "self", "a": "negativeSlope"}),
    # aten.leaky_relu_backward(gradOutput, x, a, selfIsResult)
    "aclnn_leaky_relu_backward": Executor("aclnnLeakyReluBackward", {
        "gradOutput": "gradOutput", "x": "self", "a": "negativeSlope", "selfIsResult": "selfIsResult"}),
    # F.prelu(x, a)
    "function_perlu": Executor("aclnnPrelu", {"x": "self", "a": "weight"}),
    # prelu(x, a).backward(gradOutput); returns (x.grad, a.grad)
    "function_perlu_backward": Executor("aclnnPreluBackward", {
        "gradOutput": "gradOutput", "x": "self", "a": "weight"}),
}


def api_named(name: str) -> Api | None:
    """The API of a name as the files write it: ``aclnnLeakyRelu`` or ``LeakyRelu``."""
    return APIS.get(name) or APIS.get("aclnn" + name)
