"""Checks only MIOpen 3.x can run, against its OpenCL build (../shared/real-miopen-ocl-330) on PoCL: Find 2.0 and
the beta ops whose solvers are HIP-only (tests/test_real_miopen_ocl330.py)."""
