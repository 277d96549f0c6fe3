"""Running one case: inputs drawn, both aclnn phases, the golden, the comparison, in chunks.

1. Every input (tensor, scalar, attribute) has its own generator, seeded from ``--seed``
   and the case's name, so a case draws the same inputs whatever else runs, in whatever
   order, in whichever process.
2. The API's first phase runs on descriptors of the case's full shapes (zero strides over
   one element, so they cost no memory): a case the API rejects fails here with the
   status and ``aclGetRecentErrMsg()``, as on a device.
3. The case then runs in chunks: element-wise APIs over tensors of one shape take
   :data:`CHUNK` consecutive elements at a time; ``aclnnPrelu`` with ``self`` of rank >= 2
   and dim 0 > 1 whole rows of dim 0, as many as fit in :data:`CHUNK` elements (at least
   one, however large), the weight whole. Anything else runs whole, as one chunk:
   ``aclnnPreluBackward`` (``gradWeight`` sums over every element), an
   ``aclnnLeakyReluBackward`` whose tensors' shapes differ (broadcast), ``aclnnPrelu`` of
   rank < 2 or dim 0 <= 1. For each chunk: the inputs are drawn, the golden is computed
   from them, the API runs (both phases, then ``aclrtSynchronizeStream``) and each output
   is compared with its golden. A chunk with its goldens takes about twice the chunk's
   tensors: a chunked case holds a few chunks whatever its size, a case run whole about
   twice its tensors.
"""

from __future__ import annotations

import dataclasses
import math
import time
import zlib

import numpy as np

from leakyops import _verify, aclnn

from ._apis import APIS
from ._spec import ACL_DTYPES, NP_DTYPES, Case, Stream

#: Elements of one chunk (the largest tensor's elements for row chunks).
CHUNK = 1 << 22

PASS, FAIL, ERROR = "PASS", "FAIL", "ERROR"


@dataclasses.dataclass
class CaseResult:
    """What one case gave: the verdict, the aclnn status (``None``: not called), a message
    for anything but a pass, each output's comparison, the host values drawn, the time."""

    case: Case
    verdict: str
    status: int | None = None
    message: str = ""
    comparisons: tuple = ()  # (output param, _verify.Comparison)
    values: tuple = ()  # (param, the value drawn)
    seconds: float = 0.0

    @property
    def worst(self) -> float | None:
        """The largest relative error of any output element (``None``: nothing compared)."""
        return max((c.max_rel for _, c in self.comparisons), default=None)


class _Failed(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


_state: dict = {}


def _stream():
    """This process's stream (one for every case it runs)."""
    if "stream" not in _state:
        _state["stream"], _ = aclnn.aclrtCreateStream()
    return _state["stream"]


def _one_element():
    """Device memory of 8 bytes: the storage of every descriptor's zero-stride view."""
    if "one" not in _state:
        _state["one"], _ = aclnn.aclrtMalloc(8)
    return _state["one"]


def _fmt(name: str):
    return getattr(aclnn.aclFormat, f"ACL_FORMAT_{name}")


def _check(status: int, what: str) -> None:
    if status != 0:
        raise _Failed(status, aclnn.aclGetRecentErrMsg() or f"{what} returned {status}")


def _descriptor(tensor):
    """A tensor of the case's full shape and dtype over one element (all strides 0)."""
    size = math.prod(tensor.shape)
    t = aclnn.aclCreateTensor(list(tensor.shape), ACL_DTYPES[tensor.dtype], [0] * len(tensor.shape), 0,
                              _fmt(tensor.fmt), [1], _one_element() if size else None)
    if t is None:
        raise _Failed(aclnn.ACL_ERROR_RT_PARAM_INVALID, aclnn.aclGetRecentErrMsg())
    return t


def _values(case: Case, streams: dict) -> tuple[dict, dict]:
    """The host values: as the API takes them (``aclScalar``, bool) and as numbers."""
    for_api, numbers = {}, {}
    for v in case.values:
        raw = streams[v.param].take(1)[0]
        if v.kind == "scalar":
            scalar = aclnn.aclCreateScalar(raw, ACL_DTYPES[v.dtype])
            if scalar is None:
                raise _Failed(aclnn.ACL_ERROR_RT_PARAM_INVALID, aclnn.aclGetRecentErrMsg())
            for_api[v.param], numbers[v.param] = scalar, raw.item()
        else:
            for_api[v.param] = numbers[v.param] = bool(raw)
    return for_api, numbers


def _chunks(case: Case, api, chunk: int):
    """``(kind, parts)``: ``flat`` element ranges, ``rows`` ranges of dim 0, or ``whole``;
    ``parts`` an iterator, made as the run goes (a case's chunks are never all listed)."""
    shapes = {t.shape for t in case.tensors}
    n = max((t.size for t in case.tensors), default=0)
    if api.plan == "flat" and len(shapes) == 1:
        return "flat", ((lo, min(lo + chunk, n)) for lo in range(0, max(n, 1), chunk))
    x = case.tensor("self")
    if api.plan == "rows" and len(x.shape) >= 2 and x.shape[0] > 1:
        per = max(1, chunk // max(1, math.prod(x.shape[1:])))
        return "rows", ((lo, min(lo + per, x.shape[0])) for lo in range(0, x.shape[0], per))
    return "whole", iter([(0, 0)])


def seed_sequence(seed: int, name: str) -> np.random.SeedSequence:
    """The seed of a case: ``--seed`` and the case's name."""
    return np.random.SeedSequence([seed, zlib.crc32(name.encode())])


def _streams(case: Case, seed: int) -> dict:
    """Every input's stream, each from its own generator (in the case's order of inputs)."""
    drawn = [t for t in case.tensors if t.dist is not None] + list(case.values)
    gens = [np.random.Generator(np.random.PCG64(s)) for s in seed_sequence(seed, case.name).spawn(len(drawn))]
    return {item.param: Stream(g, item.dist, item.dtype) for item, g in zip(drawn, gens)}


def case_inputs(case: Case, seed: int = 0) -> tuple[dict, dict]:
    """The whole input tensors and the host values of a case, as :func:`run_case` draws them
    (for a look at a case, or a check of its golden; a large case takes its full memory)."""
    streams = _streams(case, seed)
    _, numbers = _values(case, streams)
    arrays = {t.param: streams[t.param].take(t.size).reshape(t.shape) for t in case.tensors if t.dist is not None}
    return arrays, numbers


def run_case(case: Case, seed: int = 0, *, chunk: int = CHUNK, progress=None) -> CaseResult:
    """Run one case (see the module's docstring); ``progress(n)`` is told of ``n`` more
    elements done after each chunk."""
    t0 = time.perf_counter()
    try:
        result = _run(case, seed, chunk, progress)
    except _Failed as exc:
        result = CaseResult(case, FAIL, exc.status, str(exc).strip())
    except MemoryError:
        result = CaseResult(case, ERROR, message="out of memory")
    except Exception as exc:  # noqa: BLE001 -- one case must not end the run
        result = CaseResult(case, ERROR, message=f"internal error: {type(exc).__name__}: {exc}")
    result.seconds = time.perf_counter() - t0
    return result


def _run(case: Case, seed: int, chunk: int, progress) -> CaseResult:
    if case.error:
        return CaseResult(case, ERROR, message=case.error)
    api = APIS[case.api]
    streams = _streams(case, seed)
    for_api, numbers = _values(case, streams)
    values = tuple(numbers.items())
    # the first phase on the full shapes: the API's verdict on the case as a whole
    _, _, status = api.first({t.param: _descriptor(t) for t in case.tensors}, for_api)
    _check(status, f"{api.name}GetWorkspaceSize")

    kind, parts = _chunks(case, api, chunk)
    fixed = {}  # drawn once: the weight of a row-chunked prelu
    if kind == "rows":
        w = case.tensor("weight")
        fixed["weight"] = streams["weight"].take(w.size).reshape(w.shape)
    specs = {t.param: t for t in case.tensors}
    comparers: dict = {}
    for lo, hi in parts:
        arrays = dict(fixed)
        for t in case.tensors:
            if t.param in fixed:
                continue
            shape = (hi - lo,) if kind == "flat" else (hi - lo,) + t.shape[1:] if kind == "rows" else t.shape
            if t.dist is not None:
                arrays[t.param] = streams[t.param].take(math.prod(shape)).reshape(shape)
            else:
                arrays[t.param] = np.empty(shape, NP_DTYPES[t.dtype])
        try:
            golden = api.golden({p: arrays[p] for p in api.inputs}, numbers)
        except (TypeError, ValueError) as exc:
            return CaseResult(case, ERROR, 0, f"golden: {exc}", values=values)
        _launch(api, arrays, for_api, specs)
        for param, std in case.standards:
            g = golden[param]
            if param not in comparers:
                comparers[param] = _verify.Comparer(std.name, g.dtype, specs[param].shape,
                                                    actual_dtype=arrays[param].dtype, **dict(std.options))
            a_flat, g_flat = arrays[param].reshape(-1), g.reshape(-1)
            for i in range(0, g_flat.size, _verify.CHUNK):
                comparers[param].update(a_flat[i:i + _verify.CHUNK], g_flat[i:i + _verify.CHUNK])
        done = max(a.size for a in arrays.values())
        arrays = golden = g = a_flat = g_flat = None  # this chunk's arrays, let go before the next is drawn
        if progress is not None:
            progress(done)
    comparisons = tuple((p, comparers[p].result()) for p, _ in case.standards)
    failed = [(p, c) for p, c in comparisons if not c.passed]
    if failed:
        return CaseResult(case, FAIL, 0, "; ".join(f"{p}: {c.standard} fails: {_figures(c)}" for p, c in failed),
                          comparisons, values)
    return CaseResult(case, PASS, 0, "", comparisons, values)


def _launch(api, arrays: dict, for_api: dict, specs: dict) -> None:
    """Both phases on the chunk's arrays, then wait for the stream."""
    tensors = {p: aclnn.from_numpy(a, _fmt(specs[p].fmt)) for p, a in arrays.items()}
    ws_size, executor, status = api.first(tensors, for_api)
    _check(status, f"{api.name}GetWorkspaceSize")
    workspace = None
    if ws_size > 0:
        workspace, status = aclnn.aclrtMalloc(ws_size)
        _check(status, "aclrtMalloc")
    try:
        stream = _stream()
        _check(api.launch(workspace, ws_size, executor, stream), api.name)
        _check(aclnn.aclrtSynchronizeStream(stream), "aclrtSynchronizeStream")
    finally:
        if workspace is not None:
            aclnn.aclrtFree(workspace)
        for t in tensors.values():
            aclnn.aclDestroyTensor(t)


def _figures(c) -> str:
    """The numbers that decided a failed comparison, in one line."""
    d = c.details
    if c.standard == "relative-error":
        return f"MERE {d['MERE']:.4g} (limit {d['MERE limit']:.4g}), MARE {d['MARE']:.4g} (limit {d['MARE limit']:.4g})"
    if c.standard in ("double-thousandth", "ratio"):
        return f"{c.over} of {c.elements} elements over tolerance, share {d['error ratio']:.4g}"
    return f"{c.over} of {c.elements} elements differ"
