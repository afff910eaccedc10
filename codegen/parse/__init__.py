"""Header -> spec: libclang, the precompiled preamble, beta-only lines, doc comments, parameter roles, the parse itself."""
