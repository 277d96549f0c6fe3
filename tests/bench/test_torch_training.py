"""benchmarks/torch_training.py: training steps of two CNNs with torch.nn's and leakyops' activations."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

torch = pytest.importorskip("torch")

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "torch_training.py"


def _load():
    spec = importlib.util.spec_from_file_location("torch_training_bench", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_training_benchmark_runs_both_models_and_compares_the_losses(tmp_path, capsys):
    import leakyops

    bench = _load()
    threads = torch.get_num_threads(), leakyops.get_num_threads()
    js = tmp_path / "t.json"
    try:
        status = bench.main(["--steps", "3", "--batch", "2", "--width", "4", "--threads", "1",
                             "--json", str(js)])
    finally:  # the script sets both thread counts for the whole process
        torch.set_num_threads(threads[0])
        leakyops.set_num_threads(threads[1])
    assert status == 0  # the discriminator's losses equal torch.nn's, bit for bit
    out = capsys.readouterr().out
    rows = json.loads(js.read_text())["rows"]
    assert [(r["model"], r["dtype"]) for r in rows] == [
        (m, d) for m in bench.MODELS for d in bench.DTYPES]
    for r in rows:
        assert r["model"] in out
        # every activation was swapped: 4 LeakyReLU in the discriminator, 5 PReLU in the CNN
        assert r["modules_swapped"] == (4 if r["model"] == "gan-discriminator" else 5)
        assert len(r["losses"]["torch"]) == len(r["losses"]["leakyops"]) == 3
        assert all(v > 0 for v in (r["torch"]["median"], r["leakyops"]["median"]))
        # the same losses: LeakyReLU bit-identical; PReLU's weight gradient summed in another
        # order (a few float32 ulps)
        for a, b in zip(r["losses"]["torch"], r["losses"]["leakyops"]):
            assert a == b if r["model"] == "gan-discriminator" else abs(a - b) <= 1e-3 * abs(a)


def test_training_benchmark_refuses_too_small_a_batch():
    with pytest.raises(SystemExit):
        _load().main(["--batch", "1"])
