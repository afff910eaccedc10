"""Numerics against MIOpen 2.17.0's OpenCL build with MIOpenGEMM (../shared/real-miopen-ocl-gemm) on PoCL: RNN
(`checks_rnn.py`), the GEMM convolution solvers and the runtime's planner modes on them (`checks_conv.py`), run in
worker processes by tests/real/kernels/test_real_miopen_gemm.py; their speed (`bench.py`, for tests/gpu/ocl_suite.py --bench).
The OpenCL set-up (queue, handle, buffers) is tests/real/ocl/common.py's."""
