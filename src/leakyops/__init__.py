"""leakyops: the LeakyReLU operator family on NumPy arrays, exact to the bit.

Five functions — :func:`leaky_relu`, :func:`leaky_relu_`, :func:`leaky_relu_backward`,
:func:`prelu`, :func:`prelu_backward` — for float16, bfloat16 (``ml_dtypes``), float32 and
float64, bit-identical to PyTorch on the CPU. Front-ends live in subpackages that are
imported only when asked for: ``leakyops.aclnn``, ``leakyops.ascendc``, ``leakyops.onednn``,
``leakyops.torch``, ``leakyops.dask``; the command line is ``leakyops`` (``python -m leakyops``).

Rules shared by every function:

- the input is kept where ``x > 0``; elsewhere it is multiplied by the slope, so NaN gives
  NaN, ``-0.0`` gives ``-0.0 * s`` and ``-inf * 0`` gives NaN;
- float16 and bfloat16 are computed in float32 and rounded once (to nearest, ties to even);
  float32 with the slope rounded to float32; float64 in float64;
- the slope is any real scalar (Python or NumPy bool/int/float, or a one-element array);
  integers beyond 2**24 lose precision when rounded to float32;
- inputs are array-likes of any rank and strides; ``out`` may be the input itself, may
  overlap it (the result is as if it did not) and may have another float dtype (the result
  is computed in the input's dtype, then cast); errors never leave ``out`` half written.
"""

from __future__ import annotations

import os as _os
import sys as _sys

import _signal  # the C module: "signal" imports enum, a few hundredths of a second more


def _interrupted_while_starting(signum, frame):  # pragma: no cover - ends the command's process
    _os.write(2, b"leakyops: interrupted\n")
    _os._exit(130)


def _started_as_the_command() -> bool:
    """Whether this process is the ``leakyops`` command: its script, or ``python -m leakyops``
    (while the package is imported for ``-m``, ``sys.argv[0]`` is ``"-m"``)."""
    if _sys.argv[:1] == ["-m"]:
        argv = getattr(_sys, "orig_argv", [])
        return any(a == "-mleakyops" or (a == "-m" and argv[i + 1:i + 2] == ["leakyops"])
                   for i, a in enumerate(argv))
    return _os.path.basename(_sys.argv[0]) in ("leakyops", "leakyops.exe", "leakyops-script.py")


# The command starts by importing this package (numba: most of a second); Ctrl-C meanwhile ends
# it with one line and exit status 130, as it does later (leakyops.cli takes over). Programs
# that import leakyops are not affected.
if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler and _started_as_the_command():
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)

from typing import TYPE_CHECKING, Any, overload  # noqa: E402

from . import _core  # noqa: E402
from ._threads import get_num_threads, set_num_threads  # noqa: E402

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    import numpy as np
    import numpy.typing as npt

    from ._typing import ArrayT, ArrayT2, FloatArray, FloatT, ShapeT, SlopeLike, WShapeT

    def thread_limit(n: int) -> AbstractContextManager[None]:
        """Within the ``with`` block, kernels called from this thread use ``n`` threads."""
else:
    from ._threads import thread_limit

__version__: str = "0.1.0"

__all__ = [
    "leaky_relu",
    "leaky_relu_",
    "leaky_relu_backward",
    "prelu",
    "prelu_backward",
    "get_num_threads",
    "set_num_threads",
    "thread_limit",
    "runtime_info",
    "show_runtime",
    "SUPPORTED_DTYPES",
    "__version__",
]

#: The four dtypes every operator takes: float16, bfloat16 (``ml_dtypes``), float32, float64.
SUPPORTED_DTYPES: tuple[np.dtype[Any], ...] = _core.SUPPORTED_DTYPES


@overload
def leaky_relu(x: np.ndarray[ShapeT, np.dtype[FloatT]], negative_slope: SlopeLike = 0.01, *,
               out: None = None) -> np.ndarray[ShapeT, np.dtype[FloatT]]: ...
@overload
def leaky_relu(x: npt.ArrayLike, negative_slope: SlopeLike = 0.01, *,
               out: None = None) -> FloatArray: ...
@overload
def leaky_relu(x: npt.ArrayLike, negative_slope: SlopeLike = 0.01, *, out: ArrayT) -> ArrayT: ...


def leaky_relu(x: npt.ArrayLike, negative_slope: SlopeLike = 0.01, *,
               out: np.ndarray[Any, Any] | None = None) -> np.ndarray[Any, Any]:
    """LeakyReLU: ``y = x if x > 0 else x * negative_slope``.

    Parameters: ``x`` an array-like of float16, bfloat16, float32 or float64;
    ``negative_slope`` a real scalar (negative, zero, > 1, inf and NaN are all allowed);
    ``out`` an array of the result's shape and any supported float dtype.

    >>> import numpy as np, leakyops
    >>> leakyops.leaky_relu(np.array([-2.0, -0.0, 0.0, 3.0]), 0.5)
    array([-1., -0.,  0.,  3.])
    >>> leakyops.leaky_relu(np.array([-np.inf, np.nan], np.float32), 0.0)
    array([nan, nan], dtype=float32)
    """
    return _core.leaky_relu_impl(x, negative_slope, out)


def leaky_relu_(x: ArrayT, negative_slope: SlopeLike = 0.01) -> ArrayT:
    """In-place LeakyReLU: writes :func:`leaky_relu` of ``x`` into ``x`` and returns ``x``.

    ``x`` must be a writeable ``numpy.ndarray`` (a read-only one is a ``ValueError``).

    >>> import numpy as np, leakyops
    >>> a = np.array([-4.0, 2.0], np.float16)
    >>> leakyops.leaky_relu_(a, 0.25) is a, a
    (True, array([-1.,  2.], dtype=float16))
    """
    return _core.leaky_relu_inplace_impl(x, negative_slope)


@overload
def leaky_relu_backward(grad_output: np.ndarray[ShapeT, np.dtype[FloatT]],
                        x: np.ndarray[ShapeT, np.dtype[FloatT]], negative_slope: SlopeLike,
                        self_is_result: bool = False, *,
                        out: None = None) -> np.ndarray[ShapeT, np.dtype[FloatT]]: ...
@overload
def leaky_relu_backward(grad_output: npt.ArrayLike, x: npt.ArrayLike, negative_slope: SlopeLike,
                        self_is_result: bool = False, *, out: None = None) -> FloatArray: ...
@overload
def leaky_relu_backward(grad_output: npt.ArrayLike, x: npt.ArrayLike, negative_slope: SlopeLike,
                        self_is_result: bool = False, *, out: ArrayT) -> ArrayT: ...


def leaky_relu_backward(grad_output: npt.ArrayLike, x: npt.ArrayLike, negative_slope: SlopeLike,
                        self_is_result: bool = False, *,
                        out: np.ndarray[Any, Any] | None = None) -> np.ndarray[Any, Any]:
    """Gradient of LeakyReLU: ``dx = g if t > 0 else g * negative_slope``.

    ``t`` is ``x``, the forward's input, or — with ``self_is_result=True`` — the forward's
    result, which needs ``negative_slope >= 0`` (``ValueError`` otherwise: the sign of the
    input cannot be recovered from the result). At ``t == 0`` the gradient is the slope.
    ``grad_output`` and ``x`` broadcast against each other; dtypes promote (equal stays,
    float16 + bfloat16 → float32, anything with float32 → float32, with float64 → float64).

    >>> import numpy as np, leakyops
    >>> leakyops.leaky_relu_backward(np.ones(3), np.array([-1.0, 0.0, 2.0]), 0.1)
    array([0.1, 0.1, 1. ])
    """
    return _core.leaky_relu_backward_impl(grad_output, x, negative_slope, self_is_result, out)


@overload
def prelu(x: np.ndarray[ShapeT, np.dtype[FloatT]], weight: npt.ArrayLike, *, axis: int = 1,
          out: None = None) -> np.ndarray[ShapeT, np.dtype[FloatT]]: ...
@overload
def prelu(x: npt.ArrayLike, weight: npt.ArrayLike, *, axis: int = 1,
          out: None = None) -> FloatArray: ...
@overload
def prelu(x: npt.ArrayLike, weight: npt.ArrayLike, *, axis: int = 1, out: ArrayT) -> ArrayT: ...


def prelu(x: npt.ArrayLike, weight: npt.ArrayLike, *, axis: int = 1,
          out: np.ndarray[Any, Any] | None = None) -> np.ndarray[Any, Any]:
    """PReLU: ``y = x if x > 0 else w[c] * x``.

    ``weight`` (``x``'s dtype) is one shared slope when it has one element; a 1-D weight of
    length ``C`` applies along ``axis`` (default 1, as in PyTorch; ``axis=-1`` for
    channels-last; a 1-D ``x`` needs ``axis=0``); a weight of rank >= 2 broadcasts against
    ``x`` NumPy-style, right-aligned, without changing ``x``'s shape (ONNX ``PRelu``).

    >>> import numpy as np, leakyops
    >>> x = np.array([[-1.0, -1.0], [2.0, -4.0]])
    >>> leakyops.prelu(x, np.array([0.5, 0.25]))
    array([[-0.5 , -0.25],
           [ 2.  , -1.  ]])
    """
    return _core.prelu_impl(x, weight, axis, out)


@overload
def prelu_backward(
    grad_output: npt.ArrayLike, x: np.ndarray[ShapeT, np.dtype[FloatT]],
    weight: np.ndarray[WShapeT, np.dtype[FloatT]], *, axis: int = 1,
    out: tuple[None, None] | None = None,
) -> tuple[np.ndarray[ShapeT, np.dtype[FloatT]], np.ndarray[WShapeT, np.dtype[FloatT]]]: ...
@overload
def prelu_backward(
    grad_output: npt.ArrayLike, x: np.ndarray[ShapeT, np.dtype[FloatT]],
    weight: np.ndarray[WShapeT, np.dtype[FloatT]], *, axis: int = 1, out: tuple[ArrayT, None],
) -> tuple[ArrayT, np.ndarray[WShapeT, np.dtype[FloatT]]]: ...
@overload
def prelu_backward(
    grad_output: npt.ArrayLike, x: np.ndarray[ShapeT, np.dtype[FloatT]],
    weight: np.ndarray[WShapeT, np.dtype[FloatT]], *, axis: int = 1, out: tuple[None, ArrayT],
) -> tuple[np.ndarray[ShapeT, np.dtype[FloatT]], ArrayT]: ...
@overload
def prelu_backward(
    grad_output: npt.ArrayLike, x: npt.ArrayLike, weight: npt.ArrayLike, *, axis: int = 1,
    out: tuple[ArrayT, ArrayT2],
) -> tuple[ArrayT, ArrayT2]: ...
@overload
def prelu_backward(
    grad_output: npt.ArrayLike, x: npt.ArrayLike, weight: npt.ArrayLike, *, axis: int = 1,
    out: tuple[None, None] | None = None,
) -> tuple[FloatArray, FloatArray]: ...
@overload
def prelu_backward(
    grad_output: npt.ArrayLike, x: npt.ArrayLike, weight: npt.ArrayLike, *, axis: int = 1,
    out: tuple[ArrayT, None],
) -> tuple[ArrayT, FloatArray]: ...
@overload
def prelu_backward(
    grad_output: npt.ArrayLike, x: npt.ArrayLike, weight: npt.ArrayLike, *, axis: int = 1,
    out: tuple[None, ArrayT],
) -> tuple[FloatArray, ArrayT]: ...


def prelu_backward(
    grad_output: npt.ArrayLike, x: npt.ArrayLike, weight: npt.ArrayLike, *, axis: int = 1,
    out: tuple[np.ndarray[Any, Any] | None, np.ndarray[Any, Any] | None] | None = None,
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Gradients of PReLU: ``(grad_input, grad_weight)``.

    ``grad_input = g if x > 0 else w[c] * g`` (shaped like ``x``);
    ``grad_weight[c] = sum over channel c of (0 if x > 0 else x * g)``, shaped like
    ``weight``. The sum is formed in float64 in an order fixed by the shapes (the same for
    any number of threads) and rounded once. ``grad_output`` must broadcast to ``x``.
    ``out=(grad_input, grad_weight)`` writes either result into a given array (either may be
    ``None``), with the rules of ``out=`` elsewhere; the arrays are returned.

    >>> import numpy as np, leakyops
    >>> gi, gw = leakyops.prelu_backward(np.ones((4, 2)), np.arange(8.0).reshape(4, 2),
    ...                                  np.array([0.5, 0.5]))
    >>> gi.ravel(), gw
    (array([0.5, 1. , 1. , 1. , 1. , 1. , 1. , 1. ]), array([0., 0.]))
    """
    return _core.prelu_backward_impl(grad_output, x, weight, axis, out)


def runtime_info() -> dict[str, Any]:
    """What the kernels run on and how, as a dict: the CPU and its features, the CPU numba
    compiles for, the caps (``LEAKYOPS_MAX_CPU_ISA``, ``LEAKYOPS_SOFT_HALF``), the threads and
    threading layer, and the path each operator takes per dtype (``paths``)."""
    from . import _cpu

    return _cpu.runtime_info()


def show_runtime() -> None:
    """Print :func:`runtime_info` (as ``numpy.show_runtime()`` does for NumPy); the command
    line prints the same with ``leakyops --version --verbose``.

    >>> import leakyops
    >>> leakyops.show_runtime()  # doctest: +ELLIPSIS
    leakyops ...
    cpu: ...
    """
    print(_format_runtime(runtime_info()))


def _format_runtime(info: dict[str, Any]) -> str:
    """:func:`runtime_info` as lines of text."""
    target = info["target"] + (f" (features {info['numba_cpu_features']!r})"
                               if info["numba_cpu_features"] is not None else "")
    tf = info["target_features"]
    lines = [
        f"leakyops {__version__}, numba {info['numba']}",
        f"cpu: {info['cpu']}; features: {' '.join(info['cpu_features']) or '(none of note)'}",
        f"kernels compiled for: {target}; features: "
        + ("(the named CPU's defaults)" if tf is None else ' '.join(tf) or '(none of note)'),
        "caps: " + ", ".join(f"{k}={v if v is not None else '(unset)'}"
                             for k, v in info["caps"].items()),
        f"threads: {info['threads']}; threading layer: {info['threading_layer']}",
        "paths:",
    ]
    for op, per_dtype in info["paths"].items():
        for dtype, path in per_dtype.items():
            lines.append(f"  {op:<20} {dtype:<9} {path}")
    return "\n".join(lines)
