"""leakyops run, bench, demo and the help texts."""

import json
import sys

import ml_dtypes
import numpy as np
import pytest

BF16 = np.dtype(ml_dtypes.bfloat16)


def test_run_matches_golden(tmp_path, cli, cli_inproc):
    case = tmp_path / "c"
    assert cli_inproc("golden", "leaky_relu_backward", "--shape", "5,6", "--dtype", "float16", "--slope", "0.3",
                      "-o", case).returncode == 0
    out = tmp_path / "gi.npy"
    res = cli("run", "leaky_relu_backward", case / "grad_output.npy", case / "x.npy", "--slope", "0.3", "-o", out)
    assert res.returncode == 0, res.stderr
    assert f"grad_input: float16 [5, 6] -> {out}" in res.stdout
    np.testing.assert_array_equal(np.load(out), np.load(case / "grad_input.npy"))
    assert cli("verify", case, out).returncode == 0


def test_run_two_outputs_bin_and_bfloat16(tmp_path, cli_inproc):
    case = tmp_path / "c"
    assert cli_inproc("golden", "prelu_backward", "--shape", "2,4,3", "--dtype", "bfloat16", "-o", case).returncode == 0
    ins = [case / f"{n}.npy" for n in ("grad_output", "x", "weight")]
    # the golden's bfloat16 .npy inputs hold uint16 bits: --dtype bfloat16 reads them as such
    base, second = tmp_path / "res.npy", tmp_path / "res_gw.npy"
    res = cli_inproc("run", "prelu_backward", *ins, "-o", base, second)
    assert res.returncode == 2 and "give --dtype bfloat16" in res.stderr
    res = cli_inproc("run", "prelu_backward", *ins, "--dtype", "bfloat16", "-o", base)
    assert res.returncode == 2 and "2 output(s) (grad_input, grad_weight), got 1 -o path(s)" in res.stderr
    assert not base.exists()
    res = cli_inproc("run", "prelu_backward", *ins, "--dtype", "bf16", "-o", base, second)
    assert res.returncode == 0, res.stderr
    assert np.load(base).dtype == np.uint16  # plain NumPy reads the bfloat16 result as its bits
    assert "bfloat16 bits as uint16" in res.stdout
    assert cli_inproc("verify", case, f"grad_input={base}", f"grad_weight={second}").returncode == 0
    a, b = tmp_path / "gi.bin", tmp_path / "gw.bin"
    res = cli_inproc("run", "prelu_backward", *ins, "--dtype", "bfloat16", "-o", a, b, "-q")
    assert res.returncode == 0 and res.stdout == ""
    assert a.read_bytes() == (case / "grad_input.bin").read_bytes()
    assert b.read_bytes() == (case / "grad_weight.bin").read_bytes()


def test_run_in_place_forward_and_prelu_axis(tmp_path, cli_inproc):
    x = np.array([[-2.0, 0.5, -0.0, np.nan]], np.float32)
    np.save(tmp_path / "x.npy", x)
    res = cli_inproc("run", "leaky_relu_", tmp_path / "x.npy", "--slope", "-1", "-o", tmp_path / "y.npy")
    assert res.returncode == 0
    y = np.load(tmp_path / "y.npy")
    np.testing.assert_array_equal(y, np.array([[2.0, 0.5, 0.0, np.nan]], np.float32))
    assert not np.signbit(y[0, 2])  # -0 * -1 = +0
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), x)  # the input file is untouched
    w = np.array([0.5, 2.0, 3.0, 4.0], np.float32)
    np.save(tmp_path / "w.npy", w)
    res = cli_inproc("run", "prelu", tmp_path / "x.npy", tmp_path / "w.npy", "--axis", "-1", "-o", tmp_path / "p.npy")
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), np.array([[-1.0, 0.5, -0.0, np.nan]], np.float32))


def test_help_texts_have_examples(cli_inproc):
    for sub in ("golden", "verify", "run", "bench", "demo"):
        res = cli_inproc(sub, "--help")
        assert res.returncode == 0
        assert "examples:" in res.stdout and f"leakyops {sub}" in res.stdout
    res = cli_inproc("verify", "--help")
    for name in ("exact", "double-thousandth", "ratio", "relative-error", "0.01,0.05", "2^-13"):
        assert name in res.stdout
    res = cli_inproc("--help")
    assert res.returncode == 0 and "demo" in res.stdout and "exit status" in res.stdout
    res = cli_inproc("--version")
    assert res.returncode == 0 and res.stdout.startswith("leakyops ")


def test_console_script_entry_point():
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "leakyops"]
    assert ep.value == "leakyops.cli:main"
    from leakyops.cli import main

    assert ep.load() is main


def _torch_blocker(tmp_path):
    """A fake ``torch`` package that records any import attempt."""
    pkg = tmp_path / "blocker" / "torch"
    pkg.mkdir(parents=True)
    marker = tmp_path / "torch_was_imported"
    (pkg / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nraise ImportError('torch is blocked by the test')\n"
    )
    return tmp_path / "blocker", marker


def test_demo_conforms_without_torch(tmp_path, cli):
    path, marker = _torch_blocker(tmp_path)
    import os

    env = {"PYTHONPATH": os.pathsep.join([str(path)] + [p for p in sys.path if p])}
    res = cli("demo", "--dtypes", "bfloat16", "--no-speed", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert not marker.exists()
    out = res.stdout
    assert "conformance: PASS" in out
    assert "FAIL" not in out
    for text in ("aclnnLeakyRelu: {1,2,3,4}", "aclnnLeakyReluBackward", "gradInput {0.5,1,1,1,1,1,1,1}",
                 "gradWeight {0,0}", "Ascend C LeakyRelu", "prelu_backward", "leaky_relu_", "special inputs"):
        assert text in out, text
    assert res.stderr == ""


@pytest.mark.slow
def test_demo_full_with_speed(cli):
    res = cli("demo", "--speed-size", "1e6")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "conformance: PASS" in res.stdout
    speed = res.stdout[res.stdout.index("speed"):]
    # figures with the threads of each, or on a busy machine (this one is shared) a line saying so
    assert speed.startswith("speed (float32 leaky_relu, 1,000,000 elements")
    assert ("copy: numpy copyto" in speed and "1 thread " in speed and "share of the copy ceiling" in speed) \
        or "not measured, the machine is busy" in speed, speed
    for d in ("float16", "bfloat16", "float32", "float64"):
        assert d in res.stdout
    assert res.stderr == ""


def _measured(leakyops, numpy_copy, leakyops_copy, threads=2):
    peers = {"leakyops": (threads, leakyops), "copy-numpy": (1, numpy_copy), "copy-leakyops": (threads, leakyops_copy)}
    return {"bytes": 8_000_000, "peers": {n: {"threads": t, "seconds": s} for n, (t, s) in peers.items()}}


def test_demo_speed_line_names_the_ceiling_and_the_threads():
    from leakyops._demo import speed_lines

    lines = speed_lines(1_000_000, _measured([1e-3, 1.05e-3, 1e-3], [2e-3, 2e-3, 2.1e-3], [0.8e-3, 0.81e-3, 0.8e-3]),
                        0.2, 2)
    assert lines == [
        "speed (float32 leaky_relu, 1,000,000 elements; GB/s of bytes read + written, best of 3 rounds; the copy"
        " ceiling is the fastest copy of the same bytes, as in 'leakyops bench')",
        "  leakyops.leaky_relu     2 threads     8.00 GB/s   1.000 ms",
        "  copy: numpy copyto       1 thread     4.00 GB/s   2.000 ms",
        "  copy: leakyops' copy    2 threads    10.00 GB/s   0.800 ms   (the copy ceiling)",
        "  share of the copy ceiling     0.80",
    ]
    # the ceiling is the fastest copy, whichever it is; the share never reads as beating a copy
    lines = speed_lines(10, _measured([1e-3] * 3, [0.5e-3] * 3, [0.9e-3] * 3, threads=1), None, 1)
    assert lines[2].endswith("(the copy ceiling)") and "1 thread " in lines[1]
    assert lines[-1] == "  share of the copy ceiling     0.50"


def test_demo_speed_line_says_when_the_machine_is_busy():
    from leakyops._demo import speed_lines

    steady = _measured([1e-3] * 3, [2e-3] * 3, [0.8e-3] * 3)
    (line,) = speed_lines(4_194_304, steady, 1.6, 2)
    assert line == ("speed (float32 leaky_relu, 4,194,304 elements): not measured, the machine is busy (load average"
                    " 1.60 on 2 CPUs); run 'leakyops demo' again when it is idle")
    (line,) = speed_lines(10, _measured([1e-3, 2.5e-3, 1e-3], [2e-3] * 3, [0.8e-3] * 3), 0.1, 2)
    assert "the rounds differ by up to 2.50x" in line and "GB/s" not in line
    assert len(speed_lines(10, steady, 1.4, 2)) == 5  # below the CPU count by more than half a CPU: figures


@pytest.mark.slow
def test_demo_reports_nonconformance(monkeypatch, cli_inproc):
    """A wrong core result is a FAIL line and exit status 1 (the checks can fail)."""
    from leakyops import _core

    real = _core.prelu_impl

    def broken(x, weight, axis=1, out=None, **kw):
        y = real(x, weight, axis, out, **kw)
        y = np.array(y, copy=True)
        y.reshape(-1)[0] += 1
        return y

    monkeypatch.setattr(_core, "prelu_impl", broken)
    res = cli_inproc("demo", "--dtypes", "float64", "--no-speed")
    assert res.returncode == 1
    assert "FAIL  prelu" in res.stdout and "conformance: FAIL" in res.stdout


@pytest.mark.slow
def test_demo_says_once_that_it_compiles_on_an_empty_cache(tmp_path, cli):
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    res = cli("demo", "--dtypes", "float32", "--no-speed", env=env)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ("leakyops demo: compiling the kernels, once (about a minute; numba keeps them on"
                          " disk for later runs)\n")
    res = cli("demo", "--dtypes", "float32", "--no-speed", env=env)
    assert res.returncode == 0 and res.stderr == ""
    res = cli("demo", "--dtypes", "float32", "--no-speed", env={"LEAKYOPS_CACHE": "0"})
    assert res.returncode == 0 and "the disk cache is off, so every run compiles them" in res.stderr
