"""Type aliases shared by the public signatures (used by type checkers only).

The public modules import it only under ``typing.TYPE_CHECKING``, and their annotations are
strings (``from __future__ import annotations``): ``import leakyops`` never loads it.
"""

from __future__ import annotations

import numbers
from typing import Any, TypeAlias, TypeVar, Union

import numpy as np
import numpy.typing as npt

#: A slope (``negative_slope``): any real scalar — a Python ``bool``/``int``/``float``, a
#: ``fractions.Fraction`` (any :class:`numbers.Real`), a NumPy bool, integer or floating
#: scalar (bfloat16 included) — or an array holding exactly one real number.
SlopeLike: TypeAlias = Union[
    float,
    numbers.Real,
    np.bool_,
    np.integer[Any],
    np.floating[Any],
    npt.NDArray[Union[np.bool_, np.integer[Any], np.floating[Any]]],
]

#: The dtype of a result whose input is an array-like of a dtype not known statically.
FloatArray: TypeAlias = npt.NDArray[np.floating[Any]]

#: The shape and the floating scalar type of an input array, kept in the result.
ShapeT = TypeVar("ShapeT", bound=tuple[int, ...])
WShapeT = TypeVar("WShapeT", bound=tuple[int, ...])
FloatT = TypeVar("FloatT", bound=np.floating[Any])

#: An array given as ``out=`` (or modified in place): returned as it is.
ArrayT = TypeVar("ArrayT", bound=np.ndarray[Any, Any])
ArrayT2 = TypeVar("ArrayT2", bound=np.ndarray[Any, Any])
