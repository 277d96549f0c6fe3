"""oneDNN status codes and the one exception type of :mod:`leakyops.onednn`."""

from __future__ import annotations

import enum
from typing import NoReturn


class Status(enum.IntEnum):
    """``dnnl_status_t`` (``dnnl_common_types.h``, oneDNN 3.2), same numbers."""

    success = 0
    out_of_memory = 1
    invalid_arguments = 2
    unimplemented = 3
    last_impl_reached = 4
    runtime_error = 5
    not_required = 6
    invalid_graph = 7
    invalid_graph_op = 8
    invalid_shape = 9
    invalid_data_type = 10


class Error(RuntimeError):
    """The error of every :mod:`leakyops.onednn` call (``dnnl::error``).

    ``status`` is a :class:`Status`; ``str(err)`` starts with its name, e.g.
    ``"invalid_graph_op: LeakyReLU op 0 requires the attribute 'alpha'"``.

    >>> e = Error(Status.invalid_shape, "x")
    >>> e.status.name, e.status.value, str(e)
    ('invalid_shape', 9, 'invalid_shape: x')
    """

    def __init__(self, status: Status | int, message: str) -> None:
        self.status = Status(status)
        self.message = message
        super().__init__(f"{self.status.name}: {message}")

    def __reduce__(self) -> tuple[type[Error], tuple[Status, str]]:  # picklable with its status
        return (type(self), (self.status, self.message))


def fail(status: Status, message: str) -> NoReturn:
    raise Error(status, message)
