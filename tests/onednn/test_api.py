"""leakyops.onednn without the real library: the API, the rules, the core's results.

The front-end only translates: each op is one core call with the ``compare=`` value naming
the oneDNN kernel it models (``"dnnl-eltwise"``, ``"dnnl-jit"``, ``"dnnl-ref"``, …), so the
results here equal those core calls bit for bit; ``test_oracle.py`` compares with oneDNN.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from leakyops import _core
from leakyops import onednn as dg

DT = [(dg.DataType.f32, np.float32), (dg.DataType.f16, np.float16),
      (dg.DataType.bf16, ml_dtypes.bfloat16)]
IDS = ["f32", "f16", "bf16"]


def lt(i, shape, dt=dg.DataType.f32, **kw):
    return dg.LogicalTensor(i, dt, shape, **kw)


def graph_of(*ops):
    g = dg.Graph(dg.EngineKind.cpu)
    for op in ops:
        g.add_op(op)
    g.finalize()
    return g


def lrelu_op(oid=0, src=None, dst=None, alpha=0.1):
    op = dg.Op(oid, dg.OpKind.LeakyReLU, "lrelu", [src or lt(0, (2, 3))], [dst or lt(1, (2, 3))])
    if alpha is not None:
        op.set_attr(dg.OpAttr.alpha, alpha)
    return op


def status(excinfo):
    return excinfo.value.status.name


# ---------------------------------------------------------------------------------------------
# results equal the core's oneDNN rules, per dtype / format / broadcast


@pytest.mark.parametrize("dt,npdt", DT, ids=IDS)
def test_leaky_relu_equals_core(run_graph, dt, npdt):
    x = np.array([-3.0, -0.0, 0.0, 2.5, np.inf, -np.inf, np.nan, -1e-3], np.float32).astype(npdt)
    (y,) = run_graph("LeakyReLU", {"alpha": -0.25}, [x], 1)
    want = _core.leaky_relu_impl(x, np.float32(-0.25), compare="dnnl-eltwise")
    np.testing.assert_array_equal(y.view(np.uint8), want.view(np.uint8))
    # the library's 'src <= 0 ? alpha*src : src': both zeros take the alpha branch,
    # +0 * -0.25 = -0 and -0 * -0.25 = +0
    y32 = y.astype(np.float32)
    assert np.signbit(y32[2]) and not np.signbit(y32[1])


def test_leaky_relu_keeps_f32_signalling_nans(run_graph):
    """NaN is not ``<= 0``: f32 NaNs, signalling ones too, come back unchanged."""
    x = np.array([0x7F800001, 0xFF800F00, 0x7FC00005], np.uint32).view(np.float32)
    (y,) = run_graph("LeakyReLU", {"alpha": 0.5}, [x], 1)
    np.testing.assert_array_equal(y.view(np.uint32), x.view(np.uint32))


def test_leaky_relu_alpha_is_rounded_to_f32(run_graph):
    x = np.array([-1.0], np.float32)
    (y,) = run_graph("LeakyReLU", {"alpha": 0.1}, [x], 1)
    assert y[0] == -np.float32(0.1)


@pytest.mark.parametrize("dt,npdt", DT, ids=IDS)
def test_leaky_relu_alpha_zero_is_relu(run_graph, dt, npdt):
    # oneDNN computes max(src, +0) when alpha == 0: NaN, -inf, -0 and negatives give +0
    x = np.array([-2.0, -0.0, np.nan, -np.inf, 3.0, np.inf], np.float32).astype(npdt)
    (y,) = run_graph("LeakyReLU", {"alpha": 0.0}, [x], 1)
    y32 = y.astype(np.float32)
    assert np.array_equal(y32, [0, 0, 0, 0, 3, np.inf]) and not np.signbit(y32).any()


@pytest.mark.parametrize("dt,npdt", DT, ids=IDS)
@pytest.mark.parametrize("fmt,pcb,src_shape,wshape,axis,kernel", [
    ("NCX", True, (2, 3, 4, 5), (3,), 1, "dnnl-jit"),
    ("NXC", True, (2, 4, 5, 3), (3,), -1, "dnnl-jit"),
    ("NCX", False, (2, 3, 4, 5), (5,), -1, "dnnl-ref"),
    ("NXC", False, (2, 3, 4, 5), (1,), -1, "dnnl-ref"),
    ("NCX", True, (2, 3, 4, 5), (3, 1, 1), None, "dnnl-jit"),
    ("NXC", True, (2, 3, 4, 5), (3, 4, 5), None, "dnnl-ref"),
    ("NCX", True, (2, 3, 4, 5), (2, 3, 4, 5), None, "dnnl-jit"),
])
def test_prelu_equals_core(run_graph, dt, npdt, fmt, pcb, src_shape, wshape, axis, kernel):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(src_shape).astype(npdt)
    x.reshape(-1)[:4] = np.array([0.0, -0.0, np.nan, np.inf], npdt)  # where the kernels differ
    w = rng.standard_normal(wshape).astype(npdt)
    w.reshape(-1)[:1] = np.array([-0.5], npdt)
    (y,) = run_graph("PReLU", {"data_format": fmt, "per_channel_broadcast": pcb}, [x, w], 1)
    want = _core.prelu_impl(x, w, 1 if axis is None else axis, compare=kernel)
    np.testing.assert_array_equal(y.view(np.uint8), want.view(np.uint8))
    other = "dnnl-ref" if kernel == "dnnl-jit" else "dnnl-jit"
    assert not np.array_equal(y.view(np.uint8), _core.prelu_impl(
        x, w, 1 if axis is None else axis, compare=other).view(np.uint8))  # (the data tells)


@pytest.mark.parametrize("dt,npdt", DT, ids=IDS)
@pytest.mark.parametrize("fmt,src_shape,wshape,axis,kernel", [
    ("NCX", (2, 3, 4, 5), (3,), 1, "dnnl-jit"),          # PyTorch case, per channel
    ("NXC", (2, 4, 5, 3), (3,), -1, "dnnl-jit"),
    ("NCX", (2, 3, 4, 5), (1,), 1, "dnnl-ref"),          # PyTorch case, per tensor
    ("NCX", (2, 3, 4, 5), (3, 4, 5), 1, "dnnl-ref"),     # TensorFlow case: src.shape[1:]
    ("NXC", (2, 3, 4, 5), (3, 4, 5), 1, "dnnl-ref"),
    ("NCX", (1, 3, 4, 5), (3, 4, 5), 1, "dnnl-jit"),     # ... with N == 1: a full slope
])
def test_prelu_backward_equals_core(run_graph, dt, npdt, fmt, src_shape, wshape, axis, kernel):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(src_shape).astype(npdt)
    x.reshape(-1)[:3] = np.array([np.nan, -0.0, 0.0], npdt)
    w = rng.standard_normal(wshape).astype(npdt)
    g = rng.standard_normal(src_shape).astype(npdt)
    dx, dw = run_graph("PReLUBackward", {"data_format": fmt}, [x, w, g], 2)
    want_dx, want_dw = _core.prelu_backward_impl(g, x, w, axis, compare=kernel)
    assert dx.shape == src_shape and dw.shape == wshape
    np.testing.assert_array_equal(dx.view(np.uint8), want_dx.view(np.uint8))
    np.testing.assert_array_equal(dw.view(np.uint8), want_dw.view(np.uint8))


def test_prelu_backward_formula():
    x = np.array([[-2.0, 0.0, 3.0], [-1.0, -0.0, 4.0]], np.float32)  # NCX, C = 3
    w = np.array([0.5, -1.0, 2.0], np.float32)
    g = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    eng = dg.Engine()
    ins = [lt(0, x.shape), lt(1, w.shape), lt(2, g.shape)]
    outs = [lt(3, x.shape), lt(4, w.shape)]
    op = dg.Op(0, dg.OpKind.PReLUBackward, "", ins, outs)
    op.set_attr("data_format", "NCX")
    cp = graph_of(op).get_partitions()[0].compile(ins, outs, eng)
    dx, dw = dg.Tensor(outs[0], eng), dg.Tensor(outs[1], eng)
    cp.execute(dg.Stream(eng), [dg.Tensor(t, eng, a) for t, a in zip(ins, (x, w, g))], [dx, dw])
    # diff_src = g if x > 0 else w*g ; diff_slope[c] = sum(x*g where x <= 0)
    np.testing.assert_array_equal(dx.to_numpy(), [[0.5, -2.0, 3.0], [2.0, -5.0, 6.0]])
    np.testing.assert_array_equal(dw.to_numpy(), [-2.0 - 4.0, 0.0, 0.0])


def test_leaky_relu_in_place():
    eng = dg.Engine()
    src, dst = lt(0, (4,)), lt(1, (4,))
    cp = graph_of(lrelu_op(0, src, dst, 0.5)).get_partitions()[0].compile([src], [dst], eng)
    assert cp.get_inplace_ports() == []  # oneDNN 3.2 offers no hint; in place works anyway
    buf = np.array([-2.0, 1.0, -4.0, 0.0], np.float32)
    cp.execute(dg.Stream(eng), [dg.Tensor(src, eng, buf)], [dg.Tensor(dst, eng, buf)])
    np.testing.assert_array_equal(buf, [-1.0, 1.0, -2.0, 0.0])


def test_strided_and_reversed_layouts():
    eng = dg.Engine()
    src = lt(0, (2, 3), strides=(1, 2))        # column-major input
    dst = lt(1, (2, 3), strides=(1, 2))
    cp = graph_of(lrelu_op(0, lt(0, (2, 3)), lt(1, (2, 3)), 2.0)).get_partitions()[0].compile(
        [src], [dst], eng)
    q = cp.query_logical_tensor(1)
    assert q.get_strides() == [1, 2]
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    t_in = dg.Tensor(src, eng, np.asfortranarray(x).ravel(order="K").copy())
    t_out = dg.Tensor(q, eng)
    cp.execute(dg.Stream(eng), [t_in], [t_out])
    np.testing.assert_array_equal(t_out.to_numpy(), np.where(x > 0, x, 2 * x))


def test_empty_and_rank0(run_graph):
    (y,) = run_graph("LeakyReLU", {"alpha": 0.5}, [np.zeros((0, 3), np.float32)], 1)
    assert y.shape == (0, 3)
    (y,) = run_graph("LeakyReLU", {"alpha": 0.5}, [np.array(-4.0, np.float32)], 1)
    assert y.shape == () and y == -2.0
    dx, dw = run_graph("PReLUBackward", {"data_format": "NCX"},
                       [np.zeros((2, 0, 3), np.float32), np.zeros((0,), np.float32),
                        np.zeros((2, 0, 3), np.float32)], 2)
    assert dx.shape == (2, 0, 3) and dw.shape == (0,)


# ---------------------------------------------------------------------------------------------
# graph rules and error paths


def test_leaky_relu_without_alpha_is_rejected_when_added():
    g = dg.Graph()
    with pytest.raises(dg.Error) as e:
        g.add_op(lrelu_op(alpha=None))
    assert status(e) == "invalid_graph_op" and "alpha" in str(e.value)
    assert g.add_op(lrelu_op(alpha=None), allow_exception=False) == dg.Status.invalid_graph_op


@pytest.mark.parametrize("make", [
    lambda: dg.Op(0, dg.OpKind.LeakyReLU, "", [], [lt(1, (2,))]),
    lambda: dg.Op(0, dg.OpKind.LeakyReLU, "", [lt(0, (2,)), lt(2, (2,))], [lt(1, (2,))]),
    lambda: dg.Op(0, dg.OpKind.PReLU, "", [lt(0, (2,))], [lt(1, (2,))]),
    lambda: dg.Op(0, dg.OpKind.PReLUBackward, "", [lt(0, (2,)), lt(1, (2,)), lt(2, (2,))],
                  [lt(3, (2,))]),
], ids=["lrelu-no-input", "lrelu-2-inputs", "prelu-1-input", "prelu-bwd-1-output"])
def test_wrong_arity_is_invalid_graph_op(make):
    op = make()
    if op.get_kind() == dg.OpKind.LeakyReLU:
        op.set_attr("alpha", 0.1)
    with pytest.raises(dg.Error) as e:
        dg.Graph().add_op(op)
    assert status(e) == "invalid_graph_op"


@pytest.mark.parametrize("attr,value", [
    ("alpha", "0.1"), ("alpha", True), ("beta", 1.0), ("per_channel_broadcast", True),
])
def test_bad_attributes_on_leaky_relu(attr, value):
    op = lrelu_op(alpha=None)
    if attr != "alpha":
        op.set_attr("alpha", 0.1)
    op.set_attr(attr, value)
    with pytest.raises(dg.Error) as e:
        dg.Graph().add_op(op)
    assert status(e) == "invalid_graph_op"


@pytest.mark.parametrize("attr,value", [("data_format", "NHWC"), ("data_format", 1),
                                        ("per_channel_broadcast", 1)])
def test_bad_attributes_on_prelu(attr, value):
    op = dg.Op(0, dg.OpKind.PReLU, "", [lt(0, (2, 3)), lt(1, (3,))], [lt(2, (2, 3))])
    op.set_attr(attr, value)
    with pytest.raises(dg.Error) as e:
        dg.Graph().add_op(op)
    assert status(e) == "invalid_graph_op"


@pytest.mark.parametrize("dts", [
    (dg.DataType.f32, dg.DataType.bf16), (dg.DataType.f64, dg.DataType.f64),
    (dg.DataType.s32, dg.DataType.s32), (dg.DataType.f16, dg.DataType.f32),
])
def test_data_types_checked_when_added(dts):
    op = lrelu_op(src=lt(0, (2,), dts[0]), dst=lt(1, (2,), dts[1]))
    with pytest.raises(dg.Error) as e:
        dg.Graph().add_op(op)
    assert status(e) == "invalid_graph_op"


def test_op_ids_unique():
    g = dg.Graph()
    op = lrelu_op(0)
    g.add_op(op)
    g.add_op(op)  # the same op again: a no-op, as in oneDNN
    other = lrelu_op(0, lt(1, (2, 3)), lt(2, (2, 3)))
    with pytest.raises(dg.Error) as e:
        g.add_op(other)
    assert status(e) == "invalid_graph_op" and "already used" in str(e.value)
    g.finalize()
    assert len(g.get_partitions()) == 1


def test_one_producer_per_logical_tensor():
    g = dg.Graph()
    g.add_op(lrelu_op(0, lt(0, (2, 3)), lt(1, (2, 3))))
    g.add_op(lrelu_op(1, lt(5, (2, 3)), lt(1, (2, 3))))
    with pytest.raises(dg.Error) as e:
        g.finalize()
    assert status(e) == "invalid_graph"


def test_finalize_rules():
    g = dg.Graph()
    g.add_op(lrelu_op(0))
    with pytest.raises(dg.Error) as e:
        g.get_partitions()
    assert status(e) == "invalid_graph"
    g.finalize()
    assert g.is_finalized()
    with pytest.raises(dg.Error) as e:
        g.add_op(lrelu_op(1, lt(1, (2, 3)), lt(2, (2, 3))))
    assert status(e) == "invalid_graph"
    empty = dg.Graph()
    empty.finalize()
    assert empty.get_partitions() == []


def test_unsupported_kinds_become_unsupported_partitions():
    a, b, c = lt(0, (2, 3)), lt(1, (2, 3)), lt(2, (2, 3))
    g = graph_of(dg.Op(5, dg.OpKind.Wildcard, "w", [b], [c]), lrelu_op(4, a, b))
    parts = g.get_partitions()
    assert [(p.get_ops(), p.is_supported()) for p in parts] == [([4], True), ([5], False)]
    with pytest.raises(dg.Error) as e:
        parts[1].compile([b], [c], dg.Engine())
    assert status(e) == "invalid_arguments"  # (dnnl_graph_partition_compile's first check)


def test_chain_leaky_relu_then_prelu():
    """A graph of LeakyReLU -> PReLU -> LeakyReLU: three partitions, executed in order."""
    eng, strm = dg.Engine(), None
    strm = dg.Stream(eng)
    s0, s1, w, s2, s3 = (lt(0, (2, 3, 2)), lt(1, (2, 3, 2)), lt(2, (3,)), lt(3, (2, 3, 2)),
                         lt(4, (2, 3, 2)))
    prelu = dg.Op(11, dg.OpKind.PReLU, "prelu", [s1, w], [s2])
    prelu.set_attr("data_format", "NCX")
    g = graph_of(lrelu_op(12, s2, s3, 2.0), prelu, lrelu_op(10, s0, s1, 0.5))
    parts = g.get_partitions()
    assert [p.get_ops() for p in parts] == [[10], [11], [12]]
    assert [t.get_id() for t in parts[1].get_input_ports()] == [1, 2]
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 3, 2)
    wv = np.array([0.5, -1.0, 4.0], np.float32)
    t = {0: dg.Tensor(s0, eng, x), 2: dg.Tensor(w, eng, wv)}
    for p in parts:
        ins, outs = p.get_input_ports(), p.get_output_ports()
        cp = p.compile(ins, outs, eng)
        for o in outs:
            t[o.get_id()] = dg.Tensor(cp.query_logical_tensor(o.get_id()), eng)
        cp.execute(strm, [t[i.get_id()] for i in ins], [t[o.get_id()] for o in outs])
    strm.wait()
    a = np.where(x > 0, x, np.float32(0.5) * x)
    b = np.where(a > 0, a, wv[None, :, None] * a)
    np.testing.assert_array_equal(t[4].to_numpy(), np.where(b > 0, b, 2 * b))


def test_compile_rules():
    eng = dg.Engine()
    src, dst = lt(0, (2, 3)), lt(1, (2, 3))
    part = graph_of(lrelu_op(0, src, dst)).get_partitions()[0]
    unknown = dg.DNNL_GRAPH_UNKNOWN_DIM
    cases = [
        ([lt(7, (2, 3))], [dst], "invalid_arguments"),               # no input of the port's id
        ([src], [], "invalid_arguments"),                            # missing output
        ([lt(0, None, ndims=-1)], [dst], "invalid_arguments"),       # unknown input rank
        ([lt(0, (2, unknown))], [dst], "invalid_arguments"),         # unknown input dim
        ([lt(0, (2, -1))], [dst], "invalid_shape"),                  # a negative input dim
        ([lt(0, (2, 3), dg.DataType.undef)], [dst], "invalid_arguments"),  # no data type
        ([lt(0, (2, 3), dg.DataType.bf16)], [dst], "unimplemented"),  # src bf16, dst f32
        ([src], [lt(1, (3, 2))], "invalid_shape"),                   # wrong output shape
        ([src], [lt(1, (2, -1))], "invalid_shape"),                  # a negative output dim
        ([src], [lt(1, (2, 3, 1))], "invalid_shape"),                # wrong output rank
    ]
    for ins, outs, st in cases:
        with pytest.raises(dg.Error) as e:
            part.compile(ins, outs, eng)
        assert status(e) == st, (ins, outs)
    # unknown output shape and "any" layout are inferred; compile-time shapes win
    cp = part.compile([lt(0, (4, 5))], [lt(1, None, ndims=-1)], eng)
    assert cp.query_logical_tensor(1).get_dims() == [4, 5]
    cp = part.compile([src], [lt(1, (2, 3), layout_type=dg.LayoutType.any)], eng)
    assert cp.query_logical_tensor(1).get_layout_type() == dg.LayoutType.strided
    cp = part.compile([src], [lt(1, (unknown, 3))], eng)
    assert cp.query_logical_tensor(1).get_dims() == [2, 3]
    empty = cp.query_logical_tensor(9)  # not a port: oneDNN's empty logical tensor
    assert (empty.get_id(), empty.ndims, empty.get_data_type()) == (2**64 - 1, -1,
                                                                      dg.DataType.undef)
    # extra inputs and outputs, and repeats of an id, are accepted (the first one counts)
    cp = part.compile([lt(9, (5,)), lt(0, (2, 3)), lt(0, (7,))], [lt(8, (1,)), dst], eng)
    assert cp.query_logical_tensor(0).get_dims() == [2, 3]


@pytest.mark.parametrize("src,wei,attrs", [
    ((2, 3, 4, 5), (1,), {"data_format": "NCX"}),       # per channel needs length C
    ((2, 3, 4, 5), (3,), {"data_format": "NXC"}),
    ((2, 3, 4, 5), (2, 4, 5), {}),
    ((2, 3, 4, 5), (1, 2, 3, 4, 5), {}),
    ((2, 3, 4, 5), (), {}),
    ((2, 3), (4,), {"per_channel_broadcast": False}),
])
def test_prelu_shape_errors(src, wei, attrs):
    ins, outs = [lt(0, src), lt(1, wei)], [lt(2, src)]
    op = dg.Op(0, dg.OpKind.PReLU, "", ins, outs)
    for k, v in attrs.items():
        op.set_attr(k, v)
    part = graph_of(op).get_partitions()[0]
    with pytest.raises(dg.Error) as e:
        part.compile(ins, outs, dg.Engine())
    assert status(e) == "invalid_shape"


def test_prelu_backward_shape_errors():
    for wei, dd, dslope, st in [((4,), (2, 3, 4), (4,), "invalid_shape"),
                                ((3,), (1, 3, 4), (3,), "invalid_arguments"),  # library aborts
                                ((3,), (2, 3, 4), (1, 3), "invalid_shape")]:
        ins = [lt(0, (2, 3, 4)), lt(1, wei), lt(2, dd)]
        outs = [lt(3, (2, 3, 4)), lt(4, dslope)]
        op = dg.Op(0, dg.OpKind.PReLUBackward, "", ins, outs)
        op.set_attr("data_format", "NCX")
        with pytest.raises(dg.Error) as e:
            graph_of(op).get_partitions()[0].compile(ins, outs, dg.Engine())
        assert status(e) == st


def test_execute_binds_by_position_and_writes_nothing_on_error():
    eng = dg.Engine()
    strm = dg.Stream(eng)
    src, dst = lt(0, (2, 3)), lt(1, (2, 3))
    cp = graph_of(lrelu_op(0, src, dst, 0.5)).get_partitions()[0].compile([src], [dst], eng)
    x = dg.Tensor(src, eng, -np.ones((2, 3), np.float32))
    out_buf = np.full((2, 3), 7.0, np.float32)
    y = dg.Tensor(dst, eng, out_buf)
    # the tensors' own logical tensors are not looked at: position and buffer count
    cp.execute(strm, [dg.Tensor(lt(5, (6,)), eng, -np.ones(6, np.float32))],
               [dg.Tensor(lt(6, (3, 2)), eng, out_buf)])
    np.testing.assert_array_equal(out_buf, np.full((2, 3), -0.5, np.float32))
    out_buf[...] = 7.0
    bad = [
        ([dg.Tensor(lt(0, (5,)), eng)], [y]),                          # buffer too small
        ([x], []),                                                     # no output tensor
        ([], [y]),                                                     # no input tensor
        ([x], [dg.Tensor(lt(1, (2,)), eng)]),                          # output buffer too small
    ]
    for ins, outs in bad:
        with pytest.raises(dg.Error) as e:
            cp.execute(strm, ins, outs)
        assert status(e) == "invalid_arguments"
        assert np.all(out_buf == 7.0)
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(dg.Error) as e:
        cp.execute(strm, [x], [dg.Tensor(dst, eng, ro)])
    assert status(e) == "invalid_arguments"


def test_execute_positions_follow_the_compile_time_list():
    """PReLU compiled with [slope, extra, src]: execute's tensors bind in that order."""
    eng = dg.Engine()
    src, slope, dst = lt(0, (2, 3)), lt(1, (3,)), lt(2, (2, 3))
    part = graph_of(dg.Op(0, dg.OpKind.PReLU, "", [src, slope], [dst])).get_partitions()[0]
    cp = part.compile([slope, lt(9, (4,)), src], [dst], eng)
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    w = np.array([0.5, 2.0, 4.0], np.float32)
    out = dg.Tensor(dst, eng)
    cp.execute(dg.Stream(eng), [dg.Tensor(slope, eng, w), dg.Tensor(lt(9, (4,)), eng),
                                dg.Tensor(src, eng, x)], [out])
    np.testing.assert_array_equal(out.to_numpy(), np.where(x > 0, x, w * x))
    with pytest.raises(dg.Error) as e:  # the third position is src's: two tensors are too few
        cp.execute(dg.Stream(eng), [dg.Tensor(slope, eng, w), dg.Tensor(src, eng, x)], [out])
    assert status(e) == "invalid_arguments" and "position" in str(e.value)


def test_duplicate_ports():
    """prelu(x, x): the ports list x twice; compiling with them, or with x once, works."""
    eng = dg.Engine()
    a, b = lt(0, (2, 3)), lt(1, (2, 3))
    part = graph_of(dg.Op(0, dg.OpKind.PReLU, "", [a, a], [b])).get_partitions()[0]
    assert [t.get_id() for t in part.get_input_ports()] == [0, 0]
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    for ins in ([a], part.get_input_ports()):
        cp = part.compile(ins, [b], eng)
        out = dg.Tensor(b, eng)
        cp.execute(dg.Stream(eng), [dg.Tensor(a, eng, x)], [out])
        np.testing.assert_array_equal(out.to_numpy(), np.where(x > 0, x, x * x))


def test_tensor_and_engine_errors():
    with pytest.raises(dg.Error) as e:
        dg.Engine(dg.EngineKind.gpu, 0)
    assert status(e) == "invalid_arguments"
    with pytest.raises(dg.Error) as e:
        dg.Engine(dg.EngineKind.cpu, 1)
    assert status(e) == "invalid_arguments"
    eng = dg.Engine()
    for handle in (np.zeros(5, np.float32), np.zeros((6, 2), np.float32)[:, 0], [1.0] * 6):
        with pytest.raises(dg.Error) as e:
            dg.Tensor(lt(0, (2, 3)), eng, handle)
        assert status(e) == "invalid_arguments"
    # a tensor of an unknown shape is a handle, as dnnl_graph_tensor_create makes it; it has no
    # elements to view
    unknown = dg.Tensor(lt(0, None, ndims=2), eng)
    assert unknown.get_data_handle().nbytes == 0
    with pytest.raises(dg.Error) as e:
        unknown.to_numpy()
    assert status(e) == "invalid_arguments"
    with pytest.raises(dg.Error) as e:
        dg.Tensor(lt(0, (2, 3)), "not an engine")
    assert status(e) == "invalid_arguments"
    with pytest.raises(dg.Error) as e:
        dg.LogicalTensor(0, dg.DataType.f32, (1,) * 13)
    assert status(e) == "invalid_arguments"
    with pytest.raises(dg.Error) as e:
        dg.LogicalTensor(0, dg.DataType.f32, None, ndims=13)
    assert status(e) == "invalid_arguments"
    with pytest.raises(dg.Error) as e:
        dg.Engine(isa="avx9000")
    assert status(e) == "invalid_arguments" and "AVX512_CORE_AMX" in str(e.value)
    with pytest.raises(dg.Error) as e:
        dg.data_type_of(np.float64)
    assert status(e) == "invalid_arguments"


def test_logical_tensor_queries():
    t = dg.LogicalTensor(4, dg.DataType.bf16, (2, dg.DNNL_GRAPH_UNKNOWN_DIM))
    assert t.get_dims() == [2, dg.DNNL_GRAPH_UNKNOWN_DIM] and not t.is_shape_known()
    assert t.get_mem_size() == 0
    t = dg.LogicalTensor(4, dg.DataType.bf16, (2, -2))  # accepted as oneDNN does, until used
    assert t.get_dims() == [2, -2] and not t.is_shape_known() and t.strides is None
    assert dg.LogicalTensor(4, dg.DataType.f32, ndims=2).get_dims() == [dg.DNNL_GRAPH_UNKNOWN_DIM] * 2
    t = dg.LogicalTensor(4, dg.DataType.f16, (2, 3), strides=(1, 2))
    assert t.get_mem_size() == 12 and t.dtype == np.float16
    assert t.is_equal(dg.LogicalTensor(4, dg.DataType.f16, (2, 3), strides=(1, 2)))
    assert not t.is_equal(dg.LogicalTensor(4, dg.DataType.f16, (2, 3)))


def test_error_is_one_type_with_the_status_name():
    import pickle

    e = dg.Error(dg.Status.invalid_graph_op, "m")
    assert isinstance(e, RuntimeError) and str(e) == "invalid_graph_op: m"
    e2 = pickle.loads(pickle.dumps(e))
    assert e2.status is dg.Status.invalid_graph_op and str(e2) == str(e)
    assert [s.value for s in (dg.Status.invalid_arguments, dg.Status.unimplemented,
                              dg.Status.invalid_graph, dg.Status.invalid_graph_op,
                              dg.Status.invalid_shape)] == [2, 3, 7, 8, 9]


# ---------------------------------------------------------------------------------------------
# the kernel each layout runs, the slope's axes, the engine's instruction set


@pytest.mark.parametrize("src,wei,fmt,pcb,shape", [
    (4, (3,), "NCX", True, (1, 3, 1, 1)),
    (4, (5,), "NXC", True, (1, 1, 1, 5)),
    (4, (3, 3), "NCX", True, (1, 3, 3, 1)),       # not right-aligned
    (5, (3, 3), "NCX", True, (1, 3, 1, 3, 1)),
    (4, (3, 3), "NXC", True, (1, 1, 3, 3)),
    (4, (3, 3), "NCX", False, (1, 1, 3, 3)),
    (2, (3,), "NCX", True, (1, 3)),
    (3, (2, 3, 4), "NCX", True, (2, 3, 4)),
])
def test_unsqueezed_slope(src, wei, fmt, pcb, shape):
    from leakyops.onednn._ops import unsqueezed_slope

    assert unsqueezed_slope(src, wei, fmt, pcb) == shape


def test_slope_of_rank_2_under_ncx_runs_along_dims_1_and_2(run_graph):
    x = np.random.default_rng(3).standard_normal((2, 3, 3, 3)).astype(np.float32)
    w = np.arange(9, dtype=np.float32).reshape(3, 3) / 4 - 1
    (y,) = run_graph("PReLU", {"data_format": "NCX"}, [x, w], 1)
    np.testing.assert_array_equal(y, np.where(x > 0, x, w.reshape(1, 3, 3, 1) * x))


@pytest.mark.parametrize("isa,kernel", [(None, "dnnl-jit"), ("avx512_core_amx", "dnnl-jit"),
                                        ("AVX2", "dnnl-jit-avx2"), ("avx", "dnnl-jit-avx"),
                                        ("sse41", "dnnl-jit-sse41")])
def test_engine_isa_selects_the_jit_variant(isa, kernel):
    eng = dg.Engine(isa=isa)
    ins = [lt(0, (2, 3, 4)), lt(1, (3,)), lt(2, (2, 3, 4))]
    outs = [lt(3, (2, 3, 4)), lt(4, (3,))]
    op = dg.Op(0, dg.OpKind.PReLUBackward, "", ins, outs)
    op.set_attr("data_format", "NCX")
    cp = graph_of(op).get_partitions()[0].compile(ins, outs, eng)
    assert cp._plan.compare == kernel
    # NaN src: in neither branch on AVX-512 (diff_src 0*dd, left out of diff_slope); the
    # other variants' factors make the term NaN, and SSE4.1 takes it as src > 0
    x = np.full((2, 3, 4), -1.0, np.float32)
    x[0, 0, 0] = np.nan
    g, w = np.full((2, 3, 4), 2.0, np.float32), np.full(3, 0.5, np.float32)
    t = [dg.Tensor(a, eng, v) for a, v in zip(ins, (x, w, g))]
    o = [dg.Tensor(a, eng) for a in outs]
    cp.execute(dg.Stream(eng), t, o)
    dx, dw = o[0].to_numpy(), o[1].to_numpy()
    if kernel == "dnnl-jit":
        assert dx[0, 0, 0] == 0 and dw[0] == -2.0 * 7
    else:
        assert np.isnan(dw[0]) and dx[0, 0, 0] == (2.0 if kernel == "dnnl-jit-sse41" else 0.0)


def test_engine_isa_bf16_flush(run_graph):
    """With an instruction set whose bf16 stores use vcvtneps2bf16 (AVX512-BF16 and up),
    results whose float32 value is below 2**-126 become zeros of their sign; otherwise
    bf16 rounds exactly (the default)."""
    bf = np.dtype(ml_dtypes.bfloat16)
    x = np.array([-(2.0**-125 - 2.0**-133), -4e-40, 3e-39, 1.0, -2e-38], np.float32).astype(bf)
    assert dg.Engine(isa="avx512_core_bf16").flushes_bf16 and not dg.Engine().flushes_bf16
    exact = _core.leaky_relu_impl(x, np.float32(0.5), compare="dnnl-eltwise")
    (plain,) = run_graph("LeakyReLU", {"alpha": 0.5}, [x], 1)
    (flushed,) = run_graph("LeakyReLU", {"alpha": 0.5}, [x], 1, isa="AVX512_CORE_AMX")
    np.testing.assert_array_equal(plain.view(np.uint16), exact.view(np.uint16))
    want = exact.copy()
    want[[0, 1, 2, 4]] = np.array([-0.0, -0.0, 0.0, -0.0], bf)  # [0] rounds up exactly
    np.testing.assert_array_equal(flushed.view(np.uint16), want.view(np.uint16))
    assert exact[0] != 0  # (it did round up to the smallest normal)


def test_engine_isa_without_kernels_is_unimplemented():
    ins, outs = [lt(0, (2, 3), dg.DataType.f16)], [lt(1, (2, 3), dg.DataType.f16)]
    part = graph_of(lrelu_op(0, ins[0], outs[0])).get_partitions()[0]
    part.compile(ins, outs, dg.Engine(isa="avx512_core_fp16"))
    part.compile(ins, outs, dg.Engine(isa="avx2_vnni_2"))
    with pytest.raises(dg.Error) as e:
        part.compile(ins, outs, dg.Engine(isa="avx512_core_bf16"))
    assert status(e) == "unimplemented" and "f16" in str(e.value)


@pytest.mark.parametrize("kind,ins,outs,st", [
    ("PReLU", [((5,), "f32"), ((5,), "f32")], [((5,), "f32")], "invalid_shape"),   # 1-D NXC
    ("PReLU", [((2, 3, 4, 5, 6, 7), "f32"), ((7,), "f32")], [((2, 3, 4, 5, 6, 7), "f32")],
     "invalid_arguments"),                                                        # 6-D
    ("PReLUBackward", [((2, 3, 4), "f32"), ((4,), "f32"), ((2, 3, 4), "bf16")],
     [((2, 3, 4), "f32"), ((4,), "f32")], "unimplemented"),                       # diff_dst type
    ("LeakyReLU", [((2, 3), "f16")], [((2, 3), "f32")], "unimplemented"),
])
def test_where_the_library_aborts(kind, ins, outs, st):
    graph = [lt(i, s) for i, (s, _) in enumerate(ins + outs)]
    comp = [lt(i, s, getattr(dg.DataType, d)) for i, (s, d) in enumerate(ins + outs)]
    op = dg.Op(0, kind, "", graph[:len(ins)], graph[len(ins):])
    if kind == "LeakyReLU":
        op.set_attr("alpha", 0.5)
    with pytest.raises(dg.Error) as e:
        graph_of(op).get_partitions()[0].compile(comp[:len(ins)], comp[len(ins):], dg.Engine())
    assert status(e) == st and ("aborts" in str(e.value) or "crashes" in str(e.value))


def test_mixed_slope_and_diff_slope_types(run_graph):
    """The slope may have its own type (widened exactly); diff_slope is rounded once into
    its own type from the float64 sum."""
    bf = np.dtype(ml_dtypes.bfloat16)
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, -6.0]], np.float32).astype(bf)
    w = np.array([0.1, 0.2, 0.3], np.float32)  # not representable in bf16
    (y,) = run_graph("PReLU", {"data_format": "NCX"}, [x, w], 1)
    want = (np.where(x.astype(np.float32) > 0, x.astype(np.float32),
                     x.astype(np.float32) * w)).astype(bf)
    np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))
    g = np.ones((2, 3), bf)
    dx, dw = run_graph("PReLUBackward", {"data_format": "NCX"}, [x, w, g], 2,
                       out_dtypes=[bf, np.float32])
    assert dx.dtype == bf and dw.dtype == np.float32
    np.testing.assert_array_equal(dw, np.array([-1.0, -5.0, -9.0], np.float32))


_AVX2 = {"sse4.1", "avx", "avx2", "fma", "f16c"}
_AVX512 = _AVX2 | {"avx512f", "avx512bw", "avx512vl", "avx512dq"}
_SPR = _AVX512 | {"avx512vnni", "avx512bf16", "avx512fp16", "avxvnni", "amx-tile", "amx-int8",
                  "amx-bf16"}


@pytest.mark.parametrize("features,isa", [
    ({"sse4.1"}, "sse41"),
    ({"sse4.1", "avx"}, "avx"),
    (_AVX2, "avx2"),                                                   # AMD EPYC Zen 3
    (_AVX2 | {"avxvnni"}, "avx2_vnni"),
    (_AVX2 | {"avxvnni", "avxvnniint8", "avxneconvert"}, "avx2_vnni_2"),
    (_AVX2 | {"avxvnniint8", "avxneconvert"}, "avx2"),                 # no AVX-VNNI underneath
    (_AVX512, "avx512_core"),
    (_AVX512 - {"avx512dq"}, "avx2"),                                  # all four or none
    (_AVX512 | {"avx512vnni"}, "avx512_core_vnni"),
    (_AVX512 | {"avx512vnni", "avx512bf16"}, "avx512_core_bf16"),     # AMD EPYC Zen 4
    (_AVX512 | {"avx512bf16"}, "avx512_core"),                         # bf16 needs VNNI first
    (_AVX512 | {"avx512vnni", "avx512bf16", "avx512fp16"}, "avx512_core_bf16"),  # fp16: + AVX-VNNI
    (_SPR - {"amx-bf16"}, "avx512_core_fp16"),
    (_SPR, "avx512_core_amx"),                                         # Sapphire Rapids
    (_SPR | {"amx-fp16"}, "avx512_core_amx_fp16"),
])
def test_host_isa_from_cpu_features(monkeypatch, features, isa):
    """oneDNN 3.2's ``mayiuse`` rules, feature by feature (the oracle test checks the real CPU)."""
    from leakyops.onednn import _ops
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    assert _ops.host_isa(frozenset(features)) == isa


@pytest.mark.parametrize("cap,isa", [
    ("AVX2", "avx2"), ("avx512_core", "avx512_core"), ("AVX512_CORE_BF16", "avx512_core_bf16"),
    ("AVX2_VNNI", "avx2_vnni"),          # not below AVX512_CORE: a cap is a set of features
    ("AVX2_VNNI_2", "avx2_vnni"), ("SSE41", "sse41"), ("DEFAULT", "avx512_core_amx"),
    ("not-an-isa", "avx512_core_amx"),   # the library ignores a value it does not know
])
def test_host_isa_under_the_librarys_cap(monkeypatch, cap, isa):
    from leakyops.onednn import _ops
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", cap)
    assert _ops.host_isa(frozenset(_SPR)) == isa
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    monkeypatch.setenv("DNNL_MAX_CPU_ISA", cap)      # the older name, read as the library does
    assert _ops.host_isa(frozenset(_SPR)) == isa


def test_host_isa_without_sse41_is_a_clear_error(monkeypatch):
    from leakyops import _cpu
    monkeypatch.setattr(_cpu, "host_features", lambda: frozenset({"sse2", "sse3"}))
    with pytest.raises(dg.Error) as e:
        dg.Engine(isa="host")
    assert status(e) == "unimplemented" and "SSE4.1" in str(e.value)


def test_engine_isa_from_the_environment(monkeypatch):
    """``$LEAKYOPS_ONEDNN_ISA`` sets the instruction set of an ``Engine()`` made without one; an
    explicit ``isa=`` wins; a bad value is an error naming the variable."""
    monkeypatch.setenv("LEAKYOPS_ONEDNN_ISA", "AVX2")
    assert dg.Engine().isa == "avx2" and dg.Engine(isa="sse41").isa == "sse41"
    monkeypatch.setenv("LEAKYOPS_ONEDNN_ISA", "host")
    assert dg.Engine().isa == dg.Engine(isa="host").isa
    monkeypatch.setenv("LEAKYOPS_ONEDNN_ISA", " ")
    assert dg.Engine().isa is None
    monkeypatch.setenv("LEAKYOPS_ONEDNN_ISA", "avx9000")
    with pytest.raises(dg.Error) as e:
        dg.Engine()
    assert status(e) == "invalid_arguments" and "$LEAKYOPS_ONEDNN_ISA" in str(e.value) \
        and "HOST" in str(e.value)
    monkeypatch.delenv("LEAKYOPS_ONEDNN_ISA")
    for bad in (5, b"avx2", ["avx2"]):
        with pytest.raises(dg.Error) as e:
            dg.Engine(isa=bad)
        assert status(e) == "invalid_arguments"
    with pytest.raises(dg.Error) as e:
        dg.Graph(strict="no")
    assert status(e) == "invalid_arguments"


def test_hostile_arguments_get_onednn_statuses():
    """Issue 26, item 10: each of these raised a Python error of the wrong kind (TypeError,
    MemoryError) or was accepted; each is now an :class:`Error` with oneDNN's status."""
    F = dg.DataType.f32
    for oid in (-1, 2**64, 1.5, True):
        with pytest.raises(dg.Error) as e:
            dg.Op(oid, dg.OpKind.LeakyReLU)
        assert status(e) == "invalid_arguments"
        with pytest.raises(dg.Error) as e:
            dg.LogicalTensor(oid, F, (2,))
        assert status(e) == "invalid_arguments"
    assert dg.Op(2**64 - 1, dg.OpKind.LeakyReLU).get_id() == 2**64 - 1  # size_t's largest
    # more than the machine holds (4 TiB: refused whatever the kernel's overcommit policy), and
    # more than an address space (NumPy's "array is too big", a ValueError, before)
    for dims in ((2**40,), (2**61,), (2**62,), (2**40, 2**40)):
        with pytest.raises(dg.Error) as e:
            dg.Tensor(dg.LogicalTensor(0, F, dims), dg.Engine())
        assert status(e) == "out_of_memory", dims
    # a time is no alpha (accepted as its count of ns before, or a bare TypeError at add_op):
    # invalid_graph_op, as every attribute of the wrong type, at add_op where oneDNN checks
    # the op against its schema
    for alpha in (np.timedelta64(3, "ns"), np.timedelta64(3, "s"), np.datetime64("2026-01-01")):
        op = dg.Op(0, dg.OpKind.LeakyReLU, "", [lt(0, (2,))], [lt(1, (2,))])
        op.set_attr(dg.OpAttr.alpha, alpha)
        with pytest.raises(dg.Error, match=r"^invalid_graph_op: LeakyReLU op 0: .*alpha.* must be "
                                           r"an? (real|f32) number") as e:
            dg.Graph().add_op(op)
        assert status(e) == "invalid_graph_op"
        assert dg.Graph().add_op(op, allow_exception=False) == dg.Status.invalid_graph_op
    with pytest.raises(dg.Error) as e:
        dg.Tensor(dg.LogicalTensor(0, F, (2,)), dg.Engine(), np.array([1.0, 2.0, 3.0], object))
    assert status(e) == "invalid_arguments" and "objects" in str(e.value)
    src, dst = lt(0, (2,)), lt(1, (2,))
    op = dg.Op(0, dg.OpKind.LeakyReLU, "", [src], [dst])
    op.set_attr("alpha", 0.5)
    g = dg.Graph()
    g.add_op(op)
    g.finalize()
    eng = dg.Engine()
    cp = g.get_partitions()[0].compile([src], [dst], eng)
    out = dg.Tensor(dst, eng, np.full(2, 7.0, np.float32))
    for ins, outs in ((None, None), ([dg.Tensor(src, eng)], None), ("ab", [out]),
                      ({0: dg.Tensor(src, eng)}, [out])):
        with pytest.raises(dg.Error) as e:
            cp.execute(dg.Stream(eng), ins, outs)
        assert status(e) == "invalid_arguments"
    assert (out.to_numpy() == 7).all()


def test_an_interleaved_output_whose_elements_are_each_their_own_is_written():
    """Whether an output's elements share memory is the core's one rule (``disjoint_layout``),
    exact: strides (3, 2) over (2, 3) put the elements at 0, 2, 4, 3, 5, 7, each its own,
    and are written (the model's own rule, only sufficient, refused them as sharing memory);
    strides (2, 1) make them share and are refused."""
    src = lt(0, (2, 3))
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    for strides, shares in (((3, 2), False), ((2, 1), True)):
        dst = lt(1, (2, 3), strides=strides)
        op = dg.Op(0, dg.OpKind.LeakyReLU, "", [src], [dst])
        op.set_attr("alpha", 0.5)
        g = graph_of(op)
        eng = dg.Engine()
        cp = g.get_partitions()[0].compile([src], [dst], eng)
        buf = np.full(8, 7.0, np.float32)
        out = dg.Tensor(dst, eng, buf)
        if shares:
            with pytest.raises(dg.Error, match="share memory") as e:
                cp.execute(dg.Stream(eng), [dg.Tensor(src, eng, x)], [out])
            assert status(e) == "invalid_arguments" and (buf == 7).all()
            continue
        cp.execute(dg.Stream(eng), [dg.Tensor(src, eng, x)], [out])
        expected = _core.leaky_relu_impl(x, np.float32(0.5), compare="dnnl-eltwise")
        assert out.to_numpy().tolist() == expected.tolist()
        assert buf[[1, 6]].tolist() == [7.0, 7.0]


_MATRIX_BUFFER = r"""
import numpy as np
from leakyops import onednn as dg
F = dg.DataType.f32
for n in (4, 100_000):
    src, dst = dg.LogicalTensor(0, F, (n,)), dg.LogicalTensor(1, F, (n,), strides=(-1,))
    op = dg.Op(0, dg.OpKind.LeakyReLU, "", [src], [dst])
    op.set_attr("alpha", 0.5)
    g = dg.Graph(); g.add_op(op); g.finalize(); eng = dg.Engine()
    cp = g.get_partitions()[0].compile([src], [dst], eng)
    x = -np.arange(1, n + 1, dtype=np.float32)
    buf = np.matrix(np.zeros((1, n), np.float32))
    out = dg.Tensor(dst, eng, buf)
    cp.execute(dg.Stream(eng), [dg.Tensor(src, eng, np.matrix(x))], [out])
    assert np.array_equal(np.asarray(buf).ravel(), (x * 0.5)[::-1])
    assert out.get_data_handle() is buf
print("ok")
"""


def test_matrix_buffers_under_negative_strides():
    """Issue 26, item 2: an ``np.matrix`` buffer under a logical tensor with negative strides
    corrupted memory (its rows were sliced, then viewed past the end); buffers now go through
    the core's plain view. In a child process, where the old code crashed."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _MATRIX_BUFFER], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr[-2000:])
    with pytest.raises(dg.Error) as e:  # a masked buffer would lose its mask: refused
        dg.Tensor(lt(0, (4,)), dg.Engine(), np.ma.masked_array(np.zeros(4, np.float32)))
    assert status(e) == "invalid_arguments"


@pytest.mark.parametrize("kind", ["LeakyReLU", "PReLU"])
def test_in_place_on_a_flushing_engine_equals_a_separate_output(kind):
    """Issue 26, item 3: in place on an engine that flushes bf16 (AVX512_CORE_BF16), the flush
    was decided from x after the result had overwritten it."""
    B = dg.DataType.bf16
    x = np.array([-2e-38, -1.6e-38, 3, -1], ml_dtypes.bfloat16)
    ins = [dg.LogicalTensor(0, B, (4,))]
    if kind == "PReLU":
        ins.append(dg.LogicalTensor(2, B, (1,)))
    dst = dg.LogicalTensor(1, B, (4,))
    op = dg.Op(0, getattr(dg.OpKind, kind), "", ins, [dst])
    if kind == "LeakyReLU":
        op.set_attr("alpha", 0.75)
    else:
        op.set_attr("data_format", "NCX")  # (a 1-D src has no channel axis in NXC)
    g = dg.Graph()
    g.add_op(op)
    g.finalize()
    eng = dg.Engine(isa="AVX512_CORE_BF16")
    cp = g.get_partitions()[0].compile(ins, [dst], eng)
    extra = [dg.Tensor(ins[1], eng, np.array([0.75], ml_dtypes.bfloat16))] if kind == "PReLU" else []
    separate = dg.Tensor(dst, eng)
    cp.execute(dg.Stream(eng), [dg.Tensor(ins[0], eng, x.copy()), *extra], [separate])
    same = dg.Tensor(ins[0], eng, x.copy())
    cp.execute(dg.Stream(eng), [same, *extra], [same])
    assert np.array_equal(same.to_numpy().view(np.uint16), separate.to_numpy().view(np.uint16))
    assert separate.to_numpy()[0] != 0  # -1.5e-38: a normal bf16 value, not flushed


def test_alpha_is_rounded_once_to_f32():
    """An int beyond 2**53, a Fraction: one rounding from the exact value, as oneDNN's C++ API
    converts a float attribute (issue 26, item 4 for the oneDNN model)."""
    from fractions import Fraction

    from leakyops.onednn import _ops

    def f32(v):
        return float(_ops.convert_attr("op", dg.OpAttr.alpha, "f32", v))

    assert f32(2**60 + 2**36 + 1) == float(np.float32(2**60 + 2**37))
    assert f32(Fraction(1) + Fraction(1, 2**24) + Fraction(1, 2**60)) == \
        float(np.nextafter(np.float32(1), np.float32(2)))
    assert f32(1e300) == np.inf
