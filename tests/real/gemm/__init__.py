"""Numerics against MIOpen 2.17.0's OpenCL build with MIOpenGEMM (../shared/real-miopen-ocl-gemm) on PoCL: RNN
(`checks_rnn.py`) and the GEMM convolution solvers (`checks_conv.py`), run in worker processes by
tests/test_real_miopen_gemm.py. The OpenCL set-up (queue, handle, buffers) is tests/real/ocl/common.py's."""
