"""The peers, each run by :mod:`leakyops._bench._worker` in a process of its own.

A peer is a function ``prepare(op, dtype, shape) -> fn`` that builds the case's inputs and
outputs once and returns a callable computing the operator into them; it raises
:class:`Unavailable` with the reason when the library is missing or has no kernel for the
case. Outputs are preallocated and reused wherever the library allows it (``out=``, IO
binding, oneDNN memory objects), as a user who cares about speed would call it.

=============  ==============================================================================
``leakyops``   the public functions with ``out=`` (``prelu_backward``: ``out=(gi, gw)``)
``torch``      PyTorch's aten ops (``out=`` overloads where they exist), torch's thread count
``onednn``     the real oneDNN primitives through its C API: eltwise ReLU with alpha (forward
               and backward; in place with src = dst), PReLU forward and backward
``onnxruntime``  ONNX Runtime's ``LeakyRelu`` and ``PRelu`` with IO binding into
               preallocated arrays (forward only: ONNX has no gradient ops for them)
``copy-*``     copies of the same number of bytes (the operator's reads + writes): NumPy's
               ``copyto`` (one thread), PyTorch's ``copy_`` and leakyops' threaded copy; the
               ceiling is the fastest of them
=============  ==============================================================================
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

import numpy as np

from ._cases import CHANNELS, inputs, np_dtype, operator_of, slope_of


class Unavailable(Exception):
    """The peer cannot run this case here; the message says why."""


def _threads() -> int:
    return int(os.environ.get("LEAKYOPS_BENCH_THREADS", "1"))


# ---------------------------------------------------------------------------------------------
# leakyops


# Each timed call is written out as a user writes it: a call assembled from the operator
# table (``fn(*args, out=out)``) would time Python overhead of its own, visible at small sizes.


def leakyops_peer(op, dtype, shape):
    import leakyops

    a = inputs(op, dtype, shape)
    x, s = a["x"], slope_of(op)
    out = np.empty_like(x)
    if op == "leaky_relu:alloc":
        return lambda: leakyops.leaky_relu(x, s)
    if op == "prelu_backward:fresh":
        return lambda: leakyops.prelu_backward(a["grad_output"], x, a["weight"])
    if op == "leaky_relu":
        return lambda: leakyops.leaky_relu(x, s, out=out)
    if op == "leaky_relu_":
        return lambda: leakyops.leaky_relu_(x, s)
    if op == "leaky_relu_backward":
        g = a["grad_output"]
        return lambda: leakyops.leaky_relu_backward(g, x, s, out=out)
    w = a["weight"]
    if op == "prelu":
        return lambda: leakyops.prelu(x, w, out=out)
    g, gw = a["grad_output"], np.empty_like(w)
    return lambda: leakyops.prelu_backward(g, x, w, out=(out, gw))


# ---------------------------------------------------------------------------------------------
# PyTorch


def _torch():
    try:
        import torch
    except ImportError:
        raise Unavailable("PyTorch is not installed (its CPU build: pip install torch "
                          "--index-url https://download.pytorch.org/whl/cpu)") from None
    torch.set_num_threads(_threads())
    return torch


def _to_torch(torch, a: np.ndarray):
    if a.dtype == np_dtype("bfloat16"):
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def torch_peer(op, dtype, shape):
    torch = _torch()
    a = {k: _to_torch(torch, v) for k, v in inputs(op, dtype, shape).items()}
    aten = torch.ops.aten
    x, s = a["x"], slope_of(op)
    out = torch.empty_like(x)
    if op == "leaky_relu:alloc":
        f = torch.nn.functional.leaky_relu
        return lambda: f(x, s)
    op = operator_of(op).name  # prelu_backward allocates its results anyway
    if op == "leaky_relu":
        return lambda: aten.leaky_relu.out(x, s, out=out)
    if op == "leaky_relu_":
        return lambda: aten.leaky_relu_(x, s)
    g = a.get("grad_output")
    if op == "leaky_relu_backward":
        return lambda: aten.leaky_relu_backward.grad_input(g, x, s, False, grad_input=out)
    w = a["weight"].view(1, -1, 1)  # (one slope: (1, 1, 1), broadcast as F.prelu does)
    if op == "prelu":  # no out= overload: what F.prelu runs
        return lambda: aten._prelu_kernel(x, w)
    dims = (0, 2) if w.numel() > 1 else (0, 1, 2)

    def prelu_backward():  # what autograd runs for F.prelu: the kernel, then the channel sum
        gi, gw = aten._prelu_kernel_backward(g, x, w)
        return gi, gw.sum(dim=dims)

    return prelu_backward


# ---------------------------------------------------------------------------------------------
# oneDNN (the primitives, through the C API)

_DNNL_DT = {"float16": 1, "bfloat16": 2, "float32": 3, "float64": 7}
_FORWARD_TRAINING, _FORWARD_INFERENCE = 64, 96
_ELTWISE_RELU = 0x20
_TAGS = {1: 2, 2: 3, 3: 4}  # dnnl_a, dnnl_ab, dnnl_abc (plain layouts by rank)
_ARG = {"src": 1, "dst": 17, "weights": 33, "diff_src": 129, "diff_dst": 145,
        "diff_weights": 161}
_DNNL_STATUS = {1: "out_of_memory", 2: "invalid_arguments", 3: "unimplemented",
                5: "runtime_error"}
_MAX_NDIMS = 12

#: What oneDNN 3.2 asks of an x86-64 CPU before it offers kernels of a data type
#: (``platform::has_data_type_support``): alternatives of (CPU flags, their name).
_DNNL_DT_NEEDS = {
    "float16": [({"avx512_fp16"}, "avx512_fp16"),
                ({"avx_vnni_int8", "avx_ne_convert", "avx_ifma"}, "AVX2-VNNI-2")],
    "bfloat16": [({"avx512f", "avx512bw", "avx512vl", "avx512dq"}, "avx512_core"),
                 ({"avx_vnni_int8", "avx_ne_convert", "avx_ifma"}, "AVX2-VNNI-2")],
}


def cpu_flags() -> frozenset:
    """The CPU's feature flags as Linux lists them (empty where /proc/cpuinfo is missing)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def onednn_missing_feature(dtype: str, flags=None) -> str | None:
    """Why a CPU with ``flags`` (default: this one) has no oneDNN 3.2 kernels of ``dtype``."""
    needs = _DNNL_DT_NEEDS.get(dtype)
    flags = cpu_flags() if flags is None else flags
    if not needs or not flags or any(feats <= flags for feats, _ in needs):
        return None
    return "no " + " and no ".join(name for _, name in needs)


class _Dnnl:
    lib = None
    engine = stream = None

    @classmethod
    def load(cls):
        if cls.lib is not None:
            return cls.lib
        paths = [os.environ.get("LEAKYOPS_DNNL_LIB")]
        paths += [os.path.join(p, "lib", "libdnnl.so.3") for p in (sys.prefix, sys.base_prefix)]
        paths.append(ctypes.util.find_library("dnnl"))
        for path in filter(None, paths):
            if os.path.sep in path and not os.path.exists(path):
                continue
            try:
                lib = ctypes.CDLL(path)
                lib.dnnl_prelu_backward_primitive_desc_create  # noqa: B018
            except (OSError, AttributeError):
                continue
            cls._declare(lib)
            engine, stream = ctypes.c_void_p(), ctypes.c_void_p()
            _dnnl_check(lib.dnnl_engine_create(ctypes.byref(engine), 1, 0), "engine")
            _dnnl_check(lib.dnnl_stream_create(ctypes.byref(stream), engine, 1), "stream")
            cls.lib, cls.engine, cls.stream = lib, engine, stream
            return lib
        raise Unavailable("oneDNN is not installed (pip install onednn-cpu-gomp==2023.2.0)")

    @staticmethod
    def _declare(lib):
        vp, p = ctypes.c_void_p, ctypes.POINTER
        dims = ctypes.c_int64 * _MAX_NDIMS
        sigs = {
            "dnnl_engine_create": [p(vp), ctypes.c_int, ctypes.c_size_t],
            "dnnl_stream_create": [p(vp), vp, ctypes.c_uint],
            "dnnl_stream_wait": [vp],
            "dnnl_memory_desc_create_with_tag": [p(vp), ctypes.c_int, dims, ctypes.c_int,
                                                 ctypes.c_int],
            "dnnl_memory_desc_destroy": [vp],
            "dnnl_eltwise_forward_primitive_desc_create": [p(vp), vp, ctypes.c_int, ctypes.c_int,
                                                           vp, vp, ctypes.c_float,
                                                           ctypes.c_float, vp],
            "dnnl_eltwise_backward_primitive_desc_create": [p(vp), vp, ctypes.c_int, vp, vp, vp,
                                                            ctypes.c_float, ctypes.c_float,
                                                            vp, vp],
            "dnnl_prelu_forward_primitive_desc_create": [p(vp), vp, ctypes.c_int, vp, vp, vp,
                                                         vp],
            "dnnl_prelu_backward_primitive_desc_create": [p(vp), vp, vp, vp, vp, vp, vp, vp,
                                                          vp],
            "dnnl_primitive_desc_destroy": [vp],
            "dnnl_primitive_create": [p(vp), vp],
            "dnnl_memory_create": [p(vp), vp, vp, vp],
            "dnnl_primitive_execute": [vp, vp, ctypes.c_int, vp],
        }
        for name, args in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes = args
            fn.restype = ctypes.c_int


def _dnnl_check(status, what):
    if status != 0:
        raise Unavailable(f"oneDNN {what}: {_DNNL_STATUS.get(status, status)}")


class _ExecArg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", ctypes.c_void_p)]


def onednn_peer(op, dtype, shape):
    lib = _Dnnl.load()
    dt = _DNNL_DT[dtype]
    keep = []  # memory descriptors, primitive descriptors, buffers: alive as long as the run

    def md(sh):
        d = ctypes.c_void_p()
        dims = (ctypes.c_int64 * _MAX_NDIMS)(*sh)
        _dnnl_check(lib.dnnl_memory_desc_create_with_tag(ctypes.byref(d), len(sh), dims, dt,
                                                         _TAGS[len(sh)]), "memory desc")
        keep.append(d)
        return d

    def pd(create, *args):
        d = ctypes.c_void_p()
        status = create(ctypes.byref(d), _Dnnl.engine, *args)
        if status == 3:
            feature = onednn_missing_feature(dtype)
            why = f": {feature}" if feature else ""
            raise Unavailable(f"oneDNN 3.2 has no {dtype} kernel for this on this CPU{why}")
        _dnnl_check(status, "primitive descriptor")
        keep.append(d)
        return d

    def mem(desc, arr):
        m = ctypes.c_void_p()
        _dnnl_check(lib.dnnl_memory_create(ctypes.byref(m), desc, _Dnnl.engine,
                                           ctypes.c_void_p(arr.ctypes.data)), "memory")
        keep.append(arr)
        return m

    spec = operator_of(op)
    backward = "grad_output" in spec.inputs
    a = inputs(op, dtype, shape)
    x = a["x"]
    data = md(x.shape)
    if "slope" in spec.params:  # eltwise ReLU with alpha
        slope = slope_of(op)
        kind = _FORWARD_TRAINING if backward else _FORWARD_INFERENCE
        fwd = pd(lib.dnnl_eltwise_forward_primitive_desc_create, kind, _ELTWISE_RELU, data, data,
                 ctypes.c_float(slope), ctypes.c_float(0.0), None)
        if backward:
            gi = np.empty_like(x)
            bwd = pd(lib.dnnl_eltwise_backward_primitive_desc_create, _ELTWISE_RELU, data, data,
                     data, ctypes.c_float(slope), ctypes.c_float(0.0), fwd, None)
            args = {"src": mem(data, x), "diff_dst": mem(data, a["grad_output"]),
                    "diff_src": mem(data, gi)}
            prim = bwd
        else:
            out = x if spec.in_place else np.empty_like(x)
            args = {"src": mem(data, x), "dst": mem(data, out)}
            prim = fwd
    else:  # PReLU
        w = a["weight"]
        wdesc = md((1, CHANNELS, 1))
        fwd = pd(lib.dnnl_prelu_forward_primitive_desc_create,
                 _FORWARD_TRAINING if backward else _FORWARD_INFERENCE,
                 data, wdesc, data, None)
        if not backward:
            args = {"src": mem(data, x), "weights": mem(wdesc, w), "dst": mem(data, np.empty_like(x))}
            prim = fwd
        else:
            prim = pd(lib.dnnl_prelu_backward_primitive_desc_create, data, wdesc, data, wdesc,
                      data, fwd, None)
            args = {"src": mem(data, x), "weights": mem(wdesc, w), "diff_dst": mem(data, a["grad_output"]),
                    "diff_src": mem(data, np.empty_like(x)),
                    "diff_weights": mem(wdesc, np.empty_like(w))}
    primitive = ctypes.c_void_p()
    _dnnl_check(lib.dnnl_primitive_create(ctypes.byref(primitive), prim), "primitive")
    exec_args = (_ExecArg * len(args))(*[_ExecArg(_ARG[k], v) for k, v in args.items()])
    n_args, stream = len(args), _Dnnl.stream
    execute, wait = lib.dnnl_primitive_execute, lib.dnnl_stream_wait

    def run():
        execute(primitive, stream, n_args, exec_args)
        wait(stream)

    run.keep = keep
    return run


# ---------------------------------------------------------------------------------------------
# ONNX Runtime


def onnxruntime_peer(op, dtype, shape):
    if op not in ("leaky_relu", "prelu"):
        raise Unavailable("ONNX has no gradient or in-place form of LeakyRelu/PRelu")
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        raise Unavailable("onnxruntime and onnx are not installed (pip install onnxruntime onnx)") from None
    elem = {"float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
            "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE}[dtype]
    a = inputs(op, dtype, shape)
    x = a["x"]
    feeds = {"x": x}
    if op == "leaky_relu":
        node = helper.make_node("LeakyRelu", ["x"], ["y"], alpha=slope_of(op))
        ins = [helper.make_tensor_value_info("x", elem, list(x.shape))]
    else:
        w = a["weight"].reshape(CHANNELS, 1)  # unidirectional broadcast onto (N, C, L)
        feeds["w"] = w
        node = helper.make_node("PRelu", ["x", "w"], ["y"])
        ins = [helper.make_tensor_value_info("x", elem, list(x.shape)),
               helper.make_tensor_value_info("w", elem, list(w.shape))]
    graph = helper.make_graph([node], "peer", ins, [helper.make_tensor_value_info("y", elem, list(x.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    model.ir_version = 8
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = _threads()
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT's own error types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise Unavailable(f"ONNX Runtime cannot run {node.op_type}({dtype}): {first[:160]}") from None
    out = np.empty_like(x)
    binding = sess.io_binding()
    for name, arr in feeds.items():
        binding.bind_input(name, "cpu", 0, _ort_dtype(arr), list(arr.shape), arr.ctypes.data)
    binding.bind_output("y", "cpu", 0, _ort_dtype(out), list(out.shape), out.ctypes.data)
    try:
        sess.run_with_iobinding(binding)
    except Exception as exc:  # noqa: BLE001
        raise Unavailable(f"ONNX Runtime failed to run {node.op_type}({dtype}): {str(exc)[:160]}") from None

    def run():
        sess.run_with_iobinding(binding)

    run.keep = (feeds, out, sess)
    return run


def _ort_dtype(arr):
    # ORT's bind_input takes a NumPy element type; bfloat16 has none in NumPy itself
    return np.uint16 if arr.dtype == np_dtype("bfloat16") else arr.dtype.type


# ---------------------------------------------------------------------------------------------
# copies of the same bytes: the bandwidth ceiling


def _copy_buffers(op, dtype, shape):
    n = int(np.prod(shape))
    k = max(1, operator_of(op).arrays_moved * n // 2)  # a copy reads and writes each element once
    dt = np_dtype(dtype)
    src = np.ones(k, dt)
    return src, np.empty_like(src)


def copy_numpy_peer(op, dtype, shape):
    src, dst = _copy_buffers(op, dtype, shape)
    return lambda: np.copyto(dst, src)


def copy_torch_peer(op, dtype, shape):
    torch = _torch()
    src, dst = (_to_torch(torch, a) for a in _copy_buffers(op, dtype, shape))
    return lambda: dst.copy_(src)


def copy_leakyops_peer(op, dtype, shape):
    from leakyops import _core

    src, dst = _copy_buffers(op, dtype, shape)
    return lambda: _core.copy(src, dst)


PEERS = {
    "leakyops": leakyops_peer,
    "torch": torch_peer,
    "onednn": onednn_peer,
    "onnxruntime": onnxruntime_peer,
    "copy-numpy": copy_numpy_peer,
    "copy-torch": copy_torch_peer,
    "copy-leakyops": copy_leakyops_peer,
}
COPIES = tuple(p for p in PEERS if p.startswith("copy-"))
LIBRARIES = tuple(p for p in PEERS if p not in COPIES and p != "leakyops")
