"""Bytewax: the tumbling count of bench/compare.

Key ``i % 1000`` at event time ``i`` ms, counted per key in 10 s tumbling
windows on an event-time clock, read from an in-memory generator (a
``TestingSource`` over a Python generator), written to a counting sink.
Prints one line: ``peer=bytewax events=N seconds=S``.
"""

import argparse
import time
from datetime import datetime, timedelta, timezone

import bytewax.operators as op
import bytewax.operators.windowing as win
from bytewax.dataflow import Dataflow
from bytewax.operators.windowing import EventClock, TumblingWindower
from bytewax.testing import TestingSink, TestingSource, run_main

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--windows-out")
    a = ap.parse_args()

    def events():
        for i in range(a.events):
            yield (i % 1000, i)

    flow = Dataflow("tumbling")
    inp = op.input("in", flow, TestingSource(events(), batch_size=10_000))
    clock = EventClock(
        lambda e: EPOCH + timedelta(milliseconds=e[1]),
        wait_for_system_duration=timedelta(0),
    )
    length = timedelta(seconds=10)
    windower = TumblingWindower(length=length, align_to=EPOCH)
    counted = win.count_window("count", inp, clock, windower, lambda e: str(e[0]))
    out = []
    op.output("out", counted.down, TestingSink(out))
    start = time.perf_counter()
    run_main(flow)
    seconds = time.perf_counter() - start
    print(f"peer=bytewax events={a.events} seconds={seconds:.3f} windows={len(out)}")
    if a.windows_out:
        # Each item is (key, (window id, count)); a tumbling window's id is
        # its index from align_to, so its start is id * length.
        length_ms = length // timedelta(milliseconds=1)
        with open(a.windows_out, "w") as f:
            for key, (window_id, count) in out:
                f.write(f"{key} {window_id * length_ms} {count}\n")


if __name__ == "__main__":
    main()
