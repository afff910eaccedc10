"""Numerics against the real kernels of MIOpen 2.17.0's OpenCL backend (../shared/real-miopen-ocl) on PoCL.

The checks run in worker processes (tests/real/worker.py, as for the HIPNOGPU build) with the OpenCL build
bound to `miopen`; device memory is pyopencl buffers (`int_ptr`), the handle `miopen.create_with_stream` on a
pyopencl queue. Every result is compared with a float64 numpy reference computed here (`refs.py`). Each check
returns the rows of the numeric coverage table (`coverage.py`) it proved; the table in docs/real-miopen.md is
rendered from those claims.
"""
