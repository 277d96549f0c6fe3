"""Helpers for driving the ``leakyops`` command in subprocesses."""

import os
import subprocess
import sys

import pytest


def run_cli(*args, cwd=None, env=None, timeout=300, preexec_fn=None):
    """Run ``python -m leakyops ARGS``; returns the CompletedProcess (text mode)."""
    full_env = dict(os.environ)
    full_env.pop("LEAKYOPS_DEBUG", None)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "leakyops", *map(str, args)],
        check=False, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout,
        preexec_fn=preexec_fn,
    )


def assert_error(res, status=2, *fragments):
    """A clean error: the status, exactly one line on stderr, no traceback, the fragments in it."""
    assert res.returncode == status, (res.returncode, res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])
    return lines[0]


@pytest.fixture(name="cli", scope="session")
def _cli():
    return run_cli


@pytest.fixture(name="check_error", scope="session")
def _check_error():
    return assert_error


class _Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_main(*args):
    """Run ``leakyops.cli.main(ARGS)`` in this process (the same code path, without the start-up
    cost of a subprocess); returns an object like a CompletedProcess."""
    import contextlib
    import io

    from leakyops.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(a) for a in args])
        except SystemExit as exc:  # argparse exits for --help and usage errors
            status = exc.code if isinstance(exc.code, int) else 2
    return _Result(status, out.getvalue(), err.getvalue())


@pytest.fixture(name="cli_inproc", scope="session")
def _cli_inproc():
    return run_main
