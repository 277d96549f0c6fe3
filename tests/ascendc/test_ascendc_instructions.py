"""Adds, Muls, Maxs, Mins, Add, Sub, Mul, Duplicate and Cast: the vendor's documented examples in
all three forms, masks and strides against a loop reference, the overlap rules, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from _ascendc_testutil import SENTINEL, lane_walk, same_bits

from leakyops import _vector_math as vm
from leakyops import ascendc as ac

UINT64_MAX = (1 << 64) - 1
DTYPES = [pytest.param(ac.half, id="half"), pytest.param(ac.float32, id="float")]
FORMS = ["count", "continuous", "bitwise"]
SCALAR_OPS = {"Adds": (ac.Adds, vm.add), "Muls": (ac.Muls, vm.mul), "Maxs": (ac.Maxs, vm.maximum),
              "Mins": (ac.Mins, vm.minimum)}
BINARY_OPS = {"Add": (ac.Add, vm.add), "Sub": (ac.Sub, vm.sub), "Mul": (ac.Mul, vm.mul)}


def _alloc(dtype, *sizes, fill=None):
    alloc = ac.LocalMemAllocator()
    ts = [alloc.Alloc(dtype, n) for n in sizes]
    if fill is not None:
        ts[0].numpy()[:] = fill
    return ts


def _form_args(form, dtype, n=512, binary=False):
    """The documents' three calls over n elements: count n; mask = lanes, n/lanes repeats;
    mask = [UINT64_MAX, UINT64_MAX] (for float: [UINT64_MAX, 0])."""
    lanes = 256 // dtype.itemsize
    params = (1, 1, 1, 8, 8, 8) if binary else (1, 1, 8, 8)
    if form == "count":
        return (n,)
    if form == "continuous":
        return (lanes, n // lanes, params)
    return ([UINT64_MAX, UINT64_MAX if lanes == 128 else 0], n // lanes, params)


# -------------------------------------------------------------------- documented examples

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name, expect", [
    ("Adds", lambda x: x + 2),                       # [1 2 3 ... 512] -> [3 4 5 ... 514]
    ("Muls", lambda x: x * 2),                       # -> [2 4 6 ... 1024]
    ("Maxs", lambda x: np.maximum(x, 2)),            # -> [2 2 3 ... 512]
    ("Mins", lambda x: np.minimum(x, 2)),            # -> [1 2 2 ... 2]
])
def test_doc_examples_scalar_ops(core, dtype, form, name, expect):
    # Adds.md / Muls.md / Maxs.md / Mins.md: scalar 2 on [1, 2, ..., 512] (the documents use
    # int16_t; the values are exact in half and float)
    dst, src = _alloc(dtype, 512, 512)
    x = np.arange(1, 513).astype(dtype)
    src.numpy()[:] = x
    SCALAR_OPS[name][0](dst, src, dtype.type(2), *_form_args(form, dtype))
    assert same_bits(dst.numpy(), expect(x.astype(np.float64)).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name, second, expect", [
    ("Add", lambda: np.arange(513, 1025), lambda a, b: a + b),    # -> [514 516 ... 1536]
    ("Sub", lambda: np.arange(513, 1025), lambda a, b: a - b),    # -> [-512 ... -512]
    ("Mul", lambda: np.full(512, 2), lambda a, b: a * b),         # -> [2 4 6 ... 1024]
])
def test_doc_examples_binary_ops(core, dtype, form, name, second, expect):
    dst, s0, s1 = _alloc(dtype, 512, 512, 512)
    a, b = np.arange(1, 513).astype(dtype), second().astype(dtype)
    s0.numpy()[:], s1.numpy()[:] = a, b
    BINARY_OPS[name][0](dst, s0, s1, *_form_args(form, dtype, binary=True))
    assert same_bits(dst.numpy(), expect(a.astype(np.float64), b.astype(np.float64)).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_doc_example_duplicate(core, dtype):
    # Duplicate.md: half scalar 18.0; mask 128, repeatTime 2, dstBlockStride 1,
    # dstRepeatStride 8; the bitwise mask; and the count form over 256 elements
    lanes = 256 // dtype.itemsize
    n = 2 * lanes
    for args in ((lanes, 2, 1, 8), ([UINT64_MAX, UINT64_MAX if lanes == 128 else 0], 2, 1, 8),
                 (n,)):
        (dst,) = _alloc(dtype, n + 16, fill=SENTINEL[np.dtype(dtype)])
        ac.Duplicate(dst, dtype.type(18.0), *args)
        assert np.all(dst.numpy()[:n] == 18) and np.all(dst.numpy()[n:] == SENTINEL[dtype])
    # block stride 2: every other DataBlock of each repeat
    (dst,) = _alloc(dtype, 2 * lanes, fill=0)
    ac.Duplicate(dst, dtype.type(-1), lanes, 1, 2, 8)
    want = np.zeros(2 * lanes, dtype)
    want[lane_walk(lanes, dtype.itemsize, 2, 8)] = -1
    assert same_bits(dst.numpy(), want)


def test_doc_example_cast_half_to_int32(core):
    # Cast.md: half -> int32, CAST_CEIL; continuous mask 64, repeatTime 8, {1, 1, 8, 4}; count
    # 512; "[1.4, 1.5, 1.6, 2.4, 2.5, 2.6, ...] -> [2, 2, 2, 3, 3, 3, ...]"
    alloc = ac.LocalMemAllocator()
    src = alloc.Alloc(ac.half, 512)
    x = np.resize(np.array([1.4, 1.5, 1.6, 2.4, 2.5, 2.6], np.float16), 512)
    src.numpy()[:] = x
    for args in ((64, 8, (1, 1, 8, 4)), (512,)):
        dst = alloc.Alloc(ac.int32_t, 512)
        ac.Cast(dst, src, ac.RoundMode.CAST_CEIL, *args)
        assert dst.numpy()[:6].tolist() == [2, 2, 2, 3, 3, 3]
        assert np.array_equal(dst.numpy(), np.ceil(x.astype(np.float64)).astype(np.int32))
    want = {ac.RoundMode.CAST_NONE: [1, 2, 2, 2, 2, 3], ac.RoundMode.CAST_RINT: [1, 2, 2, 2, 2, 3],
            ac.RoundMode.CAST_FLOOR: [1, 1, 1, 2, 2, 2], ac.RoundMode.CAST_ROUND: [1, 2, 2, 2, 3, 3],
            ac.RoundMode.CAST_TRUNC: [1, 1, 1, 2, 2, 2]}
    for mode, values in want.items():
        dst = alloc.Alloc(ac.int32_t, 512)
        if mode is ac.RoundMode.CAST_NONE:       # half -> int32 lists no CAST_NONE on A2/A3
            with pytest.raises(ac.ConstraintError, match="does not support CAST_NONE"):
                ac.Cast(dst, src, mode, 512)
            continue
        ac.Cast(dst, src, mode, 512)
        assert dst.numpy()[:6].tolist() == values, mode


def test_doc_example_cast_mask_32_leaves_the_rest(core):
    # Cast.md "更多样例": mask 32 -> only the first 32 results of each repeat are written
    alloc = ac.LocalMemAllocator()
    src, dst = alloc.Alloc(ac.half, 512), alloc.Alloc(ac.int32_t, 512)
    x = (np.random.default_rng(3).random(512) * 100).astype(np.float16)
    src.numpy()[:], dst.numpy()[:] = x, -7
    ac.Cast(dst, src, ac.RoundMode.CAST_CEIL, 32, 8, (1, 1, 8, 4))
    y = dst.numpy().reshape(8, 64)
    assert np.array_equal(y[:, :32], np.ceil(x.reshape(8, 64)[:, :32].astype(np.float64)))
    assert np.all(y[:, 32:] == -7)


def test_doc_example_cast_bitwise_mask_high_word(core):
    # Cast.md's bitwise example passes mask[2] = {0, UINT64_MAX} for half -> int32; the same
    # page says a Cast's mask counts lanes of the wider type (64 here, all in mask[0]), so
    # mask[1] cannot select anything: the emulation names the rule instead of doing nothing
    alloc = ac.LocalMemAllocator()
    src, dst = alloc.Alloc(ac.half, 512), alloc.Alloc(ac.int32_t, 512)
    with pytest.raises(ac.ConstraintError, match=r"mask\[1\] must be 0"):
        ac.Cast(dst, src, ac.RoundMode.CAST_CEIL, [0, UINT64_MAX], 8, (1, 1, 8, 4))
    src.numpy()[:] = 1.5
    ac.Cast(dst, src, ac.RoundMode.CAST_CEIL, [UINT64_MAX, 0], 8, (1, 1, 8, 4))
    assert np.all(dst.numpy() == 2)


_HALF_FLOAT_CASTS = [(ac.float32, ac.half, m) for m in ac.RoundMode if m is not ac.RoundMode.CAST_HYBRID] \
    + [(ac.float32, ac.float32, m) for m in (ac.RoundMode.CAST_RINT, ac.RoundMode.CAST_FLOOR,
                                             ac.RoundMode.CAST_CEIL, ac.RoundMode.CAST_ROUND,
                                             ac.RoundMode.CAST_TRUNC)] \
    + [(ac.half, ac.float32, ac.RoundMode.CAST_NONE)]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("src_t, dst_t, mode", _HALF_FLOAT_CASTS,
                         ids=lambda v: getattr(v, "name", None) or np.dtype(v).name)
def test_cast_half_and_float_every_mode_every_form(core, src_t, dst_t, mode, form):
    # 512 elements: count 512; 64 lanes x 8 repeats with each operand's contiguous strides
    n = 512
    alloc = ac.LocalMemAllocator()
    src, dst = alloc.Alloc(src_t, n), alloc.Alloc(dst_t, n)
    rng = np.random.default_rng(int(mode) * 10 + len(form))
    x = (rng.standard_normal(n) * 50).astype(src_t)
    x[:6] = [0.5 + 2**-12, -(0.5 + 2**-12), 2.5, -2.5, 1e-7, -0.0]   # ties, tiny, signed zero
    src.numpy()[:] = x
    blocks = lambda t: 64 * np.dtype(t).itemsize // 32  # noqa: E731 -- blocks per repeat
    params = (1, 1, blocks(dst_t), blocks(src_t))
    args = {"count": (n,), "continuous": (64, 8, params),
            "bitwise": ([UINT64_MAX, 0], 8, params)}[form]
    ac.Cast(dst, src, mode, *args)
    name = {ac.RoundMode.CAST_NONE: "none", ac.RoundMode.CAST_RINT: "rint",
            ac.RoundMode.CAST_FLOOR: "floor", ac.RoundMode.CAST_CEIL: "ceil",
            ac.RoundMode.CAST_ROUND: "round", ac.RoundMode.CAST_TRUNC: "trunc",
            ac.RoundMode.CAST_ODD: "odd"}[mode]
    assert same_bits(dst.numpy(), vm.cast(x, dst_t, name))


# ------------------------------------------------------------------ masks and strides

def _reference(kernel, dst_before, srcs, walks, dst_walk):
    out = dst_before.copy()
    for k, d in enumerate(dst_walk):
        args = [np.array([s[w[k]]]) for s, w in zip(srcs, walks)]
        out[d] = kernel(*args)[0]
    return out


STRIDES = [(1, 1, 8, 8, 3), (2, 1, 16, 8, 2), (1, 2, 8, 16, 2), (1, 1, 9, 11, 3),
           (3, 2, 24, 17, 2), (1, 0, 8, 8, 2), (2, 2, 0, 3, 2)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(SCALAR_OPS))
@pytest.mark.parametrize("case", STRIDES, ids=lambda c: "blk{}-{}_rep{}-{}_x{}".format(*c))
def test_scalar_ops_strides_and_masks(core, dtype, name, case):
    dblk, sblk, drep, srep, repeats = case
    lanes = 256 // dtype.itemsize
    rng = np.random.default_rng(abs(hash((name, case))) % 2**32)
    bits = [int(b) for b in rng.integers(0, 2, lanes)]
    sel = [j for j in range(lanes) if bits[j]]
    word = sum(b << j for j, b in enumerate(bits))
    e = 32 // dtype.itemsize
    span = lambda blk, rep: (repeats - 1) * rep * e + 7 * blk * e + e   # noqa: E731
    src, dst = _alloc(dtype, span(sblk, srep), span(dblk, drep))
    x = (rng.standard_normal(src.GetSize()) * 10).astype(dtype)
    src.numpy()[:], dst.numpy()[:] = x, SENTINEL[np.dtype(dtype)]
    before = dst.numpy().copy()
    api, fn = SCALAR_OPS[name]
    api(dst, src, 0.75, [word & UINT64_MAX, word >> 64], repeats, (dblk, sblk, drep, srep))
    s = dtype.type(0.75)
    want = _reference(lambda v: fn(v, s), before, [x],
                      [lane_walk(lanes, dtype.itemsize, sblk, srep, repeats, sel)],
                      lane_walk(lanes, dtype.itemsize, dblk, drep, repeats, sel))
    assert same_bits(dst.numpy(), want)


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from([ac.half, ac.float32]), name=st.sampled_from(list(BINARY_OPS)),
       repeats=st.integers(0, 5), blks=st.tuples(*[st.integers(1, 3)] * 3),
       reps=st.tuples(*[st.integers(0, 20)] * 3), continuous=st.integers(0, 140),
       counter=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_binary_ops_strides_masks_counter_property(dtype, name, repeats, blks, reps, continuous,
                                                   counter, seed):
    lanes = 256 // dtype.itemsize
    e = 32 // dtype.itemsize
    n = continuous if counter else None
    r_used = -(-continuous // lanes) if counter else repeats
    span = lambda b, r: max(r_used - 1, 0) * r * e + 7 * b * e + e   # noqa: E731
    with ac.AICore():
        d, s0, s1 = _alloc(dtype, span(blks[0], reps[0]), span(blks[1], reps[1]),
                           span(blks[2], reps[2]))
        rng = np.random.default_rng(seed)
        a = (rng.standard_normal(s0.GetSize()) * 4).astype(dtype)
        b = (rng.standard_normal(s1.GetSize()) * 4).astype(dtype)
        s0.numpy()[:], s1.numpy()[:], d.numpy()[:] = a, b, SENTINEL[np.dtype(dtype)]
        before = d.numpy().copy()
        api, fn = BINARY_OPS[name]
        params = ac.BinaryRepeatParams(*blks, *reps)
        if counter:
            ac.SetMaskCount()
            api(d, s0, s1, [continuous, 0], 1, params)
            walk = lambda b_, r_: lane_walk(lanes, dtype.itemsize, b_, r_, counter=n)  # noqa
        else:
            api(d, s0, s1, continuous, repeats, params)
            sel = range(min(continuous, lanes))
            walk = lambda b_, r_: lane_walk(lanes, dtype.itemsize, b_, r_, repeats, sel)  # noqa
        want = _reference(fn, before, [a, b], [walk(blks[1], reps[1]), walk(blks[2], reps[2])],
                          walk(blks[0], reps[0]))
        assert same_bits(d.numpy(), want)


@pytest.mark.parametrize("pair, params", [((ac.half, ac.float32), (1, 1, 8, 4)),
                                          ((ac.float32, ac.half), (1, 1, 4, 8)),
                                          ((ac.float32, ac.half), (2, 1, 8, 8)),
                                          ((ac.half, ac.float32), (1, 2, 9, 8))])
def test_cast_strides_use_each_operands_own_blocks(core, pair, params):
    src_t, dst_t = pair
    dblk, sblk, drep, srep = params
    repeats, lanes = 3, 64
    span = lambda t, blk, rep: (repeats - 1) * rep * (32 // t.itemsize) + 8 * 32 * blk  # noqa
    (src,), (dst,) = _alloc(src_t, span(src_t, sblk, srep)), _alloc(dst_t, span(dst_t, dblk, drep))
    x = (np.random.default_rng(5).standard_normal(src.GetSize()) * 1000).astype(src_t)
    src.numpy()[:], dst.numpy()[:] = x, 0
    sel = [j for j in range(lanes) if j % 3]
    word = sum(1 << j for j in sel)
    mode = ac.RoundMode.CAST_NONE
    ac.Cast(dst, src, mode, [word, 0], repeats, params)
    want = _reference(lambda v: vm.cast(v, dst_t, "none"), np.zeros(dst.GetSize(), dst_t), [x],
                      [lane_walk(lanes, src_t.itemsize, sblk, srep, repeats, sel)],
                      lane_walk(lanes, dst_t.itemsize, dblk, drep, repeats, sel))
    assert same_bits(dst.numpy(), want)


# ------------------------------------------------------------------------------ overlap

@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_accumulation_into_src1_is_allowed(core, dtype):
    # 通用说明和约束.md: for Add/Sub/Mul on half/float, dst may be a later repeat's src1 when
    # src1RepStride or dstRepStride is 0 -- a running sum over the repeats
    lanes = 256 // dtype.itemsize
    acc, rows = _alloc(dtype, lanes, 4 * lanes)
    acc.numpy()[:] = 0
    x = np.arange(4 * lanes).astype(dtype) % 7
    rows.numpy()[:] = x
    ac.Add(acc, rows, acc, lanes, 4, (1, 1, 1, 0, 8, 0))
    want = np.zeros(lanes, dtype)
    for r in range(4):
        want = vm.add(x[r * lanes:(r + 1) * lanes], want)
    assert same_bits(acc.numpy(), want)
    # the same pattern through src0 is not among the documented exceptions
    with pytest.raises(ac.ConstraintError, match="overlap partially"):
        ac.Add(acc, acc, rows, lanes, 4, (1, 1, 1, 0, 0, 8))


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_binary_and_scalar_ops(core, dtype):
    lanes = 256 // dtype.itemsize
    a, b = _alloc(dtype, 4 * lanes, 4 * lanes)
    x = np.linspace(-3, 3, 4 * lanes).astype(dtype)
    a.numpy()[:], b.numpy()[:] = x, x
    ac.Mul(a, a, b, 4 * lanes)                          # dst == src0
    ac.Adds(b, b, 1.0, lanes, 4, (1, 1, 8, 8))          # dst == src, mask form
    assert same_bits(a.numpy(), vm.mul(x, x))
    assert same_bits(b.numpy(), vm.add(x, dtype.type(1)))


def test_cast_overlap(core):
    # float -> half in place (the narrower result written over its own source) is fine;
    # half -> float over its own source is refused (the vendor warns it gives wrong results)
    (t,) = _alloc(ac.float32, 256)
    x = np.linspace(-100, 100, 256).astype(np.float32)
    t.numpy()[:] = x
    h = t.ReinterpretCast(ac.half)
    ac.Cast(h, t, ac.RoundMode.CAST_RINT, 256)
    assert same_bits(h.numpy()[:256], x.astype(np.float16))
    with pytest.raises(ac.ConstraintError, match="wider type"):
        ac.Cast(t, h, ac.RoundMode.CAST_NONE, 128)


# ------------------------------------------------------------------------------ errors

def test_instruction_type_rules(core):
    alloc = ac.LocalMemAllocator()
    i32 = [alloc.Alloc(ac.int32_t, 64) for _ in range(3)]
    h = [alloc.Alloc(ac.half, 64) for _ in range(3)]
    f = alloc.Alloc(ac.float32, 64)
    with pytest.raises(ac.AscendCTypeError, match="Add supports half and float"):
        ac.Add(*i32, 64)
    with pytest.raises(ac.AscendCTypeError, match="src1 is float but dst is half"):
        ac.Sub(h[0], h[1], f, 64)
    with pytest.raises(ac.AscendCTypeError, match="Maxs supports half and float"):
        ac.Maxs(i32[0], i32[1], 1, 64)
    with pytest.raises(ac.AscendCTypeError, match="not an emulated conversion"):
        ac.Cast(h[0], i32[0], ac.RoundMode.CAST_NONE, 64)
    with pytest.raises(ac.ConstraintError, match="does not support CAST_RINT"):
        ac.Cast(f, h[0], ac.RoundMode.CAST_RINT, 64)      # half -> float is exact: CAST_NONE
    with pytest.raises(ac.ConstraintError, match="does not support CAST_HYBRID"):
        ac.Cast(h[0], f, ac.RoundMode.CAST_HYBRID, 64)
    with pytest.raises(ac.AscendCTypeError, match="roundMode must be a RoundMode"):
        ac.Cast(h[0], f, "CAST_RINT", 64)
    with pytest.raises(ac.AscendCTypeError, match="no isSetMask"):
        ac.Cast(h[0], f, ac.RoundMode.CAST_RINT, 64, isSetMask=False)
    with pytest.raises(ac.AscendCTypeError, match="no isSetMask"):
        ac.Duplicate(h[0], 1.0, 64, isSetMask=False)
    with pytest.raises(ac.AscendCTypeError, match="Ascend 950 only"):
        ac.Duplicate(h[0], h[1], 64)
    with pytest.raises(ac.AscendCTypeError, match="must be BinaryRepeatParams"):
        ac.Add(*h, 128, 1, ac.UnaryRepeatParams())
    with pytest.raises(ac.AscendCTypeError, match="must be UnaryRepeatParams"):
        ac.Adds(h[0], h[1], 1.0, 128, 1, (1, 1, 1, 8, 8, 8))
    with pytest.raises(TypeError, match="Add"):
        ac.Add(*h, 128, 1)
    with pytest.raises(ac.ConstraintError, match="src1RepStride must be <= 255"):
        ac.Mul(*h, 128, 1, (1, 1, 1, 8, 8, 256))


@pytest.mark.parametrize("name", ["Adds", "Add", "Duplicate", "Cast"])
def test_rejected_calls_write_nothing(core, name):
    alloc = ac.LocalMemAllocator()
    d, s0, s1 = (alloc.Alloc(ac.float32, 64) for _ in range(3))
    d.numpy()[:] = 9
    with pytest.raises(ac.ConstraintError, match="past the end"):
        if name == "Adds":
            ac.Adds(d, s0, 1.0, 65)
        elif name == "Add":
            ac.Add(d, s0, s1, 65)
        elif name == "Duplicate":
            ac.Duplicate(d, 1.0, 65)
        else:
            ac.Cast(d, s0, ac.RoundMode.CAST_RINT, 65)
    assert np.all(d.numpy() == 9)


# ------------------------------------------------------------------------ hostile arguments

_JUNK = st.one_of(st.none(), st.integers(-3, 300), st.integers(2**63, 2**65), st.floats(),
                  st.text(max_size=3), st.lists(st.integers(-1, 2**64), max_size=3),
                  st.just({"a": 1}), st.just(np.array(3)), st.just(np.zeros((2, 2))))


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_instruction_refuses_junk_cleanly(data):
    """Any mix of good and junk arguments either runs or raises an AscendCError (or TypeError
    for a wrong argument count) before touching the Unified Buffer or the mask register."""
    name = data.draw(st.sampled_from(["LeakyRelu", "Adds", "Muls", "Maxs", "Mins", "Add", "Sub",
                                      "Mul", "Duplicate", "Cast"]))
    with ac.AICore(ub_size=8192) as core:
        alloc = ac.LocalMemAllocator()
        dt = data.draw(st.sampled_from([ac.half, ac.float32]))
        t = [alloc.Alloc(dt, 512) for _ in range(3)]
        if data.draw(st.booleans()):
            ac.SetMaskCount()
        good_mask = data.draw(st.sampled_from([64, [3, 0], [UINT64_MAX, 0]]))
        pick = lambda good: data.draw(st.one_of(st.just(good), _JUNK))  # noqa: E731
        form = data.draw(st.sampled_from(["count", "mask", "wrong"]))
        if form == "count":
            tail = (pick(64),)
        elif form == "mask":
            params = (1, 1, 1, 8, 8, 8) if name in ("Add", "Sub", "Mul") else (1, 1, 8, 8)
            tail = (pick(good_mask), pick(2), pick(params))
            if name == "Duplicate":
                tail = (pick(good_mask), pick(2), pick(1), pick(8))
        else:
            tail = tuple(data.draw(st.lists(_JUNK, max_size=5)))
        kw = {"isSetMask": data.draw(st.one_of(st.booleans(), _JUNK))} \
            if data.draw(st.booleans()) else {}
        if name in ("Add", "Sub", "Mul"):
            call = (getattr(ac, name), t[0], pick(t[1]), pick(t[2]))
        elif name == "Duplicate":
            call = (ac.Duplicate, t[0], pick(1.5))
        elif name == "Cast":
            other = alloc.Alloc(ac.float32 if dt == ac.half else ac.half, 512)
            call = (ac.Cast, other, pick(t[1]), pick(ac.RoundMode.CAST_NONE if dt == ac.half
                                                     else ac.RoundMode.CAST_RINT))
        else:
            call = (getattr(ac, name), t[0], pick(t[1]), pick(0.25))
        ub_before = core.ub.data.copy()
        reg_before = (core.mask_mode, core.mask_high, core.mask_low)
        try:
            call[0](*call[1:], *tail, **kw)
        except (ac.AscendCError, TypeError) as exc:
            assert isinstance(exc, ac.AscendCError) or "argument" in str(exc) or \
                "or " in str(exc), exc
            assert np.array_equal(core.ub.data, ub_before)
            assert (core.mask_mode, core.mask_high, core.mask_low) == reg_before
