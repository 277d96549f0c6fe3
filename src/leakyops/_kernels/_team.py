"""leakyops' own team of threads: the contiguous paths' threaded calls without numba's region.

The operators' contiguous paths (``leaky_relu`` in both forms, ``leaky_relu_backward``,
``prelu``, ``prelu_backward``) and the benchmark's copy run threaded here.

A ``prange`` region of numba on GNU OpenMP costs 1.2-1.3 µs to hand two chunks out and join
them on the AMD EPYC this was measured on (libgomp's own share about 0.45 µs, measured in C),
which decides the calls of 1e4-1e5 elements. Two threads pass a cache line to and fro in
about 0.1 µs. The team is that: worker threads (started by ``_threads``) spin in
``worker_loop`` on a row of shared words; a call posts a part to each free worker with one
compare-and-swap, runs its own part, and waits for the workers' parts (``run_parts``).

The words of the team (``int64``, one row of ``ROW`` per worker; row 0 holds ``WORKERS``,
the workers started, and ``SYSCALL``, the address of libc's ``syscall``; the first cache line
of a worker's row is written by the caller, the second by the worker):

- ``STATE``: ``IDLE`` (spinning, free), ``SLEEP`` (waiting on this word as a futex, without
  the GIL), ``CLAIMED`` (a caller holds the row), ``STOP``, an even job number (posted: run
  ``FN(BLOCK, PART)``) or that number + 1 (taken by the worker, with a compare-and-swap).
- ``FN``, ``BLOCK``, ``PART``: the part function's address (a ``void(int64, int64)``), the
  address of the call's argument block, the part number.
- ``DONE``: the last job the worker finished (odd). A caller that claimed a row numbers its
  job ``(DONE | 1) + 1``; when its own parts are done it takes a job the worker has not
  taken back (a swap to ``CLAIMED``) or waits for ``DONE`` to reach it; then it frees the row
  (``IDLE``): only the caller frees, so no row is reused before its caller is done with it.

A part function reads its arrays back from the argument block (addresses, shapes, the slope
as its bits) and runs the same serial loop on its part as the numba drivers of
``_threaded.py`` do; the parts depend on the sizes and the thread count only. One part
function per loop, storage kind and flags: numba closures, cached on disk like every kernel.
"""

from __future__ import annotations

import platform

import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .._config import NJIT_OPTIONS
from ._jit import _jit
from ._loops import (_as_int64, _disjoint_gi, _disjoint_out, _part, combine_partials, copy_row,
                     lrelu_bwd_row, finish_lanes, lane_count, lrelu_fwd_row, lrelu_fwd_row_inplace,
                     prelu_bwd_c, prelu_bwd_c_run, prelu_bwd_c_state, prelu_bwd_lanes,
                     prelu_fwd_c, prelu_fwd_c_run, prelu_fwd_short_run, slope_pattern,
                     start_lanes)
from ._threaded import _chunk
from ._vector import LANES

__all__ = ["ROW", "WORKERS", "SYSCALL", "STATE", "DONE", "IDLE", "SLEEP", "CLAIMED", "STOP", "MAX_THREADS", "SYS_FUTEX",
           "worker_loop", "set_state", "part_address", "TEAM_DRIVERS", "rows_at", "ROWS_AT_KIND"]

ROW = 16
WORKERS, SYSCALL = 0, 1  # (row 0: the workers started, libc's syscall)
STATE, FN, BLOCK, PART = 0, 1, 2, 3
DONE = 8
IDLE, SLEEP, CLAIMED, STOP = 0, -1, -2, -3
#: Threads a call may use on the team (its parts are a bit mask of one int64 word).
MAX_THREADS = 63

_I64 = ir.IntType(64)
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def _word(builder, addr, idx):
    return builder.inttoptr(builder.add(addr, builder.mul(idx, ir.Constant(_I64, 8))),
                            _I64.as_pointer())


def _int64(context, builder, value, ty):
    return context.cast(builder, value, ty, types.int64)


@intrinsic
def load_word(typingctx, addr, idx):
    """Word ``idx`` of the team at ``addr``, read with acquire ordering."""
    def codegen(context, builder, sig, args):
        a, i = (_int64(context, builder, v, t) for v, t in zip(args, sig.args))
        return builder.load_atomic(_word(builder, a, i), "acquire", 8)
    return types.int64(addr, idx), codegen


@intrinsic
def store_word(typingctx, addr, idx, value):
    """Word ``idx`` set to ``value`` with release ordering."""
    def codegen(context, builder, sig, args):
        a, i, v = (_int64(context, builder, x, t) for x, t in zip(args, sig.args))
        builder.store_atomic(v, _word(builder, a, i), "release", 8)
        return context.get_dummy_value()
    return types.none(addr, idx, value), codegen


@intrinsic
def swap_word(typingctx, addr, idx, old, new):
    """Compare-and-swap of word ``idx`` from ``old`` to ``new``; whether it was done."""
    def codegen(context, builder, sig, args):
        a, i, o, n = (_int64(context, builder, x, t) for x, t in zip(args, sig.args))
        pair = builder.cmpxchg(_word(builder, a, i), o, n, "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)
    return types.boolean(addr, idx, old, new), codegen


@intrinsic
def spin_pause(typingctx):
    """x86's ``pause`` in a spin loop (nothing elsewhere)."""
    def codegen(context, builder, sig, args):
        if _X86:
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                                "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()
    return types.none(), codegen


@intrinsic
def cycles(typingctx):
    """The CPU's cycle counter (``llvm.readcyclecounter``)."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_I64, []),
                                            "llvm.readcyclecounter")
        return builder.call(fn, [])
    return types.int64(), codegen


@intrinsic
def call_part(typingctx, fn, block, part):
    """Call the part function at address ``fn`` with ``(block, part)``."""
    def codegen(context, builder, sig, args):
        f, b, p = (_int64(context, builder, x, t) for x, t in zip(args, sig.args))
        fnty = ir.FunctionType(ir.IntType(8).as_pointer(), [_I64, _I64])
        builder.call(builder.inttoptr(f, fnty.as_pointer()), [b, p])
        return context.get_dummy_value()
    return types.none(fn, block, part), codegen


@intrinsic
def keep_alive(typingctx, arr):
    """Nothing at run time: a use of ``arr`` here, so that numba frees it only after this
    point. (numba frees an array after its last use in the code; a block passed on as its
    address alone was freed right after the address was taken, before any part had read it,
    so that the next allocation of this thread could reuse its memory.)"""
    def codegen(context, builder, sig, args):
        return context.get_dummy_value()
    return types.none(arr), codegen


@intrinsic
def address(typingctx, addr):
    """An integer address as a ``void*`` (for ``numba.carray``)."""
    def codegen(context, builder, sig, args):
        return builder.inttoptr(_int64(context, builder, args[0], sig.args[0]),
                                ir.IntType(8).as_pointer())
    return types.voidptr(addr), codegen


@intrinsic
def float_bits(typingctx, x):
    """The bits of a float64 as an int64."""
    def codegen(context, builder, sig, args):
        v = context.cast(builder, args[0], sig.args[0], types.float64)
        return builder.bitcast(v, _I64)
    return types.int64(x), codegen


@intrinsic
def bits_float(typingctx, b):
    """The float64 of the bits ``b``."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(_int64(context, builder, args[0], sig.args[0]), ir.DoubleType())
    return types.float64(b), codegen


# ---------------------------------------------------------------------------------------------
# the worker's loop and the caller's


#: Linux's futex operations on a private word, and the system call's number.
_FUTEX_WAIT, _FUTEX_WAKE = 128, 129
SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}.get(platform.machine().lower())


#: Linux's sched_yield, and the cycles a caller spins for a taken part before it yields its
#: CPU at each turn (the worker may share that CPU: more threads than CPUs).
SYS_SCHED_YIELD = {"x86_64": 24, "amd64": 24, "aarch64": 124, "arm64": 124}.get(
    platform.machine().lower())
_YIELD_AFTER = 100_000


@intrinsic
def sched_yield(typingctx, syscall):
    """``syscall(SYS_sched_yield)`` through libc's ``syscall`` at the address ``syscall``."""
    def codegen(context, builder, sig, args):
        f = _int64(context, builder, args[0], sig.args[0])
        fnty = ir.FunctionType(_I64, [_I64], var_arg=True)
        return builder.call(builder.inttoptr(f, fnty.as_pointer()),
                            [ir.Constant(_I64, SYS_SCHED_YIELD or 0)])
    return types.int64(syscall), codegen


@intrinsic
def futex(typingctx, syscall, addr, idx, op, value):
    """``syscall(SYS_futex, &word idx, op, value, NULL)`` through libc's ``syscall`` at the
    address ``syscall`` (given at run time: a cached kernel holds no address of this
    process)."""
    def codegen(context, builder, sig, args):
        f, a, i, o, v = (_int64(context, builder, x, t) for x, t in zip(args, sig.args))
        fnty = ir.FunctionType(_I64, [_I64], var_arg=True)
        i32 = ir.IntType(32)
        zero = ir.Constant(_I64, 0)
        return builder.call(builder.inttoptr(f, fnty.as_pointer()),
                            [ir.Constant(_I64, SYS_FUTEX or 0),
                             builder.ptrtoint(_word(builder, a, i), _I64),
                             builder.trunc(o, i32), builder.trunc(v, i32), zero, zero, zero])
    return types.int64(syscall, addr, idx, op, value), codegen


@_jit
def worker_loop(team, w, patience, syscall):
    """Worker ``w``'s life (without the GIL): take each job posted to its row and run it;
    after ``patience`` cycles of the CPU's counter without one, mark itself ``SLEEP`` and wait
    on the word (a futex) until a caller changes it; return when told to ``STOP``."""
    row = w * ROW
    since = cycles()
    while True:
        s = load_word(team, row + STATE)
        if s > 0 and s % 2 == 0:
            if swap_word(team, row + STATE, s, s + 1):  # (taken: the caller may not take it back)
                call_part(load_word(team, row + FN), load_word(team, row + BLOCK),
                          load_word(team, row + PART))
                store_word(team, row + DONE, s + 1)
            since = cycles()
        elif s == STOP:
            return
        elif s == IDLE and cycles() - since > patience:
            if swap_word(team, row + STATE, IDLE, SLEEP):
                while load_word(team, row + STATE) == SLEEP:
                    futex(syscall, team, row + STATE, _FUTEX_WAIT, SLEEP)
                since = cycles()
        else:
            spin_pause()


@_jit(_nrt=False)
def set_state(team, w, old, new, syscall):
    """Worker ``w``'s state from ``old`` to ``new`` (compare-and-swap), the worker woken if it
    slept on it; whether it was changed."""
    if not swap_word(team, w * ROW + STATE, old, new):
        return False
    if old == SLEEP:
        futex(syscall, team, w * ROW + STATE, _FUTEX_WAKE, 1)
    return True


# ---------------------------------------------------------------------------------------------
# the parts on an OpenMP runtime's threads (PyTorch's, in a torch program: _threads.OpenMPPool)

#: ``WORKERS`` of a pool's words: the parts run on an OpenMP runtime's threads, one parallel
#: region a call (``GOMP_parallel``), instead of on leakyops' workers. Row 0 then holds the
#: runtime's entry points (``GOMP_parallel``, ``omp_get_thread_num``, ``omp_get_num_threads``,
#: ``omp_get_max_threads``), ``omp_part_runner``'s address, and two counts: the regions
#: started, and the threads the last one had.
OPENMP = -1
GOMP_PARALLEL, OMP_THREAD_NUM, OMP_NUM_THREADS, OMP_MAX_THREADS, OMP_RUNNER = 2, 3, 4, 5, 6
OMP_REGIONS, OMP_THREADS_SEEN = 7, 8


@intrinsic
def add_word(typingctx, addr, idx, value):
    """Word ``idx`` increased by ``value`` (an atomic add)."""
    def codegen(context, builder, sig, args):
        a, i, v = (_int64(context, builder, x, t) for x, t in zip(args, sig.args))
        builder.atomic_rmw("add", _word(builder, a, i), v, "monotonic")
        return context.get_dummy_value()
    return types.none(addr, idx, value), codegen


@intrinsic
def call_int(typingctx, fn):
    """Call the C function ``int fn(void)`` at address ``fn``."""
    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(ir.IntType(32), [])
        r = builder.call(builder.inttoptr(_int64(context, builder, args[0], sig.args[0]),
                                          fnty.as_pointer()), [])
        return builder.sext(r, _I64)
    return types.int64(fn), codegen


@intrinsic
def gomp_parallel(typingctx, gomp, runner, data, nthreads):
    """``GOMP_parallel(runner, data, nthreads, 0)`` through its address ``gomp``: ``runner``
    (a ``void (void *)``) on ``nthreads`` threads of that OpenMP runtime, this one among them."""
    def codegen(context, builder, sig, args):
        g, r, d, n = (_int64(context, builder, x, t) for x, t in zip(args, sig.args))
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        runty = ir.FunctionType(ir.VoidType(), [i8p])
        fnty = ir.FunctionType(ir.VoidType(), [runty.as_pointer(), i8p, i32, i32])
        builder.call(builder.inttoptr(g, fnty.as_pointer()),
                     [builder.inttoptr(r, runty.as_pointer()), builder.inttoptr(d, i8p),
                      builder.trunc(n, i32), ir.Constant(i32, 0)])
        return context.get_dummy_value()
    return types.none(gomp, runner, data, nthreads), codegen


def omp_part_runner(data):
    """The function each OpenMP thread runs: ``data`` is ``[fn, block, nparts, team]``; thread
    ``t`` of ``T`` runs parts ``t, t + T, ...`` (every part runs, however many threads the
    runtime gave)."""
    d = carray(address(data), 4, np.int64)
    team = d[3]
    p = call_int(load_word(team, OMP_THREAD_NUM))
    step = call_int(load_word(team, OMP_NUM_THREADS))
    if p == 0:
        store_word(team, OMP_THREADS_SEEN, step)
    while p < d[2]:
        call_part(d[0], d[1], p)
        p += step


@njit(inline="always", **NJIT_OPTIONS)
def _run_parts_openmp(team, fn, block, nparts):
    """``run_parts`` on the OpenMP runtime whose entry points row 0 holds: one parallel region
    of ``min(nparts, omp_get_max_threads())`` threads (this thread among them: the runtime's
    own threads are the others), or every part here where that is 1."""
    nthreads = min(nparts, call_int(load_word(team, OMP_MAX_THREADS)))
    if nthreads <= 1:
        for p in range(nparts):
            call_part(fn, block, p)
        return 1
    d = np.empty(4, np.int64)
    d[0], d[1], d[2], d[3] = fn, block, nparts, team
    gomp_parallel(load_word(team, GOMP_PARALLEL), load_word(team, OMP_RUNNER), d.ctypes.data,
                  nthreads)
    keep_alive(d)
    add_word(team, OMP_REGIONS, 1)
    return 1


@_jit
def run_parts(team, fn, block, nparts, wait):
    """Run parts ``0 .. nparts-1`` of a call: part ``p`` >= 1 posted to worker ``p`` where its
    row is free, every other part on this thread; returns 1 once all are done. A part its
    worker has not taken when this thread is done with its own is taken back and run here
    (a worker the system has descheduled costs no wait). A sleeping worker is woken: given
    its part when ``wait`` (a large call, worth the wake-up's tens of µs), else for the next
    call, its part run here. An OpenMP pool's words (``WORKERS`` is ``OPENMP``) run them in a
    parallel region of that runtime instead."""
    workers, syscall = load_word(team, WORKERS), load_word(team, SYSCALL)
    if workers == OPENMP:
        return _run_parts_openmp(team, fn, block, nparts)
    posted = 0
    for p in range(1, nparts):
        row = p * ROW
        if p > workers:
            continue
        if swap_word(team, row + STATE, IDLE, CLAIMED) or (
                wait and set_state(team, p, SLEEP, CLAIMED, syscall)):
            store_word(team, row + FN, fn)
            store_word(team, row + BLOCK, block)
            store_word(team, row + PART, p)
            store_word(team, row + STATE, (load_word(team, row + DONE) | 1) + 1)  # (even)
            posted |= 1 << p
        elif not wait:
            set_state(team, p, SLEEP, IDLE, syscall)
    call_part(fn, block, 0)
    for p in range(1, nparts):
        if not (posted >> p) & 1:
            call_part(fn, block, p)
    for p in range(1, nparts):
        if (posted >> p) & 1:
            row = p * ROW
            job = load_word(team, row + STATE) & ~1  # (the job posted, taken or not)
            if swap_word(team, row + STATE, job, CLAIMED):  # (not taken: run it here)
                call_part(fn, block, p)
            else:
                since = cycles()
                while load_word(team, row + DONE) != job + 1:
                    if cycles() - since > _YIELD_AFTER:  # (more threads than CPUs: let it run)
                        sched_yield(syscall)
                    else:
                        spin_pause()
            store_word(team, row + STATE, IDLE)
    return 1


# ---------------------------------------------------------------------------------------------
# part functions: (block, part) -> the serial loop on that part. Block words: 0 the elements
# (or rows) split, 1 the parts, then the loop's operands.

_PARTS: dict = {}


def _rows_part(kind, dtype, ge):
    """Element-wise rows: block ``[n, parts, a0, a1, (a2), slope bits]``; the copy: two
    arrays, no slope. (The closures hold constants only, a dtype, a flag and a number, and
    name their loop as a global: numba's disk cache keys a closure by its cells, pickled,
    and a dispatcher pickles differently in every process.)"""
    size = np.dtype(dtype).itemsize

    if kind == "copy":
        def part(blk, p):
            b = carray(address(blk), 8, np.int64)
            lo, hi = _chunk(b[0], b[1], p)
            copy_row(carray(address(b[2] + size * lo), hi - lo, dtype),
                     carray(address(b[3] + size * lo), hi - lo, dtype))
    elif kind == "inplace":
        def part(blk, p):
            b = carray(address(blk), 8, np.int64)
            lo, hi = _chunk(b[0], b[1], p)
            lrelu_fwd_row_inplace(carray(address(b[2] + size * lo), hi - lo, dtype),
                                  bits_float(b[5]), ge)
    elif kind == "fwd":
        def part(blk, p):
            b = carray(address(blk), 8, np.int64)
            lo, hi = _chunk(b[0], b[1], p)
            lrelu_fwd_row(carray(address(b[2] + size * lo), hi - lo, dtype),
                          carray(address(b[3] + size * lo), hi - lo, dtype), bits_float(b[5]), ge)
    else:
        def part(blk, p):
            b = carray(address(blk), 8, np.int64)
            lo, hi = _chunk(b[0], b[1], p)
            lrelu_bwd_row(carray(address(b[2] + size * lo), hi - lo, dtype),
                          carray(address(b[3] + size * lo), hi - lo, dtype),
                          carray(address(b[4] + size * lo), hi - lo, dtype), bits_float(b[5]), ge)
    return part


def _prelu_part(dtype, per_k, ge):
    """prelu's C-contiguous 3-D views: block ``[n, parts, x, out, w, s0, s1, s2, w size,
    axis]``, part ``p`` the range ``_part(n, parts, p)`` of ``axis``."""
    def part(blk, p):
        b = carray(address(blk), 10, np.int64)
        shape = (b[5], b[6], b[7])
        x = carray(address(b[2]), shape, dtype)
        out = carray(address(b[3]), shape, dtype)
        w = carray(address(b[4]), b[8], dtype)
        lo, hi = _part(b[0], b[1], p)
        prelu_fwd_c(x, out, w, per_k, ge, b[9], lo, hi)
    return part


def _prelu_bwd_part(dtype, per_k, ge):
    """prelu_backward's C-contiguous 3-D views: block ``[n, parts, g, x, gi, s0, s1, s2, w,
    w size, sums, units]``. A slope per row: part ``p`` the channels ``_part(n, parts, p)``
    into their lanes (``sums``: ``(C, 2, LANES)``); channels last: the units
    ``_part(units, parts, p)``, each unit's rows into its own partial pair (``sums``:
    ``(units, 2, C)``), as ``prelu_bwd_c_run_par``'s parts (the bits depend on the shapes only)."""
    def part(blk, p):
        b = carray(address(blk), 12, np.int64)
        shape = (b[5], b[6], b[7])
        g = carray(address(b[2]), shape, dtype)
        x = carray(address(b[3]), shape, dtype)
        gi = carray(address(b[4]), shape, dtype)
        w = carray(address(b[8]), b[9], dtype)
        if not per_k:  # (b[0]: the channels, or a one-slope backward's units)
            lanes = carray(address(b[10]), (b[0], 2, LANES), np.float64)
            lo, hi = _part(b[0], b[1], p)
            prelu_bwd_lanes(g, x, gi, w, lanes, ge, lo, hi)
        else:
            partials = carray(address(b[10]), (b[11], 2, b[9]), np.float64)
            ulo, uhi = _part(b[11], b[1], p)
            for u in range(ulo, uhi):
                lo, hi = _part(shape[1], b[11], u)
                prelu_bwd_c(g, x, gi, w, partials[u, 0], partials[u, 1], lo, hi, ge)
    return part


def runner_address() -> int:
    """The address of ``omp_part_runner`` as a C function ``void (void *)``, compiled on first
    use."""
    addr = _PARTS.get("runner")
    if addr is None:
        disp = _jit(omp_part_runner)
        sig = (types.int64,)
        disp.compile(sig)
        cres = disp.overloads[sig]
        addr = _PARTS["runner"] = cres.library.get_pointer_to_function(
            cres.fndesc.llvm_cfunc_wrapper_name)
        _PARTS["runner", "keep"] = disp
    return addr


def part_address(kind, dtype, flags) -> int:
    """The address of the part function of ``kind`` (``"fwd"``, ``"inplace"``, ``"bwd"``,
    ``"copy"``, ``"prelu"``, ``"prelu_bwd"``) for the storage view ``dtype`` and the flags (``ge``; prelu ``(per_k, ge)``),
    compiled on first use."""
    key = (kind, dtype, flags)
    addr = _PARTS.get(key)
    if addr is None:
        dt = np.dtype(dtype).type
        if kind == "prelu":
            fn = _prelu_part(dt, *flags)
        elif kind == "prelu_bwd":
            fn = _prelu_bwd_part(dt, *flags)
        else:
            fn = _rows_part(kind, dt, flags)
        disp = _jit(fn)
        sig = (types.int64, types.int64)
        disp.compile(sig)
        cres = disp.overloads[sig]
        addr = _PARTS[key] = cres.library.get_pointer_to_function(cres.fndesc.llvm_cfunc_wrapper_name)
        _PARTS[key, "keep"] = disp  # (the compiled code lives as long as its dispatcher)
    return addr


def _rows_at(kind, dtype, ge):
    """An element-wise row call on raw memory: ``(n, a0, a1, a2, s, team, fn, wait,
    nthreads)``, the operands' addresses as the part functions take them (``_rows_part``: the
    forward's x and out, the in-place x, the backward's g, t and out; 0 for an operand the loop
    has not); the serial loop on this thread where ``nthreads`` is 1, else the parts posted to
    ``team`` as the team driver posts them. (A closure of constants, as ``_rows_part``'s.)"""
    if kind == "inplace":
        def at(n, a0, a1, a2, s, team, fn, wait, nthreads):
            if nthreads > 1:
                return _rows_team(n, a0, a1, a2, s, team, fn, wait, nthreads)
            lrelu_fwd_row_inplace(carray(address(a0), n, dtype), s, ge)
            return 1
    elif kind == "fwd":
        def at(n, a0, a1, a2, s, team, fn, wait, nthreads):
            if nthreads > 1:
                return _rows_team(n, a0, a1, a2, s, team, fn, wait, nthreads)
            lrelu_fwd_row(carray(address(a0), n, dtype), carray(address(a1), n, dtype), s, ge)
            return 1
    else:
        def at(n, a0, a1, a2, s, team, fn, wait, nthreads):
            if nthreads > 1:
                return _rows_team(n, a0, a1, a2, s, team, fn, wait, nthreads)
            lrelu_bwd_row(carray(address(a0), n, dtype), carray(address(a1), n, dtype),
                          carray(address(a2), n, dtype), s, ge)
            return 1
    return at


#: The kinds of ``rows_at``, per serial kernel.
ROWS_AT_KIND = {lrelu_fwd_row: "fwd", lrelu_fwd_row_inplace: "inplace", lrelu_bwd_row: "bwd"}


def rows_at(kernel, dtype, ge):
    """The entry point (called without numba's type dispatch) of ``kernel``'s element-wise rows
    on raw memory for the storage view ``dtype`` and the flag ``ge`` (``_rows_at``), compiled
    on first use (or found in numba's disk cache)."""
    key = ("at", kernel, dtype, ge)
    ep = _PARTS.get(key)
    if ep is None:
        disp = _jit(_rows_at(ROWS_AT_KIND[kernel], np.dtype(dtype).type, ge))
        i64 = types.int64
        ep = _PARTS[key] = disp.compile((i64, i64, i64, i64, types.float64, i64, i64, i64, i64))
        _PARTS[key, "keep"] = disp
    return ep


# ---------------------------------------------------------------------------------------------
# the callers' drivers: the serial kernel's arguments, then the team's address, the part
# function's address, whether to wait for a sleeping worker and the thread count; they return
# 1, or 0 where prelu's out shares memory with an operand (nothing written).


@njit(inline="always", **NJIT_OPTIONS)
def _rows_team(n, a0, a1, a2, s, team, fn, wait, nthreads):
    """An element-wise row call: block ``[n, parts, a0, a1, a2, slope bits]`` (addresses; 0
    for an operand the loop has not), parts posted."""
    b = np.empty(8, np.int64)
    b[0], b[1], b[2], b[3], b[4], b[5] = n, nthreads, a0, a1, a2, float_bits(s)
    done = run_parts(team, fn, b.ctypes.data, nthreads, wait)
    keep_alive(b)
    return done


@_jit
def lrelu_fwd_row_team(x, out, s, ge, team, fn, wait, nthreads):
    return _rows_team(x.shape[0], x.ctypes.data, out.ctypes.data, 0, s, team, fn, wait, nthreads)


@_jit
def lrelu_fwd_row_inplace_team(x, s, ge, team, fn, wait, nthreads):
    return _rows_team(x.shape[0], x.ctypes.data, 0, 0, s, team, fn, wait, nthreads)


@_jit
def lrelu_bwd_row_team(g, t, out, s, ge, team, fn, wait, nthreads):
    return _rows_team(t.shape[0], g.ctypes.data, t.ctypes.data, out.ctypes.data, s, team, fn,
                      wait, nthreads)


@_jit
def copy_row_team(src, dst, team, fn, wait, nthreads):
    return _rows_team(src.shape[0], src.ctypes.data, dst.ctypes.data, 0, 0.0, team, fn, wait,
                      nthreads)


@_jit
def _prelu_team(x, out, w, axis, team, fn, wait, nthreads):
    n = x.shape[axis]
    parts = max(1, min(nthreads, n))
    b = np.empty(10, np.int64)
    b[0], b[1], b[2], b[3], b[4] = n, parts, x.ctypes.data, out.ctypes.data, w.ctypes.data
    b[5], b[6], b[7], b[8], b[9] = x.shape[0], x.shape[1], x.shape[2], w.shape[0], axis
    done = run_parts(team, fn, b.ctypes.data, parts, wait)
    keep_alive(b)
    return done


@_jit
def prelu_fwd_c_run_team(x, out, w, per_k, ge, axis, team, fn, wait, nthreads):
    """``prelu_fwd_c_run`` on the team: ``axis`` in as many parts as threads, or the outer axis
    where it splits evenly among them (each thread one contiguous stretch). 0, nothing
    written, where ``out`` shares memory with ``x`` or ``w``, as there."""
    if not _disjoint_out(x, out, w):
        return 0
    if x.shape[0] >= nthreads and x.shape[0] % nthreads == 0:
        axis = 0
    return _prelu_team(x, out, w, axis, team, fn, wait, nthreads)


#: prelu's channels-last forward runs rows of fewer than ``LAST_GROUP // 2`` elements in
#: groups of ``LAST_GROUP // C`` rows (``prelu_fwd_last_run_team``).
LAST_GROUP = 256


@_jit
def prelu_fwd_last_run_team(x, out, w, ge, team, fn, wait, nthreads):
    """``prelu_fwd_c_run`` channels last on the team ((1, rows, C) views, element k of a row
    with the slope ``w[k]``; ``fn`` the prelu part with ``per_k``), the parts splitting the
    rows. Rows of fewer than ``LAST_GROUP // 2`` elements run in groups of g = ``LAST_GROUP //
    C`` as rows of g·C over the slopes repeated g times (a row of 16 half-type elements is half
    a vector with a masked tail); the rows that fill no group after them, on this thread. The
    same element-by-element results. 0, nothing written, as there."""
    if not _disjoint_out(x, out, w):
        return 0
    rows, c = x.shape[1], x.shape[2]
    g = LAST_GROUP // c
    if 2 * c >= LAST_GROUP or rows < 2 * g:
        return _prelu_team(x, out, w, _as_int64(1), team, fn, wait, nthreads)
    groups = rows // g
    pattern = np.empty(g * c, w.dtype)
    for r in range(g):  # (element by element: numba's slice assignment compiles a shape
        for k in range(c):  # check with a formatted message, 2.9 s a kind on a cold cache)
            pattern[r * c + k] = w[k]
    shape3 = (1, groups, g * c)
    done = _prelu_team(carray(address(x.ctypes.data), shape3, x.dtype),
                       carray(address(out.ctypes.data), shape3, out.dtype), pattern,
                       _as_int64(1), team, fn, wait, nthreads)
    prelu_fwd_c(x, out, w, True, ge, _as_int64(1), _as_int64(groups * g), rows)
    return done


@_jit
def prelu_fwd_short_run_team(x, out, w, ge, team, fn, wait, nthreads):
    """``prelu_fwd_short_run`` on the team: the outer rows in parts, over the slopes laid out
    per element (``fn``: the prelu part with ``per_k``). 0, nothing written, as there."""
    if not _disjoint_out(x, out, w):
        return 0
    n0, c, inner = x.shape
    return _prelu_team(x.reshape((1, n0, c * inner)), out.reshape((1, n0, c * inner)),
                       slope_pattern(w, inner), _as_int64(1), team, fn, wait, nthreads)


@_jit
def prelu_bwd_c_run_team(g, x, gi, w, acc, per_k, ge, team, fn, wait, nthreads):
    """``prelu_bwd_c_run_par`` on the team: the same parts, the sums started before and
    rounded (or combined) after every part has read its data. 0, nothing written, where
    ``gi`` shares memory with another array."""
    if not _disjoint_gi(g, x, gi, w, acc):
        return 0
    b = np.empty(12, np.int64)
    b[2], b[3], b[4], b[8], b[9] = g.ctypes.data, x.ctypes.data, gi.ctypes.data, w.ctypes.data, w.shape[0]
    b[5], b[6], b[7] = x.shape[0], x.shape[1], x.shape[2]
    if not per_k:
        c = lane_count(x, w)
        lanes = start_lanes(c, ge)
        parts = max(1, min(nthreads, c))
        b[0], b[1], b[10] = c, parts, lanes.ctypes.data
        run_parts(team, fn, b.ctypes.data, parts, wait)
        keep_alive(b)
        finish_lanes(lanes, acc, x, w, ge)
    else:
        units, partials = prelu_bwd_c_state(x.shape, w.shape[0], ge)
        parts = max(1, min(nthreads, units))
        b[0], b[1], b[10], b[11] = units, parts, partials.ctypes.data, units
        run_parts(team, fn, b.ctypes.data, parts, wait)
        keep_alive(b)
        combine_partials(partials, acc, ge)
    return 1


#: Each serial kernel's team driver.
TEAM_DRIVERS = {
    lrelu_fwd_row: lrelu_fwd_row_team,
    lrelu_fwd_row_inplace: lrelu_fwd_row_inplace_team,
    lrelu_bwd_row: lrelu_bwd_row_team,
    copy_row: copy_row_team,
    prelu_fwd_c_run: prelu_fwd_c_run_team,
    prelu_fwd_short_run: prelu_fwd_short_run_team,
    prelu_bwd_c_run: prelu_bwd_c_run_team,
}
