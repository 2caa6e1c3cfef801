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
    windower = TumblingWindower(length=timedelta(seconds=10), align_to=EPOCH)
    counted = win.count_window("count", inp, clock, windower, lambda e: str(e[0]))
    out = []
    op.output("out", counted.down, TestingSink(out))
    start = time.perf_counter()
    run_main(flow)
    seconds = time.perf_counter() - start
    print(f"peer=bytewax events={a.events} seconds={seconds:.3f} windows={len(out)}")


if __name__ == "__main__":
    main()
