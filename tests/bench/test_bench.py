"""The benchmark runner (``leakyops bench``, ``benchmarks/bench.py``): processes, skips, ratios.

These tests check the machinery (every library in its own process, peers skipped with one
line, a crashing peer, the arithmetic of the ratios), never a speed: timings are not tested.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leakyops import _bench
from leakyops._bench import _cases, _peers
from leakyops._operators import OPERATORS


def _cli(*args, env=None):
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "leakyops", "bench", *map(str, args)],
                          capture_output=True, text=True, env=full, timeout=600, check=False)


def test_bench_runs_each_peer_in_its_own_process(tmp_path):
    js = tmp_path / "b.json"
    res = _cli("--sizes", "1000", "--ops", "leaky_relu,prelu_backward", "--dtypes", "bf16",
               "--peers", "leakyops,copy-numpy,copy-leakyops", "--rounds", "2", "--min-time", "0.001",
               "--json", js)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr == ""  # stderr is no terminal: no progress line
    assert "tier: " in res.stdout.splitlines()[0]
    head = res.stdout.splitlines()[1]
    for col in ("leakyops", "torch", "onednn", "copy", "x fastest", "x copy"):
        assert col in head
    rows = [ln for ln in res.stdout.splitlines() if ln.startswith(("leaky_relu ", "prelu_backward "))]
    assert len(rows) == 2
    doc = json.loads(js.read_text())
    assert doc["cpu"] and doc["date"]
    assert doc["tier"]["cpu_isa"] and doc["tier"]["leakyops_target"]
    recs = doc["records"]
    assert {r["peer"] for r in recs} == {"leakyops", "copy-numpy", "copy-leakyops"}
    for r in recs:
        assert r["seconds"] > 0 and r["gbps"] > 0 and r["skipped"] is None
        per = {"leaky_relu": 2, "prelu_backward": 3, "leaky_relu:alloc": 2, "prelu_backward:fresh": 3,
               "prelu_backward:one_slope": 3}[r["op"]]
        assert r["bytes"] == per * r["elements"] * (2 if r["dtype"] == "bfloat16" else 4)
    pb = [r for r in recs if r["op"] == "prelu_backward"]
    assert all(r["shape"][:2] == [4, 64] and len(r["shape"]) == 3 for r in pb)


def _torch_blocker(tmp_path):
    pkg = tmp_path / "blocker" / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('torch is blocked by the test')\n")
    return str(tmp_path / "blocker")


def test_a_missing_peer_is_skipped_with_one_line(tmp_path):
    env = {"PYTHONPATH": os.pathsep.join([_torch_blocker(tmp_path)] + [p for p in sys.path if p])}
    res = _cli("--sizes", "1000,2000", "--ops", "leaky_relu", "--dtypes", "float32",
               "--peers", "leakyops,torch", "--rounds", "1", "--min-time", "0.001", "--no-progress",
               env=env)
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("skipped torch (3 cases): PyTorch is not installed")  # 2 + alloc
    rows = [ln for ln in res.stdout.splitlines() if ln.startswith("leaky_relu ")]
    assert len(rows) == 2 and all(r.split()[4] == "-" for r in rows)  # torch: no time


def test_a_peer_whose_process_dies_is_reported_not_fatal():
    lines = []
    recs = _bench.run(ops=("leaky_relu",), dtypes=("float32",), sizes=(1000, 2000), rounds=1,
                      min_time=0.001, peers=("leakyops", "no-such-peer"), extra=False,
                      progress=False, log=lines.append)
    ours = [r for r in recs if r["peer"] == "leakyops"]
    dead = [r for r in recs if r["peer"] == "no-such-peer"]
    assert len(ours) == 2 and all(r["seconds"] > 0 for r in ours)
    assert len(dead) == 2 and all(r["seconds"] is None for r in dead)
    assert all("its process died" in r["skipped"] and "KeyError" in r["skipped"] for r in dead)
    assert len(lines) == 1 and lines[0].startswith("skipped no-such-peer (2 cases): its process died")


def _rec(op, peer, seconds, size=10_000):
    return {"op": op, "dtype": "float32", "size": size, "shape": [size], "elements": size,
            "bytes": 8 * size, "peer": peer, "threads": 2, "seconds": seconds,
            "gbps": None if seconds is None else 8 * size / seconds / 1e9,
            "skipped": None if seconds is not None else "n/a"}


def test_ratios_are_the_fastest_peer_and_the_best_copy():
    recs = [_rec("leaky_relu", "leakyops", 2e-6), _rec("leaky_relu", "torch", 3e-6),
            _rec("leaky_relu", "onednn", 2.5e-6), _rec("leaky_relu", "onnxruntime", None),
            _rec("leaky_relu", "copy-numpy", 1.8e-6), _rec("leaky_relu", "copy-torch", 1.6e-6),
            _rec("prelu", "leakyops", 4e-6), _rec("prelu", "torch", 2e-6),
            _rec("prelu", "copy-numpy", 1e-6)]
    name, ratio, share = _bench._ratios({r["peer"]: r for r in recs if r["op"] == "leaky_relu"})
    assert name == "onednn" and ratio == pytest.approx(1.25) and share == pytest.approx(0.8)
    table = _bench.format_table(recs)
    row = next(ln for ln in table.splitlines() if ln.startswith("leaky_relu "))
    assert row.split()[-4:] == ["40.00", "1.25", "onednn", "0.80"]
    assert _bench.summary(recs) == ("1 of 2 cases from 1e+04 elements on are >= 1.0x the fastest "
                                    "peer; below: prelu float32 1e+04 0.50")


def test_onednn_skip_reasons_name_the_cpu_feature():
    epyc = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_bf16", "f16c"}
    assert _peers.onednn_missing_feature("float16", epyc) == "no avx512_fp16 and no AVX2-VNNI-2"
    assert _peers.onednn_missing_feature("bfloat16", epyc) is None
    assert _peers.onednn_missing_feature("float16", epyc | {"avx512_fp16"}) is None
    assert _peers.onednn_missing_feature("bfloat16", {"avx2"}) == "no avx512_core and no AVX2-VNNI-2"


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    recs = [_rec("leaky_relu", "leakyops", 2e-6, n) for n in (1000, 10_000)]
    recs += [_rec("leaky_relu", "copy-numpy", 1e-6, n) for n in (1000, 10_000)]
    _bench.plot(recs, tmp_path / "b.png")
    assert (tmp_path / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _bench_py(*args):
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench.py"
    return subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True,
                          timeout=600, check=False)


def test_bench_py_writes_its_files_whole(tmp_path):
    pytest.importorskip("matplotlib")
    recs = [_rec("leaky_relu", "leakyops", 2e-6, n) for n in (1000, 10_000)]
    recs += [_rec("leaky_relu", "copy-numpy", 1e-6, n) for n in (1000, 10_000)]
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps(_bench.to_json(recs)))
    js, md, png = tmp_path / "b.json", tmp_path / "b.md", tmp_path / "b.png"
    for path in (js, md, png):
        path.write_text("old")
    res = _bench_py("--from-json", earlier, "--json", js, "--markdown", md, "--plot", png)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert json.loads(js.read_text())["records"] == recs
    assert md.read_text() == _bench.format_markdown(recs) + "\n"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["b.json", "b.md", "b.png", "earlier.json"]  # no temporary file left

    # a write error: one line, status 2, and every file keeps what it held (the others are
    # written first: the error comes at the Markdown file, after the JSON one)
    before = {p: p.read_bytes() for p in (js, md, png)}
    if os.path.exists("/dev/full"):
        (tmp_path / "full.md").symlink_to("/dev/full")
        res = _bench_py("--from-json", earlier, "--json", js, "--markdown", tmp_path / "full.md", "--plot", png)
        assert res.returncode == 2 and res.stderr.strip() == (
            f"bench.py: error: cannot write /dev/full: {os.strerror(errno.ENOSPC)}"), res.stderr
        assert {p: p.read_bytes() for p in (js, md, png)} == before
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files + ["full.md"])


@pytest.mark.parametrize("option,name,message", [
    ("--json", "no/b.json", "cannot write --json {tmp}/no/b.json: no such directory {tmp}/no"),
    ("--markdown", ".", "--markdown {tmp}: is a directory"),
    ("--plot", "b.xyz", "--plot {tmp}/b.xyz: format 'xyz' is not supported"),
])
def test_bench_py_checks_its_paths_before_the_first_timing(option, name, message, tmp_path):
    if option == "--plot":
        pytest.importorskip("matplotlib")
    res = _bench_py("--sizes", "1000", "--ops", "leaky_relu", "--dtypes", "float32", "--peers", "leakyops",
                    "--rounds", "1", option, tmp_path / name)
    assert res.returncode == 2 and res.stdout == "", (res.stdout, res.stderr)  # no table: nothing timed
    assert res.stderr.strip().startswith("bench.py: error: " + message.replace("{tmp}", str(tmp_path))), res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("args,line", [
    (["--sizes", "1.5"], "bench.py: error: argument --sizes: bad sizes '1.5': give whole numbers >= 1"),
    (["--sizes", "1e12"], "bench.py: error: --sizes: the largest case needs 7.3 TiB of arrays, more than the "),
    (["--min-time", "-1"], "bench.py: error: argument --min-time: bad time '-1': give a number of seconds > 0"),
    (["--min-time", "0"], "bench.py: error: argument --min-time: bad time '0'"),
    (["--peers", "numpy"], "bench.py: error: argument --peers: unknown name(s) numpy; choose from leakyops, torch"),
    (["--ops", "relu"], "bench.py: error: argument --ops: unknown name(s) relu"),
    (["--dtypes", "int8"], "bench.py: error: argument --dtypes: unsupported dtype 'int8'"),
    (["--threads", "1000"], "bench.py: error: argument --threads: bad thread count '1000': give 1 to"),
    (["--rounds", "0"], "bench.py: error: argument --rounds: bad value '0': give an integer >= 1"),
    (["--json", "{tmp}/r.json", "--markdown", "{tmp}/./r.json"],
     "bench.py: error: --json and --markdown must be different files (both name {tmp}/r.json)"),
])
def test_bench_py_checks_its_options_as_leakyops_bench_does(args, line, tmp_path):
    """Each bad value is one line and status 2, before anything is timed (the run would take
    moments, so a missing check shows as a table and status 0)."""
    quick = {"--sizes": "1000", "--ops": "leaky_relu", "--dtypes": "float32", "--peers": "leakyops",
             "--rounds": "1", "--min-time": "0.001"}
    for option in args[::2]:
        quick.pop(option, None)
    res = _bench_py(*[a.format(tmp=tmp_path) for a in args], *[t for kv in quick.items() for t in kv])
    assert res.returncode == 2 and res.stdout == "", (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(line.format(tmp=tmp_path)), res.stderr
    assert list(tmp_path.iterdir()) == []


def test_nothing_measured_is_a_failure_not_a_table_of_dashes(tmp_path):
    env = {"PYTHONPATH": os.pathsep.join([_torch_blocker(tmp_path)] + [p for p in sys.path if p])}
    js = tmp_path / "b.json"
    res = _cli("--sizes", "1000", "--ops", "leaky_relu", "--dtypes", "float32", "--peers", "torch,copy-torch",
               "--rounds", "1", "--min-time", "0.001", "--json", js, env=env)
    assert res.returncode == 1 and res.stdout == "", (res.returncode, res.stdout, res.stderr)
    assert res.stderr.splitlines()[-1] == ("leakyops bench: error: nothing was measured: every peer was skipped"
                                           " (see the lines above)")
    assert not js.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]


def _main(*args):
    """``leakyops`` in this process: (status, stdout, stderr)."""
    import contextlib
    import io

    from leakyops.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in args])
    return status, out.getvalue(), err.getvalue()


def test_a_run_where_leakyops_died_is_a_failure(monkeypatch, tmp_path):
    """The table and the JSON show what was measured; the status and the last line say that
    leakyops' own process died (here made to, on its 2000-element case)."""
    real = _bench._spawn

    def spawn(peer, threads, min_time):
        worker = real(peer, threads, min_time)
        if peer == "leakyops":
            timed = worker.time

            def time(c):
                if c["key"].endswith("|2000"):
                    worker.close()
                    return {"crashed": f"{_bench.DIED} (exit status -9): "}
                return timed(c)
            worker.time = time
        return worker

    monkeypatch.setattr(_bench, "_spawn", spawn)
    js = tmp_path / "b.json"
    status, out, err = _main("bench", "--sizes", "1000,2000", "--ops", "leaky_relu", "--dtypes", "float32",
                             "--peers", "leakyops,copy-numpy", "--rounds", "1", "--min-time", "0.001", "--json", js)
    assert status == 1, (out, err)
    assert err.splitlines()[-1] == (
        "leakyops bench: error: leakyops' own process died on 1 case; the first, leakyops on leaky_relu float32"
        " 2,000 elements: its process died (exit status -9): ")
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("leaky_relu ")]
    assert [r[3] != "-" for r in rows] == [True, False]  # leakyops' µs: 1000 measured, 2000 not
    recs = json.loads(js.read_text())["records"]
    assert [r["skipped"] for r in recs if r["peer"] == "leakyops" and r["op"] == "leaky_relu"] == [
        None, f"{_bench.DIED} (exit status -9): "]
    assert _bench.own_deaths([r for r in recs if r["size"] == 1000]) == ""


def test_the_demos_busy_check_leaves_out_its_own_compile(monkeypatch):
    """A minute of the demo's own compile raises the load average by about 0.6 on a machine
    that is otherwise idle; that is not a busy machine."""
    import time

    from leakyops import _demo
    from leakyops._bench import _ceiling

    assert _demo.own_load(70.0, 70.0) == pytest.approx(1 - 2.718281828 ** (-70 / 60))
    assert _demo.own_load(1.0, 2.0) == pytest.approx(0.5 * (1 - 2.718281828 ** (-2 / 60)))
    times = (("leakyops", 2, 1e-3), ("copy-numpy", 1, 2e-3), ("copy-leakyops", 2, 8e-4))
    steady = {"bytes": 8_000_000, "peers": {n: {"threads": t, "seconds": [s] * 3} for n, t, s in times}}
    monkeypatch.setattr(_ceiling, "against_copy", lambda *a, **kw: steady)
    monkeypatch.setattr(_demo, "usable_cpus", lambda: 2)
    monkeypatch.setattr(_demo, "_load", lambda: 1.9)  # >= 2 - 0.5: busy, were it all others'
    compiled = (time.monotonic() - 70.0, time.process_time() - 70.0)  # 70 s of one CPU, just now
    assert _demo.others_load(compiled) == pytest.approx(1.9 - _demo.own_load(70.0, 70.0), abs=0.02)
    lines = _demo._speed(1_000_000, compiled)
    assert len(lines) == 5 and "busy" not in lines[0]
    idle = (time.monotonic() - 70.0, time.process_time())  # the same minute, this run idle
    (line,) = _demo._speed(1_000_000, idle)
    assert "the machine is busy (load average 1.9" in line


def test_cases_take_the_operators_arrays_and_bytes_from_the_table():
    assert _bench.OPS == tuple(OPERATORS)
    for op, spec in OPERATORS.items():
        c = _cases.case(op, "float16", 256_000)
        assert c["shape"] == ([4, 64, 1000] if "weight" in spec.inputs else [256_000])
        assert c["bytes"] == spec.arrays_moved * c["elements"] * 2
        arrays = _cases.inputs(op, "float16", c["shape"])
        assert list(arrays) == [n for n in ("x", "grad_output", "weight") if n in spec.inputs]
        assert all(arrays[n].shape == tuple(c["shape"]) for n in spec.inputs if n != "weight")
    assert _cases.slope_of("leaky_relu_") == _cases.SLOPE_INPLACE and _cases.slope_of("leaky_relu:alloc") == 0.01


def test_markdown_rows_carry_the_times_ratio_and_share():
    recs = [_rec("leaky_relu", "leakyops", 2e-6), _rec("leaky_relu", "torch", 3e-6),
            _rec("leaky_relu", "onednn", 2.5e-6), _rec("leaky_relu", "onnxruntime", None),
            _rec("leaky_relu", "copy-numpy", 1.6e-6),
            _rec("prelu", "leakyops", 4e-6), _rec("prelu", "torch", 2e-6)]
    lines = _bench.format_markdown(recs).splitlines()
    assert lines[0].startswith("| operator |") and len(lines) == 4
    assert lines[2] == ("| `leaky_relu` | float32 | 10,000 | 2.0 | 3.0 | 2.5 | – | 1.6 | 40.0 "
                        "| **1.25** | onednn | 0.80 |")
    assert lines[3] == "| `prelu` | float32 | 10,000 | 4.0 | 2.0 | – | – | – | 20.0 | 0.50 | torch | – |"


def test_the_demos_copy_ceiling_states_the_threads_that_ran():
    """The demo's speed line: the benchmark's peers and timer, and the thread count each ran on
    (one below the size from which a call is split across threads)."""
    import leakyops
    from leakyops._bench import _ceiling
    from leakyops._config import PARALLEL_MIN_BYTES

    small = _ceiling.against_copy("leaky_relu", "float32", 1000, rounds=2, min_time=0.001)
    assert small["bytes"] == 8000
    assert {name: p["threads"] for name, p in small["peers"].items()} == \
        {"leakyops": 1, "copy-numpy": 1, "copy-leakyops": 1}
    assert all(len(p["seconds"]) == 2 and min(p["seconds"]) > 0 for p in small["peers"].values())
    n = 4 * PARALLEL_MIN_BYTES // 4
    with leakyops.thread_limit(2):
        large = _ceiling.against_copy("leaky_relu", "float32", n, rounds=1, min_time=0.001)
    ran = min(2, os.cpu_count() or 1)
    assert {name: p["threads"] for name, p in large["peers"].items()} == \
        {"leakyops": ran, "copy-numpy": 1, "copy-leakyops": ran}


def test_the_tier_names_the_cpus_widest_isa_and_every_cap(monkeypatch):
    """The header and the JSON say which instruction-set tier a run measured: the CPU's widest
    (LLVM's feature names read as people say them), numba's target, and each library's cap."""
    name = _bench._isa_name
    avx512 = frozenset({"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "avx", "sse4.1"})
    assert name(avx512 | {"avx512bf16"}) == "AVX-512 (BF16)"
    assert name(avx512 | {"avx512bf16", "avx512fp16", "amx-tile"}) == "AVX-512 (BF16, FP16, AMX)"
    assert name(avx512) == "AVX-512"
    assert name(frozenset({"avx512f", "avx2", "avx"})) == "AVX2"  # (AVX-512 without BW/VL/DQ)
    assert name(frozenset({"avx2", "fma", "f16c", "avx", "sse4.1"})) == "AVX2"
    assert name(frozenset({"sse4.1"})) == "SSE4.1" and name(frozenset()) == "SSE2"
    for key in _bench.TIER_SETTINGS:
        monkeypatch.delenv(key, raising=False)
    plain = _bench.tier()
    assert plain["caps"] == {} and "no caps" in _bench.tier_text(plain)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    capped = _bench.tier()
    assert capped["caps"] == {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
    text = _bench.tier_text(capped)
    assert "ONEDNN_MAX_CPU_ISA='AVX2'" in text and "ATEN_CPU_CAPABILITY='avx2'" in text
    assert text.startswith(f"tier: {plain['cpu_isa']} CPU, leakyops compiled for ")
    assert _bench.tier_text(None) == "tier: not recorded"
