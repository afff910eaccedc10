"""Tests of a real MIOpen whose kernels compute (tier `real_kernels`)."""
