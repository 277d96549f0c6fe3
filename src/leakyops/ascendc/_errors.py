"""Exceptions of the Ascend C emulation.

On the device a broken constraint is undefined behaviour (wrong results, a hang, an AI Core
exception); the emulation turns each one into an exception that names the rule.
"""

from __future__ import annotations

__all__ = [
    "AscendCError",
    "AscendCTypeError",
    "ConstraintError",
    "UnifiedBufferOverflowError",
    "QueueError",
]


class AscendCError(Exception):
    """Base class of every error raised by :mod:`leakyops.ascendc`."""


class AscendCTypeError(AscendCError, TypeError):
    """An operand of an unsupported type, or operands whose types do not match."""


class ConstraintError(AscendCError, ValueError):
    """A documented constraint is broken: position, alignment, range, overlap, …"""


class UnifiedBufferOverflowError(ConstraintError):
    """An allocation asks for more Unified Buffer than is left."""


class QueueError(ConstraintError):
    """TQue misuse: DeQue on an empty queue, AllocTensor with no free buffer, …

    On the device these hang or corrupt the pipeline; the emulation runs the stages in
    program order, so it can tell at once.
    """
