"""Golden case directories written by ``leakyops golden``, for the CLI tests: write one
in-process and read its arrays back by name, through its ``case.json``."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)


def golden(cli_inproc, tmp_path, name, *args):
    """``leakyops golden ARGS -o tmp_path/name -q``, asserted to succeed: ``(case, manifest)``."""
    case = tmp_path / name
    res = cli_inproc("golden", *args, "-o", case, "-q")
    assert res.returncode == 0, res.stderr
    return case, json.loads((case / "case.json").read_text())


def load(case, name):
    """The array ``name`` (an input or an output) of the case, from its ``.bin`` file."""
    m = json.loads((case / "case.json").read_text())
    e = next(t for t in m["inputs"] + m["outputs"] if t["name"] == name)
    dtype = BF16 if e["dtype"] == "bfloat16" else np.dtype(e["dtype"])
    return np.fromfile(case / e["bin"], dtype=dtype).reshape(e["shape"])
