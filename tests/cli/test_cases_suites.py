"""``leakyops cases`` on suites equivalent to the ones ops-nn publishes for this family.

ops-nn keeps, beside each operator, ATK suites (``atk_aclnnLeakyRelu.json``, 201 cases;
``atk_aclnnLeakyReluBackward.json``, 250; ``atk_aclnnPrelu.json``, 15;
``atk_aclnnPreluBackward.json``, 11) and, for Ascend 950, TTK tables
(``ttk_aclnn_leaky_relu_st.csv``, ``ttk_aclnn_inplace_leaky_relu_st.csv``, 5 rows each). The
files are not copied here: the builders below write suites of the same cases' kind — the
same APIs, executors, fields, dtypes (scalar dtypes too), range forms (``[low, high]``,
constants, ``"inf"``/``"-inf"``/``"nan"`` and their one-element lists, ATK's normal ``nd``
objects), attributes, precision fields and ranks up to 8 — with small shapes in the default
run and, under ``slow``, the published suites' large shapes (every case of 1e7 elements and
more, up to 867 million; the two Prelu suites as published), so that the whole files' work is
run.

``LEAKYOPS_OPS_NN=/path/to/ops-nn`` also runs the published files of a checkout (slow).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from leakyops import _verify
from leakyops._cases._apis import APIS
from leakyops._cases._read import read_suite
from leakyops._cases._run import case_inputs

# --------------------------------------------------------------------------- the builders

# shapes of the published suites' cases with 1e7 elements and more, which are their last cases
# (aclnnLeakyRelu ids 178-200, aclnnLeakyReluBackward ids 208-249)
LEAKY_RELU_LARGE = [
    ("fp32", [104, 8, 6, 73, 2, 7, 2]), ("fp16", [10, 3, 2, 63, 5, 9, 62]), ("fp32", [7, 10, 5, 4, 10, 2, 52, 8]),
    ("fp16", [8, 188, 6, 7, 2, 8, 19]), ("fp32", [3, 6, 9, 6, 5, 67, 7, 9]), ("bf16", [3, 9, 9, 7, 65, 73, 3]),
    ("bf16", [9, 9, 4096, 93]), ("fp16", [5, 8, 4, 2, 4096, 8, 3, 1]), ("fp16", [74, 6, 80, 1, 9, 10, 10]),
    ("fp32", [100, 10, 4, 5, 4, 100, 4]), ("fp32", [9, 6, 232, 4096]), ("bf16", [1024, 6, 49, 4, 11, 4]),
    ("fp32", [7, 94, 1024, 4, 4, 6]), ("fp16", [4, 9, 2, 22, 65, 4, 3, 54]), ("fp32", [8, 4, 75, 1, 9, 2, 237, 7]),
    ("bf16", [10, 176, 6, 1, 1024, 9]), ("fp16", [5, 52, 2, 8, 82, 8, 10, 5]),
    ("fp32", [10, 5, 6, 6, 1024, 6, 3, 5]), ("fp16", [16, 10, 2, 8, 9, 197, 10, 4]),
    ("fp32", [1, 1024, 4, 4, 53, 3, 75]), ("bf16", [4, 5, 72, 8, 2, 4, 3, 2048]),
    ("fp32", [8192, 9, 8, 39, 3, 3, 4]), ("bf16", [9, 4096, 4, 1, 7, 6, 140]),
]
LEAKY_RELU_BACKWARD_LARGE = [
    ("fp64", [2, 5, 1, 1024, 1024, 1]),
    ("fp16", [5, 10, 8192, 3, 9]), ("fp64", [10, 73, 2, 1024, 8]), ("fp16", [5, 5, 40, 3, 6, 6, 16, 7]),
    ("fp32", [3, 6, 41, 242, 70]), ("fp64", [9, 2, 7, 60, 212, 2, 4, 1]), ("fp64", [2, 5, 7, 1024, 5, 10, 5]),
    ("bf16", [1, 1, 7, 7, 3, 3, 10, 4096]), ("fp64", [2, 80, 6, 19, 8, 151]), ("fp16", [56, 7, 7, 4, 2048]),
    ("fp32", [1, 3, 72, 1024, 7, 5, 3]), ("bf16", [24, 8, 5, 5, 6, 9, 112]), ("bf16", [4096, 4, 2048]),
    ("fp64", [8192, 4096]), ("bf16", [124, 3, 4, 6, 4096]), ("bf16", [9, 2048, 24, 3, 7, 1, 4]),
    ("fp32", [1, 2, 223, 7, 6, 2048]), ("fp16", [9, 1, 10, 7, 2, 1024, 5, 6]), ("bf16", [5, 8, 1024, 56, 18]),
    ("bf16", [5, 4096, 2048]), ("bf16", [5, 3, 2, 5, 8192, 35]), ("fp64", [3, 31, 5, 4096, 4, 6]),
    ("fp16", [6, 2, 8192, 2, 2, 1, 127]), ("fp16", [52, 7, 202, 81, 9]), ("fp16", [213, 9, 4096, 7]),
    ("fp16", [84, 47, 10, 1, 191, 8]), ("bf16", [6, 1024, 3, 10, 5, 2, 9, 4]), ("fp16", [8192, 4, 2048]),
    ("bf16", [1, 4096, 1, 9, 3, 2, 2, 185]), ("fp64", [1024, 1, 1, 8, 10, 1024]), ("fp64", [37, 1024, 62, 4, 9]),
    ("bf16", [1024, 6, 2048, 10]), ("bf16", [2048, 25, 7, 79, 5, 1]), ("fp32", [20, 1024, 8192]),
    ("bf16", [4096, 2, 3, 7, 41, 4, 9]), ("fp64", [18, 7, 7, 49, 8192]), ("fp64", [4096, 5, 8, 8, 8, 5, 7]),
    ("fp64", [3, 3, 206, 4096, 5, 4, 3, 1]), ("bf16", [6, 30, 7, 7, 22, 235, 1, 10]),
    ("fp16", [2048, 1024, 10, 5, 6]), ("fp16", [60, 5, 5, 10, 8, 138, 9, 5]), ("fp16", [7, 56, 4, 5, 10, 164, 2, 33]),
]
ND = {"name": "nd", "mean": [-100, 100], "std": [1, 25]}

# the published Prelu suites whole (id, dtype, self's shape, weight's shape, the inputs' ranges):
# under `slow` they run as published (at most 5.0 million and 75,411 elements); the default
# run takes small shapes instead
PRELU_PUBLISHED = [
    (0, "bf16", [], [1], ND, ["inf"]), (1, "fp16", [], [1], ND, ND), (2, "bf16", [15], [1], ND, ND),
    (3, "fp32", [255, 1], [1], ND, ND), (4, "fp16", [7, 17, 7], [17], ND, ND),
    (5, "fp32", [19, 21, 17, 1], [21], ND, ND), (6, "fp16", [1, 7, 1, 1, 16, 1, 9, 15], [7], ND, ND),
    (7, "fp32", [1, 17, 15, 8, 1, 1, 1, 16], [17], ND, ND), (8, "bf16", [256, 9, 17], [9], ND, ND),
    (9, "bf16", [1, 16, 15, 1, 256], [16], ["-inf"], ["inf"]),
    (10, "fp32", [17, 256, 1, 1, 20], [256], ["-inf"], ["-inf"]), (11, "fp16", [8, 1, 1, 8, 19, 17, 7], [1], ND, ND),
    (12, "bf16", [21, 16, 1, 19, 1, 8, 1, 8], [16], ND, ND), (13, "fp16", [9, 8, 17, 20, 1, 20], [8], ["inf"], ND),
    (14, "fp32", [8, 17, 1, 1, 1, 9, 257, 16], [17], ["nan"], ["nan"]),
]
PRELU_BACKWARD_PUBLISHED = [  # (id, dtype, shape, weight's shape, gradOutput's, self's and weight's ranges)
    (0, "fp32", [7], [1], ["nan"], [-10, 10], [-10, 10]), (1, "bf16", [1, 9], [9], [-10, 10], [-10, 10], [-10, 10]),
    (3, "fp16", [7, 256, 1], [256], ["inf"], ["nan"], [-10, 10]),
    (4, "bf16", [255, 1, 1, 8, 1, 1, 1, 1], [1], [-10, 10], [-10, 10], [-10, 10]),
    (5, "fp32", [1, 17, 20, 21, 1], [17], [-10, 10], [-10, 10], [-10, 10]),
    (7, "bf16", [7, 17, 9, 15], [17], ["-inf"], [-10, 10], [-10, 10]),
    (8, "fp32", [1, 8, 257, 1, 15], [8], [-10, 10], [-10, 10], [-10, 10]),
    (9, "fp16", [1, 7, 1, 1, 15, 17, 1, 20], [7], [-10, 10], [-10, 10], [-10, 10]),
    (10, "fp32", [16, 1, 7, 1, 21, 1, 21, 1], [1], ["-inf"], [-10, 10], [-10, 10]),
    (11, "bf16", [7, 8, 8, 8, 21, 1], [8], [-10, 10], ["-inf"], [-10, 10]),
    (12, "fp32", [19, 1, 1, 1, 21, 9, 21], [1], [-10, 10], [-10, 10], [-10, 10]),
]


def _small_shape(i: int, rank: int, channels: int | None = None) -> list:
    """A small shape of ``rank`` (at most a few thousand elements), the same for the same ``i``."""
    rng = np.random.default_rng(i)
    top = max(2, int(2000 ** (1 / max(rank, 1))))
    shape = [int(d) for d in rng.integers(1, top + 1, rank)]
    if channels is not None and rank >= 2:
        shape[1] = channels
    return shape


def _tensor(name, dtype, shape, rng, backward=False):
    return {"name": name, "type": "tensor", "required": True, "dtype": dtype, "shape": shape, "range_values": rng,
            "backward": backward, "align_32B": None}


def _host(name, kind, dtype, rng):
    return {"name": name, "type": kind, "required": True, "dtype": dtype, "shape": None, "range_values": rng,
            "backward": False, "align_32B": None}


def _case(i, name, aclnn_name, api_type, acc, inputs):
    return {"id": i, "name": name, "aclnn_name": aclnn_name, "api_type": api_type,
            "standard": {"acc": acc, "perf": "not_key"}, "inputs": inputs}


def _sized(i: int, n: int, large: list, big: bool, small_dtype: str, rank: int):
    """The dtype and shape of case ``i`` of ``n``: its published large shape (the last
    ``len(large)`` cases, when ``big``), else a small shape."""
    k = i - (n - len(large))
    if big and k >= 0:
        return large[k]
    return small_dtype, _small_shape(i, rank)


def leaky_relu_suite(big: bool = False) -> list:
    x_ranges = [[-7, 7]] * 12 + [8, "-inf", "inf", -8, "nan", ["-inf"], ["nan"], ["inf"]]
    a_ranges = [0, 1] * 6 + [["-inf"], ["nan"], ["inf"], [0, 1]]
    cases = []
    for i in range(201):
        dtype, shape = _sized(i, 201, LEAKY_RELU_LARGE, big, ("bf16", "fp16", "fp32")[i % 3], 1 + i % 8)
        cases.append(_case(i, "torch.nn.LeakyRelu", "LeakyRelu", "aclnn_leaky_relu", "default", [
            _tensor("x", dtype, shape, x_ranges[i % len(x_ranges)]),
            _host("a", "scalar", "fp32", a_ranges[(7 * i) % len(a_ranges)])]))
    return cases


def leaky_relu_backward_suite(big: bool = False) -> list:
    g_ranges = ["inf", "nan", 8, [-7, 7], -8, "-inf", ["inf"], ["nan"], ["-inf"]]
    x_ranges = ["nan", [-7, 7], -8, "-inf", "inf", 8, ["-inf"], ["nan"], ["inf"]]
    scalar_dtypes = ("bf16", "int32", "fp32", "fp16", "fp64")
    slopes = [1, 0, 1, 0, [0, 1]]
    self_is_result = [False, True, False, True, ["inf"], False, True, ["-inf"]]
    cases = []
    for i in range(250):
        dtype, shape = _sized(i, 250, LEAKY_RELU_BACKWARD_LARGE, big, ("fp16", "fp32", "fp64", "bf16")[i % 4],
                              1 + (3 * i) % 8)
        cases.append(_case(i, "torch.ops.aten.leaky_relu_backward", "aclnnLeakyReluBackward",
                           "aclnn_leaky_relu_backward", "single_bm", [
                               _tensor("gradOutput", dtype, shape, g_ranges[i % len(g_ranges)]),
                               _tensor("x", dtype, shape, x_ranges[(5 * i) % len(x_ranges)]),
                               _host("a", "scalar", scalar_dtypes[i % 5], slopes[(3 * i) % len(slopes)]),
                               _host("selfIsResult", "attr", "bool", self_is_result[i % len(self_is_result)])]))
    return cases


def _prelu_case(i, dtype, shape, wshape, xr, ar):
    return _case(i, "torch.nn.functional.prelu", "aclnnPrelu", "function_perlu", "single_bm", [
        _tensor("x", dtype, shape, xr, backward=True), _tensor("a", dtype, wshape, ar, backward=True)])


def _prelu_backward_case(i, dtype, shape, wshape, gr, xr, ar):
    return _case(i, "torch.ops.aten.prelu_backward", "aclnnPreluBackward", "function_perlu_backward", "single_bm",
                 [_tensor("gradOutput", dtype, shape, gr), _tensor("x", dtype, shape, xr),
                  _tensor("a", dtype, wshape, ar)])


def prelu_suite(big: bool = False) -> list:
    if big:
        return [_prelu_case(*row) for row in PRELU_PUBLISHED]
    ranks = [0, 0, 1, 2, 3, 4, 8, 8, 3, 5, 5, 7, 8, 6, 8]
    specials = {0: (ND, ["inf"]), 9: (["-inf"], ["inf"]), 10: (["-inf"], ["-inf"]), 13: (["inf"], ND),
                14: (["nan"], ["nan"])}
    cases = []
    for i, rank in enumerate(ranks):
        dtype = ("bf16", "fp16", "fp32")[i % 3]
        channels = 1 + (7 * i) % 17
        shape = _small_shape(i, rank, channels)
        wshape = [channels] if rank >= 2 and i % 4 else [1]
        cases.append(_prelu_case(i, dtype, shape, wshape, *specials.get(i, (ND, ND))))
    return cases


def prelu_backward_suite(big: bool = False) -> list:
    if big:
        return [_prelu_backward_case(*row) for row in PRELU_BACKWARD_PUBLISHED]
    ranks = [1, 2, 3, 8, 5, 4, 5, 8, 8, 6, 7]
    specials = {0: (["nan"], [-10, 10]), 2: (["inf"], ["nan"]), 5: (["-inf"], [-10, 10]), 8: (["-inf"], [-10, 10]),
                9: ([-10, 10], ["-inf"])}
    cases = []
    for k, rank in enumerate(ranks):
        i = k + (k >= 2) + (k >= 5)  # the published ids skip 2 and 6
        dtype = ("fp32", "bf16", "fp16")[k % 3]
        channels = 1 + (5 * k) % 9
        shape = _small_shape(100 + k, rank, channels)
        wshape = [channels] if rank >= 2 and k % 3 else [1]
        gr, xr = specials.get(k, ([-10, 10], [-10, 10]))
        cases.append(_prelu_backward_case(i, dtype, shape, wshape, gr, xr, [-10, 10]))
    return cases


# the two Ascend 950 TTK tables: their shapes, input ranges and slopes
TTK_ROWS = [
    ("float32", (196, 2, 1, 76, 1, 1), (-1000, -10), 0.0006944149602797177),
    ("float16", (192, 64, 1, 1, 1, 5, 1), (0, 0), 0.007353729707176569),
    ("float32", (1, 1, 4, 11, 48, 17), (-3.4e+38, 3.4e+38), 0.003578863762855549),
    ("float16", (139, 3, 1, 1, 1, 192), (-10, -2), 0.001118463241933789),
    ("float16", (1, 139, 1, 28, 1, 22, 1), (-1, 1), 0.006011051318991595),
]


def _precision(dtype: str) -> str:
    return "0.0001" if dtype == "float32" else "0.001"


def ttk_leaky_relu_table() -> str:
    lines = ["testcase_name,api_name,tensor_dtypes,tensor_formats,tensor_view_shapes,input_data_ranges,"
             "output_tensor_indexes,output_dtypes,scalar_dtypes,scalar_data_ranges,absolute_precision"]
    for i, (dt, shape, rng, _) in enumerate(TTK_ROWS, 1):
        lines.append(f'LeakyRelu_{dt}_ND_fuzz_{i},aclnnLeakyRelu,"{(dt, dt)!r}","(\'ND\',)","{(shape, shape)!r}",'
                     f'"{(rng,)!r}","(-1,)","{(dt,)!r}",(\'float16\'),"(0, 1)",{_precision(dt)}')
    return "\n".join(lines) + "\n"


def ttk_inplace_leaky_relu_table() -> str:
    lines = ["testcase_name,api_name,tensor_dtypes,tensor_formats,tensor_view_shapes,input_data_ranges,"
             "output_tensor_indexes,output_dtypes,scalar_dtypes,scalar_data_ranges,attributes,absolute_precision"]
    for i, (dt, shape, rng, slope) in enumerate(TTK_ROWS, 1):
        lines.append(f'InplaceLeakyRelu_{dt}_ND_fuzz_{i},aclnnInplaceLeakyRelu,(\'{dt}\'),"(\'ND\',)","({shape!r})",'
                     f'"{(rng,)!r}","(-1,)","{(dt,)!r}",(\'float16\'),"(0, 1)",{{\'negative_slope\': {slope!r}}},'
                     f'{_precision(dt)}')
    return "\n".join(lines) + "\n"


SUITES = {  # file name -> (builder, published case count)
    "atk_aclnnLeakyRelu.json": (leaky_relu_suite, 201),
    "atk_aclnnLeakyReluBackward.json": (leaky_relu_backward_suite, 250),
    "atk_aclnnPrelu.json": (prelu_suite, 15),
    "atk_aclnnPreluBackward.json": (prelu_backward_suite, 11),
    "ttk_aclnn_leaky_relu_st.csv": (lambda big=False: ttk_leaky_relu_table(), 5),
    "ttk_aclnn_inplace_leaky_relu_st.csv": (lambda big=False: ttk_inplace_leaky_relu_table(), 5),
}


def write_suites(directory: Path, big: bool = False) -> list:
    paths = []
    for name, (build, _) in SUITES.items():
        content = build(big=big)
        path = directory / name
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def small_suites(tmp_path_factory):
    return write_suites(tmp_path_factory.mktemp("suites"))


# --------------------------------------------------------------------------- tests


def test_the_equivalent_suites_have_the_published_cases_kinds(small_suites):
    suites = {p.name: read_suite(str(p)) for p in small_suites}
    for name, (_, count) in SUITES.items():
        assert len(suites[name].cases) == count and not any(c.error for c in suites[name].cases), name
        assert suites[name].unread == {}, name
    lr = suites["atk_aclnnLeakyRelu.json"].cases
    assert {c.tensor("self").dtype for c in lr} == {"bfloat16", "float16", "float32"}
    assert {len(c.tensor("self").shape) for c in lr} == set(range(1, 9))
    assert {c.tensor("self").dist.kind for c in lr} == {"uniform", "const"}
    assert {c.standards[0][1].name for c in lr} == {"double-thousandth"}
    lrb = suites["atk_aclnnLeakyReluBackward.json"].cases
    assert {c.values[0].dtype for c in lrb} == {"bfloat16", "int32", "float32", "float16", "float64"}
    assert {c.standards[0][1].name for c in lrb} == {"relative-error"}
    prelu = suites["atk_aclnnPrelu.json"].cases
    assert {c.tensor("self").dist.kind for c in prelu} >= {"normal", "const"}
    assert {len(c.tensor("self").shape) for c in prelu} >= {0, 1, 8}
    assert all(c.notes for c in prelu)  # backward: true, recorded
    inplace = suites["ttk_aclnn_inplace_leaky_relu_st.csv"].cases
    assert [c.values[0].dist.low for c in inplace] == [row[3] for row in TTK_ROWS]


def test_the_builders_give_the_published_sizes_under_slow():
    """What the slow run covers (checked here without running it): the large cases of each
    published suite, by id, with their dtypes and shapes; the Prelu suites whole."""
    def sized(cases):
        return {c["id"]: (c["inputs"][0]["dtype"], c["inputs"][0]["shape"], math.prod(c["inputs"][0]["shape"]))
                for c in cases}
    lr, lrb = sized(leaky_relu_suite(big=True)), sized(leaky_relu_backward_suite(big=True))
    assert [i for i, (_, _, n) in lr.items() if n >= 10 ** 7] == list(range(178, 201))
    assert [i for i, (_, _, n) in lrb.items() if n >= 10 ** 7] == list(range(208, 250))
    assert lrb[208] == ("fp64", [2, 5, 1, 1024, 1024, 1], 10485760) and lrb[249][0] == "fp16"
    assert max(n for _, _, n in lr.values()) == 867041280 and max(n for _, _, n in lrb.values()) == 848601600
    prelu, prelu_bwd = prelu_suite(big=True), prelu_backward_suite(big=True)
    assert [c["id"] for c in prelu] == list(range(15))
    assert [c["id"] for c in prelu_bwd] == [0, 1, 3, 4, 5, 7, 8, 9, 10, 11, 12]
    elements = lambda cases: sum(math.prod(t["shape"]) for c in cases for t in c["inputs"])  # noqa: E731
    assert (elements(prelu), elements(prelu_bwd)) == (6319653, 587646)  # the published files' input elements
    assert max(n for _, _, n in sized(prelu).values()) == 5033088
    assert max(n for _, _, n in sized(prelu_bwd).values()) == 75411
    assert sized(prelu)[14][:2] == ("fp32", [8, 17, 1, 1, 1, 9, 257, 16])
    assert prelu[14]["inputs"][1]["shape"] == [17] and prelu[14]["inputs"][0]["range_values"] == ["nan"]


def test_every_case_of_the_equivalent_suites_passes(small_suites, tmp_path, cli_inproc):
    report = tmp_path / "r.json"
    res = cli_inproc("cases", *small_suites, "--soc", "Ascend950", "--json", report, "--junit", tmp_path / "r.xml")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    total = sum(count for _, count in SUITES.values())
    assert f"summary: {total} of {total} case(s) run: {total} passed, 0 failed, 0 error(s)" in res.stdout
    doc = json.loads(report.read_text())
    assert doc["summary"] == {"pass": total, "fail": 0, "error": 0, "run": total, "selected": total}
    by_file = {}
    for case in doc["cases"]:
        by_file[Path(case["file"]).name] = by_file.get(Path(case["file"]).name, 0) + 1
    assert by_file == {name: count for name, (_, count) in SUITES.items()}


def _torch_of(a):
    import torch

    if a.dtype.name == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


def _numpy_of(t, like):
    import torch

    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(like)
    return t.detach().numpy()


def _executor(api: str, arrays: dict, values: dict) -> dict:
    """What the published executors (and TTK's golden functions) compute, in PyTorch."""
    import torch

    t = {k: _torch_of(v) for k, v in arrays.items()}
    if api in ("aclnnLeakyRelu", "aclnnInplaceLeakyRelu"):
        x = t.get("self", t.get("selfRef"))
        return {"out" if "self" in t else "selfRef": torch.nn.LeakyReLU(values["negativeSlope"])(x)}
    if api == "aclnnLeakyReluBackward":
        return {"out": torch.ops.aten.leaky_relu_backward(t["gradOutput"], t["self"], values["negativeSlope"],
                                                          values["selfIsResult"])}
    if api == "aclnnPrelu":
        return {"out": torch.nn.functional.prelu(t["self"], t["weight"])}
    x = t["self"].clone().requires_grad_(True)
    w = t["weight"].clone().requires_grad_(True)
    torch.nn.functional.prelu(x, w).backward(t["gradOutput"])
    return {"gradInput": x.grad, "gradWeight": w.grad}


@pytest.mark.parametrize("every", [5, pytest.param(1, marks=pytest.mark.slow)], ids=["some", "all"])
def test_the_golden_is_what_the_vendor_executors_compute(every, small_suites):
    """The core's golden equals PyTorch's: bit for bit, and gradWeight (a sum) to the
    relative-error standard the suites use for it (every fifth case of each suite, or all)."""
    pytest.importorskip("torch")
    checked = 0
    for path in small_suites:
        for case in read_suite(str(path)).cases[::every]:
            arrays, values = case_inputs(case, seed=3)
            golden = APIS[case.api].golden(arrays, values)
            want = _executor(case.api, arrays, values)
            for param, ours in golden.items():
                theirs = _numpy_of(want[param], ours.dtype)
                standard = "relative-error" if param == "gradWeight" else "exact"
                cmp = _verify.compare(theirs.reshape(ours.shape), ours, standard)
                assert cmp.passed, (case.name, param, cmp.report_lines())
            checked += 1
    assert checked == sum(-(-count // every) for _, count in SUITES.values())


@pytest.mark.slow
def test_the_whole_suites_pass_at_their_published_sizes(tmp_path, cli):
    """Every case at the published suites' sizes (15.1 billion input elements in all: the
    large cases and the Prelu suites as published, the other small cases smaller), in two
    processes; a chunked case holds a few chunks of memory, the Prelu suites' whole cases
    (75,411 elements at most) twice their tensors."""
    paths = write_suites(tmp_path, big=True)
    res = cli("cases", *paths, "--jobs", "2", "--json", tmp_path / "r.json", timeout=5400)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    total = sum(count for _, count in SUITES.values())
    assert f"{total} of {total} case(s) run: {total} passed" in res.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    largest = max(doc["cases"], key=lambda c: math.prod(c["tensors"][0]["shape"]))
    assert math.prod(largest["tensors"][0]["shape"]) == 867041280 and largest["verdict"] == "PASS"


PUBLISHED = [
    "activation/leaky_relu/tests/st/aclnnLeakyRelu/atk_aclnnLeakyRelu.json",
    "activation/leaky_relu_grad/tests/st/aclnnLeakyReluBackward/atk_aclnnLeakyReluBackward.json",
    "activation/p_relu/tests/st/aclnnPrelu/atk_aclnnPrelu.json",
    "activation/p_relu_grad_update/tests/st/aclnnPreluBackward/atk_aclnnPreluBackward.json",
    "activation/leaky_relu/tests/st/arch35/ttk_aclnn_leaky_relu_st.csv",
    "activation/leaky_relu/tests/st/arch35/ttk_aclnn_inplace_leaky_relu_st.csv",
]


@pytest.mark.slow
@pytest.mark.parametrize("published", PUBLISHED, ids=[Path(p).name for p in PUBLISHED])
def test_the_published_files_of_a_checkout_pass(published, tmp_path, cli):
    """Each file of a checkout (a file the checkout lacks is a skip that names it: hicann/ops-nn
    may not have the ATK suites, which forks such as jbgztxdy/ops-nn do), with its published
    number of cases, every one passing."""
    root = os.environ.get("LEAKYOPS_OPS_NN")
    if not root:
        pytest.skip("set LEAKYOPS_OPS_NN to a checkout of ops-nn to run its published suites")
    path = Path(root) / published
    if not path.exists():
        pytest.skip(f"{published} is missing from {root}")
    count = SUITES[path.name][1]
    res = cli("cases", path, "--jobs", "2", "--json", tmp_path / "r.json", timeout=5400)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    assert f"summary: {count} of {count} case(s) run: {count} passed, 0 failed, 0 error(s)" in res.stdout, \
        res.stdout[-3000:]
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [Path(c["file"]) for c in doc["cases"]] == [path] * count
