"""Fixtures for the oneDNN Graph front-end tests.

``oracle``: the ctypes harness for the real oneDNN (``dnnl_oracle.py`` beside this
file), skipping the test when ``libdnnl`` is not installed.  ``run_graph``: build,
compile and execute a one-op graph through :mod:`leakyops.onednn`.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

from leakyops import onednn as dg

_HERE = pathlib.Path(__file__).parent


def _load_oracle():
    spec = importlib.util.spec_from_file_location("_leakyops_dnnl_oracle", _HERE / "dnnl_oracle.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


_ORACLE = _load_oracle()


@pytest.fixture(scope="session")
def oracle():
    if _ORACLE.load() is None:
        pytest.skip("the real oneDNN (pip install onednn-cpu-gomp==2023.2.0) is not installed")
    return _ORACLE


@pytest.fixture(scope="session")
def oracle_session(oracle):
    sess = oracle.Session()
    yield sess
    sess.close()


def _run(kind, attrs, arrays, n_out, *, out_shapes=None, out_dtypes=None, isa=None):
    """One op through leakyops.onednn; returns the output arrays (copies).

    ``isa``: the engine's instruction set (``Engine(isa=...)``; None: the model's default).
    ``out_dtypes``: the outputs' NumPy dtypes (default: the first input's).
    """
    eng = dg.Engine(dg.EngineKind.cpu, 0, isa=isa)
    out_dts = [dg.data_type_of(d) for d in out_dtypes] if out_dtypes else \
        [dg.data_type_of(arrays[0].dtype)] * n_out
    ins = [dg.LogicalTensor(i, dg.data_type_of(a.dtype), a.shape) for i, a in enumerate(arrays)]
    outs = [dg.LogicalTensor(len(arrays) + j, out_dts[j],
                             None if out_shapes is None else out_shapes[j],
                             ndims=-1 if out_shapes is None else None)
            for j in range(n_out)]
    # the graph's logical tensors share the first input's type (add_op checks one type); the
    # compile-time ones carry each operand's own
    dt = dg.data_type_of(arrays[0].dtype)
    graph_lts = [dg.LogicalTensor(lt.id, dt, lt.shape, ndims=lt.ndims) for lt in ins + outs]
    op = dg.Op(7, kind, "op", graph_lts[:len(ins)], graph_lts[len(ins):])
    for k, v in attrs.items():
        op.set_attr(k, v)
    g = dg.Graph(dg.EngineKind.cpu)
    g.add_op(op)
    g.finalize()
    (part,) = g.get_partitions()
    cp = part.compile(ins, outs, eng)
    tin = [dg.Tensor(lt, eng, np.ascontiguousarray(a)) for lt, a in zip(ins, arrays)]
    tout = [dg.Tensor(cp.query_logical_tensor(lt.id), eng) for lt in outs]
    cp.execute(dg.Stream(eng), tin, tout)
    return [t.to_numpy().copy() for t in tout]


@pytest.fixture(scope="session")
def run_graph():
    return _run
