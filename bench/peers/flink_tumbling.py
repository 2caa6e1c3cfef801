"""PyFlink SQL on its MiniCluster: the tumbling count of bench/compare.

Key ``i % 1000`` at event time ``i`` ms, counted per key in 10 s tumbling
windows, read from Flink's datagen connector (a sequence), written to a
blackhole sink. Prints one line: ``peer=pyflink-sql events=N seconds=S``.

With ``--windows-out PATH`` the sink is a CSV filesystem sink instead (in a
scratch directory beside PATH), and every window is then written to PATH as
``key start_ms count`` for bench/compare's result check. Writing the rows is
inside the timed job, so this run is a little slower than a blackhole run.
"""

import argparse
import os
import shutil
import time
from datetime import datetime, timezone

from pyflink.table import EnvironmentSettings, TableEnvironment


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--parallelism", type=int, default=1)
    ap.add_argument("--windows-out")
    a = ap.parse_args()

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("parallelism.default", str(a.parallelism))
    conf.set("pipeline.object-reuse", "true")
    # Windows align to the epoch in UTC, as the other systems' do.
    conf.set("table.local-time-zone", "UTC")
    env.execute_sql(
        f"""
        CREATE TABLE events (
            seq BIGINT,
            k AS seq % 1000,
            ts AS TO_TIMESTAMP_LTZ(seq, 3),
            WATERMARK FOR ts AS ts
        ) WITH (
            'connector' = 'datagen',
            'fields.seq.kind' = 'sequence',
            'fields.seq.start' = '0',
            'fields.seq.end' = '{a.events - 1}',
            'rows-per-second' = '1000000000'
        )
        """
    )
    scratch = None
    if a.windows_out:
        scratch = a.windows_out + ".flink"
        shutil.rmtree(scratch, ignore_errors=True)
        sink = f"'connector' = 'filesystem', 'path' = 'file://{scratch}', 'format' = 'csv'"
    else:
        sink = "'connector' = 'blackhole'"
    env.execute_sql(
        f"""
        CREATE TABLE counts (k BIGINT, window_start TIMESTAMP(3), c BIGINT)
        WITH ({sink})
        """
    )
    insert = """
        INSERT INTO counts
        SELECT k, window_start, COUNT(*) FROM TABLE(
            TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
        GROUP BY k, window_start, window_end
    """
    start = time.perf_counter()
    result = env.execute_sql(insert)
    client = result.get_job_client()
    job = client.get_job_execution_result().result()
    wall = time.perf_counter() - start
    try:
        seconds = job.get_net_runtime() / 1000.0
    except Exception:  # older clients: fall back to wall time
        seconds = wall
    print(f"peer=pyflink-sql events={a.events} seconds={seconds:.3f} wall_seconds={wall:.3f}")
    if scratch:
        write_windows(scratch, a.windows_out)


def write_windows(scratch: str, path: str) -> None:
    """Every row the filesystem sink wrote (finished or still in-progress
    part files: without checkpoints a streaming job may not rename them) as
    ``key start_ms count`` lines."""
    with open(path, "w") as out:
        for root, _, files in os.walk(scratch):
            for name in sorted(files):
                if name.startswith("_") or name.endswith(".crc"):
                    continue
                with open(os.path.join(root, name)) as f:
                    for line in f:
                        line = line.strip()
                        if not line:
                            continue
                        k, start, c = line.split(",")
                        t = datetime.fromisoformat(start.strip('"')).replace(tzinfo=timezone.utc)
                        out.write(f"{k} {round(t.timestamp() * 1000)} {c}\n")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
