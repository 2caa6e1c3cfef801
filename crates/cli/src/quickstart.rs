//! The quickstart: three partitions of an `orders` topic, one of which goes
//! quiet, replayed through ordered dispatch and the watermark tracker on a
//! simulated wall clock. Prints the watermark as it advances and the final
//! `/watermarks` view.

use std::time::Duration;

use anyhow::Context;
use stoatflow_time::{
    Clock, EventTime, ManualClock, Offset, OrderedDispatch, SourcePartition, TrackerConfig,
    WallTime, WatermarkStrategy, WatermarkTracker,
};

/// 2026-09-22T10:00:00Z.
const START_MS: i64 = 1_790_071_200_000;

pub fn run(_args: &[String]) -> anyhow::Result<()> {
    let clock = ManualClock::new(WallTime::from_millis(START_MS));
    let mut tracker = WatermarkTracker::new(TrackerConfig::default());
    let strategy =
        WatermarkStrategy::<String, u32>::for_bounded_out_of_orderness(Duration::from_secs(30))
            .with_idleness(Duration::from_secs(120));
    let partitions: Vec<_> = (0..3)
        .map(|p| {
            tracker.register(
                SourcePartition::new("orders", p),
                strategy.policy(),
                clock.now(),
            )
        })
        .collect::<Result<_, _>>()?;
    tracker.report_startup();

    let mut dispatch = OrderedDispatch::new();
    let mut offsets = [0i64; 3];
    let mut dispatched = 0u64;
    println!(
        "quickstart: 3 partitions of 'orders', 30 s out-of-orderness, 2 min idleness; orders:2 stops at 10:01"
    );
    for second in 0..600i64 {
        clock.advance(Duration::from_secs(1));
        let now = clock.now();
        for p in 0..3usize {
            if p == 2 && second >= 60 {
                continue; // orders:2 goes quiet after a minute
            }
            // Each partition sends one order a second, stamped up to 20 s late.
            let jitter = ((second * 7 + p as i64 * 13) % 21) * 1_000;
            let ts = EventTime::new(START_MS + second * 1_000 - jitter).context("event time")?;
            dispatch.push(
                &mut tracker,
                partitions[p],
                Offset(offsets[p]),
                ts,
                format!("order-{p}-{second}"),
                now,
            )?;
            offsets[p] += 1;
        }
        for record in dispatch.drain_ready(&mut tracker, now) {
            dispatched += 1;
            let _ = record.record;
        }
        tracker.poll_watermark(now);
        if second % 60 == 59 {
            println!(
                "  wall {}  watermark {}",
                now.to_iso8601(),
                tracker.current().to_iso8601()
            );
        }
    }
    let now = clock.now();
    let global = tracker.force_watermark(now);
    let metrics = tracker.metrics(now);
    println!(
        "dispatched {dispatched} records; global watermark {} ({} ms behind wall clock); {} late arrivals; max out-of-orderness {} ms",
        global.to_iso8601(),
        metrics.lag_ms.unwrap_or_default(),
        metrics.late_records_total,
        metrics.out_of_orderness_max_ms,
    );
    let (_, body) = stoatflow_server::watermarks_response(&tracker.snapshot(), true);
    println!("GET /watermarks\n{}", serde_json::to_string_pretty(&body)?);
    Ok(())
}
