"""Reading the two case-file formats into :class:`~leakyops._cases._spec.Case` objects.

ATK suites (``atk_*.json``): a JSON list of cases, each with ``id``, ``name``, ``aclnn_name``,
``api_type`` (the executor), ``standard`` (``acc``, ``perf``) and ``inputs`` (``name``,
``type`` tensor/scalar/attr, ``required``, ``dtype``, ``shape``, ``range_values``,
``backward``, ``align_32B``).

TTK tables (``ttk_aclnn_*.csv``): one case a row under a header, the cells Python literals
(read with :func:`ast.literal_eval`, never evaluated as code): ``testcase_name``,
``api_name``, ``tensor_dtypes``, ``tensor_formats``, ``tensor_view_shapes``,
``input_data_ranges``, ``output_tensor_indexes``, ``output_dtypes``, ``scalar_dtypes``,
``scalar_data_ranges``, ``attributes``, ``absolute_precision`` and, where a table has it,
``precision_tolerances``. A list of one item may be written as the item (``('float16')``,
``((196, 2, 1))``).

Everything is checked before any case runs. A problem is one line that names the file, the
case (ATK: its id) or line (TTK), and the field: :class:`Malformed`. A field that is not
read is counted, to be reported once per file (a TTK column by its presence in the header).
"""

from __future__ import annotations

import ast
import csv
import dataclasses
import io
import json
import math
from pathlib import Path

import numpy as np

from leakyops import aclnn

from ._apis import APIS, ATK_EXECUTORS, Api, api_named
from ._spec import DTYPE_NAMES, FLOATS, NP_DTYPES, Case, Dist, Standard, TensorSpec, ValueSpec, finite_max

ATK_CASE_FIELDS = frozenset({"id", "name", "aclnn_name", "api_type", "standard", "inputs"})
ATK_INPUT_FIELDS = frozenset({"name", "type", "required", "dtype", "shape", "range_values", "backward",
                              "align_32B"})
TTK_REQUIRED = ("testcase_name", "api_name", "tensor_dtypes", "tensor_view_shapes", "input_data_ranges",
                "output_tensor_indexes", "absolute_precision")
TTK_COLUMNS = frozenset(TTK_REQUIRED + ("tensor_formats", "output_dtypes", "scalar_dtypes", "scalar_data_ranges",
                                        "attributes", "precision_tolerances"))
STANDARDS = ("exact", "double-thousandth", "ratio", "relative-error")
INT64_MAX = 2 ** 63 - 1  # aclnn's dimensions and element counts are int64_t
_SPECIAL = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class Malformed(Exception):
    """A file or case that cannot be run as written (one line: file, case or line, field)."""


@dataclasses.dataclass
class Suite:
    """The cases of one file, and the fields it has that are not read: field -> the cases
    that give it (0: a TTK column in the header, empty in every row)."""

    file: str
    cases: list
    unread: dict


class _Field(Exception):
    """A problem with one field of a case; the reader adds the file and the case."""

    def __init__(self, field: str, problem: str):
        super().__init__(problem)
        self.field = field


def _short(value, limit: int = 60) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def read_suite(path: str, standard: str | None = None) -> Suite:
    """The cases of an ATK JSON suite or a TTK CSV table (by extension, else by content).

    ``standard`` (``--standard``) replaces every case's precision rule. Raises
    :class:`Malformed` for a file that cannot be read at all; a malformed case comes back
    as a :class:`Case` with ``error`` set.
    """
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise Malformed(f"{path}: no such file") from None
    except IsADirectoryError:
        raise Malformed(f"{path}: is a directory (give the case files)") from None
    except UnicodeDecodeError:
        raise Malformed(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise Malformed(f"{path}: {exc.strerror or exc}") from None
    suffix = Path(path).suffix.lower()
    head = text.lstrip()[:1]
    if suffix == ".json" or (suffix != ".csv" and head == "["):
        return _read_atk(path, text, standard)
    if suffix == ".csv" or text.split("\n", 1)[0].startswith("testcase_name"):
        return _read_ttk(path, text, standard)
    raise Malformed(f"{path}: neither an ATK JSON suite (.json) nor a TTK CSV table (.csv)")


def _malformed_case(path: str, where: str, name: str, api: str, exc: _Field) -> Case:
    return Case(name=name, file=path, where=where, api=api, error=f"{path}: {where}: {exc.field}: {exc}")


# --------------------------------------------------------------------------- values


def parse_range(value, dtype: str) -> Dist:
    """An input's distribution from its range as written (ATK ``range_values``, TTK ranges).

    ``[low, high]`` (``"-inf"``/``"inf"`` bounds: the dtype's finite extremes), one constant,
    a one-element list, ``"inf"``/``"-inf"``/``"nan"``, or ATK's ``{"name": "nd", "mean":
    [lo, hi], "std": [lo, hi]}``. Raises ``ValueError`` saying what is wrong.
    """
    text = _short(value)
    if isinstance(value, dict):
        return _normal(value, dtype, text)
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"{text} is not [low, high], one value or a one-element list")
        low, high = (_bound(v, dtype, text) for v in value)
        if low > high:
            raise ValueError(f"{text}: low > high")
        dist = Dist("const", low, low, text=text) if low == high else Dist("uniform", low, high, text=text)
    else:
        v = _number(value, text)
        dist = Dist("const", v, v, text=text)
    _check_representable(dist, dtype, text)
    return dist


def _number(value, text: str) -> float:
    if isinstance(value, str) and value.lower() in _SPECIAL:
        return _SPECIAL[value.lower()]
    if isinstance(value, (bool, int, float)):
        return float(value)
    raise ValueError(f"{text} is not a number, 'inf', '-inf' or 'nan'")


def _bound(value, dtype: str, text: str) -> float:
    v = _number(value, text)
    if math.isnan(v):
        raise ValueError(f"{text}: a range bound cannot be nan")
    if math.isinf(v):  # the dtype's extreme finite value
        big = finite_max(dtype) if dtype in FLOATS else float(np.iinfo(NP_DTYPES[dtype]).max) \
            if dtype != "bool" else 1.0
        return math.copysign(big, v)
    return v


def _normal(value: dict, dtype: str, text: str) -> Dist:
    if value.get("name") != "nd" or set(value) - {"name", "mean", "std"}:
        raise ValueError(f"{text}: a distribution object is {{'name': 'nd', 'mean': [lo, hi], 'std': [lo, hi]}}")
    pairs = []
    for key in ("mean", "std"):
        pair = value.get(key)
        if not (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in pair)
                and pair[0] <= pair[1]):
            raise ValueError(f"{text}: {key} must be [low, high], two finite numbers with low <= high")
        pairs.append((float(pair[0]), float(pair[1])))
    if pairs[1][0] < 0:
        raise ValueError(f"{text}: std must not be negative")
    if dtype not in FLOATS:
        raise ValueError(f"{text}: a normal distribution needs a float dtype, not {dtype}")
    return Dist("normal", mean=pairs[0], std=pairs[1], text=text)


def _check_representable(dist: Dist, dtype: str, text: str) -> None:
    if dtype in FLOATS or dtype == "bool":
        return
    info = np.iinfo(NP_DTYPES[dtype])
    for v in {dist.low, dist.high}:
        if not math.isfinite(v) or not info.min <= v <= info.max:
            raise ValueError(f"{text} is not representable in {dtype}")
        if dist.kind == "const" and v != int(v):
            raise ValueError(f"{text} is not an integer, as {dtype} needs")


def _dtype(value) -> str:
    if not isinstance(value, str) or value not in DTYPE_NAMES:
        raise ValueError(f"unknown dtype {_short(value)} (known: {', '.join(sorted(DTYPE_NAMES))})")
    return DTYPE_NAMES[value]


def _is_shape(value) -> bool:
    return isinstance(value, (list, tuple)) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value)


def _shape(value) -> tuple:
    if not _is_shape(value):
        raise ValueError(f"{_short(value)} is not a list of non-negative integers")
    _check_int64(value)
    return tuple(value)


def _check_int64(shape) -> None:
    """Every dimension, and the element count, must fit aclnn's int64_t (a larger shape
    cannot be a tensor, and would not be refused before its chunks were counted)."""
    for i, d in enumerate(shape):
        if d > INT64_MAX:
            raise ValueError(f"{_short(list(shape))}: dimension {i} is above int64's largest (2**63 - 1)")
    if math.prod(shape) > INT64_MAX:
        raise ValueError(f"{_short(list(shape))}: the element count is above int64's largest (2**63 - 1)")


def _standard_of(standard: str | None, name: str, options: tuple, source: str) -> Standard:
    if standard is not None:
        return Standard(standard, (), "--standard")
    return Standard(name, options, source)


# --------------------------------------------------------------------------- ATK JSON


def _read_atk(path: str, text: str, standard: str | None) -> Suite:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Malformed(f"{path}: line {exc.lineno} column {exc.colno}: bad JSON ({exc.msg})") from None
    except RecursionError:
        raise Malformed(f"{path}: bad JSON (nested too deeply)") from None
    except ValueError as exc:  # an integer of more digits than int() converts
        raise Malformed(f"{path}: bad JSON ({exc})") from None
    if not isinstance(doc, list):
        raise Malformed(f"{path}: an ATK suite is a JSON list of cases, not a {type(doc).__name__}")
    unread: dict = {}
    cases, ids = [], set()
    for index, raw in enumerate(doc):
        cid = raw.get("id") if isinstance(raw, dict) else None
        valid_id = isinstance(cid, int) and not isinstance(cid, bool) and cid >= 0
        where = f"case {cid}" if valid_id else f"case at index {index}"
        api = raw.get("aclnn_name") if isinstance(raw, dict) else None
        known = api_named(api) if isinstance(api, str) else None
        name = f"{known.name if known else 'case'}_{cid if valid_id else index}"
        try:
            if not isinstance(raw, dict):
                raise _Field("case", f"a case is a JSON object, got {type(raw).__name__}")
            if not valid_id:
                raise _Field("id", f"{_short(cid)} is not a non-negative integer")
            if cid in ids:
                raise _Field("id", f"{cid} appears twice in the file")
            ids.add(cid)
            cases.append(_atk_case(path, where, name, raw, standard, unread))
        except _Field as exc:
            cases.append(_malformed_case(path, where, name, api if isinstance(api, str) else "?", exc))
    return Suite(path, cases, unread)


SINGLE_BM_FIELDS = frozenset({"type"})  # the keys of standard.acc.single_bm that are read


def _count_single_bm_fields(standard, unread: dict) -> None:
    """The keys of ``standard.acc.single_bm`` other than ``type`` are not read: count them
    (whether or not ``--standard`` replaces the rule)."""
    acc = standard.get("acc") if isinstance(standard, dict) else None
    options = acc.get("single_bm") if isinstance(acc, dict) else None
    if isinstance(options, dict):
        for key in (k for k in options if k not in SINGLE_BM_FIELDS):  # in the file's order
            field = f"standard.acc.single_bm.{key}"
            unread[field] = unread.get(field, 0) + 1


def _atk_standard(standard) -> Standard:
    acc = standard.get("acc", "default") if isinstance(standard, dict) else None
    if not isinstance(standard, dict) or set(standard) - {"acc", "perf"}:
        raise _Field("standard", f"{_short(standard)} is not {{'acc': ..., 'perf': ...}}")
    if acc == "default":
        return Standard("double-thousandth", (), 'ATK acc "default"')
    if isinstance(acc, dict) and list(acc) == ["single_bm"]:
        kind = acc["single_bm"].get("type", "high_precision") if isinstance(acc["single_bm"], dict) else None
        if kind != "high_precision":
            raise _Field("standard.acc", f"single_bm type {_short(kind)} is not supported (high_precision is)")
        acc = "single_bm"
    if acc == "single_bm":
        return Standard("relative-error", (), 'ATK acc "single_bm"')
    raise _Field("standard.acc", f"unknown accuracy standard {_short(acc)} (known: default, single_bm)")


def _atk_case(path: str, where: str, name: str, raw: dict, standard: str | None, unread: dict) -> Case:
    for key in raw.keys() - ATK_CASE_FIELDS:
        unread[key] = unread.get(key, 0) + 1
    _count_single_bm_fields(raw.get("standard"), unread)
    for key in ("aclnn_name", "api_type", "inputs"):
        if key not in raw:
            raise _Field(key, "missing")
    api = api_named(raw["aclnn_name"]) if isinstance(raw["aclnn_name"], str) else None
    if api is None:
        raise _Field("aclnn_name", f"unknown API {_short(raw['aclnn_name'])} (known: {', '.join(APIS)})")
    executor = ATK_EXECUTORS.get(raw["api_type"]) if isinstance(raw["api_type"], str) else None
    if executor is None:
        raise _Field("api_type", f"unknown executor {_short(raw['api_type'])} (known: {', '.join(ATK_EXECUTORS)})")
    if executor.api != api.name:
        raise _Field("api_type", f"{raw['api_type']} runs {executor.api}, the case names {api.name}")
    if "name" in raw and not isinstance(raw["name"], str):
        raise _Field("name", f"{_short(raw['name'])} is not a string")
    # --standard replaces the case's rule, which then need not be one this command knows
    std = Standard(standard, (), "--standard") if standard else _atk_standard(raw.get("standard", {"acc": "default"}))
    if not isinstance(raw["inputs"], list):
        raise _Field("inputs", "not a list of inputs")
    tensors: dict = {}
    values: dict = {}
    backward = []
    for j, item in enumerate(raw["inputs"]):
        param, arg, grad = _atk_input(j, item, executor.names, api, unread)
        if param in tensors or param in values:
            raise _Field(f"inputs[{j}].name", f"{item['name']!r} appears twice")
        (tensors if isinstance(arg, TensorSpec) else values)[param] = arg
        if grad:
            backward.append(item["name"])
    missing = [n for n, p in executor.names.items() if p not in tensors and p not in values]
    if missing:
        raise _Field("inputs", f"missing {', '.join(map(repr, missing))} ({raw['api_type']} reads "
                               f"{', '.join(executor.names)})")
    for param, (shape, dtype) in api.infer(tensors).items():
        tensors.setdefault(param, TensorSpec(param, param, dtype, shape))
    notes = (f"backward: {', '.join(backward)} take gradients in ATK's PyTorch mode; an aclnn run has none",) \
        if backward else ()
    return Case(name=name, file=path, where=where, api=api.name,
                tensors=tuple(tensors[p] for p in api.tensors), values=tuple(values[p] for p in api.scalars + api.attrs),
                standards=tuple((p, std) for p in api.outputs),
                notes=notes)


def _atk_input(j: int, item, names: dict, api: Api, unread: dict):
    if not isinstance(item, dict):
        raise _Field(f"inputs[{j}]", f"an input is a JSON object, got {type(item).__name__}")
    for key in item.keys() - ATK_INPUT_FIELDS:
        unread[f"inputs.{key}"] = unread.get(f"inputs.{key}", 0) + 1
    label = item.get("name")
    if not isinstance(label, str) or label not in names:  # a list or a dict is no key
        raise _Field(f"inputs[{j}].name", f"{_short(label)} is not an input of this executor (it reads "
                                          f"{', '.join(names)})")
    field = f"input {label!r}"
    param = names[label]
    kind = "tensor" if param in api.tensors else "scalar" if param in api.scalars else "attr"
    if item.get("type") != kind:
        raise _Field(f"{field} type", f"{_short(item.get('type'))}: {param} of {api.name} is a {kind}")
    for key in ("required", "backward", "align_32B"):
        if item.get(key) is not None and not isinstance(item[key], bool):
            raise _Field(f"{field} {key}", f"{_short(item[key])} is not true, false or null")
    for key in ("dtype", "range_values"):
        if key not in item:
            raise _Field(f"{field} {key}", "missing")
    try:
        dtype = _dtype(item["dtype"])
    except ValueError as exc:
        raise _Field(f"{field} dtype", str(exc)) from None
    try:
        dist = parse_range(item["range_values"], dtype)
    except ValueError as exc:
        raise _Field(f"{field} range_values", str(exc)) from None
    if kind == "tensor":
        try:
            shape = _shape(item.get("shape"))
        except ValueError as exc:
            raise _Field(f"{field} shape", str(exc)) from None
        return param, TensorSpec(param, label, dtype, shape, dist), bool(item.get("backward"))
    if item.get("shape") not in (None, []):
        raise _Field(f"{field} shape", f"{_short(item['shape'])}: a {kind} has no shape (null)")
    return param, ValueSpec(param, label, kind, dtype, dist), bool(item.get("backward"))


# --------------------------------------------------------------------------- TTK CSV


def _literal(column: str, text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise _Field(column, f"{_short(text)} is not a Python literal") from None


def _items(column: str, value, is_item, what: str) -> list:
    """A list of items, where a single item stands for a list of one."""
    if is_item(value):
        return [value]
    if isinstance(value, (list, tuple)) and all(is_item(v) for v in value):
        return list(value)
    raise _Field(column, f"{_short(value)} is not {what}")


def _is_pair(value) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(
        isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in value)


def _is_index(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _read_ttk(path: str, text: str, standard: str | None) -> Suite:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise Malformed(f"{path}: empty file (a TTK table starts with a header line)") from None
    except csv.Error as exc:
        raise Malformed(f"{path}: line 1: not CSV ({exc})") from None
    header = [h.strip() for h in header]
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise Malformed(f"{path}: line 1: header: column(s) {', '.join(dup)} appear twice")
    missing = [c for c in TTK_REQUIRED if c not in header]
    if missing:
        raise Malformed(f"{path}: line 1: header: missing column(s) {', '.join(missing)}")
    unread = {c: 0 for c in header if c not in TTK_COLUMNS}  # reported if in the header, even if empty
    cases, names = [], set()
    line = 1
    while True:
        start = line + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise Malformed(f"{path}: line {reader.line_num}: not CSV ({exc})") from None
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        where = f"line {start}"
        cells = dict(zip(header, row))
        name = cells.get("testcase_name", "").strip() or f"line_{start}"
        try:
            if len(row) != len(header):
                lost = header[len(row):]
                raise _Field("row", f"{len(row)} fields, the header has {len(header)}"
                                    + (f" (missing {', '.join(lost)})" if lost else ""))
            if name in names:
                raise _Field("testcase_name", f"{name!r} appears twice in the file")
            names.add(name)
            for c in unread:
                if cells[c].strip():
                    unread[c] += 1
            cases.append(_ttk_case(path, where, name, cells, standard))
        except _Field as exc:
            cases.append(_malformed_case(path, where, name, cells.get("api_name", "?").strip(), exc))
    return Suite(path, cases, unread)


def _ttk_case(path: str, where: str, name: str, cells: dict, standard: str | None) -> Case:
    raw = {c: cells.get(c, "").strip() for c in TTK_COLUMNS}
    for c in TTK_REQUIRED:
        if not raw[c]:
            raise _Field(c, "empty")
    api = api_named(raw["api_name"])
    if api is None:
        raise _Field("api_name", f"unknown API {_short(raw['api_name'])} (known: {', '.join(APIS)})")
    lit = {c: _literal(c, raw[c]) for c in TTK_COLUMNS - {"testcase_name", "api_name"} if raw[c]}
    n = len(api.tensors)

    def counted(column, items, count, what):
        if len(items) != count:
            raise _Field(column, f"{len(items)} {what} for {api.name}'s {count} ({', '.join(api.tensors)})"
                         if count == n else f"{len(items)} {what}, {api.name} needs {count}")
        return items

    try:
        dtypes = [_dtype(d) for d in _items("tensor_dtypes", lit["tensor_dtypes"], lambda v: isinstance(v, str),
                                            "dtype names")]
    except ValueError as exc:
        raise _Field("tensor_dtypes", str(exc)) from None
    counted("tensor_dtypes", dtypes, n, "dtypes")
    shapes = counted("tensor_view_shapes", _items("tensor_view_shapes", lit["tensor_view_shapes"], _is_shape,
                                                  "a shape or a list of shapes (non-negative integers)"), n, "shapes")
    for shape in shapes:
        try:
            _check_int64(shape)
        except ValueError as exc:
            raise _Field("tensor_view_shapes", str(exc)) from None
    formats = _items("tensor_formats", lit.get("tensor_formats", "ND"), lambda v: isinstance(v, str), "format names")
    if len(formats) not in (1, n):
        counted("tensor_formats", formats, n, "formats")
    for f in formats:
        if not hasattr(aclnn.aclFormat, f"ACL_FORMAT_{f}"):
            raise _Field("tensor_formats", f"unknown format {f!r}")
    formats = formats * n if len(formats) == 1 else formats
    indexes = _items("output_tensor_indexes", lit["output_tensor_indexes"], _is_index, "tensor indexes")
    if any(not -n <= i < n for i in indexes):
        raise _Field("output_tensor_indexes", f"{_short(lit['output_tensor_indexes'])}: {api.name} has {n} tensors")
    if sorted(api.tensors[i] for i in indexes) != sorted(api.outputs):
        raise _Field("output_tensor_indexes", f"{_short(lit['output_tensor_indexes'])} names "
                                              f"{', '.join(api.tensors[i] for i in indexes)}; {api.name} writes "
                                              f"{', '.join(api.outputs)}")
    if "output_dtypes" in lit:
        try:
            out_dtypes = [_dtype(d) for d in _items("output_dtypes", lit["output_dtypes"],
                                                    lambda v: isinstance(v, str), "dtype names")]
        except ValueError as exc:
            raise _Field("output_dtypes", str(exc)) from None
        want = [dtypes[api.tensors.index(p)] for p in api.outputs]
        if out_dtypes != want:
            raise _Field("output_dtypes", f"{out_dtypes} differ from the outputs' tensor_dtypes {want}")
    ranges = counted("input_data_ranges", _items("input_data_ranges", lit["input_data_ranges"], _is_pair,
                                                 "a [low, high] range or a list of them"), len(api.inputs), "ranges")
    tensors = []
    for i, param in enumerate(api.tensors):
        dist = None
        if param in api.inputs:
            try:
                dist = parse_range(ranges[api.inputs.index(param)], dtypes[i])
            except ValueError as exc:
                raise _Field("input_data_ranges", str(exc)) from None
        tensors.append(TensorSpec(param, param, dtypes[i], tuple(shapes[i]), dist, formats[i]))
    values = _ttk_values(api, lit)
    return Case(name=name, file=path, where=where, api=api.name, tensors=tuple(tensors), values=values,
                standards=_ttk_standards(api, lit, standard))


def _key(name: str) -> str:
    return name.replace("_", "").lower()


def _ttk_values(api: Api, lit: dict) -> tuple:
    attributes = lit.get("attributes", {})
    if not isinstance(attributes, dict):
        raise _Field("attributes", f"{_short(attributes)} is not a dict")
    params = {_key(p): p for p in api.scalars + api.attrs}
    given = {}
    for key, value in attributes.items():
        if not isinstance(key, str) or _key(key) not in params:
            raise _Field("attributes", f"{_short(key)} is not an argument of {api.name}"
                                       f" ({', '.join(api.scalars + api.attrs) or 'it has none'})")
        given[params[_key(key)]] = (key, value)
    scalar_dtypes: list = []
    scalar_ranges: list = []
    if api.scalars:
        try:
            scalar_dtypes = [_dtype(d) for d in _items("scalar_dtypes", lit.get("scalar_dtypes"),
                                                       lambda v: isinstance(v, str), "dtype names")]
        except ValueError as exc:
            raise _Field("scalar_dtypes", str(exc)) from None
        if len(scalar_dtypes) != len(api.scalars):
            raise _Field("scalar_dtypes", f"{len(scalar_dtypes)} dtypes for {api.name}'s scalars "
                                          f"({', '.join(api.scalars)})")
        if any(p not in given for p in api.scalars):
            scalar_ranges = _items("scalar_data_ranges", lit.get("scalar_data_ranges"), _is_pair,
                                   "a [low, high] range or a list of them")
            if len(scalar_ranges) != len(api.scalars):
                raise _Field("scalar_data_ranges", f"{len(scalar_ranges)} ranges for {api.name}'s scalars "
                                                   f"({', '.join(api.scalars)})")
    values = []
    for i, param in enumerate(api.scalars + api.attrs):
        scalar = param in api.scalars
        dtype = scalar_dtypes[i] if scalar else "bool"
        if param in given:
            key, value = given[param]
            column = f"attributes[{key!r}]"
        elif scalar:
            column, value = "scalar_data_ranges", scalar_ranges[i]
        else:
            column, value = "attributes", False  # an attribute not given: false
        if not scalar and not isinstance(value, bool):
            raise _Field(column, f"{_short(value)}: {param} is true or false")
        try:
            dist = parse_range(value, dtype)
        except ValueError as exc:
            raise _Field(column, str(exc)) from None
        values.append(ValueSpec(param, param, "scalar" if scalar else "attr", dtype, dist))
    return tuple(values)


def _ttk_standards(api: Api, lit: dict, standard: str | None) -> tuple:
    p = lit["absolute_precision"]
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 1:
        raise _Field("absolute_precision", f"{_short(p)} is not a number in [0, 1]")
    pairs = [(p, p)] * len(api.outputs)
    if "precision_tolerances" in lit:
        pairs = _items("precision_tolerances", lit["precision_tolerances"], _is_pair, "(rtol, error ratio) pairs")
        if len(pairs) < len(api.outputs) or not all(
                isinstance(v, (int, float)) and 0 <= v <= 1 for pair in pairs for v in pair):
            raise _Field("precision_tolerances", f"{_short(lit['precision_tolerances'])} is not one (rtol, error "
                                                 f"ratio) pair in [0, 1] per output ({', '.join(api.outputs)})")
    out = []
    for param, (rtol, ratio) in zip(api.outputs, pairs):
        options = (("rtol", float(rtol)), ("atol", float(p)), ("error_ratio", float(ratio)))
        source = f"TTK absolute_precision {p:g}" + (", precision_tolerances" if "precision_tolerances" in lit else "")
        out.append((param, _standard_of(standard, "double-thousandth", options, source)))
    return tuple(out)
