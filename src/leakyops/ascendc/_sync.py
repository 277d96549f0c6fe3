"""Pipes, events and in-core synchronisation: ``pipe_t``, ``event_t``, ``HardEvent``,
``SetFlag``/``WaitFlag``, ``PipeBarrier``, and ``InitSocState``.

On the device MTE2 (copy in), V (vector), MTE3 (copy out) and S (scalar) run concurrently;
``SetFlag<E>(id)`` raises a hardware flag when the source pipe has finished what came before
it, ``WaitFlag<E>(id)`` holds the destination pipe until the flag is up and then lowers it.
The emulation runs every instruction in program order on one thread, so it needs no waiting,
but it keeps the flags and checks what it can see (the vendor's rules, ``SetFlag-WaitFlag
(ISASI).md`` and ``PipeBarrier(ISASI).md``):

- the event is a ``HardEvent`` between pipes a vector core has (S, V, MTE2, MTE3), and the
  event ID is in 0..7;
- ``SetFlag`` twice for the same event and ID without a ``WaitFlag`` in between is undefined
  behaviour on the device (a later ``PipeBarrier<PIPE_ALL>`` hangs): an error;
- ``WaitFlag`` with no earlier ``SetFlag`` for the same event and ID would wait for a flag that
  program order never raises first: an error (the emulation needs the pairs in program order,
  as every vendor sample writes them);
- a flag still raised when the kernel returns breaks "SetFlag and WaitFlag must be used in
  pairs": :func:`launch` reports it;
- ``PipeBarrier<PIPE_S>`` is not supported (scalar ordering is automatic).

Both calls can be written as in C++ — ``SetFlag[HardEvent.MTE2_V](EVENT_ID0)``,
``PipeBarrier[PIPE_V]()`` — or with the template argument first: ``SetFlag(HardEvent.MTE2_V,
EVENT_ID0)``, ``PipeBarrier(PIPE_V)``.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Concatenate, Generic, ParamSpec, TypeVar

from ._aicore import _check_int, current_core
from ._errors import AscendCTypeError, ConstraintError
from ._types import MaskMode

__all__ = ["pipe_t", "event_t", "HardEvent", "PIPE_S", "PIPE_V", "PIPE_M", "PIPE_MTE1",
           "PIPE_MTE2", "PIPE_MTE3", "PIPE_ALL", "PIPE_FIX", "EVENT_ID0", "EVENT_ID1",
           "EVENT_ID2", "EVENT_ID3", "EVENT_ID4", "EVENT_ID5", "EVENT_ID6", "EVENT_ID7",
           "PipeBarrier", "SetFlag", "WaitFlag", "InitSocState"]


class pipe_t(enum.IntEnum):
    """Hardware pipes (the values of CANN's ``pipe_t``)."""

    PIPE_S = 1      # scalar
    PIPE_V = 2      # vector
    PIPE_M = 3      # cube (matrix)
    PIPE_MTE1 = 4   # L1 -> L0A/L0B
    PIPE_MTE2 = 5   # GM -> UB / L1 (copy in)
    PIPE_MTE3 = 6   # UB -> GM (copy out)
    PIPE_ALL = 10
    PIPE_FIX = 11   # L0C -> GM / L1


PIPE_S, PIPE_V, PIPE_M = pipe_t.PIPE_S, pipe_t.PIPE_V, pipe_t.PIPE_M
PIPE_MTE1, PIPE_MTE2, PIPE_MTE3 = pipe_t.PIPE_MTE1, pipe_t.PIPE_MTE2, pipe_t.PIPE_MTE3
PIPE_ALL, PIPE_FIX = pipe_t.PIPE_ALL, pipe_t.PIPE_FIX


class event_t(enum.IntEnum):
    """Event IDs; Atlas A2/A3 and Ascend 950 have 8 (0-7). The vendor advises 0-5 for user
    code (6 is reserved, 7 is used by TPipe's automatic synchronisation)."""

    EVENT_ID0 = 0
    EVENT_ID1 = 1
    EVENT_ID2 = 2
    EVENT_ID3 = 3
    EVENT_ID4 = 4
    EVENT_ID5 = 5
    EVENT_ID6 = 6
    EVENT_ID7 = 7


(EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6,
 EVENT_ID7) = tuple(event_t)

# the vendor's HardEvent, in its order (kernel_event.h): SRC_DST
HardEvent = enum.IntEnum("HardEvent", [
    "MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1", "MTE2_V", "V_MTE2", "MTE3_V", "V_MTE3", "M_V",
    "V_M", "V_V", "MTE3_MTE1", "MTE1_MTE3", "MTE1_V", "MTE2_M", "M_MTE2", "V_MTE1", "M_FIX",
    "FIX_M", "MTE3_MTE2", "MTE2_MTE3", "S_V", "V_S", "S_MTE2", "MTE2_S", "S_MTE3", "MTE3_S",
    "MTE2_FIX", "FIX_MTE2", "FIX_S", "M_S", "FIX_MTE3", "MTE1_FIX", "FIX_MTE1", "FIX_FIX"],
    start=0)
HardEvent.__doc__ = ("Synchronisation events ``SRC_DST``: the destination pipe waits for the "
                     "source pipe (e.g. ``MTE2_V``: V waits for MTE2).")

_VECTOR_CORE_PIPES = {"S", "V", "MTE2", "MTE3"}
MAX_EVENT_ID = 7


def _event(what: str, event: object) -> HardEvent:
    if not isinstance(event, HardEvent):
        raise AscendCTypeError(f"{what}: the event must be a HardEvent, got {event!r}")
    pipes = set(event.name.split("_"))
    if not pipes <= _VECTOR_CORE_PIPES:
        raise ConstraintError(
            f"{what}: HardEvent.{event.name} involves a pipe a vector core (AIV) does not have; "
            f"the emulation runs vector kernels, whose pipes are S, V, MTE2 and MTE3")
    return event


def _event_id(what: str, event_id: object) -> int:
    return _check_int(event_id, f"{what}: eventID", lo=0, hi=MAX_EVENT_ID)


def _set_flag(event: HardEvent, eventID: int) -> None:
    what = "SetFlag"
    event = _event(what, event)
    eid = _event_id(what, eventID)
    flags = current_core().flags
    if (event, eid) in flags:
        raise ConstraintError(
            f"{what}<HardEvent::{event.name}>({eid}): the flag is already set and has not been "
            f"waited for; two SetFlag calls on the same event and ID without a WaitFlag are "
            f"undefined behaviour on the device (a later PipeBarrier<PIPE_ALL> hangs)")
    flags.add((event, eid))


def _wait_flag(event: HardEvent, eventID: int) -> None:
    what = "WaitFlag"
    event = _event(what, event)
    eid = _event_id(what, eventID)
    flags = current_core().flags
    if (event, eid) not in flags:
        raise ConstraintError(
            f"{what}<HardEvent::{event.name}>({eid}): no SetFlag<HardEvent::{event.name}>({eid}) "
            f"is pending; the {event.name.split('_')[1]} pipe would wait for a flag that "
            f"program order has not raised (SetFlag and WaitFlag must be used in pairs, with "
            f"the same event and ID)")
    flags.discard((event, eid))


def _pipe_barrier(pipe: pipe_t) -> None:
    if not isinstance(pipe, pipe_t):
        raise AscendCTypeError(f"PipeBarrier: the pipe must be a pipe_t (PIPE_V, PIPE_MTE2, "
                               f"PIPE_MTE3, PIPE_ALL, ...), got {pipe!r}")
    if pipe is pipe_t.PIPE_S:
        raise ConstraintError(
            "PipeBarrier<PIPE_S>: not supported (scalar instructions are ordered by the "
            "hardware; the vendor lists PIPE_S as unsupported)")
    # every instruction has already completed in program order: nothing to wait for


_T = TypeVar("_T")
_P = ParamSpec("_P")


class _TemplateCall(Generic[_T, _P]):
    """A function whose first argument is a C++ template argument: ``f[T](args)`` or
    ``f(T, args)``."""

    def __init__(self, fn: Callable[Concatenate[_T, _P], None], doc: str):
        self._fn = fn
        self.__doc__ = doc
        self.__name__ = fn.__name__.strip("_")

    if TYPE_CHECKING:
        def __call__(self, template_arg: _T, /, *args: _P.args, **kwargs: _P.kwargs) -> None: ...
    else:
        def __call__(self, *args, **kwargs):
            return self._fn(*args, **kwargs)

    def __getitem__(self, template_arg: _T) -> Callable[_P, None]:
        return functools.partial(self._fn, template_arg)

    def __repr__(self) -> str:
        return f"<Ascend C {self.__name__}>"


SetFlag = _TemplateCall(_set_flag, "``SetFlag<event>(eventID)``: raise the event's flag "
                        "(checked: see the module docstring).")
WaitFlag = _TemplateCall(_wait_flag, "``WaitFlag<event>(eventID)``: wait for and lower the "
                         "event's flag (checked: see the module docstring).")
PipeBarrier = _TemplateCall(_pipe_barrier, "``PipeBarrier<pipe>()``: wait until the pipe has "
                            "finished (a no-op in program-order execution; PIPE_S is refused).")


def InitSocState() -> None:
    """``AscendC::InitSocState()`` at a kernel's entry: the mask register back to Normal mode
    with every bit set (the vector core's part of the documented initialisation; atomic and
    cube state are not emulated)."""
    core = current_core()
    core.mask_mode = MaskMode.NORMAL
    core.reset_mask()
