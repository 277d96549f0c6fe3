"""Files in the developer's workflow: exact output names, raw inputs, bfloat16 .npy, device dumps in
another dtype, per-output standards, streaming memory, progress, --values special, --version."""

import json
import math
import os
import pty
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(scope="module")
def bf16_case(tmp_path_factory, cli_inproc):
    case = tmp_path_factory.mktemp("bf") / "c"
    res = cli_inproc("golden", "leaky_relu", "--shape", "6,50", "--dtype", "bfloat16", "--values", "special",
                     "-o", case, "-q")
    assert res.returncode == 0, res.stderr
    return case


# --- run: exactly the named output; raw inputs


def test_run_writes_exactly_the_named_file(tmp_path, cli_inproc):
    x = np.linspace(-2, 2, 12, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "r_y.txt"
    res = cli_inproc("run", "leaky_relu", tmp_path / "x.npy", "-o", out)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r_y.txt", "x.npy"]  # no r_y.txt.npy
    np.testing.assert_array_equal(np.fromfile(out, np.float32), np.where(x > 0, x, x * np.float32(0.01)))
    assert "raw little-endian" in res.stdout
    upper = tmp_path / "Y.NPY"
    assert cli_inproc("run", "leaky_relu", tmp_path / "x.npy", "-o", upper).returncode == 0
    np.testing.assert_array_equal(np.load(upper), np.fromfile(out, np.float32))
    assert not (tmp_path / "Y.NPY.npy").exists()


def test_run_reads_raw_inputs(tmp_path, cli_inproc):
    case = tmp_path / "c"
    assert cli_inproc("golden", "prelu", "--shape", "2,3,8", "--dtype", "float16", "-o", case, "-q").returncode == 0
    y = tmp_path / "y.bin"
    res = cli_inproc("run", "prelu", case / "x.bin", case / "weight.bin", "--dtype", "float16",
                     "--shape", "2,3,8", "--shape", "3", "-o", y)
    assert res.returncode == 0, res.stderr
    assert y.read_bytes() == (case / "y.bin").read_bytes()
    # a raw input next to a .npy one: one --shape for the one raw file
    res = cli_inproc("run", "prelu", case / "x.npy", case / "weight.bin", "--dtype", "fp16", "--shape", "3",
                     "-o", tmp_path / "y2.npy")
    assert res.returncode == 0, res.stderr
    assert np.load(tmp_path / "y2.npy").tobytes() == (case / "y.bin").read_bytes()
    # bfloat16 raw input, and a raw name without .bin
    case = tmp_path / "b"
    assert cli_inproc("golden", "leaky_relu", "--shape", "40", "--dtype", "bf16", "-o", case, "-q").returncode == 0
    raw = tmp_path / "x.dat"
    raw.write_bytes((case / "x.bin").read_bytes())
    res = cli_inproc("run", "leaky_relu", raw, "--dtype", "bfloat16", "--shape", "40", "-o", tmp_path / "y.raw")
    assert res.returncode == 0
    assert (tmp_path / "y.raw").read_bytes() == (case / "y.bin").read_bytes()


# --- bfloat16 .npy


def test_bfloat16_npy_plain_numpy_and_both_forms(bf16_case, tmp_path, cli_inproc):
    m = json.loads((bf16_case / "case.json").read_text())
    for e in m["inputs"] + m["outputs"]:
        arr = np.load(bf16_case / e["npy"])  # plain NumPy, no ml_dtypes needed
        assert arr.dtype == np.uint16 and e["npy_dtype"] == "uint16" and e["dtype"] == "bfloat16"
    y = np.load(bf16_case / "y.npy").view(BF16)
    # leakyops reads the uint16 form and the '|V2' form NumPy writes for ml_dtypes arrays
    v2 = tmp_path / "v2.npy"
    np.save(v2, y)
    assert np.load(v2).dtype.kind == "V"
    for path in (bf16_case / "y.npy", v2):
        res = cli_inproc("verify", bf16_case, path)
        assert res.returncode == 0, res.stdout + res.stderr
    assert "bfloat16 bits as uint16" in cli_inproc("verify", bf16_case, bf16_case / "y.npy").stdout
    assert "'|V2'" in cli_inproc("verify", bf16_case, v2).stdout


def test_actual_dtype_reads_a_bfloat16_output_dumped_as_float32(bf16_case, tmp_path, cli_inproc, check_error):
    y = np.load(bf16_case / "y.npy").view(BF16)
    dump_npy, dump_bin = tmp_path / "dump.npy", tmp_path / "dump.bin"
    np.save(dump_npy, y.astype(np.float32))  # what torch_npu / msprobe write for a bfloat16 tensor
    y.astype(np.float32).tofile(dump_bin)
    check_error(cli_inproc("verify", bf16_case, dump_npy), 2, "dtype float32, expected bfloat16",
                "give --actual-dtype float32")
    check_error(cli_inproc("verify", bf16_case, dump_bin), 2, "1200 bytes, expected 600")
    for path in (dump_npy, dump_bin):
        res = cli_inproc("verify", bf16_case, path, "--actual-dtype", "float32")
        assert res.returncode == 0, res.stdout + res.stderr
        assert "actual dtype         float32 (compared as numbers with the bfloat16 golden)" in res.stdout
        assert "compared as float32 numbers" in res.stdout
    # a float32 value that is no bfloat16 is a difference, judged with bfloat16's thresholds
    bad = y.astype(np.float32)
    i = int(np.flatnonzero(np.isfinite(bad) & (np.abs(bad) > 1))[0])
    bad.reshape(-1)[i] += bad.reshape(-1)[i] * 2.0**-12
    np.save(dump_npy, bad)
    assert cli_inproc("verify", bf16_case, dump_npy, "--actual-dtype", "float32").returncode == 1
    res = cli_inproc("verify", bf16_case, dump_npy, "--actual-dtype", "float32", "--standard", "relative-error")
    assert res.returncode == 0 and "MERE < 0.0078125" in res.stdout
    check_error(cli_inproc("verify", bf16_case, dump_npy, "--actual-dtype", "float16"), 2,
                "dtype float32, expected float16")
    check_error(cli_inproc("verify", bf16_case, dump_npy, "--actual-dtype", "int8"), 2, "unsupported dtype 'int8'")


# --- verify: per-output standards, options, file checks


def test_default_standard_per_output_and_override(tmp_path, cli_inproc):
    case = tmp_path / "pb"
    assert cli_inproc("golden", "prelu_backward", "--shape", "4,64,32", "-o", case, "-q").returncode == 0
    gw = np.fromfile(case / "grad_weight.bin", np.float32)
    device = tmp_path / "grad_weight.bin"
    # a device's channel sums in another order: a few last-bit differences
    other = gw.copy()
    other[::3] = np.nextafter(other[::3], np.float32(np.inf))
    other.tofile(device)
    res = cli_inproc("verify", case, case / "grad_input.bin", device)
    assert res.returncode == 0, res.stdout
    assert "standard             exact (default for an element-wise output)" in res.stdout
    assert "standard             relative-error (default for a reduction" in res.stdout
    assert "overall: PASS (2 output(s) pass: grad_input (exact), grad_weight (relative-error))" in res.stdout
    res = cli_inproc("verify", case, case / "grad_input.bin", device, "--standard", "exact", "--json", tmp_path / "r.json")
    assert res.returncode == 1
    assert "standard: exact (from --standard, for every output)" in res.stdout
    assert "overall: FAIL (1 of 2 output(s) fail: grad_weight (exact))" in res.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["standard"] == "exact" and [o["standard"] for o in doc["outputs"]] == ["exact", "exact"]
    res = cli_inproc("verify", case, case / "grad_input.bin", device, "--json", tmp_path / "d.json")
    doc = json.loads((tmp_path / "d.json").read_text())
    assert doc["standard"] == "per-output"
    assert [o["standard"] for o in doc["outputs"]] == ["exact", "relative-error"]


def test_double_thousandth_options_on_the_command_line(tmp_path, cli_inproc):
    case = tmp_path / "h"
    assert cli_inproc("golden", "leaky_relu", "--shape", "4096", "--dtype", "float16", "-o", case, "-q").returncode == 0
    y = np.fromfile(case / "y.bin", np.float16)
    a = y.copy()
    big = np.argsort(-np.abs(y.astype(np.float32)))[:3]
    a[big] = (y[big].astype(np.float32) * 1.05).astype(np.float16)
    path = tmp_path / "a.bin"
    a.tofile(path)
    res = cli_inproc("verify", case, path, "--standard", "double-thousandth")
    assert res.returncode == 0, res.stdout
    for text in ("rtol = 0.001, atol = 1e-05 (float16 defaults)", "over tolerance       3 (0.07324%)",
                 "error ratio          0.000732421875", "error ratio limit    0.001", "result               PASS"):
        assert text in res.stdout, text
    res = cli_inproc("verify", case, path, "--standard", "double-thousandth", "--error-ratio", "5e-4")
    assert res.returncode == 1 and "(given)" in res.stdout
    res = cli_inproc("verify", case, path, "--standard", "double-thousandth", "--rtol", "0.06", "--error-ratio", "0")
    assert res.returncode == 0 and "over tolerance       0" in res.stdout
    res = cli_inproc("verify", case, path, "--standard", "double-thousandth", "--atol", "0.01", "--error-ratio", "0")
    assert res.returncode == 1  # the changed elements moved by more than 0.1
    res = cli_inproc("verify", case, path, "--standard", "double-thousandth", "--atol", "1", "--error-ratio", "0")
    assert res.returncode == 0


def test_fortran_ordered_npy_is_read_in_c_order(tmp_path, cli_inproc):
    case = tmp_path / "f"
    assert cli_inproc("golden", "leaky_relu", "--shape", "5,7", "-o", case, "-q").returncode == 0
    y = np.load(case / "y.npy")
    np.save(tmp_path / "yf.npy", np.asfortranarray(y))
    res = cli_inproc("verify", case, tmp_path / "yf.npy")
    assert res.returncode == 0 and "Fortran-ordered" in res.stdout


@pytest.mark.parametrize("args,fragment", [
    (["golden", "leaky_relu", "--shape", "4", "--seed", "-5"], "bad seed '-5'"),
    (["golden", "leaky_relu", "--shape", "4", "--seed", "x"], "bad seed 'x'"),
    (["golden", "leaky_relu", "--shape", "-1,4"], "bad shape '-1,4'"),
    (["golden", "leaky_relu", "--shape", "-1"], "bad shape '-1'"),
    (["golden", "leaky_relu", "--shape", "2,,3"], "bad shape '2,,3'"),
    (["golden", "prelu", "--shape", "2,3", "--weight-shape", "-3"], "bad shape '-3'"),
    (["golden", "leaky_relu_backward", "--shape", "2,3", "--grad-shape", "-2,3"], "bad shape '-2,3'"),
    (["golden", "leaky_relu", "--shape", "4", "--slope", "-x"], "not a number: '-x'"),
    (["verify", "{case}", "grad_weight={case}/y.bin"], "has no output 'grad_weight' (its outputs: y)"),
    (["verify", "{case}", "{case}/y.bin", "--json", "{tmp}/nodir/r.json"], "cannot write --json"),
    (["verify", "{case}", "{case}/y.bin", "--json", "{tmp}"], "is a directory"),
    (["verify", "{case}", "{perm}"], "shape [16, 8, 32], expected [8, 16, 32]"),
    (["verify", "{case}", "{case}/y.bin", "--rtol", "1e-3"], "--rtol applies to --standard double-thousandth only"),
    (["verify", "{case}", "{case}/y.bin", "--standard", "ratio", "--atol", "1", "--error-ratio", "0.1"],
     "--atol/--error-ratio apply to --standard double-thousandth only"),
    (["verify", "{case}", "{case}/y.bin", "--standard", "double-thousandth", "--rtol", "-1"], "bad value '-1'"),
    (["verify", "{case}", "{case}/y.bin", "--standard", "double-thousandth", "--atol", "nan"], "bad value 'nan'"),
    (["verify", "{case}", "{case}/y.bin", "--standard", "double-thousandth", "--error-ratio", "2"],
     "bad value '2': give a finite number >= 0 at most 1"),
    (["verify", "{case}", "{obj}"], "holds Python objects"),
    (["verify", "{case}", "{trunc}"], "truncated"),
    (["run", "leaky_relu", "{case}/x.bin", "--dtype", "float32", "-o", "{tmp}/y.npy"],
     "0 --shape given for 1 raw input(s)"),
    (["run", "leaky_relu", "{case}/x.bin", "--dtype", "float32", "--shape", "4", "-o", "{tmp}/y.npy"],
     "bytes, expected 16 (4 float32 elements of shape [4])"),
    (["run", "leaky_relu", "{case}/x.npy", "--dtype", "float32", "-o", "{tmp}/y.npy"], "--dtype applies to raw inputs"),
    (["run", "leaky_relu", "{case}/x.npy", "--shape", "4", "-o", "{tmp}/y.npy"], "1 --shape given for 0 raw input(s)"),
    (["run", "leaky_relu", "{u16}", "-o", "{tmp}/y.npy"], "uint16 data; if it holds bfloat16 bits, give --dtype"),
    (["run", "prelu_backward", "{case}/x.npy", "{case}/x.npy", "{w}", "-o", "{tmp}/a.npy"],
     "2 output(s) (grad_input, grad_weight), got 1 -o path(s)"),
    (["run", "prelu_backward", "{case}/x.npy", "{case}/x.npy", "{w}", "-o", "{tmp}/a.npy", "{tmp}/a.npy"],
     "the -o paths must differ"),
    (["run", "leaky_relu", "{case}/x.npy", "-o", "{tmp}"], "is a directory"),
    (["run", "leaky_relu", "{case}/x.npy", "-o", "{tmp}/nodir/y.npy"], "no such directory"),
    (["run", "leaky_relu", "{case}/x.npy", "--dtype", "f64", "--semantics", "onednn", "-o", "{tmp}/y.npy"],
     "--dtype applies to raw inputs"),
])
def test_bad_arguments_one_line_exit_2(args, fragment, tmp_path, cli_inproc, check_error):
    case = tmp_path / "case"
    assert cli_inproc("golden", "leaky_relu", "--shape", "8,16,32", "-o", case, "-q").returncode == 0
    np.save(tmp_path / "perm.npy", np.load(case / "y.npy").reshape(16, 8, 32))
    np.save(tmp_path / "obj.npy", np.array([1, None], dtype=object), allow_pickle=True)
    np.save(tmp_path / "u16.npy", np.arange(4, dtype=np.uint16))
    np.save(tmp_path / "w.npy", np.ones(16, np.float32))
    (tmp_path / "trunc.npy").write_bytes((case / "y.npy").read_bytes()[:-8])
    subst = {"tmp": tmp_path, "case": case, "perm": tmp_path / "perm.npy", "obj": tmp_path / "obj.npy",
             "u16": tmp_path / "u16.npy", "w": tmp_path / "w.npy", "trunc": tmp_path / "trunc.npy"}
    argv = [a.format(**subst) for a in args]
    if argv[0] == "golden":
        argv += ["-o", str(tmp_path / "o")]
    res = cli_inproc(*argv)
    check_error(res, 2, fragment)
    assert res.stdout == ""  # nothing reported or written before the arguments are known good
    assert not (tmp_path / "o").exists() and not (tmp_path / "y.npy").exists()


def test_unwritable_json_fails_before_any_work(tmp_path, cli, check_error):
    case = tmp_path / "c"
    assert cli("golden", "leaky_relu", "--shape", "4", "-o", case, "-q").returncode == 0
    res = cli("verify", case, case / "y.bin", "--json", tmp_path / "nodir" / "r.json")
    check_error(res, 2, "cannot write --json")
    assert res.stdout == ""
    # a --json file created up front is removed when the run then fails on its input
    res = cli("verify", case, tmp_path / "missing.bin", "--json", tmp_path / "r.json")
    check_error(res, 2, "no such file")
    assert not (tmp_path / "r.json").exists()
    # and one that existed before is left alone
    (tmp_path / "old.json").write_text("{}")
    check_error(cli("verify", case, tmp_path / "missing.bin", "--json", tmp_path / "old.json"), 2, "no such file")
    assert (tmp_path / "old.json").read_text() == "{}"


def test_negative_values_after_options(tmp_path, cli_inproc):
    """Values that start with '-' are values, not options: --slope -inf, --axis -1, --seed 0."""
    case = tmp_path / "c"
    res = cli_inproc("golden", "leaky_relu", "--shape", "8", "--slope", "-inf", "-o", case, "-q")
    assert res.returncode == 0, res.stderr
    assert json.loads((case / "case.json").read_text())["parameters"]["slope"] == -math.inf
    res = cli_inproc("golden", "prelu", "--shape", "2,4", "--axis", "-1", "-o", tmp_path / "p", "-q")
    assert res.returncode == 0, res.stderr


# --- --values special for prelu_backward


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_special_values_keep_most_grad_weight_channels_finite(tmp_path, cli_inproc, dtype):
    case = tmp_path / "s"
    res = cli_inproc("golden", "prelu_backward", "--shape", "2,64,8,8", "--dtype", dtype, "--values", "special",
                     "-o", case, "-q")
    assert res.returncode == 0, res.stderr
    dt = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    x = np.fromfile(case / "x.bin", dt).astype(np.float64).reshape(2, 64, 8, 8)
    g = np.fromfile(case / "grad_output.bin", dt).astype(np.float64).reshape(2, 64, 8, 8)
    gi = np.fromfile(case / "grad_input.bin", dt).astype(np.float64)
    gw = np.fromfile(case / "grad_weight.bin", dt).astype(np.float64)
    finite = np.isfinite(gw)
    assert finite.sum() == 56  # ceil(64/8) = 8 channels carry the non-finite values
    # the special values are all there, and reach grad_input
    for arr in (x, g):
        assert np.isnan(arr).any() and np.isposinf(arr).any() and np.isneginf(arr).any()
        assert ((arr == 0) & np.signbit(arr)).any() and (np.abs(arr) == 1).any()
    assert np.isnan(gi).any() and np.isinf(gi).any()
    fi = ml_dtypes.finfo(dt) if dtype == "bfloat16" else np.finfo(dt)
    assert (x == float(fi.max)).any() and (x == float(fi.smallest_subnormal)).any()
    # the finite channels hold the small specials (zeros, subnormals) too, and their sums are used
    ok = x[:, finite]
    assert ((ok != 0) & (np.abs(ok) < float(fi.smallest_normal))).any()
    assert np.isfinite(ok).all() and (np.abs(ok) <= 1e6).all()
    assert (gw[finite] != 0).all()
    res = cli_inproc("verify", case, case / "grad_input.bin", case / "grad_weight.bin")
    assert res.returncode == 0, res.stdout


def test_special_values_small_and_broadcast_weights(tmp_path, cli_inproc):
    for shape, wshape, finite in (("5,3,6", "3", 2), ("5,3,6", "1", 0), ("5,4,6", "4,1", 3)):
        case = tmp_path / wshape.replace(",", "_")
        res = cli_inproc("golden", "prelu_backward", "--shape", shape, "--weight-shape", wshape,
                         "--values", "special", "-o", case, "-q")
        assert res.returncode == 0, res.stderr
        gw = np.fromfile(case / "grad_weight.bin", np.float32)
        assert np.isfinite(gw).sum() == finite, wshape


# --- progress on a terminal


def _run_on_pty(args, env):
    """Run the command with stderr on a pseudo-terminal; returns (status, stdout, terminal text)."""
    master, slave = pty.openpty()
    full_env = dict(os.environ, **env)
    full_env.pop("LEAKYOPS_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "leakyops", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=slave, env=full_env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the terminal is closed when the child exits
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode()
    proc.stdout.close()
    status = proc.wait(timeout=120)
    os.close(master)
    return status, out, b"".join(chunks).decode()


def test_progress_on_a_terminal_only(tmp_path, cli):
    case = tmp_path / "c"
    env = {"LEAKYOPS_PROGRESS_AFTER": "0"}
    status, out, term = _run_on_pty(["golden", "leaky_relu", "--shape", "3000000", "--dtype", "float16",
                                     "-o", case], env)
    assert status == 0 and "wrote leaky_relu golden case" in out
    assert "leakyops golden: generating inputs" in term and "%" in term and "writing y" in term
    status, out, term = _run_on_pty(["verify", case, case / "y.bin"], env)
    assert status == 0 and "overall: PASS" in out
    assert "leakyops verify: y" in term and "100%" in term and "elements" in term
    assert term.endswith("\r")  # the line is erased at the end
    # not a terminal: nothing on stderr
    res = cli("verify", case, case / "y.bin", env=env)
    assert res.returncode == 0 and res.stderr == ""
    # a terminal, but a short run: nothing either (the default delay is 2 s)
    status, out, term = _run_on_pty(["verify", case, case / "y.bin"], {"LEAKYOPS_PROGRESS_AFTER": "60"})
    assert status == 0 and term == ""


def test_bench_progress_on_a_terminal_only():
    """(On a pipe there is none: tests/bench/test_bench.py.)"""
    args = ["bench", "--sizes", "1000,2000", "--ops", "leaky_relu", "--dtypes", "float32", "--peers",
            "leakyops,copy-numpy", "--rounds", "1", "--min-time", "0.001"]
    status, out, term = _run_on_pty(args, {"LEAKYOPS_PROGRESS_AFTER": "0"})
    assert status == 0 and "x copy" in out
    # 2 sizes x 2 peers + 1 allocating leakyops call: 5 timings, counted to the end
    assert "leakyops bench: " in term and "5 of 5 timings" in term and term.endswith("\r")
    assert "about" in term and "left)" in term  # the time left, once a share is done
    status, out, term = _run_on_pty([*args, "--no-progress"], {"LEAKYOPS_PROGRESS_AFTER": "0"})
    assert status == 0 and term == ""


# --- memory: verify streams


def _write_case(root: Path, n: int, dtype=np.float16) -> Path:
    """A golden case of one n-element output, written in chunks (no need for the whole array)."""
    case = root / "big"
    case.mkdir()
    rng = np.random.default_rng(0)
    with open(case / "y.bin", "wb") as fh:
        for lo in range(0, n, 1 << 22):
            rng.standard_normal(min(1 << 22, n - lo)).astype(dtype).tofile(fh)
    name = np.dtype(dtype).name
    manifest = {"format": "leakyops-golden/2", "operator": "leaky_relu", "parameters": {"slope": 0.01},
                "semantics": "pytorch", "dtype": name, "shape": [n], "seed": 0,
                "inputs": [], "outputs": [{"name": "y", "dtype": name, "shape": [n], "npy": "y.npy", "bin": "y.bin",
                                           "bytes": n * np.dtype(dtype).itemsize}]}
    (case / "case.json").write_text(json.dumps(manifest))
    return case


_PEAK = """
import resource, subprocess, sys
res = subprocess.run([sys.executable, "-m", "leakyops", *sys.argv[1:]], capture_output=True, text=True)
sys.stdout.write(res.stdout)
print("PEAK_KIB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, res.returncode)
"""


def verify_peak_mib(case: Path, actual: Path, *extra) -> tuple[float, int, str]:
    res = subprocess.run([sys.executable, "-c", _PEAK, "verify", str(case), str(actual), *extra],
                         capture_output=True, text=True, timeout=600, check=True)
    line = res.stdout.strip().splitlines()[-1].split()
    return int(line[1]) / 1024, int(line[2]), res.stdout


def _doctored_copy(case: Path, tmp_path: Path, n: int) -> Path:
    actual = tmp_path / "actual.bin"
    data = bytearray((case / "y.bin").read_bytes())
    for i in (5, n // 2, n - 1):  # three elements changed: a real comparison, with a worst list
        data[2 * i: 2 * i + 2] = np.float16(1234.5).tobytes()
    actual.write_bytes(bytes(data))
    return actual


def test_verify_memory_does_not_grow_with_the_output(tmp_path):
    n = 8 << 20  # 8M float16 elements: a whole-array comparison in float64 would take > 400 MiB
    case = _write_case(tmp_path, n)
    actual = _doctored_copy(case, tmp_path, n)
    peak, status, out = verify_peak_mib(case, actual, "--standard", "double-thousandth")
    assert status == 0 and "over tolerance       3" in out
    assert peak < 300, peak


@pytest.mark.slow
def test_verify_64m_float16_peaks_under_512_mib(tmp_path):
    n = 64 << 20
    case = _write_case(tmp_path, n)
    actual = _doctored_copy(case, tmp_path, n)
    for standard in ("exact", "relative-error"):
        peak, status, out = verify_peak_mib(case, actual, "--standard", standard)
        assert status == 1 and "over tolerance       3" in out
        assert peak <= 512, (standard, peak)


# --- version


def test_version_from_module_and_console_script():
    import leakyops

    res = subprocess.run([sys.executable, "-m", "leakyops", "--version"], capture_output=True, text=True, check=False)
    assert res.returncode == 0 and res.stdout.strip() == f"leakyops {leakyops.__version__}"
    script = Path(sys.executable).parent / "leakyops"
    if not script.exists():
        pytest.skip("no leakyops console script next to this Python (not installed with pip)")
    res = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    assert res.returncode == 0 and res.stdout.strip() == f"leakyops {leakyops.__version__}"


def test_a_device_style_grad_weight_passes_the_default(tmp_path, cli_inproc):
    """A float32 sequential sum per channel (as a simple device kernel computes it) differs from the
    correctly rounded golden in the last bits: exact fails it, the default for grad_weight passes it."""
    case = tmp_path / "pb"
    assert cli_inproc("golden", "prelu_backward", "--shape", "8,64,16,16", "-o", case, "-q").returncode == 0
    x = np.load(case / "x.npy")
    g = np.load(case / "grad_output.npy")
    terms = np.where(x > 0, np.float32(0), x * g).transpose(1, 0, 2, 3).reshape(64, -1)
    device = np.zeros(64, np.float32)
    for column in terms.T:  # one element after the other, rounding to float32 each time
        device += column
    golden_gw = np.load(case / "grad_weight.npy")
    assert (device != golden_gw).sum() > 32  # most channels differ in the last bits
    path = tmp_path / "gw.bin"
    device.tofile(path)
    res = cli_inproc("verify", case, case / "grad_input.bin", f"grad_weight={path}")
    assert res.returncode == 0, res.stdout
    assert "grad_weight (relative-error)" in res.stdout
    res = cli_inproc("verify", case, case / "grad_input.bin", f"grad_weight={path}", "--standard", "exact")
    assert res.returncode == 1
