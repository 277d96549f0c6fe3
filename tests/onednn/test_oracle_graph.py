"""leakyops.onednn against oneDNN 3.2 on the graph and compile rules a user meets at the edges.

- negative dims at compile: ``-1`` is an ordinary negative dim to oneDNN 3.2 (``invalid_shape``),
  only ``DNNL_GRAPH_UNKNOWN_DIM`` (INT64_MIN) is unknown (inferred for an output,
  ``invalid_arguments`` for an input);
- extra compile-time logical tensors of any kind (unknown rank, ``any`` layout, INT64_MIN or
  negative dims, f64/s32) and tensors made from them;
- PReLUBackward's output layouts (``diff_src`` and ``diff_slope`` may have any strides; ``src``
  and ``diff_dst`` must share one, else the library aborts);
- ``Graph(strict=False)``: cycles, two producers of an id, two ops with one op id, as oneDNN;
- ``Engine(isa="host")``: the instruction set the library reports for this CPU.

Every test asks the library first (see ``conftest.py``: skipped without ``libdnnl``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from leakyops import onednn as dg

assert_bits = sys.modules["_leakyops_dnnl_oracle"].assert_bits  # (conftest.py loads the harness)
_DT = {name: getattr(dg.DataType, name) for name in ("f32", "bf16", "f16", "f64", "s32")}
MIN = dg.DNNL_GRAPH_UNKNOWN_DIM
F32 = dg.DataType.f32


def _real(o, tid, shape, strides=None, dt="f32", **kw):
    return o.logical_tensor(tid, dt, shape, strides, ndims=kw.get("ndims"),
                            layout=kw.get("layout", o.LAYOUT_STRIDED), raw=True)


def _model(tid, shape, strides=None, dt="f32", **kw):
    layout = dg.LayoutType.any if kw.get("layout") == "any" else dg.LayoutType.strided
    return dg.LogicalTensor(tid, _DT[dt], shape, layout, strides=strides, ndims=kw.get("ndims"))


def _lib_compile(o, sess, specs, c_in, c_out):
    """Build, partition and compile with the library: (status name or None, output shapes)."""
    parts = o.build_graph(specs)
    try:
        try:
            cp = o.Compiled(sess, parts[0], c_in, c_out)
        except o.DnnlError as e:
            return e.status, None
        shapes = [cp.query(t.id).shape for t in c_out]
        cp.destroy()
        return None, shapes
    finally:
        o.destroy_partitions(parts)


def _model_compile(op, c_in, c_out, isa="host"):
    g = dg.Graph()
    g.add_op(op)
    g.finalize()
    try:
        cp = g.get_partitions()[0].compile(c_in, c_out, dg.Engine(isa=isa))
    except dg.Error as e:
        return e.status.name, None
    return None, [tuple(cp.query_logical_tensor(t.id).get_dims()) for t in c_out]


# (kind, attrs, graph ins, graph outs, compile-time dims of the port under test, its position)
NEG_DIM_CASES = [
    ("LeakyReLU", {"alpha": 0.5}, [(3, 4)], [(3, 4)], "out", 0),
    ("LeakyReLU", {"alpha": 0.5}, [(3, 4)], [(3, 4)], "in", 0),
    ("PReLU", {"data_format": "NCX"}, [(2, 3), (3,)], [(2, 3)], "out", 0),
    ("PReLU", {"data_format": "NCX"}, [(2, 3), (3,)], [(2, 3)], "in", 1),
    ("PReLUBackward", {"data_format": "NXC"}, [(3, 4), (4,), (3, 4)], [(3, 4), (4,)], "out", 0),
    ("PReLUBackward", {"data_format": "NXC"}, [(3, 4), (4,), (3, 4)], [(3, 4), (4,)], "out", 1),
]


@pytest.mark.parametrize("dim", [-1, -2, MIN, "ndims=-1"], ids=["-1", "-2", "INT64_MIN", "rank?"])
@pytest.mark.parametrize("case", NEG_DIM_CASES, ids=lambda c: f"{c[0]}-{c[4]}{c[5]}")
def test_negative_and_unknown_dims_at_compile_match_onednn(oracle, oracle_session, case, dim):
    """Issue cases 1–3: the status (or the inferred output shapes) for a compile-time port given
    with every dim -1, -2 or INT64_MIN, or with an unknown rank."""
    kind, attrs, g_in, g_out, where, pos = case
    oracle.require(kind, "f32")
    o = oracle
    n_in = len(g_in)
    shapes = {"in": list(g_in), "out": list(g_out)}
    base = shapes[where][pos]

    def ports(make):
        made = {}
        for side, off in (("in", 0), ("out", n_in)):
            made[side] = []
            for j, s in enumerate(shapes[side]):
                if side == where and j == pos:
                    made[side].append(make(off + j, None, ndims=-1) if dim == "ndims=-1"
                                      else make(off + j, tuple(dim for _ in base)))
                else:
                    made[side].append(make(off + j, s))
        return made

    real = ports(lambda i, s, **kw: _real(o, i, s, **kw))
    graph = [_real(o, i, s) for i, s in enumerate(g_in + g_out)]
    want = _lib_compile(o, oracle_session,
                        [o.OpSpec(1, kind, graph[:n_in], graph[n_in:], attrs)],
                        real["in"], real["out"])
    mg = [_model(i, s) for i, s in enumerate(g_in + g_out)]
    op = dg.Op(1, kind, "", mg[:n_in], mg[n_in:])
    for k, v in attrs.items():
        op.set_attr(k, v)
    model = ports(_model)
    got = _model_compile(op, model["in"], model["out"])
    assert got == want


EXTRA_KINDS = {
    "unknown-rank": dict(shape=None, ndims=-1),
    "any-layout": dict(shape=(7,), layout="any"),
    "INT64_MIN": dict(shape=(MIN, 3)),
    "negative": dict(shape=(-2, 3)),
    "f64": dict(shape=(7,), dt="f64"),
    "s32": dict(shape=(7,), dt="s32"),
}


@pytest.mark.parametrize("first", [False, True], ids=["extra-last", "extra-first"])
@pytest.mark.parametrize("kind", sorted(EXTRA_KINDS))
def test_extra_compile_time_input_of_any_kind_matches_onednn(oracle, oracle_session, kind,
                                                             first):
    """Issue case 4: PReLU compiled with an extra input logical tensor (an id not in the
    partition) of any kind, and executed with a tensor made from it in its position: the
    library compiles and runs, and so does the model, with the same result — except that an
    extra of another type in front of src fails PReLU's type check (the library compares the
    first input given with the first output given), ``unimplemented`` in both."""
    oracle.require("PReLU", "f32")
    o = oracle
    if first and EXTRA_KINDS[kind].get("dt", "f32") != "f32":
        _extra_first_of_another_type(o, oracle_session, EXTRA_KINDS[kind]["dt"])
        return
    spec = EXTRA_KINDS[kind]
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    w = np.array([0.5, 2.0, 4.0], np.float32)
    junk = np.zeros(64, np.float32)
    rs, rw, rd = _real(o, 0, (2, 3)), _real(o, 1, (3,)), _real(o, 2, (2, 3))
    shape = spec.get("shape")
    kw = {k: v for k, v in spec.items() if k not in ("shape", "dt", "layout")}
    if spec.get("layout") == "any":
        kw["layout"] = o.LAYOUT_ANY
    rex = _real(o, 9, shape, dt=spec.get("dt", "f32"), **kw)
    parts = o.build_graph([o.OpSpec(1, "PReLU", [rs, rw], [rd], {})])
    try:
        c_in = [rex, rs, rw] if first else [rs, rw, rex]
        cp = o.Compiled(oracle_session, parts[0], c_in, [rd])
        want = np.zeros((2, 3), np.float32)
        pairs = [(rs, x), (rw, w), (rex, junk)]
        cp.execute([pairs[2], *pairs[:2]] if first else pairs, [(rd, want)])
        cp.destroy()
    finally:
        o.destroy_partitions(parts)
    S, W, D = _model(0, (2, 3)), _model(1, (3,)), _model(2, (2, 3))
    mkw = {k: v for k, v in spec.items() if k not in ("shape", "dt")}
    E = _model(9, shape, dt=spec.get("dt", "f32"), **mkw)
    g = dg.Graph()
    g.add_op(dg.Op(1, dg.OpKind.PReLU, "", [S, W], [D]))
    g.finalize()
    eng = dg.Engine(isa="host")
    cp = g.get_partitions()[0].compile([E, S, W] if first else [S, W, E], [D], eng)
    out = dg.Tensor(D, eng)
    tensors = [dg.Tensor(S, eng, x), dg.Tensor(W, eng, w), dg.Tensor(E, eng, junk)]
    cp.execute(dg.Stream(eng), [tensors[2], *tensors[:2]] if first else tensors, [out])
    assert_bits(out.to_numpy(), want)


def _extra_first_of_another_type(o, sess, dt):
    rs, rw, rd = _real(o, 0, (2, 3)), _real(o, 1, (3,)), _real(o, 2, (2, 3))
    want = _lib_compile(o, sess, [o.OpSpec(1, "PReLU", [rs, rw], [rd], {})],
                        [_real(o, 9, (7,), dt=dt), rs, rw], [rd])
    S, W, D = _model(0, (2, 3)), _model(1, (3,)), _model(2, (2, 3))
    got = _model_compile(dg.Op(1, dg.OpKind.PReLU, "", [S, W], [D]),
                         [_model(9, (7,), dt=dt), S, W], [D])
    assert got == want == ("unimplemented", None)


@pytest.mark.parametrize("ds_strides,dw_strides", [
    ((1, 4), (1,)), ((1, 3), (1,)), ((6, 1), (1,)), ((5, 1), (2,)), ((1, 3), (3,))],
    ids=str)
@pytest.mark.parametrize("src_strides", [(5, 1), (1, 3)], ids=["row-major", "column-major"])
def test_prelu_backward_output_layouts_match_onednn(oracle, oracle_session, src_strides,
                                                    ds_strides, dw_strides):
    """Issue case 5: diff_src and diff_slope in any layout (the library writes them through a
    reorder), src and diff_dst in one layout, row- or column-major: the same bits in the same
    places, and the bytes between them untouched."""
    oracle.require("PReLUBackward", "f32")
    o = oracle
    rng = np.random.default_rng(5)
    shape = (3, 5)
    X = rng.standard_normal(shape).astype(np.float32)
    X[0, :2] = [0.0, -0.0]
    W = rng.standard_normal(5).astype(np.float32)
    G = rng.standard_normal(shape).astype(np.float32)

    def place(arr, strides):
        n = 1 + sum((d - 1) * abs(s) for d, s in zip(arr.shape, strides))
        buf = np.full(n + 4, 7.0, np.float32)
        np.lib.stride_tricks.as_strided(buf, arr.shape, [s * 4 for s in strides])[...] = arr
        return buf

    def view(buf, shp, strides):
        return np.lib.stride_tricks.as_strided(buf, shp, [s * 4 for s in strides])

    rl = [_real(o, 0, shape, src_strides), _real(o, 1, (5,)), _real(o, 2, shape, src_strides),
          _real(o, 3, shape, ds_strides), _real(o, 4, (5,), dw_strides)]
    parts = o.build_graph([o.OpSpec(1, "PReLUBackward", rl[:3], rl[3:], {"data_format": "NXC"})])
    want_ds, want_dw = place(np.zeros(shape, np.float32), ds_strides), place(np.zeros(5, np.float32), dw_strides)
    try:
        cp = o.Compiled(oracle_session, parts[0], rl[:3], rl[3:])
        cp.execute([(rl[0], place(X, src_strides)), (rl[1], W), (rl[2], place(G, src_strides))],
                   [(rl[3], want_ds), (rl[4], want_dw)])
        cp.destroy()
    finally:
        o.destroy_partitions(parts)
    ml = [_model(0, shape, src_strides), _model(1, (5,)), _model(2, shape, src_strides),
          _model(3, shape, ds_strides), _model(4, (5,), dw_strides)]
    op = dg.Op(1, dg.OpKind.PReLUBackward, "", ml[:3], ml[3:])
    op.set_attr("data_format", "NXC")
    g = dg.Graph()
    g.add_op(op)
    g.finalize()
    eng = dg.Engine(isa="host")
    cp = g.get_partitions()[0].compile(ml[:3], ml[3:], eng)
    got_ds, got_dw = place(np.zeros(shape, np.float32), ds_strides), place(np.zeros(5, np.float32), dw_strides)
    cp.execute(dg.Stream(eng), [dg.Tensor(ml[0], eng, place(X, src_strides)),
                                dg.Tensor(ml[1], eng, W), dg.Tensor(ml[2], eng, place(G, src_strides))],
               [dg.Tensor(ml[3], eng, got_ds), dg.Tensor(ml[4], eng, got_dw)])
    assert_bits(view(got_ds, shape, ds_strides), view(want_ds, shape, ds_strides))
    assert_bits(got_ds, want_ds)  # the gaps too
    np.testing.assert_allclose(view(got_dw, (5,), dw_strides), view(want_dw, (5,), dw_strides),
                               rtol=1e-6)


def test_prelu_backward_diff_dst_layout_unlike_src_aborts_the_library(oracle):
    """The other half of case 5: a diff_dst whose strides differ from src's aborts the library
    (in a child); the model says ``unimplemented`` at compile."""
    oracle.require("PReLUBackward", "f32")
    code = (
        "a = o.logical_tensor(0, 'f32', (3, 5), (5, 1)); w = o.logical_tensor(1, 'f32', (5,))\n"
        "g = o.logical_tensor(2, 'f32', (3, 5), (1, 3))\n"
        "d = o.logical_tensor(3, 'f32', (3, 5)); dw = o.logical_tensor(4, 'f32', (5,))\n"
        "s = o.Session(); p = o.build_graph([o.OpSpec(1, 'PReLUBackward', [a, w, g], [d, dw],"
        " {'data_format': 'NXC'})])\n"
        "o.Compiled(s, p[0], [a, w, g], [d, dw])\n")
    assert (oracle.crashes(code) or "").startswith("abort")
    ml = [_model(0, (3, 5)), _model(1, (5,)), _model(2, (3, 5), (1, 3)), _model(3, (3, 5)),
          _model(4, (5,))]
    op = dg.Op(1, dg.OpKind.PReLUBackward, "", ml[:3], ml[3:])
    op.set_attr("data_format", "NXC")
    assert _model_compile(op, ml[:3], ml[3:])[0] == "unimplemented"


def test_output_whose_elements_share_memory_is_refused():
    """A model check (the library writes such an output in an unspecified order): outputs
    whose strides make elements share memory are ``invalid_arguments`` at execute, and
    nothing is written."""
    S, W, G = _model(0, (3, 5)), _model(1, (5,)), _model(2, (3, 5))
    for ds_strides in [(0, 1), (1, 1), (2, 1)]:
        op = dg.Op(1, dg.OpKind.PReLUBackward, "", [S, W, G], [_model(3, (3, 5)), _model(4, (5,))])
        g = dg.Graph()
        g.add_op(op)
        g.finalize()
        eng = dg.Engine()
        ds = _model(3, (3, 5), ds_strides)
        cp = g.get_partitions()[0].compile([S, W, G], [ds, _model(4, (5,))], eng)
        buf = np.full(32, 7.0, np.float32)
        dw = np.full(5, 7.0, np.float32)
        with pytest.raises(dg.Error) as e:
            cp.execute(dg.Stream(eng), [dg.Tensor(S, eng, np.ones((3, 5), np.float32)),
                                        dg.Tensor(W, eng, np.ones(5, np.float32)),
                                        dg.Tensor(G, eng, np.ones((3, 5), np.float32))],
                       [dg.Tensor(ds, eng, buf), dg.Tensor(_model(4, (5,)), eng, dw)])
        assert e.value.status.name == "invalid_arguments" and "share memory" in str(e.value)
        assert (buf == 7).all() and (dw == 7).all()


# --- Graph(strict=False): as oneDNN 3.2 --------------------------------------------------------

GRAPHS = {  # op id, input id, output id (LeakyReLU ops on (2, 3) f32 logical tensors)
    "src id == dst id": [(1, 0, 0)],
    "self loop and an independent op": [(1, 0, 0), (3, 4, 5)],
    "cycle of two": [(1, 0, 1), (2, 1, 0)],
    "cycle and an independent op": [(1, 0, 1), (2, 1, 0), (3, 4, 5)],
    "cycle fed by an op": [(3, 4, 0), (1, 0, 1), (2, 1, 0)],
    "two ops write one id": [(1, 0, 2), (2, 1, 2)],
    "two writers and a consumer": [(1, 0, 2), (2, 1, 2), (3, 2, 5)],
    "two writers added in reverse": [(3, 2, 5), (2, 1, 2), (1, 0, 2)],
    "two ops with one op id": [(1, 0, 1), (1, 1, 2)],
    "one op id twice, then a chain": [(1, 0, 1), (1, 1, 2), (3, 2, 5)],
    "a chain added in reverse": [(3, 2, 5), (2, 1, 2), (1, 0, 1)],
}


def _model_partitions(ops, strict):
    L = [_model(i, (2, 3)) for i in range(8)]
    g = dg.Graph(strict=strict)
    for oid, a, b in ops:
        op = dg.Op(oid, dg.OpKind.LeakyReLU, "", [L[a]], [L[b]])
        op.set_attr("alpha", 0.5)
        g.add_op(op)
    g.finalize()
    return [(p.get_ops(), [t.id for t in p.get_input_ports()],
             [t.id for t in p.get_output_ports()]) for p in g.get_partitions()]


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_non_strict_graph_partitions_match_onednn(oracle, name):
    """Issue cases 6–9 with ``Graph(strict=False)``: the same partitions (ops, ports, order) as
    the library; the default strict graph rejects each of them."""
    oracle.require("LeakyReLU", "f32")
    o = oracle
    L = [o.logical_tensor(i, "f32", (2, 3)) for i in range(8)]
    parts = o.build_graph([o.OpSpec(oid, "LeakyReLU", [L[a]], [L[b]], {"alpha": 0.5})
                           for oid, a, b in GRAPHS[name]])
    try:
        want = [(list(p.op_ids), [t.id for t in p.inputs], [t.id for t in p.outputs])
                for p in parts]
    finally:
        o.destroy_partitions(parts)
    assert _model_partitions(GRAPHS[name], strict=False) == want
    if name != "a chain added in reverse":
        with pytest.raises(dg.Error) as e:
            _model_partitions(GRAPHS[name], strict=True)
        assert e.value.status.name in ("invalid_graph", "invalid_graph_op")


@pytest.mark.parametrize("ops", [[(1, 0, 1), (2, 1, 0), (3, 1, 5)], [(1, 0, 0), (3, 0, 5)]],
                         ids=["cycle", "self loop"])
def test_non_strict_graph_reading_a_cycle_is_an_error(ops):
    """Where an op reads a cycle's output, oneDNN 3.2 never returns from partitioning (seen: it
    loops until ``std::bad_alloc``); the model says ``invalid_graph`` in both modes."""
    for strict in (False, True):
        with pytest.raises(dg.Error) as e:
            _model_partitions(ops, strict=strict)
        assert e.value.status.name == "invalid_graph"


# --- Engine(isa="host") ---------------------------------------------------------------------------


def test_host_isa_is_the_one_the_library_reports(oracle):
    """``Engine(isa="host")`` picks what ``dnnl_get_effective_cpu_isa`` reports here (this CPU,
    or the ``ONEDNN_MAX_CPU_ISA`` cap the suite runs under)."""
    assert dg.Engine(isa="host").isa == oracle.effective_isa()
    assert dg.Engine(isa="HOST").flushes_bf16 == dg.Engine(isa=oracle.effective_isa()).flushes_bf16


_CAP_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import dnnl_oracle as o
o.load()
from leakyops import onednn as dg
print(o.effective_isa(), dg.Engine(isa="host").isa)
"""

ALL_CAPS = ["SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI",
            "AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX512_CORE_AMX", "AVX512_CORE_AMX_FP16",
            "default", "not-an-isa"]


@pytest.mark.parametrize("cap", ALL_CAPS)
def test_host_isa_follows_the_librarys_cap(oracle, cap):
    """Under every ``ONEDNN_MAX_CPU_ISA`` value (each in a child: the library reads it once),
    the model's host detection and the library agree; an unknown value is no cap in both."""
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA=cap)
    env.pop("LEAKYOPS_ONEDNN_ISA", None)
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", _CAP_SCRIPT, here], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lib, model = proc.stdout.split()
    assert model == lib
