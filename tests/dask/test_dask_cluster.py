"""leakyops.dask on a dask.distributed LocalCluster of worker processes.

Two worker processes on 127.0.0.1, no dashboard, torn down at the end. The workers import
leakyops themselves (tasks pickle by reference) and run each task's kernels on one thread.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

import leakyops
import leakyops.dask as lod

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow  # starting worker processes and loading kernels takes seconds


def _spy_kernel_threads():
    """Run on each worker: record the kernel thread count every leaky_relu task sees."""
    import leakyops
    from leakyops import _core

    real = _core.leaky_relu_impl
    seen = []

    def spy(*args, **kwargs):
        seen.append(leakyops.get_num_threads())
        return real(*args, **kwargs)

    _core.leaky_relu_impl = spy
    _core._dask_test_seen = seen
    return leakyops.get_num_threads()


def _read_spy():
    from leakyops import _core

    return list(_core._dask_test_seen)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=2,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        worker_dashboard_address=None,
    ) as cluster, distributed.Client(cluster) as c:
        yield c
    # both context managers have closed: workers and scheduler are gone
    assert cluster.status.name == "closed"


def test_cluster_results_equal_core(client):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 6, 9)).astype(np.float32)
    g = rng.standard_normal((40, 6, 9)).astype(np.float32)
    w = rng.uniform(-1, 1, 6).astype(np.float32)
    x = da.from_array(a, chunks=(7, (2, 4), 5))
    gd = da.from_array(g, chunks=(10, 3, 9))

    y, gb, p = client.compute(
        [lod.leaky_relu(x, 0.1), lod.leaky_relu_backward(gd, x, 0.1), lod.prelu(x, w)], sync=True
    )
    np.testing.assert_array_equal(y, leakyops.leaky_relu(a, 0.1))
    np.testing.assert_array_equal(gb, leakyops.leaky_relu_backward(g, a, 0.1))
    np.testing.assert_array_equal(p, leakyops.prelu(a, w))

    gi, gw = client.compute(list(lod.prelu_backward(gd, x, w)), sync=True)
    ref_gi, ref_gw = leakyops.prelu_backward(g, a, w)
    np.testing.assert_array_equal(gi, ref_gi)
    np.testing.assert_allclose(gw, ref_gw, rtol=np.finfo(np.float32).eps)
    # deterministic for a fixed chunking, wherever the tasks ran
    gw_local = dask.compute(lod.prelu_backward(gd, x, w)[1], scheduler="synchronous")[0]
    np.testing.assert_array_equal(gw, gw_local)


def test_cluster_workers_are_separate_processes_with_one_kernel_thread_per_task(client):
    import os

    pids = client.run(os.getpid)
    assert len(pids) == 2 and os.getpid() not in pids.values()
    before = client.run(_spy_kernel_threads)  # each worker's own (process-wide) setting
    x = da.from_array(np.linspace(-1, 1, 64, dtype=np.float64).reshape(8, 8), chunks=2)
    np.testing.assert_array_equal(lod.leaky_relu(x, 0.5).compute(),
                                  leakyops.leaky_relu(x.compute(), 0.5))
    seen = [n for per_worker in client.run(_read_spy).values() for n in per_worker]
    assert len(seen) == x.npartitions and set(seen) == {1}
    # only the tasks' threads were limited: the workers' process-wide setting is untouched
    assert client.run(leakyops.get_num_threads) == before
