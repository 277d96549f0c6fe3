"""The examples in examples/torch run (tiny sizes), and the docstring examples
of leakyops.torch hold."""

import doctest
import importlib.util
import pathlib

import pytest

torch = pytest.importorskip("torch")

import leakyops.torch as lt

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "torch"


def load(name):
    spec = importlib.util.spec_from_file_location(f"_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docstring_examples():
    result = doctest.testmod(lt, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 8
    assert result.failed == 0


def test_training_example_gives_the_same_losses(capsys):
    example = load("train_convnet")
    ref_losses, our_losses = example.main(["--steps", "4"])
    assert len(our_losses) == 4
    torch.testing.assert_close(our_losses, ref_losses, rtol=1e-5, atol=1e-6)
    out = capsys.readouterr().out
    assert "largest difference" in out and "PReLU(num_parameters=16)" in out


def test_training_example_swaps_every_activation():
    example = load("train_convnet")
    model = example.swap_activations(example.make_model())
    kinds = [type(m) for m in model.modules()]
    assert kinds.count(lt.LeakyReLU) == 2 and kinds.count(lt.PReLU) == 1
    assert torch.nn.LeakyReLU not in kinds and torch.nn.PReLU not in kinds
