"""The out-of-core example runs end to end at a tiny size and checks itself against the core."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("distributed")
pytest.importorskip("zarr")
pytest.importorskip("tqdm")

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "dask", "out_of_core.py")


@pytest.mark.slow
def test_out_of_core_example_small(tmp_path):
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, EXAMPLE, "--size-mib", "24", "--chunk-mib", "2", "--memory-limit-mib",
         "384", "--dir", str(tmp_path), "--json", str(out)],
        check=False, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "equal the core bit for bit" in proc.stdout
    report = json.loads(out.read_text())
    assert report["input_mib"] == pytest.approx(24, rel=0.05)
    assert report["grad_weight_relative_error"] < 2.5e-7
    for name in ("leaky_relu", "prelu_backward"):
        assert report[name]["seconds"] > 0 and report[name]["cluster_gb_s"] > 0
    # the zarr arrays were removed (no --keep)
    assert not [p for p in os.listdir(tmp_path) if p.startswith("leakyops-ooc-")]


def test_out_of_core_example_refuses_a_missing_dir(tmp_path):
    proc = subprocess.run([sys.executable, EXAMPLE, "--dir", str(tmp_path / "missing")],
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith(f"--dir {tmp_path / 'missing'}: no such directory"
                                                         " (give an existing directory for the zarr arrays)")
