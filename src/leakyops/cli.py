"""The ``leakyops`` command: golden data, verification, running operators on files, benchmarks.

Subcommands (``leakyops SUBCOMMAND --help`` shows each one's options and examples):

``golden``  write inputs and expected outputs of an operator (``.npy``, raw ``.bin``, ``case.json``)
``verify``  check a device's outputs against a golden directory under a precision standard
``run``     apply an operator to ``.npy`` or raw files
``bench``   time every operator and dtype against PyTorch, oneDNN, ONNX Runtime and copies
``demo``    run every operator on built-in data and print a conformance and speed summary

Exit status: 0 success (verify: the standard passes; demo: everything conforms), 1 a
verification or conformance failure, 2 unusable input (bad options, missing or malformed
files), 130 interrupted. Errors are one line on stderr; set ``LEAKYOPS_DEBUG=1`` to get the
Python traceback of an unexpected error as well.

This module only translates command lines and files into calls of :mod:`leakyops._core` (or
of a front-end's public API, for ``--semantics onednn``); the arithmetic of the operators is
done there. Files and progress are :mod:`leakyops._cli_io`, the operators under each
semantics and the generated data :mod:`leakyops._cli_ops`, the standards
:mod:`leakyops._verify`, the demo :mod:`leakyops._demo`; the operators' list, arrays and
parameters come from the operator table (:mod:`leakyops._operators`).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
import sys
import textwrap
from pathlib import Path

import numpy as np

from leakyops import _cli_io, _cli_ops, _memory, _verify
from leakyops._cli_io import BF16, BF16_NPY, AtomicFiles, CLIError, Progress, first_line, np_dtype
from leakyops._cli_ops import SEMANTICS
from leakyops._operators import OPERATORS, OPS, PER_CHANNEL, SUMS
from leakyops._verify import dtype_name

__all__ = ["main"]

MANIFEST = "case.json"
FORMAT = "leakyops-golden/2"

#: the standard each output gets when verify is given no --standard (else exact), and why
DEFAULT_STANDARD = dict.fromkeys(SUMS, "relative-error")
_DEFAULT_WHY = {
    "exact": "default for an element-wise output",
    "relative-error": "default for a reduction: its summation order differs per device",
}

_DTYPE_ALIASES = {
    "float16": "float16", "fp16": "float16", "half": "float16", "f16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float32": "float32", "fp32": "float32", "float": "float32", "f32": "float32",
    "float64": "float64", "fp64": "float64", "double": "float64", "f64": "float64",
}

#: options whose value may start with '-' (a negative number, -inf, a shape such as -1,4):
#: "--opt -x" is passed to argparse as "--opt=-x", so that the value's own check reports it
_VALUE_OPTIONS = ("--shape", "--grad-shape", "--weight-shape", "--slope", "--seed", "--axis", "--rtol",
                  "--atol", "--error-ratio", "--err-thr", "--threads", "--min-time", "--speed-size")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit status 2) that suggests the
    closest choice or option where the one given is misspelt."""

    def error(self, message):
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            message += _did_you_mean(m.group(1), re.findall(r"'([^']*)'", m.group(2)))
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def options(self) -> set:
        return {o for action in self._actions for o in action.option_strings}

    def unrecognized(self, extra: list) -> None:
        """Report arguments this (sub)command does not take: the first unknown option, with the
        closest one it has, or else the first stray value."""
        unknown = [a.split("=", 1)[0] for a in extra if a.startswith("-") and a != "-"]
        if unknown:
            self.error(f"unrecognized option {unknown[0]}{_did_you_mean(unknown[0], sorted(self.options()))}")
        self.error(f"unexpected argument {extra[0]!r}")

    def reject_unknown_options(self, argv: list) -> None:
        """A misspelt ``--option`` of a subcommand is reported before anything else argparse would
        say about the command line (such as a missing required argument it was meant to give)."""
        command = None
        for arg in argv:
            if arg == "--":
                return
            if command is None:
                command = self.subcommands.get(arg)
            elif arg.startswith("--") and arg.split("=", 1)[0] not in command.options():
                command.unrecognized([arg])


def _did_you_mean(given: str, choices) -> str:
    close = difflib.get_close_matches(given, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


# --------------------------------------------------------------------------- helpers


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


def _tolerance_arg(upper: float | None = None):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or (upper is not None and value > upper):
            bound = f" at most {upper:g}" if upper is not None else ""
            raise argparse.ArgumentTypeError(f"bad value {text!r}: give a finite number >= 0{bound}")
        return value

    return parse


def _isa_arg(text: str) -> str:
    """``--isa``: a oneDNN instruction set as ``ONEDNN_MAX_CPU_ISA`` spells it (any case),
    ``host`` (this CPU's) or ``model`` (the model's fixed default)."""
    from leakyops.onednn import _ops as dnnl_ops

    name = text.strip().lower()
    if name not in dnnl_ops.isa_names():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not one of {', '.join(dnnl_ops.isa_names())} (any case)")
    return name


def _seed_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"bad seed {text!r}: give an integer >= 0")
    return value


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


def _count(text: str) -> int | None:
    """A whole number >= 1 written as an integer or in e-notation (``4194304``, ``1e6``); else None."""
    try:
        return int(text) if int(text) >= 1 else None
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value >= 1 and value.is_integer() else None


def _count_arg(text: str) -> int:
    value = _count(text.strip())
    if value is None:
        raise argparse.ArgumentTypeError(f"bad count {text!r}: give a whole number >= 1, e.g. 4194304 or 4e6")
    return value


def _count_list_arg(text: str) -> tuple:
    parts = [p for p in text.replace(" ", "").split(",") if p]
    values = tuple(_count(p) for p in parts)
    if not values or None in values:
        raise argparse.ArgumentTypeError(f"bad sizes {text!r}: give whole numbers >= 1 (elements),"
                                         " e.g. 1e3,1e5")
    return values


def _positive_int_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"bad value {text!r}: give an integer >= 1")
    return value


def _seconds_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"bad time {text!r}: give a number of seconds > 0, e.g. 0.1")
    return value


def _threads_arg(text: str) -> int:
    """Threads per library: 1 up to the CPUs this process may use."""
    most = _cli_io.usable_cpus()
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= most:
        raise argparse.ArgumentTypeError(
            f"bad thread count {text!r}: give 1 to {most} (the CPUs this process may use;"
            " more threads than CPUs would time the operating system's scheduler)")
    return value


def _name_list_arg(choices):
    def parse(text: str) -> tuple:
        names = tuple(p for p in text.replace(" ", "").split(",") if p)
        bad = [n for n in names if n not in choices]
        if bad or not names:
            raise argparse.ArgumentTypeError(
                f"unknown name(s) {', '.join(bad) if bad else repr(text)}; choose from {', '.join(choices)}"
            )
        return names

    return parse


def _dtype_list_arg(text: str) -> tuple:
    names = tuple(p for p in text.replace(" ", "").split(",") if p)
    if not names:
        raise argparse.ArgumentTypeError(f"empty list {text!r}")
    return tuple(_dtype_arg(n) for n in names)


def _join_dash_values(argv: list) -> list:
    """``--shape -1,4`` → ``--shape=-1,4`` (argparse would take ``-1,4`` for an option)."""
    out = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg in _VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("-") \
                and not argv[i + 1].startswith("--"):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def _version() -> str:
    import leakyops

    v = getattr(leakyops, "__version__", None)
    if v:
        return str(v)
    from importlib.metadata import PackageNotFoundError, version  # pragma: no cover

    try:  # pragma: no cover
        return version("leakyops")
    except PackageNotFoundError:  # pragma: no cover - a source tree that is not installed
        return "unknown"


def _out(text: str = "") -> None:
    print(text, flush=False)


def _ops_with(param: str) -> str:
    """The operators that take ``param``, for a message: ``prelu and prelu_backward``."""
    return " and ".join(name for name, spec in OPERATORS.items() if param in spec.params)


def _check_op_options(op: str, args) -> None:
    """Reject options that do not apply to ``op`` (one line, exit 2)."""
    def given(name):
        value = getattr(args, name, None)
        return value is not None and value is not False  # --axis 0 is given
    params = OPERATORS[op].params
    if "slope" not in params and given("slope"):
        raise CLIError(f"--slope does not apply to {op} (its slopes are the weight)")
    if "self_is_result" not in params and given("self_is_result"):
        raise CLIError(f"--self-is-result applies to {_ops_with('self_is_result')} only, not {op}")
    # grad_output may broadcast against x where the result takes the broadcast shape
    if op != "leaky_relu_backward" and given("grad_shape"):
        raise CLIError(f"--grad-shape applies to leaky_relu_backward only, not {op}")
    if "axis" not in params and (given("weight_shape") or given("axis")):
        raise CLIError(f"--weight-shape/--axis apply to {_ops_with('axis')} only, not {op}")
    if given("isa") and getattr(args, "semantics", None) != "onednn":
        raise CLIError(f"--isa names the CPU of oneDNN's kernels; give it with --semantics onednn, "
                       f"not {args.semantics}")


def _params(op: str, args) -> dict:
    """The operator's parameters: the options given, the table's defaults for the others."""
    given = {"slope": args.slope, "self_is_result": args.self_is_result or None, "axis": args.axis}
    return {name: default if given[name] is None else given[name]
            for name, default in OPERATORS[op].params.items()}


# --------------------------------------------------------------------------- golden


def _default_weight_shape(shape: tuple, axis: int) -> tuple:
    if len(shape) < 2:
        return (1,)
    ax = axis if axis >= 0 else axis + len(shape)
    if not 0 <= ax < len(shape):
        raise CLIError(f"--axis {axis} is out of range for an input of rank {len(shape)}")
    return (shape[ax],)


def _case_plan(args) -> tuple[dict, tuple | None]:
    """Check a golden case's options (one line, exit 2); returns its parameters and weight shape."""
    op = args.op
    _check_op_options(op, args)
    params = _params(op, args)
    wshape = None
    if "weight" in OPERATORS[op].inputs:
        wshape = args.weight_shape if args.weight_shape is not None else _default_weight_shape(args.shape, params["axis"])
    _cli_ops.check_semantics(op, args.semantics, args.dtype, params, len(args.shape), soc=args.soc,
                             isa=args.isa)
    return params, wshape


def _make_case(args, params: dict, wshape, progress) -> tuple[dict, dict, dict]:
    """Inputs, outputs and semantics notes of a golden case."""
    rng = np.random.default_rng(args.seed)
    progress.step("generating inputs")
    inputs = _cli_ops.make_inputs(args.op, rng, args.shape, args.dtype, args.values, params,
                                  grad_shape=args.grad_shape, weight_shape=wshape, progress=progress)
    progress.step(f"computing {args.op} ({args.semantics})")
    outputs, notes = _cli_ops.run_op(args.op, inputs, params, args.semantics, soc=args.soc,
                                     isa=args.isa)
    return inputs, outputs, notes


def _tensor_entry(name: str, arr: np.ndarray) -> dict:
    entry = {
        "name": name,
        "dtype": dtype_name(arr.dtype),
        "shape": list(arr.shape),
        "npy": f"{name}.npy",
        "bin": f"{name}.bin",
        "bytes": int(arr.nbytes),
    }
    if arr.dtype == BF16:
        entry["npy_dtype"] = BF16_NPY  # the bits, so that plain NumPy reads the file
    return entry


#: the name of a tensor file in a case (a manifest's names are used only if they look like one)
_CASE_FILE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.(npy|bin)")


def _case_files(outdir: Path) -> set:
    """The tensor files of the golden case in ``outdir``, as its manifest lists them (none if
    there is no readable leakyops manifest)."""
    try:
        manifest = json.loads((outdir / MANIFEST).read_text())
        if not str(manifest.get("format", "")).startswith("leakyops-golden/"):
            return set()
        names = {e[key] for e in [*manifest["inputs"], *manifest["outputs"]] for key in ("npy", "bin")}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return set()
    return {n for n in names if isinstance(n, str) and _CASE_FILE.fullmatch(n)}


def cmd_golden(args) -> int:
    """Write a golden case into ``-o DIR`` as a whole.

    The new files go to temporary files in DIR; at the commit the old manifest is removed
    first, the new tensors are renamed into place, the old case's files that the new one
    lacks are removed, and the new manifest comes last (:class:`~leakyops._cli_io.AtomicFiles`,
    Ctrl-C deferred meanwhile). So an error or an interrupt leaves DIR with the old case, and
    a finished run with the new one only. Other files in DIR are left alone.
    """
    outdir = Path(args.output)
    if outdir.exists() and not outdir.is_dir():
        raise CLIError(f"output {outdir} is not a directory")
    params, wshape = _case_plan(args)
    # what the progress line counts: the x-sized inputs drawn, then every x-sized array written
    spec = OPERATORS[args.op]
    arrays_counted = sum(name not in PER_CHANNEL for name in spec.inputs) + spec.arrays_moved
    progress = Progress("leakyops golden", arrays_counted * math.prod(args.shape))
    with AtomicFiles() as files:
        files.make_dirs(outdir)
        files.reserve(outdir / MANIFEST, "-o")  # an unwritable directory fails before any work
        try:
            inputs, outputs, notes = _make_case(args, params, wshape, progress)
            old_files = _case_files(outdir)
            files.remove(outdir / MANIFEST)  # from here until the new manifest no case is claimed
            entries_in, entries_out = [], []
            for group, entries in ((inputs, entries_in), (outputs, entries_out)):
                for name, arr in group.items():
                    progress.step(f"writing {name}")
                    arr = np.ascontiguousarray(arr)
                    files.write(outdir / f"{name}.npy", ("npy", arr), "-o")
                    files.write(outdir / f"{name}.bin", arr, "-o")
                    progress.advance(arr.size)
                    entries.append(_tensor_entry(name, arr))
        finally:
            progress.close()
        new_files = {e[key] for e in entries_in + entries_out for key in ("npy", "bin")}
        for name in sorted(old_files - new_files):
            files.remove(outdir / name)
        manifest = {
            "format": FORMAT,
            "operator": args.op,
            "parameters": params,
            "semantics": args.semantics,
            "semantics_rules": _cli_ops.semantics_rules(args.semantics, args.op),
            **notes,
            "dtype": args.dtype,
            "shape": list(args.shape),
            "values": args.values,
            "seed": args.seed,
            "leakyops_version": _version(),
            "bin_layout": "raw little-endian, C order, no header",
            "npy_bfloat16": "bfloat16 tensors are stored in .npy as their bits in uint16 (npy_dtype);"
                            " .bin holds the same bytes",
            "inputs": entries_in,
            "outputs": entries_out,
        }
        files.write(outdir / MANIFEST, _dump_json(manifest), "-o")
    if not args.quiet:
        _out(f"wrote {args.op} golden case to {outdir}/ ({args.dtype}, shape {list(args.shape)},"
             f" seed {args.seed}, values {args.values}, semantics {args.semantics})")
        for e in entries_in:
            _out(f"  input  {e['name']:<12} {e['dtype']:<9} {e['shape']!s:<16} {e['npy']}, {e['bin']}")
        for e in entries_out:
            _out(f"  output {e['name']:<12} {e['dtype']:<9} {e['shape']!s:<16} {e['npy']}, {e['bin']}")
        if args.dtype == "bfloat16":
            _out("  (bfloat16 .npy files hold the bits as uint16: np.load(f).view(ml_dtypes.bfloat16))")
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
        raise CLIError(f"{path}: unreadable manifest ({first_line(exc)})") from None
    try:
        outputs = manifest["outputs"]
        for e in outputs:
            np_dtype(_dtype_arg(e["dtype"]))
            tuple(int(d) for d in e["shape"])
            str(e["name"]), str(e["bin"])
        if not outputs:
            raise ValueError
    except (KeyError, TypeError, ValueError, argparse.ArgumentTypeError):
        raise CLIError(f"{path}: not a leakyops golden manifest (outputs missing or malformed)") from None
    return manifest


_NAME_EQ = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+)$")


def _assign_actuals(outputs: list, actual_args: list, case_dir: Path) -> list:
    """Pair each golden output with one actual file: NAME=PATH, by file stem, or by order."""
    names = [e["name"] for e in outputs]
    pairs: dict = {}
    plain = []
    for arg in actual_args:
        m = _NAME_EQ.match(arg)
        if m and not Path(arg).exists():
            name, path = m.groups()
            if name not in names:
                raise CLIError(f"case {case_dir} has no output {name!r} (its outputs: {', '.join(names)})")
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


def _actual_source(path: Path, entry: dict, actual_dtype):
    """The actual output file, checked against the golden entry; returns (source, note)."""
    gdtype = np_dtype(_dtype_arg(entry["dtype"]))
    dtype = gdtype if actual_dtype is None else np_dtype(actual_dtype)
    shape = tuple(int(d) for d in entry["shape"])
    count = math.prod(shape)
    notes = []
    if path.suffix.lower() != ".npy":
        return _cli_io.raw_source(path, dtype, shape, "actual output"), ""
    src = _cli_io.npy_source(path, "actual output", dtype)
    if src.dtype != dtype:
        hint = ""
        if actual_dtype is None and src.dtype.kind == "f":
            hint = f"; if it holds {entry['dtype']} values stored as {dtype_name(src.dtype)}, give --actual-dtype " \
                   f"{dtype_name(src.dtype)}"
        got = dtype_name(src.dtype) if src.dtype.kind == "f" else str(src.dtype)
        raise CLIError(f"actual output {path}: dtype {got}, expected {dtype_name(dtype)}"
                       f" (golden {entry['name']}{', --actual-dtype' if actual_dtype else ''}){hint}")
    if src.count != count:
        raise CLIError(
            f"actual output {path}: {src.count} elements of shape {list(src.shape)},"
            f" expected {count} (shape {list(shape)})"
        )
    if src.shape != shape:
        if len(src.shape) != 1:
            raise CLIError(
                f"actual output {path}: shape {list(src.shape)}, expected {list(shape)} (golden {entry['name']});"
                " only a flat array of the same size is read in the golden's shape"
            )
        notes.append(f"flat shape {list(src.shape)} read as {list(shape)}")
    if src.encoding:
        notes.append(src.encoding)
    if src.fortran:
        notes.append("Fortran-ordered .npy, read whole")
    return src, "; ".join(notes)


def _golden_source(case_dir: Path, entry: dict):
    dtype = np_dtype(_dtype_arg(entry["dtype"]))
    shape = tuple(int(d) for d in entry["shape"])
    path = case_dir / entry["bin"]
    if not path.exists():
        raise CLIError(f"golden {path}: no such file (the golden directory is incomplete)")
    return _cli_io.raw_source(path, dtype, shape, "golden")


def _verify_options(args) -> dict:
    if args.err_thr is not None and args.standard != "ratio":
        raise CLIError("--err-thr applies to --standard ratio only")
    given = [name for name, value in (("--rtol", args.rtol), ("--atol", args.atol),
                                      ("--error-ratio", args.error_ratio)) if value is not None]
    if given and args.standard != "double-thousandth":
        raise CLIError(f"{'/'.join(given)} appl{'ies' if len(given) == 1 else 'y'} to --standard"
                       " double-thousandth only")
    return {"rtol": args.rtol, "atol": args.atol, "error_ratio": args.error_ratio}


def cmd_verify(args) -> int:
    options = _verify_options(args)
    with AtomicFiles() as files:
        if args.json:
            files.reserve(args.json, "--json")  # an unwritable path fails now
        return _verify_case(args, options, files)


def _verify_case(args, options: dict, files: AtomicFiles) -> int:
    """The comparison and its report; the --json file is written into ``files``."""
    case_dir = Path(args.case)
    manifest = _read_manifest(case_dir)
    plan = []
    for entry, path in _assign_actuals(manifest["outputs"], args.actual, case_dir):
        # check every file before any result: unusable input gives status 2 and no report
        golden = _golden_source(case_dir, entry)
        actual, note = _actual_source(path, entry, args.actual_dtype)
        standard = args.standard or DEFAULT_STANDARD.get(entry["name"], "exact")
        why = "from --standard" if args.standard else _DEFAULT_WHY[standard]
        plan.append((entry, path, golden, actual, note, standard, why))
    thresholds = args.err_thr or _verify.RATIO_DEFAULT
    progress = Progress("leakyops verify", sum(g.count for _, _, g, *_ in plan))
    results = []
    try:
        for entry, path, golden, actual, note, standard, why in plan:
            progress.step(entry["name"])
            comparer = _verify.Comparer(standard, golden.dtype, tuple(entry["shape"]), actual_dtype=actual.dtype,
                                        ratio_thresholds=thresholds, **options)
            for a, g in zip(actual.chunks(), golden.chunks(), strict=True):
                comparer.update(a, g)
                progress.advance(g.size)
            results.append((entry, path, note, why, comparer.result()))
    finally:
        progress.close()

    semantics = manifest.get("semantics", "pytorch")
    recorded = "semantics" in manifest
    rules = manifest.get("semantics_rules")
    if not isinstance(rules, str):
        rules = _cli_ops.semantics_rules(semantics, manifest.get("operator", "")) or "unknown"
    _out(f"leakyops verify: {manifest.get('operator', '?')} case {case_dir}"
         f" ({manifest.get('dtype', '?')}, shape {manifest.get('shape', '?')}, seed {manifest.get('seed', '?')})")
    _out(f"semantics: {semantics} ({rules})"
         + ("" if recorded else " [not recorded in the case; the default]"))
    if args.standard:
        _out(f"standard: {args.standard} (from --standard, for every output)")
    else:
        _out("standard: per output (exact for element-wise outputs, relative-error for grad_weight;"
             " --standard overrides)")
    if args.actual_dtype:
        _out(f"actual dtype: {args.actual_dtype} (--actual-dtype; compared as numbers with the golden)")
    for entry, path, note, why, cmp in results:
        _out("")
        _out(f"output {entry['name']} <- {path}  ({cmp.dtype}, shape {list(cmp.shape)})"
             + (f"  [{note}]" if note else ""))
        _out(f"  standard             {cmp.standard} ({why})")
        if cmp.actual_dtype:
            _out(f"  actual dtype         {cmp.actual_dtype} (compared as numbers with the {cmp.dtype} golden)")
        for line in cmp.report_lines():
            _out(line)
    failed = [(e["name"], c.standard) for e, _, _, _, c in results if not c.passed]
    _out("")
    if failed:
        _out(f"overall: FAIL ({len(failed)} of {len(results)} output(s) fail: "
             + ", ".join(f"{n} ({s})" for n, s in failed) + ")")
    else:
        _out(f"overall: PASS ({len(results)} output(s) pass: "
             + ", ".join(f"{e['name']} ({c.standard})" for e, _, _, _, c in results) + ")")
    if args.json:
        doc = {
            "case": str(case_dir),
            "operator": manifest.get("operator"),
            "semantics": semantics,
            "standard": args.standard or "per-output",
            "actual_dtype": args.actual_dtype,
            "passed": not failed,
            "outputs": [dict(name=e["name"], file=str(p), note=note, standard_source=why, **c.to_dict())
                        for e, p, note, why, c in results],
        }
        files.write(args.json, json.dumps(doc, indent=2) + "\n", "--json")
    return 1 if failed else 0


# --------------------------------------------------------------------------- run


def _run_inputs(op: str, args) -> dict:
    """Read the input files: .npy, or raw data given --dtype and one --shape per raw file."""
    names = OPERATORS[op].inputs
    if len(args.inputs) != len(names):
        raise CLIError(f"{op} takes {len(names)} input file(s) ({', '.join(names)}), got {len(args.inputs)}")
    paths = [Path(p) for p in args.inputs]
    raw = [p for p in paths if p.suffix.lower() != ".npy"]
    shapes = list(args.shape or [])
    dtype = None if args.dtype is None else np_dtype(args.dtype)
    if raw and dtype is None:
        raise CLIError(f"input {raw[0]}: raw data has no dtype or shape of its own; give --dtype and"
                       " one --shape per raw input")
    if len(shapes) != len(raw):
        which = ", ".join(str(p) for p in raw) or "none"
        raise CLIError(f"{len(shapes)} --shape given for {len(raw)} raw input(s) ({which});"
                       " give one --shape per raw input, in order (.npy files carry their own)")
    arrays = {}
    used_dtype = False
    shape_iter = iter(shapes)
    for name, path in zip(names, paths):
        what = f"input {name}"
        if path.suffix.lower() == ".npy":
            src = _cli_io.npy_source(path, what, dtype)
            if src.encoding == "bfloat16 bits as uint16":
                used_dtype = True
            elif src.dtype == np.uint16:
                raise CLIError(f"{what} {path}: uint16 data; if it holds bfloat16 bits, give --dtype bfloat16")
        else:
            src = _cli_io.raw_source(path, dtype, next(shape_iter), what)
            used_dtype = True
        arrays[name] = src.read_all()
    if dtype is not None and not used_dtype:
        raise CLIError("--dtype applies to raw inputs (and to uint16 .npy inputs holding bfloat16 bits) only")
    return arrays


def cmd_run(args) -> int:
    op = args.op
    _check_op_options(op, args)
    out_names = OPERATORS[op].outputs
    paths = [Path(p) for p in args.output]
    if len(paths) != len(out_names):
        raise CLIError(f"{op} has {len(out_names)} output(s) ({', '.join(out_names)}), got {len(paths)} -o path(s);"
                       " give one per output")
    if len({os.path.realpath(p) for p in paths}) != len(paths):
        raise CLIError("the -o paths must differ")
    with AtomicFiles() as files:
        for path in paths:  # a path that cannot be written fails before the inputs are read
            files.reserve(path, "-o")
        arrays = _run_inputs(op, args)
        params = _params(op, args)
        x = arrays["x"]
        _cli_ops.check_semantics(op, args.semantics,
                                 dtype_name(x.dtype) if x.dtype.kind == "f" or x.dtype == BF16 else "",
                                 params, x.ndim, isa=args.isa)
        outputs, _ = _cli_ops.run_op(op, arrays, params, args.semantics, isa=args.isa)
        written = []
        for name, path in zip(out_names, paths):
            arr = np.ascontiguousarray(outputs[name])
            data, fmt = _cli_io.array_format(path, arr)
            files.write(path, data, "-o")
            written.append(f"{name}: {dtype_name(arr.dtype)} {list(arr.shape)} -> {path} ({fmt})")
    if not args.quiet:
        for line in written:
            _out(line)
    return 0


# --------------------------------------------------------------------------- bench


def _plot_format(path: str) -> str:
    """The chart format of ``--plot``'s file name; a missing matplotlib or an unknown suffix is an error."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure
    except ImportError:
        raise CLIError("--plot needs matplotlib: pip install matplotlib") from None
    formats = sorted(Figure().canvas.get_supported_filetypes())
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in formats:
        given = f"format {suffix!r} is not supported" if suffix else "no format in the name"
        raise CLIError(f"--plot {path}: {given}; give a name ending in ." + ", .".join(formats))
    return suffix


def memory_room() -> list:
    """What one process may hold in arrays now, as (bytes, what says so) pairs: the memory
    available (Linux's MemAvailable: free memory and what the kernel can reclaim at once;
    elsewhere the free pages, else the machine's memory), and the room that an address-space
    limit leaves above what this process maps already (a process that runs the operators maps
    about as much: Python, NumPy, numba)."""
    rooms = []
    total = _memory.sysconf_bytes("SC_PHYS_PAGES")
    available = (_memory.proc_field("/proc/meminfo", "MemAvailable")
                 or _memory.sysconf_bytes("SC_AVPHYS_PAGES"))
    if available is not None:
        rooms.append((available, f"the {_bytes(available)} of memory available now"
                                 + (f" (of {_bytes(total)})" if total else "")))
    elif total is not None:
        rooms.append((total, f"this machine's {_bytes(total)} of memory"))
    limit = _memory.address_space_limit()
    if limit is not None:
        room = max(0, limit - (_memory.proc_field("/proc/self/status", "VmSize") or 0))
        rooms.append((room, f"the {_bytes(room)} that the address-space limit (ulimit -v"
                            f" {limit // 1024}) leaves to a process"))
    return rooms


def check_memory(option: str, needed: int) -> None:
    """Refuse a size whose arrays would not fit in the memory available now, or under the
    address-space limit (:func:`memory_room`), before any work."""
    for room, what in memory_room():
        if needed > room:
            raise CLIError(f"{option}: the largest case needs {_bytes(needed)} of arrays, more than {what}")


def check_measured(records) -> None:
    """A benchmark that timed nothing is no result (a table of '-'): status 1, one line, before
    any table or file is written."""
    from leakyops import _bench

    if not _bench.measured(records):
        raise CLIError("nothing was measured: every peer was skipped (see the lines above)", status=1)


def _bytes(n: float) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


def cmd_bench(args) -> int:
    from leakyops import _bench

    peers = args.peers or tuple(_bench.PEERS)
    if args.no_torch:
        peers = tuple(p for p in peers if p not in ("torch", "copy-torch"))
    dtypes = args.dtypes or _bench.DTYPES
    sizes = args.sizes or (_bench.QUICK_SIZES if args.quick else _bench.DEFAULT_SIZES)
    check_memory("--sizes", max(_bench.case(op, dt, n)["bytes"] for op in args.ops for dt in dtypes for n in sizes))
    fmt = _plot_format(args.plot) if args.plot else None
    with AtomicFiles() as files:
        if args.json:
            files.reserve(args.json, "--json")  # an unwritable path fails before any timing
        if args.plot:
            files.reserve(args.plot, "--plot")  # (and the same file as --json's)
        records = _bench.run(
            ops=args.ops,
            dtypes=dtypes,
            sizes=sizes,
            quick=args.quick,
            threads=args.threads,
            min_time=args.min_time,
            rounds=args.rounds,
            peers=peers,
            progress=not args.no_progress,
            log=lambda line: print(line, file=sys.stderr),
        )
        check_measured(records)
        _out(_bench.format_table(records, _bench.tier()))
        _out(_bench.summary(records))
        if args.json:
            files.write(args.json, json.dumps(_bench.to_json(records), indent=2) + "\n", "--json")
        if args.plot:
            with files.open(args.plot, "--plot") as fh:
                _bench.plot(records, fh, fmt=fmt)
    if args.plot:
        _out(f"chart written to {args.plot}")
    died = _bench.own_deaths(records)
    if died:  # the table and the files say where; the status says that leakyops failed
        raise CLIError(died, status=1)
    return 0


# --------------------------------------------------------------------------- demo


def cmd_demo(args) -> int:
    from leakyops import _bench, _demo

    if not args.no_speed:  # the operator's arrays and two copies' are alive at once
        check_memory("--speed-size", 3 * _bench.case("leaky_relu", "float32", args.speed_size)["bytes"])
    return _demo.run(_version(), args.dtypes, None if args.no_speed else args.speed_size)


# --------------------------------------------------------------------------- cases


def cmd_cases(args) -> int:
    from leakyops import _cases

    return _cases.command(args)


# --------------------------------------------------------------------------- parser


def sizes_text(sizes) -> str:
    """Element counts as the help and the docs write them: ``1e3, 4e6, 1.6e7 and 6.4e7``."""
    def short(n: int) -> str:
        exp = len(str(n)) - 1
        return f"{n / 10 ** exp:g}e{exp}"

    names = [short(n) for n in sizes]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


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
        p.add_argument("--soc", choices=_cli_ops.SOCS, default=None,
                       help="--semantics aclnn: the SoC profile (default: aclnn's, Ascend910B); on Ascend950 "
                            "prelu_backward's grad_weight is that chip's PReluGradUpdate + PReluGradReduce "
                            "pipeline's (each term rounded to the dtype, then a float32 sum)")
    p.add_argument("--isa", type=_isa_arg, default=None, metavar="ISA",
                   help="--semantics onednn: the CPU whose oneDNN kernels the result follows, as "
                        "ONEDNN_MAX_CPU_ISA names it (AVX2, AVX512_CORE_BF16, ...), 'host' (the one "
                        "oneDNN dispatches for on this machine) or 'model' (the default: the model's "
                        "fixed AVX-512 CPU with exact bfloat16, the same on every machine)")
    p.add_argument("--semantics", choices=SEMANTICS, default="pytorch",
                   help="whose rules the result follows: pytorch (default: x > 0, slope in the compute type), "
                        "aclnn (slope converted to float32 for every dtype), ascendc (x >= 0 keeps x, scalar "
                        "rounded to the tensor's type), onednn (run through leakyops.onednn's graph API)")



class _VersionAction(argparse.Action):
    """``--version``: the version; with ``--verbose`` anywhere on the line, also what the
    kernels run on (``leakyops.show_runtime``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"leakyops {_version()}")
        if "--verbose" in sys.argv[1:] or getattr(parser, "_verbose_version", False):
            import leakyops

            print(leakyops._format_runtime(leakyops.runtime_info()))
        parser.exit()


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
    parser.add_argument("--version", action=_VersionAction, nargs=0,
                        help="show the version and exit; with --verbose also the CPU, its "
                             "features, the caps and the path each kernel takes")
    parser.add_argument("--verbose", action="store_true", help="with --version: the runtime too")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    parser.subcommands = sub.choices  # name -> its parser (for the error of an unknown option)

    g = sub.add_parser(
        "golden", help="write inputs and expected outputs of an operator",
        description="Write the inputs and the expected outputs of OP as .npy and as raw little-endian "
                    ".bin files (C order, no header: what the vendors' sample programs read), plus a "
                    "case.json manifest (operator, parameters, semantics, dtypes, shapes, seed, leakyops "
                    "version). Inputs are x, grad_output and weight as the operator needs; outputs y, "
                    "grad_input and grad_weight. bfloat16 .npy files hold the bits as uint16, so plain "
                    "NumPy reads them (np.load(f).view(ml_dtypes.bfloat16)).\n\n"
                    "semantics (whose rules the expected outputs follow):\n"
                    "  pytorch  x > 0 keeps x; slope in the compute type (default; PyTorch on the CPU)\n"
                    "  aclnn    x > 0; the slope converted to float32 for every dtype, float64 too\n"
                    "           (aclnn ToFloat)\n"
                    "  ascendc  x >= 0 keeps x; the scalar rounded to the tensor's type (Ascend C\n"
                    "           LeakyRelu)\n"
                    "  onednn   the op run as a oneDNN Graph through leakyops.onednn (LeakyReLU,\n"
                    "           PReLU, PReLUBackward; no float64, no leaky_relu_backward)",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog=_examples("""
            leakyops golden leaky_relu --shape 8,1024 --dtype float16 --slope 0.2 -o lr_f16
            leakyops golden leaky_relu --shape 8,1024 --dtype float16 --semantics ascendc -o lr_ascendc
            leakyops golden leaky_relu_backward --shape 16,16 --dtype bf16 --self-is-result -o lrb
            leakyops golden prelu --shape 2,64,8,8 --dtype float32 -o prelu_nchw
            leakyops golden prelu --shape 2,8,8,64 --axis -1 --semantics onednn -o prelu_nhwc
            leakyops golden prelu_backward --shape 2,64,8,8 --values special -o prb
        """),
    )
    g.add_argument("op", choices=OPS, metavar="OP", help=f"one of {', '.join(OPS)}")
    g.add_argument("--shape", type=_shape_arg, required=True, help="shape of x, e.g. 2,3,4 (() for 0-d)")
    g.add_argument("--dtype", type=_dtype_arg, default="float32",
                   help="float16, bfloat16, float32 (default) or float64")
    _add_op_options(g, golden=True)
    g.add_argument("--seed", type=_seed_arg, default=0, help="random seed, an integer >= 0 (default 0)")
    g.add_argument("--values", choices=("normal", "uniform", "special"), default="normal",
                   help="normal: N(0,1); uniform: U(-1,1); special: normal with +-0, +-inf, NaN, "
                        "subnormals and the extremes mixed into x and grad_output (prelu_backward: the "
                        "non-finite ones confined to an eighth of the channels, so most grad_weight "
                        "sums stay finite)")
    g.add_argument("-o", "--output", required=True, metavar="DIR", help="directory to write (created if needed)")
    g.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    g.set_defaults(func=cmd_golden)

    v = sub.add_parser(
        "verify", help="compare a device's outputs with golden data",
        description="Compare ACTUAL output files (.npy, or raw little-endian data in the golden's dtype "
                    "and element count) with the golden outputs of DIR and print a report: the standard "
                    "and rule, elements compared, number and share over tolerance, max abs/rel error "
                    "with indices, the worst 10 elements, NaN/inf mismatches. Give one file per output, "
                    "in the manifest's order, named after the output (grad_weight.bin), or as NAME=PATH. "
                    "Files are read in chunks: memory stays small for any size.\n\n"
                    "standards (default: exact for element-wise outputs, relative-error for grad_weight;\n"
                    "--standard sets one for every output):\n"
                    "  exact              bitwise equal, NaN == NaN\n"
                    "  double-thousandth  the Ascend C samples' verify_result.py: the share of elements\n"
                    "                     failing np.isclose(a, g, rtol, atol, equal_nan=True) is at most\n"
                    "                     E; float32 rtol=1e-4 atol=1e-5 E=1e-4, float16/bfloat16\n"
                    "                     rtol=1e-3 atol=1e-5 E=1e-3 (in float32), float64 as float32;\n"
                    "                     --rtol, --atol, --error-ratio override\n"
                    "  ratio              share of elements with relative error > T1 under T2;\n"
                    "                     default T1,T2 = 0.01,0.05 (msOpST -err_thr)\n"
                    "  relative-error     MERE < t and MARE < 10t, t = 2^-10 float16, 2^-7 bfloat16,\n"
                    "                     2^-13 float32/float64 (Ascend ATK benchmark standard)\n\n"
                    "--actual-dtype D reads the actual files as dtype D (e.g. bfloat16 outputs dumped as\n"
                    "float32) and compares the values as numbers with the golden's thresholds.",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog=_examples("""
            leakyops verify lr_f16 npu_out.bin
            leakyops verify lr_f16 npu_out.bin --standard double-thousandth
            leakyops verify lr_f16 npu_out.bin --standard double-thousandth --rtol 1e-3 --error-ratio 0
            leakyops verify lr_f16 npu_out.bin --standard ratio --err-thr 0.001,0.001
            leakyops verify prb grad_input=out0.bin grad_weight=out1.bin
            leakyops verify bf16_case dump_y.npy --actual-dtype float32
        """) + "\n\nexit status: 0 the standard passes, 1 it does not, 2 unusable input",
    )
    v.add_argument("case", metavar="DIR", help="golden directory written by 'leakyops golden'")
    v.add_argument("actual", nargs="+", metavar="ACTUAL", help="actual output file(s): .npy or raw data")
    v.add_argument("--standard", choices=("exact", "double-thousandth", "ratio", "relative-error"),
                   default=None, help="precision standard for every output (default: per output, see above)")
    v.add_argument("--rtol", type=_tolerance_arg(), default=None, metavar="R",
                   help="double-thousandth: relative tolerance (default by dtype)")
    v.add_argument("--atol", type=_tolerance_arg(), default=None, metavar="A",
                   help="double-thousandth: absolute tolerance (default 1e-5)")
    v.add_argument("--error-ratio", type=_tolerance_arg(1.0), default=None, metavar="E",
                   help="double-thousandth: largest share of failing elements that passes (default by dtype)")
    v.add_argument("--err-thr", type=_pair_arg, default=None, metavar="T1,T2",
                   help="ratio standard thresholds (default 0.01,0.05)")
    v.add_argument("--actual-dtype", type=_dtype_arg, default=None, metavar="D",
                   help="dtype of the actual files (default: the golden's)")
    v.add_argument("--json", metavar="FILE", default=None, help="also write the report as JSON")
    v.set_defaults(func=cmd_verify)

    r = sub.add_parser(
        "run", help="apply an operator to .npy or raw files",
        description="Apply OP to the arrays in the INPUT files and write each result to exactly the -o "
                    "path given: .npy in NumPy's format, any other name as raw little-endian data (C "
                    "order, no header). Inputs by operator: leaky_relu, leaky_relu_: x; "
                    "leaky_relu_backward: grad_output x; prelu: x weight; prelu_backward: grad_output x "
                    "weight (two outputs, grad_input and grad_weight: give two -o paths). An input not "
                    "named .npy is raw data: give its --dtype and one --shape per raw input, in order. "
                    "bfloat16 .npy outputs hold the bits as uint16; a uint16 .npy input is read as "
                    "bfloat16 bits with --dtype bfloat16.",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog=_examples("""
            leakyops run leaky_relu x.npy --slope 0.1 -o y.npy
            leakyops run leaky_relu x.bin --dtype float16 --shape 8,1024 -o y.bin
            leakyops run leaky_relu_backward grad.npy x.npy -o gx.bin
            leakyops run prelu x.bin w.bin --dtype float32 --shape 2,3,4 --shape 3 -o y.npy
            leakyops run prelu_backward grad.npy x.npy w.npy -o gx.npy gw.npy
        """),
    )
    r.add_argument("op", choices=OPS, metavar="OP", help=f"one of {', '.join(OPS)}")
    r.add_argument("inputs", nargs="+", metavar="INPUT", help="input files (.npy, or raw data), in the operator's order")
    _add_op_options(r, golden=False)
    r.add_argument("--dtype", type=_dtype_arg, default=None,
                   help="dtype of the raw inputs (float16, bfloat16, float32, float64)")
    r.add_argument("--shape", type=_shape_arg, action="append", default=None, metavar="SHAPE",
                   help="shape of a raw input; once per raw input, in order")
    r.add_argument("-o", "--output", nargs="+", required=True, metavar="OUT", help="output file(s), one per output")
    r.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    r.set_defaults(func=cmd_run)

    from leakyops import _bench
    from leakyops._demo import DEFAULT_SPEED_SIZE as DEMO_SPEED_SIZE

    quick_rounds, quick_time = _bench.ROUNDS[1], _bench.MIN_TIME[1]
    b = sub.add_parser(
        "bench", help="time the operators against PyTorch, oneDNN, ONNX Runtime and a copy",
        description=f"Time every operator x dtype at {sizes_text(_bench.DEFAULT_SIZES)} elements (--quick: "
                    f"{sizes_text(_bench.QUICK_SIZES)}) for leakyops and its peers, each library in a "
                    f"process of its own, the processes taking turns over {_bench.ROUNDS[0]} rounds "
                    f"(--quick {quick_rounds}); each case is timed for about {_bench.MIN_TIME[0]:g} s per "
                    f"round (--quick {quick_time:g} s) and keeps its best time. Peers: torch (PyTorch's "
                    "aten ops, out= where they exist), onednn (the real oneDNN primitives: pip install "
                    "onednn-cpu-gomp==2023.2.0), onnxruntime (pip install onnxruntime onnx), and "
                    "copy-numpy, copy-torch, copy-leakyops: copies of the same bytes, the fastest of "
                    "which is the ceiling. Prints µs per call of each peer ('copy': the ceiling), "
                    "leakyops' GB/s (bytes read + written), 'x fastest' (the fastest library's time / "
                    "leakyops' time; > 1: leakyops is faster), 'peer' (that library) and 'x copy' "
                    "(leakyops' share of the copy ceiling's bandwidth). A peer that is not installed or "
                    "has no kernel for a case on this CPU is skipped with one line on stderr saying "
                    f"why. prelu/prelu_backward use (4, 64, L). A full run takes {_bench.FULL_RUN}; on a "
                    "terminal, a progress line on stderr shows the time left.",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog=_examples("""
            leakyops bench --quick
            leakyops bench --ops leaky_relu,prelu --dtypes float32,bf16 --plot bench.png
            leakyops bench --sizes 1e6 --threads 1 --peers leakyops,torch --json bench.json
        """) + "\n\nexit status: 0 measured, 1 nothing was measured or leakyops' own process died on a "
               "case, 2 unusable input (the largest case's arrays must fit in the memory available "
               "now and under ulimit -v), 130 interrupted",
    )
    b.add_argument("--quick", action="store_true",
                   help=f"sizes {sizes_text(_bench.QUICK_SIZES)}, {quick_rounds} rounds, {quick_time:g} s per case")
    b.add_argument("--ops", type=_name_list_arg(OPS), default=OPS, metavar="OPS",
                   help="comma-separated operators (default: all five)")
    b.add_argument("--dtypes", type=_dtype_list_arg, default=None, metavar="DTYPES",
                   help="comma-separated dtypes (default: all four)")
    b.add_argument("--sizes", type=_count_list_arg, default=None, metavar="N,…",
                   help="comma-separated element counts, whole numbers such as 1e6 (default: see above)")
    b.add_argument("--peers", type=_name_list_arg(tuple(_bench.PEERS)), default=None, metavar="PEERS",
                   help="comma-separated peers (default: all: " + ",".join(_bench.PEERS) + ")")
    b.add_argument("--threads", type=_threads_arg, default=None, metavar="N",
                   help="threads per library, 1 to the CPUs this process may use"
                        " (default: leakyops.get_num_threads())")
    b.add_argument("--rounds", type=_positive_int_arg, default=None, metavar="N",
                   help=f"rounds of turns (default {_bench.ROUNDS[0]}, --quick {quick_rounds})")
    b.add_argument("--min-time", type=_seconds_arg, default=None, metavar="SECONDS",
                   help=f"time each case for about this long per round (default {_bench.MIN_TIME[0]:g},"
                        f" --quick {quick_time:g})")
    b.add_argument("--no-torch", action="store_true", help="leave PyTorch out even if it is installed")
    b.add_argument("--no-progress", action="store_true",
                   help="no progress line (there is one on stderr only when it is a terminal)")
    b.add_argument("--plot", metavar="FILE.png", default=None,
                   help="draw GB/s by size per operator and dtype (needs matplotlib: pip install"
                        " matplotlib); the format is the name's suffix (.png, .pdf, .svg, …)")
    b.add_argument("--json", metavar="FILE", default=None, help="also write the measurements as JSON")
    b.set_defaults(func=cmd_bench)

    d = sub.add_parser(
        "demo", help="run every operator on built-in data: conformance and speed summary",
        description="Run every operator on built-in data: the vendors' documented examples (aclnn "
                    "LeakyRelu, LeakyReluBackward, PreluBackward; Ascend C LeakyRelu), random data of "
                    "each dtype checked bit for bit against a naive NumPy reference, and the special "
                    "values +-0, +-inf, NaN, subnormals and extremes; then a speed line: float32 "
                    "leaky_relu against the copy ceiling of the benchmark (the fastest copy of the "
                    "same bytes), each with its thread count, measured in rounds; on a busy machine "
                    "(rounds that disagree, a load average near the CPU count) it says so instead of "
                    "giving a number. Exit status 0 iff everything conforms. Needs neither PyTorch "
                    "nor any optional dependency.",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog=_examples("""
            leakyops demo
            leakyops demo --dtypes float32 --no-speed
        """),
    )
    d.add_argument("--dtypes", type=_dtype_list_arg, default=None, metavar="DTYPES",
                   help="comma-separated dtypes to check (default: all four)")
    d.add_argument("--no-speed", action="store_true", help="skip the speed line")
    d.add_argument("--speed-size", type=_count_arg, default=DEMO_SPEED_SIZE, metavar="N",
                   help=f"elements of the speed line, a whole number such as 4e6 (default {DEMO_SPEED_SIZE})")
    d.set_defaults(func=cmd_demo)

    from leakyops.aclnn import SOC_VERSIONS, get_soc_version

    c = sub.add_parser(
        "cases", help="run the vendor's ATK and TTK operator test suites through the aclnn emulation",
        description=textwrap.fill(
            "Run the operator test cases of Ascend's test tools through leakyops.aclnn: ATK suites "
            "(atk_*.json, a list of cases: id, aclnn_name, api_type, standard, inputs) and TTK tables "
            "(ttk_aclnn_*.csv, a case a row, the cells Python literals), as ops-nn keeps them under each "
            "operator's tests/st. Each case's inputs are drawn as leakyops reads the vendor's harness "
            "(uniform in each input's range and dtype, ATK's normal 'nd' ranges, constants), seeded by "
            "--seed and the case's name; the API runs on the --soc profile, both phases (a case the API "
            "rejects fails with its aclnn status and message); each output is compared with the golden, "
            "PyTorch's aten op computed by leakyops' core, under the case's precision rule: ATK acc "
            "'default' is double-thousandth, 'single_bm' relative-error; TTK absolute_precision p is "
            "double-thousandth with rtol = atol = error ratio = p (see 'leakyops verify --help'); "
            "--standard replaces them all. How the vendor's tools draw inputs and apply these rules is "
            "not published with the suites: these readings of them are assumptions. Element-wise cases "
            "over tensors of one shape, and aclnnPrelu of rank >= 2 with dim 0 > 1, run in chunks: a few "
            "chunks of memory whatever the shape. aclnnPreluBackward, an aclnnLeakyReluBackward whose "
            "tensors broadcast and any other aclnnPrelu run whole: about twice the case's tensors. "
            "A row per case, then a summary; a progress bar on stderr when it is "
            "a terminal. Every file is checked before any case runs. Ctrl-C stops the run and reports "
            "the cases that finished.", 100),
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog=_examples("""
            leakyops cases ops-nn/activation/leaky_relu/tests/st/aclnnLeakyRelu/atk_aclnnLeakyRelu.json
            leakyops cases atk_aclnnPrelu.json ttk_aclnn_leaky_relu_st.csv --soc Ascend950 --junit cases.xml
            leakyops cases atk_aclnnLeakyReluBackward.json --filter 'aclnnLeakyReluBackward_24?' --jobs 2
            leakyops cases atk_aclnnLeakyRelu.json --list
        """) + "\n\nexit status: 0 every case passes, 1 a case fails or is in error, 2 unusable input, "
               "130 interrupted",
    )
    c.add_argument("files", nargs="+", metavar="FILE", help="ATK suites (.json) and TTK tables (.csv)")
    c.add_argument("--soc", choices=SOC_VERSIONS, default=get_soc_version(),
                   help=f"the SoC profile of the aclnn emulation (default {get_soc_version()})")
    c.add_argument("--seed", type=_seed_arg, default=0, help="random seed, an integer >= 0 (default 0)")
    c.add_argument("--standard", choices=_verify.STANDARDS, default=None,
                   help="compare every output under this standard instead of the case's own rule")
    c.add_argument("--filter", action="append", default=None, metavar="PATTERN",
                   help="run the cases whose name matches: shell-style (*, ?, [...]), or any part of the "
                        "name; may be given again (any match)")
    c.add_argument("--list", action="store_true", help="list the cases (after --filter) and run none")
    c.add_argument("--keep-going", action="store_true",
                   help="report a malformed file or case as an error and run the rest (default: stop, status 2)")
    c.add_argument("--jobs", type=int, default=1, metavar="N", help="run the cases in N processes (default 1)")
    c.add_argument("--json", metavar="FILE", default=None, help="also write the report as JSON")
    c.add_argument("--junit", metavar="FILE", default=None, help="also write the report as JUnit XML")
    c.set_defaults(func=cmd_cases)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``leakyops`` command; returns the exit status."""
    with _cli_io.interrupt_handling():
        return _main(list(sys.argv[1:] if argv is None else argv))


def _main(argv: list) -> int:
    prog = "leakyops"
    try:
        parser = build_parser()
        parser._verbose_version = "--verbose" in argv  # (main(argv) as well as sys.argv)
        argv = _join_dash_values(argv)
        parser.reject_unknown_options(argv)
        args, extra = parser.parse_known_args(argv)
        command = parser.subcommands.get(getattr(args, "command", None) or "")
        if extra:
            (command or parser).unrecognized(extra)
        if getattr(args, "func", None) is None:
            parser.print_help(sys.stderr)
            return 2
        prog = f"leakyops {args.command}"
        status = int(args.func(args) or 0)
        _cli_io.check_interrupt()  # one that was swallowed on its way up still ends the command
        return status
    except CLIError as exc:
        sys.stdout.flush()
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        _say(f"{prog}: interrupted")
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
        print(f"{prog}: internal error: {type(exc).__name__}: {first_line(exc)}"
              " (set LEAKYOPS_DEBUG=1 for the traceback)", file=sys.stderr)
        return 3


def _say(line: str) -> None:
    """One line on stderr, after what stdout holds so far (either may be closed by now)."""
    for stream, text in ((sys.stdout, ""), (sys.stderr, line + "\n")):
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):
            pass
