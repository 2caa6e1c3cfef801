//! Orders per shop in five-minute windows, final results only: the
//! topology, a test of it without a log, and a run on the embedded log.
//!
//! `cargo run -p stoatflow --example orders`

use std::time::Duration;

use stoatflow::log::{Log, TopicSpec};
use stoatflow::testing::TopologyTestDriver;
use stoatflow::*;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Order {
    shop: String,
    cents: i64,
    placed_at: i64,
}

/// Five-minute windows with a minute of grace; the watermark trails the
/// newest order by 30 s, and a partition quiet for 2 minutes stops holding
/// it back.
fn topology() -> Result<Topology, TopologyError> {
    let mut builder = StreamsBuilder::new();
    builder
        .stream(
            "orders",
            Consumed::with(Serdes::string(), Serdes::json::<Order>()).with_watermark_strategy(
                WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(30))
                    .with_timestamp_assigner(|_k: &String, o: &Order, _ts| o.placed_at)
                    .with_idleness(Duration::from_secs(120)),
            ),
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
    builder.build()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Test it without a log: the driver's clock is the largest timestamp piped.
    let driver = TopologyTestDriver::new(topology()?, StreamsConfig::new("orders-app"))?;
    let orders = driver.create_input_topic("orders", Serdes::string(), Serdes::json::<Order>());
    let counts = driver.create_output_topic(
        "order-counts",
        Serdes::time_windowed(Serdes::string(), 300_000),
        Serdes::i64(),
    );
    let t0 = 1_790_071_200_000; // 2026-09-22T10:00:00Z
    for (i, shop) in ["lisbon", "porto", "lisbon"].into_iter().enumerate() {
        let order = Order {
            shop: shop.into(),
            cents: 500,
            placed_at: t0 + i as i64 * 1_000,
        };
        orders.pipe_input(shop.to_string(), order)?;
    }
    assert!(
        counts.is_empty(),
        "final results only: the window is still open"
    );
    // An order past the window's end plus grace moves the watermark past its close.
    let later = Order {
        shop: "faro".into(),
        cents: 1,
        placed_at: t0 + 360_000,
    };
    orders.pipe_input("faro".to_string(), later)?;
    let finals = counts.read_key_values_to_sorted_map()?;
    for (window, count) in &finals {
        println!("{window:?}: {count}");
    }
    assert_eq!(finals.len(), 2, "lisbon and porto, each once");

    // Run it on the embedded log (in memory here; `Backend::Embedded { dir }`
    // keeps it in a directory). `app.run()` would block until SIGINT/SIGTERM.
    let mut app = StreamsApp::new(
        topology()?,
        RuntimeConfig::new("orders-app", Backend::InMemory),
    )?;
    app.log().create_topic(&TopicSpec::new("orders", 3))?;
    app.log().create_topic(&TopicSpec::new("order-counts", 3))?;
    app.start()?;
    let state = app.wait_for_state(AppState::Running, Duration::from_secs(10));
    println!("the application is {state:?}");
    // A close cuts a final barrier: every window the watermark closed is
    // emitted and committed, and a restart resumes from there.
    assert!(app.close(Duration::from_secs(10)), "closed within 10 s");
    Ok(())
}
