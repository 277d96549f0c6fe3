"""leakyops.onednn against the real oneDNN 3.2 Graph API (ctypes), bit for bit.

Skipped when ``libdnnl`` is absent (``.ci`` installs ``onednn-cpu-gomp==2023.2.0``).
Every test that runs the library in this process first asks :func:`dnnl_oracle.require`
whether the library runs its op kind and data type on this CPU (a probe in a subprocess, once
per session: oneDNN 3.2 aborts the process where it has no kernel, e.g. f16 without
avx512_fp16) and is skipped with the reason otherwise; :func:`both` does it for the tests
that go through it. The cases the library crashes or aborts on run only in child processes
(:func:`dnnl_oracle.crashes`), and the model must raise the status the library's primitive
API gives for them (:func:`dnnl_oracle.primitive_status`).

The model runs with ``Engine(isa=...)`` set to the instruction set the library dispatches for
(:func:`dnnl_oracle.effective_isa`: the CPU's, or the ``ONEDNN_MAX_CPU_ISA`` cap), so results
compare bit for bit on any CPU; the default engine (exact bf16 rounding) is compared through
:func:`as_library_rounds`. NaN payloads of ``diff_slope`` (a sum: its order decides which
NaN's payload survives) are compared as NaN; everything else, payloads and zero signs
included, bit for bit.
"""

from __future__ import annotations

import itertools
import sys

import ml_dtypes
import numpy as np
import pytest

import leakyops
from leakyops import onednn as dg
from leakyops.onednn._ops import unsqueezed_slope

DTYPES = [np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
IDS = ["f32", "f16", "bf16"]
BF16 = np.dtype(ml_dtypes.bfloat16)
_UINT = {2: np.uint16, 4: np.uint32}
_DT = {name: getattr(dg.DataType, name) for name in ("f32", "bf16", "f16", "f64", "s32")}


# the bit comparisons live with the harness (conftest.py loads it), shared by the oracle tests
bits = sys.modules["_leakyops_dnnl_oracle"].bits
assert_bits = sys.modules["_leakyops_dnnl_oracle"].assert_bits


@pytest.fixture(scope="module")
def isa(oracle):
    """The instruction set the library dispatches for here (the model's engine copies it)."""
    return oracle.effective_isa()


def as_library_rounds(oracle, run_graph, kind, attrs, arrays, outs):
    """The default model's results ``outs`` as the library rounds them to bf16 on this CPU.

    Where the library flushes (asked of the library itself, see
    :func:`dnnl_oracle.bf16_flushes_subnormals`: its ``vcvtneps2bf16`` conversion on CPUs
    with avx512_bf16), every result whose float32 value lies below 2**-126 in magnitude is a
    zero of that value's sign. The float32 values are the model's own, run on the inputs
    widened to float32 (bf16 is computed in float32 and rounded once, so they are the values
    before that rounding). Elsewhere, and for other dtypes, ``outs`` is returned unchanged.
    """
    if outs[0].dtype != BF16 or not oracle.bf16_flushes_subnormals():
        return outs
    wide = run_graph(kind, attrs, [a.astype(np.float32) for a in arrays], len(outs))
    tiny = np.float32(2.0 ** -126)
    result = []
    for ours, f32 in zip(outs, wide):
        flush = np.abs(f32) < tiny  # (False for NaN)
        zero = np.where(np.signbit(f32), np.uint16(0x8000), np.uint16(0))
        fitted = np.where(flush, zero, bits(ours).reshape(ours.shape)).astype(np.uint16)
        result.append(fitted.view(BF16))
    return result


def both(oracle, session, run_graph, kind, attrs, arrays, n_out=1, out_shapes=None, *,
         isa=None):
    """``(got, want)``: the model's outputs, with an engine of the library's instruction set
    ``isa``, and the library's. Skips the test where the library cannot run ``kind`` with
    this dtype on this CPU."""
    oracle.require(kind, arrays[0].dtype)
    dt = oracle.dt_name(arrays[0].dtype)
    shapes = out_shapes or [arrays[0].shape] * n_out
    want = oracle.run_single(session, kind, attrs, arrays, [(sh, dt) for sh in shapes])
    got = run_graph(kind, attrs, arrays, n_out, isa=isa or oracle.effective_isa())
    return got, want


def specials(dtype):
    """±0, the smallest subnormal, the largest finite value, ±inf, NaN, ±1, ±the smallest
    normal."""
    fi = ml_dtypes.finfo(dtype)
    vals = [0.0, -0.0, float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
            float(fi.max), -float(fi.max), np.inf, -np.inf, np.nan, 1.0, -1.0,
            float(fi.tiny), -float(fi.tiny)]
    return np.array(vals, np.float64).astype(dtype)


def sample(rng, shape, dtype, *, special=True):
    """Normal values spread over magnitudes, with the special values mixed in."""
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-20, 10, shape))
    x = np.clip(x, -60000.0, 60000.0).astype(dtype)  # finite in every dtype
    if special and x.size:
        sp = specials(dtype)
        idx = rng.choice(x.size, min(x.size, sp.size * 2), replace=False)
        x.reshape(-1)[idx] = np.resize(sp, idx.size)
    return x


def nan_with_payload(dtype, payload, sign=0):
    """A quiet NaN of ``dtype`` carrying ``payload`` in its low mantissa bits."""
    if dtype.itemsize == 4:
        raw = (sign << 31) | 0x7FC00000 | payload
    elif dtype == np.float16:
        raw = (sign << 15) | 0x7E00 | (payload & 0x1FF)
    else:
        raw = (sign << 15) | 0x7FC0 | (payload & 0x3F)
    return np.array([raw], _UINT[dtype.itemsize]).view(dtype)[0]


# ---------------------------------------------------------------------------------------------
# what the library runs on this CPU


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("kind", ["LeakyReLU", "PReLU", "PReLUBackward"])
def test_probe_agrees_with_the_cpu_features(oracle, isa, kind, dt):
    """The probe finds an op kind missing exactly where the CPU lacks the feature it names,
    and where the model's ``Engine(isa=...)`` (the library's instruction set, capped or not)
    says oneDNN has no kernels."""
    from leakyops.onednn._ops import isa_lacks

    reason = oracle.probe(kind, dt)
    assert (reason is None) == (isa_lacks(isa, dt) is None), (reason, isa)
    if not oracle.isa_cap():
        assert (reason is None) == (oracle.missing_feature(dt) is None), reason
        if reason is not None:
            assert oracle.missing_feature(dt) in reason


def test_bf16_flush_follows_avx512_bf16(oracle):
    """The library flushes bf16 subnormals exactly on CPUs with avx512_bf16 (vcvtneps2bf16),
    or under a cap at AVX512_CORE_BF16 or above."""
    oracle.require("LeakyReLU", BF16)
    if oracle.isa_cap():
        flushing = oracle.effective_isa() in ("avx512_core_bf16", "avx512_core_fp16",
                                              "avx512_core_amx", "avx512_core_amx_fp16")
    else:
        flushing = "avx512_bf16" in oracle.cpu_flags()
    assert oracle.bf16_flushes_subnormals() == flushing


def test_engine_isa_knows_where_the_library_flushes(oracle, isa):
    """``Engine(isa=...)`` flushes bf16 exactly where the library, at that instruction set,
    does (the library answers for itself, capped or not)."""
    oracle.require("LeakyReLU", BF16)
    assert dg.Engine(isa=isa).flushes_bf16 == oracle.bf16_flushes_subnormals()
    assert not dg.Engine().flushes_bf16


# ---------------------------------------------------------------------------------------------
# LeakyReLU: the eltwise kernel (``src <= 0 ? alpha*src : src``; alpha == 0: max(src, +0))


ALPHAS = [0.01, 0.5, -0.5, 2.0, -0.0, 1e-30, np.inf, -np.inf, np.nan, 0.0, 3.4e38]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("alpha", ALPHAS, ids=str)
def test_leaky_relu_matches_onednn(oracle, oracle_session, run_graph, isa, dtype, alpha):
    rng = np.random.default_rng(5)
    x = sample(rng, (3, 5, 7), dtype)
    (got,), (want,) = both(oracle, oracle_session, run_graph, "LeakyReLU", {"alpha": alpha},
                           [x], isa=isa)
    assert_bits(got, want)
    # the default engine: the same bits up to the CPU's bf16 flush
    (plain,) = run_graph("LeakyReLU", {"alpha": alpha}, [x], 1)
    (fitted,) = as_library_rounds(oracle, run_graph, "LeakyReLU", {"alpha": alpha}, [x], [plain])
    assert_bits(fitted, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_leaky_relu_nan_payloads_and_signalling(oracle, oracle_session, run_graph, isa, dtype):
    """NaNs of both signs with payloads, signalling ones included: f32 signalling NaNs pass
    through unchanged (NaN is not ``<= 0``), the half types' come back quiet."""
    pats = {4: [0x7FC00001, 0xFFC12345, 0x7F800001, 0xFF800F00],
            2: ([0x7E01, 0xFE3F, 0x7C01, 0xFC10] if dtype == np.float16
                else [0x7FC1, 0xFFC5, 0x7F81, 0xFF88])}[dtype.itemsize]
    x = np.array(pats, _UINT[dtype.itemsize]).view(dtype)
    for alpha in (0.5, -2.0, 0.0, np.nan):
        (got,), (want,) = both(oracle, oracle_session, run_graph, "LeakyReLU",
                               {"alpha": alpha}, [x], isa=isa)
        assert_bits(got, want)
        if dtype == np.float32 and alpha != 0.0:
            assert_bits(want, x)  # the library: unchanged, signalling ones too


def test_bf16_subnormals(oracle, oracle_session, run_graph, isa):
    """The one CPU-dependent bf16 difference: the library's flush of subnormal results, which
    the default engine does not do and ``Engine(isa=...)`` reproduces."""
    oracle.require("LeakyReLU", BF16)
    tiny = float(ml_dtypes.finfo(BF16).smallest_subnormal)
    # two subnormals, normals, and 2**-126 - 2**-134 (f32-subnormal, rounds up to the
    # smallest bf16 normal exactly; flushed by vcvtneps2bf16)
    x = np.array([tiny, -4 * tiny, 2e-38, -2e-38, 1.0, -(2.0**-125 - 2.0**-133)], BF16)
    attrs = {"alpha": 0.5}
    (want,) = oracle.run_single(oracle_session, "LeakyReLU", attrs, [x], [(x.shape, "bf16")])
    (got,) = run_graph("LeakyReLU", attrs, [x], 1)
    # the default engine: a positive subnormal passes through, subnormal results are kept
    assert_bits(got[[0, 2, 4]], x[[0, 2, 4]])
    half = (x[[1, 3, 5]].astype(np.float32) * np.float32(0.5)).astype(BF16)
    assert_bits(got[[1, 3, 5]], half)
    assert (got[[1, 3, 5]] != 0).all()
    if oracle.bf16_flushes_subnormals():
        assert_bits(want, np.array([0.0, -0.0, 2e-38, -0.0, 1.0, -0.0], BF16))
    else:
        assert_bits(want, got)
    (fitted,) = as_library_rounds(oracle, run_graph, "LeakyReLU", attrs, [x], [got])
    assert_bits(fitted, want)
    (same_cpu,) = run_graph("LeakyReLU", attrs, [x], 1, isa=isa)
    assert_bits(same_cpu, want)
    (flushing,) = run_graph("LeakyReLU", attrs, [x], 1, isa="avx512_core_bf16")
    assert_bits(flushing, np.array([0.0, -0.0, 2e-38, -0.0, 1.0, -0.0], BF16))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("shape", [(), (0, 4), (1,), (17,), (2, 3, 4, 5), (1, 2, 1, 2, 1, 2, 1)],
                         ids=str)
def test_leaky_relu_shapes(oracle, oracle_session, run_graph, isa, dtype, shape):
    x = sample(np.random.default_rng(1), shape, dtype)
    (got,), (want,) = both(oracle, oracle_session, run_graph, "LeakyReLU", {"alpha": 0.1}, [x],
                           isa=isa)
    assert_bits(got, want)


# ---------------------------------------------------------------------------------------------
# PReLU: the jit kernel (min(0, x)*w + max(0, x), fused) for a full or per-channel slope, the
# reference kernel (x > 0 ? x : w*x) for every other layout


# (src shape, slope shape, attrs) that the library runs: every slope layout of the docs, and
# the kernel each takes on x86 (checked below against the model's plan)
PRELU_CASES = [
    ((2, 3, 4, 5), (3,), {"data_format": "NCX"}, "jit"),              # per channel, NCX
    ((2, 3, 4, 5), (5,), {"data_format": "NXC"}, "jit"),              # per channel, NXC
    ((2, 3, 4, 5), (5,), {}, "jit"),                                  # NXC is the default
    ((2, 3, 4, 3), (3,), {"data_format": "NCX"}, "jit"),              # C == W, NCX: dim 1
    ((2, 3, 4, 5), (5,), {"data_format": "NCX", "per_channel_broadcast": False}, "ref"),
    ((2, 3, 4, 5), (1,), {"data_format": "NCX", "per_channel_broadcast": False}, "ref"),
    ((2, 3, 4, 5), (1,), {"per_channel_broadcast": False}, "ref"),
    ((2, 3, 4, 5), (3, 1, 1), {"data_format": "NCX"}, "jit"),
    ((2, 3, 4, 5), (3, 1, 1), {"data_format": "NXC"}, "ref"),
    ((2, 3, 4, 5), (1, 3, 1, 1), {"data_format": "NCX"}, "jit"),
    ((2, 3, 4, 5), (1, 1, 1, 5), {"data_format": "NXC"}, "jit"),
    ((2, 3, 4, 5), (3, 4, 5), {"data_format": "NCX"}, "ref"),
    ((2, 3, 4, 5), (3, 4, 5), {"data_format": "NXC"}, "ref"),
    ((2, 3, 4, 5), (4, 1), {"data_format": "NXC"}, "ref"),
    ((2, 3, 4, 5), (4, 5), {"data_format": "NCX", "per_channel_broadcast": False}, "ref"),
    ((2, 3, 4, 5), (2, 3, 4, 5), {"data_format": "NCX"}, "jit"),      # full
    ((2, 3, 4, 5), (2, 3, 4, 5), {"data_format": "NXC"}, "jit"),
    ((2, 3, 4, 5), (2, 1, 1, 1), {"data_format": "NCX"}, "ref"),
    ((2, 3, 4, 5), (1, 1), {"data_format": "NCX"}, "ref"),
    ((1, 3, 4, 5), (3, 4, 5), {"data_format": "NCX", "per_channel_broadcast": False}, "jit"),
    ((2, 3, 3, 3), (3, 3), {"data_format": "NCX"}, "ref"),            # -> (1, 3, 3, 1)
    ((2, 3, 4, 3, 3), (3, 3), {"data_format": "NCX"}, "ref"),         # -> (1, 3, 1, 3, 1)
    ((2, 1, 4, 5), (1,), {"data_format": "NCX", "per_channel_broadcast": False}, "jit"),
    ((3, 5), (5,), {"data_format": "NCX"}, "jit"),
    ((3, 5), (5,), {"data_format": "NXC"}, "jit"),
    ((3, 5), (3, 5), {"data_format": "NXC"}, "jit"),
    ((2, 3, 5), (3,), {"data_format": "NCX"}, "jit"),
    ((2, 3, 4, 5, 6), (3,), {"data_format": "NCX"}, "jit"),
    ((2, 3, 4, 5, 6), (6,), {"data_format": "NXC"}, "jit"),
    ((5,), (5,), {"data_format": "NCX"}, "jit"),                      # 1-D, full
    ((5,), (1,), {"data_format": "NCX"}, "ref"),
    ((1,), (1,), {"data_format": "NCX"}, "jit"),
    ((2, 0, 4, 5), (0,), {"data_format": "NCX"}, "ref"),
]


def _case_id(case):
    src, wei, attrs, _ = case
    return f"{src}-{wei}-{attrs.get('data_format', 'NXC')}-pcb{attrs.get('per_channel_broadcast', True)}"


def _prelu_values(rng, src_shape, wei_shape, dtype):
    """src with every special value, the slope with special values too (NaN with a payload
    of its own, so that the kernels' choice of payload shows)."""
    x = sample(rng, src_shape, dtype)
    w = sample(rng, wei_shape, dtype, special=False)
    if w.size:
        sp = np.array([0.0, -0.0, -0.5, 2.0, np.inf, -np.inf, 1e-30], np.float64).astype(dtype)
        w.reshape(-1)[:: 2] = np.resize(sp, w.reshape(-1)[:: 2].size)
        w.reshape(-1)[-1] = nan_with_payload(dtype, 5)
    if x.size > 1:
        x.reshape(-1)[1] = nan_with_payload(dtype, 3, sign=1)
    return x, w


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("case", PRELU_CASES, ids=_case_id)
def test_prelu_matches_onednn(oracle, oracle_session, run_graph, isa, dtype, case):
    src_shape, wei_shape, attrs, _ = case
    x, w = _prelu_values(np.random.default_rng(11), src_shape, wei_shape, dtype)
    (got,), (want,) = both(oracle, oracle_session, run_graph, "PReLU", attrs, [x, w], isa=isa)
    assert_bits(got, want)


@pytest.mark.parametrize("case", PRELU_CASES, ids=_case_id)
def test_prelu_kernel_choice(case):
    """The model runs the kernel named in the table (the forward tests above tell the two
    apart: ``+0`` with a negative slope, ``x > 0`` with an infinite slope)."""
    from leakyops.onednn._ops import prelu_kernel

    src, wei, attrs, kernel = case
    fmt = attrs.get("data_format", "NXC")
    shape = unsqueezed_slope(len(src), wei, fmt, attrs.get("per_channel_broadcast", True))
    strides = tuple(int(np.prod(src[i + 1:])) for i in range(len(src)))
    for isa in (None, "avx2", "sse41"):
        assert prelu_kernel(src, strides, shape, fmt, isa).startswith("dnnl-" + kernel)


def test_prelu_tells_the_kernels_apart(oracle, oracle_session, run_graph, isa):
    """Where the two kernels differ, the library and the model pick the same one: ``+0`` with
    a negative slope is ``+0`` in the jit kernel and ``-0`` in the reference kernel; ``x > 0``
    with an infinite slope is NaN in the jit kernel and ``x`` in the reference kernel."""
    x = np.array([[0.0, 1.0, -1.0, 0.5]], np.float32)
    for w, kernel in [(np.array([[-0.5, np.inf, 1.0, -np.inf]], np.float32), "jit"),
                      (np.array([-0.5], np.float32), "ref")]:
        attrs = {"data_format": "NCX", "per_channel_broadcast": False}
        (got,), (want,) = both(oracle, oracle_session, run_graph, "PReLU", attrs, [x, w], isa=isa)
        assert_bits(got, want)
        zero, pos = want[0, 0], want[0, 1]
        if kernel == "jit":
            assert not np.signbit(zero) and (w.size == 1 or np.isnan(pos))
        else:
            assert np.signbit(zero) and pos == 1.0


def test_prelu_slope_axes_rule(oracle, oracle_session, run_graph, isa):
    """NCX with per-channel broadcast reshapes a slope of rank n < src's to (1, *slope, 1, …)
    (not right-aligned): src (2, 3, 3, 3) with slope (3, 3) runs with slope (1, 3, 3, 1)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3)).astype(np.float32)
    attrs = {"data_format": "NCX"}
    (got,), (want,) = both(oracle, oracle_session, run_graph, "PReLU", attrs, [x, w], isa=isa)
    assert_bits(got, want)
    np.testing.assert_array_equal(want, np.where(x > 0, x, w.reshape(1, 3, 3, 1) * x))
    assert not np.array_equal(want, np.where(x > 0, x, w * x))  # right-aligned is not it


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("slope", [0.0, -0.0, 0.25, -0.5, np.inf, -np.inf, np.nan], ids=str)
@pytest.mark.parametrize("layout", ["ref", "jit"])
def test_prelu_special_slopes(oracle, oracle_session, run_graph, isa, dtype, slope, layout):
    x = specials(dtype).reshape(1, -1)
    if layout == "ref":  # one slope for a (1, 13) src: the reference kernel
        w = np.array([slope], dtype)
    else:  # a slope of src's shape: the jit kernel
        w = np.full(x.shape, slope, dtype)
    attrs = {"per_channel_broadcast": False}
    (got,), (want,) = both(oracle, oracle_session, run_graph, "PReLU", attrs, [x, w], isa=isa)
    assert_bits(got, want)


def test_prelu_underflow_keeps_the_fused_sign(oracle, oracle_session, run_graph, isa):
    """The jit kernel's FMA: a negative product that underflows is -0 (one rounding of
    ``x*w + 0``), where a multiply then an add would give +0 (AVX, SSE4.1)."""
    x = np.array([-1e-30, -1.0, 0.0, -0.0, -1e-30], np.float32)
    w = np.array([1e-20, 0.0, -0.5, -0.5, -1e-20], np.float32)
    (got,), (want,) = both(oracle, oracle_session, run_graph, "PReLU",
                           {"data_format": "NCX"}, [x, w], isa=isa)
    assert_bits(got, want)
    fused = isa not in ("avx", "sse41")
    assert np.signbit(want[0]) == fused and not np.signbit(want[1])


def test_prelu_strided_src(oracle, oracle_session, isa):
    """A column-major src runs the reference kernel (the jit kernels need C innermost or
    outermost after N); results and the row-major dst agree."""
    oracle.require("PReLU", "f32")
    o = oracle
    shape, cm = (2, 3, 4), (1, 2, 6)
    x, w = _prelu_values(np.random.default_rng(2), shape, (3,), np.dtype(np.float32))
    w[:] = [-0.5, np.inf, 0.25]
    xk = np.asfortranarray(x).ravel(order="K").copy()
    g = [o.logical_tensor(0, "f32", shape), o.logical_tensor(1, "f32", (3,)),
         o.logical_tensor(2, "f32", shape)]
    parts = o.build_graph([o.OpSpec(1, "PReLU", g[:2], g[2:], {"data_format": "NCX"})])
    try:
        src = o.logical_tensor(0, "f32", shape, strides=cm)
        cp = o.Compiled(oracle_session, parts[0], [src, g[1]], [g[2]])
        want = np.zeros(shape, np.float32)
        cp.execute([(src, xk), (g[1], w)], [(cp.query(2), want)])
        cp.destroy()
    finally:
        o.destroy_partitions(parts)
    eng = dg.Engine(isa=isa)
    S = dg.LogicalTensor(0, dg.DataType.f32, shape, strides=cm)
    W, D = dg.LogicalTensor(1, dg.DataType.f32, (3,)), dg.LogicalTensor(2, dg.DataType.f32, shape)
    op = dg.Op(1, dg.OpKind.PReLU, "", [dg.LogicalTensor(0, dg.DataType.f32, shape), W], [D])
    op.set_attr("data_format", "NCX")
    gr = dg.Graph()
    gr.add_op(op)
    gr.finalize()
    cpm = gr.get_partitions()[0].compile([S, W], [D], eng)
    out = dg.Tensor(cpm.query_logical_tensor(2), eng)
    cpm.execute(dg.Stream(eng), [dg.Tensor(S, eng, xk), dg.Tensor(W, eng, w)], [out])
    assert_bits(out.to_numpy(), want)
    assert cpm._plan.compare == "dnnl-ref"


# ---------------------------------------------------------------------------------------------
# PReLUBackward: the jit kernel's branches (x <= 0, x > 0, NaN in neither) and float32
# products; the reference kernel elsewhere


PRELU_BWD_CASES = [
    ((2, 3, 4, 5), (3,), "NCX"),          # PyTorch, per channel: jit
    ((2, 4, 5, 3), (3,), "NXC"),          # PyTorch, per channel, channels last: jit
    ((2, 3, 4, 5), (1,), "NCX"),          # PyTorch, per tensor: ref
    ((2, 3, 4, 5), (1,), "NXC"),
    ((2, 3, 4, 5), (3, 4, 5), "NCX"),     # TensorFlow: ref
    ((2, 3, 4, 5), (3, 4, 5), "NXC"),
    ((1, 3, 4, 5), (3, 4, 5), "NCX"),     # TensorFlow with N == 1: jit, full
    ((2, 3, 4, 5), (3, 1, 1), "NCX"),
    ((2, 3, 4, 5), (2, 3, 4, 5), "NCX"),  # full: jit, one term per element
    ((4, 6), (6,), "NCX"),
    ((4, 6), (6,), "NXC"),
    ((6,), (6,), "NCX"),                  # 1-D, full: jit
    ((6,), (1,), "NCX"),                  # ref, scalar
    ((2, 3, 4, 5), (1, 3, 1, 1), "NCX"),
    ((2, 1, 4, 5), (1,), "NCX"),          # C == 1: per-channel, jit
    ((2, 3, 4, 5, 2), (3,), "NCX"),
]


def _bwd_values(rng, src_shape, wei_shape, fmt, dtype):
    """``(src, slope, diff_dst)`` with special values where every sum of ``diff_slope`` is
    exact in any order: per slope element at most one finite nonzero term, the other terms
    ±0, ±inf or NaN (NaN src, x > 0, zeros, infinities, products that overflow float32), so
    the library's float32 sum and the model's compare bit for bit."""
    fi = ml_dtypes.finfo(dtype)
    big = float(fi.max)
    # (x, g) pairs whose term is ±0, ±inf or NaN in every kernel variant
    others = [(0.0, 1.0), (-0.0, 1.0), (-0.0, -2.0), (0.0, -1.0), (2.0, 3.0), (np.nan, 2.0),
              (-1.0, 0.0), (-1.0, -0.0), (-np.inf, 2.0), (-np.inf, 0.0), (np.inf, 2.0),
              (big, 3.0), (float(fi.smallest_subnormal), 5.0), (3.0, np.nan), (-2.0, np.inf),
              (np.nan, np.nan), (-0.5, np.nan)]
    if dtype != np.float16:  # float32 products of float16 values cannot overflow
        others += [(-big, big), (-big, -big)]
    n = int(np.prod(src_shape))
    shape = unsqueezed_slope(len(src_shape), wei_shape, fmt, len(wei_shape) == 1 and wei_shape[0] != 1)
    group = np.broadcast_to(np.arange(int(np.prod(shape))).reshape(shape), src_shape).reshape(-1)
    pick = rng.integers(0, len(others), n)
    x = np.array([others[k][0] for k in pick], np.float64)
    g = np.array([others[k][1] for k in pick], np.float64)
    for j in range(int(np.prod(shape))):  # one finite nonzero term in most groups
        members = np.flatnonzero(group == j)
        if members.size and j % 4 != 3:
            m = rng.choice(members)
            x[m], g[m] = -rng.integers(1, 9) / 2, rng.choice([-3.0, -1.5, 1.0, 2.5])
    if shape and int(np.prod(shape)) > 1:  # a group of -0 terms only: +0 (jit) or -0 (ref)
        members = np.flatnonzero(group == 1)
        x[members], g[members] = -0.0, 1.0
    w = np.resize(np.array([-2.5, np.inf, -0.0, 0.5, np.nan, 0.0], np.float64),
                  int(np.prod(wei_shape))).reshape(wei_shape)
    return (x.reshape(src_shape).astype(dtype), w.astype(dtype),
            g.reshape(src_shape).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("case", PRELU_BWD_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_prelu_backward_special_values(oracle, oracle_session, run_graph, isa, dtype, case):
    """NaN src (in neither branch of the jit kernel, in the reference kernel's sum),
    infinities, signed zeros and float32 products that overflow, in every slope layout."""
    src_shape, wei_shape, fmt = case
    x, w, g = _bwd_values(np.random.default_rng(3), src_shape, wei_shape, fmt, dtype)
    got, want = both(oracle, oracle_session, run_graph, "PReLUBackward", {"data_format": fmt},
                     [x, w, g], 2, [src_shape, wei_shape], isa=isa)
    assert_bits(got[0], want[0])
    assert_bits(got[1], want[1], nan_payload=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("case", PRELU_BWD_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_prelu_backward_matches_onednn(oracle, oracle_session, run_graph, isa, dtype, case):
    src_shape, wei_shape, fmt = case
    rng = np.random.default_rng(3)
    # small integers: every partial sum of diff_slope is exact in f32 (and in bf16/f16
    # after one rounding), so the summation order cannot matter and bits must agree
    x = rng.integers(-4, 5, src_shape).astype(dtype)
    x.reshape(-1)[:2] = np.array([0.0, -0.0], dtype)[: x.size]
    w = (rng.integers(-4, 5, wei_shape) / 4).astype(dtype)
    g = rng.integers(-3, 4, src_shape).astype(dtype)
    got, want = both(oracle, oracle_session, run_graph, "PReLUBackward", {"data_format": fmt},
                     [x, w, g], 2, [src_shape, wei_shape], isa=isa)
    assert_bits(got[0], want[0])
    assert_bits(got[1], want[1])


def _two_nans(dtype):
    """A quiet NaN of each sign with distinct payloads, and a signalling one (float32 only:
    the half types' conversions quiet it), as ``dtype``."""
    u = {4: np.uint32, 2: np.uint16}[dtype.itemsize]
    if dtype.itemsize == 4:
        raw = [0x7FC00001, 0xFFC00002, 0x7F800003]
    elif dtype == BF16:
        raw = [0x7FC1, 0xFFC2]
    else:
        raw = [0x7E01, 0xFE02]
    return np.array(raw, u).view(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("fmt,layout", [("NXC", "jit"), ("NCX", "ref")])
def test_two_nan_operands_keep_the_librarys_payload(oracle, oracle_session, run_graph, isa,
                                                    dtype, fmt, layout):
    """Where one multiply meets two NaNs of different payloads, x86 returns its first source's
    (quieted), and LLVM may swap the operands of a multiply: the model must keep the kernels'
    order. Every pairing of NaN payloads (both signs), signalling NaN, ±0, ±inf and finite
    values in src, slope and diff_dst, forward and backward, per channel (jit) and with a
    slope of src's trailing shape (reference)."""
    nans = _two_nans(dtype)
    vals = np.concatenate([nans, np.array([-1.0, 1.0, 0.0, -0.0, np.inf, -np.inf], dtype)])
    ws = np.concatenate([nans[::-1], np.array([np.inf, -np.inf, 0.0, -0.5], dtype)])
    x = np.repeat(vals, ws.size).reshape(1, vals.size, ws.size)
    w = ws if layout == "jit" else np.tile(ws, (vals.size, 1))
    got, want = both(oracle, oracle_session, run_graph, "PReLU",
                     {"data_format": fmt, "per_channel_broadcast": True}, [x, w], isa=isa)
    assert_bits(got[0], want[0])
    g = np.resize(nans, x.size).reshape(x.shape)
    got, want = both(oracle, oracle_session, run_graph, "PReLUBackward", {"data_format": fmt},
                     [x, w, g], 2, [x.shape, w.shape], isa=isa)
    assert_bits(got[0], want[0])
    assert_bits(got[1], want[1], nan_payload=False)


def test_prelu_backward_overflow_is_nan(oracle, oracle_session, run_graph, isa):
    """diff_slope sums float32 products: +inf and -inf products give NaN, as in the library
    (exact products would sum to a finite -3e38 here)."""
    x = np.array([[-3e38, -3e38, -1.0]], np.float32)
    g = np.array([[3e38, -2.0e38, 1.0]], np.float32)  # products: -inf (f32), +6e76 -> +inf
    w = np.array([0.5], np.float32)
    for fmt in ("NCX", "NXC"):
        got, want = both(oracle, oracle_session, run_graph, "PReLUBackward",
                         {"data_format": fmt}, [x, w, g], 2, [x.shape, w.shape], isa=isa)
        assert_bits(got[0], want[0])
        assert np.isnan(want[1]).all() and np.isnan(got[1]).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("case", [((4, 3, 6, 7), (3,), "NCX"), ((4, 6, 7, 3), (3,), "NXC"),
                                  ((4, 3, 6, 7), (1,), "NCX")], ids=str)
def test_prelu_backward_random_close(oracle, oracle_session, run_graph, isa, dtype, case):
    """General values: diff_src is bit-exact; diff_slope is the float32 products summed
    exactly and rounded once (a float64 ``math.fsum`` here), which the library's float32 sum
    agrees with to that sum's rounding."""
    import math

    src_shape, wei_shape, fmt = case
    rng = np.random.default_rng(8)
    # scaled so that no sum overflows f16
    x = (sample(rng, src_shape, np.dtype(np.float32), special=False) / 1024).astype(dtype)
    w = sample(rng, wei_shape, dtype, special=False)
    g = (sample(rng, src_shape, np.dtype(np.float32), special=False) / 1024).astype(dtype)
    got, want = both(oracle, oracle_session, run_graph, "PReLUBackward", {"data_format": fmt},
                     [x, w, g], 2, [x.shape, w.shape], isa=isa)
    assert_bits(got[0], want[0])
    x32, g32 = x.astype(np.float32), g.astype(np.float32)
    terms = np.where(x32 > 0, np.float32(0), g32 * x32)  # the kernels' float32 products
    c = 1 if fmt == "NCX" else -1
    per_w = np.moveaxis(terms, c, -1).reshape(-1, w.size) if w.size > 1 else terms.reshape(-1, 1)
    exact = np.array([math.fsum(per_w[:, j].astype(np.float64)) for j in range(w.size)])
    assert_bits(got[1], exact.astype(dtype))
    err_model = np.abs(got[1].astype(np.float64) - exact)
    err_dnnl = np.abs(want[1].astype(np.float64) - exact)
    scale = np.abs(per_w.astype(np.float64)).sum(axis=0)
    eps = float(ml_dtypes.finfo(np.float32).eps)
    assert np.all(err_model <= err_dnnl + float(ml_dtypes.finfo(dtype).eps) * np.abs(exact))
    assert np.all(err_dnnl <= per_w.shape[0] * eps * scale + float(ml_dtypes.finfo(dtype).eps)
                  * np.abs(exact) + 1e-30)


# ---------------------------------------------------------------------------------------------
# data types the library mixes at compile time: the slope (and diff_slope) may have its own;
# src, dst, diff_dst and diff_src may not


def _mixed_graph(oracle, kind, dts, shapes, attrs):
    o = oracle
    n_in = {"PReLU": 2, "PReLUBackward": 3}[kind]
    graph = [o.logical_tensor(i, "f32", s) for i, s in enumerate(shapes)]
    comp = [o.logical_tensor(i, d, s) for i, (d, s) in enumerate(zip(dts, shapes))]
    return graph[:n_in], graph[n_in:], comp[:n_in], comp[n_in:]


MIXED = [
    ("PReLU", ("f32", "bf16", "f32")), ("PReLU", ("f32", "f16", "f32")),
    ("PReLU", ("bf16", "f32", "bf16")), ("PReLU", ("bf16", "f16", "bf16")),
    ("PReLU", ("f16", "f32", "f16")), ("PReLU", ("f16", "bf16", "f16")),
    ("PReLUBackward", ("f32", "bf16", "f32", "f32", "bf16")),
    ("PReLUBackward", ("f32", "f16", "f32", "f32", "f32")),
    ("PReLUBackward", ("bf16", "f32", "bf16", "bf16", "f32")),
    ("PReLUBackward", ("bf16", "bf16", "bf16", "bf16", "f32")),
    ("PReLUBackward", ("f16", "bf16", "f16", "f16", "f16")),
    ("PReLUBackward", ("f32", "f32", "f32", "f32", "bf16")),
]


@pytest.mark.parametrize("kind,dts", MIXED, ids=lambda v: v if isinstance(v, str) else "-".join(v))
def test_mixed_slope_types_match_onednn(oracle, oracle_session, isa, kind, dts):
    for dt in set(dts):
        oracle.require(kind, dt)
    o = oracle
    n_in = {"PReLU": 2, "PReLUBackward": 3}[kind]
    shapes = [(2, 3, 4), (3,), (2, 3, 4)] if kind == "PReLU" else \
        [(2, 3, 4), (3,), (2, 3, 4), (2, 3, 4), (3,)]
    rng = np.random.default_rng(6)
    arrays = [sample(rng, s, o.np_dtype(d)) for s, d in zip(shapes[:n_in], dts[:n_in])]
    if kind == "PReLUBackward":
        arrays[2] = rng.integers(-3, 4, shapes[2]).astype(o.np_dtype(dts[2]))
        arrays[0] = rng.integers(-4, 5, shapes[0]).astype(o.np_dtype(dts[0]))
    gi, go, ci, co = _mixed_graph(o, kind, dts, shapes, {"data_format": "NCX"})
    parts = o.build_graph([o.OpSpec(1, kind, gi, go, {"data_format": "NCX"})])
    try:
        cp = o.Compiled(oracle_session, parts[0], ci, co)
        want = [np.zeros(s, o.np_dtype(d)) for s, d in zip(shapes[n_in:], dts[n_in:])]
        cp.execute(list(zip(ci, arrays)), [(cp.query(t.id), b) for t, b in zip(co, want)])
        cp.destroy()
    finally:
        o.destroy_partitions(parts)
    got = _model_run(kind, {"data_format": "NCX"}, dts, shapes, arrays, isa)
    for a, b in zip(got, want):
        assert_bits(a, b)


def _model_run(kind, attrs, dts, shapes, arrays, isa):
    n_in = len(arrays)
    eng = dg.Engine(isa=isa)
    graph = [dg.LogicalTensor(i, dg.DataType.f32, s) for i, s in enumerate(shapes)]
    comp = [dg.LogicalTensor(i, _DT[d], s) for i, (d, s) in enumerate(zip(dts, shapes))]
    op = dg.Op(1, kind, "", graph[:n_in], graph[n_in:])
    for k, v in attrs.items():
        op.set_attr(k, v)
    g = dg.Graph()
    g.add_op(op)
    g.finalize()
    cp = g.get_partitions()[0].compile(comp[:n_in], comp[n_in:], eng)
    outs = [dg.Tensor(cp.query_logical_tensor(t.id), eng) for t in comp[n_in:]]
    cp.execute(dg.Stream(eng), [dg.Tensor(t, eng, a) for t, a in zip(comp, arrays)], outs)
    return [t.to_numpy().copy() for t in outs]


# ---------------------------------------------------------------------------------------------
# errors: the status and the stage (add_op, finalize, compile), against the library


def _build_and_compile(oracle, session, kind, attrs, in_lts, out_lts, c_in=None, c_out=None):
    """Run the library's add_op/finalize/partition/compile; the DnnlError it raises, if any."""
    o = oracle
    try:
        parts = o.build_graph([o.OpSpec(1, kind, in_lts, out_lts, attrs)])
    except o.DnnlError as e:
        return e
    try:
        o.Compiled(session, parts[0], in_lts if c_in is None else c_in,
                   out_lts if c_out is None else c_out).destroy()
    except o.DnnlError as e:
        return e
    finally:
        o.destroy_partitions(parts)
    return None


def _model_compile(kind, attrs, in_lts, out_lts, c_in=None, c_out=None, isa=None):
    """The model's add_op/finalize/partition/compile; the Error it raises, if any, and where."""
    try:
        op = dg.Op(1, kind, "", in_lts, out_lts)
        for k, v in attrs.items():
            op.set_attr(k, v)
        g = dg.Graph()
        g.add_op(op)
    except dg.Error as e:
        return e, "add_op"
    try:
        g.finalize()
        (part,) = g.get_partitions()
    except dg.Error as e:
        return e, "finalize"
    try:
        part.compile(in_lts if c_in is None else c_in, out_lts if c_out is None else c_out,
                     dg.Engine(isa=isa))
    except dg.Error as e:
        return e, "compile"
    return None, None


ERROR_CASES = [
    # (kind, attrs, in shapes, out shapes, dtypes (in..., out...)), oneDNN's status, stage
    ("LeakyReLU", {}, [(2, 3)], [(2, 3)], None, "invalid_graph_op", "add_op"),
    ("LeakyReLU", {"alpha": 0.1, "beta": 1.0}, [(2, 3)], [(2, 3)], None, "invalid_graph_op",
     "add_op"),
    ("LeakyReLU", {"alpha": 0.1, "per_channel_broadcast": True}, [(2, 3)], [(2, 3)], None,
     "invalid_graph_op", "add_op"),
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3), (2, 3)], [(2, 3)], None, "invalid_graph_op", "add_op"),
    ("LeakyReLU", {"alpha": 0.1}, [], [(2, 3)], None, "invalid_graph_op", "add_op"),
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [], None, "invalid_graph_op", "add_op"),
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(2, 3)], ["f32", "bf16"], "invalid_graph_op",
     "add_op"),
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(2, 3)], ["f64", "f64"], "invalid_graph_op", "add_op"),
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(2, 3)], ["s32", "s32"], "invalid_graph_op", "add_op"),
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(3, 2)], None, "invalid_shape", "compile"),
    ("LeakyReLU", {"alpha": 0.1}, [(-2, 3)], [(2, 3)], None, "invalid_shape", "compile"),
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(-2, 3)], None, "invalid_shape", "compile"),
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(2, 3, 1)], None, "invalid_shape", "compile"),
    ("PReLU", {"data_format": "NHWC"}, [(2, 3), (3,)], [(2, 3)], None, "invalid_graph_op",
     "add_op"),
    ("PReLU", {}, [(2, 3), (3,)], [(2, 3)], ["f32", "bf16", "f32"], "invalid_graph_op", "add_op"),
    ("PReLU", {"data_format": "NCX"}, [(2, 3, 4, 5), (1,)], [(2, 3, 4, 5)], None, "invalid_shape",
     "compile"),
    ("PReLU", {"data_format": "NXC"}, [(2, 3, 4, 5), (3,)], [(2, 3, 4, 5)], None, "invalid_shape",
     "compile"),
    ("PReLU", {"data_format": "NCX"}, [(3, 5), (3,)], [(3, 5)], None, "invalid_shape", "compile"),
    ("PReLU", {"data_format": "NCX"}, [(2, 3, 4, 5), (2, 4, 5)], [(2, 3, 4, 5)], None,
     "invalid_shape", "compile"),
    ("PReLU", {"data_format": "NCX"}, [(2, 3, 4, 5), (1, 2, 3, 4, 5)], [(2, 3, 4, 5)], None,
     "invalid_shape", "compile"),
    ("PReLU", {}, [(2, 3, 4, 5), ()], [(2, 3, 4, 5)], None, "invalid_shape", "compile"),
    ("PReLU", {}, [(), ()], [()], None, "invalid_shape", "compile"),
    ("PReLU", {"data_format": "NCX"}, [(2, -2), (1,)], [(2, 3)], None, "invalid_shape", "compile"),
    ("PReLUBackward", {}, [(2, 3), (3,), (2, 3)], [(2, 3), (1, 3)], None, "invalid_shape",
     "compile"),
    ("PReLUBackward", {"data_format": "NCX"}, [(2, 3, 4), (4,), (2, 3, 4)], [(2, 3, 4), (4,)],
     None, "invalid_shape", "compile"),
    ("PReLUBackward", {"per_channel_broadcast": True}, [(2, 3), (3,), (2, 3)], [(2, 3), (3,)],
     None, "invalid_graph_op", "add_op"),
]


def _err_id(c):
    return f"{c[0]}-{sorted(c[1])}-{c[2]}-{c[3]}-{c[4]}"


@pytest.mark.parametrize("case", ERROR_CASES, ids=_err_id)
def test_errors_match_onednn(oracle, oracle_session, case):
    kind, attrs, in_shapes, out_shapes, dts, status, stage = case
    n_in = len(in_shapes)
    dts = dts or ["f32"] * (n_in + len(out_shapes))
    if dts[0] in ("f32", "bf16", "f16"):
        oracle.require(kind, dts[0])
    o = oracle
    in_lts = [o.logical_tensor(i, dts[i], s) for i, s in enumerate(in_shapes)]
    out_lts = [o.logical_tensor(n_in + j, dts[n_in + j], s) for j, s in enumerate(out_shapes)]
    real = _build_and_compile(o, oracle_session, kind, attrs, in_lts, out_lts)
    assert real is not None and real.status == status
    assert real.func.startswith({"add_op": "dnnl_graph_add_op",
                                 "compile": "dnnl_graph_partition_compile"}[stage]), real.func
    ins = [dg.LogicalTensor(i, _DT[dts[i]], s) for i, s in enumerate(in_shapes)]
    outs = [dg.LogicalTensor(n_in + j, _DT[dts[n_in + j]], s) for j, s in enumerate(out_shapes)]
    ours, where = _model_compile(kind, attrs, ins, outs)
    assert ours is not None and (ours.status.name, where) == (status, stage)


# compile-time logical tensors other than the graph's, against the library
COMPILE_CASES = [
    # (kind, attrs, graph in/out shapes, compile-time in/out (id, shape, dtype), status)
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(2, 3)], [(0, (2, 3), "f32"), (9, (5,), "f32")],
     [(1, (2, 3), "f32")], None),                                    # an extra input: fine
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(2, 3)], [(0, (2, 3), "f32"), (0, (4,), "f32")],
     [(1, None, "f32")], None),                                      # the first of an id wins
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(2, 3)], [(7, (2, 3), "f32")],
     [(1, (2, 3), "f32")], "invalid_arguments"),                     # no input of the port's id
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(2, 3)], [(0, (2, 3), "f32")], [],
     "invalid_arguments"),                                           # no output
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(2, 3)], [(0, (2, 3), "f32")],
     [(9, (2, 3), "f32"), (1, (2, 3), "f32")], None),                # an extra output: fine
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(2, 3)], [(0, "unknown-dim", "f32")],
     [(1, (2, 3), "f32")], "invalid_arguments"),                     # an INT64_MIN input dim
    ("LeakyReLU", {"alpha": 0.1}, [(2, 3)], [(2, 3)], [(0, (2, 3), "f32")],
     [(1, "unknown-dim", "f32")], None),                             # inferred
    ("PReLU", {}, [(2, 3), (3,)], [(2, 3)], [(0, (2, 3), "f32"), (1, (3,), "f32")],
     [(2, (2, 3), "bf16")], "unimplemented"),                        # dst type != src type
    ("PReLU", {}, [(2, 3), (3,)], [(2, 3)], [(1, (3,), "f32"), (0, (2, 3), "f32")],
     [(2, (2, 3), "f32")], None),                                    # another order: fine
]


@pytest.mark.parametrize("case", COMPILE_CASES, ids=lambda c: f"{c[0]}-{c[4]}-{c[5]}")
def test_compile_time_logical_tensors_match_onednn(oracle, oracle_session, case):
    kind, attrs, g_in, g_out, c_in, c_out, status = case
    oracle.require(kind, "f32")
    o = oracle
    n_in = len(g_in)

    def real_lt(i, shape, dt):
        if shape == "unknown-dim":
            return o.logical_tensor(i, dt, (-1, 3))  # the oracle spells INT64_MIN as -1
        return o.logical_tensor(i, dt, shape, ndims=-1 if shape is None else None)

    def model_lt(i, shape, dt):
        if shape == "unknown-dim":
            return dg.LogicalTensor(i, _DT[dt], (dg.DNNL_GRAPH_UNKNOWN_DIM, 3))
        return dg.LogicalTensor(i, _DT[dt], shape, ndims=-1 if shape is None else None)

    gi = [o.logical_tensor(i, "f32", s) for i, s in enumerate(g_in)]
    go = [o.logical_tensor(n_in + j, "f32", s) for j, s in enumerate(g_out)]
    real = _build_and_compile(o, oracle_session, kind, attrs, gi, go,
                              [real_lt(*t) for t in c_in], [real_lt(*t) for t in c_out])
    assert (None if real is None else real.status) == status
    mi = [dg.LogicalTensor(i, dg.DataType.f32, s) for i, s in enumerate(g_in)]
    mo = [dg.LogicalTensor(n_in + j, dg.DataType.f32, s) for j, s in enumerate(g_out)]
    ours, _ = _model_compile(kind, attrs, mi, mo, [model_lt(*t) for t in c_in],
                             [model_lt(*t) for t in c_out])
    assert (None if ours is None else ours.status.name) == status


def test_unsupported_partition_compile_matches_onednn(oracle, oracle_session):
    oracle.require("LeakyReLU", "f32")  # (compiling a Wildcard runs no kernel; the probe guards)
    o = oracle
    a, b = o.logical_tensor(0, "f32", (2, 3)), o.logical_tensor(1, "f32", (2, 3))
    real = _build_and_compile(o, oracle_session, "Wildcard", {}, [a], [b])
    A, B = dg.LogicalTensor(0, dg.DataType.f32, (2, 3)), dg.LogicalTensor(1, dg.DataType.f32, (2, 3))
    ours, where = _model_compile(dg.OpKind.Wildcard, {}, [A], [B])
    assert real.status == ours.status.name == "invalid_arguments" and where == "compile"


# the cases the library crashes or aborts on: (model's compile arguments, the library's
# statement in a child process, the primitive API's statement of the intended status)
_PRIM = "S = o.Session()\n"
CRASH_CASES = [
    ("LeakyReLU bf16 dst", "LeakyReLU", {"alpha": 0.5}, [((2, 3), "f32")], [((2, 3), "bf16")],
     ("LeakyReLU", [((2, 3), "f32"), ((2, 3), "bf16")]), "unimplemented"),
    ("PReLU 6-D", "PReLU", {"data_format": "NCX"}, [((2, 3, 2, 1, 2, 2), "f32"), ((3,), "f32")],
     [((2, 3, 2, 1, 2, 2), "f32")],
     ("PReLU", [((2, 3, 2, 1, 2, 2), "f32"), ((1, 3, 1, 1, 1, 1), "f32"),
                ((2, 3, 2, 1, 2, 2), "f32")]), "invalid_arguments"),
    ("PReLU slope (4,5) reshaped to (1,4,5,1)", "PReLU", {"data_format": "NCX"},
     [((2, 3, 4, 5), "f32"), ((4, 5), "f32")], [((2, 3, 4, 5), "f32")],
     ("PReLU", [((2, 3, 4, 5), "f32"), ((1, 4, 5, 1), "f32"), ((2, 3, 4, 5), "f32")]),
     "invalid_arguments"),
    ("PReLUBackward diff_dst shape", "PReLUBackward", {"data_format": "NCX"},
     [((2, 3, 4), "f32"), ((3,), "f32"), ((2, 3, 5), "f32")], [((2, 3, 4), "f32"), ((3,), "f32")],
     ("PReLUBackward", [((2, 3, 4), "f32"), ((1, 3, 1), "f32"), ((2, 3, 4), "f32"),
                        ((1, 3, 1), "f32"), ((2, 3, 5), "f32")]), "invalid_arguments"),
    ("PReLUBackward diff_src type", "PReLUBackward", {"data_format": "NCX"},
     [((2, 3, 4), "f32"), ((3,), "f32"), ((2, 3, 4), "f32")], [((2, 3, 4), "bf16"), ((3,), "f32")],
     ("PReLUBackward", [((2, 3, 4), "f32"), ((1, 3, 1), "f32"), ((2, 3, 4), "bf16"),
                        ((1, 3, 1), "f32"), ((2, 3, 4), "f32")]), "unimplemented"),
    ("PReLUBackward diff_dst type", "PReLUBackward", {"data_format": "NCX"},
     [((2, 3, 4), "f32"), ((3,), "f32"), ((2, 3, 4), "bf16")], [((2, 3, 4), "f32"), ((3,), "f32")],
     ("PReLUBackward", [((2, 3, 4), "f32"), ((1, 3, 1), "f32"), ((2, 3, 4), "f32"),
                        ((1, 3, 1), "f32"), ((2, 3, 4), "bf16")]), "unimplemented"),
    ("PReLUBackward column-major src", "PReLUBackward", {"data_format": "NCX"},
     [((2, 3, 4), "f32", (1, 2, 6)), ((3,), "f32"), ((2, 3, 4), "f32")],
     [((2, 3, 4), "f32"), ((3,), "f32")],
     ("PReLUBackward", [((2, 3, 4), "f32", [1, 2, 6]), ((1, 3, 1), "f32"), ((2, 3, 4), "f32"),
                        ((1, 3, 1), "f32"), ((2, 3, 4), "f32")]), "unimplemented"),
    ("LeakyReLU f64 src", "LeakyReLU", {"alpha": 0.5}, [((2, 3), "f64")], [((2, 3), "f32")],
     ("LeakyReLU", [((2, 3), "f64"), ((2, 3), "f32")]), "unimplemented"),
    ("LeakyReLU s32 dst", "LeakyReLU", {"alpha": 0.5}, [((2, 3), "f32")], [((2, 3), "s32")],
     ("LeakyReLU", [((2, 3), "f32"), ((2, 3), "s32")]), "unimplemented"),
    ("PReLU 1-D NXC", "PReLU", {"data_format": "NXC"}, [((5,), "f32"), ((5,), "f32")],
     [((5,), "f32")], None, "invalid_shape"),
    ("PReLUBackward 1-D NXC", "PReLUBackward", {"data_format": "NXC"},
     [((5,), "f32"), ((5,), "f32"), ((5,), "f32")], [((5,), "f32"), ((5,), "f32")], None,
     "invalid_shape"),
]


@pytest.mark.parametrize("case", CRASH_CASES, ids=lambda c: c[0])
def test_where_the_library_crashes_the_model_raises(oracle, oracle_session, case):
    """The library dies (a C++ exception through its C interface, or a segfault) at compile;
    the model raises the status the library's primitive API gives for the same descriptors."""
    _, kind, attrs, ins, outs, prim, status = case
    n_in = len(ins)
    spec = (f"lts = [o.logical_tensor(i, t[1], t[0], strides=(t[2] if len(t) > 2 else None)) "
            f"for i, t in enumerate({ins + outs!r})]\n"
            f"gl = [o.logical_tensor(i, 'f32', t[0]) for i, t in enumerate({ins + outs!r})]\n"
            f"parts = o.build_graph([o.OpSpec(1, {kind!r}, gl[:{n_in}], gl[{n_in}:], {attrs!r})])\n"
            f"o.Compiled(S, parts[0], lts[:{n_in}], lts[{n_in}:])\n")
    died = oracle.crashes(_PRIM + spec)
    assert died is not None, "the library survived: the model's error is no longer needed"
    if prim is not None:
        assert oracle.primitive_status(oracle_session, *prim) == status
    graph = [dg.LogicalTensor(i, dg.DataType.f32, t[0]) for i, t in enumerate(ins + outs)]
    comp = [dg.LogicalTensor(i, _DT[t[1]], t[0], strides=t[2] if len(t) > 2 else None)
            for i, t in enumerate(ins + outs)]
    ours, where = _model_compile(kind, attrs, graph[:n_in], graph[n_in:], comp[:n_in],
                                 comp[n_in:])
    assert ours is not None and (ours.status.name, where) == (status, "compile"), ours
    assert "aborts" in str(ours) or "crashes" in str(ours)


def test_empty_channel_backward_crashes_the_library_and_runs_here(oracle, run_graph):
    """PReLUBackward with a slope of length 0 (C = 0): the library dies of SIGFPE while
    creating its reference kernel (a division by the slope's size); the reference kernel
    returns at once on empty tensors, and so does the model (empty outputs)."""
    code = ("import numpy as np\nS = o.Session()\n"
            "z = np.zeros((2, 0, 3), np.float32)\n"
            "o.run_single(S, 'PReLUBackward', {'data_format': 'NCX'}, "
            "[z, np.zeros((0,), np.float32), z], [((2, 0, 3), 'f32'), ((0,), 'f32')])\n")
    assert oracle.crashes(code) == "signal 8"
    dx, dw = run_graph("PReLUBackward", {"data_format": "NCX"},
                       [np.zeros((2, 0, 3), np.float32), np.zeros((0,), np.float32),
                        np.zeros((2, 0, 3), np.float32)], 2)
    assert dx.shape == (2, 0, 3) and dw.shape == (0,)


def test_isa_without_kernels_is_unimplemented_where_the_library_aborts(oracle):
    """With ``Engine(isa=...)`` below a data type's kernels, compiling is ``unimplemented``;
    the library, capped there, aborts (checked in a child process)."""
    for isa, dt, fails in [("avx512_core_bf16", dg.DataType.f16, True),
                           ("avx512_core_fp16", dg.DataType.f16, False),
                           ("avx2", dg.DataType.bf16, True), ("avx512_core", dg.DataType.bf16, False)]:
        a, b = dg.LogicalTensor(0, dt, (2, 3)), dg.LogicalTensor(1, dt, (2, 3))
        ours, _ = _model_compile("LeakyReLU", {"alpha": 0.5}, [a], [b], isa=isa)
        assert (ours is not None and ours.status == dg.Status.unimplemented) == fails, (isa, dt)
    import os
    import subprocess
    import sys

    code = ("import sys; sys.path.insert(0, sys.argv[1]); import dnnl_oracle as o; o.load()\n"
            "import numpy as np\n"
            "o.run_single(o.Session(), 'LeakyReLU', {'alpha': 0.5}, "
            "[np.ones((2, 3), o.np_dtype('f16'))], [((2, 3), 'f16')])\n")
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_BF16")
    proc = subprocess.run([sys.executable, "-c", code, os.path.dirname(oracle.__file__)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0


# ---------------------------------------------------------------------------------------------
# binding: execute binds tensors by position (the i-th tensor is the buffer of the i-th
# compile-time logical tensor), reads them as compiled, and ignores their logical tensors


def _prelu_pair(oracle, session, isa, compile_order, execute_order):
    """The library's and the model's PReLU dst for the given compile and execute orders of
    "src" (2, 3), "slope" (3,) and "extra" (a logical tensor of a foreign id). Every buffer
    holds six floats, so any of them can be read as any of the three."""
    oracle.require("PReLU", "f32")
    o = oracle
    bufs = {"src": np.array([-1.0, 2.0, -3.0, 4.0, -5.0, 6.0], np.float32),
            "slope": np.array([0.5, 2.0, 4.0, 8.0, 16.0, 32.0], np.float32),
            "extra": np.array([-7.0, 0.25, -0.5, 3.0, -9.0, 1.0], np.float32)}
    shapes = {"src": (2, 3), "slope": (3,), "extra": (6,)}
    ids = {"src": 0, "slope": 1, "extra": 9}
    lts = {k: o.logical_tensor(ids[k], "f32", shapes[k]) for k in ids}
    out = o.logical_tensor(2, "f32", (2, 3))
    parts = o.build_graph([o.OpSpec(1, "PReLU", [lts["src"], lts["slope"]], [out], {})])
    try:
        cp = o.Compiled(session, parts[0], [lts[k] for k in compile_order], [out])
        want = np.zeros((2, 3), np.float32)
        cp.execute([(lts[k], bufs[k]) for k in execute_order], [(out, want)])
        cp.destroy()
    finally:
        o.destroy_partitions(parts)
    eng = dg.Engine(isa=isa)
    L = {k: dg.LogicalTensor(ids[k], dg.DataType.f32, shapes[k]) for k in ids}
    D = dg.LogicalTensor(2, dg.DataType.f32, (2, 3))
    g = dg.Graph()
    g.add_op(dg.Op(1, dg.OpKind.PReLU, "", [L["src"], L["slope"]], [D]))
    g.finalize()
    cpm = g.get_partitions()[0].compile([L[k] for k in compile_order], [D], eng)
    got = dg.Tensor(D, eng)
    cpm.execute(dg.Stream(eng), [dg.Tensor(L[k], eng, bufs[k]) for k in execute_order], [got])
    return got.to_numpy(), want


@pytest.mark.parametrize("compile_order,execute_order", [
    (("src", "slope"), ("src", "slope")),
    (("src", "slope"), ("slope", "src")),          # swapped: the slope's buffer is read as src
    (("slope", "src"), ("slope", "src")),          # compiled the other way round
    (("slope", "src"), ("src", "slope")),
    (("src", "extra", "slope"), ("src", "extra", "slope")),   # an extra input keeps its place
    (("src", "extra", "slope"), ("src", "slope", "extra")),
], ids=lambda v: "-".join(v))
def test_execute_binds_by_position(oracle, oracle_session, isa, compile_order, execute_order):
    got, want = _prelu_pair(oracle, oracle_session, isa, compile_order, execute_order)
    assert_bits(got, want)


def test_execute_ignores_the_tensors_logical_tensors(oracle, oracle_session, isa):
    """The compiled (2, 3) LeakyReLU runs on tensors that say (12,): six elements are read
    and written, as compiled."""
    oracle.require("LeakyReLU", "f32")
    o = oracle
    a, b = o.logical_tensor(0, "f32", (2, 3)), o.logical_tensor(1, "f32", (2, 3))
    parts = o.build_graph([o.OpSpec(1, "LeakyReLU", [a], [b], {"alpha": 0.5})])
    x = np.arange(-6, 6, dtype=np.float32)
    want = np.full(12, 7.0, np.float32)
    try:
        cp = o.Compiled(oracle_session, parts[0], [a], [b])
        cp.execute([(o.logical_tensor(5, "f32", (12,)), x)], [(o.logical_tensor(6, "f32", (12,)), want)])
        cp.destroy()
    finally:
        o.destroy_partitions(parts)
    eng = dg.Engine(isa=isa)
    A, B = dg.LogicalTensor(0, dg.DataType.f32, (2, 3)), dg.LogicalTensor(1, dg.DataType.f32, (2, 3))
    op = dg.Op(1, dg.OpKind.LeakyReLU, "", [A], [B])
    op.set_attr("alpha", 0.5)
    g = dg.Graph()
    g.add_op(op)
    g.finalize()
    cpm = g.get_partitions()[0].compile([A], [B], eng)
    got = np.full(12, 7.0, np.float32)
    cpm.execute(dg.Stream(eng), [dg.Tensor(dg.LogicalTensor(5, dg.DataType.f32, (12,)), eng, x)],
                [dg.Tensor(dg.LogicalTensor(6, dg.DataType.f32, (12,)), eng, got)])
    assert_bits(got, want)
    assert (want[6:] == 7.0).all()


def test_duplicate_ports_match_onednn(oracle, oracle_session, isa):
    """``prelu(x, x)``: the partition's input ports are [x, x]; compiling with [x] or [x, x]
    works, and executing with one tensor runs both roles on it."""
    oracle.require("PReLU", "f32")
    o = oracle
    a, b = o.logical_tensor(0, "f32", (2, 3)), o.logical_tensor(1, "f32", (2, 3))
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    parts = o.build_graph([o.OpSpec(1, "PReLU", [a, a], [b], {})])
    results = []
    try:
        ports = [t.id for t in parts[0].inputs]
        for comp, ex in [([a], [x]), ([a, a], [x, x]), ([a, a], [x])]:
            cp = o.Compiled(oracle_session, parts[0], comp, [b])
            y = np.zeros((2, 3), np.float32)
            cp.execute([(a, t) for t in ex], [(b, y)])
            cp.destroy()
            results.append(y)
    finally:
        o.destroy_partitions(parts)
    eng = dg.Engine(isa=isa)
    A, B = dg.LogicalTensor(0, dg.DataType.f32, (2, 3)), dg.LogicalTensor(1, dg.DataType.f32, (2, 3))
    g = dg.Graph()
    g.add_op(dg.Op(1, dg.OpKind.PReLU, "", [A, A], [B]))
    g.finalize()
    (part,) = g.get_partitions()
    assert [t.get_id() for t in part.get_input_ports()] == ports == [0, 0]
    for (comp, ex), want in zip([([A], [x]), ([A, A], [x, x]), ([A, A], [x])], results):
        cp = part.compile(comp, [B], eng)
        out = dg.Tensor(B, eng)
        cp.execute(dg.Stream(eng), [dg.Tensor(A, eng, t) for t in ex], [out])
        assert_bits(out.to_numpy(), want)
    cp = part.compile(part.get_input_ports(), part.get_output_ports(), eng)
    assert cp.get_inplace_ports() == []


def test_queries_and_inplace_ports_match_onednn(oracle, oracle_session):
    """``get_inplace_ports`` is empty for all three ops; a query of an id that is no port gives
    oneDNN's empty logical tensor (id 2**64-1, rank unknown, undef type, layout any)."""
    for kind in ("LeakyReLU", "PReLU", "PReLUBackward"):
        oracle.require(kind, "f32")
    o = oracle
    for kind, shapes, attrs in [("LeakyReLU", [(2, 3), (2, 3)], {"alpha": 0.5}),
                                ("PReLU", [(2, 3), (3,), (2, 3)], {}),
                                ("PReLUBackward", [(2, 3), (3,), (2, 3), (2, 3), (3,)], {})]:
        n_in = {"LeakyReLU": 1, "PReLU": 2, "PReLUBackward": 3}[kind]
        lts = [o.logical_tensor(i, "f32", s) for i, s in enumerate(shapes)]
        extra = o.logical_tensor(42, "f32", (7,))
        parts = o.build_graph([o.OpSpec(1, kind, lts[:n_in], lts[n_in:], attrs)])
        try:
            cp = o.Compiled(oracle_session, parts[0], lts[:n_in] + [extra], lts[n_in:])
            real_inplace = cp.inplace_ports()
            q = cp.query(42)
            real_q = (q.id, q.ndims, q.data_type, q.layout_type)
            cp.destroy()
        finally:
            o.destroy_partitions(parts)
        L = [dg.LogicalTensor(i, dg.DataType.f32, s) for i, s in enumerate(shapes)]
        op = dg.Op(1, kind, "", L[:n_in], L[n_in:])
        for k, v in attrs.items():
            op.set_attr(k, v)
        g = dg.Graph()
        g.add_op(op)
        g.finalize()
        cpm = g.get_partitions()[0].compile(L[:n_in] + [dg.LogicalTensor(42, dg.DataType.f32, (7,))],
                                            L[n_in:], dg.Engine())
        qm = cpm.query_logical_tensor(42)
        assert cpm.get_inplace_ports() == real_inplace == []
        assert (qm.get_id(), qm.ndims, int(qm.get_data_type()), int(qm.get_layout_type())) \
            == real_q == (2**64 - 1, -1, 0, 1)


# ---------------------------------------------------------------------------------------------
# graphs, ports, inference


def test_chained_graph_matches_onednn(oracle, oracle_session, isa):
    """LeakyReLU -> PReLU: two partitions in order, executed one after the other."""
    oracle.require("LeakyReLU", "f32")
    oracle.require("PReLU", "f32")
    rng = np.random.default_rng(2)
    x = sample(rng, (2, 4, 3, 3), np.dtype(np.float32))
    w = sample(rng, (4,), np.dtype(np.float32), special=False)
    o = oracle
    lts = [o.logical_tensor(0, "f32", x.shape), o.logical_tensor(1, "f32", x.shape),
           o.logical_tensor(2, "f32", w.shape), o.logical_tensor(3, "f32", x.shape)]
    parts = o.build_graph([
        o.OpSpec(10, "LeakyReLU", [lts[0]], [lts[1]], {"alpha": 0.25}),
        o.OpSpec(11, "PReLU", [lts[1], lts[2]], [lts[3]], {"data_format": "NCX"}),
    ])
    try:
        assert [p.op_ids for p in parts] == [[10], [11]]
        mid, want = np.empty_like(x), np.empty_like(x)
        cp0 = o.Compiled(oracle_session, parts[0], [lts[0]], [lts[1]])
        cp1 = o.Compiled(oracle_session, parts[1], [lts[1], lts[2]], [lts[3]])
        cp0.execute([(lts[0], x)], [(lts[1], mid)])
        cp1.execute([(lts[1], mid), (lts[2], w)], [(lts[3], want)])
        cp0.destroy()
        cp1.destroy()
    finally:
        o.destroy_partitions(parts)

    eng = dg.Engine(isa=isa)
    strm = dg.Stream(eng)
    L = [dg.LogicalTensor(i, dg.DataType.f32, s)
         for i, s in enumerate([x.shape, x.shape, w.shape, x.shape])]
    g = dg.Graph()
    op1 = dg.Op(11, dg.OpKind.PReLU, "prelu", [L[1], L[2]], [L[3]])
    op1.set_attr("data_format", "NCX")
    op0 = dg.Op(10, dg.OpKind.LeakyReLU, "lrelu", [L[0]], [L[1]])
    op0.set_attr(dg.OpAttr.alpha, 0.25)
    g.add_op(op1)  # added out of order: partitions still come in topological order
    g.add_op(op0)
    g.finalize()
    p0, p1 = g.get_partitions()
    assert (p0.get_ops(), p1.get_ops()) == ([10], [11])
    c0 = p0.compile([L[0]], [L[1]], eng)
    c1 = p1.compile([L[1], L[2]], [L[3]], eng)
    t_mid = dg.Tensor(L[1], eng)
    t_out = dg.Tensor(L[3], eng)
    c0.execute(strm, [dg.Tensor(L[0], eng, x)], [t_mid])
    c1.execute(strm, [t_mid, dg.Tensor(L[2], eng, w)], [t_out])
    assert_bits(t_out.to_numpy(), want)
    # finite values: the same as the core's own operators
    fin = np.isfinite(x) & (x != 0)
    core = leakyops.prelu(leakyops.leaky_relu(x, np.float32(0.25)), w)
    np.testing.assert_array_equal(t_out.to_numpy()[fin], core[fin])


def test_partition_ports_and_support_match_onednn(oracle):
    o = oracle
    a, b, c = (o.logical_tensor(i, "f32", (2, 3)) for i in range(3))
    parts = o.build_graph([
        o.OpSpec(1, "LeakyReLU", [a], [b], {"alpha": 0.1}),
        o.OpSpec(2, "Wildcard", [b], [c], {}),
    ])
    try:
        real = [(p.supported, p.op_ids, [t.id for t in p.inputs], [t.id for t in p.outputs])
                for p in parts]
    finally:
        o.destroy_partitions(parts)
    A, B, C = (dg.LogicalTensor(i, dg.DataType.f32, (2, 3)) for i in range(3))
    g = dg.Graph()
    op = dg.Op(1, dg.OpKind.LeakyReLU, "", [A], [B])
    op.set_attr("alpha", 0.1)
    g.add_op(op)
    g.add_op(dg.Op(2, dg.OpKind.Wildcard, "", [B], [C]))
    g.finalize()
    ours = [(p.is_supported(), p.get_ops(), [t.get_id() for t in p.get_input_ports()],
             [t.get_id() for t in p.get_output_ports()]) for p in g.get_partitions()]
    assert ours == real == [(True, [1], [0], [1]), (False, [2], [1], [2])]


def test_compile_infers_shape_like_onednn(oracle, oracle_session):
    oracle.require("LeakyReLU", "bf16")
    o = oracle
    src, dst = o.logical_tensor(0, "bf16", (3, 4)), o.logical_tensor(1, "bf16", None, ndims=-1)
    parts = o.build_graph([o.OpSpec(1, "LeakyReLU", [src], [dst], {"alpha": 0.1})])
    try:
        # compile-time shapes may differ from the graph's (oneDNN accepts them)
        src2 = o.logical_tensor(0, "bf16", (5, 2))
        cp = o.Compiled(oracle_session, parts[0], [src2], [dst])
        q = cp.query(1)
        real = (q.shape, q.strides)
        cp.destroy()
    finally:
        o.destroy_partitions(parts)
    S, D = dg.LogicalTensor(0, dg.DataType.bf16, (3, 4)), dg.LogicalTensor(1, dg.DataType.bf16, ndims=-1)
    op = dg.Op(1, dg.OpKind.LeakyReLU, "", [S], [D])
    op.set_attr("alpha", 0.1)
    g = dg.Graph()
    g.add_op(op)
    g.finalize()
    cp = g.get_partitions()[0].compile([dg.LogicalTensor(0, dg.DataType.bf16, (5, 2))], [D],
                                       dg.Engine())
    q = cp.query_logical_tensor(1)
    assert (tuple(q.get_dims()), tuple(q.get_strides())) == real == ((5, 2), (2, 1))


def test_logical_tensor_with_negative_dims_matches_onednn(oracle, oracle_session):
    """A dim of -2 is accepted when the logical tensor is made and when the op is added, and
    is ``invalid_shape`` at compile (an unknown dim, INT64_MIN, is ``invalid_arguments``)."""
    oracle.require("LeakyReLU", "f32")
    o = oracle
    a, b = o.logical_tensor(0, "f32", (-2, 3)), o.logical_tensor(1, "f32", (2, 3))
    assert a.shape == (-2, 3)
    real = _build_and_compile(o, oracle_session, "LeakyReLU", {"alpha": 0.5}, [a], [b])
    assert real.status == "invalid_shape" and real.func == "dnnl_graph_partition_compile"
    A = dg.LogicalTensor(0, dg.DataType.f32, (-2, 3))
    assert A.get_dims() == [-2, 3] and not A.is_shape_known()
    ours, where = _model_compile("LeakyReLU", {"alpha": 0.5}, [A],
                                 [dg.LogicalTensor(1, dg.DataType.f32, (2, 3))])
    assert (ours.status.name, where) == ("invalid_shape", "compile")


def test_kinds_of_cases_are_all_here():
    """The generated cases cover every kind of disagreement found against the real library (a
    guard against a table losing a kind): special values in every slope layout, NaN in the backward, overflow, binding
    order, and every error stage."""
    kernels = {c[3] for c in PRELU_CASES}
    fmts = {c[2].get("data_format", "NXC") for c in PRELU_CASES}
    pcbs = {c[2].get("per_channel_broadcast", True) for c in PRELU_CASES}
    assert kernels == {"jit", "ref"} and fmts == {"NCX", "NXC"} and pcbs == {True, False}
    stages = {c[6] for c in ERROR_CASES}
    assert stages == {"add_op", "compile"} and CRASH_CASES and COMPILE_CASES
    statuses = {c[5] for c in ERROR_CASES} | {c[6] for c in CRASH_CASES} | \
        {c[6] for c in COMPILE_CASES if c[6]}
    assert statuses >= {"invalid_graph_op", "invalid_shape", "invalid_arguments", "unimplemented"}
    assert len(list(itertools.chain(PRELU_BWD_CASES))) >= 10


# ---------------------------------------------------------------------------------------------
# random graphs: every op, dtype, rank 1-5, format, broadcast mode and slope layout, with
# special values everywhere


def _random_graph(rng, dts):
    kind = str(rng.choice(["LeakyReLU", "PReLU", "PReLU", "PReLUBackward", "PReLUBackward"]))
    dt = np.dtype(rng.choice(dts))
    rank = int(rng.integers(1, 6))
    src = tuple(int(d) for d in rng.integers(1, 5, rank))

    def values(shape):
        x = (rng.standard_normal(shape) * np.exp2(rng.integers(-10, 6, shape))).astype(dt)
        special = rng.random(shape) < 0.4
        x[special] = rng.choice(specials(dt), int(special.sum()))
        return x

    if kind == "LeakyReLU":
        alpha = float(rng.choice([0.0, -0.0, 0.5, -2.0, np.inf, np.nan, 1e-30, 0.01]))
        return kind, {"alpha": alpha}, [values(src)], [src]
    fmt = str(rng.choice(["NCX", "NXC"]))
    attrs = {"data_format": fmt}
    if kind == "PReLU":
        attrs["per_channel_broadcast"] = bool(rng.integers(0, 2))
    form = int(rng.integers(0, 5))
    if form == 0:
        wei = (src[1] if rank > 1 and fmt == "NCX" else src[-1],)
    elif form == 1:
        wei = (1,)
    elif form == 2:
        wei = src
    elif form == 3:
        r = int(rng.integers(1, rank + 1))
        wei = tuple(d if rng.random() < 0.6 else 1 for d in src[rank - r:])
    else:
        wei = src[1:] if rank > 1 else (1,)
    if kind == "PReLU":
        return kind, attrs, [values(src), values(wei)], [src]
    return kind, attrs, [values(src), values(wei), values(src)], [src, wei]


@pytest.mark.parametrize("seed", range(8))
def test_random_graphs_match_onednn(oracle, oracle_session, run_graph, isa, seed):
    """25 random graphs per seed. Results agree bit for bit, except ``diff_slope``'s NaN
    payloads and its last bits where the library's float32 sum rounds (within the float32
    summation bound); errors agree in status and stage; where the model says the library
    aborts, it is not run here (the crash tests check those)."""
    dts = [dt for dt in ("f32", "bf16", "f16") if oracle.probe("PReLUBackward", dt) is None
           and oracle.probe("PReLU", dt) is None and oracle.probe("LeakyReLU", dt) is None]
    for kind in ("LeakyReLU", "PReLU", "PReLUBackward"):
        oracle.require(kind, "f32")
    rng = np.random.default_rng(100 + seed)
    o = oracle
    compared = 0
    for _ in range(25):
        kind, attrs, arrays, out_shapes = _random_graph(rng, [o.np_dtype(d) for d in dts])
        dt = o.dt_name(arrays[0].dtype)
        try:
            got = run_graph(kind, attrs, arrays, len(out_shapes), out_shapes=out_shapes, isa=isa)
        except dg.Error as e:
            if "aborts" in str(e) or "crashes" in str(e):
                continue
            in_lts = [o.logical_tensor(i, dt, a.shape) for i, a in enumerate(arrays)]
            out_lts = [o.logical_tensor(len(arrays) + j, dt, s) for j, s in enumerate(out_shapes)]
            real = _build_and_compile(o, oracle_session, kind, attrs, in_lts, out_lts)
            assert real is not None and real.status == e.status.name, (kind, attrs, e)
            compared += 1
            continue
        want = o.run_single(oracle_session, kind, attrs, arrays, [(s, dt) for s in out_shapes])
        assert_bits(got[0], want[0])
        if kind == "PReLUBackward":
            a, b = got[1].astype(np.float64), want[1].astype(np.float64)
            same = (bits(got[1]) == bits(want[1])) | (np.isnan(a) & np.isnan(b))
            x64, g64 = arrays[0].astype(np.float64), arrays[2].astype(np.float64)
            shape = unsqueezed_slope(x64.ndim, arrays[1].shape, attrs["data_format"],
                                     arrays[1].ndim == 1 and arrays[1].shape[0] != 1)
            with np.errstate(invalid="ignore", over="ignore"):
                mag = np.abs(x64 * g64)
                red = tuple(i for i, d in enumerate(shape) if d == 1 and x64.shape[i] != 1)
                bound = (mag.sum(axis=red, keepdims=True).reshape(arrays[1].shape)
                         * mag.size / max(1, arrays[1].size) * 2.0**-22)
                close = np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= bound)
            assert np.all(same | close), (attrs, arrays[0].shape, arrays[1].shape, got[1], want[1])
        compared += 1
    assert compared >= 15
