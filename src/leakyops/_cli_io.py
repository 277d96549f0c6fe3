"""Files and terminal output of the ``leakyops`` command.

- ``.npy`` and raw ``.bin`` arrays, read whole or in chunks (``verify`` streams, so its memory
  is one chunk, not one output);
- bfloat16 in ``.npy`` files: written as the raw bits in ``uint16`` (plain NumPy reads them),
  read back from that form and from the ``|V2`` form that NumPy writes for
  ``ml_dtypes.bfloat16`` arrays;
- files written whole under exactly the name given (:class:`AtomicFiles`: a temporary file
  beside the target, flushed, checked, renamed into place; an output's place checked before
  any work, so an unwritable path is an error up front);
- Ctrl-C: one line and exit status 130 whenever it comes (:func:`interrupt_handling`);
- progress on stderr for long runs, only when stderr is a terminal.

No operator arithmetic here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import math
import os
import secrets
import signal
import stat
import sys
import threading
import time
from pathlib import Path

import ml_dtypes
import numpy as np

from leakyops._config import warn_setting
from leakyops._verify import CHUNK, dtype_name

BF16 = np.dtype(ml_dtypes.bfloat16)

#: How a bfloat16 array is stored in a ``.npy`` file that leakyops writes.
BF16_NPY = "uint16"

#: Seconds before progress appears (environment ``LEAKYOPS_PROGRESS_AFTER`` overrides it).
PROGRESS_AFTER = 2.0


class CLIError(Exception):
    """An error reported as one line on stderr, with an exit status."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


def np_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a canonical dtype name (``bfloat16`` is ``ml_dtypes.bfloat16``)."""
    return BF16 if name == "bfloat16" else np.dtype(name)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def first_line(exc) -> str:
    """The first line of an exception's message (its type's name if it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# --------------------------------------------------------------------------- interrupts
#
# While the command runs, Ctrl-C raises KeyboardInterrupt once and is remembered: an interrupt
# swallowed on its way up (numba's compiler runs Python inside ctypes callbacks, where an
# exception cannot propagate: Python hands it to sys.unraisablehook, whose default prints
# "Exception ignored on calling ctypes callback function" and a traceback, and goes on) is
# recorded without a word by the command's hook and raised again at the next
# check_interrupt(); a second Ctrl-C while the first is being handled (files being removed,
# the one line being printed) only adds to the record. Temporary files are created and
# recorded, and renamed into place, with interrupts deferred, so that Ctrl-C leaves the old
# files or the new ones and no temporary file behind.

_interrupt = {"seen": False, "deferred": 0}


def _on_sigint(signum, frame) -> None:
    first = not _interrupt["seen"]
    _interrupt["seen"] = True
    if first and not _interrupt["deferred"]:
        raise KeyboardInterrupt


def _unraisable_hook(previous):
    """A ``sys.unraisablehook`` that records a KeyboardInterrupt that could not propagate (raised
    in a ctypes callback, a ``__del__``) and hands anything else to ``previous`` until Ctrl-C:
    after it, what the interrupt cut short may fail as it is freed (llvmlite's pass builder,
    interrupted in its constructor while numba compiled, raised AttributeError in its
    ``__del__``, printed after the command's one line), and says nothing."""

    def hook(unraisable) -> None:
        if isinstance(unraisable.exc_type, type) and issubclass(unraisable.exc_type, KeyboardInterrupt):
            _interrupt["seen"] = True  # check_interrupt() raises it where it can propagate
            return
        if not _interrupt["seen"]:
            previous(unraisable)

    return hook


@contextlib.contextmanager
def interrupt_handling():
    """Ctrl-C, for the duration of a command: see above. Python's handler and
    ``sys.unraisablehook`` are put back at the end.

    A SIGINT that the command was started with ignored (a background job) stays ignored; outside
    the main thread nothing changes (a handler can be installed there only).
    """
    previous = hook = None
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        previous = signal.signal(signal.SIGINT, _on_sigint)
        previous_hook = sys.unraisablehook
        sys.unraisablehook = hook = _unraisable_hook(previous_hook)
    _interrupt.update(seen=False, deferred=0)
    try:
        yield
    finally:
        if hook is not None and sys.unraisablehook is hook:
            sys.unraisablehook = previous_hook
        if previous is not None:
            # in the command's own process (leakyops/__init__ put its start-up handler in place)
            # the command is over: a Ctrl-C now could only cut the flushing of its output
            import leakyops

            over = previous is getattr(leakyops, "_interrupted_while_starting", None)
            signal.signal(signal.SIGINT, signal.SIG_IGN if over else previous)
        _interrupt.update(seen=False, deferred=0)  # the command's interrupts end with it


def check_interrupt() -> None:
    """Raise KeyboardInterrupt if Ctrl-C was pressed during the command and did not end it yet."""
    if _interrupt["seen"]:
        raise KeyboardInterrupt


def interrupt_answered() -> None:
    """The command has answered its Ctrl-C (it stopped its work and reports what finished, as
    ``cases`` does): the record is cleared, so that the report's files can still be committed;
    another Ctrl-C ends the command as the first would have."""
    _interrupt["seen"] = False


@contextlib.contextmanager
def _interrupts_deferred():
    """Ctrl-C waits until the (short) block is done; in a command :func:`check_interrupt` then
    reports it, elsewhere (Python's own handler in place) KeyboardInterrupt is raised after it."""
    installed = None
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler \
            and threading.current_thread() is threading.main_thread():
        installed = signal.signal(signal.SIGINT, _on_sigint)  # outside a command: defer all the same
        seen_before, _interrupt["seen"] = _interrupt["seen"], False
    _interrupt["deferred"] += 1
    try:
        yield
    finally:
        _interrupt["deferred"] -= 1
        if installed is not None:
            signal.signal(signal.SIGINT, installed)
            came, _interrupt["seen"] = _interrupt["seen"], seen_before
            if came:
                raise KeyboardInterrupt


# --------------------------------------------------------------------------- writing


def npy_payload(arr: np.ndarray) -> np.ndarray:
    """What goes into a ``.npy`` file for ``arr``: bfloat16 as its bits in ``uint16``."""
    arr = np.ascontiguousarray(arr)
    return arr.view(np.uint16) if arr.dtype == BF16 else arr


def _oserror(exc: OSError) -> str:
    return exc.strerror or str(exc)


class _Sink:
    """Writes to a file descriptor: every byte, or an OSError (no short write goes unnoticed).

    Not a file object on purpose: ``np.save`` then writes through :meth:`write` in chunks
    instead of handing the descriptor to C stdio, whose buffered errors can be lost.
    """

    def __init__(self, fd: int):
        self.fd, self.written = fd, 0

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        size = len(view)
        while view:
            view = view[os.write(self.fd, view[:_WRITE_CHUNK]):]
        self.written += size
        return size


_WRITE_CHUNK = 1 << 24
_TEMP_SUFFIX = ".leakyops-tmp"


def _write_payload(sink: _Sink, data) -> None:
    """``bytes``/``str`` as they are; an array as ``.npy`` (``data = ("npy", arr)``) or raw bytes."""
    if isinstance(data, str):
        sink.write(data.encode())
    elif isinstance(data, (bytes, bytearray, memoryview)):
        sink.write(data)
    elif isinstance(data, tuple) and data[0] == "npy":
        np.save(sink, npy_payload(data[1]), allow_pickle=False)
    else:
        arr = np.ascontiguousarray(data)
        if sys.byteorder == "big":  # pragma: no cover - all supported hosts are little-endian
            arr = arr.byteswap()
        flat = arr.reshape(-1).view(np.uint8)
        for lo in range(0, flat.size, _WRITE_CHUNK):
            sink.write(flat[lo:lo + _WRITE_CHUNK])


class AtomicFiles:
    """Files written whole (STYLE habit 12), all committed together; the one way the command writes.

    Each file goes to a temporary file beside its target (``.NAME.<random>.leakyops-tmp``), is
    flushed, ``fsync``-ed and checked (its size is what was written), and stays there until
    :meth:`commit` renames every file into place, in the order they were written, with Ctrl-C
    deferred; removals asked for with :meth:`remove` happen at their place in that order. On an
    error or an interrupt before the commit (:meth:`discard`, or leaving the ``with`` block by
    an exception) the temporary files are removed, and so are directories that
    :meth:`make_dirs` created: the targets keep what they held. A write error is a
    :class:`CLIError` (exit status 2) naming the target and the system's message.

    A target that exists and is not a regular file (``/dev/null``, ``/dev/stdout``, a pipe) is
    written directly, without a temporary file (there is nothing to rename over); a symbolic
    link is followed and the file it points to replaced.

    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     target = pathlib.Path(tmp) / "a.txt"
    ...     with AtomicFiles() as files:
    ...         files.write(target, "new")
    ...         print([p.name.endswith(".leakyops-tmp") for p in target.parent.iterdir()], target.exists())
    ...     print(target.read_text(), len(list(target.parent.iterdir())))
    [True] False
    new 1
    """

    def __init__(self):
        self._steps: list = []  # ("replace", target, temp) or ("remove", path), in commit order
        self._temps: dict = {}  # target -> (temp path or None for a direct write, fd or None, option)
        self._made_dirs: list = []
        self._done = False

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is None:
            self.commit()
        else:
            self.discard()
        return False

    # ----------------------------------------------------------------------- staging

    def make_dirs(self, path, option: str = "output directory") -> None:
        """Create ``path`` and its missing parents; removed again if nothing is committed."""
        path = Path(path)
        missing = []
        for p in (path, *path.parents):
            if p.exists():
                break
            missing.append(p)
        for p in reversed(missing):
            with _interrupts_deferred():  # a directory made is a directory recorded
                try:
                    p.mkdir()
                except FileExistsError:
                    continue
                except OSError as exc:
                    raise CLIError(f"cannot create {option} {p}: {_oserror(exc)}") from None
                self._made_dirs.append(p)
        check_interrupt()
        if not path.is_dir():
            raise CLIError(f"{option} {path} is not a directory")

    def reserve(self, path, option: str = "output") -> Path:
        """Check now that ``path`` can be written: its temporary file is created (an unwritable
        place, a missing directory, a directory in the way are errors before any work). A file
        already reserved under another option is an error too (``--json`` and ``--plot``
        naming one file, in any spelling), before any work rather than at the second write."""
        target = self._target(path, option)
        if target in self._temps:
            first = self._temps[target][2]
            if first != option:
                raise CLIError(f"{first} and {option} must be different files (both name {target})")
            return target
        with _interrupts_deferred():  # a temporary file created is a temporary file recorded
            self._temps[target] = self._open_temp(target, option)
        check_interrupt()
        return target

    def write(self, path, data, option: str = "output") -> None:
        """Write ``data`` (``str``, ``bytes``, an array as raw bytes, or ``("npy", array)``) to
        ``path``'s temporary file."""
        target = self.reserve(path, option)
        temp, fd, opt = self._temps[target]
        if fd is None:
            raise CLIError(f"{opt} {target}: written twice")
        sink = _Sink(fd)
        try:
            _write_payload(sink, data)
        except OSError as exc:
            raise CLIError(f"cannot write {target}: {_oserror(exc)}") from None
        self._finish(target, sink.written)

    @contextlib.contextmanager
    def open(self, path, option: str = "output"):
        """A binary file object on ``path``'s temporary file, for writers that want one (a plot)."""
        target = self.reserve(path, option)
        temp, fd, opt = self._temps[target]
        if fd is None:
            raise CLIError(f"{opt} {target}: written twice")
        fh = os.fdopen(os.dup(fd), "wb")
        try:
            with fh:
                yield fh
                fh.flush()
                size = fh.tell()
        except OSError as exc:
            raise CLIError(f"cannot write {target}: {_oserror(exc)}") from None
        self._finish(target, size)

    def remove(self, path) -> None:
        """Remove ``path`` at its place in the commit (a file of an old result the new one lacks)."""
        self._steps.append(("remove", Path(path)))

    # ----------------------------------------------------------------------- commit, discard

    def commit(self) -> None:
        """Rename every file into place and do the removals, in order, with Ctrl-C deferred."""
        unwritten = [str(t) for t, (_, fd, _) in self._temps.items() if fd is not None]
        try:
            check_interrupt()  # Ctrl-C came and was lost on its way: nothing is committed
            if unwritten:
                raise RuntimeError(f"AtomicFiles: reserved but not written: {', '.join(unwritten)}")
        except BaseException:
            self.discard()
            raise
        with _interrupts_deferred():
            try:
                dirs = set()
                for step in self._steps:
                    if step[0] == "remove":
                        with contextlib.suppress(FileNotFoundError):
                            step[1].unlink()
                        dirs.add(step[1].parent)
                    elif step[2] is not None:
                        target = step[1]
                        try:
                            os.replace(step[2], target)
                        except OSError as exc:
                            raise CLIError(f"cannot write {target}: {_oserror(exc)}") from None
                        self._temps.pop(target)
                        dirs.add(target.parent)
                for d in dirs:
                    _fsync_dir(d)
                self._made_dirs.clear()
                self._done = True
            finally:
                if not self._done:
                    self._remove_temps()

    def discard(self) -> None:
        """Remove the temporary files and the directories made; the targets are left as they were."""
        with _interrupts_deferred():
            self._remove_temps()
            for d in reversed(self._made_dirs):
                with contextlib.suppress(OSError):
                    d.rmdir()
            self._made_dirs.clear()
            self._done = True

    # ----------------------------------------------------------------------- internals

    @staticmethod
    def _target(path, option: str) -> Path:
        path = Path(path)
        if path.is_symlink():
            path = Path(os.path.realpath(path))
        if path.is_dir():
            raise CLIError(f"{option} {path}: is a directory")
        if not path.parent.is_dir():
            raise CLIError(f"cannot write {option} {path}: no such directory {path.parent}")
        return path

    @staticmethod
    def _open_temp(target: Path, option: str) -> tuple:
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise CLIError(f"cannot write {option} {target}: {_oserror(exc)}") from None
        if st is not None and not stat.S_ISREG(st.st_mode):  # a device or a pipe: written directly
            try:
                return None, os.open(target, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)), option
            except OSError as exc:
                raise CLIError(f"cannot write {option} {target}: {_oserror(exc)}") from None
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        for _ in range(100):
            temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}{_TEMP_SUFFIX}")
            try:
                fd = os.open(temp, flags, 0o666)
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise CLIError(f"cannot write {option} {target}: {_oserror(exc)}") from None
        else:  # pragma: no cover - 100 random names taken
            raise CLIError(f"cannot write {option} {target}: no free temporary name")
        if st is not None:
            with contextlib.suppress(OSError):  # the file replaced keeps its permissions
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
        return temp, fd, option

    def _finish(self, target: Path, size: int) -> None:
        """Flush to the disk and check the size; the file then waits for the commit."""
        temp, fd, opt = self._temps[target]
        try:
            try:
                os.fsync(fd)
            except OSError as exc:
                if temp is not None or exc.errno not in (errno.EINVAL, errno.EROFS, errno.ENOTSUP):
                    raise
            if temp is not None and os.fstat(fd).st_size != size:
                raise CLIError(f"cannot write {target}: {os.fstat(fd).st_size} bytes on disk,"
                               f" {size} written")
        except OSError as exc:
            raise CLIError(f"cannot write {target}: {_oserror(exc)}") from None
        finally:
            os.close(fd)
            self._temps[target] = (temp, None, opt)
        self._steps.append(("replace", target, temp))

    def _remove_temps(self) -> None:
        for temp, fd, _ in self._temps.values():
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if temp is not None:
                with contextlib.suppress(OSError):
                    temp.unlink()
        self._temps.clear()


def _fsync_dir(path: Path) -> None:
    """Make renames in ``path`` durable (best effort: not every system opens directories)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def array_format(path: Path, arr: np.ndarray):
    """What :meth:`AtomicFiles.write` gets for an array written to ``path`` (``.npy`` in any
    case: NumPy's format; any other name: raw little-endian), and its description."""
    if path.suffix.lower() == ".npy":
        return ("npy", arr), ("npy, bfloat16 bits as uint16" if arr.dtype == BF16 else "npy")
    return arr, "raw little-endian"


# --------------------------------------------------------------------------- reading


@dataclasses.dataclass
class Source:
    """An array in a file, readable whole or in chunks of consecutive C-order elements."""

    path: Path
    dtype: np.dtype  # the elements' dtype (native byte order; bfloat16 when stored as bits)
    shape: tuple  # the file's shape (.npy), or the shape raw data was read with
    count: int
    offset: int = 0  # where the data starts
    file_dtype: np.dtype | None = None  # as stored, when it differs from ``dtype``
    fortran: bool = False  # a Fortran-ordered .npy (read whole: it cannot be streamed in C order)
    encoding: str = ""  # a note on how the data is stored, e.g. "bfloat16 bits as uint16"

    def _convert(self, raw: np.ndarray) -> np.ndarray:
        if self.file_dtype is None:
            return raw
        if self.dtype == BF16:  # '|V2' or uint16 bits (in either byte order)
            bits = raw.view(np.uint8).view(np.dtype("<u2")) if raw.dtype.kind == "V" else raw
            return bits.astype(np.dtype("=u2"), copy=False).view(BF16)
        return raw.astype(self.dtype)

    def _read(self, fh, count: int) -> np.ndarray:
        raw = np.fromfile(fh, dtype=self.file_dtype or self.dtype, count=count)
        if raw.size != count:
            raise CLIError(f"{self.path}: the file ended early (it changed while being read?)")
        return self._convert(raw)

    def chunks(self, size: int = CHUNK):
        """Consecutive flat chunks of at most ``size`` elements, in C order."""
        if self.fortran:
            flat = self.read_all().reshape(-1)
            for lo in range(0, self.count, size):
                yield flat[lo:lo + size]
            return
        try:
            fh = open(self.path, "rb")
        except OSError as exc:
            raise CLIError(f"{self.path}: {exc.strerror or exc}") from None
        with fh:
            fh.seek(self.offset)
            for lo in range(0, self.count, size):
                yield self._read(fh, min(size, self.count - lo))

    def read_all(self) -> np.ndarray:
        """The whole array, in the file's shape."""
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            arr = self._read(fh, self.count)
        if self.fortran:
            return np.ascontiguousarray(arr.reshape(self.shape[::-1]).T)
        return arr.reshape(self.shape)


def _check_file(path: Path, what: str) -> None:
    if not path.exists():
        raise CLIError(f"{what} {path}: no such file")
    if path.is_dir():
        raise CLIError(f"{what} {path}: is a directory")


def raw_source(path: Path, dtype: np.dtype, shape: tuple, what: str) -> Source:
    """Raw little-endian data of ``dtype``; the file must hold exactly ``shape``'s elements."""
    _check_file(path, what)
    size = path.stat().st_size
    count = math.prod(shape)
    expected = count * dtype.itemsize
    if size != expected:
        raise CLIError(
            f"{what} {path}: {size} bytes, expected {expected}"
            f" ({count} {dtype_name(dtype)} elements of shape {list(shape)})"
        )
    file_dtype = None
    if sys.byteorder == "big":  # pragma: no cover - all supported hosts are little-endian
        file_dtype = dtype.newbyteorder("<")
    return Source(path, dtype, tuple(shape), count, file_dtype=file_dtype)


def _npy_header(fh, path: Path, what: str):
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            return fmt.read_array_header_1_0(fh)
        if version == (2, 0):
            return fmt.read_array_header_2_0(fh)
    except (ValueError, OSError, EOFError) as exc:
        raise CLIError(f"{what} {path}: not a readable .npy file ({first_line(exc)})") from None
    return None  # version 3.0 (a UTF-8 header): read with np.load


def npy_source(path: Path, what: str, want: np.dtype | None = None) -> Source:
    """A ``.npy`` file. ``want`` (the expected dtype) lets a ``uint16`` file be read as bfloat16 bits.

    The ``|V2`` form (``np.save`` of an ``ml_dtypes.bfloat16`` array) is always bfloat16.
    """
    _check_file(path, what)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise CLIError(f"{what} {path}: {exc.strerror or exc}") from None
    with fh:
        header = _npy_header(fh, path, what)
        offset = fh.tell()
    if header is None:
        return _npy_source_v3(path, what, want)
    shape, fortran, fdt = header
    return _npy_finish(path, what, want, tuple(int(d) for d in shape), bool(fortran), np.dtype(fdt), offset)


def _npy_source_v3(path: Path, what: str, want) -> Source:  # pragma: no cover - rare format
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise CLIError(f"{what} {path}: not a readable .npy file ({first_line(exc)})") from None
    return _npy_finish(path, what, want, arr.shape, not arr.flags.c_contiguous and arr.ndim > 1,
                       arr.dtype, arr.offset)


def _npy_finish(path, what, want, shape, fortran, fdt, offset) -> Source:
    if fdt.hasobject:
        raise CLIError(f"{what} {path}: holds Python objects, not numbers")
    count = math.prod(shape)
    encoding = ""
    if fdt.kind == "V" and fdt.itemsize == 2 and fdt.fields is None:
        dtype, encoding = BF16, "bfloat16 as NumPy's opaque '|V2'"
    elif fdt.kind == "u" and fdt.itemsize == 2 and want == BF16:
        dtype, encoding = BF16, "bfloat16 bits as uint16"
    elif fdt.fields is not None or fdt.subdtype is not None:
        raise CLIError(f"{what} {path}: a structured array ({fdt}), not plain numbers")
    else:
        dtype = fdt.newbyteorder("=")
    size = path.stat().st_size
    if size < offset + count * fdt.itemsize:
        raise CLIError(
            f"{what} {path}: truncated ({size} bytes; the header announces {count} elements of {fdt.itemsize} bytes)"
        )
    file_dtype = None if fdt == dtype else fdt
    return Source(path, dtype, shape, count, offset=offset, file_dtype=file_dtype,
                  fortran=fortran and len(shape) > 1, encoding=encoding)


def source(path: Path, what: str, *, dtype: np.dtype | None, shape: tuple | None) -> Source:
    """A ``.npy`` file, or raw data of ``dtype`` and ``shape`` for any other name."""
    if path.suffix.lower() == ".npy":
        return npy_source(path, what, dtype)
    if dtype is None or shape is None:
        raise CLIError(f"{what} {path}: raw data has no dtype or shape of its own (give --dtype and --shape)")
    return raw_source(path, dtype, shape, what)


# --------------------------------------------------------------------------- progress


def _human(n: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(int(n))


def _duration(seconds: float) -> str:
    """``42 s``, ``12 min``, ``1 h 5 min``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60} min"


_warned: set = set()


def progress_after() -> float:
    """Seconds before progress appears: ``LEAKYOPS_PROGRESS_AFTER`` (a number >= 0; ``inf``:
    never), else :data:`PROGRESS_AFTER`; a value that is none of these is said once, in one line."""
    raw = os.environ.get("LEAKYOPS_PROGRESS_AFTER", "").strip()
    if not raw:
        return PROGRESS_AFTER
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if value >= 0:  # (not NaN)
        return value
    if raw not in _warned:
        _warned.add(raw)
        warn_setting(f"LEAKYOPS_PROGRESS_AFTER={raw!r} is not a number of seconds >= 0;"
                     f" using {PROGRESS_AFTER:g}", one_line=True)
    return PROGRESS_AFTER


class Progress:
    """Progress on stderr for a long run: shown after ``PROGRESS_AFTER`` seconds, only on a terminal.

    ``advance(n)`` counts done units of ``total``; ``close()`` erases the line. ``show=False``
    turns it off (``bench --no-progress``). Each call also reports a Ctrl-C that was swallowed
    on its way up (:func:`check_interrupt`).
    """

    def __init__(self, prog: str, total: int, unit: str = "elements", *, stream=None, show: bool = True,
                 time_left: bool = False):
        self.stream = sys.stderr if stream is None else stream
        try:
            self.enabled = show and bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self.enabled = False
        self.after = progress_after()
        self.prog, self.total, self.unit, self.time_left = prog, max(int(total), 0), unit, time_left
        self.done = 0
        self.label = ""
        self.t0 = time.monotonic()
        self.drawn_at = -math.inf
        self.width = 0

    def step(self, label: str) -> None:
        """Name what is being done now (shown with the next line drawn)."""
        check_interrupt()
        self.label = label
        self._maybe_draw(force=True)

    def advance(self, n: int) -> None:
        check_interrupt()
        self.done += int(n)
        self._maybe_draw()

    def _maybe_draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.t0 < self.after or (not force and now - self.drawn_at < 0.2):
            return
        self.drawn_at = now
        pct = min(100.0, 100.0 * self.done / self.total) if self.total else 100.0
        elapsed = now - self.t0
        left = ""
        if self.time_left and 5.0 <= pct < 100.0:  # the rate so far, once there is one
            left = f", about {_duration(elapsed * (100.0 - pct) / pct)} left"
        text = (f"{self.prog}: {self.label + ' ' if self.label else ''}{pct:3.0f}%"
                f" ({_human(self.done)} of {_human(self.total)} {self.unit}, {elapsed:.0f} s{left})")
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def close(self) -> None:
        if self.width:
            self._maybe_draw(force=True)  # the final state, briefly, then erase the line
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
