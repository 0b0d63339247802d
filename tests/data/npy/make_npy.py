#!/usr/bin/env python3
"""Writes the .npy fixtures read by tests/unit/core/test_tensor_files.cpp (NumPy's own writer, so the
C++ reader is checked against real files, including ones it must reject). Run from this folder."""
import numpy as np

np.save('f4_2x3.npy', np.arange(6, dtype=np.float32).reshape(2, 3) / 4)
np.save('i8_ids.npy', np.array([[151643, 0, 7, -1]], dtype=np.int64))
np.save('b1_mask.npy', np.array([True, False, True]))
np.save('f2_scalar.npy', np.float16(1.5))
np.save('u1_empty.npy', np.zeros((0, 3), dtype=np.uint8))
with open('f8_v2.npy', 'wb') as f:
    np.lib.format.write_array(f, np.array([0.1, -2.5], dtype=np.float64), version=(2, 0))
np.save('f4_fortran.npy', np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
np.save('f4_bigendian.npy', np.arange(3, dtype='>f4'))
np.save('void_v2.npy', np.zeros(3, dtype='V2'))
