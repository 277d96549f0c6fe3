"""``leakyops cases``: reading both formats, bad input, the aclnn run, verdicts, reports, jobs, Ctrl-C.

The suites equivalent to ops-nn's published ones are in ``test_cases_suites.py``; the cases
here are small, written for one behaviour each.
"""

from __future__ import annotations

import errno
import json
import math
import os
import pty
import re
import signal
import subprocess
import sys
import time
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from leakyops import _verify
from leakyops._cases import _run, _spec
from leakyops._cases._apis import APIS
from leakyops._cases._read import parse_range, read_suite
from leakyops._cases._spec import Stream

# --------------------------------------------------------------------------- writing cases


def tensor(name, dtype="fp32", shape=(4, 5), rng=(-7, 7), **extra):
    return {"name": name, "type": "tensor", "required": True, "dtype": dtype, "shape": list(shape),
            "range_values": list(rng) if isinstance(rng, tuple) else rng, "backward": False, "align_32B": None,
            **extra}


def host(name, dtype="fp32", rng=1, kind="scalar"):
    return {"name": name, "type": kind, "required": True, "dtype": dtype, "shape": None, "range_values": rng,
            "backward": False, "align_32B": None}


def lr(i=0, dtype="fp32", shape=(4, 5), x=(-7, 7), a=(0, 1), acc="default", **extra):
    """An aclnnLeakyRelu case as the published ATK suite writes one."""
    return {"id": i, "name": "torch.nn.LeakyRelu", "aclnn_name": "LeakyRelu", "api_type": "aclnn_leaky_relu",
            "standard": {"acc": acc, "perf": "not_key"},
            "inputs": [tensor("x", dtype, shape, x), host("a", "fp32", list(a) if isinstance(a, tuple) else a)],
            **extra}


def lrb(i=0, dtype="fp32", shape=(4, 5), a_dtype="fp32", a=(0, 1), self_is_result=False, acc="single_bm"):
    return {"id": i, "name": "torch.ops.aten.leaky_relu_backward", "aclnn_name": "aclnnLeakyReluBackward",
            "api_type": "aclnn_leaky_relu_backward", "standard": {"acc": acc, "perf": "not_key"},
            "inputs": [tensor("gradOutput", dtype, shape), tensor("x", dtype, shape),
                       host("a", a_dtype, list(a) if isinstance(a, tuple) else a),
                       host("selfIsResult", "bool", self_is_result, kind="attr")]}


def prelu(i=0, dtype="fp32", shape=(3, 4, 5), wshape=(4,), x=(-7, 7)):
    return {"id": i, "name": "torch.nn.functional.prelu", "aclnn_name": "aclnnPrelu", "api_type": "function_perlu",
            "standard": {"acc": "single_bm", "perf": "not_key"},
            "inputs": [tensor("x", dtype, shape, x, backward=True), tensor("a", dtype, wshape, backward=True)]}


def prelu_bwd(i=0, dtype="fp32", shape=(3, 4, 5), wshape=(4,)):
    return {"id": i, "name": "torch.ops.aten.prelu_backward", "aclnn_name": "aclnnPreluBackward",
            "api_type": "function_perlu_backward", "standard": {"acc": "single_bm", "perf": "not_key"},
            "inputs": [tensor("gradOutput", dtype, shape, (-10, 10)), tensor("x", dtype, shape, (-10, 10)),
                       tensor("a", dtype, wshape, (-10, 10))]}


def write_atk(path: Path, cases) -> Path:
    path.write_text(json.dumps(cases))
    return path


TTK_HEADER = ("testcase_name,api_name,tensor_dtypes,tensor_formats,tensor_view_shapes,input_data_ranges,"
              "output_tensor_indexes,output_dtypes,scalar_dtypes,scalar_data_ranges,attributes,absolute_precision")
TTK_ROW = ("LR_1,aclnnLeakyRelu,\"('float32', 'float32')\",\"('ND',)\",\"((3, 4), (3, 4))\",\"((-1, 1),)\","
           "\"(-1,)\",\"('float32',)\",('float16'),\"(0, 1)\",{},0.0001")


def write_ttk(path: Path, rows, header=TTK_HEADER) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def ttk_row(**cells) -> str:
    """TTK_ROW with some cells replaced (values as they stand in the file)."""
    import csv
    import io

    names = TTK_HEADER.split(",")
    row = next(csv.reader(io.StringIO(TTK_ROW)))
    values = dict(zip(names, row)) | cells
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([values[n] for n in names])
    return out.getvalue()


def run_json(cli_inproc, *args, tmp_path):
    report = tmp_path / "report.json"
    res = cli_inproc("cases", *args, "--json", report)
    return res, (json.loads(report.read_text()) if report.exists() else None)


# --------------------------------------------------------------------------- reading


@pytest.mark.parametrize("value,dtype,want", [
    ([-7, 7], "float32", ("uniform", -7.0, 7.0)),
    (8, "float16", ("const", 8.0, 8.0)),
    ([0, 0], "float16", ("const", 0.0, 0.0)),
    (["nan"], "bfloat16", ("const", math.nan, math.nan)),
    ("-inf", "float32", ("const", -math.inf, -math.inf)),
    (["-inf", "inf"], "float16", ("uniform", -65504.0, 65504.0)),
    ((-3.4e38, 3.4e38), "float32", ("uniform", -3.4e38, 3.4e38)),
    ([0, 1], "int32", ("uniform", 0.0, 1.0)),
    (True, "bool", ("const", 1.0, 1.0)),
])
def test_range_forms(value, dtype, want):
    d = parse_range(value, dtype)
    np.testing.assert_equal((d.kind, d.low, d.high), want)


def test_the_normal_range_draws_a_mean_and_a_deviation_per_tensor():
    d = parse_range({"name": "nd", "mean": [-100, 100], "std": [1, 25]}, "float32")
    assert (d.kind, d.mean, d.std) == ("normal", (-100.0, 100.0), (1.0, 25.0))
    s = Stream(np.random.default_rng(0), d, "float32")
    x = s.take(200_000)
    assert -100 <= s.loc <= 100 and 1 <= s.scale <= 25
    assert abs(float(x.mean()) - s.loc) < 0.5 and abs(float(x.std()) - s.scale) < 0.5


def test_streams_draw_in_range_and_dtype():
    for dtype, rng in (("bfloat16", (-7, 7)), ("float16", (-1000, -10)), ("int32", (0, 1)), ("float64", (0, 1))):
        s = Stream(np.random.default_rng(1), parse_range(list(rng), dtype), dtype)
        x = s.take(10_000)
        assert x.dtype.name == dtype
        wide = x.astype(np.float64)
        assert wide.min() >= rng[0] and wide.max() <= rng[1] and len(np.unique(wide)) > 1


@pytest.mark.parametrize("dtype,rng", [("float16", [-7, 7]), ("bfloat16", ["-inf", "inf"]), ("float32", {
    "name": "nd", "mean": [-100, 100], "std": [1, 25]}), ("float64", [0, 1]), ("int8", [-100, 100]), ("bool", [0, 1]),
    ("float16", "nan"), ("float32", ["-inf"])])
def test_a_tensor_is_drawn_in_slices_the_same_as_in_one_draw(dtype, rng, monkeypatch):
    """Slices of the draw give the very elements of one draw, and a half-precision tensor
    drawn whole costs about its own size, not the float64 draw's four times more."""
    n = 3 * _spec.SLICE + 7
    sliced = Stream(np.random.default_rng(4), parse_range(rng, dtype), dtype).take(n)
    with monkeypatch.context() as m:
        m.setattr(_spec, "SLICE", n)
        whole = Stream(np.random.default_rng(4), parse_range(rng, dtype), dtype).take(n)
    assert sliced.dtype.name == dtype and sliced.shape == (n,)
    np.testing.assert_array_equal(sliced.view(np.uint8), whole.view(np.uint8))
    if dtype == "float16" and rng == [-7, 7]:
        k = 16 * _spec.SLICE
        tracemalloc.start()
        try:
            Stream(np.random.default_rng(0), parse_range(rng, dtype), dtype).take(k)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 2 * k + 16 * _spec.SLICE, peak / (2 * k)  # in one draw: 2 + 8 bytes an element


def test_a_ttk_list_of_one_may_be_written_as_the_item(tmp_path):
    path = write_ttk(tmp_path / "t.csv", [
        "IP_1,aclnnInplaceLeakyRelu,('float16'),\"('ND',)\",\"((2, 3))\",\"(-1, 1)\",\"(-1,)\",\"('float16',)\","
        "('float16'),\"(0, 1)\",{'negative_slope': 0.25},0.001"])
    (case,) = read_suite(str(path)).cases
    assert not case.error, case.error
    t = case.tensor("selfRef")
    assert (t.dtype, t.shape, t.dist.low, t.dist.high) == ("float16", (2, 3), -1.0, 1.0)
    (slope,) = case.values
    assert (slope.param, slope.dtype, slope.dist.kind, slope.dist.low) == ("negativeSlope", "float16", "const", 0.25)
    (std,) = [s for _, s in case.standards]
    assert (std.name, dict(std.options)) == ("double-thousandth", {"rtol": 0.001, "atol": 0.001, "error_ratio": 0.001})


def test_precision_tolerances_give_rtol_and_error_ratio_per_output(tmp_path):
    header = TTK_HEADER + ",precision_tolerances"
    path = write_ttk(tmp_path / "t.csv", [TTK_ROW + ",\"((0.002, 0.003),)\""], header)
    (case,) = read_suite(str(path)).cases
    assert dict(case.standards[0][1].options) == {"rtol": 0.002, "atol": 0.0001, "error_ratio": 0.003}


def test_a_field_not_read_is_reported_once_per_file(tmp_path, cli_inproc):
    cases = [lr(0, extra_field=1), lr(1, extra_field=2)]
    cases[1]["inputs"][0]["colour"] = "red"
    path = write_atk(tmp_path / "s.json", cases)
    ttk = write_ttk(tmp_path / "t.csv", [TTK_ROW + ",yes"], TTK_HEADER + ",is_enabled")
    res = cli_inproc("cases", path, ttk, "--list")
    assert res.returncode == 0, res.stderr
    notes = res.stderr.splitlines()
    assert notes == [
        f"leakyops cases: note: {path}: field 'extra_field' is not read (2 case(s) have it)",
        f"leakyops cases: note: {path}: field 'inputs.colour' is not read (1 case(s) have it)",
        f"leakyops cases: note: {ttk}: field 'is_enabled' is not read (1 case(s) have it)",
    ]


def test_unknown_single_bm_keys_are_reported_once_per_file(tmp_path, cli_inproc):
    """ATK's single_bm takes threshold keys (fp16_thd, mare_ratio, ...) that change nothing
    here: only its type is read, the rest are reported, with or without --standard."""
    cases = [lrb(i, acc={"single_bm": {"type": "high_precision", "fp16_thd": 0.001}}) for i in range(2)]
    cases.append(lrb(2, acc={"single_bm": {"mare_ratio": 5}}))
    path = write_atk(tmp_path / "s.json", cases)
    for extra in ((), ("--standard", "exact")):
        res = cli_inproc("cases", path, "--list", *extra)
        assert res.returncode == 0, res.stderr
        assert res.stderr.splitlines() == [
            f"leakyops cases: note: {path}: field 'standard.acc.single_bm.fp16_thd' is not read (2 case(s) have it)",
            f"leakyops cases: note: {path}: field 'standard.acc.single_bm.mare_ratio' is not read (1 case(s) have it)",
        ]


def test_a_ttk_column_not_read_is_reported_even_when_every_cell_is_empty(tmp_path, cli_inproc):
    ttk = write_ttk(tmp_path / "t.csv", [TTK_ROW + ",", ttk_row(testcase_name="LR_2") + ","],
                    TTK_HEADER + ",is_enabled")
    res = cli_inproc("cases", ttk, "--list")
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [
        f"leakyops cases: note: {ttk}: field 'is_enabled' is not read (a column, empty in every row)"]


def test_cases_of_one_name_in_two_files_are_a_warning(tmp_path, cli_inproc):
    """Their seeds (--seed and the name) are the same, so they draw the same inputs."""
    a = write_atk(tmp_path / "a.json", [lr(0), lr(1, "fp16")])
    b = write_atk(tmp_path / "b.json", [lr(0, "bf16")])
    many = write_atk(tmp_path / "c.json", [lr(i) for i in range(5)])
    t1 = write_ttk(tmp_path / "t1.csv", [TTK_ROW])
    t2 = write_ttk(tmp_path / "t2.csv", [TTK_ROW])
    res = cli_inproc("cases", a, b, t1, t2, "--list")
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [
        f"leakyops cases: warning: case aclnnLeakyRelu_0 is in both {a} and {b}: the two draw the same inputs "
        "(a case's seed is --seed and its name)",
        f"leakyops cases: warning: case LR_1 is in both {t1} and {t2}: the two draw the same inputs "
        "(a case's seed is --seed and its name)"]
    res = cli_inproc("cases", a, many, "--list")
    assert res.stderr.splitlines() == [
        f"leakyops cases: warning: 2 case names (aclnnLeakyRelu_0, aclnnLeakyRelu_1) are in both {a} and {many}: "
        "each pair draws the same inputs (a case's seed is --seed and its name)"]
    res = cli_inproc("cases", many, a, "--list")
    assert "(aclnnLeakyRelu_0, aclnnLeakyRelu_1) are in both" in res.stderr  # the files in the order given
    res = cli_inproc("cases", many, many, "--list")
    assert res.stderr.splitlines() == [
        f"leakyops cases: warning: 5 case names (aclnnLeakyRelu_0, aclnnLeakyRelu_1, aclnnLeakyRelu_2 and 2 more) "
        f"are in both {many} and {many}: each pair draws the same inputs (a case's seed is --seed and its name)"]
    res = cli_inproc("cases", a, b, "--filter", "_1")  # the run goes on; only the selected cases count
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert cli_inproc("cases", a, t1, "--list").stderr == ""


def test_list_shows_the_cases_and_runs_none(tmp_path, cli_inproc):
    path = write_atk(tmp_path / "s.json", [lr(0, "bf16", (2, 3), "nan", ["-inf"]), lrb(1, "fp64", (5,), "int32", 1),
                                           prelu(2), prelu_bwd(3)])
    res = cli_inproc("cases", path, "--list")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1] == "4 case(s)"
    assert lines[0].startswith("aclnnLeakyRelu_0 ") and "self:bfloat16[2, 3]='nan'" in lines[0]
    assert "negativeSlope:float32=['-inf']" in lines[0] and "[double-thousandth]" in lines[0]
    assert "negativeSlope:int32=1 selfIsResult:bool=False" in lines[1] and "[relative-error]" in lines[1]
    assert f"({path} case 3)" in lines[3]
    assert "PASS" not in res.stdout


# --------------------------------------------------------------------------- bad input


def _mutate(case: dict, path: str, value):
    """Set (or, with value ``...``, delete) the field at a dotted path such as ``inputs.0.shape``."""
    keys = path.split(".")
    target = case
    for k in keys[:-1]:
        target = target[int(k)] if isinstance(target, list) else target[k]
    last = int(keys[-1]) if isinstance(target, list) else keys[-1]
    if value is ...:
        del target[last]
    else:
        target[last] = value
    return case


ATK_BAD = [  # (field path, value (... deletes it), what the message says)
    ("id", ..., "case at index 1: id: None is not a non-negative integer"),
    ("id", True, "case at index 1: id: True is not a non-negative integer"),
    ("id", -3, "case at index 1: id: -3 is not a non-negative integer"),
    ("id", 0, "case 0: id: 0 appears twice in the file"),
    ("aclnn_name", ..., "case 1: aclnn_name: missing"),
    ("api_type", ..., "case 1: api_type: missing"),
    ("inputs", ..., "case 1: inputs: missing"),
    ("aclnn_name", "Relu", "case 1: aclnn_name: unknown API 'Relu'"),
    ("api_type", "aclnn_relu", "case 1: api_type: unknown executor 'aclnn_relu'"),
    ("api_type", "function_perlu", "case 1: api_type: function_perlu runs aclnnPrelu, the case names aclnnLeakyRelu"),
    ("name", 5, "case 1: name: 5 is not a string"),
    ("standard", "default", "case 1: standard: 'default' is not {'acc': ..., 'perf': ...}"),
    ("standard", {"acc": "default", "speed": 1}, "case 1: standard: {'acc': 'default', 'speed': 1} is not"),
    ("standard.acc", "double_bm", "case 1: standard.acc: unknown accuracy standard 'double_bm'"),
    ("standard.acc", {"single_bm": {"type": "fast"}}, "case 1: standard.acc: single_bm type 'fast' is not supported"),
    ("inputs", {}, "case 1: inputs: not a list of inputs"),
    ("inputs.0", "x", "case 1: inputs[0]: an input is a JSON object, got str"),
    ("inputs.0.name", "y", "case 1: inputs[0].name: 'y' is not an input of this executor (it reads x, a)"),
    ("inputs.0.name", ["x"], "case 1: inputs[0].name: ['x'] is not an input of this executor (it reads x, a)"),
    ("inputs.0.name", {"x": 1}, "case 1: inputs[0].name: {'x': 1} is not an input of this executor"),
    ("inputs.1", tensor("x"), "case 1: inputs[1].name: 'x' appears twice"),
    ("inputs.1", ..., "case 1: inputs: missing 'a' (aclnn_leaky_relu reads x, a)"),
    ("inputs.0.type", "scalar", "case 1: input 'x' type: 'scalar': self of aclnnLeakyRelu is a tensor"),
    ("inputs.1.type", "attr", "case 1: input 'a' type: 'attr': negativeSlope of aclnnLeakyRelu is a scalar"),
    ("inputs.0.required", "yes", "case 1: input 'x' required: 'yes' is not true, false or null"),
    ("inputs.0.backward", 1, "case 1: input 'x' backward: 1 is not true, false or null"),
    ("inputs.0.align_32B", "no", "case 1: input 'x' align_32B: 'no' is not true, false or null"),
    ("inputs.0.dtype", ..., "case 1: input 'x' dtype: missing"),
    ("inputs.0.dtype", "fp8", "case 1: input 'x' dtype: unknown dtype 'fp8'"),
    ("inputs.0.dtype", "hf32", "case 1: input 'x' dtype: unknown dtype 'hf32'"),
    ("inputs.0.range_values", ..., "case 1: input 'x' range_values: missing"),
    ("inputs.0.range_values", [7, -7], "case 1: input 'x' range_values: [7, -7]: low > high"),
    ("inputs.0.range_values", [1, 2, 3], "case 1: input 'x' range_values: [1, 2, 3] is not [low, high]"),
    ("inputs.0.range_values", "big", "case 1: input 'x' range_values: 'big' is not a number, 'inf', '-inf' or 'nan'"),
    ("inputs.0.range_values", ["nan", 1], "case 1: input 'x' range_values: ['nan', 1]: a range bound cannot be nan"),
    ("inputs.0.range_values", {"name": "ud", "mean": [0, 1], "std": [1, 2]}, "a distribution object is"),
    ("inputs.0.range_values", {"name": "nd", "mean": [1, 0], "std": [1, 2]}, "mean must be [low, high]"),
    ("inputs.0.range_values", {"name": "nd", "mean": [0, 1], "std": [-2, 2]}, "std must not be negative"),
    ("inputs.0.shape", "4,5", "case 1: input 'x' shape: '4,5' is not a list of non-negative integers"),
    ("inputs.0.shape", [4, -5], "case 1: input 'x' shape: [4, -5] is not a list of non-negative integers"),
    ("inputs.0.shape", [4, 5.0], "case 1: input 'x' shape: [4, 5.0] is not a list of non-negative integers"),
    ("inputs.0.shape", [4, True], "case 1: input 'x' shape: [4, True] is not a list of non-negative integers"),
    ("inputs.0.shape", ..., "case 1: input 'x' shape: None is not a list of non-negative integers"),
    ("inputs.0.shape", [10 ** 30], f"case 1: input 'x' shape: [{10 ** 30}]: dimension 0 is above int64's largest"),
    ("inputs.0.shape", [4, 2 ** 63], f"case 1: input 'x' shape: [4, {2 ** 63}]: dimension 1 is above int64's"),
    ("inputs.0.shape", [2 ** 62, 2], "case 1: input 'x' shape: [4611686018427387904, 2]: the element count is above"),
    ("inputs.1.shape", [1], "case 1: input 'a' shape: [1]: a scalar has no shape (null)"),
]
ATK_BAD_INT = [  # on an int32 slope
    ("inputs.1.range_values", 0.5, "case 1: input 'a' range_values: 0.5 is not an integer, as int32 needs"),
    ("inputs.1.range_values", ["inf"], "case 1: input 'a' range_values: ['inf'] is not representable in int32"),
    ("inputs.1.range_values", [0, 3e9], "case 1: input 'a' range_values: [0, 3000000000.0] is not representable"),
    ("inputs.1.range_values", {"name": "nd", "mean": [0, 1], "std": [1, 2]}, "a normal distribution needs a float"),
]


@pytest.mark.parametrize("field,value,fragment", ATK_BAD + ATK_BAD_INT,
                         ids=[f"{b[0]}={b[1]!r}"[:40] for b in ATK_BAD + ATK_BAD_INT])
def test_a_malformed_atk_case_is_one_line_naming_file_case_and_field(field, value, fragment, tmp_path, cli_inproc,
                                                                     check_error):
    bad = lr(1)
    if (field, value, fragment) in ATK_BAD_INT:
        bad["inputs"][1]["dtype"] = "int32"
    path = write_atk(tmp_path / "s.json", [lr(0), _mutate(bad, field, value), lr(2)])
    res = cli_inproc("cases", path)
    line = check_error(res, 2, f"leakyops cases: error: {path}: ", fragment)
    assert res.stdout == ""  # before any case runs
    assert len(line) < 400


@pytest.mark.parametrize("content,fragment", [
    ("[{\"id\": 0,}]", "line 1 column 11: bad JSON (Expecting property name enclosed in double quotes)"),
    ("[\n{\"id\": 0}\n", "line 3 column 1: bad JSON"),
    ("{\"cases\": []}", "an ATK suite is a JSON list of cases, not a dict"),
    ("[3]", "case at index 0: case: a case is a JSON object, got int"),
    ("[{\"id\": " + "9" * 5000 + "}]", "bad JSON (Exceeds the limit (4300 digits) for integer string conversion"),
])
def test_a_malformed_atk_file(content, fragment, tmp_path, cli_inproc, check_error):
    path = tmp_path / "s.json"
    path.write_text(content)
    check_error(cli_inproc("cases", path), 2, f"{path}: {fragment}")


TTK_BAD = [  # (cells replaced, what the message says)
    ({"testcase_name": ""}, "line 3: testcase_name: empty"),
    ({"testcase_name": "LR_1"}, "line 3: testcase_name: 'LR_1' appears twice in the file"),
    ({"absolute_precision": ""}, "line 3: absolute_precision: empty"),
    ({"api_name": "aclnnRelu"}, "line 3: api_name: unknown API 'aclnnRelu'"),
    ({"tensor_dtypes": "('float32', 'float32'"}, "line 3: tensor_dtypes: \"('float32', 'float32'\" is not a Python"),
    ({"tensor_dtypes": "float32"}, "line 3: tensor_dtypes: 'float32' is not a Python literal"),
    ({"tensor_dtypes": "('float32',)"}, "line 3: tensor_dtypes: 1 dtypes for aclnnLeakyRelu's 2 (self, out)"),
    ({"tensor_dtypes": "('float32', 'float8')"}, "line 3: tensor_dtypes: unknown dtype 'float8'"),
    ({"tensor_dtypes": "(1, 2)"}, "line 3: tensor_dtypes: (1, 2) is not dtype names"),
    ({"tensor_view_shapes": "((3, 4), (3, -4))"}, "line 3: tensor_view_shapes: ((3, 4), (3, -4)) is not a shape"),
    ({"tensor_view_shapes": "((3, 4), (3, 4), (3, 4))"}, "line 3: tensor_view_shapes: 3 shapes for aclnnLeakyRelu's"),
    ({"tensor_view_shapes": "((3, 4.5), (3, 4))"}, "line 3: tensor_view_shapes: ((3, 4.5), (3, 4)) is not"),
    ({"tensor_view_shapes": f"((3, {10 ** 30}), (3, 4))"},
     f"line 3: tensor_view_shapes: [3, {10 ** 30}]: dimension 1 is above int64's largest (2**63 - 1)"),
    ({"tensor_view_shapes": f"(({2 ** 62}, 2), (3, 4))"},
     "line 3: tensor_view_shapes: [4611686018427387904, 2]: the element count is above int64's largest"),
    ({"tensor_formats": "('ND', 'ND', 'ND')"}, "line 3: tensor_formats: 3 formats for aclnnLeakyRelu's 2"),
    ({"tensor_formats": "('XYZ',)"}, "line 3: tensor_formats: unknown format 'XYZ'"),
    ({"output_tensor_indexes": "(2,)"}, "line 3: output_tensor_indexes: (2,): aclnnLeakyRelu has 2 tensors"),
    ({"output_tensor_indexes": "(0,)"}, "line 3: output_tensor_indexes: (0,) names self; aclnnLeakyRelu writes out"),
    ({"output_dtypes": "('float16',)"}, "line 3: output_dtypes: ['float16'] differ from the outputs' tensor_dtypes"),
    ({"output_dtypes": "('half8',)"}, "line 3: output_dtypes: unknown dtype 'half8'"),
    ({"input_data_ranges": "((-1, 1), (0, 1))"}, "line 3: input_data_ranges: 2 ranges, aclnnLeakyRelu needs 1"),
    ({"input_data_ranges": "((1, -1),)"}, "line 3: input_data_ranges: (1, -1): low > high"),
    ({"input_data_ranges": "((1, 2, 3),)"}, "line 3: input_data_ranges: ((1, 2, 3),) is not a [low, high] range"),
    ({"attributes": "[1]"}, "line 3: attributes: [1] is not a dict"),
    ({"attributes": "{'alpha': 0.1}"}, "line 3: attributes: 'alpha' is not an argument of aclnnLeakyRelu"),
    ({"attributes": "{'negative_slope': 'x'}"},
     "line 3: attributes['negative_slope']: 'x' is not a number, 'inf', '-inf' or 'nan'"),
    ({"scalar_dtypes": "('float16', 'float16')"}, "line 3: scalar_dtypes: 2 dtypes for aclnnLeakyRelu's scalars"),
    ({"scalar_dtypes": "('float99')"}, "line 3: scalar_dtypes: unknown dtype 'float99'"),
    ({"scalar_dtypes": ""}, "line 3: scalar_dtypes: None is not dtype names"),
    ({"scalar_data_ranges": "((0, 1), (0, 1))"}, "line 3: scalar_data_ranges: 2 ranges for aclnnLeakyRelu's scalars"),
    ({"scalar_data_ranges": "(1, 0)"}, "line 3: scalar_data_ranges: (1, 0): low > high"),
    ({"absolute_precision": "2"}, "line 3: absolute_precision: 2 is not a number in [0, 1]"),
    ({"absolute_precision": "'0.001'"}, "line 3: absolute_precision: '0.001' is not a number in [0, 1]"),
]


@pytest.mark.parametrize("cells,fragment", TTK_BAD, ids=[f"{next(iter(c))}={next(iter(c.values()))}"[:40]
                                                         for c, _ in TTK_BAD])
def test_a_malformed_ttk_row_is_one_line_naming_file_line_and_field(cells, fragment, tmp_path, cli_inproc,
                                                                    check_error):
    path = write_ttk(tmp_path / "t.csv", [TTK_ROW, ttk_row(**({"testcase_name": "LR_2"} | cells))])
    res = cli_inproc("cases", path)
    check_error(res, 2, f"leakyops cases: error: {path}: {fragment}")
    assert res.stdout == ""


def test_a_backward_attribute_must_be_true_or_false(tmp_path, cli_inproc, check_error):
    row = ttk_row(api_name="aclnnLeakyReluBackward", tensor_dtypes="('float32', 'float32', 'float32')",
                  tensor_view_shapes="((3, 4), (3, 4), (3, 4))", input_data_ranges="((-1, 1), (-1, 1))",
                  attributes="{'self_is_result': 1}")
    path = write_ttk(tmp_path / "t.csv", [row])
    check_error(cli_inproc("cases", path), 2, f"{path}: line 2: attributes['self_is_result']: 1: selfIsResult is true")


def test_a_ttk_cell_is_never_evaluated(tmp_path, cli_inproc, check_error, monkeypatch):
    monkeypatch.chdir(tmp_path)
    evil = "__import__('pathlib').Path('PWNED').touch()"
    path = write_ttk(tmp_path / "t.csv", [ttk_row(tensor_dtypes=evil)])
    check_error(cli_inproc("cases", path), 2, "line 2: tensor_dtypes:", "is not a Python literal")
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("make,fragment", [
    (lambda p: p.write_text(""), "empty file (a TTK table starts with a header line)"),
    (lambda p: p.write_text(TTK_HEADER + "\nLR,aclnnLeakyRelu,\"" + "x" * 200_000 + "\"\n"),
     "line 2: not CSV (field larger than field limit"),
    (lambda p: p.write_text(TTK_HEADER + ",api_name\n"), "line 1: header: column(s) api_name appear twice"),
    (lambda p: p.write_text(TTK_HEADER.replace(",absolute_precision", "") + "\n"),
     "line 1: header: missing column(s) absolute_precision"),
    (lambda p: p.write_text(TTK_HEADER + "\n" + TTK_ROW.rsplit(",", 1)[0] + "\n"),
     "line 2: row: 11 fields, the header has 12 (missing absolute_precision)"),
    (lambda p: p.write_text(TTK_HEADER + "\n" + TTK_ROW + ",1\n"), "line 2: row: 13 fields, the header has 12"),
])
def test_a_malformed_ttk_file(make, fragment, tmp_path, cli_inproc, check_error):
    path = tmp_path / "t.csv"
    make(path)
    check_error(cli_inproc("cases", path), 2, f"{path}: {fragment}")


def test_files_that_cannot_be_read(tmp_path, cli_inproc, check_error):
    check_error(cli_inproc("cases", tmp_path / "none.json"), 2, f"{tmp_path / 'none.json'}: no such file")
    check_error(cli_inproc("cases", tmp_path), 2, f"{tmp_path}: is a directory")
    latin = tmp_path / "l.csv"
    latin.write_bytes(b"testcase_name\n\xe9\n")
    check_error(cli_inproc("cases", latin), 2, f"{latin}: not UTF-8 text")
    other = tmp_path / "cases.txt"
    other.write_text("hello\n")
    check_error(cli_inproc("cases", other), 2, f"{other}: neither an ATK JSON suite (.json) nor a TTK CSV")


def test_the_real_process_reports_a_malformed_file_in_one_line(tmp_path, cli, check_error):
    path = write_atk(tmp_path / "s.json", [lr(0), _mutate(lr(1), "inputs.0.shape", [2, "3"])])
    res = cli("cases", path)
    check_error(res, 2, f"leakyops cases: error: {path}: case 1: input 'x' shape: [2, '3'] is not a list")
    assert res.stdout == ""


def test_keep_going_reports_malformed_cases_as_errors_and_runs_the_rest(tmp_path, cli_inproc):
    atk = write_atk(tmp_path / "s.json", [lr(0), _mutate(lr(1), "inputs.0.dtype", "fp8"), lr(2)])
    broken = tmp_path / "b.json"
    broken.write_text("[")
    ttk = write_ttk(tmp_path / "t.csv", [TTK_ROW, ttk_row(testcase_name="LR_2", api_name="Relu")])
    res, doc = run_json(cli_inproc, atk, broken, ttk, "--keep-going", tmp_path=tmp_path)
    assert res.returncode == 1, res.stderr
    assert "summary: 6 of 6 case(s) run: 3 passed, 0 failed, 3 error(s)" in res.stdout
    verdicts = {c["name"]: (c["verdict"], c["message"]) for c in doc["cases"]}
    assert verdicts["aclnnLeakyRelu_1"][0] == "ERROR"
    assert verdicts["aclnnLeakyRelu_1"][1].startswith(f"{atk}: case 1: input 'x' dtype: unknown dtype 'fp8'")
    assert verdicts[str(broken)][0] == "ERROR" and "bad JSON" in verdicts[str(broken)][1]
    assert verdicts["LR_2"][0] == "ERROR" and "line 3: api_name: unknown API 'Relu'" in verdicts["LR_2"][1]
    assert [verdicts[n][0] for n in ("aclnnLeakyRelu_0", "aclnnLeakyRelu_2", "LR_1")] == ["PASS"] * 3
    listed = cli_inproc("cases", atk, "--keep-going", "--list")
    assert listed.returncode == 1 and "ERROR" in listed.stdout


# --------------------------------------------------------------------------- options


def test_filter_selects_by_pattern_or_part_of_the_name(tmp_path, cli_inproc, check_error):
    path = write_atk(tmp_path / "s.json", [lr(i) for i in (1, 2, 11, 12, 21)])
    names = lambda res: [ln.split()[0] for ln in res.stdout.splitlines()[:-1]]  # noqa: E731
    assert names(cli_inproc("cases", path, "--list", "--filter", "*_1?")) == ["aclnnLeakyRelu_11",
                                                                              "aclnnLeakyRelu_12"]
    assert names(cli_inproc("cases", path, "--list", "--filter", "_2")) == ["aclnnLeakyRelu_2", "aclnnLeakyRelu_21"]
    assert names(cli_inproc("cases", path, "--list", "--filter", "*_1", "--filter", "Relu_2")) == [
        "aclnnLeakyRelu_1", "aclnnLeakyRelu_2", "aclnnLeakyRelu_21"]
    check_error(cli_inproc("cases", path, "--filter", "Prelu"), 2, "--filter Prelu matches none of the 5 case(s)")
    empty = write_atk(tmp_path / "e.json", [])
    check_error(cli_inproc("cases", empty), 2, "the files hold no case")


@pytest.mark.parametrize("args,fragment", [
    (["--jobs", "0"], "--jobs must be at least 1, got 0"),
    (["--soc", "Ascend310"], "invalid choice: 'Ascend310'"),
    (["--standard", "close"], "invalid choice: 'close'"),
    (["--seed", "-1"], "bad seed"),
    (["--json", "{tmp}/r", "--junit", "{tmp}/r"], "--json and --junit must be different files"),
    (["--json", "{tmp}/r", "--junit", "{tmp}/./r"], "--json and --junit must be different files"),
    (["--json", "{tmp}"], "--json {tmp}: is a directory"),
    (["--junit", "{tmp}/no/r.xml"], "cannot write --junit {tmp}/no/r.xml: no such directory {tmp}/no"),
])
def test_bad_options_stop_before_any_case(args, fragment, tmp_path, cli_inproc, check_error):
    path = write_atk(tmp_path / "s.json", [lr(0)])
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = cli_inproc("cases", path, *args)
    check_error(res, 2, fragment.replace("{tmp}", str(tmp_path)))
    assert "aclnnLeakyRelu_0" not in res.stdout


# --------------------------------------------------------------------------- the run


def test_a_run_prints_a_row_per_case_and_a_summary(tmp_path, cli_inproc):
    path = write_atk(tmp_path / "s.json", [lr(0, "bf16", (2, 3)), lrb(1, "fp16", (7,)), prelu(2), prelu_bwd(3)])
    res = cli_inproc("cases", path, "--seed", "5")
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "leakyops cases: 4 case(s) from 1 file(s); soc Ascend910B, seed 5, jobs 1"
    assert lines[1].split() == ["case", "api", "dtype", "shape", "status", "verdict", "worst", "err", "time"]
    row = lines[2].split()
    assert row[:3] == ["aclnnLeakyRelu_0", "aclnnLeakyRelu", "bfloat16"] and row[-4:-1] == ["0", "PASS", "0"]
    assert lines[3].split()[:3] == ["aclnnLeakyReluBackward_1", "aclnnLeakyReluBackward", "float16"]
    assert lines[-1].startswith("summary: 4 of 4 case(s) run: 4 passed, 0 failed, 0 error(s) in ")


def test_a_case_the_api_rejects_fails_with_its_status_and_message(tmp_path, cli_inproc):
    path = write_atk(tmp_path / "s.json", [lr(0, "bf16"), lr(1, "fp16"), lrb(2, self_is_result=True, a=-0.5),
                                           prelu(3, wshape=(3,)), lr(4, shape=(1,) * 9)])
    res, doc = run_json(cli_inproc, path, "--soc", "Ascend910", tmp_path=tmp_path)
    assert res.returncode == 1
    got = {c["name"]: (c["verdict"], c["status"], c["message"]) for c in doc["cases"]}
    assert got["aclnnLeakyRelu_0"] == ("FAIL", 161002, "[161002] aclnnLeakyReluGetWorkspaceSize: self dtype DT_BF16"
                                                       " should be in dtype support list [DT_FLOAT, DT_FLOAT16,"
                                                       " DT_DOUBLE].")
    assert got["aclnnLeakyRelu_1"][:2] == ("PASS", 0)
    assert got["aclnnLeakyReluBackward_2"][:2] == ("FAIL", 161002)
    assert "In-place leakyRelu backward calculation is triggered with a negativeSlope" in got[
        "aclnnLeakyReluBackward_2"][2]
    assert got["aclnnPrelu_3"][:2] == ("FAIL", 161002) and "weight tensor size" in got["aclnnPrelu_3"][2]
    assert got["aclnnLeakyRelu_4"][:2] == ("FAIL", 161002) and "dim num 9 should be <= 8" in got["aclnnLeakyRelu_4"][2]
    assert "aclnnLeakyRelu_0 (" in res.stdout and "FAIL: aclnn status 161002: [161002]" in res.stdout
    assert "summary: 5 of 5 case(s) run: 1 passed, 4 failed, 0 error(s)" in res.stdout


def test_a_shape_within_int64_is_read(tmp_path):
    """The int64 bound of the reader is not narrower than aclnn's."""
    for shape in ([2 ** 63 - 1], [2 ** 31, 2 ** 32 - 1], [0, 2 ** 63 - 1, 2 ** 63 - 1]):
        (case,) = read_suite(str(write_atk(tmp_path / "s.json", [lr(0, shape=shape)]))).cases
        assert not case.error and case.tensor("self").shape == tuple(shape), case.error


@pytest.mark.parametrize("make,kind", [(lambda: lr(0, shape=(200_000,)), "flat"),
                                       (lambda: prelu(0, shape=(200_000, 1), wshape=(1,)), "rows")])
def test_the_chunks_are_made_as_the_run_goes(make, kind, tmp_path):
    """A case's chunks are not listed up front (2**62 elements would never finish listing):
    200,000 chunks of one element cost no memory until they are taken."""
    (case,) = read_suite(str(write_atk(tmp_path / "s.json", [make()]))).cases
    tracemalloc.start()
    try:
        got, parts = _run._chunks(case, APIS[case.api], 1)
        first = next(parts)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (got, first) == (kind, (0, 1))
    assert peak < 100_000, peak  # a list of the chunks: about 20 MB
    assert sum(1 for _ in parts) == 200_000 - 1


def test_the_api_sees_the_full_shape_though_the_case_runs_in_chunks(tmp_path):
    """A 9-D tensor runs in 1-D chunks, which the API would take: the first phase on the
    full shape is what rejects it."""
    (case,) = read_suite(str(write_atk(tmp_path / "s.json", [lr(0, shape=(2,) * 9)]))).cases
    result = _run.run_case(case, chunk=64)
    assert (result.verdict, result.status) == ("FAIL", 161002) and "dim num 9" in result.message
    (case,) = read_suite(str(write_atk(tmp_path / "s.json", [lr(0, shape=(2,) * 8)]))).cases
    assert _run.run_case(case, chunk=64).verdict == "PASS"


def test_a_case_the_golden_rejects_is_an_error(tmp_path, cli_inproc):
    """The API's check (``ToDouble() < 0``) lets a NaN slope through with selfIsResult;
    PyTorch's refuses it, so the golden cannot be made."""
    path = write_atk(tmp_path / "s.json", [lrb(0, self_is_result=True, a=["nan"])])
    res, doc = run_json(cli_inproc, path, tmp_path=tmp_path)
    assert res.returncode == 1
    (case,) = doc["cases"]
    assert (case["verdict"], case["status"]) == ("ERROR", 0) and case["message"].startswith("golden: ")


def test_verdicts_follow_the_case_standard_or_the_override(tmp_path, cli_inproc):
    """aclnn converts the slope to float32 (ToFloat) for a float64 tensor; PyTorch keeps it
    in float64: the results differ in the last bits, which the suites' relative-error
    standard accepts and exact does not."""
    path = write_atk(tmp_path / "s.json", [lrb(0, "fp64", (1000,), "fp64", (0, 1)), lr(1, "fp32", (100,))])
    res, doc = run_json(cli_inproc, path, tmp_path=tmp_path)
    assert res.returncode == 0, res.stdout
    lrb_case = doc["cases"][0]
    assert lrb_case["standards"][0]["standard"] == "relative-error"
    assert lrb_case["standards"][0]["source"] == 'ATK acc "single_bm"'
    (out,) = lrb_case["outputs"]
    assert out["passed"] and 0 < out["max_rel"] < 1e-7 and out["details"]["MERE"] < 2 ** -13
    assert doc["cases"][1]["standards"][0]["standard"] == "double-thousandth"
    assert doc["cases"][1]["outputs"][0]["details"]["rtol"] == 1e-4  # float32's default
    res, doc = run_json(cli_inproc, path, "--standard", "exact", tmp_path=tmp_path)
    assert res.returncode == 1
    first = doc["cases"][0]
    assert first["verdict"] == "FAIL" and first["standards"][0]["source"] == "--standard"
    assert first["message"].startswith("out: exact fails: ") and "elements differ" in first["message"]
    assert doc["cases"][1]["verdict"] == "PASS"  # float32: aclnn's slope is PyTorch's
    assert "aclnnLeakyReluBackward_0 (" in res.stdout and ": FAIL: out: exact fails" in res.stdout
    res, _ = run_json(cli_inproc, path, "--standard", "ratio", tmp_path=tmp_path)
    assert res.returncode == 0


def test_the_standard_override_lets_an_unknown_case_rule_through(tmp_path, cli_inproc):
    path = write_atk(tmp_path / "s.json", [lr(0, acc="binary_equal")])
    assert cli_inproc("cases", path).returncode == 2
    assert cli_inproc("cases", path, "--standard", "exact").returncode == 0


def test_every_api_and_layout_runs_in_chunks_as_it_runs_whole(tmp_path):
    """Chunks take the same inputs as one draw: the comparisons are the same whatever the
    chunk size (to the last figure, but for MERE, a mean summed chunk by chunk)."""
    cases = [lr(0, "bf16", (37, 29)), lrb(1, "fp64", (53, 11), "fp64", (0, 1)), prelu(2, "fp16", (41, 3, 7), (3,)),
             prelu_bwd(3, "fp32", (9, 4, 5), (4,))]
    ttk = write_ttk(tmp_path / "t.csv", [ttk_row(api_name="aclnnInplaceLeakyRelu", tensor_dtypes="('float32',)",
                                                 tensor_view_shapes="((31, 7))", output_dtypes="('float32',)"),
                                         ttk_row(testcase_name="BW", api_name="aclnnLeakyReluBackward",
                                                 tensor_dtypes="('float16', 'float16', 'float16')",
                                                 tensor_view_shapes="((1, 7), (5, 7), (5, 7))",
                                                 input_data_ranges="((-1, 1), (-1, 1))", output_dtypes="('float16',)",
                                                 absolute_precision="0.001")])
    all_cases = read_suite(str(write_atk(tmp_path / "s.json", cases))).cases + read_suite(str(ttk)).cases
    for case in all_cases:
        assert not case.error, case.error
        whole = _run.run_case(case, seed=9)
        for chunk in (7, 64):
            seen = []
            part = _run.run_case(case, seed=9, chunk=chunk, progress=seen.append)
            assert part.verdict == whole.verdict == "PASS", (case.name, part.message)
            assert part.values == whole.values
            for (_, a), (_, b) in zip(part.comparisons, whole.comparisons, strict=True):
                a, b = a.to_dict(), b.to_dict()
                assert a["details"].pop("MERE", 0) == pytest.approx(b["details"].pop("MERE", 0), rel=1e-12)
                assert a == b
            assert sum(seen) == case.elements
        assert whole.worst is not None


def test_inputs_depend_on_the_seed_and_the_case_not_on_what_else_runs(tmp_path, cli_inproc):
    path = write_atk(tmp_path / "s.json", [lrb(0, "fp64", (500,), "fp64", (0, 1)), lrb(1, "fp64", (500,), "fp64",
                                                                                          (0, 1))])
    _, alone = run_json(cli_inproc, path, "--filter", "_1", tmp_path=tmp_path)
    _, both = run_json(cli_inproc, path, tmp_path=tmp_path)
    _, other_seed = run_json(cli_inproc, path, "--seed", "1", tmp_path=tmp_path)
    value = lambda doc, i: doc["cases"][i]["values"][0]["value"]  # noqa: E731
    assert value(alone, 0) == value(both, 1) != value(both, 0)
    assert alone["cases"][0]["outputs"] == both["cases"][1]["outputs"]
    assert value(other_seed, 1) != value(both, 1)


def test_the_json_and_junit_reports(tmp_path, cli_inproc):
    path = write_atk(tmp_path / "s.json", [lr(0, "bf16"), lr(1, "fp32"), _mutate(lr(2), "inputs.0.dtype", "fp8")])
    junit = tmp_path / "r.xml"
    junit.write_text("old")
    res, doc = run_json(cli_inproc, path, "--soc", "Ascend910", "--keep-going", "--junit", junit, tmp_path=tmp_path)
    assert res.returncode == 1
    assert doc["format"] == "leakyops-cases/1" and doc["soc"] == "Ascend910" and doc["interrupted"] is False
    assert doc["summary"] == {"pass": 1, "fail": 1, "error": 1, "run": 3, "selected": 3}
    passed = doc["cases"][1]
    assert passed["tensors"][0] == {"param": "self", "label": "x", "dtype": "float32", "shape": [4, 5],
                                    "format": "ND", "range": "[-7, 7]"}
    assert passed["values"][0]["param"] == "negativeSlope" and 0 <= passed["values"][0]["value"] <= 1
    assert passed["outputs"][0]["output"] == "out" and passed["outputs"][0]["elements"] == 20
    root = ET.fromstring(junit.read_text())
    assert (root.tag, root.get("tests"), root.get("failures"), root.get("errors")) == ("testsuites", "3", "1", "1")
    (suite,) = root
    assert suite.get("name") == str(path)
    tcs = list(suite)
    assert [tc.get("name") for tc in tcs] == ["aclnnLeakyRelu_0", "aclnnLeakyRelu_1", "aclnnLeakyRelu_2"]
    assert tcs[0].find("failure").get("message").endswith("DT_DOUBLE].")
    assert tcs[1].find("failure") is None and tcs[1].find("error") is None
    assert "unknown dtype 'fp8'" in tcs[2].find("error").get("message")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_reports_are_written_whole(tmp_path, cli_inproc, check_error, monkeypatch):
    path = write_atk(tmp_path / "s.json", [lr(0)])
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    report.write_text("old")
    report.chmod(0o640)
    res = cli_inproc("cases", path, "--json", report, "--junit", junit)
    assert res.returncode == 0, res.stderr
    assert json.loads(report.read_text())["summary"]["pass"] == 1 and ET.fromstring(junit.read_text()).get("tests") == "1"
    assert report.stat().st_mode & 0o777 == 0o640  # the file replaced keeps its permissions
    umask = os.umask(0)
    os.umask(umask)
    assert junit.stat().st_mode & 0o777 == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.xml", "s.json"]
    before = report.read_bytes(), junit.read_bytes()

    def fails(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    monkeypatch.setattr(os, "fsync", fails)  # the first report's flush to the disk fails
    res = cli_inproc("cases", path, "--seed", "1", "--json", report, "--junit", junit)
    check_error(res, 2, f"leakyops cases: error: cannot write {report}: {os.strerror(errno.EIO)}")
    assert (report.read_bytes(), junit.read_bytes()) == before  # neither report replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.xml", "s.json"]

    def interrupted(fd):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "fsync", interrupted)
    res = cli_inproc("cases", path, "--seed", "1", "--json", report, "--junit", junit)
    assert res.returncode == 130 and res.stderr.strip() == "leakyops cases: interrupted", res.stderr
    assert (report.read_bytes(), junit.read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.xml", "s.json"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_report_on_a_full_device_is_status_2_naming_it(tmp_path, cli_inproc, check_error):
    """(A full filesystem: tests/cli/test_safety.py.)"""
    path = write_atk(tmp_path / "s.json", [lr(0)])
    full = os.strerror(errno.ENOSPC)
    (tmp_path / "r.xml").symlink_to("/dev/full")
    for opt, target in (("--json", "/dev/full"), ("--junit", tmp_path / "r.xml")):
        res = cli_inproc("cases", path, opt, target)
        check_error(res, 2, f"leakyops cases: error: cannot write /dev/full: {full}")
        assert "aclnnLeakyRelu_0" in res.stdout  # the case ran; its report could not be written


def _refuses_files(directory: Path) -> bool:
    try:
        os.close(os.open(directory / ".probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except OSError:
        return True
    os.unlink(directory / ".probe")
    return False


def test_a_report_in_an_unwritable_directory_stops_before_any_case(tmp_path, cli_inproc, check_error):
    path = write_atk(tmp_path / "s.json", [lr(0)])
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        if not _refuses_files(locked):  # root writes anywhere, but not into sysfs
            locked = Path("/sys")
            if not _refuses_files(locked):
                pytest.skip("no unwritable directory here (root, and no sysfs)")
        for opt in ("--json", "--junit"):
            res = cli_inproc("cases", path, opt, locked / "r")
            check_error(res, 2, f"leakyops cases: error: cannot write {opt} {locked / 'r'}: ")
            assert "aclnnLeakyRelu_0" not in res.stdout
    finally:
        (tmp_path / "ro").chmod(0o755)


def test_a_bitwise_equal_chunk_is_compared_as_the_slow_path_would():
    """The comparison's shortcut for chunks equal to the bit gives the same figures."""
    rng = np.random.default_rng(0)
    golden = rng.uniform(-3, 3, 4096).astype(np.float32)
    golden[[5, 700]] = [np.nan, np.inf]
    actual = golden.copy()
    actual[3000] = np.nextafter(actual[3000], np.float32(9))
    actual[3500] = -actual[3500]
    for standard in _verify.STANDARDS:
        chunked = _verify.Comparer(standard, golden.dtype, golden.shape)
        for lo in range(0, golden.size, 512):  # six of the eight chunks are equal to the bit
            chunked.update(actual[lo:lo + 512], golden[lo:lo + 512])
        assert chunked.result().to_dict() == _verify.compare(actual, golden, standard, chunk=1 << 20).to_dict()
        equal = _verify.Comparer(standard, golden.dtype, golden.shape)
        equal.update(golden, golden.copy())
        assert equal.result().passed and equal.result().over == 0


# --------------------------------------------------------------------------- processes


def test_jobs_give_the_same_results_as_one_process(tmp_path, cli_inproc):
    path = write_atk(tmp_path / "s.json", [lr(i, ("bf16", "fp16", "fp32")[i % 3], (50, 40)) for i in range(5)]
                     + [lrb(5, "fp64", (300,), "fp64", (0, 1)), prelu_bwd(6)])
    res1, one = run_json(cli_inproc, path, tmp_path=tmp_path)
    res2, two = run_json(cli_inproc, path, "--jobs", "2", tmp_path=tmp_path)
    assert res1.returncode == res2.returncode == 0, res2.stdout + res2.stderr
    assert "jobs 2" in res2.stdout.splitlines()[0]
    strip = lambda doc: [{k: v for k, v in c.items() if k != "seconds"} for c in doc["cases"]]  # noqa: E731
    assert strip(one) == strip(two)
    rows = lambda res: sorted(" ".join(ln.split()[:-1]) for ln in res.stdout.splitlines()[2:-1])  # noqa: E731
    assert rows(res1) == rows(res2)


def _popen(args, **kw):
    """The command in a child whose SIGINT is Python's (a background job may inherit it ignored)."""
    env = dict(os.environ)
    env.pop("LEAKYOPS_DEBUG", None)
    return subprocess.Popen([sys.executable, "-m", "leakyops", *map(str, args)], env=env, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)


@pytest.mark.parametrize("jobs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_ctrl_c_stops_with_a_report_of_the_finished_cases(jobs, tmp_path):
    # two quick cases, then two of 2e9 elements that take minutes (in chunks: little memory)
    path = write_atk(tmp_path / "s.json", [lr(0), lr(1), lr(2, "fp32", (2_000_000_000,)),
                                           lr(3, "fp32", (2_000_000_000,))])
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    proc = _popen(["cases", path, "--jobs", jobs, "--json", report, "--junit", junit],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lines = []
        deadline = time.monotonic() + 120
        while len([ln for ln in lines if "PASS" in ln]) < 2 and time.monotonic() < deadline:
            lines.append(proc.stdout.readline())
        time.sleep(1.0)  # into the long case
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (out, err)
    assert time.monotonic() - t0 < 30
    out = "".join(lines) + out
    assert "interrupted: 2 of 4 case(s) run: 2 passed, 0 failed, 0 error(s)" in out, out
    assert "Traceback" not in err
    doc = json.loads(report.read_text())
    assert doc["interrupted"] is True and [c["verdict"] for c in doc["cases"]][:2] == ["PASS", "PASS"]
    assert [c["verdict"] for c in doc["cases"]][2] == "NOT RUN"
    skipped = ET.fromstring(junit.read_text()).findall(".//skipped")
    assert [s.get("message") for s in skipped] == ["not run: interrupted"] * 2


def _workers(pid: int) -> list:
    """The worker processes of the command ``pid`` (multiprocessing's spawned children)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    workers = []
    for child in children:
        try:
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                workers.append(int(child))
        except OSError:  # it has just ended
            pass
    return workers


@pytest.mark.slow
def test_a_worker_that_dies_fails_its_case_and_the_others_run(tmp_path):
    path = write_atk(tmp_path / "s.json", [lr(0, "fp32", (3_000_000_000,)), lr(1), lr(2), lr(3)])
    proc = _popen(["cases", path, "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lines = []
        deadline = time.monotonic() + 120
        while len([ln for ln in lines if "PASS" in ln]) < 3 and time.monotonic() < deadline:
            lines.append(proc.stdout.readline())
        while len(_workers(proc.pid)) != 1 and time.monotonic() < deadline:
            time.sleep(0.2)  # the other worker has had its last task and ends
        workers = _workers(proc.pid)
        assert len(workers) == 1, workers  # the one running the large case
        os.kill(workers[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    out = "".join(lines) + out
    assert proc.returncode == 1, (out, err)
    assert "aclnnLeakyRelu_0 (" in out and "ERROR: the worker process died (exit code -9)" in out
    assert "summary: 4 of 4 case(s) run: 3 passed, 0 failed, 1 error(s)" in out


def test_the_progress_line_shows_on_a_terminal_only(tmp_path, cli, monkeypatch):
    """The progress line of the other commands (leakyops._cli_io.Progress): the cases done, the
    case, the share of the elements and the time left."""
    monkeypatch.setenv("LEAKYOPS_PROGRESS_AFTER", "0")
    path = write_atk(tmp_path / "s.json", [lr(0, "fp32", (4_000_000,)), lr(1, "fp16", (2_000_000,))])
    master, slave = pty.openpty()
    proc = _popen(["cases", path], stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read()
    proc.stdout.close()
    assert proc.wait(timeout=120) == 0
    os.close(master)
    term = b"".join(chunks).decode()
    # after the first case's one chunk (4e6 of 6e6 elements), before its row
    assert re.search(r"leakyops cases: 0/2 aclnnLeakyRelu_0  67% \(4\.0M of 6\.0M elements, \d+ s, about \d+ s left\)",
                     term), term
    assert "summary: 2 of 2" in out
    res = cli("cases", path)
    assert res.returncode == 0 and res.stderr == ""


@pytest.mark.slow
def test_a_large_case_runs_in_little_memory(tmp_path):
    """500 million float32 elements: 4 GB of self and out; the run holds a few chunks."""
    probe = ("import resource, sys\nfrom leakyops.cli import main\nstatus = main(sys.argv[1:])\n"
             "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)\nsys.exit(status)\n")
    peaks = {}
    for n in (1000, 500_000_000):
        path = write_atk(tmp_path / f"s{n}.json", [lr(0, "fp32", (n,))])
        res = subprocess.run([sys.executable, "-c", probe, "cases", str(path)], capture_output=True, text=True,
                             timeout=1800, check=False)
        assert res.returncode == 0, res.stdout + res.stderr
        peaks[n] = int(res.stdout.split("PEAK")[1])
    tensors = 500_000_000 * 4 * 2
    assert peaks[500_000_000] - peaks[1000] < 0.1 * tensors, peaks
