"""The operator table: the five operators as the command line, the demo, the benchmark and the tests see them.

One row per operator, in the order of the public functions: its name (the public function's),
its array inputs in the order of the function's arguments, its outputs in the order they are
returned, its scalar parameters with their defaults, the call of the core
(:mod:`leakyops._core`) and the naive NumPy reference (:mod:`leakyops._reference`). The memory
an operator moves follows from its arrays. Everything that lists the operators reads this
table, so an operator added here (with its core function and reference) reaches the command
line, the demo, the benchmark and the table-driven tests.

>>> import numpy as np
>>> op = OPERATORS["prelu"]
>>> op.inputs, op.outputs, dict(op.params)
(('x', 'weight'), ('y',), {'axis': 1})
>>> arrays = {"x": np.array([[-1.0, 2.0]], np.float32), "weight": np.array([0.5], np.float32)}
>>> op.call(arrays)
{'y': array([[-0.5,  2. ]], dtype=float32)}
>>> op.reference(arrays)
{'y': array([[-0.5,  2. ]], dtype=float32)}
>>> op.bytes_moved(1000, 4)         # x read, y written; the weight is negligible
8000
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from leakyops import _core, _reference
from leakyops._verify import dtype_name

__all__ = ["DTYPES", "OPERATORS", "OPS", "PER_CHANNEL", "SUMS", "Operator"]

#: The four dtypes of every operator, by name (``bfloat16`` is ``ml_dtypes.bfloat16``).
DTYPES: Mapping[str, np.dtype] = types.MappingProxyType(
    {dtype_name(dt): dt for dt in _core.SUPPORTED_DTYPES})

#: Arrays of the weight's shape, not of ``x``'s: negligible in the memory an operator moves.
PER_CHANNEL = frozenset({"weight", "grad_weight"})

#: Outputs that are sums over many elements: their last bits depend on the order of the
#: additions, which is the implementation's, so they are checked to a tolerance (the
#: relative-error standard), not bit for bit.
SUMS = frozenset({"grad_weight"})


@dataclasses.dataclass(frozen=True)
class Operator:
    """One operator: its arrays, parameters, core call and reference.

    ``run_core`` and ``run_reference`` take ``(arrays, params, **options)`` and return what the core
    function (or the reference) returns: one array, or a tuple in the order of ``outputs``.
    Use :meth:`call` and :meth:`reference`, which fill in the parameters' defaults and name
    the results.
    """

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    #: scalar parameters and their defaults (the names ``leakyops golden`` records)
    params: Mapping[str, Any]
    run_core: Callable[..., Any] = dataclasses.field(repr=False)
    run_reference: Callable[..., Any] = dataclasses.field(repr=False)
    #: the result is written into the input ``x`` (which is returned as ``y``)
    in_place: bool = False

    def call(self, arrays: Mapping[str, np.ndarray], params: Mapping[str, Any] | None = None,
             **options) -> dict[str, np.ndarray]:
        """The core's results by output name. ``options`` are the core's keyword options
        (``compare``, ``slope_dtype`` where the operator has a slope, ``out``)."""
        return self._named(self.run_core(arrays, {**self.params, **(params or {})}, **options))

    def reference(self, arrays: Mapping[str, np.ndarray], params: Mapping[str, Any] | None = None,
                  *, compare: str = ">") -> dict[str, np.ndarray]:
        """The naive reference's results by output name (an in-place operator's input is
        left as it is)."""
        return self._named(self.run_reference(arrays, {**self.params, **(params or {})}, compare=compare))

    def _named(self, results) -> dict[str, np.ndarray]:
        return dict(zip(self.outputs, results if len(self.outputs) > 1 else (results,), strict=True))

    @property
    def arrays_moved(self) -> int:
        """How many arrays of ``x``'s size are read or written, once each (in place: twice ``x``)."""
        return sum(1 for name in self.inputs + self.outputs if name not in PER_CHANNEL)

    def bytes_moved(self, elements: int, itemsize: int) -> int:
        """The memory traffic of one call on ``elements`` elements of ``itemsize`` bytes."""
        return self.arrays_moved * elements * itemsize


# The core functions are looked up when called (``_core.prelu_impl``, not a reference taken
# here), so a test that replaces one of them reaches every user of the table.
_TABLE = (
    Operator(
        "leaky_relu", ("x",), ("y",), types.MappingProxyType({"slope": 0.01}),
        run_core=lambda a, p, **o: _core.leaky_relu_impl(a["x"], p["slope"], **o),
        run_reference=lambda a, p, **o: _reference.leaky_relu(a["x"], p["slope"], **o),
    ),
    Operator(
        "leaky_relu_", ("x",), ("y",), types.MappingProxyType({"slope": 0.01}),
        run_core=lambda a, p, **o: _core.leaky_relu_inplace_impl(a["x"], p["slope"], **o),
        run_reference=lambda a, p, **o: _reference.leaky_relu(a["x"], p["slope"], **o),
        in_place=True,
    ),
    Operator(
        "leaky_relu_backward", ("grad_output", "x"), ("grad_input",),
        types.MappingProxyType({"slope": 0.01, "self_is_result": False}),
        run_core=lambda a, p, **o: _core.leaky_relu_backward_impl(a["grad_output"], a["x"], p["slope"],
                                                                  p["self_is_result"], **o),
        # the same formula whether x is the forward's input or its result (slope >= 0)
        run_reference=lambda a, p, **o: _reference.leaky_relu_backward(a["grad_output"], a["x"], p["slope"],
                                                                       **o),
    ),
    Operator(
        "prelu", ("x", "weight"), ("y",), types.MappingProxyType({"axis": 1}),
        run_core=lambda a, p, **o: _core.prelu_impl(a["x"], a["weight"], p["axis"], **o),
        run_reference=lambda a, p, **o: _reference.prelu(a["x"], a["weight"], p["axis"], **o),
    ),
    Operator(
        "prelu_backward", ("grad_output", "x", "weight"), ("grad_input", "grad_weight"),
        types.MappingProxyType({"axis": 1}),
        run_core=lambda a, p, **o: _core.prelu_backward_impl(a["grad_output"], a["x"], a["weight"],
                                                             p["axis"], **o),
        run_reference=lambda a, p, **o: _reference.prelu_backward(a["grad_output"], a["x"], a["weight"],
                                                                  p["axis"], **o),
    ),
)

#: The operators by name, in the order of the public functions.
OPERATORS: Mapping[str, Operator] = types.MappingProxyType({op.name: op for op in _TABLE})

#: Their names.
OPS: tuple[str, ...] = tuple(OPERATORS)
