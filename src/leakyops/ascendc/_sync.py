"""Pipeline synchronisation: no-ops in the emulation, which runs instructions in program order.

They exist so that kernels ported from Ascend C keep their SetFlag/WaitFlag/PipeBarrier
calls; on the device they order the MTE2 (copy in), V (vector) and MTE3 (copy out) pipes.
"""

from __future__ import annotations

import enum

__all__ = ["HardEvent", "PipeBarrier", "SetFlag", "WaitFlag"]


class HardEvent(enum.Enum):
    MTE2_V = "MTE2_V"
    V_MTE3 = "V_MTE3"
    MTE3_V = "MTE3_V"
    V_MTE2 = "V_MTE2"
    MTE2_MTE3 = "MTE2_MTE3"
    MTE3_MTE2 = "MTE3_MTE2"
    S_V = "S_V"
    V_S = "V_S"


def PipeBarrier(pipe=None) -> None:
    """``PipeBarrier<pipe>()``: nothing to wait for in program-order execution."""


def SetFlag(event=None, event_id: int = 0) -> None:
    """``SetFlag<event>(id)``: no-op (see the module docstring)."""


def WaitFlag(event=None, event_id: int = 0) -> None:
    """``WaitFlag<event>(id)``: no-op (see the module docstring)."""
