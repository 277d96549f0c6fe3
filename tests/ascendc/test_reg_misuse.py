"""Misuse of the Ascend 950 register API is a clear error raised before anything is written:
an unaligned LoadAlign/StoreAlign, a mask made for another element width, a register (or mask)
read before it is written, an instruction outside ``__VEC_SCOPE__``, a UB address past the
buffer; and the type and trait rules. Each test pins one check (it fails if that check goes)
and that the registers and the Unified Buffer are untouched."""

from __future__ import annotations

import numpy as np
import pytest

from leakyops import ascendc as ac
from leakyops.ascendc import ConstraintError, Reg, Ref, UbufPtr, __VEC_SCOPE__
from leakyops.ascendc._errors import AscendCTypeError

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


@pytest.fixture
def ub(core):
    core.ub.data[:4096] = np.arange(4096) % 251
    return core


def _snapshot(core):
    return core.ub.data.copy()


def _written(reg):
    with __VEC_SCOPE__():
        Reg.Duplicate(reg, 1.0)
    return reg


# ---------------------------------------------------------------- unaligned load / store
@pytest.mark.parametrize("dist,addr", [(Reg.LoadDist.DIST_NORM, 16), (Reg.LoadDist.DIST_UNPACK_B16, 130),
                                       (Reg.LoadDist.DIST_BRC_B16, 1), (Reg.LoadDist.DIST_E2B_B16, 8)])
def test_unaligned_load(ub, dist, addr):
    r = Reg.RegTensor[F16]()
    with __VEC_SCOPE__():
        with pytest.raises(ConstraintError, match="not (32|2|16)-byte aligned"):
            Reg.LoadAlign[F16, dist](r, UbufPtr[F16](addr))
        with pytest.raises(ConstraintError, match="read before"):     # nothing was loaded
            Reg.Add(r, r, r, Reg.CreateMask[F16]())


@pytest.mark.parametrize("dist,addr", [(Reg.StoreDist.DIST_NORM, 64 + 16), (Reg.StoreDist.DIST_PACK_B32, 66)])
def test_unaligned_store(ub, dist, addr):
    before = _snapshot(ub)
    r = Reg.RegTensor[F16]()
    with __VEC_SCOPE__():
        Reg.Duplicate(r, 2.0)
        m = Reg.CreateMask[F32]() if dist is Reg.StoreDist.DIST_PACK_B32 else Reg.CreateMask[F16]()
        with pytest.raises(ConstraintError, match="not 32-byte aligned"):
            Reg.StoreAlign[F16, dist](UbufPtr[F16](addr), r, m)
    assert np.array_equal(ub.ub.data, before)


def test_register_dataCopy_forms_check_alignment_too(ub):
    r = _written(Reg.RegTensor[F32]())
    with __VEC_SCOPE__():
        Reg.Duplicate(r, 1.0)
        with pytest.raises(ConstraintError, match="32-byte aligned"):
            Reg.DataCopy(r, UbufPtr[F32](4))
        with pytest.raises(ConstraintError, match="32-byte aligned"):
            Reg.DataCopy(UbufPtr[F32](4), r, Reg.CreateMask[F32]())


# ------------------------------------------------------------------ mask of another width
def test_mask_of_another_width(ub):
    before = _snapshot(ub)
    a, dst = Reg.RegTensor[F32](), Reg.RegTensor[F32]()
    with __VEC_SCOPE__():
        Reg.Duplicate(a, 1.0)
        Reg.Duplicate(dst, 5.0)
        half_mask = Reg.CreateMask[F16]()
        for call in (lambda: Reg.Add(dst, a, a, half_mask), lambda: Reg.Muls(dst, a, 2.0, half_mask),
                     lambda: Reg.Select(dst, a, a, half_mask),
                     lambda: Reg.Compare(Reg.MaskReg(), a, a, half_mask),
                     lambda: Reg.StoreAlign(UbufPtr[F32](0), a, half_mask)):
            with pytest.raises(ConstraintError, match="made for 2-byte elements"):
                call()
        assert (dst.numpy() == 5.0).all()
    assert np.array_equal(ub.ub.data, before)


def test_cast_and_pack_read_the_mask_at_the_wider_width(ub):
    h, f = Reg.RegTensor[F16](), Reg.RegTensor[F32]()
    t = Reg.CastTrait(Reg.RegLayout.ZERO)
    with __VEC_SCOPE__():
        Reg.Duplicate(h, 1.0)
        with pytest.raises(ConstraintError, match="made for 2-byte elements"):
            Reg.Cast[F32, F16, t](f, h, Reg.CreateMask[F16]())
        with pytest.raises(ConstraintError, match="made for 2-byte elements"):
            Reg.StoreAlign[F16, Reg.StoreDist.DIST_PACK_B32](UbufPtr[F16](0), h, Reg.CreateMask[F16]())
        Reg.Cast[F32, F16, t](f, h, Reg.CreateMask[F32]())        # the b32 mask is right


# ---------------------------------------------------------------------- read before write
def test_register_read_before_write(core):
    a, dst = Reg.RegTensor[F32](), Reg.RegTensor[F32]()
    with __VEC_SCOPE__():
        m = Reg.CreateMask[F32]()
        for call in (lambda: Reg.Add(dst, a, a, m), lambda: Reg.Select(dst, a, a, m),
                     lambda: Reg.Cast[F16, F32, Reg.CastTrait(Reg.RegLayout.ZERO, Reg.SatMode.NO_SAT,
                                                              Reg.MaskMergeMode.ZEROING,
                                                              ac.RoundMode.CAST_RINT)](
                         Reg.RegTensor[F16](), a, m),
                     lambda: Reg.StoreAlign(UbufPtr[F32](0), a, m),
                     lambda: Reg.Duplicate(dst, a, m)):
            with pytest.raises(ConstraintError, match="read before anything wrote it"):
                call()


def test_mask_read_before_write(core):
    a = Reg.RegTensor[F32]()
    with __VEC_SCOPE__():
        Reg.Duplicate(a, 1.0)
        with pytest.raises(ConstraintError, match="MaskReg is read before"):
            Reg.Add(a, a, a, Reg.MaskReg())


def test_merging_reads_the_destination(core):
    dst = Reg.RegTensor[F32]()
    with __VEC_SCOPE__():
        with pytest.raises(ConstraintError, match="MERGING reads dst"):
            Reg.Duplicate[F32, Reg.MaskMergeMode.MERGING](dst, 1.0, Reg.CreateMask[F32]())


def test_registers_do_not_outlive_their_scope(core):
    a = Reg.RegTensor[F32]()
    with __VEC_SCOPE__():
        Reg.Duplicate(a, 1.0)
        m = Reg.CreateMask[F32]()
    with __VEC_SCOPE__():
        with pytest.raises(ConstraintError, match="does not outlive its __VEC_SCOPE__"):
            Reg.Add(a, a, a, Reg.CreateMask[F32]())
        with pytest.raises(ConstraintError, match="MaskReg is read before"):
            Reg.Duplicate(a, 1.0, m)


# --------------------------------------------------------------------- outside the scope
@pytest.mark.parametrize("call", [
    lambda r, m: Reg.LoadAlign(r, UbufPtr[F32](0)),
    lambda r, m: Reg.StoreAlign(UbufPtr[F32](0), r, m),
    lambda r, m: Reg.DataCopy(r, UbufPtr[F32](0)),
    lambda r, m: Reg.Add(r, r, r, m),
    lambda r, m: Reg.Muls(r, r, 2.0, m),
    lambda r, m: Reg.Duplicate(r, 1.0),
    lambda r, m: Reg.Compare(Reg.MaskReg(), r, r, m),
    lambda r, m: Reg.Select(r, r, r, m),
    lambda r, m: Reg.Cast[F32, F32](r, r, m),
    lambda r, m: Reg.CreateMask[F32](),
    lambda r, m: Reg.UpdateMask[F32](Ref(3)),
], ids=["LoadAlign", "StoreAlign", "DataCopy", "Add", "Muls", "Duplicate", "Compare", "Select",
        "Cast", "CreateMask", "UpdateMask"])
def test_outside_vec_scope(ub, call):
    before = _snapshot(ub)
    r = _written(Reg.RegTensor[F32]())
    with __VEC_SCOPE__():
        m = Reg.CreateMask[F32]()
    with pytest.raises(ConstraintError, match="inside a vector function"):
        call(r, m)
    assert np.array_equal(ub.ub.data, before)


def test_scopes_do_not_nest(core):
    with __VEC_SCOPE__():
        with pytest.raises(ConstraintError, match="do not nest"):
            with __VEC_SCOPE__():
                pass


# ------------------------------------------------------------------- UB address past the end
def test_ub_address_past_the_buffer(ub):
    end = ub.ub.capacity
    before = _snapshot(ub)
    r = Reg.RegTensor[F32]()
    with __VEC_SCOPE__():
        Reg.Duplicate(r, 3.0)
        m = Reg.CreateMask[F32]()
        with pytest.raises(ConstraintError, match="outside the .*Unified Buffer"):
            Reg.LoadAlign(r, UbufPtr[F32](end - 128))                 # VL bytes from there
        with pytest.raises(ConstraintError, match="outside the .*Unified Buffer"):
            Reg.LoadAlign[np.int8, Reg.LoadDist.DIST_DS_B8](Reg.RegTensor[np.int8](), UbufPtr[np.int8](end - 256))
        with pytest.raises(ConstraintError, match="outside the .*Unified Buffer"):
            Reg.StoreAlign(UbufPtr[F32](end - 128), r, m)
        with pytest.raises(ConstraintError, match="outside the .*Unified Buffer"):
            Reg.StoreAlign(UbufPtr[F32](-256), r, m)
        with pytest.raises(ConstraintError, match="outside the .*Unified Buffer"):
            Reg.LoadAlign(r, UbufPtr[F32](0) - 64)
        assert (r.numpy() == 3.0).all()
    assert np.array_equal(ub.ub.data, before)


# ------------------------------------------------------------------- types and traits
def test_update_mask_takes_a_reference(core):
    with __VEC_SCOPE__():
        with pytest.raises(AscendCTypeError, match="pass a Ref"):
            Reg.UpdateMask[F32](100)
    with pytest.raises(ConstraintError, match="<= 4294967295"):
        Ref(2**32)


def test_types_must_match(core):
    h, f = Reg.RegTensor[F16](), Reg.RegTensor[F32]()
    with __VEC_SCOPE__():
        Reg.Duplicate(h, 1.0)
        Reg.Duplicate(f, 1.0)
        m = Reg.CreateMask[F32]()
        with pytest.raises(AscendCTypeError, match="must have one type"):
            Reg.Add(f, f, h, m)
        with pytest.raises(AscendCTypeError, match="template type half but dstReg is float"):
            Reg.LoadAlign[F16](f, UbufPtr[F32](0))
        with pytest.raises(AscendCTypeError, match="types must match"):
            Reg.LoadAlign(f, UbufPtr[F16](0))
        with pytest.raises(ConstraintError, match="moves 16-bit elements"):
            Reg.LoadAlign[F32, Reg.LoadDist.DIST_UNPACK_B16](f, UbufPtr[F32](0))
        with pytest.raises(ConstraintError, match="moves 32-bit elements"):
            Reg.StoreAlign[F16, Reg.StoreDist.DIST_NORM_B32](UbufPtr[F16](0), h, Reg.CreateMask[F16]())
        with pytest.raises(AscendCTypeError, match="bfloat16_t is not supported"):
            b = Reg.RegTensor[ac.bfloat16_t]()
            Reg.Duplicate(b, 1.0)
            Reg.Muls(b, b, 2.0, Reg.CreateMask[ac.bfloat16_t]())
        with pytest.raises(AscendCTypeError, match="not an emulated conversion"):
            Reg.Cast[np.int8, F32](Reg.RegTensor[np.int8](), f, m)
    with pytest.raises(AscendCTypeError, match="RegTraitNumTwo"):
        Reg.RegTensor[np.int64, Reg.RegTraitNumTwo]()
    with pytest.raises(AscendCTypeError, match="not a register type"):
        Reg.RegTensor[np.float64]()


def test_merge_mode_and_cast_trait_rules(core):
    f, h = Reg.RegTensor[F32](), Reg.RegTensor[F16]()
    with __VEC_SCOPE__():
        Reg.Duplicate(f, 1.0)
        m = Reg.CreateMask[F32]()
        with pytest.raises(ConstraintError, match="MERGING is not supported by Mul"):
            Reg.Mul[F32, Reg.MaskMergeMode.MERGING](f, f, f, m)
        with pytest.raises(ConstraintError, match="layoutMode UNKNOWN is not allowed"):
            Reg.Cast[F16, F32, Reg.CastTrait(Reg.RegLayout.UNKNOWN, Reg.SatMode.NO_SAT)](h, f, m)
        with pytest.raises(ConstraintError, match="needs satMode NO_SAT or SAT"):
            Reg.Cast[F16, F32, Reg.CastTrait(Reg.RegLayout.ZERO)](h, f, m)
        with pytest.raises(ConstraintError, match="roundMode CAST_HYBRID is not supported"):
            Reg.Cast[F16, F32, Reg.CastTrait(Reg.RegLayout.ZERO, Reg.SatMode.NO_SAT,
                                             roundMode=Reg.RoundMode.CAST_HYBRID)](h, f, m)
        with pytest.raises(ConstraintError, match="MERGING is not supported by Cast"):
            Reg.Cast[F16, F32, Reg.CastTrait(Reg.RegLayout.ZERO, Reg.SatMode.NO_SAT,
                                             Reg.MaskMergeMode.MERGING, ac.RoundMode.CAST_RINT)](h, f, m)
        with pytest.raises(ConstraintError, match="read before"):      # nothing was written
            Reg.StoreAlign[F16, Reg.StoreDist.DIST_PACK_B32](UbufPtr[F16](0), h, m)
    with pytest.raises(AscendCTypeError, match="layoutMode must be a RegLayout"):
        Reg.CastTrait(0)
