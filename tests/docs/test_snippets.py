"""The examples in README.md and docs/*.md run as written.

The rule (also in the README's "Development" section):

- Every ```python block runs, in document order, one namespace per file (like a notebook),
  in a fresh interpreter whose working directory is an empty temporary directory.
- A ```bash block runs when the line before its fence is ``<!-- snippet: run -->``: each
  line (comments and blank lines aside) is a command that must exit with status 0. It runs
  at its place in the document, in the same directory, so python blocks can make its input
  files and read its output files.
- A ```console block so marked is a transcript: each ``$ command`` runs (``$?`` is the
  previous command's status) and must print exactly the lines that follow it.
- A block with a ``pip install`` line is installation instructions: it never runs. Any
  other bash/console block with a ``leakyops`` command must be marked, ``run`` or
  ``<!-- snippet: skip: the reason -->``; an unmarked one fails
  :func:`test_every_cli_example_is_run_or_says_why_not`.

``leakyops`` and ``python`` in commands are those of the interpreter running the tests.
Files whose python blocks use torch or dask are skipped when those are not installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```([\w-]*)\s*$")
MARKER = re.compile(r"^<!--\s*snippet:\s*(run|skip)\s*(?::\s*(.*?))?\s*-->\s*$")
SHELL_LANGS = {"bash", "sh", "shell", "console"}
# a leakyops command (not its output, such as "leakyops bench: GB/s = ...")
CLI_COMMAND = re.compile(r"(^|&&|;|\|)\s*(\$\s+)?(leakyops|python3? -m leakyops)"
                         r"(\s+(golden|verify|run|bench|demo|cases)\b(?!:)|\s+-|\s*$)")


@dataclass
class Block:
    lang: str
    line: int          # line number of the opening fence (1-based)
    code: str
    marker: str | None  # "run", "skip" or None
    reason: str = ""


def parse_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        assert j < len(lines), f"{path.name}:{start + 1}: unclosed code fence"
        prev = lines[start - 1].strip() if start else ""
        mk = MARKER.match(prev)
        blocks.append(Block(lang, start + 1, "\n".join(lines[start + 1:j]) + "\n",
                            mk.group(1) if mk else None, (mk.group(2) or "") if mk else ""))
        i = j + 1
    return blocks


def _commands(code: str) -> list[str]:
    return [ln.strip() for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def _is_install(block: Block) -> bool:
    return any(re.search(r"\bpip3? install\b", ln) for ln in _commands(block.code))


def _has_cli(block: Block) -> bool:
    return any(CLI_COMMAND.search(ln) for ln in _commands(block.code))


# The runner executes one file's steps in a fresh interpreter; it gets them as JSON.
RUNNER = r'''
import json, os, subprocess, sys

steps = json.loads(sys.stdin.read())
namespace = {"__name__": "__main__"}


def fail(step, what):
    sys.stderr.write(f"\n{step['where']}: {what}\n")
    sys.exit(1)


for step in steps:
    if step["kind"] == "python":
        code = compile(step["code"], step["where"], "exec")
        exec(code, namespace)
    elif step["kind"] == "bash":
        for cmd in step["commands"]:
            res = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
            if res.returncode != 0:
                fail(step, f"`{cmd}` exited with {res.returncode}\n{res.stdout}{res.stderr}")
    else:  # a console transcript
        last = 0
        for cmd, expected in step["session"]:
            res = subprocess.run(["bash", "-c", f"(exit {last}); {cmd}"], capture_output=True,
                                 text=True)
            last = res.returncode
            got = [ln.rstrip() for ln in res.stdout.rstrip("\n").splitlines()]
            want = [ln.rstrip() for ln in expected]
            if got != want:
                import difflib
                diff = "\n".join(difflib.unified_diff(want, got, "the document", "the command",
                                                      lineterm=""))
                fail(step, f"`{cmd}` printed something else:\n{diff}\n{res.stderr}")
'''


def _console_session(code: str) -> list[tuple[str, list[str]]]:
    session: list[tuple[str, list[str]]] = []
    for ln in code.rstrip("\n").splitlines():
        if ln.startswith("$ "):
            session.append((ln[2:].strip(), []))
        else:
            assert session, f"a console block must start with '$ ': {ln!r}"
            session[-1][1].append(ln)
    return session


def steps_of(path: Path) -> list[dict]:
    steps = []
    for b in parse_blocks(path):
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{b.line}"
        if b.lang == "python":
            steps.append({"kind": "python", "where": where, "code": b.code})
        elif b.lang in SHELL_LANGS and b.marker == "run":
            if b.lang == "console":
                steps.append({"kind": "console", "where": where,
                              "session": _console_session(b.code)})
            else:
                steps.append({"kind": "bash", "where": where, "commands": _commands(b.code)})
    return steps


def _needs(path: Path) -> list[str]:
    code = "".join(b.code for b in parse_blocks(path) if b.lang == "python")
    return [mod for mod in ("torch", "dask")
            if re.search(rf"^\s*(import|from)\s+(leakyops\.)?{mod}\b", code, re.M)
            or re.search(rf"^\s*import\s.*\b{mod}\b", code, re.M)]


@pytest.mark.parametrize("path", DOC_FILES, ids=[p.name for p in DOC_FILES])
def test_examples_run_as_written(path, tmp_path):
    steps = steps_of(path)
    if not steps:
        pytest.skip(f"{path.name} has no runnable block")
    for mod in _needs(path):
        pytest.importorskip(mod)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["MPLBACKEND"] = "Agg"
    for var in ("LEAKYOPS_DEBUG", "LEAKYOPS_PROGRESS_AFTER", "PYTHONSTARTUP"):
        env.pop(var, None)
    res = subprocess.run([sys.executable, "-W", "error", "-c", RUNNER], input=json.dumps(steps),
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600,
                         check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-6000:]


def test_every_cli_example_is_run_or_says_why_not():
    problems = []
    for path in DOC_FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        fences = {b.line for b in parse_blocks(path)}
        for i, ln in enumerate(lines, 1):  # a marker must sit right above a fence
            if ln.strip().startswith("<!--") and "snippet" in ln:
                if not MARKER.match(ln.strip()):
                    problems.append(f"{path.name}:{i}: not a snippet marker: {ln.strip()}")
                elif i + 1 not in fences:
                    problems.append(f"{path.name}:{i}: a snippet marker must be right above a fence")
        for b in parse_blocks(path):
            where = f"{path.name}:{b.line}"
            if b.marker and b.lang not in SHELL_LANGS:
                problems.append(f"{where}: markers are for shell blocks; {b.lang or 'plain'} "
                                "blocks are " + ("always run" if b.lang == "python" else "text"))
            if b.marker == "skip" and not b.reason:
                problems.append(f"{where}: say why it is skipped: <!-- snippet: skip: why -->")
            if b.lang in SHELL_LANGS and b.marker == "run" and _is_install(b):
                problems.append(f"{where}: install lines are not run: keep them out of run blocks")
            if (b.lang in SHELL_LANGS and b.marker is None and _has_cli(b)
                    and not _is_install(b)):
                problems.append(f"{where}: a block of leakyops commands needs "
                                "<!-- snippet: run --> or <!-- snippet: skip: why -->")
            if b.lang == "" and _has_cli(b):
                problems.append(f"{where}: leakyops commands in a plain fence: use ```bash or "
                                "```console")
    assert not problems, "\n".join(problems)


def test_the_parser_sees_what_a_reader_sees(tmp_path):
    """The rules above, on a made-up page: a test of the test."""
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```python\nx = 1\n```\n\n<!-- snippet: run -->\n```bash\nleakyops --version\n"
        "```\n\n```bash\npip install . && python -m leakyops demo\n```\n\n```bash\n"
        "leakyops bench\n```\n\n<!-- snippet: run -->\n```console\n$ echo hi\nhi\n$ echo $?\n0\n"
        "```\n\n```\nleakyops bench: GB/s = ...\n```\n\n```bash\nleakyops cases atk.json --jobs 2\n```\n\n"
        "```text\nleakyops cases: error: atk.json: case 4: ...\n```\n")
    blocks = parse_blocks(page)
    assert [(b.lang, b.marker) for b in blocks] == [
        ("python", None), ("bash", "run"), ("bash", None), ("bash", None), ("console", "run"),
        ("", None), ("bash", None), ("text", None)]
    assert [_has_cli(b) for b in blocks] == [False, True, True, True, False, False, True, False]
    assert [_is_install(b) for b in blocks] == [False, False, True, False, False, False, False, False]
    steps = steps_of(page)
    assert [s["kind"] for s in steps] == ["python", "bash", "console"]
    assert steps[2]["session"] == [("echo hi", ["hi"]), ("echo $?", ["0"])]
