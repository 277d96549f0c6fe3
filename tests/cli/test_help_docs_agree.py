"""The help texts, the docs and the program say the same: peers, columns, sizes, defaults, durations.

Each figure is taken from the program (the benchmark's constants, the table it prints, the
parser's defaults) and looked for in ``leakyops bench --help``, ``leakyops demo --help``,
``benchmarks/bench.py --help``, ``docs/cli.md`` and ``docs/benchmarks.md``; names the program
does not have (a ``numpy`` peer, an ``x torch`` column) must appear in none of them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from leakyops import _bench, _demo, cli

ROOT = Path(__file__).resolve().parents[2]


def _flat(text: str) -> str:
    return " ".join(text.split())


def _help(*args) -> str:
    parser = cli.build_parser()
    return _flat(parser.subcommands[args[0]].format_help())


def _section(doc: str, title: str) -> str:
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return _flat(text[start:end if end > 0 else None])


@pytest.fixture(scope="module")
def table_header() -> list:
    """The column names of the table `leakyops bench` prints."""
    recs = [{"op": "leaky_relu", "dtype": "float32", "size": 1000, "shape": [1000], "elements": 1000,
             "bytes": 8000, "peer": peer, "threads": 1, "seconds": 1e-6, "gbps": 8.0, "skipped": None}
            for peer in _bench.PEERS]
    header = _bench.format_table(recs).splitlines()[1]
    return re.split(r"\s{2,}|\s(?=\S)", header.replace("x fastest", "x_fastest").replace("x copy", "x_copy"))


def test_the_peers_are_the_runners(cli_inproc):
    help_text, docs = _help("bench"), _section("cli.md", "bench")
    for peer in _bench.PEERS:
        assert peer in help_text, peer
        assert f"`{peer}`" in docs, peer
    # every peer the docs list as one (a bullet starting with a name) is one the runner has
    listed = re.findall(r"- (`[\w-]+`(?:, `[\w-]+`)*) —", docs)
    assert {n.strip("`") for group in listed for n in group.split(", ")} == set(_bench.PEERS)
    assert "numpy —" not in docs and "NumPy green" not in docs
    res = cli_inproc("bench", "--peers", "numpy")
    assert res.returncode == 2 and "unknown name(s) numpy" in res.stderr


def test_the_columns_are_the_tables(table_header):
    help_text, docs = _help("bench"), _section("cli.md", "bench")
    columns = [c.replace("_", " ") for c in table_header[3:]]  # after operator, dtype, elements
    assert columns == ["leakyops", "torch", "onednn", "onnxrt", "copy", "GB/s", "x fastest", "peer", "x copy"]
    for name in ("x fastest", "peer", "x copy"):
        assert f"'{name}'" in help_text, name
        assert f"`{name}`" in docs, name
    for name in columns[:6]:
        assert f"`{name}`" in docs, name
    for text in (help_text, docs, _flat((ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8"))):
        assert "x torch" not in text


def test_the_sizes_rounds_and_times_are_the_runners():
    help_text, docs = _help("bench"), _section("cli.md", "bench")
    for sizes in (_bench.DEFAULT_SIZES, _bench.QUICK_SIZES):
        assert cli.sizes_text(sizes) in help_text
        assert cli.sizes_text(sizes) in docs
    (full, quick), (t_full, t_quick) = _bench.ROUNDS, _bench.MIN_TIME
    assert f"over {full} rounds (--quick {quick})" in help_text
    assert f"over {full} rounds (`--quick`: {quick})" in docs
    assert f"about {t_full:g} s per round (--quick {t_quick:g} s)" in help_text
    assert f"about {t_full:g} s per round (`--quick`: {t_quick:g} s)" in docs
    parser = cli.build_parser()
    args = parser.parse_args(["bench"])
    assert args.sizes is None and args.rounds is None and args.min_time is None  # the runner's defaults


def test_a_full_run_takes_the_same_time_everywhere():
    bench_py = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--help"],
                              capture_output=True, text=True, check=True).stdout
    for where, text in (("leakyops bench --help", _help("bench")), ("benchmarks/bench.py --help", bench_py),
                        ("docs/cli.md", _section("cli.md", "bench")),
                        ("docs/benchmarks.md", (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8"))):
        assert _bench.FULL_RUN in _flat(text), where
        assert not re.search(r"about (?!45)\d+ minutes", _flat(text)), where


def test_the_demo_speed_line_defaults():
    parser = cli.build_parser()
    assert parser.parse_args(["demo"]).speed_size == _demo.DEFAULT_SPEED_SIZE
    assert f"(default {_demo.DEFAULT_SPEED_SIZE})" in _help("demo")
    docs = _section("cli.md", "demo")
    assert f"{_demo.DEFAULT_SPEED_SIZE:,} elements (`--speed-size N`" in docs
    assert f"in {_demo.ROUNDS} rounds" in docs
    assert f"more than {round((_demo.DISAGREE - 1) * 100)} % between rounds" in docs
    assert "vs `np.copyto`" not in docs  # the old one-thread comparison


#: matplotlib's codes in the chart's style table, in the words docs/cli.md uses for them
#: (C0…C3: the first colours of matplotlib's default cycle, "tab10"; a float string: a grey)
_COLOURS = {"C0": "blue", "C1": "orange", "C2": "green", "C3": "red", "0.4": "grey"}
_MARKERS = {"o": "circles", "s": "squares", "^": "triangles", "v": "triangles pointing down"}
_LINES = {"--": "dashed line"}
_LIBRARIES = {"leakyops": "leakyops", "torch": "PyTorch", "onednn": "oneDNN", "onnxruntime": "ONNX Runtime"}


def test_the_charts_lines_are_the_ones_the_docs_describe():
    """docs/cli.md says how each library's line looks: the plot's style table, in words."""
    style = _bench.PLOT_STYLE
    assert set(style) == {*_LIBRARIES, "copy"}  # a line per library and the copy ceiling
    words = []
    for peer, name in _LIBRARIES.items():
        colour, marker, line = style[peer]
        assert line == "-", peer  # the libraries are solid lines with a marker each
        words.append(f"{name} {_COLOURS[colour]} {_MARKERS[marker]}")
    colour, marker, line = style["copy"]
    assert marker == ""
    sentence = ", ".join(words) + f", and the copy ceiling as a {_COLOURS[colour]} {_LINES[line]}"
    assert f"one line per library: {sentence}." in _section("cli.md", "bench")
    try:  # the colour names are matplotlib's own for those codes
        from matplotlib import colors
    except ImportError:
        return
    for code, name in _COLOURS.items():
        assert colors.to_hex(code) == colors.to_hex(name if code[0] != "C" else f"tab:{name}") or \
            (name == "grey" and len(set(colors.to_rgb(code))) == 1), code


def _default_of(script: Path, option: str):
    """The default of ``option`` in ``script``'s argparse calls (read, not imported: the script
    needs torch)."""
    import ast

    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" \
                and any(isinstance(a, ast.Constant) and a.value == option for a in node.args):
            return next(ast.literal_eval(k.value) for k in node.keywords if k.arg == "default")
    raise AssertionError(f"{script.name} has no {option}")


def test_the_training_examples_step_count_is_its_default():
    script = ROOT / "examples" / "torch" / "train_convnet.py"
    steps = _default_of(script, "--steps")
    assert f"[--steps {steps}]" in script.read_text(encoding="utf-8")  # its own usage line
    docs = _flat((ROOT / "docs" / "torch.md").read_text(encoding="utf-8"))
    assert f"(the default, {steps} steps;" in docs
