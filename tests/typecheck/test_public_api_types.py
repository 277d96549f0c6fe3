"""The public API is typed: ``mypy --strict`` on a user's script reports no error and no ``Any``.

Each script below calls every public operator of the core (``leakyops``) and of the
front-ends ``leakyops.aclnn``, ``leakyops.ascendc``, ``leakyops.onednn``, ``leakyops.torch``
and ``leakyops.dask`` the way a user would, with a ``reveal_type`` around each result. The test runs mypy in a
subprocess (on the installed package, through its ``py.typed`` marker) and checks that

- mypy reports no error under ``--strict``;
- every ``reveal_type`` is reported, and no revealed type contains ``Any`` — except on lines
  marked ``# any: <why>``, where the ``Any`` is NumPy's own notation for an input whose dtype
  or shape is not known statically;
- a revealed type contains the text after ``# reveals:`` (the overloads pick the right result:
  the input's dtype and shape, the ``out=`` array's type, ...).

A script of misuses checks the other direction: mypy flags exactly the lines marked
``# E``, so the annotations are not ``Any`` in disguise. The scripts also run (each in a
fresh interpreter), so what they say matches what the code does.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mypy", reason="mypy is in the test extras: pip install -e '.[test]'")

# at run time ``reveal_type`` is the identity (typing has it only from Python 3.11 on)
PRELUDE = """\
from typing import TYPE_CHECKING

if not TYPE_CHECKING:
    def reveal_type(obj):
        return obj
"""

CORE = """\
from fractions import Fraction

import numpy as np

import leakyops

x = np.linspace(-2.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
w = np.full(3, 0.25, np.float32)
x64 = np.ones(4)

reveal_type(leakyops.leaky_relu(x))  # reveals: ndarray[tuple[int, int], numpy.dtype[numpy.floating[numpy._typing._nbit_base._32Bit]]]
reveal_type(leakyops.leaky_relu(x64, 0.1))  # reveals: numpy.float64
reveal_type(leakyops.leaky_relu(x, np.float16(0.5)))  # reveals: _32Bit
reveal_type(leakyops.leaky_relu(x, Fraction(1, 3)))  # reveals: _32Bit
reveal_type(leakyops.leaky_relu(x, np.array([0.5])))  # reveals: _32Bit
reveal_type(leakyops.leaky_relu(x, True))  # reveals: _32Bit
reveal_type(leakyops.leaky_relu(x, out=np.empty((2, 3))))  # reveals: ndarray[tuple[int, int], numpy.dtype[numpy.float64]]
reveal_type(leakyops.leaky_relu([-1.0, 2.0], 0.5))  # any: a list has no static dtype
reveal_type(leakyops.leaky_relu_(x.copy(), 0.5))  # reveals: _32Bit
reveal_type(leakyops.leaky_relu_backward(np.ones_like(x), x, 0.1))  # reveals: _32Bit
reveal_type(leakyops.leaky_relu_backward(np.ones_like(x), x, 0.0, True))  # reveals: _32Bit
reveal_type(leakyops.leaky_relu_backward(x, x, 0.1, out=np.empty((2, 3))))  # reveals: numpy.float64
reveal_type(leakyops.prelu(x, w))  # reveals: ndarray[tuple[int, int]
reveal_type(leakyops.prelu(x.T, w, axis=0))  # reveals: _32Bit
reveal_type(leakyops.prelu(x, w, out=np.empty((2, 3))))  # reveals: numpy.float64
reveal_type(leakyops.prelu_backward(np.ones_like(x), x, w))  # reveals: ndarray[tuple[int], numpy.dtype[numpy.floating[numpy._typing._nbit_base._32Bit]]]]
gi = np.empty((2, 3), np.float32)
gw = np.empty(3, np.float64)
reveal_type(leakyops.prelu_backward(x, x, w, out=(gi, gw)))  # reveals: numpy.float64
reveal_type(leakyops.prelu_backward(x, x, w, out=(gi, None)))  # reveals: ndarray[tuple[int], numpy.dtype[numpy.floating
reveal_type(leakyops.prelu_backward(x, x, w, out=(None, gw)))  # reveals: numpy.float64
reveal_type(leakyops.prelu_backward(x, x, w, out=(None, None)))  # reveals: _32Bit
reveal_type(leakyops.get_num_threads())  # reveals: int
reveal_type(leakyops.set_num_threads(leakyops.get_num_threads()))  # reveals: None
with leakyops.thread_limit(1) as nothing:
    reveal_type(nothing)  # reveals: None
reveal_type(leakyops.SUPPORTED_DTYPES)  # any: NumPy's dtype of an unknown scalar type
reveal_type(leakyops.__version__)  # reveals: str
"""

VENDORS = """\
import numpy as np
import numpy.typing as npt

from leakyops import aclnn
from leakyops import ascendc as ac

# aclnn: the two-phase API on a stream, as in the vendor's sample programs
x = np.array([-2.0, -0.5, 0.0, 3.0], dtype=np.float32)
y = np.zeros_like(x)
stream, ret = aclnn.aclrtCreateStream()
reveal_type(stream)  # reveals: aclrtStream
self_t, out_t = aclnn.from_numpy(x), aclnn.from_numpy(y)
reveal_type(self_t)  # reveals: aclTensor | None
slope = aclnn.aclCreateScalar(0.5, aclnn.ACL_FLOAT)
reveal_type(slope)  # reveals: aclScalar | None
ws_size, executor, ret = aclnn.aclnnLeakyReluGetWorkspaceSize(self_t, slope, out_t)
reveal_type(executor)  # reveals: aclOpExecutor | None
ws, ret = aclnn.aclrtMalloc(ws_size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
reveal_type(ws)  # reveals: DevicePtr | None
reveal_type(aclnn.aclnnLeakyRelu(ws, ws_size, executor, stream))  # reveals: int
reveal_type(aclnn.aclrtSynchronizeStream(stream))  # reveals: int
reveal_type(aclnn.aclGetRecentErrMsg())  # reveals: str | None
for phase1 in (
    aclnn.aclnnInplaceLeakyReluGetWorkspaceSize(out_t, slope),
    aclnn.aclnnLeakyReluBackwardGetWorkspaceSize(self_t, self_t, slope, False, out_t),
    aclnn.aclnnPreluGetWorkspaceSize(self_t, self_t, out_t),
    aclnn.aclnnPreluBackwardGetWorkspaceSize(self_t, self_t, self_t, out_t, out_t),
):
    reveal_type(phase1)  # reveals: tuple[int, leakyops.aclnn._ops.aclOpExecutor | None, int]
reveal_type(aclnn.aclnnInplaceLeakyRelu(None, 0, None, stream))  # reveals: int
reveal_type(aclnn.aclnnLeakyReluBackward(None, 0, None, stream))  # reveals: int
reveal_type(aclnn.aclnnPrelu(None, 0, None, None))  # reveals: int
reveal_type(aclnn.aclnnPreluBackward(None, 0, None, None))  # reveals: int
dev, ret = aclnn.aclrtMalloc(16)
reveal_type(aclnn.aclrtMemcpy(dev, 16, x, 16, aclnn.ACL_MEMCPY_HOST_TO_DEVICE))  # reveals: int
t = aclnn.aclCreateTensor([4], aclnn.ACL_FLOAT, [1], 0, aclnn.ACL_FORMAT_ND, [4], dev)
reveal_type(aclnn.aclGetViewShape(t))  # reveals: tuple[list[int] | None, int]
reveal_type(aclnn.aclGetDataType(t))  # reveals: aclDataType | None
if t is not None:
    reveal_type(aclnn.to_numpy(t))  # reveals: ndarray
reveal_type(aclnn.aclrtMemcpy(y, 16, dev, 16, aclnn.ACL_MEMCPY_DEVICE_TO_HOST))  # reveals: int
reveal_type(aclnn.aclDestroyTensor(t))  # reveals: int
reveal_type(aclnn.aclDestroyScalar(slope))  # reveals: int
reveal_type(aclnn.aclrtFree(dev))  # reveals: int
reveal_type(aclnn.aclrtDestroyStream(stream))  # reveals: int
aclnn.set_soc_version(aclnn.get_soc_version())
aclnn.set_prelu_backward_rule(aclnn.get_prelu_backward_rule())


# ascendc: a tiled kernel written the Ascend C way, every vector instruction in its forms
def kernel(x_gm: npt.NDArray[np.float16], y_gm: npt.NDArray[np.float16], n: int) -> None:
    off = ac.GetBlockIdx() * n
    xg, yg = ac.GlobalTensor(ac.half), ac.GlobalTensor(ac.half)
    xg.SetGlobalBuffer(x_gm[off:], n)
    yg.SetGlobalBuffer(y_gm[off:], n)
    pipe = ac.TPipe()
    qin, qout = ac.TQue(ac.TPosition.VECIN, 2), ac.TQue(ac.TPosition.VECOUT, 2)
    pipe.InitBuffer(qin, 2, n * 2)
    pipe.InitBuffer(qout, 2, n * 2)
    t = qin.AllocTensor(ac.half)
    reveal_type(t)  # reveals: LocalTensor
    ac.DataCopy(t, xg, n)
    qin.EnQue(t)
    src, dst = qin.DeQue(ac.half), qout.AllocTensor(ac.half)
    reveal_type(ac.LeakyRelu(dst, src, 0.01, n))  # reveals: None
    ac.LeakyRelu(dst, src, np.float16(0.01), 128, 1, (1, 1, 8, 8))
    ac.LeakyRelu(dst, src, 0.01, [2**64 - 1, 2**64 - 1], 1, ac.UnaryRepeatParams())
    ac.Maxs(dst, src, 0.0, n)
    ac.Mins(dst, src, 0.0, 128, 1, ac.UnaryRepeatParams(), isSetMask=True)
    ac.Muls(dst, src, 2, n)
    ac.Adds(dst, src, 1.5, n)
    ac.Add(dst, src, dst, n)
    ac.Sub(dst, src, dst, 128, 1, ac.BinaryRepeatParams())
    ac.Mul(dst, src, dst, n)
    ac.Duplicate(dst, 0.0, n)
    ac.Duplicate(dst, 0.0, 128, 1, 1, 8)
    ac.SetFlag[ac.HardEvent.V_MTE3](ac.EVENT_ID0)
    ac.WaitFlag(ac.HardEvent.V_MTE3, ac.EVENT_ID0)
    ac.PipeBarrier[ac.PIPE_V]()
    ac.PipeBarrier(ac.PIPE_V)
    ac.SetVectorMask(0, 2**64 - 1)
    ac.SetMaskCount()
    ac.SetMaskNorm()
    ac.ResetMask()
    reveal_type(ac.GetMaskMode())  # reveals: MaskMode
    qout.EnQue(dst)
    qin.FreeTensor(src)
    o = qout.DeQue(ac.half)
    reveal_type(o.numpy())  # reveals: numpy.generic[float]
    reveal_type(o.GetValue(0))  # reveals: numpy.generic[float]
    ac.DataCopy(yg, o, n)
    qout.FreeTensor(o)


xh = np.linspace(-4.0, 4.0, 4 * 128, dtype=np.float16)
yh = np.empty_like(xh)
reveal_type(ac.launch(kernel, 4, xh, yh, 128))  # reveals: None
with ac.AICore() as core:
    f = ac.LocalTensor[ac.float32](ac.TPosition.VECIN, 1024, 64)
    reveal_type(f)  # reveals: LocalTensor
    h = ac.LocalMemAllocator().Alloc(ac.half, 128)
    ac.Cast(h, f, ac.RoundMode.CAST_RINT, 64)
    reveal_type(core.ub)  # reveals: UnifiedBuffer
"""

ONEDNN = """\
import numpy as np

from leakyops import onednn as dg

# the oneDNN Graph API's flow: logical tensors, an op, a graph, a partition, compile, execute
x = np.linspace(-2.0, 2.0, 120, dtype=np.float32).reshape(2, 3, 4, 5)
w = np.array([0.25, 0.5, 2.0], np.float32)
src = dg.LogicalTensor(0, dg.DataType.f32, (2, 3, 4, 5))
slope = dg.LogicalTensor(1, dg.DataType.f32, [3])
dst = dg.LogicalTensor(2, dg.DataType.f32, ndims=-1)
reveal_type(src)  # reveals: LogicalTensor
reveal_type(src.get_dims())  # reveals: list[int]
reveal_type(src.get_strides())  # reveals: list[int]
reveal_type(src.get_mem_size())  # reveals: int
reveal_type(src.get_data_type())  # reveals: DataType
reveal_type(src.shape)  # reveals: tuple[int, ...] | None
op = dg.Op(0, dg.OpKind.PReLU, "prelu", [src, slope], [dst])
op.set_attr(dg.OpAttr.data_format, "NCX")
op.set_attr("per_channel_broadcast", True)
reveal_type(op.get_attr(dg.OpAttr.data_format))  # reveals: float | bool | str
g = dg.Graph(dg.EngineKind.cpu)
reveal_type(g.add_op(op))  # reveals: Status | None
g.finalize()
parts = g.get_partitions()
reveal_type(parts)  # reveals: list[leakyops.onednn._graph.Partition]
reveal_type(parts[0].get_input_ports())  # reveals: list[leakyops.onednn._graph.LogicalTensor]
reveal_type(parts[0].is_supported())  # reveals: bool
eng = dg.Engine(dg.EngineKind.cpu, 0, isa="AVX512_CORE_BF16")
reveal_type(eng.flushes_bf16)  # reveals: bool
cp = parts[0].compile([src, slope], [dst], eng)
reveal_type(cp)  # reveals: CompiledPartition
out_lt = cp.query_logical_tensor(2)
reveal_type(out_lt)  # reveals: LogicalTensor
reveal_type(cp.get_inplace_ports())  # reveals: list[tuple[int, int]]
out = dg.Tensor(out_lt, eng)
strm = dg.Stream(eng)
reveal_type(cp.execute(strm, [dg.Tensor(src, eng, x), dg.Tensor(slope, eng, w)], [out]))  # reveals: None
strm.wait()
reveal_type(out.to_numpy())  # reveals: numpy.ndarray[tuple[int, ...], numpy.dtype[numpy.generic[float]]]
reveal_type(out.get_data_handle())  # any: the buffer is whatever array the caller gave
reveal_type(dg.data_type_of(np.float16))  # reveals: DataType
try:
    dg.Engine(dg.EngineKind.gpu, 0)
except dg.Error as e:
    reveal_type(e.status)  # reveals: Status
"""

FRAMEWORKS = """\
import numpy as np
import torch

import leakyops.dask as lod
import leakyops.torch as lt

x = torch.linspace(-2.0, 2.0, 6).reshape(2, 3)
w = torch.full((3,), 0.25)
reveal_type(lt.leaky_relu(x, 0.1))  # reveals: Tensor
reveal_type(lt.leaky_relu(x.clone(), 0.1, inplace=True))  # reveals: Tensor
reveal_type(lt.leaky_relu_(x.clone(), 0.1))  # reveals: Tensor
reveal_type(lt.leaky_relu_backward(x, x, 0.1, False))  # reveals: Tensor
reveal_type(lt.prelu(x, w))  # reveals: Tensor
reveal_type(lt.prelu_backward(x, x, w))  # reveals: tuple[torch._tensor.Tensor, torch._tensor.Tensor]
reveal_type(lt.PReLU(3)(x))  # reveals: Tensor
reveal_type(lt.LeakyReLU(0.1)(x))  # reveals: Tensor

xn = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)
wn = np.full(3, 0.25, np.float32)
xd = lod.leaky_relu(xn, 1.0)  # an array-like in, a dask array out
reveal_type(xd)  # reveals: dask.array.core.Array
reveal_type(lod.leaky_relu_(xd, 0.5))  # reveals: dask.array.core.Array
reveal_type(lod.leaky_relu_backward(xd, xd, 0.1))  # reveals: dask.array.core.Array
reveal_type(lod.prelu(xd, wn, axis=1))  # reveals: dask.array.core.Array
gi, gw = lod.prelu_backward(xd, xd, wn)
reveal_type(gw)  # reveals: dask.array.core.Array
"""

MISUSES = """\
import numpy as np

import leakyops
import leakyops.dask as lod
import leakyops.torch as lt
from leakyops import aclnn
from leakyops import ascendc as ac
from leakyops import onednn as dg

x = np.ones(3, np.float32)
leakyops.leaky_relu(x, "0.1")  # E: a string slope
leakyops.leaky_relu(x, 1j)  # E: a complex slope
leakyops.leaky_relu(x, out=[0.0, 0.0, 0.0])  # E: out must be an array
leakyops.leaky_relu_backward(x, x)  # E: the slope is required
leakyops.prelu(x, x, axis="1")  # E: axis is an int
leakyops.prelu_backward(x, x, x, out=x)  # E: out is a pair
leakyops.set_num_threads("2")  # E: an int
stream, ret = aclnn.aclrtCreateStream()
aclnn.aclnnLeakyRelu(None, 0, None, "stream")  # E: a stream
aclnn.aclnnLeakyReluGetWorkspaceSize(x, None, None)  # E: an aclTensor, not an array
ac.LeakyRelu(x, x, 0.1, 4)  # E: LocalTensors, not arrays
ac.launch(kernel=1, block_dim=1)  # E: a kernel is callable
lt.leaky_relu(x)  # E: a tensor, not an array
lod.leaky_relu(x, "0.1")  # E: a string slope
dg.LogicalTensor(0, dg.DataType.f32, (2, 3), strides="1")  # E: strides are ints
dg.Engine(dg.EngineKind.cpu, 0, "AVX2")  # E: isa is keyword-only
"""


def _script(body: str) -> str:
    return PRELUDE + "\n" + textwrap.dedent(body)


def _mypy(tmp_path, cache_dir, name: str, source: str) -> tuple[int, str, str]:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    res = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-color-output", "--show-error-codes",
         "--cache-dir", str(cache_dir), str(path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=600, check=False)
    return res.returncode, res.stdout, res.stderr


def _reveals(source: str) -> dict[int, str]:
    """Line number -> the comment of every ``reveal_type`` line of the script."""
    return {i: line.partition("#")[2].strip()
            for i, line in enumerate(source.splitlines(), 1)
            if line.lstrip().startswith("reveal_type(")}


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("mypy-cache")


SCRIPTS = {
    "core": CORE,
    "vendors": VENDORS,
    "onednn": ONEDNN,
    "frameworks": pytest.param(FRAMEWORKS, marks=pytest.mark.slow),  # torch's stubs: ~15 s cold
}


@pytest.mark.parametrize("source", list(SCRIPTS.values()), ids=list(SCRIPTS))
def test_a_users_script_type_checks_strictly_without_any(source, tmp_path, mypy_cache, request):
    name = request.node.callspec.id
    if name == "frameworks":
        pytest.importorskip("torch")
        pytest.importorskip("dask.array")
    source = _script(source)
    status, out, err = _mypy(tmp_path, mypy_cache, name, source)
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 0 and not errors, out + err
    revealed = {int(m.group(1)): m.group(2)
                for m in re.finditer(r'^[^:\n]+:(\d+): note: Revealed type is "(.*)"$', out, re.M)}
    expected = _reveals(source)
    assert set(revealed) == set(expected), (sorted(expected), out)
    for line, comment in expected.items():
        rtype = revealed[line]
        if comment.startswith("any:"):
            assert "Any" in rtype, (line, rtype)  # else the marker is stale: drop it
            continue
        assert "Any" not in rtype, (line, source.splitlines()[line - 1], rtype)
        assert comment.startswith("reveals: "), (line, "give every reveal_type a '# reveals:'")
        assert comment[len("reveals: "):] in rtype, (line, comment, rtype)

    # what mypy checked is also what runs
    res = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                         cwd=tmp_path, timeout=600, check=False)
    assert res.returncode == 0, res.stderr


@pytest.mark.slow  # imports torch's stubs
def test_misuses_are_type_errors(tmp_path, mypy_cache):
    pytest.importorskip("torch")
    pytest.importorskip("dask.array")
    source = _script(MISUSES)
    status, out, err = _mypy(tmp_path, mypy_cache, "misuses", source)
    flagged = {int(m.group(1)) for m in re.finditer(r"^[^:\n]+:(\d+): error:", out, re.M)}
    marked = {i for i, line in enumerate(source.splitlines(), 1) if "# E:" in line}
    assert status == 1 and flagged == marked, (sorted(marked), out + err)


def test_aclnn_enum_constants_are_module_attributes():
    """The C-style constants (``aclnn.ACL_FLOAT``, …) are written out one per line so that type
    checkers see them: every member of the four enums, and nothing else by those names."""
    from leakyops import aclnn

    for enum_cls in (aclnn.aclDataType, aclnn.aclFormat, aclnn.aclrtMemcpyKind,
                     aclnn.aclrtMemMallocPolicy):
        for member in enum_cls:
            assert getattr(aclnn, member.name) is member
            assert member.name in aclnn.__all__
    assert all(hasattr(aclnn, name) for name in aclnn.__all__)
