"""What the op-dispatch benchmarks share (benchmarks/op_dispatch.py on the stub, benchmarks/ocl_dispatch.py on
PoCL, benchmarks/driver_calls.py): the goal, the LSTM step's shape and row, the rounds, and the printed table."""

from __future__ import annotations

#: op - typed per MIOpen call the op makes, in us
GOAL_US = 5.0
#: the LSTM step both backends time: sequence length 1, batch, input size, hidden size (one layer, forward inference)
LSTM_BATCH, LSTM_INPUT, LSTM_HIDDEN = 4, 8, 16
LSTM_STEP = (f"RNN.forward_inference, one LSTM step (1, {LSTM_BATCH}, {LSTM_INPUT}) -> {LSTM_HIDDEN} "
             f"(2 MIOpen calls)")
#: MIOpen calls a row's op makes (its goal: GOAL_US per call), where more than one
CALLS = {LSTM_STEP: 2}
#: the stub's rounds: best of RUNS interleaved runs of NUMBER calls (benchmarks/op_dispatch.py)
STUB_RUNS, STUB_NUMBER = 15, 1000
#: PoCL's rounds: the median of RUNS paired runs of NUMBER calls (benchmarks/ocl_dispatch.py)
OCL_RUNS, OCL_NUMBER = 21, 300


def goal_us(name: str) -> float:
    """The goal of a row: GOAL_US per MIOpen call its op makes."""
    return GOAL_US * CALLS.get(name, 1)


def print_rows(rows: list[tuple[str, float, float]]) -> None:
    """The table of (case, op s per call, typed s per call) rows, each judged against its goal."""
    width = max([56, *(len(name) for name, _, _ in rows)])
    print(f"  {'op':{width}s} {'op us':>8s} {'typed us':>9s} {'over':>7s}  result")
    for name, op, typed in rows:
        over = (op - typed) * 1e6
        print(f"  {name:{width}s} {op * 1e6:8.2f} {typed * 1e6:9.2f} {over:7.2f}  "
              f"{'PASS' if over <= goal_us(name) else 'MISS'}")
