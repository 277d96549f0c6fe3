"""The ``leakyops`` command: golden data, verification, running operators on files, benchmarks.

Subcommands (``leakyops SUBCOMMAND --help`` shows each one's options and examples):

``golden``  write inputs and expected outputs of an operator (``.npy``, raw ``.bin``, ``case.json``)
``verify``  check a device's outputs against a golden directory under a precision standard
``run``     apply an operator to ``.npy`` files
``bench``   time every operator and dtype against PyTorch, NumPy and a plain copy
``demo``    run every operator on built-in data and print a conformance and speed summary

Exit status: 0 success (verify: the standard passes; demo: everything conforms), 1 a
verification or conformance failure, 2 unusable input (bad options, missing or malformed
files), 130 interrupted. Errors are one line on stderr; set ``LEAKYOPS_DEBUG=1`` to get the
Python traceback of an unexpected error as well.

This module only translates command lines and files into calls of :mod:`leakyops._core`; the
arithmetic of the operators is done there. The naive references of ``demo`` are checks, not
the library's implementation.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import textwrap
from pathlib import Path

import numpy as np

__all__ = ["main"]

OPS = ("leaky_relu", "leaky_relu_", "leaky_relu_backward", "prelu", "prelu_backward")

#: inputs and outputs of each operator, in the order of the function's arguments/results
OP_INPUTS = {
    "leaky_relu": ("x",),
    "leaky_relu_": ("x",),
    "leaky_relu_backward": ("grad_output", "x"),
    "prelu": ("x", "weight"),
    "prelu_backward": ("grad_output", "x", "weight"),
}
OP_OUTPUTS = {
    "leaky_relu": ("y",),
    "leaky_relu_": ("y",),
    "leaky_relu_backward": ("grad_input",),
    "prelu": ("y",),
    "prelu_backward": ("grad_input", "grad_weight"),
}
SLOPE_OPS = ("leaky_relu", "leaky_relu_", "leaky_relu_backward")
PRELU_OPS = ("prelu", "prelu_backward")

MANIFEST = "case.json"
FORMAT = "leakyops-golden/1"

_DTYPE_ALIASES = {
    "float16": "float16", "fp16": "float16", "half": "float16", "f16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float32": "float32", "fp32": "float32", "float": "float32", "f32": "float32",
    "float64": "float64", "fp64": "float64", "double": "float64", "f64": "float64",
}


class CLIError(Exception):
    """An error reported as one line on stderr, with an exit status."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit status 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# --------------------------------------------------------------------------- helpers


def _np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _dtype_arg(text: str) -> str:
    name = _DTYPE_ALIASES.get(text.strip().lower())
    if name is None:
        raise argparse.ArgumentTypeError(
            f"unsupported dtype {text!r}; choose float16, bfloat16, float32 or float64"
        )
    return name


def _shape_arg(text: str) -> tuple:
    raw = text.strip()
    if raw in ("()", "[]", "scalar"):
        return ()
    raw = raw.strip("()[]").strip()
    raw = raw.removesuffix(",")  # a Python tuple such as (4,)
    parts = re.split(r"\s*[,x*]\s*|\s+", raw)
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bad shape {text!r}: give non-negative integers separated by commas, e.g. 2,3,4"
        ) from None
    if not dims or any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError(
            f"bad shape {text!r}: give non-negative integers separated by commas, e.g. 2,3,4"
        )
    return dims


def _float_arg(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _pair_arg(text: str) -> tuple:
    raw = text.strip().strip("[]()")
    parts = [p for p in raw.replace(" ", "").split(",") if p]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 2 or not all(0.0 <= v <= 1.0 for v in values):
        raise argparse.ArgumentTypeError(
            f"bad thresholds {text!r}: give two numbers in [0, 1], e.g. 0.01,0.05"
        )
    return values


def _int_list_arg(text: str) -> tuple:
    try:
        values = tuple(int(float(p)) for p in text.replace(" ", "").split(",") if p)
    except ValueError:
        values = ()
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"bad sizes {text!r}: give positive integers, e.g. 1e3,1e5")
    return values


def _name_list_arg(choices):
    def parse(text: str) -> tuple:
        names = tuple(p for p in text.replace(" ", "").split(",") if p)
        if choices is _DTYPE_ALIASES:
            return tuple(_dtype_arg(n) for n in names) or _fail(text)
        bad = [n for n in names if n not in choices]
        if bad or not names:
            raise argparse.ArgumentTypeError(
                f"unknown name(s) {', '.join(bad) if bad else repr(text)}; choose from {', '.join(choices)}"
            )
        return names

    def _fail(text):
        raise argparse.ArgumentTypeError(f"empty list {text!r}")

    return parse


def _version() -> str:
    import leakyops

    v = getattr(leakyops, "__version__", None)
    if v:
        return str(v)
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("leakyops")
    except PackageNotFoundError:  # pragma: no cover - a source tree that is not installed
        return "unknown"


def _core():
    """The functional core (imported lazily so that ``verify`` and ``--help`` stay light)."""
    from leakyops import _core as core

    return core


def _dname(dtype) -> str:
    from leakyops._verify import dtype_name

    return dtype_name(dtype)


def _write_bin(path: Path, arr: np.ndarray) -> None:
    """Raw little-endian, C order: the way the vendors' sample programs read their inputs."""
    data = np.ascontiguousarray(arr)
    if sys.byteorder == "big":  # pragma: no cover - all supported hosts are little-endian
        data = data.byteswap()
    data.tofile(path)


def _read_bin(path: Path, dtype: np.dtype, shape: tuple, what: str) -> np.ndarray:
    size = path.stat().st_size
    count = math.prod(shape)
    expected = count * dtype.itemsize
    if size != expected:
        raise CLIError(
            f"{what} {path}: {size} bytes, expected {expected}"
            f" ({count} {_dname(dtype)} elements of shape {list(shape)})"
        )
    arr = np.fromfile(path, dtype=dtype)
    if sys.byteorder == "big":  # pragma: no cover
        arr = arr.byteswap()
    return arr.reshape(shape)


def _load_npy(path: Path, what: str, dtype_hint: np.dtype | None = None) -> np.ndarray:
    try:
        arr = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise CLIError(f"{what} {path}: no such file") from None
    except IsADirectoryError:
        raise CLIError(f"{what} {path}: is a directory") from None
    except (ValueError, OSError, EOFError) as exc:
        raise CLIError(f"{what} {path}: not a readable .npy file ({_first_line(exc)})") from None
    if not isinstance(arr, np.ndarray):
        raise CLIError(f"{what} {path}: not a single array")
    if arr.dtype.kind == "V" and arr.dtype.itemsize == 2 and arr.dtype.fields is None:
        # NumPy writes ml_dtypes.bfloat16 arrays with the opaque descriptor '|V2'
        arr = arr.view(dtype_hint if dtype_hint is not None else _np_dtype("bfloat16"))
    return arr


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _out(text: str = "") -> None:
    print(text, flush=False)


# --------------------------------------------------------------------------- operators


def _call_op(op: str, arrays: dict, params: dict) -> dict:
    """Run ``op`` through the core; returns {output name: array}."""
    core = _core()
    if op == "leaky_relu":
        y = core.leaky_relu_impl(arrays["x"], params["slope"], fname="leaky_relu")
        return {"y": y}
    if op == "leaky_relu_":
        x = np.array(arrays["x"], copy=True)
        core.leaky_relu_impl(x, params["slope"], out=x, fname="leaky_relu_")
        return {"y": x}
    if op == "leaky_relu_backward":
        gi = core.leaky_relu_backward_impl(
            arrays["grad_output"], arrays["x"], params["slope"], params.get("self_is_result", False),
            fname="leaky_relu_backward",
        )
        return {"grad_input": gi}
    if op == "prelu":
        y = core.prelu_impl(arrays["x"], arrays["weight"], params.get("axis", 1), fname="prelu")
        return {"y": y}
    if op == "prelu_backward":
        gi, gw = core.prelu_backward_impl(
            arrays["grad_output"], arrays["x"], arrays["weight"], params.get("axis", 1),
            fname="prelu_backward",
        )
        return {"grad_input": gi, "grad_weight": gw}
    raise CLIError(f"unknown operator {op!r}")  # pragma: no cover - argparse checks choices


def _run_core(op: str, arrays: dict, params: dict) -> dict:
    try:
        return _call_op(op, arrays, params)
    except (TypeError, ValueError) as exc:
        raise CLIError(_first_line(exc)) from None


def _check_op_options(op: str, args) -> None:
    """Reject options that do not apply to ``op`` (one line, exit 2)."""
    def given(name):
        value = getattr(args, name, None)
        return value is not None and value is not False  # --axis 0 is given
    if op not in SLOPE_OPS and given("slope"):
        raise CLIError(f"--slope does not apply to {op} (its slopes are the weight)")
    if op != "leaky_relu_backward" and given("self_is_result"):
        raise CLIError(f"--self-is-result applies to leaky_relu_backward only, not {op}")
    if op != "leaky_relu_backward" and given("grad_shape"):
        raise CLIError(f"--grad-shape applies to leaky_relu_backward only, not {op}")
    if op not in PRELU_OPS and (given("weight_shape") or given("axis")):
        raise CLIError(f"--weight-shape/--axis apply to prelu and prelu_backward only, not {op}")


# --------------------------------------------------------------------------- golden


def _special_values(dtype: np.dtype) -> np.ndarray:
    """±0, ±inf, NaN, the smallest and largest subnormals, the smallest normal, the extremes."""
    import ml_dtypes

    fi = ml_dtypes.finfo(dtype) if _dname(dtype) == "bfloat16" else np.finfo(dtype)
    sub = float(fi.smallest_subnormal)
    tiny = float(fi.smallest_normal)
    big = float(fi.max)
    largest_sub = tiny - sub
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan, sub, -sub, largest_sub, -largest_sub,
            tiny, -tiny, big, -big, 1.0, -1.0]
    return np.array(vals, dtype=np.float64).astype(dtype)


def _random_tensor(rng, shape, dtype, values: str) -> np.ndarray:
    if values == "uniform":
        base = rng.uniform(-1.0, 1.0, size=shape)
    else:
        base = rng.standard_normal(size=shape)
    arr = np.asarray(base, dtype=np.float64).astype(dtype)
    if values == "special" and arr.size:
        specials = _special_values(dtype)
        flat = arr.reshape(-1)
        count = max(min(flat.size, specials.size), flat.size // 8)
        where = rng.permutation(flat.size)[:count]
        flat[where] = specials[np.arange(count) % specials.size]
        arr = flat.reshape(shape)
    return arr


def _default_weight_shape(shape: tuple, axis: int) -> tuple:
    if len(shape) < 2:
        return (1,)
    ax = axis if axis >= 0 else axis + len(shape)
    if not 0 <= ax < len(shape):
        raise CLIError(f"--axis {axis} is out of range for an input of rank {len(shape)}")
    return (shape[ax],)


def _make_case(args) -> tuple[dict, dict, dict]:
    """Inputs, parameters and outputs of a golden case."""
    op = args.op
    _check_op_options(op, args)
    dtype = _np_dtype(args.dtype)
    rng = np.random.default_rng(args.seed)
    shape = args.shape
    params: dict = {}
    inputs: dict = {}
    if op in SLOPE_OPS:
        params["slope"] = 0.01 if args.slope is None else args.slope
    if op == "leaky_relu_backward":
        params["self_is_result"] = bool(args.self_is_result)
        gshape = args.grad_shape if args.grad_shape is not None else shape
        inputs["grad_output"] = _random_tensor(rng, gshape, dtype, args.values)
        inputs["x"] = _random_tensor(rng, shape, dtype, args.values)
    elif op in PRELU_OPS:
        axis = 1 if args.axis is None else args.axis
        params["axis"] = axis
        wshape = args.weight_shape if args.weight_shape is not None else _default_weight_shape(shape, axis)
        if op == "prelu_backward":
            inputs["grad_output"] = _random_tensor(rng, shape, dtype, args.values)
        inputs["x"] = _random_tensor(rng, shape, dtype, args.values)
        # weights stay ordinary numbers (in "special" mode too): specials go into x and grads
        wvalues = "normal" if args.values == "special" else args.values
        inputs["weight"] = _random_tensor(rng, wshape, dtype, wvalues)
    else:
        inputs["x"] = _random_tensor(rng, shape, dtype, args.values)
    outputs = _run_core(op, inputs, params)
    return inputs, params, outputs


def _tensor_entry(name: str, arr: np.ndarray) -> dict:
    return {
        "name": name,
        "dtype": _dname(arr.dtype),
        "shape": list(arr.shape),
        "npy": f"{name}.npy",
        "bin": f"{name}.bin",
        "bytes": int(arr.nbytes),
    }


def cmd_golden(args) -> int:
    inputs, params, outputs = _make_case(args)
    outdir = Path(args.output)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot create output directory {outdir}: {exc.strerror or exc}") from None
    if not outdir.is_dir():
        raise CLIError(f"output {outdir} is not a directory")
    entries_in, entries_out = [], []
    for group, entries in ((inputs, entries_in), (outputs, entries_out)):
        for name, arr in group.items():
            arr = np.ascontiguousarray(arr)
            np.save(outdir / f"{name}.npy", arr, allow_pickle=False)
            _write_bin(outdir / f"{name}.bin", arr)
            entries.append(_tensor_entry(name, arr))
    manifest = {
        "format": FORMAT,
        "operator": args.op,
        "parameters": params,
        "dtype": args.dtype,
        "shape": list(args.shape),
        "values": args.values,
        "seed": args.seed,
        "leakyops_version": _version(),
        "bin_layout": "raw little-endian, C order, no header",
        "inputs": entries_in,
        "outputs": entries_out,
    }
    (outdir / MANIFEST).write_text(_dump_json(manifest))
    if not args.quiet:
        _out(f"wrote {args.op} golden case to {outdir}/ ({args.dtype}, shape {list(args.shape)},"
             f" seed {args.seed}, values {args.values})")
        for e in entries_in:
            _out(f"  input  {e['name']:<12} {e['dtype']:<9} {e['shape']!s:<16} {e['npy']}, {e['bin']}")
        for e in entries_out:
            _out(f"  output {e['name']:<12} {e['dtype']:<9} {e['shape']!s:<16} {e['npy']}, {e['bin']}")
        _out(f"  manifest {MANIFEST}")
    return 0


def _dump_json(doc) -> str:
    """Indented JSON with short lists of numbers (shapes) kept on one line."""
    text = json.dumps(doc, indent=2)
    return re.sub(r"\[\s*([-\d.,\s]*?)\s*\]", lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]",
                  text) + "\n"


# --------------------------------------------------------------------------- verify


def _read_manifest(case_dir: Path) -> dict:
    if not case_dir.exists():
        raise CLIError(f"golden directory {case_dir} does not exist")
    if not case_dir.is_dir():
        raise CLIError(f"{case_dir} is not a directory (give the directory written by 'leakyops golden')")
    path = case_dir / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise CLIError(f"{case_dir} is not a golden directory: {MANIFEST} is missing") from None
    except (OSError, ValueError) as exc:
        raise CLIError(f"{path}: unreadable manifest ({_first_line(exc)})") from None
    try:
        outputs = manifest["outputs"]
        for e in outputs:
            _np_dtype(_dtype_arg(e["dtype"]))
            tuple(int(d) for d in e["shape"])
            str(e["name"]), str(e["bin"])
        if not outputs:
            raise ValueError
    except (KeyError, TypeError, ValueError, argparse.ArgumentTypeError):
        raise CLIError(f"{path}: not a leakyops golden manifest (outputs missing or malformed)") from None
    return manifest


def _assign_actuals(outputs: list, actual_args: list) -> list:
    """Pair each golden output with one actual file: NAME=PATH, by file stem, or by order."""
    names = [e["name"] for e in outputs]
    pairs: dict = {}
    plain = []
    for arg in actual_args:
        name, sep, path = arg.partition("=")
        if sep and name in names:
            if name in pairs:
                raise CLIError(f"output {name} given twice")
            pairs[name] = Path(path)
        else:
            plain.append(Path(arg))
    rest = [n for n in names if n not in pairs]
    if len(plain) != len(rest):
        raise CLIError(
            f"{len(names)} output(s) to check ({', '.join(names)}), got {len(actual_args)} file(s);"
            " give one file per output, in this order or as NAME=PATH"
        )
    stems = [p.name.split(".")[0] for p in plain]
    if sorted(stems) == sorted(rest) and len(set(stems)) == len(stems):
        for p, s in zip(plain, stems):
            pairs[s] = p
    else:
        for n, p in zip(rest, plain):
            pairs[n] = p
    return [(e, pairs[e["name"]]) for e in outputs]


def _load_actual(path: Path, entry: dict) -> tuple[np.ndarray, str]:
    dtype = _np_dtype(_dtype_arg(entry["dtype"]))
    shape = tuple(int(d) for d in entry["shape"])
    note = ""
    if not path.exists():
        raise CLIError(f"actual output {path}: no such file")
    if path.is_dir():
        raise CLIError(f"actual output {path}: is a directory")
    if path.suffix.lower() == ".npy":
        arr = _load_npy(path, "actual output", dtype)
        if arr.dtype != dtype:
            raise CLIError(
                f"actual output {path}: dtype {_dname(arr.dtype) if arr.dtype.kind == 'f' else arr.dtype},"
                f" expected {_dname(dtype)} (golden {entry['name']})"
            )
        if arr.size != math.prod(shape):
            raise CLIError(
                f"actual output {path}: {arr.size} elements of shape {list(arr.shape)},"
                f" expected {math.prod(shape)} (shape {list(shape)})"
            )
        if arr.shape != shape:
            note = f"shape {list(arr.shape)} read as {list(shape)}"
        return arr.reshape(shape), note
    return _read_bin(path, dtype, shape, "actual output"), note


def _load_golden(case_dir: Path, entry: dict) -> np.ndarray:
    dtype = _np_dtype(_dtype_arg(entry["dtype"]))
    shape = tuple(int(d) for d in entry["shape"])
    path = case_dir / entry["bin"]
    if not path.exists():
        raise CLIError(f"golden {path}: no such file (the golden directory is incomplete)")
    return _read_bin(path, dtype, shape, "golden")


def cmd_verify(args) -> int:
    from leakyops import _verify

    case_dir = Path(args.case)
    manifest = _read_manifest(case_dir)
    if args.err_thr is not None and args.standard != "ratio":
        raise CLIError("--err-thr applies to --standard ratio only")
    pairs = _assign_actuals(manifest["outputs"], args.actual)
    loaded = []
    for entry, path in pairs:  # load everything first: unusable input is reported before any result
        golden = _load_golden(case_dir, entry)
        actual, note = _load_actual(path, entry)
        loaded.append((entry, path, golden, actual, note))

    thresholds = args.err_thr or _verify.RATIO_DEFAULT
    results = []
    _out(f"leakyops verify: {manifest.get('operator', '?')} case {case_dir}"
         f" ({manifest.get('dtype', '?')}, shape {manifest.get('shape', '?')}, seed {manifest.get('seed', '?')})")
    _out(f"standard: {args.standard}")
    for entry, path, golden, actual, note in loaded:
        cmp = _verify.compare(actual, golden, args.standard, ratio_thresholds=thresholds)
        results.append((entry, path, cmp))
        _out("")
        _out(f"output {entry['name']} <- {path}  ({cmp.dtype}, shape {list(cmp.shape)})"
             + (f"  [{note}]" if note else ""))
        for line in cmp.report_lines():
            _out(line)
    failed = [e["name"] for e, _, c in results if not c.passed]
    _out("")
    if failed:
        _out(f"overall: FAIL ({len(failed)} of {len(results)} output(s) fail {args.standard}: {', '.join(failed)})")
    else:
        _out(f"overall: PASS ({len(results)} output(s) pass {args.standard})")
    if args.json:
        doc = {
            "case": str(case_dir),
            "operator": manifest.get("operator"),
            "standard": args.standard,
            "passed": not failed,
            "outputs": [dict(name=e["name"], file=str(p), **c.to_dict()) for e, p, c in results],
        }
        try:
            Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
        except OSError as exc:
            raise CLIError(f"cannot write {args.json}: {exc.strerror or exc}") from None
    return 1 if failed else 0


# --------------------------------------------------------------------------- run


def cmd_run(args) -> int:
    op = args.op
    _check_op_options(op, args)
    names = OP_INPUTS[op]
    if len(args.inputs) != len(names):
        raise CLIError(f"{op} takes {len(names)} input file(s) ({', '.join(names)}), got {len(args.inputs)}")
    arrays = {}
    for name, path in zip(names, args.inputs):
        p = Path(path)
        if p.suffix.lower() != ".npy":
            raise CLIError(f"input {path}: only .npy files are read (raw .bin has no dtype or shape)")
        arrays[name] = _load_npy(p, f"input {name}")
    params: dict = {}
    if op in SLOPE_OPS:
        params["slope"] = 0.01 if args.slope is None else args.slope
    if op == "leaky_relu_backward":
        params["self_is_result"] = bool(args.self_is_result)
    if op in PRELU_OPS:
        params["axis"] = 1 if args.axis is None else args.axis
    outputs = _run_core(op, arrays, params)
    out_names = OP_OUTPUTS[op]
    paths = [Path(p) for p in args.output]
    if len(paths) == 1 and len(out_names) > 1:
        base = paths[0]
        paths = [base] + [base.with_name(f"{base.stem}.{n}{base.suffix or '.npy'}") for n in out_names[1:]]
    if len(paths) != len(out_names):
        raise CLIError(f"{op} has {len(out_names)} output(s) ({', '.join(out_names)}), got {len(paths)} -o path(s)")
    for name, path in zip(out_names, paths):
        arr = np.ascontiguousarray(outputs[name])
        try:
            if path.suffix.lower() == ".bin":
                _write_bin(path, arr)
            else:
                np.save(path, arr, allow_pickle=False)
        except OSError as exc:
            raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from None
        if not args.quiet:
            _out(f"{name}: {_dname(arr.dtype)} {list(arr.shape)} -> {path}")
    return 0


# --------------------------------------------------------------------------- bench


def cmd_bench(args) -> int:
    from leakyops import _bench

    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CLIError("--plot needs matplotlib: pip install 'leakyops[plot]'") from None
    if args.threads is not None and args.threads < 1:
        raise CLIError("--threads must be at least 1")
    records = _bench.run(
        ops=args.ops,
        dtypes=args.dtypes,
        sizes=args.sizes,
        quick=args.quick,
        threads=args.threads,
        min_time=args.min_time,
        peers=None if not args.no_torch else ("leakyops", "numpy", "copy"),
        progress=not args.no_progress,
    )
    _out(_bench.format_table(records))
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(_bench.to_json(records), indent=2) + "\n")
        except OSError as exc:
            raise CLIError(f"cannot write {args.json}: {exc.strerror or exc}") from None
    if args.plot:
        try:
            _bench.plot(records, args.plot)
        except OSError as exc:
            raise CLIError(f"cannot write {args.plot}: {exc.strerror or exc}") from None
        _out(f"chart written to {args.plot}")
    return 0


# --------------------------------------------------------------------------- demo


def _promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """The promotion rule of SPEC §2 for leaky_relu_backward (spelled out, for the check)."""
    na, nb = _dname(a), _dname(b)
    if na == nb:
        return a
    if "float64" in (na, nb):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if _dname(dtype) == "float64" else np.dtype(np.float32)


def _ref_leaky_relu(x: np.ndarray, slope: float) -> np.ndarray:
    """Naive reference: widen halves to float32, select with x > 0, round once."""
    ct = _compute_dtype(x.dtype)
    xw = x.astype(ct)
    with np.errstate(all="ignore"):
        y = np.where(xw > 0, xw, xw * ct.type(slope))
        return y.astype(x.dtype)


def _ref_leaky_relu_backward(g: np.ndarray, t: np.ndarray, slope: float) -> np.ndarray:
    rt = _promote(g.dtype, t.dtype)
    ct = _compute_dtype(rt)
    gw, tw = g.astype(ct), t.astype(ct)
    with np.errstate(all="ignore"):
        y = np.where(tw > 0, gw, gw * ct.type(slope))
        return y.astype(rt)


def _weight_view(w: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    if w.size == 1:
        return w.reshape(())
    shape = [1] * ndim
    shape[axis % ndim] = w.size
    return w.reshape(shape)


def _ref_prelu(x: np.ndarray, w: np.ndarray, axis: int) -> np.ndarray:
    ct = _compute_dtype(x.dtype)
    xw, ww = x.astype(ct), _weight_view(w, x.ndim, axis).astype(ct)
    with np.errstate(all="ignore"):
        y = np.where(xw > 0, xw, ww * xw)
        return y.astype(x.dtype)


def _ref_prelu_backward(g: np.ndarray, x: np.ndarray, w: np.ndarray, axis: int):
    ct = _compute_dtype(x.dtype)
    gw_, xw, ww = g.astype(ct), x.astype(ct), _weight_view(w, x.ndim, axis).astype(ct)
    with np.errstate(all="ignore"):
        gi = np.where(xw > 0, gw_, ww * gw_).astype(x.dtype)
        contrib = np.where(x.astype(np.float64) > 0, 0.0, x.astype(np.float64) * g.astype(np.float64))
        if w.size == 1:
            acc = contrib.sum()
        else:
            ax = axis % x.ndim
            acc = contrib.sum(axis=tuple(i for i in range(x.ndim) if i != ax))
        return gi, np.asarray(acc, dtype=np.float64).astype(x.dtype).reshape(w.shape)


class _Checks:
    def __init__(self):
        self.results = []

    def add(self, name: str, passed: bool, detail: str = "") -> None:
        self.results.append((name, bool(passed), detail))
        mark = "PASS" if passed else "FAIL"
        _out(f"  {mark}  {name}" + (f"  -- {detail}" if detail and not passed else ""))

    def compare(self, name: str, actual, expected, standard: str = "exact") -> None:
        from leakyops import _verify

        actual = np.asarray(actual)
        expected = np.asarray(expected)
        if actual.shape != expected.shape or actual.dtype != expected.dtype:
            self.add(name, False, f"got {_dname(actual.dtype)} {list(actual.shape)},"
                                  f" expected {_dname(expected.dtype)} {list(expected.shape)}")
            return
        cmp = _verify.compare(actual, expected, standard)
        detail = ""
        if not cmp.passed:
            w = cmp.worst[0] if cmp.worst else None
            detail = f"{cmp.over} of {cmp.elements} elements differ ({standard})"
            if w:
                detail += f", e.g. at {list(w[0])}: expected {w[1]!r}, got {w[2]!r}"
        self.add(name, cmp.passed, detail)

    def run(self, name: str, fn) -> None:
        """Run a check that may raise (a core error is a failed check, not a crash)."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - report and continue
            self.add(name, False, f"{type(exc).__name__}: {_first_line(exc)}")


def _demo_vendor(checks: _Checks) -> None:
    core = _core()
    f32 = np.float32
    _out("vendor documented examples (SPEC §5, §6)")

    def lr():
        y = core.leaky_relu_impl(np.array([1, 2, 3, 4], f32), 0.01, slope_dtype=np.float32)
        checks.compare("aclnnLeakyRelu: {1,2,3,4}, slope 0.01 -> {1,2,3,4}", y, np.array([1, 2, 3, 4], f32))

    def lrb():
        gi = core.leaky_relu_backward_impl(np.array([2, 3, 4, 5], f32), np.array([1, 2, 3, 4], f32), 0.01, True,
                                           slope_dtype=np.float32)
        checks.compare("aclnnLeakyReluBackward: grad {2,3,4,5}, self {1,2,3,4}, selfIsResult -> {2,3,4,5}",
                       gi, np.array([2, 3, 4, 5], f32))

    def prb():
        x = np.arange(8, dtype=f32).reshape(4, 2)
        gi, gw = core.prelu_backward_impl(np.ones((4, 2), f32), x, np.array([0.5, 0.5], f32), 1)
        checks.compare("aclnnPreluBackward: gradInput {0.5,1,1,1,1,1,1,1}", gi,
                       np.array([0.5, 1, 1, 1, 1, 1, 1, 1], f32).reshape(4, 2))
        checks.compare("aclnnPreluBackward: gradWeight {0,0}", gw, np.array([0, 0], f32))

    def ascendc_1():
        x = np.arange(1, 513, dtype=np.float16)
        x[:2] = -x[:2]
        y = core.leaky_relu_impl(x, 2.0, compare=">=", slope_dtype="storage")
        expected = x.copy()
        expected[:2] = np.array([-2, -4], np.float16)
        checks.compare("Ascend C LeakyRelu (half, scalar 2, 512): [-1,-2,3..512] -> [-2,-4,3..512]", y, expected)

    def ascendc_2():
        x = np.array([-287, 246, -438, 177, 596, -950, -293, 322], np.float16)
        y = core.leaky_relu_impl(x, 0.001, compare=">=", slope_dtype="storage")
        expected = np.array([-0.287, 246, -0.438, 177, 596, -0.950, -0.293, 322], np.float16)
        checks.compare("Ascend C LeakyRelu (half, scalar 0.001): documented output to half precision",
                       y, expected, "double-thousandth")

    for name, fn in (("aclnnLeakyRelu", lr), ("aclnnLeakyReluBackward", lrb), ("aclnnPreluBackward", prb),
                     ("Ascend C LeakyRelu example 1", ascendc_1), ("Ascend C LeakyRelu example 2", ascendc_2)):
        checks.run(name, fn)


def _demo_random(checks: _Checks, dtypes) -> None:
    core = _core()
    _out("random data vs a naive NumPy reference (bit-exact; grad_weight to the relative-error standard)")
    for dname in dtypes:
        _demo_random_dtype(checks, core, dname)


def _demo_random_dtype(checks: _Checks, core, dname: str) -> None:
    dt = _np_dtype(dname)
    rng = np.random.default_rng(20240611)
    x = _random_tensor(rng, (3, 257), dt, "normal")
    g = _random_tensor(rng, (3, 257), dt, "normal")
    x4 = _random_tensor(rng, (2, 3, 5, 7), dt, "normal")
    g4 = _random_tensor(rng, (2, 3, 5, 7), dt, "normal")
    w3 = _random_tensor(rng, (3,), dt, "normal")
    w7 = _random_tensor(rng, (7,), dt, "normal")
    w1 = _random_tensor(rng, (1,), dt, "normal")
    tag = f"{dname:<9}"

    def c(name, fn):
        checks.run(f"{name:<21} {tag}", fn)

    c("leaky_relu", lambda: checks.compare(
        f"leaky_relu            {tag} (3, 257), slope 0.01",
        core.leaky_relu_impl(x, 0.01), _ref_leaky_relu(x, 0.01)))
    c("leaky_relu strided", lambda: checks.compare(
        f"leaky_relu            {tag} strided view [:, ::-3], slope -1.5",
        core.leaky_relu_impl(x[:, ::-3], -1.5), _ref_leaky_relu(x[:, ::-3], -1.5)))

    def inplace():
        buf = x.copy()
        r = core.leaky_relu_impl(buf, 0.2, out=buf)
        checks.compare(f"leaky_relu_           {tag} in place, slope 0.2", buf, _ref_leaky_relu(x, 0.2))
        if r is not None and np.asarray(r).ctypes.data != buf.ctypes.data:
            checks.add(f"leaky_relu_           {tag} returns its out", False, "result is not the out array")

    c("leaky_relu_", inplace)
    c("leaky_relu_backward", lambda: checks.compare(
        f"leaky_relu_backward   {tag} (3, 257), slope 0.01",
        core.leaky_relu_backward_impl(g, x, 0.01), _ref_leaky_relu_backward(g, x, 0.01)))
    c("leaky_relu_backward b", lambda: checks.compare(
        f"leaky_relu_backward   {tag} grad (3, 1) broadcast, self_is_result, slope 0.5",
        core.leaky_relu_backward_impl(g[:, :1], x, 0.5, True), _ref_leaky_relu_backward(g[:, :1], x, 0.5)))
    c("prelu", lambda: checks.compare(
        f"prelu                 {tag} NCHW (2, 3, 5, 7), 3 channels",
        core.prelu_impl(x4, w3, 1), _ref_prelu(x4, w3, 1)))
    c("prelu channels-last", lambda: checks.compare(
        f"prelu                 {tag} channels-last axis=-1, 7 channels",
        core.prelu_impl(x4, w7, -1), _ref_prelu(x4, w7, -1)))

    def pb(weight, axis, label):
        gi, gw = core.prelu_backward_impl(g4, x4, weight, axis)
        rgi, rgw = _ref_prelu_backward(g4, x4, weight, axis)
        checks.compare(f"prelu_backward        {tag} {label} grad_input", gi, rgi)
        checks.compare(f"prelu_backward        {tag} {label} grad_weight", gw, rgw, "relative-error")

    c("prelu_backward", lambda: pb(w3, 1, "NCHW, 3 channels"))
    c("prelu_backward shared", lambda: pb(w1, 1, "one shared weight"))


def _demo_special(checks: _Checks, dtypes) -> None:
    core = _core()
    _out("special values (+-0, +-inf, NaN, subnormals, extremes), slopes 0.01, 0, -2, 3")
    for dname in dtypes:
        _demo_special_dtype(checks, core, dname)


def _demo_special_dtype(checks: _Checks, core, dname: str) -> None:
    dt = _np_dtype(dname)
    s = _special_values(dt)
    x = np.concatenate([s, np.repeat(s, s.size)])  # every special against every special below
    g = np.concatenate([s[::-1], np.tile(s, s.size)])
    tag = f"{dname:<9}"
    ok = True
    detail = ""

    def check_all():
        nonlocal ok, detail
        from leakyops import _verify

        for slope in (0.01, 0.0, -2.0, 3.0):
            cases = [
                ("leaky_relu", core.leaky_relu_impl(x, slope), _ref_leaky_relu(x, slope)),
                ("leaky_relu_backward", core.leaky_relu_backward_impl(g, x, slope),
                 _ref_leaky_relu_backward(g, x, slope)),
            ]
            w = np.array([slope], dtype=dt)
            cases.append(("prelu", core.prelu_impl(x, w, 0), _ref_prelu(x, w, 0)))
            gi, _ = core.prelu_backward_impl(g, x, w, 0)
            cases.append(("prelu_backward grad_input", gi, _ref_prelu_backward(g, x, w, 0)[0]))
            buf = x.copy()
            core.leaky_relu_impl(buf, slope, out=buf)
            cases.append(("leaky_relu_", buf, _ref_leaky_relu(x, slope)))
            for name, got, want in cases:
                got = np.asarray(got)
                if got.dtype != want.dtype or got.shape != want.shape:
                    ok, detail = False, f"{name}, slope {slope}: dtype/shape differ"
                    return
                cmp = _verify.compare(got, want, "exact")
                if not cmp.passed:
                    i = cmp.worst[0][0][0]
                    ok = False
                    detail = (f"{name}, slope {slope}: x={float(x[i])!r}: expected"
                              f" {float(want[i])!r}, got {float(got[i])!r}")
                    return

    try:
        check_all()
    except Exception as exc:  # noqa: BLE001
        ok, detail = False, f"{type(exc).__name__}: {_first_line(exc)}"
    checks.add(f"all five operators    {tag} {x.size} special inputs x 4 slopes", ok, detail)


def _demo_speed(n: int) -> list[str]:
    from leakyops import _bench

    core = _core()
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = np.empty_like(x)
    core.leaky_relu_impl(x, 0.01, out=y)  # compile / warm up
    t_op = _bench.best_time(lambda: core.leaky_relu_impl(x, 0.01, out=y), min_time=0.2, max_reps=20)
    t_cp = _bench.best_time(lambda: np.copyto(y, x), min_time=0.2, max_reps=20)
    nbytes = 2 * x.nbytes
    gbs_op, gbs_cp = nbytes / t_op / 1e9, nbytes / t_cp / 1e9
    try:
        import leakyops

        threads = leakyops.get_num_threads()
    except Exception:  # noqa: BLE001 - informational only
        threads = "?"
    return [
        f"speed (float32 leaky_relu, {n:,} elements, {threads} thread(s); bytes read + written per second)",
        f"  leakyops.leaky_relu   {gbs_op:8.2f} GB/s   ({t_op * 1e3:.3f} ms)",
        f"  numpy copyto          {gbs_cp:8.2f} GB/s   ({t_cp * 1e3:.3f} ms)",
        f"  ratio to copy         {gbs_op / gbs_cp:8.2f}",
    ]


def cmd_demo(args) -> int:
    dtypes = args.dtypes or ("float16", "bfloat16", "float32", "float64")
    _out(f"leakyops {_version()} demo: every operator on built-in data")
    _out("")
    checks = _Checks()
    _demo_vendor(checks)
    _out("")
    _demo_random(checks, dtypes)
    _out("")
    _demo_special(checks, dtypes)
    _out("")
    if not args.no_speed:
        try:
            for line in _demo_speed(args.speed_size):
                _out(line)
        except Exception as exc:  # noqa: BLE001 - the speed summary is informational
            _out(f"speed: not measured ({type(exc).__name__}: {_first_line(exc)})")
        _out("")
    failed = [name for name, ok, _ in checks.results if not ok]
    total = len(checks.results)
    if failed:
        _out(f"conformance: FAIL ({total - len(failed)} of {total} checks pass)")
        for name in failed:
            _out(f"  failed: {name.strip()}")
        return 1
    _out(f"conformance: PASS ({total} of {total} checks pass)")
    return 0


# --------------------------------------------------------------------------- parser


def _examples(text: str) -> str:
    return "examples:\n" + textwrap.indent(textwrap.dedent(text).strip("\n"), "  ")


def _add_op_options(p, golden: bool) -> None:
    p.add_argument("--slope", type=_float_arg, default=None, metavar="S",
                   help="negative slope of leaky_relu* (default 0.01); inf, nan and negatives are allowed")
    p.add_argument("--self-is-result", action="store_true", default=False,
                   help="leaky_relu_backward: x is the forward result (slope must be >= 0)")
    p.add_argument("--axis", type=int, default=None,
                   help="prelu*: the channel axis of the weight (default 1; -1 is channels-last)")
    if golden:
        p.add_argument("--weight-shape", type=_shape_arg, default=None, metavar="SHAPE",
                       help="prelu*: shape of the weight (default: (C,) with C = shape[axis]; 1 for a shared slope)")
        p.add_argument("--grad-shape", type=_shape_arg, default=None, metavar="SHAPE",
                       help="leaky_relu_backward: shape of grad_output, broadcast against x (default: x's shape)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="leakyops",
        description="The LeakyReLU operator family on the command line: make golden data, verify a "
                    "device's outputs against it under the vendor's precision standards, run the "
                    "operators on files and benchmark them.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_examples("""
            leakyops golden leaky_relu --shape 4,1024 --dtype float16 -o case1
            leakyops verify case1 device_out.bin --standard double-thousandth
            leakyops run prelu x.npy w.npy -o y.npy
            leakyops bench --quick --plot bench.png
            leakyops demo
        """) + "\n\nexit status: 0 ok, 1 verification/conformance failure, 2 unusable input",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"leakyops {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    g = sub.add_parser(
        "golden", help="write inputs and expected outputs of an operator",
        description="Write the inputs and the expected outputs of OP as .npy and as raw little-endian "
                    ".bin files (C order, no header: what the vendors' sample programs read), plus a "
                    "case.json manifest (operator, parameters, dtypes, shapes, seed, leakyops version). "
                    "Inputs are x, grad_output and weight as the operator needs; outputs y, grad_input "
                    "and grad_weight.",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog=_examples("""
            leakyops golden leaky_relu --shape 8,1024 --dtype float16 --slope 0.2 -o lr_f16
            leakyops golden leaky_relu_backward --shape 16,16 --dtype bf16 --self-is-result -o lrb
            leakyops golden prelu --shape 2,64,8,8 --dtype float32 -o prelu_nchw
            leakyops golden prelu --shape 2,8,8,64 --axis -1 -o prelu_nhwc
            leakyops golden prelu_backward --shape 4,2 --weight-shape 1 --values special -o prb
        """),
    )
    g.add_argument("op", choices=OPS, metavar="OP", help=f"one of {', '.join(OPS)}")
    g.add_argument("--shape", type=_shape_arg, required=True, help="shape of x, e.g. 2,3,4 (() for 0-d)")
    g.add_argument("--dtype", type=_dtype_arg, default="float32",
                   help="float16, bfloat16, float32 (default) or float64")
    _add_op_options(g, golden=True)
    g.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    g.add_argument("--values", choices=("normal", "uniform", "special"), default="normal",
                   help="normal: N(0,1); uniform: U(-1,1); special: normal with +-0, +-inf, NaN, "
                        "subnormals and the extremes mixed into x and grad_output")
    g.add_argument("-o", "--output", required=True, metavar="DIR", help="directory to write (created if needed)")
    g.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    g.set_defaults(func=cmd_golden)

    v = sub.add_parser(
        "verify", help="compare a device's outputs with golden data",
        description="Compare ACTUAL output files (.npy, or raw little-endian .bin in the golden's dtype "
                    "and element count) with the golden outputs of DIR and print a report: elements "
                    "compared, number and share over tolerance, max abs/rel error with indices, the "
                    "worst 10 elements, NaN/inf mismatches. Give one file per output, in the manifest's "
                    "order, named after the output (grad_weight.bin), or as NAME=PATH.\n\n"
                    "standards (sources in docs/cli.md):\n"
                    "  exact              bitwise equal, NaN == NaN (default)\n"
                    "  double-thousandth  every |a-g| <= atol + rtol*|g|; rtol = atol = 1e-3 for\n"
                    "                     float16/bfloat16, 1e-4 for float32/float64 (Ascend)\n"
                    "  ratio              share of elements with relative error > T1 under T2;\n"
                    "                     default T1,T2 = 0.01,0.05 (msOpST -err_thr)\n"
                    "  relative-error     MERE < t and MARE < 10t, t = 2^-10 float16, 2^-7 bfloat16,\n"
                    "                     2^-13 float32/float64 (Ascend ATK benchmark standard)",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog=_examples("""
            leakyops verify lr_f16 npu_out.bin
            leakyops verify lr_f16 npu_out.bin --standard ratio --err-thr 0.001,0.001
            leakyops verify prb grad_input=out0.bin grad_weight=out1.bin --standard relative-error
        """) + "\n\nexit status: 0 the standard passes, 1 it does not, 2 unusable input",
    )
    v.add_argument("case", metavar="DIR", help="golden directory written by 'leakyops golden'")
    v.add_argument("actual", nargs="+", metavar="ACTUAL", help="actual output file(s): .npy or raw .bin")
    v.add_argument("--standard", choices=("exact", "double-thousandth", "ratio", "relative-error"),
                   default="exact", help="precision standard (default exact)")
    v.add_argument("--err-thr", type=_pair_arg, default=None, metavar="T1,T2",
                   help="ratio standard thresholds (default 0.01,0.05)")
    v.add_argument("--json", metavar="FILE", default=None, help="also write the report as JSON")
    v.set_defaults(func=cmd_verify)

    r = sub.add_parser(
        "run", help="apply an operator to .npy files",
        description="Apply OP to the arrays in INPUT .npy files and write the result(s) with -o "
                    "(.npy, or raw .bin when the name ends in .bin). Inputs by operator: leaky_relu, "
                    "leaky_relu_: x; leaky_relu_backward: grad_output x; prelu: x weight; "
                    "prelu_backward: grad_output x weight (two outputs: give two -o paths, or one and "
                    "the second is named STEM.grad_weight.npy).",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog=_examples("""
            leakyops run leaky_relu x.npy --slope 0.1 -o y.npy
            leakyops run leaky_relu_backward grad.npy x.npy -o gx.bin
            leakyops run prelu_backward grad.npy x.npy w.npy -o gx.npy gw.npy
        """),
    )
    r.add_argument("op", choices=OPS, metavar="OP", help=f"one of {', '.join(OPS)}")
    r.add_argument("inputs", nargs="+", metavar="INPUT", help="input .npy files, in the operator's order")
    _add_op_options(r, golden=False)
    r.add_argument("-o", "--output", nargs="+", required=True, metavar="OUT", help="output file(s)")
    r.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    r.set_defaults(func=cmd_run)

    b = sub.add_parser(
        "bench", help="time the operators against PyTorch, NumPy and a plain copy",
        description="Time every operator x dtype at 1e3, 1e5, 1e6, 1.6e7 and 6.4e7 elements (--quick: "
                    "1e3, 1e5, 1e6) for leakyops, PyTorch (same thread count; skipped if torch is not "
                    "installed), NumPy and a plain copy (np.copyto) of the same bytes. Reports GB/s "
                    "(bytes read + written) and the ratio to PyTorch. prelu/prelu_backward use NCHW "
                    "with 64 channels; PyTorch's prelu_backward is aten._prelu_kernel_backward plus its "
                    "channel sum. A progress bar goes to stderr.",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog=_examples("""
            leakyops bench --quick
            leakyops bench --ops leaky_relu,prelu --dtypes float32,bf16 --plot bench.png
            leakyops bench --sizes 1e6 --threads 1 --json bench.json
        """),
    )
    b.add_argument("--quick", action="store_true", help="small sizes only (1e3, 1e5, 1e6) and short timing")
    b.add_argument("--ops", type=_name_list_arg(OPS), default=OPS, metavar="OPS",
                   help="comma-separated operators (default: all five)")
    b.add_argument("--dtypes", type=_name_list_arg(_DTYPE_ALIASES), default=None, metavar="DTYPES",
                   help="comma-separated dtypes (default: all four)")
    b.add_argument("--sizes", type=_int_list_arg, default=None, metavar="N,…",
                   help="comma-separated element counts (default: see above)")
    b.add_argument("--threads", type=int, default=None, help="threads for leakyops and PyTorch (default: leakyops')")
    b.add_argument("--min-time", type=float, default=None, metavar="SECONDS",
                   help="time each case for at least this long (default 0.2, --quick 0.05)")
    b.add_argument("--no-torch", action="store_true", help="leave PyTorch out even if it is installed")
    b.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    b.add_argument("--plot", metavar="FILE.png", default=None,
                   help="draw GB/s by size per operator and dtype (needs matplotlib: leakyops[plot])")
    b.add_argument("--json", metavar="FILE", default=None, help="also write the measurements as JSON")
    b.set_defaults(func=cmd_bench)

    d = sub.add_parser(
        "demo", help="run every operator on built-in data: conformance and speed summary",
        description="Run every operator on built-in data: the vendors' documented examples (aclnn "
                    "LeakyRelu, LeakyReluBackward, PreluBackward; Ascend C LeakyRelu), random data of "
                    "each dtype checked bit for bit against a naive NumPy reference, and the special "
                    "values +-0, +-inf, NaN, subnormals and extremes; then a quick speed summary (GB/s "
                    "of the core against a NumPy copy of the same bytes). Exit status 0 iff everything "
                    "conforms. Needs neither PyTorch nor any optional dependency.",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog=_examples("""
            leakyops demo
            leakyops demo --dtypes float32 --no-speed
        """),
    )
    d.add_argument("--dtypes", type=_name_list_arg(_DTYPE_ALIASES), default=None, metavar="DTYPES",
                   help="comma-separated dtypes to check (default: all four)")
    d.add_argument("--no-speed", action="store_true", help="skip the speed summary")
    d.add_argument("--speed-size", type=int, default=1 << 22, metavar="N",
                   help="elements of the speed summary (default 4194304)")
    d.set_defaults(func=cmd_demo)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``leakyops`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    prog = f"leakyops {args.command}"
    try:
        return int(args.func(args) or 0)
    except CLIError as exc:
        sys.stdout.flush()
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:  # pragma: no cover
            pass
        return 0
    except MemoryError:
        print(f"{prog}: error: out of memory", file=sys.stderr)
        return 2
    except Exception as exc:
        if os.environ.get("LEAKYOPS_DEBUG"):
            raise
        print(f"{prog}: internal error: {type(exc).__name__}: {_first_line(exc)}"
              " (set LEAKYOPS_DEBUG=1 for the traceback)", file=sys.stderr)
        return 3
