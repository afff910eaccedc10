"""Proof against a real header and the stub library: layout probe, stub, call-through driver, C++ compile, the ABI check."""
