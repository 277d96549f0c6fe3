"""golden -> verify round trips through the command line (subprocesses)."""

import json

import ml_dtypes
import numpy as np
import pytest

BF16 = np.dtype(ml_dtypes.bfloat16)
OPS = ["leaky_relu", "leaky_relu_", "leaky_relu_backward", "prelu", "prelu_backward"]
OUTPUTS = {
    "leaky_relu": ["y"], "leaky_relu_": ["y"], "leaky_relu_backward": ["grad_input"],
    "prelu": ["y"], "prelu_backward": ["grad_input", "grad_weight"],
}
INPUTS = {
    "leaky_relu": ["x"], "leaky_relu_": ["x"], "leaky_relu_backward": ["grad_output", "x"],
    "prelu": ["x", "weight"], "prelu_backward": ["grad_output", "x", "weight"],
}


def dt(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def read_bin(path, dtype, shape):
    return np.fromfile(path, dtype=dtype).reshape(shape)


@pytest.mark.parametrize("op,dtype", [
    ("leaky_relu", "float16"), ("leaky_relu_", "float32"), ("leaky_relu_backward", "bfloat16"),
    ("prelu", "float64"), ("prelu_backward", "float16"),
])
def test_golden_files_manifest_and_exact_round_trip(tmp_path, cli, cli_inproc, op, dtype):
    case = tmp_path / "case"
    res = cli("golden", op, "--shape", "2,3,5", "--dtype", dtype, "--seed", "7", "-o", case)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    m = json.loads((case / "case.json").read_text())
    assert m["operator"] == op and m["seed"] == 7 and m["dtype"] == dtype and m["shape"] == [2, 3, 5]
    assert m["leakyops_version"]
    assert [e["name"] for e in m["inputs"]] == INPUTS[op]
    assert [e["name"] for e in m["outputs"]] == OUTPUTS[op]
    for e in m["inputs"] + m["outputs"]:
        assert e["dtype"] == dtype
        raw = read_bin(case / e["bin"], dt(dtype), tuple(e["shape"]))
        npy = np.load(case / e["npy"])  # plain NumPy reads every file: bfloat16 as its bits in uint16
        if dtype == "bfloat16":
            assert npy.dtype == np.uint16 and e["npy_dtype"] == "uint16"
            npy = npy.view(BF16)
        else:
            assert npy.dtype == dt(dtype) and "npy_dtype" not in e
        assert raw.tobytes() == npy.tobytes()  # .bin is the raw little-endian data of the .npy
        assert (case / e["bin"]).stat().st_size == e["bytes"] == raw.nbytes
    if op in ("prelu", "prelu_backward"):
        assert m["parameters"] == {"axis": 1}
        assert m["inputs"][-1]["shape"] == [3]
    else:
        assert m["parameters"]["slope"] == 0.01
    # the golden outputs verify against themselves, as .bin and as .npy
    outs_bin = [case / f"{n}.bin" for n in OUTPUTS[op]]
    outs_npy = [case / f"{n}.npy" for n in OUTPUTS[op]]
    for run, outs in ((cli, outs_bin), (cli_inproc, outs_npy)):
        res = run("verify", case, *outs)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "overall: PASS" in res.stdout


def test_golden_values_are_computed_by_the_operator(tmp_path, cli, cli_inproc):
    case = tmp_path / "c"
    res = cli("golden", "leaky_relu", "--shape", "64", "--dtype", "float32", "--slope", "0.25", "-o", case)
    assert res.returncode == 0, res.stderr
    x = np.load(case / "x.npy")
    y = np.load(case / "y.npy")
    np.testing.assert_array_equal(y, np.where(x > 0, x, x * np.float32(0.25)))
    # same seed, same data; another seed, other data
    res = cli_inproc("golden", "leaky_relu", "--shape", "64", "--slope", "0.25", "-o", tmp_path / "d")
    assert res.returncode == 0
    np.testing.assert_array_equal(np.load(tmp_path / "d" / "x.npy"), x)
    res = cli_inproc("golden", "leaky_relu", "--shape", "64", "--seed", "1", "-o", tmp_path / "e", "-q")
    assert res.returncode == 0 and res.stdout == ""
    assert not np.array_equal(np.load(tmp_path / "e" / "x.npy"), x)


def test_golden_special_values_mix(tmp_path, cli_inproc):
    case = tmp_path / "s"
    res = cli_inproc("golden", "prelu_backward", "--shape", "4,8,8", "--dtype", "bfloat16", "--values", "special",
              "-o", case)
    assert res.returncode == 0, res.stderr
    x = np.fromfile(case / "x.bin", dtype=BF16).astype(np.float64)
    fi = ml_dtypes.finfo(BF16)
    assert np.isnan(x).any() and np.isposinf(x).any() and np.isneginf(x).any()
    assert (np.signbit(x) & (x == 0)).any() and (~np.signbit(x) & (x == 0)).any()
    assert (x == float(fi.smallest_subnormal)).any() and (x == float(fi.max)).any() and (x == -float(fi.max)).any()
    w = np.fromfile(case / "weight.bin", dtype=BF16).astype(np.float64)
    assert np.isfinite(w).all()
    gw = np.load(case / "grad_weight.npy").view(BF16)
    assert gw.shape == (8,)
    res = cli_inproc("verify", case, case / "grad_input.bin", case / "grad_weight.bin")
    assert res.returncode == 0, res.stdout  # NaN == NaN in the golden's own outputs


def test_golden_uniform_and_options(tmp_path, cli_inproc):
    case = tmp_path / "u"
    res = cli_inproc("golden", "leaky_relu_backward", "--shape", "3,4", "--grad-shape", "3,1", "--values", "uniform",
              "--self-is-result", "--slope", "0", "-o", case)
    assert res.returncode == 0, res.stderr
    m = json.loads((case / "case.json").read_text())
    assert m["parameters"] == {"slope": 0.0, "self_is_result": True}
    assert m["inputs"][0]["shape"] == [3, 1] and m["outputs"][0]["shape"] == [3, 4]
    x = np.load(case / "x.npy")
    assert np.all(np.abs(x) <= 1)
    case = tmp_path / "p"
    res = cli_inproc("golden", "prelu", "--shape", "2,4,3", "--axis", "-1", "-o", case)
    assert res.returncode == 0
    m = json.loads((case / "case.json").read_text())
    assert m["inputs"][1]["shape"] == [3] and m["parameters"] == {"axis": -1}
    res = cli_inproc("golden", "prelu", "--shape", "2,4,3", "--weight-shape", "1", "-o", tmp_path / "q")
    assert res.returncode == 0
    assert json.loads((tmp_path / "q" / "case.json").read_text())["inputs"][1]["shape"] == [1]


@pytest.fixture(scope="module")
def f32_case(tmp_path_factory, cli_inproc):

    case = tmp_path_factory.mktemp("golden") / "lr32"
    res = cli_inproc("golden", "leaky_relu", "--shape", "1000", "--dtype", "float32", "--seed", "3", "-o", case)
    assert res.returncode == 0, res.stderr
    return case


@pytest.fixture(scope="module")
def f16_case(tmp_path_factory, cli_inproc):

    case = tmp_path_factory.mktemp("golden") / "lr16"
    res = cli_inproc("golden", "leaky_relu", "--shape", "10,100", "--dtype", "float16", "--seed", "3", "-o", case)
    assert res.returncode == 0, res.stderr
    return case


def doctor(case, name, fn, tmp_path, suffix=".bin"):
    m = json.loads((case / "case.json").read_text())
    e = next(o for o in m["outputs"] if o["name"] == name)
    arr = np.fromfile(case / e["bin"], dtype=dt(e["dtype"])).reshape(e["shape"]).copy()
    out = fn(arr)
    path = tmp_path / f"actual{suffix}"
    if suffix == ".bin":
        out.tofile(path)
    else:
        np.save(path, out)
    return path


def one_rel(arr, rel, count=1):
    flat = arr.reshape(-1)
    big = np.argsort(-np.abs(flat.astype(np.float64)))[:count]  # away from zero: relative errors are clean
    flat[big] = (flat[big].astype(np.float64) * (1 + rel)).astype(arr.dtype)
    return arr


# doctoring -> expected exit status per standard (exact, double-thousandth, ratio, relative-error)
DOCTORED = {
    "f32: one element off by 5e-4": ("f32", lambda a: one_rel(a, 5e-4), (1, 1, 0, 0)),
    "f32: 10% of elements off by 2%": ("f32", lambda a: one_rel(a, 0.02, 100), (1, 1, 1, 1)),
    "f32: 3% of elements off by 2%": ("f32", lambda a: one_rel(a, 0.02, 30), (1, 1, 0, 1)),
    "f32: one NaN": ("f32", lambda a: (a.reshape(-1).__setitem__(5, np.nan), a)[1], (1, 1, 0, 1)),
    "f16: one ulp in ten elements": (
        "f16", lambda a: (a.reshape(-1).__setitem__(slice(0, 10), np.nextafter(a.reshape(-1)[:10], np.float16(np.inf))), a)[1],
        (1, 0, 0, 0)),
    "f32: all elements off by 2e-4": ("f32", lambda a: (a * np.float32(1 + 2e-4)).astype(np.float32), (1, 1, 0, 1)),
}
STANDARDS = ("exact", "double-thousandth", "ratio", "relative-error")


@pytest.mark.parametrize("label", list(DOCTORED))
def test_each_standard_passes_and_fails_on_doctored_outputs(label, f32_case, f16_case, tmp_path, cli_inproc):
    which, fn, expected = DOCTORED[label]
    case = f32_case if which == "f32" else f16_case
    path = doctor(case, "y", fn, tmp_path, suffix=".bin" if which == "f32" else ".npy")
    for standard, status in zip(STANDARDS, expected):
        res = cli_inproc("verify", case, path, "--standard", standard)
        assert res.returncode == status, (label, standard, res.stdout, res.stderr)
        assert ("overall: PASS" if status == 0 else "overall: FAIL") in res.stdout
        assert f"standard: {standard}" in res.stdout


def test_verify_report_contents(f32_case, tmp_path, cli_inproc):
    def bad(a):
        flat = a.reshape(-1)
        flat[10] = np.float32(123.0)
        flat[20] = np.nan
        return a

    golden = np.load(f32_case / "y.npy")
    path = doctor(f32_case, "y", bad, tmp_path)
    js = tmp_path / "r.json"
    res = cli_inproc("verify", f32_case, path, "--standard", "double-thousandth", "--json", js)
    assert res.returncode == 1
    out = res.stdout
    assert "elements compared    1000" in out
    assert "over tolerance       2 (0.2%)" in out
    assert "max abs error        inf at [20]" in out
    assert "actual NaN, golden not: 1" in out
    assert "worst elements (2 of 2 over tolerance)" in out
    assert "[10]" in out and "123" in out
    assert "result               FAIL" in out
    doc = json.loads(js.read_text())
    assert doc["passed"] is False and doc["standard"] == "double-thousandth"
    (o,) = doc["outputs"]
    assert o["name"] == "y" and o["over"] == 2 and o["nan_actual_only"] == 1
    assert {tuple(w["index"]) for w in o["worst"]} == {(10,), (20,)}
    assert o["worst"][0]["golden"] in (float(golden[10]), float(golden[20]), "nan")


def test_verify_ratio_thresholds_option(f32_case, tmp_path, cli_inproc):
    path = doctor(f32_case, "y", lambda a: one_rel(a, 0.005, 20), tmp_path)  # 2% of elements off by 0.5%
    assert cli_inproc("verify", f32_case, path, "--standard", "ratio").returncode == 0
    res = cli_inproc("verify", f32_case, path, "--standard", "ratio", "--err-thr", "0.001,0.01")
    assert res.returncode == 1
    assert "threshold1           0.001" in res.stdout and "error ratio          0.02" in res.stdout
    assert cli_inproc("verify", f32_case, path, "--standard", "ratio", "--err-thr", "[0.001,0.05]").returncode == 0


def test_verify_pairs_outputs_by_name_or_order(tmp_path, cli_inproc):
    case = tmp_path / "pb"
    assert cli_inproc("golden", "prelu_backward", "--shape", "3,4,5", "-o", case).returncode == 0
    gi, gw = case / "grad_input.bin", case / "grad_weight.bin"
    # by file name, in any order
    res = cli_inproc("verify", case, gw, gi)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"output grad_input <- {gi}" in res.stdout
    # NAME=PATH
    res = cli_inproc("verify", case, f"grad_weight={gw}", f"grad_input={gi}")
    assert res.returncode == 0
    # swapped by NAME=PATH: the sizes differ, reported plainly
    res = cli_inproc("verify", case, f"grad_weight={gi}", f"grad_input={gw}")
    assert res.returncode == 2 and "expected" in res.stderr
    # by order, with neutral names
    a0, a1 = tmp_path / "out0.bin", tmp_path / "out1.bin"
    a0.write_bytes(gi.read_bytes())
    a1.write_bytes(gw.read_bytes())
    assert cli_inproc("verify", case, a0, a1).returncode == 0
    # a doctored grad_weight fails only that output
    w = np.fromfile(gw, dtype=np.float32)
    w[0] += 1
    w.tofile(a1)
    res = cli_inproc("verify", case, a0, a1)
    assert res.returncode == 1
    assert "overall: FAIL (1 of 2 output(s) fail: grad_weight (relative-error))" in res.stdout


def test_verify_flat_npy_is_read_in_golden_shape(tmp_path, cli_inproc):
    case = tmp_path / "c"
    assert cli_inproc("golden", "prelu", "--shape", "2,3,4", "--dtype", "bfloat16", "-o", case).returncode == 0
    y = np.load(case / "y.npy")  # bfloat16 bits as uint16
    flat = tmp_path / "flat.npy"
    np.save(flat, y.view(BF16).reshape(-1))
    res = cli_inproc("verify", case, flat)
    assert res.returncode == 0, res.stderr
    assert "read as [2, 3, 4]" in res.stdout
