//! The bundled example topologies `stoatflow run` and `stoatflow describe`
//! know: a windowed count, a windowed left join, and a count with
//! `suppress(until_window_closes)`. Keys and values are UTF-8 text in and
//! out, so `stoatflow log produce` feeds them and `stoatflow log consume`
//! shows their results; event time is each record's timestamp.
//!
//! Owns only the topologies, their topic names and their queryable stores.

use std::time::Duration;

use clap::ValueEnum;
use stoatflow::*;

/// The windowed count's store, queryable (`stoatflow query`).
pub const WINDOWED_COUNT_STORE: &str = "click-counts-store";
/// How long the windowed count keeps a window queryable after its start.
const QUERYABLE_FOR: Duration = Duration::from_secs(24 * 3_600);

/// A bundled example.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Example {
    /// Clicks per user per 10 s window (grace 2 s), final counts only:
    /// `clicks` -> `click-counts`.
    WindowedCount,
    /// Orders left-joined with payments for the same order id within 5 s
    /// (grace 1 s): `orders`, `payments` -> `order-payments`.
    Join,
    /// Readings per sensor per 10 s window, held back by
    /// `suppress(until_window_closes)` until final: `readings` ->
    /// `sensor-final-counts`.
    Suppress,
}

impl Example {
    /// The topics it reads.
    pub fn inputs(self) -> &'static [&'static str] {
        match self {
            Example::WindowedCount => &["clicks"],
            Example::Join => &["orders", "payments"],
            Example::Suppress => &["readings"],
        }
    }

    /// The topic it writes.
    pub fn output(self) -> &'static str {
        match self {
            Example::WindowedCount => "click-counts",
            Example::Join => "order-payments",
            Example::Suppress => "sensor-final-counts",
        }
    }

    /// Its application id, unless the configuration sets one.
    pub fn name(self) -> &'static str {
        match self {
            Example::WindowedCount => "windowed-count",
            Example::Join => "join",
            Example::Suppress => "suppress",
        }
    }

    /// The stores `stoatflow query` can ask it (the store routes'),
    /// with their types.
    pub fn stores(self) -> QueryableStores {
        match self {
            Example::WindowedCount => {
                QueryableStores::new().window::<String, i64>(WINDOWED_COUNT_STORE)
            }
            Example::Join | Example::Suppress => QueryableStores::new(),
        }
    }

    /// The topology.
    pub fn topology(self) -> Result<Topology, TopologyError> {
        let text = || Consumed::with(Serdes::string(), Serdes::string());
        let out = || Produced::with(Serdes::string(), Serdes::string());
        let window = |w: &Windowed<String>| {
            format!(
                "{}@{}",
                w.key,
                WallTime::from_millis(w.window.start).to_iso8601()
            )
        };
        let mut b = StreamsBuilder::new();
        match self {
            Example::WindowedCount => {
                b.stream("clicks", text())
                    .group_by_key()
                    .windowed_by(TimeWindows::of_size_and_grace(
                        Duration::from_secs(10),
                        Duration::from_secs(2),
                    ))
                    .emit_strategy(EmitStrategy::on_window_close())
                    .count_with(
                        Materialized::as_(WINDOWED_COUNT_STORE).with_retention(QUERYABLE_FOR),
                    )
                    .to_stream()
                    .skip_tombstones()
                    .map(move |w, n| (window(&w), n.to_string()))
                    .to(self.output(), out());
            }
            Example::Join => {
                let orders = b.stream("orders", text());
                let payments = b.stream("payments", text());
                orders
                    .left_join(
                        &payments,
                        |o: &String, p: Option<&String>| {
                            format!("order={o} payment={}", p.map_or("none", String::as_str))
                        },
                        JoinWindows::of_time_difference_and_grace(
                            Duration::from_secs(5),
                            Duration::from_secs(1),
                        ),
                        StreamJoined::with(Serdes::string(), Serdes::string(), Serdes::string()),
                    )
                    .to(self.output(), out());
            }
            Example::Suppress => {
                b.stream("readings", text())
                    .group_by_key()
                    .windowed_by(TimeWindows::of_size_and_grace(
                        Duration::from_secs(10),
                        Duration::from_secs(2),
                    ))
                    .count()
                    .suppress(Suppressed::until_window_closes(BufferConfig::unbounded()))
                    .to_stream()
                    .skip_tombstones()
                    .map(move |w, n| (window(&w), n.to_string()))
                    .to(self.output(), out());
            }
        }
        b.build()
    }
}
