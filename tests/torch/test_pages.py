"""leakyops.torch's fresh outputs of 32 MiB or more are advised to transparent huge pages
(``madvise(MADV_HUGEPAGE)``, as NumPy does its arrays) before the kernel writes them: the
advice covers the output's whole pages, small outputs get none, and on a Linux whose huge
pages are enabled the output's memory is mapped in huge pages (``LEAKYOPS_TORCH_HUGE_PAGES=0``:
not)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

import leakyops.torch as lt  # noqa: E402


def _thp_mode() -> str:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return f.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return "none"


@pytest.fixture
def advice(monkeypatch):
    calls = []
    monkeypatch.setattr(lt, "_madvise", lambda addr, length, how: calls.append((addr, length, how)))
    return calls


def _check(calls, t):
    start, nbytes = t.data_ptr(), t.numel() * t.element_size()
    assert len(calls) == 1, calls
    addr, length, how = calls[0]
    assert how == 14  # MADV_HUGEPAGE
    assert addr % 4096 == 0 and length % 4096 == 0
    assert start <= addr < start + 4096 and start + nbytes - 4096 < addr + length <= start + nbytes


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fresh_outputs_of_32_mib_are_advised_to_huge_pages(advice, dtype):
    n = (32 << 20) // torch.tensor([], dtype=dtype).element_size()
    x = torch.randn(2, 4, n // 8).to(dtype)
    w = torch.rand(4).to(dtype)
    with torch.inference_mode():
        y = lt.leaky_relu(x, 0.1)
        _check(advice, y)
        advice.clear()
        y = lt.prelu(x, w)
        _check(advice, y)
        advice.clear()
        y = lt.leaky_relu_backward(x, x, 0.1)
        _check(advice, y)
        advice.clear()
        small = x[:, :, : n // 16].contiguous()
        lt.leaky_relu(small, 0.1), lt.prelu(small, w), lt.leaky_relu_backward(small, small, 0.1)
        lt.leaky_relu_(x, 0.1)  # (in place: nothing allocated)
    assert advice == []


def test_the_backward_through_autograd_is_advised_too(advice):
    x = torch.randn(1 << 23, requires_grad=True)
    y = lt.leaky_relu(x, 0.2)
    _check(advice, y)
    advice.clear()
    y.backward(torch.ones_like(y))
    _check(advice, x.grad)  # (the gradient leaky_relu_backward allocated)


_MAPPED = textwrap.dedent("""
    import json, torch
    import leakyops.torch as lt

    def huge_kib(t):
        start, end = t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()
        total, inside = 0, False
        with open("/proc/self/smaps") as f:
            for line in f:
                head = line.split()[0]
                if "-" in head and not head.endswith(":"):
                    lo, hi = (int(v, 16) for v in head.split("-"))
                    inside = lo < end and start < hi
                elif inside and head == "AnonHugePages:":
                    total += int(line.split()[1])
        return total

    x = torch.randn(1 << 24)
    with torch.inference_mode():
        y = lt.leaky_relu(x, 0.1)
    print(json.dumps({"input": huge_kib(x), "output": huge_kib(y)}))
""")


@pytest.mark.skipif(_thp_mode() not in ("always", "madvise"),
                    reason=f"transparent huge pages are {_thp_mode()!r} here")
def test_the_output_is_mapped_in_huge_pages():
    def run(env):
        done = subprocess.run([sys.executable, "-c", _MAPPED], capture_output=True, text=True,
                              env={**os.environ, **env}, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    advised = run({})
    assert advised["output"] >= 32 << 10, advised  # (of its 64 MiB, in 2 MiB pages)
    if _thp_mode() == "madvise":  # (PyTorch's own tensors: none, unless advised)
        assert advised["input"] == 0, advised
        assert run({"LEAKYOPS_TORCH_HUGE_PAGES": "0"})["output"] == 0
