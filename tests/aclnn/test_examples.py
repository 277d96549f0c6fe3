"""The ports of the vendor's example programs run and print what docs/aclnn.md says."""

import pathlib
import runpy

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "aclnn"


def _run_example(name, capsys):
    module = runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="example")
    assert module["main"]() == 0
    return capsys.readouterr().out.splitlines()


def test_leaky_relu_example(capsys):
    lines = _run_example("leaky_relu", capsys)
    # aclnnLeakyRelu then aclnnInplaceLeakyRelu: {1, 2, 3, 4} with slope 0.01 -> {1, 2, 3, 4}
    expected = [f"result[{i}] is: {v:f}" for i, v in enumerate([1, 2, 3, 4])]
    assert lines == expected + expected


def test_leaky_relu_backward_example(capsys):
    lines = _run_example("leaky_relu_backward", capsys)
    assert lines == [f"result[{i}] is: {v:f}" for i, v in enumerate([2, 3, 4, 5])]


def test_prelu_backward_example(capsys):
    lines = _run_example("prelu_backward", capsys)
    assert lines == ([f"gradInput[{i}] is: {v:f}" for i, v in enumerate([0.5, 1, 1, 1, 1, 1, 1, 1])]
                     + [f"gradWeight[{i}] is: {v:f}" for i, v in enumerate([0, 0])])


@pytest.mark.parametrize("name", ["leaky_relu", "leaky_relu_backward", "prelu_backward"])
def test_examples_leave_no_error_message(name, capsys):
    from leakyops import aclnn
    _run_example(name, capsys)
    assert aclnn.aclGetRecentErrMsg() is None
