"""prelu's and prelu_backward's contiguous paths, whose shapes, strides and alignment are
tested in compiled code (``_kernels.prelu_fwd_plain``, ``_kernels.prelu_bwd_plain``): each runs
exactly for the operands the contiguous kernels take, gives the general path's bits there,
and leaves every other operand, untouched, to the general path (the same results, the same
errors)."""

from __future__ import annotations

import numpy as np
import pytest

import leakyops
from leakyops import _core, _kernels
from refs import DTYPE_IDS, DTYPES, bits, random_values

dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
_MISSING = (_kernels.MISSING_LAST, _kernels.MISSING_ONE, _kernels.MISSING_ROWS,
            _kernels.NEEDS_THREADS)


def _spy_plans(monkeypatch, maker: str, plans: str, seen: list):
    """Make ``_core``'s plans (``plans``, built by ``maker``) afresh, their compiled entries
    recording what each call returned in ``seen``."""
    real = getattr(_core, maker)

    def counting(dt, nd, rule):
        plan = real(dt, nd, rule)
        ep = plan[0]

        def spy(*args):
            r = ep(*args)
            if r not in _MISSING:  # (a part function made on demand, then the call again:
                seen.append(r)  # one call here)
            return r
        plan = [spy, *plan[1:]]
        getattr(_core, plans)[dt, nd, rule] = plan
        return plan
    monkeypatch.setattr(_core, maker, counting)
    monkeypatch.setattr(_core, plans, {})


@pytest.fixture
def plain_runs(monkeypatch):
    """The calls prelu_backward's compiled entry made, with what each returned (1: it ran; 0:
    it refused the operands, nothing written)."""
    seen = []
    _spy_plans(monkeypatch, "_prelu_bwd_plan", "_PRELU_BWD_PLAN", seen)
    return seen


@pytest.fixture
def fwd_runs(monkeypatch):
    """The same for prelu's compiled entry."""
    seen = []
    _spy_plans(monkeypatch, "_prelu_plan", "_PRELU_PLAN", seen)
    return seen


def general(g, x, w, axis):
    """The general path's results (its own checks, its own kernels)."""
    return _core._prelu_backward(g, x, w, axis, None, ">")


def assert_bits(got, want):
    """prelu_backward's results the same: ``grad_input`` bit for bit; ``grad_weight`` bit for
    bit where it is not NaN, and NaN in the same channels. A channel's sum of a NaN and another
    NaN passes on either, as the machine code orders the addition (the README: "may pick the
    other of two NaN operands"): the same kernel compiled in this process gave 0x7FC0 and
    loaded from the disk cache 0xFFC0 (bfloat16, (1, 1, 300), the old code as the new), so a
    cold run whose two paths came one from each failed here."""
    (gi, gw), (want_gi, want_gw) = got, want
    for a, b in ((gi, want_gi), (gw, want_gw)):
        assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(bits(gi), bits(want_gi))
    nan = np.isnan(gw.astype(np.float64))
    assert np.array_equal(nan, np.isnan(want_gw.astype(np.float64)))
    assert np.array_equal(bits(gw)[~nan], bits(want_gw)[~nan])


def operands(rng, dtype, shape, c):
    return (random_values(rng, shape, dtype), random_values(rng, shape, dtype),
            random_values(rng, (c,), dtype))


LAYOUTS = [((37,), 0, 37), ((5, 6), 1, 6), ((5, 6), -1, 6), ((4, 3, 17), 1, 3),
           ((2, 3, 4, 5), 1, 3), ((2, 3, 4, 5), -1, 5), ((2, 3, 4, 5), 0, 2), ((3, 7, 1), 1, 7),
           ((2, 3, 4, 5), 1, 1), ((6,), 0, 1), ((), 0, 1), ((1, 1, 300), 1, 1)]


@dtypes
@pytest.mark.parametrize("shape, axis, c", LAYOUTS, ids=[f"{s}-{a}-{c}" for s, a, c in LAYOUTS])
@pytest.mark.parametrize("given", [False, True], ids=["new", "out="])
def test_every_contiguous_layout_runs_compiled_with_the_general_paths_bits(
        dtype, shape, axis, c, given, plain_runs):
    g, x, w = operands(np.random.default_rng(len(shape) * 31 + c), dtype, shape, c)
    out = (np.empty(shape, dtype), np.empty(c, dtype)) if given else None
    got = leakyops.prelu_backward(g, x, w, axis=axis, out=out)
    # (float64 specials can make a grad_weight element inf or NaN: the entry ran, and says so)
    assert plain_runs == [1] or (dtype == np.float64 and plain_runs == [_kernels.NOT_FINITE])
    if given:
        assert got[0] is out[0] and got[1] is out[1]
    assert_bits(got, general(g, x, w, axis))


def _unaligned(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` whose data starts one byte past an aligned address (not aligned)."""
    raw = np.empty(a.nbytes + a.itemsize, np.uint8)
    view = raw[1:1 + a.nbytes].view(a.dtype).reshape(a.shape)
    view[...] = a
    assert not view.flags.aligned
    return view


def _strided(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` every other element of a larger array's last axis (not contiguous)."""
    big = np.empty((*a.shape[:-1], 2 * a.shape[-1]), a.dtype)
    view = big[..., ::2]
    view[...] = a
    return view


# (what is altered, how): each makes the operands unfit for the contiguous kernels, in a way
# only the compiled half of the test sees (None: the Python half refuses it first)
UNFIT = {
    "x strided": ("x", _strided, 0), "g strided": ("g", _strided, 0),
    "w strided": ("w", _strided, 0), "x unaligned": ("x", _unaligned, 0),
    "g unaligned": ("g", _unaligned, 0), "w unaligned": ("w", _unaligned, 0),
    "grad_input strided": ("gi", _strided, 0), "grad_input unaligned": ("gi", _unaligned, 0),
    "grad_weight strided": ("gw", _strided, 0), "grad_weight unaligned": ("gw", _unaligned, 0),
    "g transposed": ("g", lambda a: np.ascontiguousarray(a.T).T, 0),
    "grad_input is x": ("gi", None, 0), "g reversed": ("g", lambda a: a[..., ::-1], 0),
    "g a subclass": ("g", lambda a: a.view(_Sub), None),
}


class _Sub(np.ndarray):
    """An ndarray subclass: the Python half of the test refuses it (its type is not ndarray)."""


def finite_operands(rng, dtype, shape, c):
    """Finite operands (which NaN a NaN sum gives is left open by docs/semantics.md §2, and
    the routing is what is tested here)."""
    def one(s):
        return (rng.standard_normal(s) * 4).astype(dtype)
    return one(shape), one(shape), one((c,))


@dtypes
@pytest.mark.parametrize("case", list(UNFIT))
def test_unfit_operands_go_the_general_way_with_its_bits(dtype, case, plain_runs):
    rng = np.random.default_rng(7)
    g, x, w = finite_operands(rng, dtype, (3, 4, 40), 4)
    which, alter, refused = UNFIT[case]
    gi, gw = np.empty_like(x), np.empty_like(w)
    ops = {"g": g, "x": x, "w": w, "gi": gi, "gw": gw}
    ops[which] = x if alter is None else alter(ops[which])
    want = general(ops["g"], ops["x"], ops["w"], 1)  # (the same views: the same kernels)
    got = leakyops.prelu_backward(ops["g"], ops["x"], ops["w"], axis=1,
                                  out=(ops["gi"], ops["gw"]))
    assert plain_runs == ([] if refused is None else [refused])
    assert_bits(got, want)


@pytest.mark.parametrize("case", ["grad_input shape", "grad_weight shape", "g shape",
                                  "weight length", "axis", "g's dtype"])
def test_shapes_the_kernels_refuse_get_the_general_paths_errors(case, plain_runs):
    rng = np.random.default_rng(3)
    g, x, w = operands(rng, np.dtype(np.float32), (3, 4, 40), 4)
    gi, gw, axis = np.full_like(x, 7), np.full_like(w, 7), 1
    if case == "grad_input shape":
        gi = np.full((3, 40, 4), 7, x.dtype)
    elif case == "grad_weight shape":
        gw = np.full(5, 7, x.dtype)
    elif case == "g shape":
        g = g.reshape(3, 40, 4)
    elif case == "weight length":
        w = np.full(3, 0.25, x.dtype)
    elif case == "axis":
        axis = 2
    else:
        g = g.astype(np.float64)
    before = (gi.copy(), gw.copy())
    with pytest.raises((ValueError, TypeError)) as direct:
        _core._named_call("prelu_backward", _core._prelu_backward, g, x, w, axis, (gi, gw), ">")
    with pytest.raises(direct.type) as public:
        leakyops.prelu_backward(g, x, w, axis=axis, out=(gi, gw))
    assert str(public.value) == str(direct.value)
    # (the compiled half refused them, with nothing written; a dtype, the Python half)
    assert plain_runs == ([] if case == "g's dtype" else [0])
    assert np.array_equal(gi, before[0]) and np.array_equal(gw, before[1])


@pytest.mark.parametrize("which", ["x", "g", "weight"])
def test_operands_not_ndarrays_go_the_general_way(which, plain_runs, fwd_runs):
    values = {"g": 0.5, "x": -2.0, "weight": 0.25}  # (``which`` as a list, the others arrays)
    ops = {k: [np.float32(v)] if k == which else np.array([v], np.float32)
           for k, v in values.items()}
    gi, gw = leakyops.prelu_backward(ops["g"], ops["x"], ops["weight"], axis=0)
    assert gi.tolist() == [0.125] and gw.tolist() == [-1.0]
    if which != "g":
        assert leakyops.prelu(ops["x"], ops["weight"], axis=0).tolist() == [-0.5]
    assert plain_runs == [] and fwd_runs == []


def test_a_read_only_output_is_refused_before_the_entry(plain_runs):
    g, x, w = operands(np.random.default_rng(4), np.dtype(np.float32), (3, 4, 40), 4)
    gi = np.zeros_like(x)
    gi.flags.writeable = False
    with pytest.raises(ValueError):
        leakyops.prelu_backward(g, x, w, out=(gi, np.empty_like(w)))
    assert plain_runs == [] and not gi.any()


@pytest.mark.parametrize("axis", [2 ** 70, -2 ** 70, 65, True, np.int64(1)])
def test_an_axis_beyond_an_int64_or_not_an_int_goes_the_general_way(axis, plain_runs):
    g, x, w = operands(np.random.default_rng(5), np.dtype(np.float32), (3, 4, 40), 4)
    if type(axis) is np.int64:  # (taken by the general path, as 1)
        assert_bits(leakyops.prelu_backward(g, x, w, axis=axis), general(g, x, w, 1))
    else:
        with pytest.raises((ValueError, TypeError, IndexError)):
            leakyops.prelu_backward(g, x, w, axis=axis)
    assert plain_runs == []


def test_a_fresh_call_of_each_dimension_compiles_one_entry_per_dtype_and_rank(plain_runs):
    rng = np.random.default_rng(6)
    for shape in ((8,), (2, 8), (2, 8, 3), (2, 8, 3, 1)):
        g, x, w = operands(rng, np.dtype(np.float32), shape, 8 if len(shape) == 1 else 8)
        axis = 0 if len(shape) == 1 else 1
        assert_bits(leakyops.prelu_backward(g, x, w, axis=axis), general(g, x, w, axis))
    assert plain_runs == [1, 1, 1, 1]
    assert sorted(k[1] for k in _core._PRELU_BWD_PLAN) == [1, 2, 3, 4]


# ---- prelu ---------------------------------------------------------------------------------

FWD_LAYOUTS = LAYOUTS + [((4, 64, 10), 1, 64), ((4, 64, 5), -2, 64), ((2, 3, 300, 1), 1, 3),
                         ((3, 40), 0, 3)]


def general_fwd(x, w, axis, compare=">"):
    return _core._prelu(x, w, axis, None, compare, False)


#: ``>=`` on the 3-D layouts only: an entry is compiled per dtype, rank and comparison (each
#: costs a fresh process about a second), and the comparison is a flag of the kernels the
#: 3-D layouts reach already.
FWD_CASES = [(*layout, compare) for layout in FWD_LAYOUTS for compare in (">", ">=")
             if compare == ">" or len(layout[0]) == 3]


@dtypes
@pytest.mark.parametrize("shape, axis, c, compare", FWD_CASES,
                         ids=[f"{s}-{a}-{c}-{cmp}" for s, a, c, cmp in FWD_CASES])
def test_prelu_runs_compiled_on_every_contiguous_layout_with_the_general_paths_bits(
        dtype, shape, axis, c, compare, fwd_runs):
    """Rows long and short (the slopes laid out per element), channels last, one shared
    slope (leaky_relu's rows), special values, both comparisons."""
    rng = np.random.default_rng(len(shape) * 17 + c)
    x, w = random_values(rng, shape, dtype), random_values(rng, (c,), dtype)
    out = np.empty(shape, dtype)
    assert _core.prelu_impl(x, w, axis, out, compare=compare) is out
    assert fwd_runs == [1]
    assert np.array_equal(bits(out), bits(general_fwd(x, w, axis, compare)))


FWD_UNFIT = {"x strided": ("x", _strided), "x unaligned": ("x", _unaligned),
             "w strided": ("w", _strided), "w unaligned": ("w", _unaligned),
             "out strided": ("out", _strided), "out unaligned": ("out", _unaligned),
             "out is x": ("out", None), "x reversed": ("x", lambda a: a[..., ::-1])}


@dtypes
@pytest.mark.parametrize("c", [4, 1], ids=["per channel", "one slope"])
@pytest.mark.parametrize("case", list(FWD_UNFIT))
def test_prelu_unfit_operands_go_the_general_way_with_its_bits(dtype, c, case, fwd_runs):
    rng = np.random.default_rng(8)
    x, _, w = finite_operands(rng, dtype, (3, 4, 40), c)
    ops = {"x": x, "w": w, "out": np.empty_like(x)}
    which, alter = FWD_UNFIT[case]
    ops[which] = ops["x"] if alter is None else alter(ops[which])
    want = general_fwd(ops["x"], ops["w"], 1)
    got = leakyops.prelu(ops["x"], ops["w"], axis=1, out=ops["out"])
    assert got is ops["out"]
    # (the compiled half refused them, nothing written; but a one-element weight is
    # contiguous whatever its stride, as NumPy says)
    assert fwd_runs == ([1] if case == "w strided" and c == 1 else [0])
    assert np.array_equal(bits(got), bits(want))


@pytest.mark.parametrize("case", ["out shape", "weight length", "axis", "out dtype",
                                  "read-only out", "axis a bool"])
def test_prelu_refused_operands_get_the_general_paths_errors_untouched(case, fwd_runs):
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((3, 4, 40)).astype(np.float32), np.full(4, 0.25, np.float32)
    out, axis = np.full_like(x, 7), 1
    if case == "out shape":
        out = np.full((3, 40, 4), 7, x.dtype)
    elif case == "weight length":
        w = np.full(3, 0.25, x.dtype)
    elif case == "axis":
        axis = 2
    elif case == "out dtype":
        out = np.full(x.shape, 7, np.int32)
    elif case == "read-only out":
        out.flags.writeable = False
    else:
        axis = True
    before = out.copy()
    with pytest.raises((ValueError, TypeError)) as direct:
        _core._named_call("prelu", _core._prelu, x, w, axis, out, ">", False)
    with pytest.raises(direct.type) as public:
        leakyops.prelu(x, w, axis=axis, out=out)
    assert str(public.value) == str(direct.value)
    refused_here = case in ("out shape", "weight length", "axis")  # (by the compiled half)
    assert fwd_runs == ([0] if refused_here else [])
    assert np.array_equal(out, before)
