"""The CPU: its features, the caps, and the path each kernel takes. Nothing else asks the CPU.

Features are LLVM's names (``"avx2"``, ``"avx512f"``, ``"avx512bf16"``, ``"f16c"``, ``"amx-tile"``,
…). Two sets matter: the **host's** (:func:`host_features`, what the processor offers *and* the
operating system has enabled: LLVM checks the XSAVE state, so AVX-512 registers that the OS does
not save count as absent), which ``leakyops.onednn`` reads to model what oneDNN dispatches; and
the **target's** (:func:`target_features`), what numba compiles the kernels for: the host's,
unless ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` name another CPU.

The kernels take one path per (operator, dtype), decided here once (:func:`kernel_paths`):

- float16 converts to and from float32 with F16C (``vcvtph2ps``/``vcvtps2ph``, through LLVM's
  ``half``) where the target has it, else with exact software conversions;
- bfloat16 widens by a shift; it rounds to nearest even with AVX512-BF16's ``vcvtneps2bf16``
  (through LLVM's ``bfloat``) where the target has it, a vector at a time, and in 32-bit
  integers where a vector holds a float32 subnormal, which the instruction flushes to zero;
  elsewhere in 32-bit integers (portable); where the target has AVX2 (and not the
  instruction), the element-wise rows of ``leaky_relu``, ``leaky_relu_`` and
  ``leaky_relu_backward`` (and every streamed row) widen and round in pair order
  (:func:`bf16_pairs`): no lane-crossing shuffle;
- ``prelu_backward``'s weight gradient sums its terms in 16 float64 lanes of an explicit LLVM
  vector, in a written-out order (portable: the same bits on every CPU).

- ``prelu`` on float32 rows shorter than 512 elements (a slope per row, or channels last)
  takes explicit vectors of 16 lanes whose last, partial one is masked where the target has
  AVX-512F, else LLVM's vectorised loop (its remainder runs element by element: a row of 39
  elements cost about what a row of 63 did).
- ``leaky_relu_`` on float32 and float64 blends explicit vectors with AVX's ``vblendvps``/
  ``vblendvpd`` where the target has AVX but not AVX-512 (LLVM otherwise stores in place with
  AVX's masked stores, several times slower on AMD's Zen), else the portable loop (AVX-512's
  masked stores are fast: the blends, 256 bits at a time, were 1.4x slower there).

Where a contiguous call starts the threads is decided here too (:func:`thread_weights`, the
measured crossovers of one thread and two on these paths), and stated in each path.

The paths give the same bits; they differ in speed. ``LEAKYOPS_MAX_CPU_ISA`` caps them, as
``ONEDNN_MAX_CPU_ISA`` caps oneDNN: ``portable`` takes the portable path everywhere (the tests
force it too), ``avx`` allows the AVX blends, ``f16c`` F16C and (with AVX2) bfloat16's pair
order as well, ``avx512bf16`` the bfloat16 instruction too (no cap: every path the target
has). A cap the target cannot run (``f16c`` without F16C) is an error naming the missing
feature. The older ``LEAKYOPS_SOFT_HALF=1`` still forces the software float16
conversions.

>>> "sse2" in host_features() or not host_features()   # x86-64 has SSE2; other CPUs: their own
True
"""

from __future__ import annotations

import functools
import math
import os

__all__ = ["host_features", "host_name", "target", "target_features", "CAP_ENV", "cap", "LEVELS",
           "soft_half", "avx_blend", "bf16_convert", "bf16_pairs", "masked_vectors",
           "prelu_short_rows", "thread_weights", "thread_thresholds", "kernel_paths",
           "runtime_info"]

#: The environment variable that caps the instruction sets the kernels use.
CAP_ENV = "LEAKYOPS_MAX_CPU_ISA"

#: The levels of ``LEAKYOPS_MAX_CPU_ISA``, lowest first, with the target features each needs.
LEVELS = {"portable": frozenset(), "avx": frozenset({"avx"}), "f16c": frozenset({"avx", "f16c"}),
          "avx512bf16": frozenset({"avx", "f16c", "avx512f", "avx512vl", "avx512dq", "avx512bf16"})}


@functools.lru_cache(maxsize=None)
def host_features() -> frozenset[str]:
    """The features of the CPU this process runs on (LLVM names; empty if unknown)."""
    try:
        import llvmlite.binding as llvm

        found = llvm.get_host_cpu_features()
    except Exception:  # pragma: no cover - llvmlite cannot read this CPU
        return frozenset()
    return frozenset(name for name, on in found.items() if on)


@functools.lru_cache(maxsize=None)
def host_name() -> str:
    """LLVM's name of this CPU (``"znver3"``, ``"sapphirerapids"``, …)."""
    try:
        import llvmlite.binding as llvm

        return str(llvm.get_host_cpu_name())
    except Exception:  # pragma: no cover
        return "unknown"


@functools.lru_cache(maxsize=None)
def target() -> tuple[str, str | None]:
    """``(cpu name, features)`` numba compiles for: ``("host", None)`` unless
    ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` say otherwise."""
    from numba.core import config

    return (config.CPU_NAME or "host"), config.CPU_FEATURES


@functools.lru_cache(maxsize=None)
def target_features() -> frozenset[str] | None:
    """The features numba compiles the kernels for (LLVM names), or None where they are not
    known. As numba's codegen: without ``NUMBA_CPU_FEATURES`` the host's features, added to
    whatever CPU ``NUMBA_CPU_NAME`` names; with it (empty included, the default for
    ``generic``), exactly those on top of the named CPU's own defaults, which LLVM keeps to
    itself: then only the features named ``+`` are known (for the host's own name, its
    features)."""
    name, features = target()
    if features is None:
        return host_features()
    given = {f[1:]: f[0] == "+" for f in features.replace(" ", "").split(",")
             if f[:1] in "+-" and f[1:]}
    if name == "host":
        have = set(host_features())
        for f, on in given.items():
            (have.add if on else have.discard)(f)
        return frozenset(have)
    known = {f for f, on in given.items() if on}
    for feature in _PROBES:
        if given.get(feature) is None and _compiles(name, features, feature):
            known.add(feature)  # the named CPU's own default, as LLVM compiles for it
    return frozenset(known) or None


#: Features whose presence in a named CPU's defaults LLVM is asked about: a small function, and
#: the instruction (or register) that shows LLVM compiled it with the feature.
_PROBES = {
    "f16c": ("define i16 @f(float %x) {\n  %h = fptrunc float %x to half\n"
             "  %b = bitcast half %h to i16\n  ret i16 %b\n}\n", "vcvtps2ph"),
    "avx": ("define <8 x float> @f(<8 x float> %x, <8 x float> %y) {\n"
            "  %z = fadd <8 x float> %x, %y\n  ret <8 x float> %z\n}\n", "ymm"),
}


@functools.lru_cache(maxsize=None)
def _compiles(cpu: str, features: str, feature: str) -> bool:
    """Whether LLVM compiles ``feature``'s probe for ``cpu`` with ``features`` into the
    feature's instruction (its own answer for a named CPU's defaults: ``haswell`` has F16C,
    ``generic`` not). One tiny function; no numba."""
    source, sign = _PROBES[feature]
    try:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        module = llvm.parse_assembly(source)
        machine = llvm.Target.from_default_triple().create_target_machine(cpu=cpu,
                                                                            features=features)
        return sign in machine.emit_assembly(module)
    except Exception:  # pragma: no cover - not x86, or LLVM refuses the name: assume not
        return False


def cap() -> str | None:
    """``LEAKYOPS_MAX_CPU_ISA`` (a level of :data:`LEVELS`, any case) or None; an unknown level,
    or one the target cannot run, is a ``RuntimeError`` that names it."""
    raw = os.environ.get(CAP_ENV, "").strip().lower()
    if not raw:
        return None
    if raw not in LEVELS:
        raise RuntimeError(f"{CAP_ENV}={raw!r}: not one of {', '.join(LEVELS)}")
    missing = LEVELS[raw] - (target_features() or frozenset())
    if missing:
        raise RuntimeError(f"{CAP_ENV}={raw}: the CPU the kernels are compiled for has no "
                           f"{', '.join(sorted(missing)).upper()} (target: {target()[0]})")
    return raw


def soft_half() -> bool:
    """Whether float16 is converted in software rather than with F16C: where the target lacks
    F16C (or is not known to have it: LLVM's half conversions would then call compiler-runtime
    helpers that numba's JIT does not resolve), under ``LEAKYOPS_MAX_CPU_ISA=portable``, or with
    ``LEAKYOPS_SOFT_HALF=1`` (``0``: F16C wherever the target has it)."""
    forced = os.environ.get("LEAKYOPS_SOFT_HALF", "")
    level = cap()
    if level == "portable":
        return True
    if forced:
        return forced != "0"
    return "f16c" not in (target_features() or frozenset())


def avx_blend() -> bool:
    """Whether the explicit vector code blends with AVX's ``vblendvps``/``vblendvpd``
    intrinsics (the target has AVX, not AVX-512, and no cap below ``avx``) rather than LLVM's
    portable select, which LLVM turns into masked stores in place: slow with AVX's
    ``vmaskmovps``, fast with AVX-512's masks."""
    if cap() == "portable":
        return False
    have = target_features() or frozenset()
    return "avx" in have and "avx512f" not in have


def bf16_convert() -> bool:
    """Whether float32 rounds to bfloat16 with AVX512-BF16's ``vcvtneps2bf16``: the target and
    the host both have AVX512-BF16, -VL and -DQ (``vfpclassps`` finds the subnormals; the
    kernels run here: a target feature the host lacks would be an illegal instruction) and no
    cap below ``avx512bf16``."""
    if cap() not in (None, "avx512bf16"):
        return False
    need = {"avx512f", "avx512vl", "avx512dq", "avx512bf16"}
    return need <= (target_features() or frozenset()) and need <= host_features()


def bf16_pairs() -> bool:
    """Whether the element-wise bfloat16 loops widen and round in pair order (``_rules.
    _bf16_pairs``: even and odd elements in separate halves of the lanes, no lane-crossing
    shuffle): the target has AVX2 (256-bit integer shifts and blends), the rounding is the
    integer one (not ``bf16_convert``) and no cap below ``f16c``."""
    if cap() in ("portable", "avx") or bf16_convert():
        return False
    return "avx2" in (target_features() or frozenset())


def masked_vectors() -> bool:
    """Whether prelu's float32 rows take explicit vectors whose last, partial vector is masked
    (AVX-512F: a masked load or store is one instruction), rather than LLVM's vectorised loop,
    whose remainder runs element by element: the target has AVX512-F and no cap below
    ``avx512bf16``."""
    if cap() not in (None, "avx512bf16"):
        return False
    return "avx512f" in (target_features() or frozenset())


def last_level_cache() -> int:
    """Bytes of the largest cache of CPU 0 (Linux: ``/sys/devices/system/cpu/cpu0/cache``), 0
    where that cannot be read."""
    best = 0
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = os.listdir(root)
    except OSError:
        return 0
    for entry in entries:
        try:
            with open(os.path.join(root, entry, "size")) as f:
                raw = f.read().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(raw[-1:], 1)
        digits = raw.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best


def stream_min_bytes() -> int:
    """Output bytes from which a contiguous row's results are written with streaming
    (non-temporal) stores, past the caches: half the last-level cache (a row that long, with
    its inputs, no longer fits there; its lines would be read for ownership, then evicted
    unread), ``LEAKYOPS_STREAM_MIN_BYTES`` where set; never (2**62) where the cache's size is
    unknown."""
    from ._config import _env_int

    llc = last_level_cache()
    return _env_int("LEAKYOPS_STREAM_MIN_BYTES", llc // 2 if llc else 1 << 62)


def prelu_short_rows() -> dict[str, int]:
    """Per dtype, the row length (slope per row) under which prelu runs as channels last over
    the slopes laid out per element, not in rows: a half type's explicit vectors (32 lanes)
    run rows at least that long as one stretch, a vector across two rows taking each row's
    slope, and a shorter row would cost a vector with a masked (AVX-512) or element-by-element
    (AVX2) tail; 0: never (measurements at ``leakyops._core._SHORT_ROW``)."""
    return {"float16": 0 if soft_half() else 32, "bfloat16": 32 if bf16_convert() else 0,
            "float32": 0, "float64": 0}


_OPERATORS = ("leaky_relu", "leaky_relu_", "leaky_relu_backward", "prelu", "prelu_backward")
_DTYPES = ("float16", "bfloat16", "float32", "float64")


def thread_weights() -> dict[str, dict[str, float]]:
    """Per operator and dtype, how much a byte of a contiguous call's output weighs against
    ``LEAKYOPS_PARALLEL_MIN_BYTES`` (128 KiB unless set): such a call runs on the threads from
    that many weighted bytes on (:func:`thread_thresholds` in elements). The weights are the
    measured crossovers of one thread and two divided into 128 KiB (docs/benchmarks.md).

    The contiguous paths of the five operators run threaded on leakyops' own team
    (``_kernels/_team.py``); measured on an AMD EPYC Zen 5 with it, natively and under the AVX2
    caps (through the API, one thread against two, 8,192-196,608 elements):

    - float16 and bfloat16 on the portable (AVX2) loops cross at 12,000-16,000 and under 8,200
      elements (their conversions are the work; prelu's bfloat16 at about 28,000); on the
      explicit AVX-512 loops (float16 with masks, bfloat16 rounded by AVX512-BF16) at
      25,000-32,000 elements.
    - float32 and float64 out of place at 24,000-49,000 elements on both tiers: the weights
      measured on a Zen 3 with numba's OpenMP team stay (32,768 and 16,384 elements).
    - In place (the loop reads and writes the same lines): float32 at about 90,000 elements
      with AVX-512, 40,000 under the AVX2 caps; float64 at about 28,000 and 16,000.

    ``prelu_backward`` (its contiguous path, on the team too) crossed at 1,000-4,000 elements
    of every dtype on both tiers ((4, 64, L)) while the VM passed a cache line between its
    two CPUs in 50 ns, at 65,000 and more an hour later, when that took 400 ns (every
    threaded library slowed alike; the element-wise crossovers doubled): it starts its threads
    from 16,384 elements, between the two. float32 without AVX-512 from 9,363 (weight 3.5):
    its loop is slower there (the float64 terms' eight conversions per 16 elements), and under
    the AVX2 caps two threads took (4, 64, 39) in 4.20-4.36 µs against one's 4.43-4.89, and
    (4, 64, 32) in 3.87-4.04 against 3.63-3.93 (2026-11-29; docs/benchmarks.md, stop 41).
    """
    base = {"float16": 4.0, "bfloat16": 6.0, "float32": 1.0, "float64": 1.0}
    fwd, bwd, prelu = dict(base), dict(base), {**base, "bfloat16": 2.0}
    for dtype, explicit in (("float16", masked_vectors()), ("bfloat16", bf16_convert())):
        if explicit:
            fwd[dtype] = bwd[dtype] = prelu[dtype] = 2.0
    wide = masked_vectors()  # (AVX-512: the in-place loops are faster, cross later)
    inplace = {**fwd, "float32": 0.36 if wide else 0.8, "float64": 0.58 if wide else 1.0}
    return {"leaky_relu": fwd, "leaky_relu_": inplace, "leaky_relu_backward": bwd,
            "prelu": prelu,
            "prelu_backward": {"float16": 4.0, "bfloat16": 4.0, "float32": 2.0 if wide else 3.5,
                               "float64": 1.0}}


_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


def thread_thresholds() -> dict[str, dict[str, int]]:
    """Per operator and dtype, the elements from which a contiguous call runs on the threads
    (where more than one is allowed): ``LEAKYOPS_PARALLEL_MIN_BYTES`` over the weighted bytes
    of an element (:func:`thread_weights`)."""
    from ._config import PARALLEL_MIN_BYTES  # (a leaf module: the environment's threshold)

    return {op: {dt: math.ceil(PARALLEL_MIN_BYTES / (_ITEMSIZE[dt] * w)) for dt, w in wts.items()}
            for op, wts in thread_weights().items()}


def kernel_paths() -> dict[str, dict[str, str]]:
    """The path each operator takes for each dtype, in words: ``{operator: {dtype: path}}``."""
    conversions = {
        "float16": "software float16 conversions" if soft_half() else "F16C conversions",
        "bfloat16": ("bfloat16 rounded by vcvtneps2bf16 (explicit vectors; integer rounding "
                     "for a vector with a float32 subnormal)") if bf16_convert()
        else "bfloat16 by integer rounding",
        "float32": "float32",
        "float64": "float64",
    }
    short = prelu_short_rows()
    threads_from = thread_thresholds()
    stream = stream_min_bytes()
    paths: dict[str, dict[str, str]] = {}
    for op in _OPERATORS:
        paths[op] = {}
        for dt in _DTYPES:
            path = f"loop vectorised by LLVM, {conversions[dt]}"
            if (op in ("leaky_relu", "leaky_relu_", "leaky_relu_backward") and dt == "bfloat16"
                    and bf16_pairs()):
                path = ("explicit vectors in pair order (even and odd elements in separate "
                        f"lanes, AVX2), {conversions[dt]}")
            if op == "leaky_relu_" and dt in ("float32", "float64") and avx_blend():
                path = f"explicit vectors with AVX blends (plain stores), {conversions[dt]}"
            if op == "prelu" and dt == "float32" and masked_vectors():
                path = ("rows under 512 elements in explicit vectors of 16 lanes, the last one "
                        "masked (AVX-512), longer ones a loop vectorised by LLVM, float32")
            if op == "prelu" and short[dt]:
                path += (f"; rows of {short[dt]} elements or more (a slope per row) in runs of "
                         "vectors across the rows, shorter ones as channels last, over the "
                         "slopes laid out per element")
            if op == "prelu_backward":
                path += "; grad_weight in 16 float64 lanes (explicit vectors, written-out order)"
            if op in ("leaky_relu", "leaky_relu_backward", "prelu") and stream < 1 << 62:
                path += (f"; results of a thread's part of {stream:,} bytes or more written "
                         "with streaming stores (past the caches)")
            if (op == "leaky_relu_" and dt in ("float32", "float64") and not avx_blend()
                    and stream < 1 << 62):
                path += (f"; a thread's part of {stream:,} bytes or more stored in whole vectors "
                         "(not masked stores)")
            paths[op][dt] = path + (f"; threads from {threads_from[op][dt]:,} elements "
                                    "(contiguous; leakyops' team)")
    return paths


def runtime_info() -> dict:
    """What the kernels run on and how: the CPU, its features, numba's target, the caps, the
    threads and the path of every kernel (:func:`leakyops.show_runtime` prints it)."""
    import numba

    from . import _threads

    interesting = ("sse4.1", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                   "avx512dq", "avx512vnni", "avx512bf16", "avx512fp16", "avxvnni", "avxneconvert",
                   "amx-tile", "amx-bf16")
    name, features = target()
    tf = target_features()
    return {
        "cpu": host_name(),
        "cpu_features": sorted(f for f in interesting if f in host_features()),
        "numba": numba.__version__,
        "target": name,
        "target_features": None if tf is None else sorted(f for f in interesting if f in tf),
        "numba_cpu_features": features,
        "caps": {CAP_ENV: cap(), "LEAKYOPS_SOFT_HALF": os.environ.get("LEAKYOPS_SOFT_HALF") or None},
        "threads": _threads.get_num_threads(),
        "threading_layer": _threads.layer_name(),
        "paths": kernel_paths(),
    }
