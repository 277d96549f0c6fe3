"""Numba kernels of the LeakyReLU family, compiled lazily, by concern:

==================  ==========================================================================
``_jit.py``         how a kernel is compiled and cached (one stamp for the whole package)
``_rules.py``       the scalar rules: storage conversions, the formulas, oneDNN's ``Rule``\\ s
``_loops.py``       the loops: serial, one pass over memory, vectorised by LLVM or in explicit
                    vectors (picked per target in one ``@overload`` each)
``_vector.py``      explicit vectors (``Vec``) and the instructions LLVM's loops do not reach
                    (AVX blends, AVX512-BF16's rounding)
``_threaded.py``    the threaded drivers: ``prange`` over parts, each part a serial loop
``_team.py``        leakyops' own team: the contiguous paths' threaded calls, parts posted to
                    spinning workers through shared words (no numba region to launch)
``_plain.py``       the compiled half of ``prelu``'s and ``prelu_backward``'s contiguous-path
                    tests (shapes, strides, alignment: what numba's unboxing reads), then
                    the kernel
==================  ==========================================================================

Storage kinds are told apart by the dtype of the view a kernel receives, so that every
kernel is one module-level function that numba caches on disk per signature:

==========  =====================  ================
kind        view the core passes   compute type
==========  =====================  ================
float16     ``uint16`` bits        float32
bfloat16    ``int16`` bits         float32
float32     ``float32``            float32
float64     ``float64``            float64
==========  =====================  ================

A result is computed in the compute type of the *output* view's kind and rounded once into
it; inputs of another kind are widened exactly (``leaky_relu_backward`` promotes). The
comparison is the ``ge`` flag: ``x > 0`` keeps the input (PyTorch, aclnn) or, with
``ge=True``, ``x >= 0`` does (the Ascend C API's documented rule); it is branch-free in the
loop, so both are one loop. In place of the flag a :class:`Rule` selects the formula one of
oneDNN's kernels computes (its eltwise ReLU, its reference and jit PReLU), compiled as a
literal into loops of its own. Each scalar rule is written once (``_keep``, ``_lrelu``,
``_lrelu_grad``, ``_prelu_term``, ``_load``, ``_narrow``) and every loop uses it.

float16 uses LLVM's ``half`` conversions (F16C instructions on x86), which vectorise; when
the target CPU lacks F16C they would compile to calls of ``__extendhfsf2``/``__truncsfhf2``
that numba's JIT does not resolve, so an exact software conversion replaces them (see
:func:`leakyops._config.use_soft_half`). bfloat16 is the top half of a float32: widening is
a shift, narrowing adds the round-to-nearest-even bias in 32-bit integers, or, where the
target has AVX512-BF16 (:func:`leakyops._cpu.bf16_convert`), the explicit vector loops round
with ``vcvtneps2bf16``/``vcvtne2ps2bf16`` and send a vector holding a float32 subnormal to
the integer rounding (``_vector.round_bf16_hw``): the same bits. NaN stays NaN (quiet, sign
and top payload bits kept), overflow goes to ±inf.

Kernels never validate and never allocate Python objects; they release the GIL. (A kernel
may find its arrays unfit and return 0 with nothing written, for the core to decide:
``grad_input`` sharing memory with an input, or, in ``_plain.py``'s entries, a shape, stride or
alignment the contiguous kernels do not take.) The core
(``_core.py``) chooses the kernel and whether it runs threaded.
"""

from ._jit import BF16_CVT, MASKED_VECTORS, SOFT_HALF, entry_point
from ._loops import (PARTIALS_BUDGET, UNIT, combine_partials, copy_row, lrelu_bwd_nd, round_sums,
                     lrelu_bwd_row, lrelu_fwd_nd, lrelu_fwd_nd_inplace, lrelu_fwd_row,
                     lrelu_fwd_row_inplace, prelu_bwd_c_run, prelu_bwd_nd, prelu_fwd_c_run,
                     prelu_fwd_nd, prelu_fwd_short_run)
from ._rules import (DNNL_ELTWISE, DNNL_ELTWISE_HALF, DNNL_JIT, DNNL_JIT_AVX, DNNL_JIT_AVX2,
                     DNNL_JIT_SSE41, DNNL_REF, DNNL_RELU, VIEW_DTYPES, Rule, f2h_soft, h2f_soft)
from ._team import (CLAIMED, DONE, GOMP_PARALLEL, IDLE, MAX_THREADS, OMP_MAX_THREADS,
                    OMP_NUM_THREADS, OMP_REGIONS, OMP_RUNNER, OMP_THREAD_NUM, OMP_THREADS_SEEN,
                    OPENMP, ROW, ROWS_AT_KIND, SLEEP, STATE, STOP, SYS_FUTEX, SYSCALL,
                    TEAM_DRIVERS, WORKERS, part_address, rows_at, runner_address, set_state,
                    worker_loop)
from ._plain import (MISSING_LAST, MISSING_ONE, MISSING_ROWS, NEEDS_THREADS, NOT_FINITE,
                     prelu_bwd_plain, prelu_fwd_at, prelu_fwd_plain)
from ._threaded import (lrelu_bwd_nd_par, lrelu_bwd_row_par, lrelu_fwd_nd_inplace_par,
                        lrelu_fwd_nd_par, lrelu_fwd_row_inplace_par, lrelu_fwd_row_par,
                        prelu_bwd_c_run_par, prelu_bwd_nd_par, prelu_fwd_nd_par)

__all__ = ["VIEW_DTYPES", "Rule", "DNNL_ELTWISE", "DNNL_RELU", "DNNL_REF", "DNNL_JIT",
           "DNNL_JIT_AVX2", "DNNL_JIT_AVX", "DNNL_JIT_SSE41", "DNNL_ELTWISE_HALF",
           "entry_point", "lrelu_fwd_row", "lrelu_fwd_nd", "lrelu_fwd_row_inplace",
           "lrelu_fwd_nd_inplace", "lrelu_bwd_row", "lrelu_bwd_nd", "prelu_fwd_nd",
           "prelu_fwd_c_run", "prelu_bwd_nd", "prelu_bwd_c_run", "combine_partials", "copy_row",
           "lrelu_fwd_row_par", "lrelu_fwd_row_inplace_par", "lrelu_bwd_row_par",
           "lrelu_fwd_nd_par", "lrelu_fwd_nd_inplace_par", "lrelu_bwd_nd_par",
           "prelu_fwd_nd_par", "prelu_bwd_nd_par", "prelu_bwd_c_run_par", "UNIT", "PARTIALS_BUDGET", "h2f_soft", "f2h_soft", "round_sums",
           "BF16_CVT", "MASKED_VECTORS", "SOFT_HALF", "prelu_fwd_short_run",
           "TEAM_DRIVERS", "ROWS_AT_KIND", "part_address", "rows_at", "worker_loop", "set_state",
           "MAX_THREADS", "ROW", "WORKERS", "SYSCALL", "STATE", "DONE", "IDLE", "SLEEP", "CLAIMED",
           "STOP", "SYS_FUTEX", "OPENMP", "GOMP_PARALLEL", "OMP_THREAD_NUM", "OMP_NUM_THREADS",
           "OMP_MAX_THREADS", "OMP_RUNNER", "OMP_REGIONS", "OMP_THREADS_SEEN", "runner_address",
           "prelu_bwd_plain", "prelu_fwd_at", "prelu_fwd_plain", "MISSING_LAST", "MISSING_ONE",
           "MISSING_ROWS", "NEEDS_THREADS", "NOT_FINITE"]
