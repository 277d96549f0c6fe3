"""oneDNN's eltwise LeakyReLU (``eltwise_relu`` with ``alpha``) as a benchmark peer.

Calls the real oneDNN (PyPI ``onednn-cpu-gomp==2023.2.0``, oneDNN 3.2) through its
C API with ctypes: one primitive is created per (shape, dtype, alpha), then each
run is one ``dnnl_primitive_execute`` + ``dnnl_stream_wait`` on NumPy buffers (no
copies).  Without the library every entry point reports it unavailable instead of
failing.

Threads: this build uses GNU OpenMP; set ``OMP_NUM_THREADS`` before the first call
to match the thread count of the other rows.

Use from the lead's benchmark::

    from onednn_peer import available, make_leaky_relu, time_leaky_relu
    if available():
        run, out = make_leaky_relu(x, 0.01)   # run() computes out = lrelu(x)
    row = time_leaky_relu(1 << 20, "float32")  # {"name", "available", "seconds", ...}
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import time

import numpy as np

NAME = "oneDNN eltwise_relu(alpha)"
_DT = {"float32": 3, "float16": 1, "bfloat16": 2}
_FORWARD_INFERENCE = 96
_ELTWISE_RELU = 0x20
_ARG_SRC, _ARG_DST = 1, 17
_TAG_A = 2  # dnnl_a: plain 1-D
_MAX_NDIMS = 12

_lib = None
_reason = None
_engine = None
_stream = None


class _ExecArg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", ctypes.c_void_p)]


def _load():
    global _lib, _reason, _engine, _stream
    if _lib is not None or _reason is not None:
        return _lib
    paths = [os.environ.get("LEAKYOPS_DNNL_LIB")]
    paths += [os.path.join(p, "lib", "libdnnl.so.3") for p in (sys.prefix, sys.base_prefix)]
    paths.append(ctypes.util.find_library("dnnl"))
    for path in filter(None, paths):
        if os.path.sep in path and not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.dnnl_eltwise_forward_primitive_desc_create  # noqa: B018
        except (OSError, AttributeError):
            continue
        vp = ctypes.c_void_p
        lib.dnnl_engine_create.argtypes = [ctypes.POINTER(vp), ctypes.c_int, ctypes.c_size_t]
        lib.dnnl_stream_create.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_uint]
        lib.dnnl_stream_wait.argtypes = [vp]
        lib.dnnl_memory_desc_create_with_tag.argtypes = [
            ctypes.POINTER(vp), ctypes.c_int, ctypes.c_int64 * _MAX_NDIMS, ctypes.c_int,
            ctypes.c_int]
        lib.dnnl_memory_desc_destroy.argtypes = [vp]
        lib.dnnl_eltwise_forward_primitive_desc_create.argtypes = [
            ctypes.POINTER(vp), vp, ctypes.c_int, ctypes.c_int, vp, vp, ctypes.c_float,
            ctypes.c_float, vp]
        lib.dnnl_primitive_desc_destroy.argtypes = [vp]
        lib.dnnl_primitive_create.argtypes = [ctypes.POINTER(vp), vp]
        lib.dnnl_primitive_destroy.argtypes = [vp]
        lib.dnnl_memory_create.argtypes = [ctypes.POINTER(vp), vp, vp, vp]
        lib.dnnl_memory_destroy.argtypes = [vp]
        lib.dnnl_primitive_execute.argtypes = [vp, vp, ctypes.c_int, ctypes.POINTER(_ExecArg)]
        engine, stream = vp(), vp()
        if (lib.dnnl_engine_create(ctypes.byref(engine), 1, 0)
                or lib.dnnl_stream_create(ctypes.byref(stream), engine, 1)):
            continue
        _lib, _engine, _stream = lib, engine, stream
        return _lib
    _reason = ("oneDNN not installed (pip install onednn-cpu-gomp==2023.2.0), "
               "or libdnnl.so.3 not found")
    return None


def available() -> bool:
    """True when the real oneDNN could be loaded."""
    return _load() is not None


def unavailable_reason():
    """Why the peer is unavailable (``None`` if it is available)."""
    _load()
    return None if _lib is not None else _reason


_STATUS = {1: "out_of_memory", 2: "invalid_arguments", 3: "unimplemented: no kernel for this "
           "data type on this CPU", 5: "runtime_error"}


def _check(status, what):
    if status != 0:
        raise RuntimeError(f"oneDNN {what} failed with status {status} "
                           f"({_STATUS.get(status, 'unknown')})")


def make_leaky_relu(x: np.ndarray, alpha: float, out: np.ndarray | None = None):
    """Prepare ``out = leaky_relu(x, alpha)`` with oneDNN; return ``(run, out)``.

    ``x`` is C-contiguous float32/float16/bfloat16 (treated as 1-D); ``run()``
    executes once and waits.  Raises ``RuntimeError`` if oneDNN is unavailable.
    """
    lib = _load()
    if lib is None:
        raise RuntimeError(f"{NAME} unavailable: {_reason}")
    x = np.ascontiguousarray(x)
    dt = _DT.get(x.dtype.name)
    if dt is None:
        raise TypeError(f"{NAME}: no oneDNN type for {x.dtype}")
    if out is None:
        out = np.empty_like(x)
    vp = ctypes.c_void_p
    dims = (ctypes.c_int64 * _MAX_NDIMS)(max(x.size, 1))
    md, pd, prim, m_src, m_dst = vp(), vp(), vp(), vp(), vp()
    _check(lib.dnnl_memory_desc_create_with_tag(ctypes.byref(md), 1, dims, dt, _TAG_A), "md")
    try:
        _check(lib.dnnl_eltwise_forward_primitive_desc_create(
            ctypes.byref(pd), _engine, _FORWARD_INFERENCE, _ELTWISE_RELU, md, md,
            ctypes.c_float(alpha), ctypes.c_float(0.0), None), "eltwise pd")
        _check(lib.dnnl_primitive_create(ctypes.byref(prim), pd), "primitive")
        _check(lib.dnnl_memory_create(ctypes.byref(m_src), md, _engine, vp(x.ctypes.data)), "mem")
        _check(lib.dnnl_memory_create(ctypes.byref(m_dst), md, _engine, vp(out.ctypes.data)), "mem")
    finally:
        lib.dnnl_memory_desc_destroy(md)
        if pd:
            lib.dnnl_primitive_desc_destroy(pd)
    args = (_ExecArg * 2)(_ExecArg(_ARG_SRC, m_src), _ExecArg(_ARG_DST, m_dst))
    keep = (x, out)  # the buffers must outlive the primitive's memory objects

    def run():
        _check(lib.dnnl_primitive_execute(prim, _stream, 2, args), "execute")
        _check(lib.dnnl_stream_wait(_stream), "wait")
        return keep[1]

    run.release = lambda: (lib.dnnl_memory_destroy(m_src), lib.dnnl_memory_destroy(m_dst),
                           lib.dnnl_primitive_destroy(prim))
    return run, out


def time_leaky_relu(n: int = 1 << 20, dtype: str = "float32", alpha: float = 0.01,
                    repeat: int = 5, number: int = 10) -> dict:
    """Best time of one oneDNN LeakyReLU over ``n`` elements (a benchmark row)."""
    row = {"name": NAME, "n": n, "dtype": dtype, "available": available()}
    if not row["available"]:
        row.update(seconds=None, reason=unavailable_reason())
        return row
    import ml_dtypes  # noqa: F401 - registers bfloat16 with NumPy

    x = (np.random.default_rng(0).standard_normal(n)).astype(dtype)
    run, _ = make_leaky_relu(x, alpha)
    try:
        run()  # warm up (JIT)
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                run()
            best = min(best, (time.perf_counter() - t0) / number)
    finally:
        run.release()
    row.update(seconds=best, gbytes_per_s=2 * x.nbytes / best / 1e9)
    return row


if __name__ == "__main__":  # pragma: no cover
    for dt in ("float32", "bfloat16", "float16"):
        print(time_leaky_relu(1 << 20, dt))
