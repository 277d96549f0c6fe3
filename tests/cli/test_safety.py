"""Outputs written whole (STYLE habit 12) and Ctrl-C at any moment (issue 27).

Every output of the command goes through ``leakyops._cli_io.AtomicFiles``: a temporary file
beside the target, every byte written or an error, fsync, a size check, a rename at the
commit. These tests break the writing in every way the issue names — a full filesystem (a
small tmpfs where one can be mounted, ``/dev/full`` everywhere), a file-size limit that makes
the kernel refuse a write after N bytes, a writer that fails after N bytes — and interrupt
the command at random moments, and check that every target holds its old content or its new
content, never a part or a mix, with one line on stderr and the documented exit status.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from leakyops import _cli_io
from leakyops._cli_io import AtomicFiles, CLIError

POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, devices and limits")


def _snapshot(directory: Path) -> dict:
    """Every file of a directory and its bytes ({} for a missing directory)."""
    if not directory.exists():
        return {}
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _no_temporaries(*directories: Path) -> None:
    for d in directories:
        if d.exists():
            left = [p.name for p in d.iterdir() if p.name.endswith(".leakyops-tmp")]
            assert not left, left


def _one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


# --------------------------------------------------------------------------- AtomicFiles itself


class _FailingSink(_cli_io._Sink):
    """A writer that fails after ``LIMIT`` bytes, as a full disk does."""

    LIMIT = 1000

    def write(self, data):
        if self.written + len(memoryview(data).cast("B")) > self.LIMIT:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(data)


def test_a_writer_failing_after_n_bytes_replaces_nothing(tmp_path, monkeypatch):
    a, b = tmp_path / "a.bin", tmp_path / "b.npy"
    a.write_bytes(b"old a")
    b.write_bytes(b"old b")
    monkeypatch.setattr(_cli_io, "_Sink", _FailingSink)
    with pytest.raises(CLIError) as info:
        with AtomicFiles() as files:
            files.write(a, np.ones(100, np.float32))        # 400 bytes: fits
            files.write(b, ("npy", np.ones(1000, np.float32)))  # 4128 bytes: fails
    assert str(info.value) == f"cannot write {b}: {os.strerror(errno.ENOSPC)}" and info.value.status == 2
    # the first file was written whole, but nothing is renamed unless everything is
    assert a.read_bytes() == b"old a" and b.read_bytes() == b"old b"
    _no_temporaries(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.npy"]


def test_the_commit_renames_in_order_and_removes(tmp_path):
    (tmp_path / "stale.bin").write_bytes(b"x")
    (tmp_path / "keep.txt").write_text("mine")
    with AtomicFiles() as files:
        files.make_dirs(tmp_path / "new" / "deeper")
        files.write(tmp_path / "new" / "deeper" / "a.bin", np.arange(3, dtype=np.float16))
        files.remove(tmp_path / "stale.bin")
        files.write(tmp_path / "m.json", "{}")
        assert not (tmp_path / "m.json").exists()  # nothing in place before the commit
    assert (tmp_path / "new" / "deeper" / "a.bin").read_bytes() == np.arange(3, dtype=np.float16).tobytes()
    assert (tmp_path / "m.json").read_text() == "{}" and not (tmp_path / "stale.bin").exists()
    assert (tmp_path / "keep.txt").read_text() == "mine"
    _no_temporaries(tmp_path, tmp_path / "new" / "deeper")


def test_a_discard_removes_the_directories_it_made(tmp_path):
    with pytest.raises(KeyError):
        with AtomicFiles() as files:
            files.make_dirs(tmp_path / "x" / "y")
            files.write(tmp_path / "x" / "y" / "a.txt", "a")
            raise KeyError("the work failed")
    assert list(tmp_path.iterdir()) == []


def test_places_are_checked_when_reserved(tmp_path):
    files = AtomicFiles()
    with pytest.raises(CLIError, match=r"cannot write --json .*nodir/r.json: no such directory"):
        files.reserve(tmp_path / "nodir" / "r.json", "--json")
    with pytest.raises(CLIError, match="is a directory"):
        files.reserve(tmp_path, "-o")
    (tmp_path / "ro").mkdir()
    os.chmod(tmp_path / "ro", 0o500)
    try:
        if os.access(tmp_path / "ro", os.W_OK):  # root writes anywhere
            pytest.skip("running as root: a read-only directory is writable")
        with pytest.raises(CLIError, match="cannot write -o .*Permission denied"):
            files.reserve(tmp_path / "ro" / "y.npy", "-o")
    finally:
        os.chmod(tmp_path / "ro", 0o700)
    files.discard()


def test_one_file_under_two_options_is_refused_when_reserved(tmp_path):
    """``--json F --plot F`` (in any spelling) fails before any work, not at the second write."""
    files = AtomicFiles()
    target = files.reserve(tmp_path / "r.png", "--json")
    assert files.reserve(tmp_path / "r.png", "--json") == target  # the same option again: the same file
    with pytest.raises(CLIError, match=r"^--json and --plot must be different files \(both name .*/r.png\)$"):
        files.reserve(tmp_path / "." / "r.png", "--plot")
    files.discard()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("in_a_command", [True, False], ids=["command", "library"])
def test_ctrl_c_while_a_temporary_file_is_created_leaves_none(tmp_path, monkeypatch, python_sigint, in_a_command):
    """SIGINT just after the temporary file exists and before it is recorded: it is recorded all
    the same (Ctrl-C waits), so leaving the block by the KeyboardInterrupt removes it."""
    real_open = os.open

    def open_(path, *args, **kw):
        fd = real_open(path, *args, **kw)
        if str(path).endswith(_cli_io._TEMP_SUFFIX):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # a handler that raised would have done so by now
        return fd

    monkeypatch.setattr(_cli_io.os, "open", open_)
    with pytest.raises(KeyboardInterrupt):
        with _cli_io.interrupt_handling() if in_a_command else contextlib.nullcontext():
            with AtomicFiles() as files:
                files.reserve(tmp_path / "r.json", "--json")
                pytest.fail("the interrupt was lost")  # pragma: no cover
    assert list(tmp_path.iterdir()) == []


def test_symlinks_are_followed_and_devices_written_directly(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    os.chmod(real, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with AtomicFiles() as files:
        files.write(link, "new")
        files.write("/dev/null", np.ones(10))
    assert link.is_symlink() and real.read_text() == "new"
    assert oct(real.stat().st_mode & 0o777) == "0o640"  # the file replaced keeps its permissions


def test_ctrl_c_during_the_commit_waits_for_it(tmp_path, monkeypatch, python_sigint):
    """SIGINT while the files are renamed: every rename is done, then KeyboardInterrupt."""
    targets = [tmp_path / f"{n}.bin" for n in "abc"]
    real_replace = os.replace
    calls = []

    def replace(src, dst):
        if not calls:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # a handler that raised would have done so by now
        calls.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(_cli_io.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        with _cli_io.interrupt_handling():
            with AtomicFiles() as files:
                for t in targets:
                    files.write(t, t.name)
            _cli_io.check_interrupt()
    assert [t.read_text() for t in targets] == ["a.bin", "b.bin", "c.bin"]
    _no_temporaries(tmp_path)


def test_outside_a_command_ctrl_c_during_the_commit_is_raised_after_it(tmp_path, monkeypatch, python_sigint):
    real_replace = os.replace

    def replace(src, dst):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        real_replace(src, dst)

    monkeypatch.setattr(_cli_io.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        with AtomicFiles() as files:
            files.write(tmp_path / "a.txt", "a")
            files.write(tmp_path / "b.txt", "b")
    assert (tmp_path / "a.txt").read_text() == "a" and (tmp_path / "b.txt").read_text() == "b"
    _cli_io.check_interrupt()  # nothing left over for a later command


def test_an_interrupt_swallowed_on_its_way_up_still_ends_the_command(tmp_path, monkeypatch, cli_inproc,
                                                                     python_sigint):
    """As in a ctypes callback (numba's compiler), where Python prints "Exception ignored" and
    goes on: the command ends with exit status 130 all the same, and writes nothing."""
    from leakyops import _cli_ops

    real = _cli_ops.run_op

    def run_op(*args, **kw):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        except KeyboardInterrupt:
            pass  # swallowed
        return real(*args, **kw)

    np.save(tmp_path / "x.npy", np.ones(10, np.float32))
    monkeypatch.setattr(_cli_ops, "run_op", run_op)
    res = cli_inproc("run", "leaky_relu", tmp_path / "x.npy", "-o", tmp_path / "y.npy")
    assert res.returncode == 130 and _one_line(res.stderr) == "leakyops run: interrupted"
    assert res.stdout == "" and not (tmp_path / "y.npy").exists()
    _no_temporaries(tmp_path)


_CALLBACK_CHILD = textwrap.dedent("""
    import ctypes, os, signal, sys, time
    from leakyops import _cli_ops
    from leakyops.cli import main

    real = _cli_ops.run_op

    @ctypes.CFUNCTYPE(None)
    def callback():  # Python called from C, as llvmlite's object cache calls it while numba compiles
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(2)  # the handler raises KeyboardInterrupt here: it cannot leave the callback

    def run_op(*args, **kw):
        callback()
        return real(*args, **kw)

    _cli_ops.run_op = run_op
    sys.exit(main(sys.argv[1:]))
""")


def _interrupted_run_is_one_line(tmp_path, child):
    """``leakyops run`` through ``child`` (a script that interrupts it): status 130, the one
    line on stderr, nothing on stdout, no output file left."""
    np.save(tmp_path / "x.npy", np.ones(10, np.float32))
    env = dict(os.environ)
    env.pop("LEAKYOPS_DEBUG", None)
    res = subprocess.run([sys.executable, "-c", child, "run", "leaky_relu", str(tmp_path / "x.npy"),
                          "-o", str(tmp_path / "y.npy")], capture_output=True, text=True, env=env, timeout=120,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert res.returncode == 130, (res.returncode, res.stderr)
    assert res.stderr == "leakyops run: interrupted\n" and res.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]


@POSIX
def test_an_interrupt_in_a_ctypes_callback_is_one_line(tmp_path):
    """Python cannot raise out of a ctypes callback: it hands the KeyboardInterrupt to
    sys.unraisablehook, whose default prints "Exception ignored on calling ctypes callback
    function" and a traceback. The command's hook records it quietly: one line, status 130."""
    _interrupted_run_is_one_line(tmp_path, _CALLBACK_CHILD)


_HALF_BUILT_CHILD = textwrap.dedent("""
    import os, signal, sys, time
    from leakyops import _cli_ops
    from leakyops.cli import main

    real = _cli_ops.run_op

    class HalfBuilt:  # as llvmlite's pass builder, cut short in its constructor by Ctrl-C
        def __init__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(2)
            self.ref = 1

        def __del__(self):
            self.ref  # AttributeError: the constructor never got here

    def run_op(*args, **kw):
        HalfBuilt()
        return real(*args, **kw)

    _cli_ops.run_op = run_op
    sys.exit(main(sys.argv[1:]))
""")


@POSIX
def test_what_ctrl_c_cut_short_says_nothing_when_freed(tmp_path):
    """An object whose constructor Ctrl-C interrupted fails in its ``__del__`` when the
    traceback frees it (seen once under the AVX2 caps: llvmlite's pass builder while numba
    compiled, "Exception ignored in ... ObjectRef.__del__" after the command's line): one
    line, status 130."""
    _interrupted_run_is_one_line(tmp_path, _HALF_BUILT_CHILD)


def test_the_commands_unraisable_hook_passes_on_anything_else(monkeypatch, python_sigint):
    """Only a KeyboardInterrupt is kept from the hook that was in place (and, once Ctrl-C came,
    whatever it cut short), which is put back."""
    seen = []
    previous = seen.append
    monkeypatch.setattr(sys, "unraisablehook", previous)

    @ctypes.CFUNCTYPE(None, ctypes.c_int)
    def callback(kind):
        raise (KeyboardInterrupt if kind else ValueError)("from a callback")

    with pytest.raises(KeyboardInterrupt):
        with _cli_io.interrupt_handling():
            callback(0)
            assert [u.exc_type for u in seen] == [ValueError]
            callback(1)
            assert [u.exc_type for u in seen] == [ValueError]  # recorded, not passed on
            callback(0)
            assert [u.exc_type for u in seen] == [ValueError]  # after Ctrl-C: said nothing of
            _cli_io.check_interrupt()
    assert sys.unraisablehook is previous
    callback(1)  # outside a command: the hook in place sees it
    assert [u.exc_type for u in seen] == [ValueError, KeyboardInterrupt]


# --------------------------------------------------------------------------- golden: a case as a whole


def test_a_case_written_over_another_keeps_none_of_its_files(tmp_path, cli_inproc):
    case = tmp_path / "c"
    assert cli_inproc("golden", "prelu_backward", "--shape", "2,3,4", "-o", case, "-q").returncode == 0
    (case / "notes.txt").write_text("the user's own file")
    assert cli_inproc("golden", "leaky_relu", "--shape", "5", "-o", case, "-q").returncode == 0
    assert sorted(p.name for p in case.iterdir()) == ["case.json", "notes.txt", "x.bin", "x.npy", "y.bin", "y.npy"]
    assert json.loads((case / "case.json").read_text())["operator"] == "leaky_relu"


def test_a_failed_rewrite_leaves_the_old_case(tmp_path, cli_inproc, monkeypatch):
    case = tmp_path / "c"
    assert cli_inproc("golden", "leaky_relu", "--shape", "400", "-o", case, "-q").returncode == 0
    before = _snapshot(case)
    monkeypatch.setattr(_cli_io, "_Sink", _FailingSink)  # the second file fails (x.npy fits)
    res = cli_inproc("golden", "prelu_backward", "--shape", "2,3,40", "--seed", "3", "-o", case, "-q")
    assert res.returncode == 2 and "cannot write" in _one_line(res.stderr) and "No space left" in res.stderr
    assert _snapshot(case) == before
    _no_temporaries(case)


def test_a_case_that_fails_in_a_new_directory_leaves_no_directory(tmp_path, cli_inproc):
    res = cli_inproc("golden", "prelu", "--shape", "2,3", "--weight-shape", "5", "-o", tmp_path / "a" / "b")
    assert res.returncode == 2 and not (tmp_path / "a").exists()


# --------------------------------------------------------------------------- full disks


_BENCH = ["bench", "--sizes", "1000", "--ops", "leaky_relu", "--dtypes", "float32", "--peers", "leakyops",
          "--rounds", "1", "--min-time", "0.001"]


@POSIX
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_dev_full_is_an_error_for_every_output_kind(tmp_path, cli_inproc):
    case = tmp_path / "c"
    assert cli_inproc("golden", "leaky_relu", "--shape", "64", "-o", case, "-q").returncode == 0
    full = os.strerror(errno.ENOSPC)
    res = cli_inproc("run", "leaky_relu", case / "x.npy", "-o", "/dev/full")
    assert res.returncode == 2 and _one_line(res.stderr) == f"leakyops run: error: cannot write /dev/full: {full}"
    res = cli_inproc("verify", case, case / "y.bin", "--json", "/dev/full")
    assert res.returncode == 2 and _one_line(res.stderr).endswith(f"cannot write /dev/full: {full}")
    # a golden file and a JSON file that are links to /dev/full
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "y.npy").symlink_to("/dev/full")
    res = cli_inproc("golden", "leaky_relu", "--shape", "64", "-o", tmp_path / "g")
    assert res.returncode == 2 and _one_line(res.stderr).endswith(f"cannot write /dev/full: {full}")
    assert sorted(p.name for p in (tmp_path / "g").iterdir()) == ["y.npy"]  # nothing else written
    (tmp_path / "b.json").symlink_to("/dev/full")
    res = cli_inproc(*_BENCH, "--json", tmp_path / "b.json")
    assert res.returncode == 2 and _one_line(res.stderr).endswith(f"cannot write /dev/full: {full}")


@POSIX
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_chart_on_a_full_device_is_an_error(tmp_path):
    pytest.importorskip("matplotlib")
    from leakyops import _bench

    records = [{"op": "leaky_relu", "dtype": "float32", "size": n, "shape": [n], "elements": n, "bytes": 8 * n,
                "peer": "leakyops", "threads": 1, "seconds": 1e-6, "gbps": 8e-3 * n, "skipped": None}
               for n in (1000, 10_000)]
    (tmp_path / "b.png").symlink_to("/dev/full")
    with pytest.raises(CLIError, match=f"cannot write /dev/full: {os.strerror(errno.ENOSPC)}"):
        with AtomicFiles() as files, files.open(tmp_path / "b.png", "--plot") as fh:
            _bench.plot(records, fh, fmt="png")


def _file_size_limit(nbytes):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    return limit


@POSIX
def test_a_write_refused_after_n_bytes_leaves_the_old_outputs(tmp_path, cli, cli_inproc):
    """The kernel refuses to write past RLIMIT_FSIZE (EFBIG): the real system call fails midway."""
    case = tmp_path / "c"
    assert cli_inproc("golden", "leaky_relu", "--shape", "1000", "-o", case, "-q").returncode == 0
    before = _snapshot(case)
    limit = _file_size_limit(1 << 20)
    too_large = os.strerror(errno.EFBIG)
    res = cli("golden", "leaky_relu", "--shape", "400000", "--seed", "1", "-o", case, preexec_fn=limit)
    assert res.returncode == 2, res.stderr
    assert _one_line(res.stderr) == f"leakyops golden: error: cannot write {case}/x.npy: {too_large}"
    assert _snapshot(case) == before
    np.save(tmp_path / "big.npy", np.ones(400_000, np.float32))
    (tmp_path / "y.bin").write_bytes(b"old")
    res = cli("run", "leaky_relu", tmp_path / "big.npy", "-o", tmp_path / "y.bin", preexec_fn=limit)
    assert res.returncode == 2 and _one_line(res.stderr).endswith(f"cannot write {tmp_path}/y.bin: {too_large}")
    assert (tmp_path / "y.bin").read_bytes() == b"old"
    _no_temporaries(case, tmp_path)


_IN_A_SMALL_TMPFS = r"""
import errno, json, os, subprocess, sys
mnt, work, bench = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt], check=True)

def cli(*args):
    r = subprocess.run([sys.executable, "-m", "leakyops", *args], capture_output=True, text=True)
    return [r.returncode, r.stderr]

def files():
    return {name: os.path.getsize(os.path.join(mnt, "case", name)) for name in sorted(os.listdir(os.path.join(mnt, "case")))}

out = {"first": cli("golden", "leaky_relu", "--shape", "1000", "-q", "-o", mnt + "/case")}
out["case_before"] = files()
fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT)  # fill the filesystem up
try:
    while True:
        os.write(fd, b"\0" * 512)
except OSError as exc:
    out["filler"] = exc.errno
os.close(fd)
x = os.path.join(work, "x.npy")
out["run_bin"] = cli("run", "leaky_relu", x, "-o", mnt + "/y.bin")
out["run_npy"] = cli("run", "leaky_relu", x, "-o", mnt + "/y.npy")
out["golden_new"] = cli("golden", "leaky_relu", "--shape", "1000", "-o", mnt + "/new")
out["golden_over"] = cli("golden", "prelu", "--shape", "2,5,100", "-o", mnt + "/case")
out["verify_json"] = cli("verify", mnt + "/case", mnt + "/case/y.bin", "--json", mnt + "/r.json")
out["bench_json"] = cli(*bench, "--json", mnt + "/b.json")
out["bench_plot"] = cli(*bench, "--plot", mnt + "/b.png")
out["cases_json"] = cli("cases", os.path.join(work, "s.csv"), "--json", mnt + "/c.json")
out["cases_junit"] = cli("cases", os.path.join(work, "s.csv"), "--junit", mnt + "/c.xml")
out["case_after"] = files()
out["left"] = sorted(n for n in os.listdir(mnt) if n != "filler")
out["verify_after"] = cli("verify", mnt + "/case", mnt + "/case/y.bin")
print(json.dumps(out))
"""


#: A ``leakyops cases`` suite of one small case (a TTK table; tests/cli/test_cases.py has more).
_TTK_SUITE = (
    "testcase_name,api_name,tensor_dtypes,tensor_formats,tensor_view_shapes,input_data_ranges,"
    "output_tensor_indexes,output_dtypes,scalar_dtypes,scalar_data_ranges,attributes,absolute_precision\n"
    "LR_1,aclnnLeakyRelu,\"('float32', 'float32')\",\"('ND',)\",\"((3, 4), (3, 4))\",\"((-1, 1),)\","
    "\"(-1,)\",\"('float32',)\",('float16'),\"(0, 1)\",{},0.0001\n"
)


def _namespace_prefix() -> list | None:
    """A command prefix that runs a program in a mount namespace of its own, where it may mount a
    tmpfs (as root, or through a user namespace), or None."""
    if sys.platform != "linux" or not shutil.which("unshare"):
        return None
    for prefix in (["unshare", "--mount"], ["unshare", "--user", "--map-root-user", "--mount"]):
        probe = subprocess.run([*prefix, "--", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                               capture_output=True, check=False)
        if probe.returncode == 0:
            return prefix
    return None


@pytest.mark.slow
def test_a_full_filesystem_fails_every_output_kind_and_keeps_the_old_case(tmp_path):
    prefix = _namespace_prefix()
    if prefix is None:
        pytest.skip("cannot mount a tmpfs here (no mount namespace); /dev/full and the file-size "
                    "limit tests cover the same errors")
    pytest.importorskip("matplotlib")
    np.save(tmp_path / "x.npy", np.ones(20_000, np.float32))
    (tmp_path / "s.csv").write_text(_TTK_SUITE)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    res = subprocess.run([*prefix, "--", sys.executable, "-c", _IN_A_SMALL_TMPFS, mnt, tmp_path,
                          json.dumps(_BENCH)], capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["first"] == [0, ""] and out["filler"] == errno.ENOSPC
    full = os.strerror(errno.ENOSPC)
    for kind, path in (("run_bin", "y.bin"), ("run_npy", "y.npy"), ("golden_new", "new/x.npy"),
                       ("golden_over", "case/x.npy"), ("verify_json", "r.json"), ("bench_json", "b.json"),
                       ("bench_plot", "b.png"), ("cases_json", "c.json"), ("cases_junit", "c.xml")):
        status, stderr = out[kind]
        assert status == 2 and _one_line(stderr).endswith(f"cannot write {mnt}/{path}: {full}"), (kind, stderr)
    assert out["case_after"] == out["case_before"]  # the old case, whole
    assert out["left"] == ["case"]                 # no output, no temporary file, no new directory
    assert out["verify_after"][0] == 0


# --------------------------------------------------------------------------- Ctrl-C at random moments


LINUX = pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads /proc/PID/maps")


def _start(args: list, library: str = "_multiarray_umath", timeout: float = 120):
    """Start the command, and return once it has loaded ``library`` (NumPy's core by default:
    the package is being imported, Python's own start-up is over) or has ended."""
    env = dict(os.environ)
    env.pop("LEAKYOPS_DEBUG", None)
    # a background job of a non-interactive shell inherits SIGINT ignored; the command keeps
    # that (as it should), so the test gives its child the default
    proc = subprocess.Popen([sys.executable, "-m", "leakyops", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    end = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < end:
        try:
            with open(f"/proc/{proc.pid}/maps") as fh:
                if library in fh.read():
                    break
        except OSError:
            break
        time.sleep(0.001)
    return proc


def _golden_args(seed: int, n: int, out: Path) -> list:
    return ["golden", "leaky_relu", "--shape", str(n), "--seed", str(seed), "--slope", str(0.5 * seed), "-q",
            "-o", str(out)]


def _interrupt_rounds(tmp_path, cli, rounds: int, n: int, latest: float, seed: int) -> list:
    """Rewrite a case over and over with another seed, each run interrupted by SIGINT after a
    random delay; after each, the directory must hold exactly the old case or the new one."""
    cases = {}
    for s in (0, 1):
        ref = tmp_path / f"ref{s}"
        res = cli(*_golden_args(s, n, ref))
        assert res.returncode == 0, res.stderr
        cases[s] = _snapshot(ref)
    assert cases[0] != cases[1]
    target = tmp_path / "case"
    shutil.copytree(tmp_path / "ref0", target)
    held = 0
    rng = random.Random(seed)
    seen = []
    for _ in range(rounds):
        want = 1 - held
        proc = _start(_golden_args(want, n, target))
        delay = rng.uniform(0.0, latest)  # from the package's first imports on
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
        now = _snapshot(target)
        assert now in (cases[0], cases[1]), (delay, proc.returncode, err, sorted(now))
        if proc.returncode == 130:
            assert err.strip() in ("leakyops: interrupted", "leakyops golden: interrupted"), err
        elif proc.returncode == -signal.SIGINT:  # after the command was done, while Python shut down
            assert err == "" and now == cases[want], err
        else:
            assert proc.returncode == 0 and err == "" and now == cases[want], (proc.returncode, err)
        held = 0 if now == cases[0] else 1
        seen.append((round(delay, 2), proc.returncode, held == want))
        _no_temporaries(target)
    return seen


@LINUX
def test_ctrl_c_at_random_moments_leaves_the_old_case_or_the_new(tmp_path, cli):
    seen = _interrupt_rounds(tmp_path, cli, rounds=4, n=2_000_000, latest=2.0, seed=1)
    assert any(status == 130 for _, status, _ in seen), seen


@LINUX
@pytest.mark.slow
def test_ctrl_c_at_many_random_moments(tmp_path, cli):
    seen = _interrupt_rounds(tmp_path, cli, rounds=24, n=8_000_000, latest=4.0, seed=2)
    statuses = {status for _, status, _ in seen}
    assert 130 in statuses, seen
    print(seen)


@LINUX
@pytest.mark.parametrize("library", ["_multiarray_umath", "_ml_dtypes_ext", "_helperlib", "libllvmlite"])
def test_ctrl_c_while_the_package_is_imported_is_one_line(library):
    """Start-up included (NumPy, ml_dtypes, numba, llvmlite being loaded): one line, exit 130."""
    proc = _start(["demo", "--no-speed"], library)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err)
    assert err.strip() in ("leakyops: interrupted", "leakyops demo: interrupted"), err


def test_the_import_guard_is_for_the_command_only():
    """A program that imports leakyops keeps Python's Ctrl-C."""
    code = textwrap.dedent("""
        import signal, leakyops
        print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert res.stdout.strip() == "True"


@pytest.fixture(name="python_sigint")
def _python_sigint():
    """Python's own Ctrl-C handler for the test (pytest may run with SIGINT ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
