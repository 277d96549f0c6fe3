"""benchmarks/torch_modules.py: leakyops.torch's modules against torch.nn's in one torch program."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

torch = pytest.importorskip("torch")

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "torch_modules.py"


def test_modules_benchmark_prints_every_case_and_checks_the_forward(tmp_path, capsys):
    import leakyops

    spec = importlib.util.spec_from_file_location("torch_modules_bench", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    threads = torch.get_num_threads(), leakyops.get_num_threads()
    js = tmp_path / "m.json"
    try:
        status = bench.main(["--shape", "2", "3", "4", "4", "--repeat", "1", "--threads", "1",
                             "--dtypes", "float32", "bfloat16", "--channels-last", "--json", str(js)])
    finally:  # the script sets both thread counts for the whole process
        torch.set_num_threads(threads[0])
        leakyops.set_num_threads(threads[1])
    assert status == 0  # every forward equal to torch.nn's, bit for bit
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines()
            if ln.split()[:1] and ln.split()[0] in bench.MODULES]
    # 3 modules x 2 dtypes x 2 passes
    assert len(rows) == 12
    assert {(r[0], r[-5], r[-4]) for r in rows} >= {("LeakyReLU", "float32", "forward"),
                                                   ("PReLU(1)", "bfloat16", "forward_backward")}
    doc = json.loads(js.read_text())
    assert len(doc["rows"]) == 6 and all(r["same_forward"] for r in doc["rows"])
    assert all(r["forward"]["torch"] > 0 and r["forward_backward"]["leakyops"] > 0 for r in doc["rows"])
