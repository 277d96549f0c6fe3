"""PyTorch front-end: leakyops' kernels as PyTorch custom operators and modules.

Importing this module registers five operators with ``torch.library.custom_op``
under the namespace ``leakyops`` (they run on CPU tensors, without copies, for
``float16``, ``bfloat16``, ``float32`` and ``float64``)::

    leakyops::leaky_relu(Tensor self, float negative_slope=0.01) -> Tensor
    leakyops::leaky_relu_(Tensor(a!) self, float negative_slope=0.01) -> ()
    leakyops::leaky_relu_backward(Tensor grad_output, Tensor self,
                                  float negative_slope, bool self_is_result) -> Tensor
    leakyops::prelu(Tensor self, Tensor weight) -> Tensor
    leakyops::prelu_backward(Tensor grad_output, Tensor self, Tensor weight)
        -> (Tensor, Tensor)

with fake (meta) implementations for ``torch.compile``/``torch.export`` and
autograd formulas, plus drop-ins for ``torch.nn.functional.leaky_relu``/``prelu``
and ``torch.nn.LeakyReLU``/``PReLU``::

    y = x if x > 0 else negative_slope * x          (leaky_relu)
    y = x if x > 0 else weight[c] * x               (prelu, c = index along dim 1)

Results are bit-identical to PyTorch's CPU kernels (half types are computed in
float32 and rounded once); gradients are equal (``prelu``'s weight gradient is a
deterministic reduction, equal up to summation order).

>>> import torch
>>> import leakyops.torch as lt
>>> lt.leaky_relu(torch.tensor([-2.0, 0.0, 3.0]), 0.5)
tensor([-1.,  0.,  3.])
>>> m = lt.PReLU()
>>> m
PReLU(num_parameters=1)
>>> m(torch.tensor([-4.0, 4.0])).tolist()
[-1.0, 4.0]

Only CPU tensors are accepted: a tensor on any other device (including
``meta``) is a ``RuntimeError`` naming the device; a dtype other than the four
above is a ``TypeError`` naming it. See ``docs/torch.md``.
"""

# NOTE: this file is ``leakyops/torch.py``; ``import torch`` below is an absolute
# import and resolves to PyTorch itself, never to this module.
from __future__ import annotations

import ctypes
import os
import sys
from typing import TYPE_CHECKING

import ml_dtypes
import numpy as np
import torch
from torch import Tensor

from leakyops import _config, _core, _threads

__all__ = [
    "LeakyReLU",
    "PReLU",
    "leaky_relu",
    "leaky_relu_",
    "leaky_relu_backward",
    "prelu",
    "prelu_backward",
]

NAMESPACE = "leakyops"
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_SUPPORTED_NAMES = ", ".join(str(d) for d in SUPPORTED_DTYPES)

# --------------------------------------------------------------------------
# Checks shared by the real kernels and the fake (meta) kernels, so that
# eager mode, meta tensors and torch.compile report the same errors.
# They only look at metadata (device, dtype, shape), never at data.
# --------------------------------------------------------------------------


def _check_type(fname: str, name: str, t: object) -> None:
    """A dense tensor: checked by the public functions before anything is dispatched (torch
    would send a sparse, mkldnn or nested tensor to a backend the operators do not have, with
    an error of its own; so the operators' kernels never meet one)."""
    if not isinstance(t, Tensor):
        _check_instance(fname, name, t)
    if t.layout is not torch.strided or t.is_nested:
        kind = "nested" if t.is_nested else str(t.layout).replace("torch.", "").lstrip("_")
        raise TypeError(
            f"{fname}: '{name}' is a {kind} tensor, but leakyops takes dense (strided) "
            f"tensors only; convert it first (.to_dense(), or unbind() a nested tensor)"
        )


def _check_instance(fname: str, name: str, t: object) -> None:
    # (the checks above test isinstance before they call this: one Python call fewer each, on
    # a path that runs cold after every convolution of a model's step; docs/benchmarks.md,
    # stop 43)
    if not isinstance(t, Tensor):
        raise TypeError(
            f"{fname}: '{name}' must be a torch.Tensor, got {type(t).__name__}"
        )


def _check_tensor(fname: str, name: str, t: object) -> None:
    if not isinstance(t, Tensor):
        _check_instance(fname, name, t)  # (raises)
    if not t.is_cpu:  # (as device.type != "cpu", fake tensors included; 0.05 µs, not 0.27)
        raise RuntimeError(
            f"{fname}: '{name}' is on device '{t.device}', but leakyops runs on "
            f"CPU tensors only; move it with .cpu() (or use torch's own operator "
            f"on that device)"
        )
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(
            f"{fname}: '{name}' has dtype {t.dtype}, which is not supported; "
            f"supported dtypes are {_SUPPORTED_NAMES}"
        )


def _check_no_internal_overlap(fname: str, t: Tensor) -> None:
    # The same rule as PyTorch's in-place ops: a broadcast (zero-stride) view
    # cannot be written in place, several elements share one memory location (an empty
    # tensor has no elements to share one: any strides are fine there).
    strides = t.stride()
    if 0 in strides and t.numel() and any(st == 0 and sz > 1 for st, sz in zip(strides, t.shape)):
        raise RuntimeError(
            f"{fname}: unsupported operation: more than one element of the "
            f"written-to tensor refers to a single memory location (strides "
            f"{tuple(t.stride())}, shape {tuple(t.shape)}); clone() it first"
        )


def _check_prelu(fname: str, x: Tensor, weight: Tensor) -> None:
    # PyTorch's rules for F.prelu (aten/src/ATen/native/Activation.cpp).
    _check_tensor(fname, "input", x)
    _check_tensor(fname, "weight", weight)
    if weight.dtype != x.dtype:
        raise TypeError(
            f"{fname}: 'weight' has dtype {weight.dtype} but 'input' has dtype "
            f"{x.dtype}; they must be equal (no type promotion)"
        )
    if weight.dim() > 1:
        raise ValueError(
            f"{fname}: 'weight' must be a scalar or a 1-D tensor, got "
            f"{weight.dim()} dimensions (shape {tuple(weight.shape)})"
        )
    if weight.numel() != 1:
        if x.dim() == 0:
            raise ValueError(
                f"{fname}: a 0-d 'input' needs a 'weight' with one element, got "
                f"{weight.numel()} elements"
            )
        if x.dim() == 1:
            raise ValueError(
                f"{fname}: 'weight' has {weight.numel()} elements but a 1-D "
                f"'input' has a single channel; it must have 1 element"
            )
        channels = x.shape[1]
        if weight.numel() != channels:
            raise ValueError(
                f"{fname}: 'weight' has {weight.numel()} elements but 'input' has "
                f"{channels} channels (size of dim 1 of shape {tuple(x.shape)}); "
                f"it must have 1 or {channels} elements"
            )


def _check_prelu_backward(fname: str, grad_output: Tensor, x: Tensor, weight: Tensor) -> None:
    _check_prelu(fname, x, weight)
    _check_tensor(fname, "grad_output", grad_output)
    if grad_output.dtype != x.dtype:
        raise TypeError(
            f"{fname}: 'grad_output' has dtype {grad_output.dtype} but 'input' has "
            f"dtype {x.dtype}; they must be equal (no type promotion)"
        )
    if grad_output.shape == x.shape:  # (torch.broadcast_shapes is slow next to a small call)
        return
    try:
        broadcast = torch.broadcast_shapes(grad_output.shape, x.shape)
    except RuntimeError:
        broadcast = None
    if broadcast != x.shape:
        raise ValueError(
            f"{fname}: 'grad_output' of shape {tuple(grad_output.shape)} does "
            f"not broadcast to the input's shape {tuple(x.shape)}"
        )


def _backward_result(fname: str, grad_output: Tensor, x: Tensor):
    """Shape, dtype and a layout template of leaky_relu_backward's result."""
    if grad_output.shape == x.shape and grad_output.dtype == x.dtype:  # the common case, at
        return x.shape, x.dtype, x  # at once (torch.broadcast_shapes is slow next to a small call)
    try:
        shape = torch.broadcast_shapes(grad_output.shape, x.shape)
    except RuntimeError:
        raise ValueError(
            f"{fname}: 'grad_output' of shape {tuple(grad_output.shape)} and "
            f"'self' of shape {tuple(x.shape)} do not broadcast"
        ) from None
    dtype = torch.promote_types(grad_output.dtype, x.dtype)
    # Keep the input's memory format (channels-last, permuted...), like
    # PyTorch's TensorIterator, whose first input is `self`.
    template = x if x.shape == shape else grad_output if grad_output.shape == shape else None
    return shape, dtype, template


def _empty_result(shape, dtype, template, device):
    if template is not None:
        return torch.empty_like(template, dtype=dtype, device=device)
    return torch.empty(shape, dtype=dtype, device=device)


# --------------------------------------------------------------------------
# Fresh outputs on transparent huge pages. PyTorch's CPU allocator maps a large
# tensor's memory in 4 KiB pages, each faulted in on its first write: a fresh
# (64, 64, 56, 56) float32 output cost about 13k page faults, 10 ms of a 14 ms
# leaky_relu. NumPy asks the kernel for huge pages on arrays of 4 MiB or more
# (madvise(MADV_HUGEPAGE)); leakyops.torch asks the same for the outputs it
# allocates of 32 MiB or more (_HUGE_PAGE_BYTES), before the kernel writes them
# (the core's own arrays are NumPy's).
# --------------------------------------------------------------------------

#: Outputs of at least this many bytes are advised to huge pages: glibc's largest mmap
#: threshold (64-bit). Smaller blocks come from the heap once one of their size has been
#: freed (the threshold rises to it), their pages already faulted in, and the advice was then
#: a system call for nothing: (32, 256, 14, 14) float32 (6.4 MB), each call's output back at
#: the heap's address, madvise 8 µs a call here (median); a leaky_relu 16 µs slower
#: with it (median of 300, docs/benchmarks.md, stop 48).
#: From 32 MiB every block is a fresh mapping (the float32 (64, 64, 56, 56) output, 51 MB,
#: at the same address each call, no page resident), where the advice saves the faults.
_HUGE_PAGE_BYTES = 32 << 20
_MADV_HUGEPAGE = 14
_PAGE = 4096


def _huge_page_advice():
    """libc's ``madvise``, where Linux's transparent huge pages are enabled (``always`` or
    ``madvise``) and ``LEAKYOPS_TORCH_HUGE_PAGES`` is not ``0``; else None."""
    if not sys.platform.startswith("linux") or os.environ.get("LEAKYOPS_TORCH_HUGE_PAGES") == "0":
        return None
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            if "[never]" in f.read():
                return None
        advise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    advise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    advise.restype = ctypes.c_int
    return advise


_madvise = _huge_page_advice()


def _fresh(t: Tensor) -> Tensor:
    """``t``, a tensor just allocated, its whole pages advised to huge pages where it holds
    ``_HUGE_PAGE_BYTES`` or more (a hint: an error is ignored, as NumPy ignores it)."""
    if _madvise is not None:
        nbytes = t.numel() * t.element_size()
        if nbytes >= _HUGE_PAGE_BYTES:
            start = t.data_ptr()
            lo, hi = -(-start // _PAGE) * _PAGE, (start + nbytes) // _PAGE * _PAGE
            if hi > lo:
                _madvise(lo, hi - lo, _MADV_HUGEPAGE)
    return t


# --------------------------------------------------------------------------
# Zero-copy bridges between CPU tensors and NumPy arrays.
# --------------------------------------------------------------------------


def _to_numpy(t: Tensor) -> np.ndarray:
    """A NumPy view of a CPU tensor's memory (no copy, same strides); a tensor with the
    negative bit set (a lazily negated view, e.g. ``c.conj().imag``) as a copy of its values,
    as PyTorch's own operators resolve it (outputs are never such views: see leaky_relu_)."""
    if t.requires_grad:  # (numpy() refuses such a tensor; detach() costs 0.3 µs)
        t = t.detach()
    try:
        if t.dtype is not torch.bfloat16:  # (_numpy_view's common case, without its call)
            return t.numpy()
        return _numpy_view(t)
    except RuntimeError:  # (asked only then: the common call pays nothing for it)
        if not t.is_neg():
            raise
    return _numpy_view(t.resolve_neg())


def _numpy_view(t: Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        # NumPy has no bfloat16 of its own and torch cannot export one:
        # reinterpret the 16-bit storage as int16, then as ml_dtypes.bfloat16.
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _from_numpy(a: np.ndarray) -> Tensor:
    """A tensor sharing the memory of a NumPy array produced by the core."""
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


# --------------------------------------------------------------------------
# Threads: PyTorch's own. In a torch program PyTorch's OpenMP threads spin for
# a while after each of its operators; leakyops' own workers would contend
# with them for the CPUs (a large call took twice its time right after one
# of PyTorch's). The kernels' parts run on PyTorch's threads instead, one
# OpenMP parallel region a call (see _threads.OpenMPPool).
# --------------------------------------------------------------------------

#: The OpenMP runtimes leakyops can run its parts on (their GNU entry points: libgomp's own,
#: and LLVM's and Intel's compatible ones).
_OPENMP_LIBRARIES = ("libgomp", "libomp", "libiomp5")
_OPENMP_ENTRIES = ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads",
                   "omp_get_max_threads")


def _mapped_openmp_runtimes() -> list[str]:
    """The files of the OpenMP runtimes this process has loaded (Linux: /proc/self/maps)."""
    found = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:  # (address, permissions, offset, device, inode, path)
                fields = line.split(maxsplit=5)
                path = fields[5].strip() if len(fields) == 6 else ""
                name = os.path.basename(path)
                if name.startswith(_OPENMP_LIBRARIES) and ".so" in name and path not in found:
                    found.append(path)
    except OSError:
        return []
    return found


def _torch_openmp_pool() -> _threads.OpenMPPool | None:
    """PyTorch's OpenMP runtime as the pool of leakyops.torch's threaded calls, or None (then
    they run on leakyops' own team): on Linux, where PyTorch's parallel backend is OpenMP and
    the runtime it loaded is found (the one among PyTorch's own files, or the only one loaded)
    with the four entry points, and ``LEAKYOPS_TORCH_THREADS`` is not ``team``."""
    if _config.torch_threads() != "openmp" or not sys.platform.startswith("linux"):
        return None
    try:
        if "parallel backend: OpenMP" not in torch.__config__.parallel_info():
            return None
    except Exception:  # noqa: BLE001 - an old or unusual build: leakyops' own team then
        return None
    runtimes = _mapped_openmp_runtimes()
    home = os.path.dirname(os.path.abspath(torch.__file__))
    own = [p for p in runtimes if p.startswith((home + os.sep, home + ".libs" + os.sep))]
    if len(own) != 1 and len(runtimes) != 1:
        return None
    path = own[0] if len(own) == 1 else runtimes[0]
    try:  # (the library loaded already: RTLD_NOLOAD gives its handle, or fails)
        lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 4) | ctypes.RTLD_LOCAL)
        entries = [ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                   for name in _OPENMP_ENTRIES]
    except (OSError, AttributeError):
        return None
    if not all(entries):
        return None
    return _threads.openmp_pool(*entries)


#: leakyops.torch's threaded calls run here (None: on leakyops' own team).
_POOL = _torch_openmp_pool()
_POOL_ADDR = _POOL.addr if _POOL is not None else 0


# --------------------------------------------------------------------------
# The element-wise operators on a tensor's memory. Right after another
# operator has streamed its data through the caches, every line of Python a
# call runs is a cache miss: a NumPy view of each tensor (about 1 µs each,
# warm), the core's checks and the thread routing cost (16, 64, 32, 32)
# float32 leaky_relu_ 24 µs against F.leaky_relu_ (docs/benchmarks.md, stop
# 51). Where the tensors are plain, C-contiguous and of one supported dtype,
# leaky_relu, leaky_relu_ and leaky_relu_backward hand their addresses to the
# core instead (_core.rows_at: the same kernels, threads and bits), and so
# does prelu with one shared slope (the core runs it on leaky_relu's rows).
# --------------------------------------------------------------------------

#: The storage dtype of each supported torch dtype (the core's rows_at takes it, and the
#: slopes' compute types below come from it).
_STORAGE = {torch.float16: np.dtype(np.float16), torch.bfloat16: np.dtype(ml_dtypes.bfloat16),
            torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64)}


def _plain_memory(t: Tensor) -> bool:
    """Whether the kernels may take ``t`` by its address: a plain tensor (or parameter),
    C-contiguous, without the negative bit (whose memory holds the values negated)."""
    return (type(t) is Tensor or type(t) is _Parameter) and t.is_contiguous() and not t.is_neg()


def _dense_memory(t: Tensor) -> bool:
    """Whether the kernels may take ``t``'s elements as one run of memory in its own order:
    as ``_plain_memory``, but C-contiguous or channels last (4-D or 5-D). ``empty_like``
    gives such a tensor's strides again, so an element-wise result lies where its input
    does. Where dim 1 has more than one element, ``t.stride(1)`` is then a channel's run of
    elements (the product of the sizes after it in memory order: the contiguity tests pass
    over only the strides of size-1 dimensions)."""
    return (type(t) is Tensor or type(t) is _Parameter) and not t.is_neg() and (
        t.is_contiguous() or t.is_contiguous(memory_format=_CHANNELS_LAST)
        or t.is_contiguous(memory_format=_CHANNELS_LAST_3D))


_CHANNELS_LAST, _CHANNELS_LAST_3D = torch.channels_last, torch.channels_last_3d


def _on_torch_threads(call, *args, **kwargs):
    """``call(*args, **kwargs)`` (a core function) with its threaded parts on PyTorch's
    threads (``_POOL``)."""
    prev = _threads.run_on(_POOL)
    try:
        return call(*args, **kwargs)
    finally:
        _threads.restore_route(prev)


# --------------------------------------------------------------------------
# The operators.
# --------------------------------------------------------------------------

_FN = "leakyops.torch."


#: The type the kernels compute each supported dtype's results in (the core's rule): a
#: slope is rounded once to it
_SLOPE_DTYPES = {t: _core.compute_dtype(n) for t, n in _STORAGE.items()}


def _negative_slope(fname: str, value, dtype: torch.dtype) -> float:
    """A slope as the Python float the custom operators take: one the kernels round exactly
    as the core's slope conversion rounds ``value`` for a ``dtype`` result, with the core's
    rules (a string is a TypeError, not parsed)."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"{fname}: negative_slope must be a number, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    if type(value) is float:  # the kernels round it once (to float32, or keep it as float64)
        return value
    return _rounded_slope(fname, value, dtype)


@torch.compiler.assume_constant_result
def _rounded_slope(fname: str, value, dtype: torch.dtype) -> float:
    """Any other real slope rounded once, from its exact value, to the type the kernels
    compute a ``dtype`` result in (an int beyond 2**53 would otherwise be rounded twice: to a
    float, then to float32). Traced, it runs once at trace time (the slope is a constant)."""
    # (another dtype is refused by the kernel's checks; its slope is rounded as float64's)
    return _core.slope_value(value, fname, dtype=_SLOPE_DTYPES.get(dtype, np.float64))

# _EMPTY_NOTE: an empty result needs no kernel call: it returns right after
# the front-end's own checks.


# The bodies of the operators are plain functions: the custom operators call them (for
# torch.compile, torch.ops and opcheck), and so does the eager path below (see _eager),
# which skips the custom-op dispatch.


def _leaky_relu_kernel(self: Tensor, negative_slope: float) -> Tensor:
    fname = _FN + "leaky_relu"
    _check_tensor(fname, "input", self)
    out = _fresh(torch.empty_like(self))
    n = out.numel()
    if n == 0:  # see _EMPTY_NOTE
        return out
    if type(negative_slope) is float and _dense_memory(self) and _core.rows_at(
            "leaky_relu", _STORAGE[self.dtype], n, self.data_ptr(), out.data_ptr(), 0,
            negative_slope, _POOL_ADDR):  # (out: empty_like's, the same strides)
        return out
    _on_torch_threads(
        _core.leaky_relu_impl,
        _to_numpy(self), negative_slope, out=_to_numpy(out), compare=">", fname=fname
    )
    return out


@torch.library.custom_op(f"{NAMESPACE}::leaky_relu", mutates_args=(), device_types="cpu")
def _leaky_relu_op(self: Tensor, negative_slope: float = 0.01) -> Tensor:
    return _leaky_relu_kernel(self, negative_slope)


@_leaky_relu_op.register_fake
def _(self, negative_slope=0.01):
    _check_tensor(_FN + "leaky_relu", "input", self)
    return torch.empty_like(self)


@torch.library.custom_op(
    f"{NAMESPACE}::leaky_relu_", mutates_args=("self",), device_types="cpu"
)
def _leaky_relu_inplace_op(self: Tensor, negative_slope: float = 0.01) -> None:
    # A mutable operator returning nothing (not torch.Tag.inplace, which only
    # torch >= 2.13 accepts for custom ops); leaky_relu_() below returns `self`.
    _leaky_relu_inplace_kernel(self, negative_slope)


def _leaky_relu_inplace_kernel(self: Tensor, negative_slope: float) -> None:
    """The in-place operator's body: ``self`` overwritten through its NumPy view (the caller
    tells autograd: the operator's dispatch, ``mark_dirty``, or ``_increment_version``)."""
    fname = _FN + "leaky_relu_"
    _check_tensor(fname, "input", self)
    n = self.numel()
    if n == 0:  # see _EMPTY_NOTE
        _check_no_internal_overlap(fname, self)
        return
    if type(negative_slope) is float and _dense_memory(self) and _core.rows_at(
            "leaky_relu_", _STORAGE[self.dtype], n, self.data_ptr(), 0, 0,
            negative_slope, _POOL_ADDR):  # (dense: no internal overlap)
        return
    _check_no_internal_overlap(fname, self)
    _on_torch_threads(_core.leaky_relu_inplace_impl, _to_numpy(self), negative_slope,
                      compare=">", fname=fname)


@_leaky_relu_inplace_op.register_fake
def _(self, negative_slope=0.01):
    fname = _FN + "leaky_relu_"
    _check_tensor(fname, "input", self)
    _check_no_internal_overlap(fname, self)


def _leaky_relu_backward_kernel(
    grad_output: Tensor, self: Tensor, negative_slope: float, self_is_result: bool
) -> Tensor:
    fname = _FN + "leaky_relu_backward"
    _check_tensor(fname, "grad_output", grad_output)
    _check_tensor(fname, "self", self)
    if self_is_result is not False and not (self_is_result is True and type(negative_slope)
                                            is float and negative_slope >= 0.0):
        _core.check_self_is_result(negative_slope, self_is_result, fname)  # (the rule's test)
    same = grad_output.shape == self.shape and grad_output.dtype == self.dtype
    if same:  # (the common case of _backward_result and _empty_result, without a call)
        out = torch.empty_like(self)
    else:
        out = _empty_result(*_backward_result(fname, grad_output, self), self.device)
    out = _fresh(out)
    n = out.numel()
    if n == 0:  # see _EMPTY_NOTE
        return out
    if same and type(negative_slope) is float and (
            _plain_memory(self) and _plain_memory(grad_output) or _dense_memory(self)
            and _dense_memory(grad_output) and grad_output.stride() == self.stride()) \
            and _core.rows_at(
                "leaky_relu_backward", _STORAGE[self.dtype], n, grad_output.data_ptr(),
                self.data_ptr(), out.data_ptr(), negative_slope, _POOL_ADDR):
        return out
    _on_torch_threads(
        _core.leaky_relu_backward_impl,
        _to_numpy(grad_output),
        _to_numpy(self),
        negative_slope,
        self_is_result,
        out=_to_numpy(out),
        compare=">",
        fname=fname,
    )
    return out


@torch.library.custom_op(
    f"{NAMESPACE}::leaky_relu_backward", mutates_args=(), device_types="cpu"
)
def _leaky_relu_backward_op(
    grad_output: Tensor, self: Tensor, negative_slope: float, self_is_result: bool
) -> Tensor:
    return _leaky_relu_backward_kernel(grad_output, self, negative_slope, self_is_result)


@_leaky_relu_backward_op.register_fake
def _(grad_output, self, negative_slope, self_is_result):
    fname = _FN + "leaky_relu_backward"
    _check_tensor(fname, "grad_output", grad_output)
    _check_tensor(fname, "self", self)
    _core.check_self_is_result(negative_slope, self_is_result, fname)
    shape, dtype, template = _backward_result(fname, grad_output, self)
    return _empty_result(shape, dtype, template, self.device)


def _prelu_kernel(self: Tensor, weight: Tensor) -> Tensor:
    fname = _FN + "prelu"
    _check_prelu(fname, self, weight)
    out = _fresh(torch.empty_like(self))
    n = out.numel()
    if n == 0:  # see _EMPTY_NOTE
        return out
    if _dense_memory(self):  # (out: empty_like's, the same strides)
        c = weight.numel()
        if c == 1:
            if _core.rows_at("leaky_relu", _STORAGE[self.dtype], n, self.data_ptr(),
                             out.data_ptr(), 0, weight.item(), _POOL_ADDR):
                return out  # (one shared slope: leaky_relu's rows, as the core's)
        elif _plain_memory(weight):  # (_check_prelu: c is the size of dim 1)
            inner = self.stride(1)  # (a channel's run: H*W, or 1 for channels last)
            if _core.prelu_at(_STORAGE[self.dtype], n // (c * inner), c, inner,
                              self.data_ptr(), weight.data_ptr(), out.data_ptr(), _POOL_ADDR):
                return out
    _on_torch_threads(
        _core.prelu_impl,
        _to_numpy(self), _to_numpy(weight), 1, out=_to_numpy(out), compare=">", fname=fname
    )
    return out


@torch.library.custom_op(f"{NAMESPACE}::prelu", mutates_args=(), device_types="cpu")
def _prelu_op(self: Tensor, weight: Tensor) -> Tensor:
    return _prelu_kernel(self, weight)


@_prelu_op.register_fake
def _(self, weight):
    _check_prelu(_FN + "prelu", self, weight)
    return torch.empty_like(self)


def _prelu_backward_kernel(
    grad_output: Tensor, self: Tensor, weight: Tensor
) -> tuple[Tensor, Tensor]:
    fname = _FN + "prelu_backward"
    _check_prelu_backward(fname, grad_output, self, weight)
    if self.is_contiguous() and grad_output.shape == self.shape:
        # the common case: plain layouts, no permutation (empty tensors: see _EMPTY_NOTE)
        if self.numel() == 0:
            return torch.empty_like(self), torch.zeros_like(weight)
        gi, gw = _on_torch_threads(_core.prelu_backward_impl, _to_numpy(grad_output),
                                   _to_numpy(self), _to_numpy(weight),
                                   1 if self.dim() > 1 else 0, compare=">", fname=fname)
        grad_input = _from_numpy(gi)
        if grad_input.stride() != self.stride():  # only where size-1 dimensions differ
            grad_input = grad_input.as_strided(self.shape, self.stride())
        return grad_input, _from_numpy(gw)
    # a zero-stride view when grad_output is broadcast: no copy
    grad_output = grad_output.expand(self.shape)
    # The core returns a C-contiguous grad_input; the fake kernel promises
    # empty_like(self)'s layout (channels-last stays channels-last, as in
    # PyTorch). Present the arrays to the core in that layout's memory order
    # (a permutation of views, no copy) and permute the result back.
    expected = torch.empty_like(self, device="meta")
    order = sorted(range(self.dim()), key=lambda d: (-expected.stride(d), d))
    axis = order.index(1) if self.dim() > 1 else 0
    gi, gw = _on_torch_threads(
        _core.prelu_backward_impl,
        _to_numpy(grad_output.permute(order)),
        _to_numpy(self.permute(order)),
        _to_numpy(weight),
        axis,
        compare=">",
        fname=fname,
    )
    inverse = sorted(range(self.dim()), key=order.__getitem__)
    grad_input = _from_numpy(gi).permute(inverse)
    if grad_input.stride() != expected.stride():
        if all(a == b or n == 1 for a, b, n in
               zip(grad_input.stride(), expected.stride(), self.shape)):
            # only strides of size-1 dimensions differ; they address nothing
            grad_input = grad_input.as_strided(expected.shape, expected.stride())
        else:  # pragma: no cover - defensive, the permutation above prevents it
            grad_input = torch.empty_like(self).copy_(grad_input)
    return grad_input, _from_numpy(gw)


@torch.library.custom_op(
    f"{NAMESPACE}::prelu_backward", mutates_args=(), device_types="cpu"
)
def _prelu_backward_op(
    grad_output: Tensor, self: Tensor, weight: Tensor
) -> tuple[Tensor, Tensor]:
    return _prelu_backward_kernel(grad_output, self, weight)


@_prelu_backward_op.register_fake
def _(grad_output, self, weight):
    fname = _FN + "prelu_backward"
    _check_prelu_backward(fname, grad_output, self, weight)
    return torch.empty_like(self), torch.empty_like(weight, memory_format=torch.contiguous_format)


# --------------------------------------------------------------------------
# Autograd formulas (PyTorch's tools/autograd/derivatives.yaml).
# --------------------------------------------------------------------------


def _leaky_relu_setup(ctx, inputs, output):
    x, negative_slope = inputs
    ctx.negative_slope = negative_slope
    ctx.save_for_backward(x)


def _leaky_relu_grad(ctx, grad):
    (x,) = ctx.saved_tensors
    return _lrelu_backward(grad, x, ctx.negative_slope, False), None


def _lrelu_backward(grad: Tensor, x: Tensor, negative_slope: float, self_is_result: bool) -> Tensor:
    """The gradient inside a backward: the differentiable operator when a graph of the
    backward is being built (``create_graph=True``) or traced, else the kernel itself."""
    if torch.is_grad_enabled() or not _eager(grad, x):
        return _leaky_relu_backward_op(grad, x, negative_slope, self_is_result)
    return _leaky_relu_backward_kernel(grad, x, negative_slope, self_is_result)


_leaky_relu_op.register_autograd(_leaky_relu_grad, setup_context=_leaky_relu_setup)


def _leaky_relu_backward_setup(ctx, inputs, output):
    _, x, negative_slope, self_is_result = inputs
    ctx.negative_slope = negative_slope
    ctx.self_is_result = self_is_result
    ctx.save_for_backward(x)


def _leaky_relu_backward_grad(ctx, grad):
    # leaky_relu_backward is linear in grad_output with the same mask: its
    # gradient is itself; the mask is piecewise constant in `self`, whose
    # gradient is zero (None). Autograd reduces a broadcast gradient to the
    # shape of grad_output and casts it to its dtype.
    (x,) = ctx.saved_tensors
    gg = _leaky_relu_backward_op(grad, x, ctx.negative_slope, ctx.self_is_result)
    return gg, None, None, None


_leaky_relu_backward_op.register_autograd(
    _leaky_relu_backward_grad, setup_context=_leaky_relu_backward_setup
)


def _prelu_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _prelu_grad(ctx, grad):
    x, weight = ctx.saved_tensors
    if torch.is_grad_enabled() or not _eager(grad, x, weight):  # see _lrelu_backward
        grad_input, grad_weight = _prelu_backward_op(grad, x, weight)
    else:
        grad_input, grad_weight = _prelu_backward_kernel(grad, x, weight)
    return (
        grad_input if ctx.needs_input_grad[0] else None,
        grad_weight if ctx.needs_input_grad[1] else None,
    )


_prelu_op.register_autograd(_prelu_grad, setup_context=_prelu_setup)


def _prelu_backward_grad(ctx, grad_input_grad, grad_weight_grad):
    raise NotImplementedError(
        "leakyops.torch.prelu: double backward (differentiating prelu's "
        "gradient) is not implemented; use torch.nn.functional.prelu for "
        "second-order gradients"
    )


_prelu_backward_op.register_autograd(_prelu_backward_grad)


class _LeakyReLUInplace(torch.autograd.Function):
    """In-place leaky_relu with autograd: saves the result, whose sign is the
    input's for a slope >= 0, and differentiates with self_is_result=True
    (PyTorch's formula; a negative slope raises in the backward, as in PyTorch)."""

    @staticmethod
    def forward(ctx, x, negative_slope):
        if _eager(x):  # (mark_dirty below counts the change, as the operator's dispatch would)
            _leaky_relu_inplace_kernel(x, negative_slope)
        else:
            torch.ops.leakyops.leaky_relu_(x, negative_slope)
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        ctx.negative_slope = negative_slope
        return x

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return _lrelu_backward(grad, result, ctx.negative_slope, True), None


# --------------------------------------------------------------------------
# The eager path. Called through torch's dispatcher, a custom operator and its
# autograd wrapper cost several times the work of a small call (figures in
# docs/benchmarks.md, "Measurements behind choices in the code"). In
# eager mode, on plain CPU tensors, the functions below call the operators'
# bodies directly, and autograd goes through the autograd.Functions here, with
# the same formulas (the registered ones). Under torch.compile, torch.export,
# a torch-function or dispatch mode, or with tensor subclasses, the custom
# operators run as before.
# --------------------------------------------------------------------------


def _eager(*tensors: object) -> bool:
    if torch.compiler.is_compiling() or torch._C._is_torch_function_mode_enabled() \
            or torch._C._len_torch_dispatch_stack():
        return False
    for t in tensors:  # (a loop, not all() over a generator: two Python frames fewer)
        if type(t) is not Tensor and type(t) is not _Parameter:
            return False
    return True


_Parameter = torch.nn.Parameter


def _eager_function(name: str, kernel, setup, grad) -> type:
    """An autograd.Function running ``kernel`` forward and the registered formulas backward."""

    def forward(ctx, *args):
        out = kernel(*args)
        setup(ctx, args, out)
        return out

    def backward(ctx, *grads):
        return grad(ctx, *grads)

    return type(name, (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward)})


_LeakyReLUEager = _eager_function("_LeakyReLUEager", _leaky_relu_kernel, _leaky_relu_setup,
                                  _leaky_relu_grad)
_PReLUEager = _eager_function("_PReLUEager", _prelu_kernel, _prelu_setup, _prelu_grad)


def _applier(cls):
    """``cls.apply(a, b)`` for the eager path, without ``torch.autograd.Function.apply``'s
    Python wrapper: where no functorch transform is active (the wrapper's own test), the
    class's C++ ``apply`` with each tensor unwrapped if it is a dead functorch wrapper, which
    is what the wrapper does for a Function without ``setup_context``; else ``cls.apply``
    itself. Right after a convolution in a model's step the wrapper's Python runs cold: a
    minimal in-place Function on (16, 64, 32, 32) float32 took 109 µs through it and 65 µs
    without it, ``F.leaky_relu_`` 66 (docs/benchmarks.md, stop 43). ``cls.apply`` where this
    torch lacks those entry points."""
    try:
        base = torch._C._FunctionBase.__dict__["apply"].__get__(None, cls)
        active = torch._C._are_functorch_transforms_active
        unwrap = torch._C._functorch.unwrap_if_dead
    except (AttributeError, KeyError):  # pragma: no cover - another torch
        return cls.apply
    wrapped = cls.apply

    def apply(a, b):
        if active():
            return wrapped(a, b)
        return base(unwrap(a), unwrap(b) if isinstance(b, Tensor) else b)

    return apply


_leaky_relu_apply = _applier(_LeakyReLUEager)
_prelu_apply = _applier(_PReLUEager)
_leaky_relu_inplace_apply = _applier(_LeakyReLUInplace)


def _needs_grad(*tensors: Tensor) -> bool:
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


# --------------------------------------------------------------------------
# torch.nn.functional-style functions.
# --------------------------------------------------------------------------


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``torch.nn.functional.leaky_relu`` on leakyops' kernels.

    ``y = x if x > 0 else negative_slope * x``, element-wise, bit-identical to
    PyTorch on the CPU (NaN stays NaN, ``-0.0`` gives ``-0.0 * slope``).
    With ``inplace=True`` the input is overwritten and returned.

    >>> import torch, leakyops.torch as lt
    >>> lt.leaky_relu(torch.tensor([-1.0, 2.0], dtype=torch.bfloat16), 0.25)
    tensor([-0.2500,  2.0000], dtype=torch.bfloat16)
    """
    _check_type(_FN + "leaky_relu", "input", input)
    if inplace:
        return leaky_relu_(input, negative_slope)
    if type(negative_slope) is not float:  # (a float as it is, without the call)
        negative_slope = _negative_slope(_FN + "leaky_relu", negative_slope, input.dtype)
    if _eager(input):
        if _needs_grad(input):
            return _leaky_relu_apply(input, negative_slope)
        return _leaky_relu_kernel(input, negative_slope)
    return _leaky_relu_op(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place ``leaky_relu``; returns ``input``.

    Differentiable when ``input`` requires grad (not on a leaf, as in PyTorch):
    the backward uses the result (``self_is_result=True``), so a negative slope
    raises a ``ValueError`` when the gradient is computed.

    >>> import torch, leakyops.torch as lt
    >>> x = torch.tensor([-4.0, 4.0])
    >>> lt.leaky_relu_(x, 0.5) is x, x
    (True, tensor([-2.,  4.]))
    """
    _check_type(_FN + "leaky_relu_", "input", input)
    if type(negative_slope) is not float:  # (a float as it is, without the call)
        negative_slope = _negative_slope(_FN + "leaky_relu_", negative_slope, input.dtype)
    compiling = torch.compiler.is_compiling()
    if not compiling and input.is_inference() and not torch.is_inference_mode_enabled():
        # (PyTorch's in-place operators refuse it; a custom operator's dispatch does not)
        raise RuntimeError(
            f"{_FN}leaky_relu_: an in-place update to an inference tensor outside "
            f"InferenceMode is not allowed (as in PyTorch); clone() it first, or call this "
            f"inside torch.inference_mode()"
        )
    if not compiling and input.is_neg():
        # A lazily negated view (``c.conj().imag``) has no memory of its own values, and
        # PyTorch's fallback for it cannot run an operator that returns nothing: do what the
        # fallback does, on a resolved copy, and write the results back through the view (as
        # F.leaky_relu_ does; autograd records the copy).
        values = input.resolve_neg()
        leaky_relu_(values, negative_slope)
        return input.copy_(values)
    if input.requires_grad and torch.is_grad_enabled():
        if compiling:
            # Traced, the graph is functionalised anyway (an in-place op becomes
            # the out-of-place op and a copy), and dynamo's tracing of an
            # autograd.Function emits a DeprecationWarning in torch 2.13. So
            # trace exactly that, on a clone that autograd may save (the
            # compiler elides it): the backward then reads the input, so a
            # negative slope does not raise, unlike eager mode.
            return input.copy_(_leaky_relu_op(input.clone(), negative_slope))
        return _leaky_relu_inplace_apply(input, negative_slope)
    if _eager(input):
        # the body without the operator's dispatch (17 µs of a 1,000-element call); the
        # version counter counts the change, as the dispatch does
        torch._C._increment_version((input,))
        _leaky_relu_inplace_kernel(input, negative_slope)
        return input
    torch.ops.leakyops.leaky_relu_(input, negative_slope)
    return input


def leaky_relu_backward(
    grad_output: Tensor, input: Tensor, negative_slope: float, self_is_result: bool = False
) -> Tensor:
    """Gradient of ``leaky_relu``: ``grad_output if t > 0 else grad_output * slope``.

    ``t`` is the forward input, or the forward result with
    ``self_is_result=True`` (then a negative slope is a ``ValueError``).
    The two tensors broadcast; the dtype is PyTorch's promoted dtype.
    Differentiable (this is what makes ``leaky_relu`` twice differentiable).
    """
    _check_type(_FN + "leaky_relu_backward", "grad_output", grad_output)
    _check_type(_FN + "leaky_relu_backward", "input", input)
    dtype = input.dtype if grad_output.dtype == input.dtype else \
        torch.promote_types(grad_output.dtype, input.dtype)
    negative_slope = _negative_slope(_FN + "leaky_relu_backward", negative_slope, dtype)
    if _eager(grad_output, input) and not _needs_grad(grad_output, input):
        return _leaky_relu_backward_kernel(grad_output, input, negative_slope, bool(self_is_result))
    return _leaky_relu_backward_op(grad_output, input, negative_slope, bool(self_is_result))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``torch.nn.functional.prelu`` on leakyops' kernels.

    ``y = x if x > 0 else weight[c] * x`` with ``c`` the index along dim 1;
    ``weight`` has one element (shared) or one per channel, ``input``'s dtype,
    and at most one dimension, as in PyTorch.

    >>> import torch, leakyops.torch as lt
    >>> lt.prelu(torch.tensor([[-1.0, -1.0], [1.0, -2.0]]), torch.tensor([0.5, 2.0]))
    tensor([[-0.5000, -2.0000],
            [ 1.0000, -4.0000]])
    """
    _check_type(_FN + "prelu", "input", input)
    _check_type(_FN + "prelu", "weight", weight)
    if _eager(input, weight):
        if _needs_grad(input, weight):
            return _prelu_apply(input, weight)
        return _prelu_kernel(input, weight)
    return _prelu_op(input, weight)


def prelu_backward(grad_output: Tensor, input: Tensor, weight: Tensor) -> tuple[Tensor, Tensor]:
    """Gradients of ``prelu``: ``(grad_input, grad_weight)``, ``grad_weight``
    shaped like ``weight`` (summed over every element of its channel, in a
    thread-count-independent order)."""
    for name, t in (("grad_output", grad_output), ("input", input), ("weight", weight)):
        _check_type(_FN + "prelu_backward", name, t)
    if _eager(grad_output, input, weight) and not _needs_grad(grad_output, input, weight):
        return _prelu_backward_kernel(grad_output, input, weight)
    return _prelu_backward_op(grad_output, input, weight)


# --------------------------------------------------------------------------
# nn.Module drop-ins. Subclasses of PyTorch's modules: same constructor,
# parameters, state-dict keys, extra_repr and isinstance() checks; only the
# kernels differ.
# --------------------------------------------------------------------------


class LeakyReLU(torch.nn.LeakyReLU):
    """``torch.nn.LeakyReLU(negative_slope=0.01, inplace=False)`` on leakyops' kernels.

    >>> import torch, leakyops.torch as lt
    >>> lt.LeakyReLU(0.1, inplace=True)
    LeakyReLU(negative_slope=0.1, inplace=True)
    """

    def forward(self, input: Tensor) -> Tensor:
        return leaky_relu(input, self.negative_slope, self.inplace)

    if TYPE_CHECKING:  # torch.nn.Module.__call__ returns Any; calling the module runs forward
        def __call__(self, input: Tensor) -> Tensor: ...


class PReLU(torch.nn.PReLU):
    """``torch.nn.PReLU(num_parameters=1, init=0.25)`` on leakyops' kernels.

    The parameter is ``weight`` of shape ``(num_parameters,)``, so state dicts
    load into either class.

    >>> import torch, leakyops.torch as lt
    >>> sorted(lt.PReLU(3).state_dict())
    ['weight']
    """

    def forward(self, input: Tensor) -> Tensor:
        return prelu(input, self.weight)

    if TYPE_CHECKING:  # torch.nn.Module.__call__ returns Any; calling the module runs forward
        def __call__(self, input: Tensor) -> Tensor: ...
