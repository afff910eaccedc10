"""Checks against MIOpen 3.3.0's OpenCL build (../shared/real-miopen-ocl-330) on PoCL: Find 2.0 for every problem
kind 3.3.0 defines and the runtime's planner on it (`checks_find2.py`), the beta ops whose solvers are HIP-only
(`checks_v3.py`), and where tests/real/ocl's numeric suite comes out otherwise than on 2.17.0 (`differences.py`);
run by tests/real/kernels/test_real_miopen_ocl330.py."""
