"""Files and terminal output of the ``leakyops`` command.

- ``.npy`` and raw ``.bin`` arrays, read whole or in chunks (``verify`` streams, so its memory
  is one chunk, not one output);
- bfloat16 in ``.npy`` files: written as the raw bits in ``uint16`` (plain NumPy reads them),
  read back from that form and from the ``|V2`` form that NumPy writes for
  ``ml_dtypes.bfloat16`` arrays;
- files written under exactly the name given;
- an output file opened before any work (so an unwritable path is an error up front);
- progress on stderr for long runs, only when stderr is a terminal.

No operator arithmetic here.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

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


def first_line(exc) -> str:
    """The first line of an exception's message (its type's name if it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# --------------------------------------------------------------------------- writing


def npy_payload(arr: np.ndarray) -> np.ndarray:
    """What goes into a ``.npy`` file for ``arr``: bfloat16 as its bits in ``uint16``."""
    arr = np.ascontiguousarray(arr)
    return arr.view(np.uint16) if arr.dtype == BF16 else arr


def save_npy(path: Path, arr: np.ndarray) -> None:
    """Write ``arr`` in NumPy's format to exactly ``path`` (``np.save`` would add ``.npy``)."""
    with open(path, "wb") as fh:
        np.save(fh, npy_payload(arr), allow_pickle=False)


def write_raw(path: Path, arr: np.ndarray) -> None:
    """Raw little-endian, C order, no header: what the vendors' sample programs read."""
    data = np.ascontiguousarray(arr)
    if sys.byteorder == "big":  # pragma: no cover - all supported hosts are little-endian
        data = data.byteswap()
    with open(path, "wb") as fh:
        data.tofile(fh)


def write_array(path: Path, arr: np.ndarray) -> str:
    """``.npy`` (any case) → NumPy format, anything else → raw; returns the format written."""
    if path.suffix.lower() == ".npy":
        save_npy(path, arr)
        return "npy, bfloat16 bits as uint16" if arr.dtype == BF16 else "npy"
    write_raw(path, arr)
    return "raw little-endian"


class ReportFile:
    """A file opened for writing before any work; written (replaced) at the end.

    Opening it up front turns an unwritable path into an error before anything else runs.
    If the work then fails, :meth:`discard` removes the file if this object created it.
    """

    def __init__(self, path, option: str):
        self.path = Path(path)
        if self.path.is_dir():
            raise CLIError(f"{option} {self.path}: is a directory")
        existed = self.path.exists()
        try:
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o666)
        except OSError as exc:
            raise CLIError(f"cannot write {option} {self.path}: {exc.strerror or exc}") from None
        self.created = not existed

    def write(self, text: str) -> None:
        data = text.encode()
        try:
            os.ftruncate(self.fd, 0)
            os.lseek(self.fd, 0, os.SEEK_SET)
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]
        except OSError as exc:
            raise CLIError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        finally:
            os.close(self.fd)

    def discard(self) -> None:
        os.close(self.fd)
        if self.created:
            try:
                self.path.unlink()
            except OSError:  # pragma: no cover - removed by someone else meanwhile
                pass


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


class Progress:
    """Progress on stderr for a long run: shown after ``PROGRESS_AFTER`` seconds, only on a terminal.

    ``advance(n)`` counts done units of ``total``; ``close()`` erases the line.
    """

    def __init__(self, prog: str, total: int, unit: str = "elements", *, stream=None):
        self.stream = sys.stderr if stream is None else stream
        try:
            self.enabled = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self.enabled = False
        try:
            self.after = float(os.environ.get("LEAKYOPS_PROGRESS_AFTER", PROGRESS_AFTER))
        except ValueError:
            self.after = PROGRESS_AFTER
        self.prog, self.total, self.unit = prog, max(int(total), 0), unit
        self.done = 0
        self.label = ""
        self.t0 = time.monotonic()
        self.drawn_at = -math.inf
        self.width = 0

    def step(self, label: str) -> None:
        """Name what is being done now (shown with the next line drawn)."""
        self.label = label
        self._maybe_draw(force=True)

    def advance(self, n: int) -> None:
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
        text = (f"{self.prog}: {self.label + ' ' if self.label else ''}{pct:3.0f}%"
                f" ({_human(self.done)} of {_human(self.total)} {self.unit}, {now - self.t0:.0f} s)")
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def close(self) -> None:
        if self.width:
            self._maybe_draw(force=True)  # the final state, briefly, then erase the line
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
