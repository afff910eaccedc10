"""Numerics against the real kernels of MIOpen 2.17.0's OpenCL backend (../shared/real-miopen-ocl) on PoCL; the same
checks run on MIOpen 3.3.0's OpenCL build too (tests/real/kernels/test_real_miopen_ocl330.py, its differences in
tests/real/ocl330/differences.py).

The checks run in worker processes (tests/real/worker.py, as for the HIPNOGPU build) with the OpenCL build
bound to `miopen`; device memory is pyopencl buffers (`int_ptr`), the handle `miopen.create_with_stream` on a
pyopencl queue. Every result is compared with a float64 numpy reference computed here (`refs.py`). Each check
returns the rows of the numeric coverage table (`coverage.py`) it proved; the table in docs/real-miopen.md is
rendered from those claims.
"""
