"""Tests against a real libMIOpen, run in worker processes of their own.

The pytest session itself only ever loads the stub libMIOpen; everything that touches the real library runs
in a subprocess (`worker.py`), driven by `client.py`:

- `checks_*.py` hold the checks. Each is a plain function run inside a worker with the real library bound to
  `miopen`; its assertions are rewritten by pytest, so failures read as usual. The expected values come from
  independent computations in Python (MIOpen's formulas, re-derived from its rocm-5.2.3 source), never from
  an earlier run of the library.
- `coverage.py` is the table: every function of the 2.17.0 spec -> the checks that call it through the
  typed API, or why it is not called. The worker traces each C call, so the table's claims are verified.
- Calls that compile or launch kernels run in a fresh worker each (`Worker.isolated`): MIOpen may abort the
  process; the trace shows which C function was running when it died.
- The test files that drive them are in `library/` (tier `real_library`) and `kernels/` (tier `real_kernels`).
"""
