"""Bad input and bad options: one line on stderr, a non-zero status, never a traceback."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


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


# --- issue 27, items 5-8 and 10: each option checked before any work, one line naming it


#: a bench that takes a moment, should a check be missing
_QUICK = ["--sizes", "1000", "--ops", "leaky_relu", "--dtypes", "float32", "--peers", "leakyops", "--rounds", "1",
          "--min-time", "0.001"]


@pytest.mark.parametrize("args,line", [
    (["bench", "--json", "{tmp}/nodir/x.json"],
     "leakyops bench: error: cannot write --json {tmp}/nodir/x.json: no such directory {tmp}/nodir"),
    (["bench", "--plot", "{tmp}/nodir/x.png"],
     "leakyops bench: error: cannot write --plot {tmp}/nodir/x.png: no such directory {tmp}/nodir"),
    (["bench", "--plot", "{tmp}/out.xyz"], "leakyops bench: error: --plot {tmp}/out.xyz: format 'xyz' is not supported;"
                                           " give a name ending in ."),
    (["bench", "--plot", "{tmp}/out"], "leakyops bench: error: --plot {tmp}/out: no format in the name;"),
    (["bench", "--min-time", "-1"], "leakyops bench: error: argument --min-time: bad time '-1': give a number of"
                                    " seconds > 0"),
    (["bench", "--min-time", "0"], "argument --min-time: bad time '0'"),
    (["bench", "--min-time", "nan"], "argument --min-time: bad time 'nan'"),
    (["bench", "--sizes", "1.5"], "argument --sizes: bad sizes '1.5': give whole numbers >= 1"),
    (["bench", "--sizes", "1e3,0"], "argument --sizes: bad sizes '1e3,0'"),
    (["bench", "--sizes", "1e12"], "leakyops bench: error: --sizes: the largest case needs 21.8 TiB of arrays, more"
                                   " than the "),
    (["bench", *_QUICK, "--json", "{tmp}/r.png", "--plot", "{tmp}/./r.png"],
     "leakyops bench: error: --json and --plot must be different files (both name {tmp}/r.png)"),
    (["bench", "--threads", "1000"], "argument --threads: bad thread count '1000': give 1 to"),
    (["bench", "--rounds", "0"], "argument --rounds: bad value '0': give an integer >= 1"),
    (["demo", "--speed-size", "0"], "leakyops demo: error: argument --speed-size: bad count '0': give a whole"
                                    " number >= 1"),
    (["demo", "--speed-size", "-1"], "argument --speed-size: bad count '-1'"),
    (["demo", "--speed-size", "1e6.5"], "argument --speed-size: bad count '1e6.5'"),
    (["demo", "--speed-size", "1e13"], "leakyops demo: error: --speed-size: the largest case needs"),
    (["golden", "prelu", "--shape", "2,3", "--dtype", "float64", "--semantics", "aclnn", "-o", "{tmp}/o"],
     "leakyops golden: error: --semantics aclnn: aclnnPrelu/aclnnPreluBackward take float16, bfloat16 and"
     " float32 only (float64 is refused with 161002"),
    (["golden", "prelu_backward", "--shape", "2,3", "--dtype", "f64", "--semantics", "aclnn", "-o", "{tmp}/o"],
     "take float16, bfloat16 and float32 only"),
    (["golden", "leaky_relu", "--shape", "4", "--sede", "3", "-o", "{tmp}/o"],
     "leakyops golden: error: unrecognized option --sede; did you mean --seed? (see 'leakyops golden --help')"),
    (["verify", "{tmp}", "--jsn"],
     "leakyops verify: error: unrecognized option --jsn; did you mean --json? (see 'leakyops verify --help')"),
    (["bench", "--min-tme", "1"], "leakyops bench: error: unrecognized option --min-tme; did you mean --min-time?"),
    (["run", "leaky_relu", "x.npy", "-o", "y.npy", "--frobnicate"], "leakyops run: error: unrecognized option"
                                                                     " --frobnicate (see 'leakyops run --help')"),
    (["golden", "leaky_relu", "--shape", "4", "-o", "{tmp}/o", "stray"],
     "leakyops golden: error: unexpected argument 'stray'"),
    (["goldn", "leaky_relu"], "invalid choice: 'goldn' (choose from "),
    (["golden", "leaky_reluu", "--shape", "4", "-o", "{tmp}/o"], "; did you mean leaky_relu? (see 'leakyops golden"),
    (["verify", "{tmp}", "y.bin", "--standard", "exakt"], "; did you mean exact?"),
])
def test_options_are_checked_before_any_work(args, line, tmp_path, cli_inproc, check_error):
    res = cli_inproc(*[a.format(tmp=tmp_path) for a in args])
    got = check_error(res, 2)
    assert line.format(tmp=tmp_path) in got, got
    assert res.stdout == ""  # no table, no check ran, nothing reported
    assert list(tmp_path.iterdir()) == []  # nothing written, no directory made


def test_goldn_suggests_the_subcommand(cli_inproc, check_error):
    got = check_error(cli_inproc("goldn"), 2)
    assert got.endswith("; did you mean golden? (see 'leakyops --help')"), got


def test_the_same_counts_are_accepted_by_bench_and_demo():
    from leakyops import cli

    parser = cli.build_parser()
    assert parser.parse_args(["demo", "--speed-size", "1e6"]).speed_size == 1_000_000
    assert parser.parse_args(["bench", "--sizes", "1e6,4194304,2.5e3"]).sizes == (1_000_000, 4_194_304, 2_500)
    assert parser.parse_args(["bench", "--threads", "1", "--min-time", "1e-3"]).min_time == 0.001


# --- memory: the largest case must fit in the memory available now and under ulimit -v


@pytest.mark.parametrize("args,needs", [
    (["bench", *_QUICK[2:], "--sizes", "1e8"], "--sizes: the largest case needs 762.9 MiB of arrays"),
    (["demo", "--speed-size", "4e7"], "--speed-size: the largest case needs 915.5 MiB of arrays"),
])
def test_the_memory_available_now_is_the_limit(args, needs, monkeypatch, cli_inproc, check_error):
    """Not the machine's memory: what is available now (Linux's MemAvailable)."""
    from leakyops import _bench, _demo, _memory

    real = _memory.proc_field
    monkeypatch.setattr(_memory, "proc_field",
                        lambda path, name: 512 << 20 if name == "MemAvailable" else real(path, name))
    monkeypatch.setattr(_bench, "run", lambda *a, **kw: pytest.fail("the benchmark ran"))
    monkeypatch.setattr(_demo, "run", lambda *a, **kw: pytest.fail("the demo ran"))
    got = check_error(cli_inproc(*args), 2)
    assert f"{needs}, more than the 512.0 MiB of memory available now (of " in got, got


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc/self/status")
def test_the_address_space_limit_is_a_limit(cli, check_error):
    """Under ``ulimit -v`` (RLIMIT_AS) a case that would not fit in a process is refused up front
    (it ran, and its worker died of a MemoryError)."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))

    res = cli("bench", *_QUICK, "--sizes", "1e8", preexec_fn=limit)
    got = check_error(res, 2, "leakyops bench: error: --sizes: the largest case needs 762.9 MiB of arrays, more than"
                              " the ")
    assert got.endswith("MiB that the address-space limit (ulimit -v 1048576) leaves to a process"), got
    assert res.stdout == ""


# --- the environment and optional dependencies


@pytest.mark.parametrize("variable,value,line", [
    ("LEAKYOPS_NUM_THREADS", "abc", "LEAKYOPS_NUM_THREADS='abc' is not a positive integer; using {cpus}"),
    ("LEAKYOPS_NUM_THREADS", "0", "LEAKYOPS_NUM_THREADS='0' is not a positive integer; using {cpus}"),
    ("LEAKYOPS_PARALLEL_MIN_BYTES", "-3", "LEAKYOPS_PARALLEL_MIN_BYTES='-3' is not a positive integer; using 131072"),
])
def test_a_bad_setting_is_one_line_in_the_command(variable, value, line, cli):
    """The command's form, not Python's two-line warning with a path inside leakyops (a program
    that imports leakyops gets a RuntimeWarning: tests/core/test_runtime.py)."""
    res = cli("--version", env={variable: value})
    assert res.returncode == 0 and res.stdout.startswith("leakyops ")
    assert res.stderr == f"leakyops: warning: {line.format(cpus=os.cpu_count())}\n"


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_bad_progress_delay_is_said_once(value, case, cli):
    res = cli("verify", case, case / "grad_input.bin", case / "grad_weight.bin",
              env={"LEAKYOPS_PROGRESS_AFTER": value})
    assert res.returncode == 0 and "overall: PASS" in res.stdout
    assert res.stderr == (f"leakyops: warning: LEAKYOPS_PROGRESS_AFTER={value!r} is not a number of seconds >= 0;"
                          " using 2\n")


def test_plot_without_matplotlib_says_what_to_install(tmp_path, monkeypatch, cli_inproc, check_error):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    res = cli_inproc("bench", *_QUICK, "--plot", tmp_path / "b.png")
    assert check_error(res, 2) == "leakyops bench: error: --plot needs matplotlib: pip install matplotlib"
    assert list(tmp_path.iterdir()) == []


def test_out_of_core_dir_that_is_a_file(tmp_path):
    """examples/dask/out_of_core.py --dir names a plain file: not 'no such directory'."""
    (tmp_path / "f").write_text("")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "dask" / "out_of_core.py"), "--dir",
                           str(tmp_path / "f")], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == (f"out_of_core.py: error: --dir {tmp_path / 'f'}: not a directory (give an"
                                            " existing directory for the zarr arrays)")
