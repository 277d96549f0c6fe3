"""The documentation stands on its own, from a clone or a wheel.

- README.md and docs/*.md link only to files in the repository (that exist) or to public
  URLs, and a link to a heading finds it;
- nothing in them, in the docstrings under ``src/leakyops`` or in the command's ``--help``
  texts refers to material users do not have (an internal specification, issue numbers or
  discussions, the tools the project was researched with);
- the ``--help`` texts cite no file of the repository: a wheel has none of them;
- the LICENSE is the Apache License 2.0 that pyproject.toml declares, and the README names it;
- the version ``--version`` prints is the package's and the distribution's.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SRC = ROOT / "src" / "leakyops"

# what a user cannot follow: the internal specification and its sections, the project's
# planning documents, issue discussions, and the tools used to read the vendors' sources
INTERNAL = [
    r"\bSPEC\b", r"§", r"\.\./shared", r"\bseeds?\b.{0,12}\b(document|0\d\d)", r"`0\d\d_",
    r"\b(the|this|that|core|speed|docs|command-line) issue\b", r"\bissue \d+", r"search tool",
    r"look-?up tool", r"stored source", r"\bas stored\b", r"public index", r"in the index",
    r"REFERENCES\.md", r"DESIGN\.md", r"STYLE\.md", r"/work/",
]
INTERNAL_RE = re.compile("|".join(f"(?:{p})" for p in INTERNAL), re.I)

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", path.read_text(), re.M)}


def _outside_code(text: str) -> str:
    """The text without code blocks and inline code (brackets in code are code)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


@pytest.mark.parametrize("path", DOC_FILES, ids=[p.name for p in DOC_FILES])
def test_links_stay_in_the_repository_or_are_public_urls(path):
    bad = []
    for target in LINK.findall(_outside_code(path.read_text(encoding="utf-8"))):
        if re.match(r"https?://", target):
            continue
        if target.startswith(("mailto:", "file:", "/")) or re.match(r"^\w+:", target):
            bad.append(f"{target}: not a file of the repository or a public URL")
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.is_relative_to(ROOT) or ".git" in dest.parts:
            bad.append(f"{target}: outside the repository")
        elif not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not bad, f"{path.name}: " + "; ".join(bad)


def _internal_references(text: str) -> list[str]:
    return [text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ")
            for m in INTERNAL_RE.finditer(text)]


@pytest.mark.parametrize("path", DOC_FILES, ids=[p.name for p in DOC_FILES])
def test_docs_refer_to_no_internal_material(path):
    found = _internal_references(path.read_text(encoding="utf-8"))
    assert not found, f"{path.name}: " + " | ".join(found)


def _docstrings(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield getattr(node, "name", path.stem), doc


def test_docstrings_refer_to_no_internal_material():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for name, doc in _docstrings(path):
            found += [f"{path.relative_to(ROOT)} ({name}): {s}" for s in _internal_references(doc)]
    assert not found, "\n".join(found)


def _help_texts() -> dict[str, str]:
    from leakyops.cli import main

    texts = {}
    for cmd in ("", "golden", "verify", "run", "bench", "demo"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            with pytest.raises(SystemExit) as exc:
                main([cmd, "--help"] if cmd else ["--help"])
        assert exc.value.code == 0
        texts[cmd or "leakyops"] = out.getvalue()
    return texts


def test_help_texts_cite_no_file_a_wheel_lacks_and_nothing_internal():
    texts = _help_texts()
    assert set(texts) == {"leakyops", "golden", "verify", "run", "bench", "demo"}
    for cmd, text in texts.items():
        assert "usage: leakyops" in text and "examples:" in text, cmd
        repo_paths = re.findall(r"(?:\b(?:docs|examples|benchmarks|constraints|tests|src)/\S*"
                                r"|\b[\w.-]+\.md\b|README)", text)
        assert not repo_paths, (cmd, repo_paths)
        assert not _internal_references(text), (cmd, _internal_references(text))
    # what verify's help used to send readers to docs/cli.md for, it now says itself
    for name in ("exact", "double-thousandth", "ratio", "relative-error"):
        assert name in texts["verify"]


def test_the_checks_catch_what_they_are_for():
    assert _internal_references("the contract is SPEC §2") and _internal_references(
        "as the core issue asks") and _internal_references("read with the search tool")
    assert not _internal_references("the slope is rounded to the storage type; an issue of "
                                    "precision; seed 0")
    assert _slug("`leakyops.aclnn` — Ascend CANN aclnn") == "leakyopsaclnn--ascend-cann-aclnn"
    assert "install" in _anchors(ROOT / "README.md")


def test_license_is_the_apache_license_the_package_declares():
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text and len(text.splitlines()) > 190
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^license\s*=.*Apache-2\.0', pyproject, re.M)
    assert "[LICENSE](LICENSE)" in (ROOT / "README.md").read_text()


def test_version_is_the_package_and_the_distribution_version():
    import importlib.metadata

    import leakyops

    pyproject = (ROOT / "pyproject.toml").read_text()
    declared = re.search(r'^version\s*=\s*"([^"]+)"', pyproject, re.M).group(1)
    assert leakyops.__version__ == declared == importlib.metadata.version("leakyops")
    from leakyops.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and out.getvalue().strip() == f"leakyops {declared}"
