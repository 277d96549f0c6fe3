"""``golden --semantics aclnn --soc``: the aclnn SoC profile a golden case follows.

On ``Ascend950`` prelu_backward's grad_weight is the chip's PReluGradUpdate + PReluGradReduce
pipeline's (checked against ``leakyops.aclnn``'s aclnnPreluBackward on that profile); its
grad_input, and every output on the other profiles, are the core's (the ``--soc``-less case's).
"""

import numpy as np
import pytest

from golden_io import golden, load
from leakyops import aclnn, _cli_ops
from refs import bits


def aclnn_prelu_backward(g, x, w, soc):
    """aclnnPreluBackward through the public API on ``soc``."""
    previous = aclnn.get_soc_version()
    aclnn.set_soc_version(soc)
    try:
        gi, gw = np.empty_like(x), np.empty_like(w)
        stream, _ = aclnn.aclrtCreateStream()
        ws, executor, ret = aclnn.aclnnPreluBackwardGetWorkspaceSize(
            *(aclnn.from_numpy(a) for a in (g, x, w, gi, gw)))
        assert ret == 0, aclnn.aclGetRecentErrMsg()
        buf = None
        if ws:
            buf, ret = aclnn.aclrtMalloc(ws)
            assert ret == 0
        assert aclnn.aclnnPreluBackward(buf, ws, executor, stream) == 0
        assert aclnn.aclrtSynchronizeStream(stream) == 0
        if buf is not None:
            aclnn.aclrtFree(buf)
        aclnn.aclrtDestroyStream(stream)
    finally:
        aclnn.set_soc_version(previous)
    return gi, gw


def test_socs_are_aclnn_profiles():
    assert _cli_ops.SOCS == tuple(aclnn.SOC_VERSIONS)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_ascend950_grad_weight_is_the_pipelines(tmp_path, cli_inproc, dtype):
    common = ("prelu_backward", "--shape", "2,16,300", "--dtype", dtype, "--seed", "5",
              "--semantics", "aclnn")
    case, m = golden(cli_inproc, tmp_path, "a950", *common, "--soc", "Ascend950")
    assert m["aclnn"]["soc"] == "Ascend950" and "PReluGradReduce" in m["aclnn"]["grad_weight"]
    core, m0 = golden(cli_inproc, tmp_path, "core", *common)
    assert "aclnn" not in m0
    g, x, w = (load(case, n) for n in ("grad_output", "x", "weight"))
    for n in ("grad_output", "x", "weight"):  # the same inputs with and without --soc
        assert bits(load(core, n)).tobytes() == bits(load(case, n)).tobytes()
    gi, gw = aclnn_prelu_backward(g, x, w, "Ascend950")
    assert bits(load(case, "grad_weight")).tobytes() == bits(gw).tobytes()
    assert bits(load(case, "grad_input")).tobytes() == bits(gi).tobytes()
    # grad_input is the core's; grad_weight differs from the core's in some channel (300 x 2
    # terms per channel rounded one by one before the sum)
    assert bits(load(case, "grad_input")).tobytes() == bits(load(core, "grad_input")).tobytes()
    assert (bits(load(case, "grad_weight")) != bits(load(core, "grad_weight"))).any()


@pytest.mark.parametrize("soc", ["Ascend910", "Ascend910B", "Ascend910_93"])
def test_other_socs_keep_the_cores_results(tmp_path, cli_inproc, soc):
    common = ("prelu_backward", "--shape", "2,8,40", "--dtype", "float16", "--seed", "3",
              "--semantics", "aclnn")
    case, m = golden(cli_inproc, tmp_path, soc, *common, "--soc", soc)
    assert m["aclnn"] == {"soc": soc}
    core, _ = golden(cli_inproc, tmp_path, "core", *common)
    for n in ("grad_input", "grad_weight"):
        assert bits(load(case, n)).tobytes() == bits(load(core, n)).tobytes()


def test_ascend950_other_operators_unchanged(tmp_path, cli_inproc):
    common = ("prelu", "--shape", "2,8,40", "--dtype", "bfloat16", "--semantics", "aclnn")
    case, m = golden(cli_inproc, tmp_path, "a950", *common, "--soc", "Ascend950")
    assert m["aclnn"] == {"soc": "Ascend950"}
    core, _ = golden(cli_inproc, tmp_path, "core", *common)
    assert bits(load(case, "y")).tobytes() == bits(load(core, "y")).tobytes()


def test_ascend950_shared_slope_and_vector(tmp_path, cli_inproc):
    for name, args in (("shared", ("--shape", "2,4,8", "--weight-shape", "1")),
                       ("vector", ("--shape", "16",))):
        case, _ = golden(cli_inproc, tmp_path, name, "prelu_backward", *args, "--dtype", "float16",
                         "--semantics", "aclnn", "--soc", "Ascend950")
        g, x, w = (load(case, n) for n in ("grad_output", "x", "weight"))
        _, gw = aclnn_prelu_backward(g, x, w, "Ascend950")
        assert bits(load(case, "grad_weight")).tobytes() == bits(gw).tobytes()


@pytest.mark.parametrize("args,fragments", [
    (("leaky_relu", "--shape", "4", "--soc", "Ascend950"), ("--soc", "--semantics aclnn", "pytorch")),
    (("prelu_backward", "--shape", "2,3", "--semantics", "ascendc", "--soc", "Ascend950"),
     ("--soc", "--semantics aclnn", "ascendc")),
    (("prelu", "--shape", "2,3", "--dtype", "bfloat16", "--semantics", "aclnn", "--soc", "Ascend910"),
     ("--soc Ascend910", "bfloat16")),
])
def test_soc_misuse_is_one_line_before_any_file(tmp_path, cli_inproc, check_error, args, fragments):
    out = tmp_path / "case"
    res = cli_inproc("golden", *args, "-o", out)
    check_error(res, 2, *fragments)
    assert not out.exists()


def test_unknown_soc_is_refused(tmp_path, cli_inproc):
    res = cli_inproc("golden", "prelu", "--shape", "2,3", "--semantics", "aclnn", "--soc", "Ascend310",
                     "-o", tmp_path / "c")
    assert res.returncode == 2 and "--soc" in res.stderr and "Ascend950" in res.stderr
    assert not (tmp_path / "c").exists()
