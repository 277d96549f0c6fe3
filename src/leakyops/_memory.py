"""The machine's memory as the operating system reports it: the one place that reads it.

Linux's ``/proc`` files and ``sysconf``; None where a system does not say. Used by the command
(a size checked against the memory available now and ``ulimit -v`` before any work) and by
``leakyops.onednn`` (a tensor larger than memory and swap is ``out_of_memory`` before asking).

>>> total = sysconf_bytes("SC_PHYS_PAGES")
>>> total is None or total > 0
True
"""

from __future__ import annotations

import os

__all__ = ["proc_field", "sysconf_bytes", "address_space_limit", "memory_and_swap"]


def proc_field(path: str, field: str) -> int | None:
    """A ``Field:  N kB`` line of a Linux ``/proc`` file, in bytes (None where there is none)."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    value, *unit = line.split(":", 1)[1].split()
                    return int(value) * (1024 if unit == ["kB"] else 1)
    except (OSError, ValueError):
        pass
    return None


def sysconf_bytes(pages: str) -> int | None:
    """``sysconf(pages)`` pages (``"SC_PHYS_PAGES"``, ``"SC_AVPHYS_PAGES"``) in bytes."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf(pages)
    except (AttributeError, ValueError, OSError):  # pragma: no cover - no sysconf
        return None


def address_space_limit() -> int | None:
    """The soft limit of this process's address space (RLIMIT_AS, ``ulimit -v``), if there is one."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, AttributeError, ValueError, OSError):  # pragma: no cover - Windows
        return None
    return None if soft == resource.RLIM_INFINITY or soft < 0 else soft


def memory_and_swap() -> int | None:
    """The bytes of memory and swap the machine has (None where the system does not say): the
    largest single allocation Linux's default overcommit heuristic grants."""
    total = sysconf_bytes("SC_PHYS_PAGES")
    if total is None:
        return None
    return total + (proc_field("/proc/meminfo", "SwapTotal") or 0)
