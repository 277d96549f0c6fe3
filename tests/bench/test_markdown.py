"""The benchmark's Markdown table (docs/benchmarks.md is written from it)."""

from __future__ import annotations

from leakyops import _bench


def _rec(op, peer, seconds, size=10_000):
    return {"op": op, "dtype": "float32", "size": size, "shape": [size], "elements": size,
            "bytes": 8 * size, "peer": peer, "threads": 2, "seconds": seconds,
            "gbps": None if seconds is None else 8 * size / seconds / 1e9,
            "skipped": None if seconds is not None else "n/a"}


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
