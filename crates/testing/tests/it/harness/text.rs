//! The text topics most scenario tables use: a source grouping `String`
//! keys and values by key, and sinks writing a table's updates with
//! `String` keys (a window rendered `[key@start/end]`, as Kafka Streams'
//! `Windowed::toString`) and nullable `String` values.

use stoatflow_streams::{
    Consumed, Grouped, KGroupedStream, KStream, Produced, Serdes, StreamsBuilder, Windowed,
};

/// `topic` read with `String` keys and values, grouped by key.
pub fn grouped_text(b: &mut StreamsBuilder, topic: &str) -> KGroupedStream<String, String> {
    b.stream(topic, Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key_with(Grouped::with(Serdes::string(), Serdes::string()))
}

/// Writes a windowed table's updates (tombstones included) to `topic`.
pub fn to_topic_windowed<V: Clone + ToString + Send + Sync + 'static>(
    s: KStream<Windowed<String>, Option<V>>,
    topic: &str,
) {
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
