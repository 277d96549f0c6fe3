"""GlobalTensor.SetGlobalBuffer over NumPy's array subclasses (issue 26: one plain view).

Global memory is the array's memory, read through the core's plain view: an ``np.matrix`` or
``np.memmap`` is its bytes, flat (a matrix stays 2-D when reshaped, which made bufferSize,
GetValue and slicing wrong), and a masked array is refused (its mask would be ignored).
"""

from __future__ import annotations

import numpy as np
import pytest

from leakyops import ascendc as ac


@pytest.mark.parametrize("raw", [False, True], ids=["float32", "uint8 bytes"])
def test_a_matrix_buffer_is_its_flat_memory(raw):
    values = np.arange(8, dtype=np.float32)
    m = (values.view(np.uint8) if raw else values).reshape(1, -1).view(np.matrix)
    g = ac.GlobalTensor(ac.float32)
    g.SetGlobalBuffer(m, 4)
    assert g.GetSize() == 4
    assert g.GetValue(1) == 1.0
    assert g[2:4].GetSize() == 2 and g[2:4].GetValue(1) == 3.0
    assert type(g.numpy()) is np.ndarray and g.numpy().shape == (4,)
    g.SetValue(3, 30.0)  # written through to the matrix's memory
    assert np.asarray(m).reshape(-1).view(np.float32)[3] == 30.0
    with pytest.raises(ac.ConstraintError):
        g.GetValue(4)
    auto = ac.GlobalTensor()  # the element type from the matrix
    auto.SetGlobalBuffer(np.zeros((2, 3), np.float16).view(np.matrix), 5)
    assert auto.dtype == np.float16 and auto.GetSize() == 5


def test_a_memmap_buffer_is_plain_memory(tmp_path):
    mm = np.memmap(tmp_path / "gm.bin", np.float32, "w+", shape=(2, 4))
    g = ac.GlobalTensor(ac.float32)
    g.SetGlobalBuffer(mm, 6)
    assert g.GetSize() == 6 and type(g.numpy()) is np.ndarray
    g.SetValue(5, 2.5)
    assert mm[1, 1] == 2.5


def test_a_masked_buffer_is_refused():
    data = np.zeros(4, np.float32)
    masked = np.ma.masked_array(data, mask=[0, 1, 0, 1])
    g = ac.GlobalTensor(ac.float32)
    with pytest.raises(ac.AscendCTypeError, match=r"^GlobalTensor.SetGlobalBuffer: buffer is a "
                                                  r"numpy.ma.MaskedArray"):
        g.SetGlobalBuffer(masked)
    with pytest.raises(ac.ConstraintError, match="SetGlobalBuffer has not been called"):
        g.GetSize()
