//! The text topics most scenario tables use: a source grouping `String`
//! keys and values by key (or `i32` keys, whose big-endian bytes do not sort
//! as the numbers do), and sinks writing a table's updates with `String`
//! keys (a window rendered `[key@start/end]`, as Kafka Streams'
//! `Windowed::toString`) and nullable `String` values.

use std::fmt::Display;

use stoatflow_streams::{
    Consumed, Grouped, KGroupedStream, KStream, Produced, Serdes, StreamsBuilder, Windowed,
};

/// `topic` read with `String` keys and values, grouped by key.
pub fn grouped_text(b: &mut StreamsBuilder, topic: &str) -> KGroupedStream<String, String> {
    b.stream(topic, Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key_with(Grouped::with(Serdes::string(), Serdes::string()))
}

/// `topic` read with `i32` keys and `String` values, grouped by key.
pub fn grouped_ints(b: &mut StreamsBuilder, topic: &str) -> KGroupedStream<i32, String> {
    b.stream(topic, Consumed::with(Serdes::i32(), Serdes::string()))
        .group_by_key_with(Grouped::with(Serdes::i32(), Serdes::string()))
}

/// Writes a windowed table's updates (tombstones included) to `topic`.
pub fn to_topic_windowed<K, V>(s: KStream<Windowed<K>, Option<V>>, topic: &str)
where
    K: Clone + Display + Send + Sync + 'static,
    V: Clone + ToString + Send + Sync + 'static,
{
    s.map(|k, v: Option<V>| {
        (
            format!("[{}@{}/{}]", k.key, k.window.start, k.window.end),
            v.map(|v| v.to_string()),
        )
    })
    .to(
        topic,
        Produced::with(Serdes::string(), Serdes::nullable(Serdes::string())),
    );
}

/// Writes a table's updates keyed by string to `topic`.
pub fn to_topic<V: Clone + ToString + Send + Sync + 'static>(
    s: KStream<String, Option<V>>,
    topic: &str,
) {
    s.map(|k, v: Option<V>| (k, v.map(|v| v.to_string()))).to(
        topic,
        Produced::with(Serdes::string(), Serdes::nullable(Serdes::string())),
    );
}
