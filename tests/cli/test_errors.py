"""Bad input and bad options: one line on stderr, a non-zero status, never a traceback."""

import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def case(tmp_path_factory, cli_inproc):
    d = tmp_path_factory.mktemp("err") / "case"
    assert cli_inproc("golden", "prelu_backward", "--shape", "2,3,4", "-o", d).returncode == 0
    return d


# --- in a subprocess: the real process contract (exit status, stderr, no traceback)


def test_verify_missing_directory(tmp_path, cli, check_error):
    res = cli("verify", tmp_path / "nope", tmp_path / "a.bin")
    check_error(res, 2, "leakyops verify: error:", "does not exist")


def test_verify_wrong_size_bin(case, tmp_path, cli, check_error):
    bad = tmp_path / "gi.bin"
    bad.write_bytes(b"\0" * 10)
    res = cli("verify", case, f"grad_input={bad}", f"grad_weight={case / 'grad_weight.bin'}")
    line = check_error(res, 2, "10 bytes, expected 96", "24 float32 elements of shape [2, 3, 4]")
    assert str(bad) in line
    assert res.stdout == ""  # nothing reported before the input is known to be usable


def test_golden_bad_options(tmp_path, cli, check_error):
    check_error(cli("golden", "relu", "--shape", "2", "-o", tmp_path), 2, "invalid choice")
    check_error(cli("golden", "leaky_relu", "--shape", "2,x", "-o", tmp_path), 2, "bad shape")


def test_golden_core_error_is_one_line(tmp_path, cli, check_error):
    res = cli("golden", "prelu", "--shape", "2,3,4", "--weight-shape", "5", "-o", tmp_path / "p")
    check_error(res, 2, "leakyops golden: error:", "prelu")


def test_run_corrupt_npy(tmp_path, cli, check_error):
    bad = tmp_path / "x.npy"
    bad.write_text("not an array")
    check_error(cli("run", "leaky_relu", bad, "-o", tmp_path / "y.npy"), 2, "not a readable .npy file")


def test_no_subcommand_prints_help_and_fails(cli):
    res = cli()
    assert res.returncode == 2 and "usage: leakyops" in res.stderr and "Traceback" not in res.stderr


# --- in process: the same code path, many cases


@pytest.mark.parametrize("args,fragment", [
    (["verify", "{tmp}", "a.bin"], "not a golden directory: case.json is missing"),
    (["verify", "{case}"], "the following arguments are required"),
    (["verify", "{case}", "{case}/grad_input.bin"], "2 output(s) to check (grad_input, grad_weight), got 1 file(s)"),
    (["verify", "{case}", "{case}/grad_input.bin", "{tmp}/missing.bin"], "no such file"),
    (["verify", "{case}", "{case}/grad_input.bin", "{case}/grad_weight.bin", "--standard", "close"],
     "invalid choice: 'close'"),
    (["verify", "{case}", "{case}/grad_input.bin", "{case}/grad_weight.bin", "--err-thr", "0.1,0.1"],
     "--err-thr applies to --standard ratio only"),
    (["verify", "{case}", "{case}/grad_input.bin", "{case}/grad_weight.bin", "--standard", "ratio",
      "--err-thr", "0.1"], "bad thresholds"),
    (["verify", "{case}", "{case}/grad_input.bin", "{case}/grad_weight.bin", "--standard", "ratio",
      "--err-thr", "2,0.1"], "bad thresholds"),
    (["verify", "{case}", "{f64}", "{case}/grad_weight.bin"], "dtype float64, expected float32"),
    (["verify", "{case}", "{short}", "{case}/grad_weight.bin"], "23 elements of shape [23], expected 24"),
    (["verify", "{case}", "{case}", "{case}/grad_weight.bin"], "is a directory"),
    (["golden", "leaky_relu", "--shape", "-1", "-o", "{tmp}/o"], "bad shape"),
    (["golden", "leaky_relu", "-o", "{tmp}/o"], "the following arguments are required: --shape"),
    (["golden", "leaky_relu", "--shape", "4", "--dtype", "int8", "-o", "{tmp}/o"], "unsupported dtype 'int8'"),
    (["golden", "leaky_relu", "--shape", "4", "--slope", "abc", "-o", "{tmp}/o"], "not a number: 'abc'"),
    (["golden", "prelu", "--shape", "4,2", "--slope", "0.1", "-o", "{tmp}/o"], "--slope does not apply to prelu"),
    (["golden", "leaky_relu", "--shape", "4", "--axis", "0", "-o", "{tmp}/o"], "apply to prelu and prelu_backward"),
    (["golden", "prelu", "--shape", "4", "--self-is-result", "-o", "{tmp}/o"], "applies to leaky_relu_backward"),
    (["golden", "leaky_relu_backward", "--shape", "4", "--self-is-result", "--slope", "-0.5", "-o", "{tmp}/o"],
     "leaky_relu_backward"),
    (["golden", "leaky_relu_backward", "--shape", "4,3", "--grad-shape", "5", "-o", "{tmp}/o"],
     "leaky_relu_backward"),
    (["golden", "prelu", "--shape", "2,3", "--axis", "5", "-o", "{tmp}/o"], "out of range"),
    (["golden", "leaky_relu", "--shape", "4", "-o", "{file}"], "is not a directory"),
    (["golden", "leaky_relu", "--shape", "4", "-o", "{file}/sub"], "cannot create output directory"),
    (["run", "prelu", "{x}", "-o", "{tmp}/y.npy"], "prelu takes 2 input file(s) (x, weight), got 1"),
    (["run", "leaky_relu", "{tmp}/x.bin", "-o", "{tmp}/y.npy"], "raw data has no dtype or shape of its own"),
    (["run", "leaky_relu", "{tmp}/none.npy", "-o", "{tmp}/y.npy"], "no such file"),
    (["run", "leaky_relu", "{ints}", "-o", "{tmp}/y.npy"], "int64"),
    (["run", "prelu_backward", "{x}", "{x}", "{w5}", "-o", "{tmp}/a.npy", "{tmp}/b.npy", "{tmp}/c.npy"],
     "prelu_backward"),
    (["run", "leaky_relu", "{x}", "-o", "{tmp}/a.npy", "{tmp}/b.npy"], "1 output(s) (y), got 2 -o path(s)"),
    (["run", "leaky_relu", "{x}", "-o", "{tmp}/nodir/y.npy"], "cannot write"),
    (["bench", "--ops", "relu"], "unknown name(s) relu"),
    (["bench", "--dtypes", "int8"], "unsupported dtype"),
    (["bench", "--sizes", "0"], "bad sizes"),
    (["bench", "--threads", "0", "--sizes", "10"], "argument --threads: bad thread count '0': give 1 to"),
    (["demo", "--dtypes", "complex64"], "unsupported dtype"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_input_in_process(args, fragment, case, tmp_path, cli_inproc, check_error):
    x = tmp_path / "x.npy"
    np.save(x, np.ones((2, 3), np.float32))
    np.save(tmp_path / "w5.npy", np.ones(5, np.float32))
    np.save(tmp_path / "ints.npy", np.arange(4))
    np.save(tmp_path / "f64.npy", np.zeros((2, 3, 4), np.float64))
    np.save(tmp_path / "short.npy", np.zeros(23, np.float32))
    (tmp_path / "x.bin").write_bytes(b"\0" * 8)
    (tmp_path / "afile").write_text("")
    subst = {"tmp": tmp_path, "case": case, "x": x, "w5": tmp_path / "w5.npy", "ints": tmp_path / "ints.npy",
             "f64": tmp_path / "f64.npy", "short": tmp_path / "short.npy", "file": tmp_path / "afile"}
    argv = [a.format(**subst) for a in args]
    res = cli_inproc(*argv)
    check_error(res, 2, fragment)


def test_broken_manifest(tmp_path, cli_inproc, check_error):
    d = tmp_path / "c"
    d.mkdir()
    (d / "case.json").write_text("{not json")
    check_error(cli_inproc("verify", d, "a.bin"), 2, "unreadable manifest")
    (d / "case.json").write_text(json.dumps({"outputs": [{"name": "y"}]}))
    check_error(cli_inproc("verify", d, "a.bin"), 2, "not a leakyops golden manifest")


def test_incomplete_golden_directory(case, tmp_path, cli_inproc, check_error):
    import shutil

    d = tmp_path / "copy"
    shutil.copytree(case, d)
    (d / "grad_weight.bin").unlink()
    res = cli_inproc("verify", d, case / "grad_input.bin", case / "grad_weight.bin")
    check_error(res, 2, "golden", "the golden directory is incomplete")
