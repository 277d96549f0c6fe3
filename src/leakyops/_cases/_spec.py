"""What a case is, once read from either format: its API, tensors, scalars, precision rule.

Also the dtypes the case files name and the input distributions with their streams. A
stream draws the elements of one input in order, chunk after chunk; the chunks together
are exactly one draw of the whole tensor, so a result never depends on the chunk size.

>>> import numpy as np
>>> s = Stream(np.random.default_rng(0), Dist("uniform", -7.0, 7.0), "float32")
>>> a = s.take(3); b = s.take(2)
>>> whole = Stream(np.random.default_rng(0), Dist("uniform", -7.0, 7.0), "float32").take(5)
>>> bool((np.concatenate([a, b]) == whole).all())
True
"""

from __future__ import annotations

import dataclasses
import math

import ml_dtypes
import numpy as np

from leakyops import aclnn

#: dtype names in ATK (``fp16``) and TTK (``float16``) spellings -> the canonical name
DTYPE_NAMES = {
    "fp16": "float16", "float16": "float16", "half": "float16",
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "fp32": "float32", "float32": "float32", "float": "float32",
    "fp64": "float64", "float64": "float64", "double": "float64",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "bool": "bool",
}

NP_DTYPES = {
    "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
    "int8": np.dtype(np.int8), "int16": np.dtype(np.int16), "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64), "uint8": np.dtype(np.uint8), "bool": np.dtype(np.bool_),
}

ACL_DTYPES = {
    "float16": aclnn.ACL_FLOAT16, "bfloat16": aclnn.ACL_BF16, "float32": aclnn.ACL_FLOAT,
    "float64": aclnn.ACL_DOUBLE, "int8": aclnn.ACL_INT8, "int16": aclnn.ACL_INT16,
    "int32": aclnn.ACL_INT32, "int64": aclnn.ACL_INT64, "uint8": aclnn.ACL_UINT8,
    "bool": aclnn.ACL_BOOL,
}

FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


def finite_max(dtype: str) -> float:
    """The largest finite value of a float dtype."""
    info = ml_dtypes.finfo(NP_DTYPES[dtype]) if dtype == "bfloat16" else np.finfo(NP_DTYPES[dtype])
    return float(info.max)


@dataclasses.dataclass(frozen=True)
class Dist:
    """How an input's elements are drawn.

    ``uniform``: U(low, high) (integers in [low, high] for integer dtypes); ``const``: every
    element ``low`` (``== high``); ``normal``: a mean drawn from U(*mean) and a standard
    deviation from U(*std), once per tensor, then N(mean, std) per element (ATK's ``nd``).
    ``text`` is the range as the file wrote it.
    """

    kind: str
    low: float = 0.0
    high: float = 0.0
    mean: tuple = (0.0, 0.0)
    std: tuple = (0.0, 0.0)
    text: str = ""


#: Elements drawn at a time: the float64 (or int64) draw of a slice is the only
#: temporary, so a tensor drawn whole costs its own size and 8 MB more.
SLICE = 1 << 20


class Stream:
    """The elements of one input, drawn in order from its own generator, cast to ``dtype``."""

    def __init__(self, rng: np.random.Generator, dist: Dist, dtype: str):
        self.rng, self.dist, self.dtype = rng, dist, NP_DTYPES[dtype]
        self.loc = self.scale = 0.0
        if dist.kind == "normal":
            self.loc = float(rng.uniform(*dist.mean))
            self.scale = float(rng.uniform(*dist.std))

    def take(self, k: int) -> np.ndarray:
        """The next ``k`` elements (1-D), drawn :data:`SLICE` at a time."""
        d, dt = self.dist, self.dtype
        if d.kind == "const":
            with np.errstate(all="ignore"):
                return np.full(k, np.float64(d.low).astype(dt), dt)
        if k <= SLICE:
            return self._draw(k)
        out = np.empty(k, dt)
        for lo in range(0, k, SLICE):
            out[lo:lo + SLICE] = self._draw(min(SLICE, k - lo))
        return out

    def _draw(self, k: int) -> np.ndarray:
        d, dt, rng = self.dist, self.dtype, self.rng
        if dt.kind in "biu":
            values = rng.integers(math.ceil(d.low), math.floor(d.high), size=k, endpoint=True)
            return values != 0 if dt.kind == "b" else values.astype(dt)
        if d.kind == "normal":
            wide = rng.normal(self.loc, self.scale, size=k)
        elif math.isfinite(d.high - d.low):
            wide = rng.uniform(d.low, d.high, size=k)
        else:  # the whole float64 range: the width overflows, the weighted sum does not
            u = rng.random(k)
            wide = np.clip(d.low * (1.0 - u) + d.high * u, d.low, d.high)
        with np.errstate(over="ignore"):
            return wide.astype(dt)


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """A tensor argument of the API: ``param`` (the C name), ``label`` (the file's name)."""

    param: str
    label: str
    dtype: str
    shape: tuple
    dist: Dist | None = None  # None: written only (an output)
    fmt: str = "ND"

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclasses.dataclass(frozen=True)
class ValueSpec:
    """A host value of the API: an ``aclScalar`` (``kind="scalar"``) or a plain argument
    such as ``selfIsResult`` (``kind="attr"``)."""

    param: str
    label: str
    kind: str
    dtype: str
    dist: Dist


@dataclasses.dataclass(frozen=True)
class Standard:
    """A precision standard of leakyops' ``verify`` (name and options) and where it came from."""

    name: str
    options: tuple = ()  # (("rtol", r), ("atol", a), ("error_ratio", e)) for double-thousandth
    source: str = ""

    def describe(self) -> str:
        opts = ", ".join(f"{k} {v:g}" for k, v in self.options)
        return f"{self.name}{f' ({opts})' if opts else ''}"


@dataclasses.dataclass(frozen=True)
class Case:
    """One case of a suite. ``error`` is set for a malformed case (``--keep-going``)."""

    name: str
    file: str
    where: str  # "case 17" (ATK) or "line 4" (TTK)
    api: str
    tensors: tuple = ()  # TensorSpec of every tensor argument, in the API's order
    values: tuple = ()  # ValueSpec
    standards: tuple = ()  # (output param, Standard), one per output
    notes: tuple = ()  # fields read and recorded that change nothing here (ATK backward)
    error: str = ""

    def tensor(self, param: str) -> TensorSpec:
        return next(t for t in self.tensors if t.param == param)

    @property
    def first_input(self) -> TensorSpec | None:
        return next((t for t in self.tensors if t.dist is not None), None)

    @property
    def elements(self) -> int:
        """The work of the case: the elements of its largest tensor."""
        return max((t.size for t in self.tensors), default=0)
