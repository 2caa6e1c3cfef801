"""PyFlink SQL on its MiniCluster: the tumbling count of bench/compare.

Key ``i % 1000`` at event time ``i`` ms, counted per key in 10 s tumbling
windows, read from Flink's datagen connector (a sequence), written to a
blackhole sink. Prints one line: ``peer=pyflink-sql events=N seconds=S``.
"""

import argparse
import time

from pyflink.table import EnvironmentSettings, TableEnvironment


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--parallelism", type=int, default=1)
    a = ap.parse_args()

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("parallelism.default", str(a.parallelism))
    conf.set("pipeline.object-reuse", "true")
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
    env.execute_sql(
        """
        CREATE TABLE counts (k BIGINT, window_start TIMESTAMP(3), c BIGINT)
        WITH ('connector' = 'blackhole')
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


if __name__ == "__main__":
    main()
