//! The quickstart: orders per shop per 5-minute window, final results only.
//!
//! Three partitions of an `orders` topic (JSON orders stamped with
//! `placed_at`, up to 20 s out of order; one partition goes quiet) run through
//! the engine's event-time path as it exists: ordered dispatch, the watermark
//! tracker (30 s bound, 2 min idleness), and the streams task, cut into epochs
//! by commit barriers stamped with the watermark. Each final count is printed
//! when the barrier that emits it commits.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use stoatflow_streams::{
    Consumed, EmitStrategy, Headers, Produced, Serde, Serdes, StreamsBuilder, StreamsConfig,
    TimeWindows, Windowed,
};
use stoatflow_time::{
    Clock, ManualClock, Offset, OrderedDispatch, SourcePartition, TrackerConfig, WallTime,
    WatermarkStrategy, WatermarkTracker,
};

/// 2026-09-22T10:00:00Z.
const START_MS: i64 = 1_790_071_200_000;
const SHOPS: [&str; 3] = ["lisbon", "porto", "faro"];

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Order {
    shop: String,
    amount_cents: i64,
    placed_at: i64,
}

pub fn run(_args: &[String]) -> anyhow::Result<()> {
    let strategy =
        WatermarkStrategy::<String, Order>::for_bounded_out_of_orderness(Duration::from_secs(30))
            .with_timestamp_assigner(|_k: &String, o: &Order, _ts| o.placed_at)
            .with_idleness(Duration::from_secs(120));
    let mut builder = StreamsBuilder::new();
    builder
        .stream(
            "orders",
            Consumed::with(Serdes::string(), Serdes::json::<Order>())
                .with_watermark_strategy(strategy.clone()),
        )
        .group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(
            Duration::from_secs(300),
            Duration::from_secs(60),
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count()
        .to_stream()
        .to(
            "order-counts",
            Produced::with(
                Serdes::time_windowed(Serdes::string(), 300_000),
                Serdes::i64(),
            ),
        );
    let topology = builder.build()?;
    let config = Arc::new(StreamsConfig::new("quickstart"));
    topology.validate(&config)?;
    println!("{}", topology.describe().trim_end());

    let mut task = topology.instantiate(0, &config);
    let clock = ManualClock::new(WallTime::from_millis(START_MS));
    let mut tracker = WatermarkTracker::new(TrackerConfig::default());
    let partitions: Vec<_> = (0..3)
        .map(|p| {
            tracker.register(
                SourcePartition::new("orders", p),
                strategy.policy(),
                clock.now(),
            )
        })
        .collect::<Result<_, _>>()?;
    let mut dispatch = OrderedDispatch::new();
    let json = Serdes::json::<Order>();
    let key_serde = Serdes::time_windowed(Serdes::string(), 300_000);
    let mut offsets = [0i64; 3];
    let (mut records, mut barriers, mut finals) = (0u64, 0u64, 0u64);
    println!(
        "\norders: 3 partitions, 30 s bound, 2 min idleness; partition 2 stops after 10 minutes; barrier every second"
    );
    for second in 0..1_800i64 {
        clock.advance(Duration::from_secs(1));
        let now = clock.now();
        for (p, shop) in SHOPS.iter().enumerate() {
            if p == 2 && second >= 600 {
                continue;
            }
            let late_by = ((second * 7 + p as i64 * 13) % 21) * 1_000;
            let order = Order {
                shop: (*shop).into(),
                amount_cents: 100 + second % 900,
                placed_at: START_MS + second * 1_000 - late_by,
            };
            let mut value = Vec::new();
            json.serialize("orders", &order, &mut value)?;
            let event_time = strategy.assign(&order.shop, &order, now.as_millis(), None)?;
            dispatch.push(
                &mut tracker,
                partitions[p],
                Offset(offsets[p]),
                event_time,
                (order.shop, value),
                now,
            )?;
            offsets[p] += 1;
        }
        for d in dispatch.drain_ready(&mut tracker, now) {
            let (key, value) = d.record;
            let part = tracker.partition(d.partition)?.partition();
            task.process(
                "orders",
                Some(part),
                Some(d.offset.0),
                Some(key.as_bytes()),
                Some(&value),
                now.as_millis(),
                Headers::empty(),
            )?;
            records += 1;
        }
        let stamp = tracker.force_watermark(now);
        let commit = task.on_barrier(stamp)?;
        barriers += 1;
        for out in commit.outputs {
            let window: Windowed<String> = key_serde
                .deserialize("order-counts", out.key.as_deref().context("windowed key")?)?;
            let count = i64::from_be_bytes(out.value.as_deref().context("count")?.try_into()?);
            println!(
                "  barrier {:>4} (stamp {})  {:<7} [{} .. {})  {count} orders",
                commit.epoch,
                stamp.to_iso8601(),
                window.key,
                WallTime::from_millis(window.window.start).to_iso8601(),
                WallTime::from_millis(window.window.end).to_iso8601(),
            );
            finals += 1;
        }
    }
    let metrics = tracker.metrics(clock.now());
    println!(
        "\n{records} records in {barriers} epochs; {finals} final results; watermark {} ({} ms behind wall clock); {} late arrivals; {} dropped as late",
        metrics.current.to_iso8601(),
        metrics.lag_ms.unwrap_or_default(),
        metrics.late_records_total,
        task.metrics()
            .dropped(stoatflow_streams::DropReason::LateWindow),
    );
    let (_, body) = stoatflow_server::watermarks_response(&tracker.snapshot(), true);
    println!("GET /watermarks\n{}", serde_json::to_string_pretty(&body)?);
    Ok(())
}
