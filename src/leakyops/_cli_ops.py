"""The operators as the ``leakyops`` command runs them: under a vendor's semantics, on generated data.

Semantics (``golden``/``run --semantics``) decide the rules of the golden data; the
arithmetic is always done by the core (``leakyops._core``) or, for ``onednn``, by the public
API of ``leakyops.onednn`` (graph → compile → execute), so that the golden follows that
model whatever it computes:

``pytorch``  the core's rules (``x > 0`` keeps ``x``; the slope in the compute type) — default
``aclnn``    the slope converted to float32 for every dtype, float64 too (the aclnn L2 code
             converts the scalar with ``ToFloat()``); ``x > 0``
``ascendc``  ``x >= 0`` keeps ``x`` and the scalar is rounded to the tensor's type (the Ascend C
             ``LeakyRelu`` API)
``onednn``   the op built as a oneDNN Graph (``LeakyReLU``, ``PReLU``, ``PReLUBackward``) and run
             through ``leakyops.onednn``

This module also generates the random inputs of ``golden`` (in chunks, with the same stream
as one draw), including ``--values special``.
"""

from __future__ import annotations

import math

import numpy as np

from leakyops import _core
from leakyops._cli_io import CHUNK, CLIError, first_line, np_dtype
from leakyops._operators import OPERATORS
from leakyops._verify import dtype_name

SEMANTICS = ("pytorch", "aclnn", "ascendc", "onednn")

#: what each semantics means, as recorded in case.json and printed by verify: for the
#: operators with a slope, and (where it differs) for prelu and prelu_backward, whose slopes
#: are the weight, a tensor of x's dtype
SEMANTICS_RULES = {
    "pytorch": "x > 0 keeps x; the slope in the compute type (float32 for half types, float64 for float64)",
    "aclnn": "x > 0 keeps x; the slope converted to float32 for every dtype, float64 too (aclnn ToFloat)",
    "ascendc": "x >= 0 keeps x; the scalar rounded to the tensor's type (Ascend C LeakyRelu)",
    "onednn": "run as a oneDNN Graph op through leakyops.onednn (graph, compile, execute)",
}
_WEIGHT_RULES = {
    "pytorch": "x > 0 keeps x; the weight in x's dtype, half types computed in float32",
    "aclnn": "x > 0 keeps x; the weight in x's dtype, half types computed in float32"
             " (aclnnPrelu, aclnnPreluBackward: float16, bfloat16 and float32 only)",
    "ascendc": "x >= 0 keeps x; the weight in x's dtype",
}


def semantics_rules(semantics: str, op: str) -> str:
    """The rules of ``semantics`` for ``op`` in words ("" for an unknown semantics)."""
    if "weight" in getattr(OPERATORS.get(op), "inputs", ()) and semantics in _WEIGHT_RULES:
        return _WEIGHT_RULES[semantics]
    return SEMANTICS_RULES.get(semantics, "")

#: the aclnn SoC profiles ``golden --soc`` names (``leakyops.aclnn.SOC_VERSIONS``)
SOCS = ("Ascend910", "Ascend910B", "Ascend910_93", "Ascend950")

#: the core's options for each semantics but onednn (``slope_dtype`` applies to operators
#: with a slope only)
_CORE_OPTIONS = {
    "pytorch": {},
    "aclnn": {"slope_dtype": np.float32},
    "ascendc": {"compare": ">=", "slope_dtype": "storage"},
}


#: the dtypes aclnnPrelu and aclnnPreluBackward take on any SoC (leakyops.aclnn's support
#: lists, from ops-nn's L2 sources: no float64)
_ACLNN_PRELU_DTYPES = ("float16", "bfloat16", "float32")

# --------------------------------------------------------------------------- running an operator


def check_semantics(op: str, semantics: str, dtype: str, params: dict, ndim: int,
                    soc: str | None = None, isa: str | None = None) -> None:
    """Reject a combination the chosen vendor API cannot express (one line, exit 2).

    ``dtype`` is the name of the data's dtype ("" for one that is not a float); ``soc`` the
    aclnn SoC profile ``golden --soc`` names; ``isa`` the oneDNN instruction set ``--isa``
    names.
    """
    if isa is not None and semantics != "onednn":
        raise CLIError(f"--isa names the CPU of oneDNN's kernels; give it with --semantics onednn, "
                       f"not {semantics}")
    if soc is not None:
        if semantics != "aclnn":
            raise CLIError(f"--soc names an aclnn SoC profile; give it with --semantics aclnn, "
                           f"not {semantics}")
        if soc == "Ascend910" and dtype == "bfloat16":
            raise CLIError("--soc Ascend910: the Atlas training profile has no bfloat16")
    per_channel = "weight" in OPERATORS[op].inputs
    if semantics == "aclnn" and per_channel and dtype not in _ACLNN_PRELU_DTYPES:
        raise CLIError(f"--semantics aclnn: aclnnPrelu/aclnnPreluBackward take "
                       f"{', '.join(_ACLNN_PRELU_DTYPES[:-1])} and {_ACLNN_PRELU_DTYPES[-1]} only"
                       f" ({dtype or 'this dtype'} is refused with 161002, 'self dtype ... should be in"
                       " dtype support list')")
    if semantics == "aclnn" and per_channel and ndim >= 2 and params.get("axis", 1) not in (1, 1 - ndim):
        raise CLIError(f"--semantics aclnn: aclnnPrelu/aclnnPreluBackward take the channel at dim 1;"
                       f" --axis {params['axis']} has no aclnn form")
    if semantics == "onednn":
        if op == "leaky_relu_backward":
            raise CLIError("--semantics onednn: oneDNN Graph has no LeakyReLU backward op"
                           " (its ops here are LeakyReLU, PReLU and PReLUBackward)")
        if dtype == "float64":
            raise CLIError("--semantics onednn: oneDNN Graph has no float64 (f32, bf16 and f16 only)")
        if per_channel and ndim >= 2:
            ax = params.get("axis", 1)
            if ax not in (1, -1, ndim - 1, 1 - ndim):
                raise CLIError(f"--semantics onednn: oneDNN's PReLU has the channel at dim 1 (NCX) or last"
                               f" (NXC); --axis {ax} has no oneDNN form")


def run_op(op: str, arrays: dict, params: dict, semantics: str = "pytorch",
           soc: str | None = None, isa: str | None = None) -> tuple[dict, dict]:
    """Run ``op`` under ``semantics``; returns ({output name: array}, notes for case.json).
    ``soc`` (aclnn only): on ``Ascend950`` prelu_backward runs through ``leakyops.aclnn``'s
    aclnnPreluBackward on that profile, whose grad_weight is the 950 pipeline's. ``isa``
    (onednn only): the engine's instruction set (default ``model``, the model's fixed CPU,
    whatever ``$LEAKYOPS_ONEDNN_ISA`` says, so that golden data is the same on every machine)."""
    try:
        if semantics == "onednn":
            return _run_onednn(op, arrays, params, isa or "model")
        if soc == "Ascend950" and op == "prelu_backward":
            return _run_aclnn_prelu_backward(arrays, soc), {"aclnn": {"soc": soc, "grad_weight": (
                "PReluGradUpdate then PReluGradReduce: each term rounded to the dtype, a float32 "
                "sum rounded back to nearest even")}}
        return _run_core(op, arrays, params, semantics), ({"aclnn": {"soc": soc}} if soc else {})
    except (TypeError, ValueError) as exc:
        raise CLIError(first_line(exc)) from None


def _run_aclnn_prelu_backward(arrays: dict, soc: str) -> dict:
    """aclnnPreluBackward on the ``soc`` profile (both phases, on a stream of its own)."""
    from leakyops import aclnn

    x = np.ascontiguousarray(arrays["x"])
    g = np.ascontiguousarray(np.broadcast_to(arrays["grad_output"], x.shape))
    w = np.ascontiguousarray(arrays["weight"])
    gi, gw = np.empty_like(x), np.empty_like(w)
    previous = aclnn.get_soc_version()
    aclnn.set_soc_version(soc)
    stream, _ = aclnn.aclrtCreateStream()
    try:
        tensors = [aclnn.from_numpy(a) for a in (g, x, w, gi, gw)]
        ws_size, executor, ret = aclnn.aclnnPreluBackwardGetWorkspaceSize(*tensors)
        ws = None
        if ret == 0 and ws_size:
            ws, ret = aclnn.aclrtMalloc(ws_size)
        if ret == 0:
            ret = aclnn.aclnnPreluBackward(ws, ws_size, executor, stream)
        if ret == 0:
            ret = aclnn.aclrtSynchronizeStream(stream)
        if ws is not None:
            aclnn.aclrtFree(ws)
        if ret != 0:
            raise CLIError(f"--soc {soc}: aclnnPreluBackward: {aclnn.aclGetRecentErrMsg()}")
    finally:
        aclnn.aclrtDestroyStream(stream)
        aclnn.set_soc_version(previous)
    return {"grad_input": gi, "grad_weight": gw}


def _run_core(op: str, arrays: dict, params: dict, semantics: str) -> dict:
    spec = OPERATORS[op]
    options = {k: v for k, v in _CORE_OPTIONS[semantics].items() if k != "slope_dtype" or "slope" in spec.params}
    if spec.in_place:  # on a copy: the inputs are written to the golden directory afterwards
        arrays = {**arrays, "x": np.array(arrays["x"], copy=True)}
    return spec.call(arrays, params, **options)


def _prelu_layout(x: np.ndarray, w: np.ndarray, axis: int) -> tuple[str, bool]:
    """oneDNN's ``data_format`` and ``per_channel_broadcast`` for the core's (weight, axis)."""
    if w.ndim >= 2:
        return "NXC", False  # an n-D slope broadcasts right-aligned (rule 3 of the PReLU docs)
    if w.size == 1 or x.ndim < 2:
        return "NCX", False  # one shared slope, or a 1-D src: last dim or 1 (rule 2)
    if axis % x.ndim == 1:
        return "NCX", True
    return "NXC", True


def _run_onednn(op: str, arrays: dict, params: dict, isa: str) -> tuple[dict, dict]:
    from leakyops import onednn as dg

    x = np.ascontiguousarray(arrays["x"])
    check_semantics(op, "onednn", dtype_name(x.dtype), params, x.ndim, isa=isa)
    spec = OPERATORS[op]
    try:
        dt = dg.data_type_of(x.dtype)
        eng = dg.Engine(dg.EngineKind.cpu, 0, isa=isa)
        strm = dg.Stream(eng)
        if "slope" in spec.params:  # LeakyReLU (check_semantics has refused the backward)
            src = dg.LogicalTensor(0, dt, x.shape)
            dst = dg.LogicalTensor(1, dt, x.shape)
            node = dg.Op(0, dg.OpKind.LeakyReLU, op, [src], [dst])
            node.set_attr(dg.OpAttr.alpha, float(params["slope"]))
            ins, outs = [src], [dst]
            buf = np.array(x, copy=True)
            in_data = [buf]
            out_data = [buf if spec.in_place else np.empty_like(x)]  # in place: one buffer
            notes = {"op": "LeakyReLU", "alpha": float(np.float32(params["slope"])), "in_place": spec.in_place}
        else:
            w = np.ascontiguousarray(arrays["weight"])
            fmt, pcb = _prelu_layout(x, w, params.get("axis", 1))
            src = dg.LogicalTensor(0, dt, x.shape)
            wei = dg.LogicalTensor(1, dt, w.shape)
            if op == "prelu":
                dst = dg.LogicalTensor(2, dt, x.shape)
                node = dg.Op(0, dg.OpKind.PReLU, op, [src, wei], [dst])
                node.set_attr(dg.OpAttr.per_channel_broadcast, pcb)
                ins, outs = [src, wei], [dst]
                in_data, out_data = [x, w], [np.empty_like(x)]
                notes = {"op": "PReLU", "data_format": fmt, "per_channel_broadcast": pcb}
            else:
                g = np.ascontiguousarray(np.broadcast_to(arrays["grad_output"], x.shape))
                diff_dst = dg.LogicalTensor(2, dt, x.shape)
                diff_src = dg.LogicalTensor(3, dt, x.shape)
                diff_slope = dg.LogicalTensor(4, dt, w.shape)
                node = dg.Op(0, dg.OpKind.PReLUBackward, op, [src, wei, diff_dst], [diff_src, diff_slope])
                ins, outs = [src, wei, diff_dst], [diff_src, diff_slope]
                in_data, out_data = [x, w, g], [np.empty_like(x), np.empty_like(w)]
                notes = {"op": "PReLUBackward", "data_format": fmt}
            node.set_attr(dg.OpAttr.data_format, fmt)
        graph = dg.Graph(dg.EngineKind.cpu)
        graph.add_op(node)
        graph.finalize()
        (part,) = graph.get_partitions()
        cp = part.compile(ins, outs, eng)
        tin = [dg.Tensor(cp.query_logical_tensor(lt.get_id()), eng, d) for lt, d in zip(ins, in_data)]
        tout = [dg.Tensor(cp.query_logical_tensor(lt.get_id()), eng, d) for lt, d in zip(outs, out_data)]
        cp.execute(strm, tin, tout)
        strm.wait()
    except dg.Error as exc:
        raise CLIError(f"--semantics onednn: {first_line(exc)}") from None
    results = [t.to_numpy() for t in tout]
    notes["isa"] = eng.isa.upper() if eng.isa else "model (AVX-512 kernels, bf16 rounded exactly)"
    notes["isa_asked"] = isa
    return dict(zip(spec.outputs, results)), {"onednn": notes}


# --------------------------------------------------------------------------- generated data


def special_values(dtype: np.dtype) -> np.ndarray:
    """±0, ±inf, NaN, the smallest and largest subnormals, the smallest normal, the extremes, ±1."""
    import ml_dtypes

    fi = ml_dtypes.finfo(dtype) if dtype_name(dtype) == "bfloat16" else np.finfo(dtype)
    sub = float(fi.smallest_subnormal)
    tiny = float(fi.smallest_normal)
    big = float(fi.max)
    largest_sub = tiny - sub
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan, sub, -sub, largest_sub, -largest_sub,
            tiny, -tiny, big, -big, 1.0, -1.0]
    return np.array(vals, dtype=np.float64).astype(dtype)


def _place(rng, flat: np.ndarray, positions: np.ndarray | None, values: np.ndarray) -> None:
    """Write ``values`` (cycled) over an eighth of ``positions`` (``None``: all of ``flat``), at
    least one of each value where there is room."""
    size = flat.size if positions is None else positions.size
    if not size or not values.size:
        return
    count = max(min(size, values.size), size // 8)
    where = rng.permutation(size)[:count]
    if positions is not None:
        where = positions[where]
    flat[where] = values[np.arange(count) % values.size]


def random_tensor(rng, shape, dtype: np.dtype, values: str, progress=None) -> np.ndarray:
    """N(0, 1) (``normal``, ``special``) or U(-1, 1) (``uniform``) in ``dtype``, drawn in chunks.

    The chunks take the same stream as one draw of the whole shape. ``special`` then writes
    :func:`special_values` over an eighth of the elements.
    """
    n = math.prod(shape)
    out = np.empty(n, dtype)
    for lo in range(0, n, CHUNK):
        k = min(CHUNK, n - lo)
        base = rng.uniform(-1.0, 1.0, size=k) if values == "uniform" else rng.standard_normal(size=k)
        out[lo:lo + k] = base.astype(dtype)
        if progress is not None:
            progress.advance(k)
    if values == "special" and n:
        _place(rng, out, None, special_values(dtype))
    return out.reshape(shape)


def weight_index(x_shape: tuple, w_shape: tuple, axis: int) -> np.ndarray | None:
    """For each element of ``x``, the flat index of the weight element (channel) it uses.

    ``None`` when the shapes do not fit PReLU's weight rules (the core then reports the error).
    """
    try:
        placed = _core.prelu_weight_shape(x_shape, w_shape, axis)
    except (TypeError, ValueError):
        return None
    return np.broadcast_to(np.arange(math.prod(w_shape), dtype=np.intp).reshape(placed), x_shape)


def special_prelu_backward(rng, grad_output: np.ndarray, x: np.ndarray, weight: np.ndarray, axis: int) -> None:
    """``--values special`` for prelu_backward, in place on ``grad_output`` and ``x``.

    Every element of a channel adds to that channel's ``grad_weight``, so one NaN or infinity
    in a channel's ``x`` (or in ``grad_output`` where ``x <= 0``) makes its sum non-finite. So
    the non-finite values and the extremes go into about an eighth of the channels (at least
    one; ``ceil(C/8)`` of ``C``), where they reach ``grad_input`` and those channels' sums; the
    other channels get the finite small specials only (±0, subnormals, the smallest normal,
    ±1), so their sums stay finite and test the reduction.
    """
    specials = special_values(x.dtype)
    wide = specials.astype(np.float64)
    benign = specials[np.isfinite(wide) & (np.abs(wide) <= 1.0)]
    index = weight_index(x.shape, weight.shape, axis)
    xf, gf = x.reshape(-1), grad_output.reshape(-1)
    if index is None or gf.size != xf.size:  # shapes the core will reject: plain specials
        _place(rng, xf, None, specials)
        _place(rng, gf, None, specials)
        return
    channels = weight.size
    wild = np.zeros(channels, bool)
    wild[rng.choice(channels, size=-(-channels // 8), replace=False)] = True
    in_wild = wild[index].reshape(-1)
    for flat in (xf, gf):
        _place(rng, flat, np.flatnonzero(in_wild), specials)
        _place(rng, flat, np.flatnonzero(~in_wild), benign)


def make_inputs(op: str, rng, shape: tuple, dtype: str, values: str, params: dict,
                grad_shape=None, weight_shape=None, progress=None) -> dict:
    """The random inputs of a golden case (``dtype`` by name), drawn in the order the operator takes them."""
    dt = np_dtype(dtype)
    spec = OPERATORS[op]
    # an output summed per channel (grad_weight) gets its specials confined to a few channels
    confined = values == "special" and "grad_weight" in spec.outputs
    inputs: dict = {}
    for name in spec.inputs:
        if name == "weight":
            # weights stay ordinary numbers (in "special" mode too): specials go into x and grads
            inputs[name] = random_tensor(rng, weight_shape, dt, "normal" if values == "special" else values)
        else:
            x_or_grad_shape = (grad_shape or shape) if name == "grad_output" else shape
            inputs[name] = random_tensor(rng, x_or_grad_shape, dt, "normal" if confined else values, progress)
    if confined:
        special_prelu_backward(rng, inputs["grad_output"], inputs["x"], inputs["weight"], params["axis"])
    return inputs
