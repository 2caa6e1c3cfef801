//! q8, monitor new users: the people who opened an auction in the same
//! 10 s tumbling window in which they registered.
//!
//! ```sql
//! SELECT P.id, P.name, P.starttime FROM
//!   (SELECT id, name, TUMBLE_START(date_time, 10 s) AS starttime FROM person
//!    GROUP BY id, name, TUMBLE(date_time, 10 s)) P
//! JOIN
//!   (SELECT seller, TUMBLE_START(date_time, 10 s) AS starttime FROM auction
//!    GROUP BY seller, TUMBLE(date_time, 10 s)) A
//! ON P.id = A.seller AND P.starttime = A.starttime
//! ```
//!
//! As a Kafka Streams user writes it: key persons by id and auctions by
//! seller, reduce each per key and 10 s window emitted once the window
//! closes, and join the two windowed streams on their windowed key (both
//! results of one window close together, well within the join window).

use std::time::Duration;

use stoatflow_streams::{
    EmitStrategy, Grouped, JoinWindows, KStream, Materialized, Serdes, StreamJoined,
    StreamsBuilder, TimeWindows, Windowed,
};

/// `(person id and window, name)` of each new person who sold in their first window.
pub fn q8(
    builder: &mut StreamsBuilder,
    out_of_orderness: Duration,
) -> KStream<Windowed<i64>, String> {
    let events = super::events(builder, out_of_orderness);
    let windows = TimeWindows::of_size_with_no_grace(super::WINDOW);
    let persons = super::persons(&events)
        .map(|_, p| (p.id, p.name.to_string()))
        .group_by_key_with(Grouped::with(Serdes::i64(), Serdes::string()))
        .windowed_by(windows)
        .emit_strategy(EmitStrategy::on_window_close())
        .reduce(
            |first, _| first,
            Materialized::as_("q8-new-persons").with_logging_disabled(),
        )
        .to_stream()
        .skip_tombstones();
    let sellers = super::auctions(&events)
        .map(|_, a| (a.seller, ()))
        .group_by_key_with(Grouped::with(Serdes::i64(), Serdes::unit()))
        .windowed_by(windows)
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_("q8-sellers").with_logging_disabled())
        .to_stream()
        .skip_tombstones();
    persons.join(
        &sellers,
        |name: &String, _: &i64| name.clone(),
        JoinWindows::of_time_difference_with_no_grace(super::WINDOW),
        StreamJoined::with(
            windows.windowed_serde(Serdes::i64()),
            Serdes::string(),
            Serdes::i64(),
        )
        .with_store_name("q8-join")
        .with_logging_disabled(),
    )
}
