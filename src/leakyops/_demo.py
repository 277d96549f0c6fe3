"""``leakyops demo``: every operator on built-in data, a conformance report and a speed line.

Three groups of checks, one PASS/FAIL line each:

1. the vendors' documented examples (aclnn and Ascend C API docs), under their options;
2. random data of each dtype (contiguous, strided, a broadcast gradient, in place, NCHW and
   channels-last PReLU, a shared weight) bit for bit against the naive references of
   :mod:`leakyops._reference`; sums (``grad_weight``) to the relative-error standard, since
   their order of summation is the library's;
3. the special values (±0, ±inf, NaN, subnormals, the extremes), every value against every
   value as (input, gradient) pairs, for every operator of the table, with four slopes;

then the speed of float32 ``leaky_relu`` against the benchmark's copy ceiling (the fastest
copy of the same bytes; :mod:`leakyops._bench._ceiling`), each with the threads it ran on, or
a line saying the machine is too busy to tell. Every operator is reached through the
operator table (:mod:`leakyops._operators`). Needs no optional dependency.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time

import numpy as np

from leakyops import _verify
from leakyops._cli_io import first_line, np_dtype, usable_cpus
from leakyops._cli_ops import random_tensor, special_values
from leakyops._operators import DTYPES, OPERATORS, SUMS
from leakyops._verify import dtype_name

__all__ = ["run"]


def _out(text: str = "") -> None:
    print(text, flush=False)


def _call(op: str, arrays: dict, params: dict | None = None, **options) -> dict:
    return OPERATORS[op].call(arrays, params, **options)


class _Checks:
    """The checks' results, each printed as it comes."""

    def __init__(self):
        self.results = []

    def add(self, name: str, passed: bool, detail: str = "") -> None:
        self.results.append((name, bool(passed), detail))
        mark = "PASS" if passed else "FAIL"
        _out(f"  {mark}  {name}" + (f"  -- {detail}" if detail and not passed else ""))

    def compare(self, name: str, actual, expected, standard: str = "exact") -> None:
        actual = np.asarray(actual)
        expected = np.asarray(expected)
        if actual.shape != expected.shape or actual.dtype != expected.dtype:
            self.add(name, False, f"got {dtype_name(actual.dtype)} {list(actual.shape)},"
                                  f" expected {dtype_name(expected.dtype)} {list(expected.shape)}")
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
            self.add(name, False, f"{type(exc).__name__}: {first_line(exc)}")

    def operator(self, op: str, head: str, what: str, arrays: dict, params: dict) -> None:
        """The core against the reference on ``arrays``, one check per output, named ``head
        what`` (and the output where there are several). An in-place operator runs on a copy
        of ``x``, and must return it."""
        spec = OPERATORS[op]
        expected = spec.reference(arrays, params)
        if spec.in_place:
            buf = arrays["x"].copy()
            result = spec.call({**arrays, "x": buf}, params)["y"]
            self.compare(f"{head} {what}", buf, expected["y"])
            if result is not buf:
                self.add(f"{head} returns its out", False, "result is not the out array")
            return
        results = spec.call(arrays, params)
        for name in spec.outputs:
            self.compare(f"{head} {what}" + (f" {name}" if len(spec.outputs) > 1 else ""), results[name],
                         expected[name], "relative-error" if name in SUMS else "exact")


# --------------------------------------------------------------------------- the vendors' examples


def _vendor(checks: _Checks) -> None:
    f32 = np.float32
    _out("vendor documented examples (aclnn and Ascend C API docs)")
    aclnn = {"slope_dtype": np.float32}  # aclnn converts the scalar to float (ToFloat)
    ascendc = {"compare": ">=", "slope_dtype": "storage"}  # src >= 0 keeps src; the scalar in half

    def lr():
        y = _call("leaky_relu", {"x": np.array([1, 2, 3, 4], f32)}, {"slope": 0.01}, **aclnn)["y"]
        checks.compare("aclnnLeakyRelu: {1,2,3,4}, slope 0.01 -> {1,2,3,4}", y, np.array([1, 2, 3, 4], f32))

    def lrb():
        arrays = {"grad_output": np.array([2, 3, 4, 5], f32), "x": np.array([1, 2, 3, 4], f32)}
        gi = _call("leaky_relu_backward", arrays, {"slope": 0.01, "self_is_result": True}, **aclnn)["grad_input"]
        checks.compare("aclnnLeakyReluBackward: grad {2,3,4,5}, self {1,2,3,4}, selfIsResult -> {2,3,4,5}",
                       gi, np.array([2, 3, 4, 5], f32))

    def prb():
        x = np.arange(8, dtype=f32).reshape(4, 2)
        arrays = {"grad_output": np.ones((4, 2), f32), "x": x, "weight": np.array([0.5, 0.5], f32)}
        r = _call("prelu_backward", arrays)
        checks.compare("aclnnPreluBackward: gradInput {0.5,1,1,1,1,1,1,1}", r["grad_input"],
                       np.array([0.5, 1, 1, 1, 1, 1, 1, 1], f32).reshape(4, 2))
        checks.compare("aclnnPreluBackward: gradWeight {0,0}", r["grad_weight"], np.array([0, 0], f32))

    def ascendc_1():
        x = np.arange(1, 513, dtype=np.float16)
        x[:2] = -x[:2]
        y = _call("leaky_relu", {"x": x}, {"slope": 2.0}, **ascendc)["y"]
        expected = x.copy()
        expected[:2] = np.array([-2, -4], np.float16)
        checks.compare("Ascend C LeakyRelu (half, scalar 2, 512): [-1,-2,3..512] -> [-2,-4,3..512]", y, expected)

    def ascendc_2():
        x = np.array([-287, 246, -438, 177, 596, -950, -293, 322], np.float16)
        y = _call("leaky_relu", {"x": x}, {"slope": 0.001}, **ascendc)["y"]
        expected = np.array([-0.287, 246, -0.438, 177, 596, -0.950, -0.293, 322], np.float16)
        # the documented output is rounded decimals: to half precision, not bit for bit
        checks.compare("Ascend C LeakyRelu (half, scalar 0.001): documented output to half precision",
                       y, expected, "double-thousandth")

    for name, fn in (("aclnnLeakyRelu", lr), ("aclnnLeakyReluBackward", lrb), ("aclnnPreluBackward", prb),
                     ("Ascend C LeakyRelu example 1", ascendc_1), ("Ascend C LeakyRelu example 2", ascendc_2)):
        checks.run(name, fn)


# --------------------------------------------------------------------------- random data


def _random(checks: _Checks, dtypes) -> None:
    _out("random data vs a naive NumPy reference (bit-exact; grad_weight to the relative-error standard)")
    for dname in dtypes:
        _random_dtype(checks, dname)


def _random_dtype(checks: _Checks, dname: str) -> None:
    dt = np_dtype(dname)
    rng = np.random.default_rng(20240611)
    x = random_tensor(rng, (3, 257), dt, "normal")
    g = random_tensor(rng, (3, 257), dt, "normal")
    x4 = random_tensor(rng, (2, 3, 5, 7), dt, "normal")
    g4 = random_tensor(rng, (2, 3, 5, 7), dt, "normal")
    w3 = random_tensor(rng, (3,), dt, "normal")
    w7 = random_tensor(rng, (7,), dt, "normal")
    w1 = random_tensor(rng, (1,), dt, "normal")
    tag = f"{dname:<9}"
    # (the name a crash is reported under, the operator, what the case is, its arrays and parameters)
    cases = [
        ("leaky_relu", "leaky_relu", "(3, 257), slope 0.01", {"x": x}, {"slope": 0.01}),
        ("leaky_relu strided", "leaky_relu", "strided view [:, ::-3], slope -1.5", {"x": x[:, ::-3]},
         {"slope": -1.5}),
        ("leaky_relu_", "leaky_relu_", "in place, slope 0.2", {"x": x}, {"slope": 0.2}),
        ("leaky_relu_backward", "leaky_relu_backward", "(3, 257), slope 0.01", {"grad_output": g, "x": x},
         {"slope": 0.01}),
        ("leaky_relu_backward b", "leaky_relu_backward", "grad (3, 1) broadcast, self_is_result, slope 0.5",
         {"grad_output": g[:, :1], "x": x}, {"slope": 0.5, "self_is_result": True}),
        ("prelu", "prelu", "NCHW (2, 3, 5, 7), 3 channels", {"x": x4, "weight": w3}, {"axis": 1}),
        ("prelu channels-last", "prelu", "channels-last axis=-1, 7 channels", {"x": x4, "weight": w7},
         {"axis": -1}),
        ("prelu_backward", "prelu_backward", "NCHW, 3 channels", {"grad_output": g4, "x": x4, "weight": w3},
         {"axis": 1}),
        ("prelu_backward shared", "prelu_backward", "one shared weight",
         {"grad_output": g4, "x": x4, "weight": w1}, {"axis": 1}),
    ]
    for name, op, what, arrays, params in cases:
        check = functools.partial(checks.operator, op, f"{op:<21} {tag}", what, arrays, params)
        checks.run(f"{name:<21} {tag}", check)


# --------------------------------------------------------------------------- special values


def _special(checks: _Checks, dtypes) -> None:
    _out("special values (+-0, +-inf, NaN, subnormals, extremes), slopes 0.01, 0, -2, 3")
    for dname in dtypes:
        _special_dtype(checks, dname)


def _first_mismatch(dt, x, slope) -> str:
    """The first output of the table's operators that differs from its reference, in words ("" if none).

    ``grad_weight`` is left out: one NaN or infinity among its terms makes the value of the
    sum depend on their order.
    """
    s = special_values(dt)
    grad = np.concatenate([s[::-1], np.tile(s, s.size)])
    pool = {"x": x, "grad_output": grad, "weight": np.array([slope], dtype=dt)}
    params = {"slope": slope, "axis": 0}
    for spec in OPERATORS.values():
        arrays = {name: pool[name] for name in spec.inputs}
        expected = spec.reference(arrays, params)
        if spec.in_place:
            buf = x.copy()
            spec.call({**arrays, "x": buf}, params)
            results = {"y": buf}
        else:
            results = spec.call(arrays, params)
        for out in spec.outputs:
            if out in SUMS:
                continue
            name = spec.name + (f" {out}" if len(spec.outputs) > 1 else "")
            got, want = np.asarray(results[out]), expected[out]
            if got.dtype != want.dtype or got.shape != want.shape:
                return f"{name}, slope {slope}: dtype/shape differ"
            cmp = _verify.compare(got, want, "exact")
            if not cmp.passed:
                i = cmp.worst[0][0][0]
                return (f"{name}, slope {slope}: x={float(x[i])!r}: expected"
                        f" {float(want[i])!r}, got {float(got[i])!r}")
    return ""


def _special_dtype(checks: _Checks, dname: str) -> None:
    dt = np_dtype(dname)
    s = special_values(dt)
    x = np.concatenate([s, np.repeat(s, s.size)])  # every special against every special (the gradient)
    detail = ""
    try:
        for slope in (0.01, 0.0, -2.0, 3.0):
            detail = _first_mismatch(dt, x, slope)
            if detail:
                break
    except Exception as exc:  # noqa: BLE001
        detail = f"{type(exc).__name__}: {first_line(exc)}"
    checks.add(f"all five operators    {dname:<9} {x.size} special inputs x 4 slopes", not detail, detail)


# --------------------------------------------------------------------------- speed


#: Elements of the speed line by default.
DEFAULT_SPEED_SIZE = 1 << 22

#: The rounds of the speed line; the machine counts as busy when the best times of one
#: measurement differ by more than ``DISAGREE`` between rounds, or when the load average
#: before it, less the demo's own share (:func:`others_load`), is within half a CPU of the
#: CPUs this process may use.
ROUNDS = 3
DISAGREE = 1.25


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return None


def own_load(cpu: float, wall: float) -> float:
    """This process's share of the 1-minute load average after it used ``cpu`` seconds of CPU
    over the last ``wall`` seconds: the average counts runnable threads and forgets with a time
    constant of a minute, so ``r`` threads running for ``W`` seconds add ``r (1 - e^(-W/60))``."""
    if wall <= 0:
        return 0.0
    return cpu / wall * -math.expm1(-wall / 60.0)


def others_load(start: tuple) -> float | None:
    """The 1-minute load average now, less what this run added since ``start`` (``(monotonic
    time, process CPU time)``): the demo's own compile and checks, a minute of one busy CPU on
    an empty kernel cache, are not a busy machine."""
    load = _load()
    if load is None:
        return None
    own = own_load(time.process_time() - start[1], time.monotonic() - start[0])
    return max(0.0, load - own)


def speed_lines(n: int, result: dict, load: float | None, cpus: int) -> list[str]:
    """The speed lines for a measurement of :func:`leakyops._bench._ceiling.against_copy` of
    float32 ``leaky_relu`` on ``n`` elements.

    The copy ceiling is the fastest copy, as in ``leakyops bench``; on a busy machine one line
    says so and gives no figure.
    """
    what = f"speed (float32 leaky_relu, {n:,} elements"
    peers = result["peers"]
    spread = max(max(p["seconds"]) / min(p["seconds"]) for p in peers.values())
    busy = []
    if load is not None and load >= cpus - 0.5:
        busy.append(f"load average {load:.2f} on {cpus} CPU{'s' if cpus > 1 else ''}")
    if spread > DISAGREE:
        busy.append(f"the rounds differ by up to {spread:.2f}x")
    if busy:
        return [f"{what}): not measured, the machine is busy ({'; '.join(busy)}); run 'leakyops demo'"
                " again when it is idle"]
    best = {name: min(p["seconds"]) for name, p in peers.items()}
    ceiling = min((name for name in peers if name != "leakyops"), key=best.get)
    label = {"leakyops": "leakyops.leaky_relu", "copy-numpy": "copy: numpy copyto",
             "copy-leakyops": "copy: leakyops' copy"}
    lines = [f"{what}; GB/s of bytes read + written, best of {len(peers['leakyops']['seconds'])} rounds;"
             " the copy ceiling is the fastest copy of the same bytes, as in 'leakyops bench')"]
    for name, p in peers.items():
        t = best[name]
        threads = f"{p['threads']} thread{'s' if p['threads'] > 1 else ''}"
        mark = "   (the copy ceiling)" if name == ceiling else ""
        lines.append(f"  {label.get(name, name):<22} {threads:>10} {result['bytes'] / t / 1e9:8.2f} GB/s"
                     f"   {t * 1e3:.3f} ms{mark}")
    lines.append(f"  share of the copy ceiling {best[ceiling] / best['leakyops']:8.2f}")
    return lines


def _speed(n: int, start: tuple) -> list[str]:
    from leakyops._bench import _ceiling

    load = others_load(start)
    result = _ceiling.against_copy("leaky_relu", "float32", n, rounds=ROUNDS)
    return speed_lines(n, result, load, usable_cpus())


def _compile_notice() -> str:
    """What to say before the first checks when the kernels will be compiled ("" if they are cached).

    numba's disk cache holds no kernel of leakyops on a first run and after an upgrade (its
    index is keyed by the kernels' source files); then every kernel the demo uses is compiled,
    about a minute. Read from numba's cache index of every compiled function in
    ``leakyops._kernels``; a numba without that index gives no notice.
    """
    try:
        from numba.core.dispatcher import Dispatcher

        from leakyops import _kernels  # noqa: F401 - a module or a package of modules

        modules = [m for name, m in list(sys.modules.items())
                   if name == "leakyops._kernels" or name.startswith("leakyops._kernels.")]
        kernels = {id(obj): obj for m in modules for obj in vars(m).values() if isinstance(obj, Dispatcher)}
        caches = [k._cache for k in kernels.values()]
        files = [c._cache_file for c in caches if hasattr(c, "_cache_file")]
        if not caches:
            return ""
        if not files:
            return "compiling the kernels (about a minute; the disk cache is off, so every run compiles them)"
        if any(f._load_index() for f in files):
            return ""
    except Exception:  # noqa: BLE001 - numba's internals moved: no notice
        return ""
    return "compiling the kernels, once (about a minute; numba keeps them on disk for later runs)"


def run(version: str, dtypes=None, speed_size: int | None = DEFAULT_SPEED_SIZE) -> int:
    """The demo's report on stdout; returns the exit status (0 iff every check passes).

    ``dtypes``: names (default: all four); ``speed_size``: elements of the speed line
    (``None``: no speed line).
    """
    start = (time.monotonic(), time.process_time())  # this run's own load counts from here
    dtypes = dtypes or tuple(DTYPES)
    notice = _compile_notice()
    if notice:
        print(f"leakyops demo: {notice}", file=sys.stderr, flush=True)
    _out(f"leakyops {version} demo: every operator on built-in data")
    _out("")
    checks = _Checks()
    _vendor(checks)
    _out("")
    _random(checks, dtypes)
    _out("")
    _special(checks, dtypes)
    _out("")
    if speed_size is not None:
        try:
            for line in _speed(speed_size, start):
                _out(line)
        except Exception as exc:  # noqa: BLE001 - the speed summary is informational
            _out(f"speed: not measured ({type(exc).__name__}: {first_line(exc)})")
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
