//! The quickstart: orders per shop per 5-minute window, final results only,
//! on the real engine.
//!
//! Three partitions of an `orders` topic (JSON orders stamped with
//! `placed_at`, up to 20 s out of order; partition 2 goes quiet after ten
//! minutes) are written, a minute of orders at a time, to an embedded log in
//! a temporary directory while the application (30 s bound, 2 min idleness)
//! runs on it. The application's wall clock is a manual clock moved a minute
//! per minute of orders, so the quiet partition turns idle two minutes after
//! its last order and the watermark follows the other two. When the input
//! is consumed, `close()` cuts the final barrier, which emits every window
//! the watermark has closed and commits it. The final counts are read back
//! from `order-counts` (read committed) and printed with the `/watermarks`
//! view.
//!
//! `--dir D` keeps the log in `D` instead of a temporary directory.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::out::outln;
use anyhow::{Context, bail};
use stoatflow::log::{
    Consumer, EmbeddedLog, Log, Record, SeekTo, Timestamp, TopicPartition, TopicSpec,
    TransactionalProducer,
};
use stoatflow::*;

/// 2026-09-22T10:00:00Z.
const START_MS: i64 = 1_790_071_200_000;
const SHOPS: [&str; 3] = ["lisbon", "porto", "faro"];
const SECONDS: i64 = 1_800;
const WINDOW_MS: i64 = 300_000;
const ORDERS: &str = "orders";
const COUNTS: &str = "order-counts";
const APP: &str = "quickstart";

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Order {
    shop: String,
    amount_cents: i64,
    placed_at: i64,
}

fn topology() -> anyhow::Result<Topology> {
    let strategy =
        WatermarkStrategy::<String, Order>::for_bounded_out_of_orderness(Duration::from_secs(30))
            .with_timestamp_assigner(|_k: &String, o: &Order, _ts| o.placed_at)
            .with_idleness(Duration::from_secs(120));
    let mut builder = StreamsBuilder::new();
    builder
        .stream(
            ORDERS,
            Consumed::with(Serdes::string(), Serdes::json::<Order>())
                .with_watermark_strategy(strategy),
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
            COUNTS,
            Produced::with(
                Serdes::time_windowed(Serdes::string(), WINDOW_MS),
                Serdes::i64(),
            ),
        );
    Ok(builder.build()?)
}

pub fn run(dir: Option<&Path>) -> anyhow::Result<()> {
    match dir {
        Some(dir) => run_in(dir),
        None => run_in(tempfile::tempdir()?.path()),
    }
}

fn run_in(dir: &Path) -> anyhow::Result<()> {
    let topology = topology()?;
    outln!("{}", topology.describe().trim_end())?;
    outln!(
        "\norders: 3 partitions, 30 s bound, 2 min idleness; partition 2 stops after 10 minutes"
    )?;
    let clock = Arc::new(ManualClock::new(WallTime::from_millis(START_MS)));
    let mut app = start_app(dir, topology, &clock)?;
    let log = app.log().clone();
    let records = write_orders(&mut app, &log, &clock)?;
    // A closed stdout must not skip the close: its error waits until after.
    let said = outln!("wrote {records} orders to {} ({ORDERS})", dir.display());
    let watermarks = app.watermarks();
    if !app.close(Duration::from_secs(60)) {
        bail!("close did not finish: {:?}", app.error());
    }
    said?;
    if let Some(snapshot) = watermarks {
        let (_, body) = server::watermarks_response(&snapshot, true);
        outln!(
            "\nGET /watermarks\n{}",
            serde_json::to_string_pretty(&body)?
        )?;
    }
    let counts = read_counts(&log)?;
    print_counts(&counts)?;
    if counts.values().any(|c| c.len() != 1) {
        bail!("a window was emitted more than once");
    }
    Ok(())
}

/// Starts the application on an embedded log in `dir` (two lanes, a barrier every 150 ms),
/// with its topics created and its wall clock `clock`.
fn start_app(
    dir: &Path,
    topology: Topology,
    clock: &Arc<ManualClock>,
) -> anyhow::Result<StreamsApp> {
    let config = RuntimeConfig::new(
        APP,
        Backend::Embedded {
            dir: dir.to_owned(),
        },
    )
    .with_lanes(2)
    .with_barrier(CommitBarrierConfig {
        interval: Duration::from_millis(150),
        ..CommitBarrierConfig::default()
    });
    let mut app = StreamsApp::new(topology, config)?.with_clock(clock.clone());
    let log = app.log().clone();
    for topic in [ORDERS, COUNTS] {
        log.ensure_topic(&TopicSpec::new(topic, 3))?;
    }
    app.start()?;
    Ok(app)
}

/// Writes the orders a minute at a time, one transaction each, moving the clock a minute and
/// waiting for the application to consume each; returns how many were written.
fn write_orders(
    app: &mut StreamsApp,
    log: &EmbeddedLog,
    clock: &ManualClock,
) -> anyhow::Result<usize> {
    let json = Serdes::json::<Order>();
    let mut producer = log.transactional_producer("quickstart-orders")?;
    let mut records = 0;
    for minute in 0..SECONDS / 60 {
        producer.begin()?;
        for second in minute * 60..(minute + 1) * 60 {
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
                json.serialize(ORDERS, &order, &mut value)?;
                let record = Record::new(
                    Some(shop.as_bytes()),
                    Some(&value),
                    Timestamp(START_MS + second * 1_000),
                );
                producer.send(&TopicPartition::new(ORDERS, p as u32), &record)?;
                records += 1;
            }
        }
        producer.commit()?;
        clock.advance(Duration::from_secs(60));
        if !app.wait_until_caught_up(Duration::from_secs(120))? {
            bail!(
                "the application did not consume its input: state {}, error {:?}",
                app.state(),
                app.error()
            );
        }
    }
    Ok(records)
}

/// Prints each window's counts and how many final results there are.
fn print_counts(counts: &Counts) -> anyhow::Result<()> {
    outln!("\nfinal counts read back from {COUNTS} (read committed):")?;
    for ((shop, start), c) in counts {
        outln!(
            "  {shop:<7} [{} .. {})  {} orders",
            WallTime::from_millis(*start).to_iso8601(),
            WallTime::from_millis(start + WINDOW_MS).to_iso8601(),
            c.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
        )?;
    }
    let windows: usize = counts.values().map(Vec::len).sum();
    outln!("\n{windows} final results, each committed once")?;
    Ok(())
}

type Counts = BTreeMap<(String, i64), Vec<i64>>;

/// The committed final counts, per (shop, window start), every value emitted.
fn read_counts(log: &EmbeddedLog) -> anyhow::Result<Counts> {
    let mut consumer = log.consumer("quickstart-reader")?;
    let tps: Vec<_> = (0..3).map(|p| TopicPartition::new(COUNTS, p)).collect();
    consumer.assign(&tps)?;
    let mut ends = Vec::new();
    for tp in &tps {
        consumer.seek(tp, SeekTo::Beginning)?;
        ends.push(consumer.end_offset(tp)?);
    }
    let key_serde = Serdes::time_windowed(Serdes::string(), WINDOW_MS);
    let mut out = Counts::new();
    while tps
        .iter()
        .zip(&ends)
        .map(|(tp, end)| Ok(consumer.position(tp)? < *end))
        .collect::<Result<Vec<bool>, stoatflow::log::LogError>>()?
        .contains(&true)
    {
        for r in consumer.fetch(Duration::from_millis(50))? {
            let key: Windowed<String> =
                key_serde.deserialize(COUNTS, r.record.key.as_deref().context("windowed key")?)?;
            let count = i64::from_be_bytes(
                r.record
                    .value
                    .as_deref()
                    .context("count")?
                    .try_into()
                    .context("an 8-byte count")?,
            );
            out.entry((key.key, key.window.start))
                .or_default()
                .push(count);
        }
    }
    Ok(out)
}
