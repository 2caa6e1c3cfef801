//! Sinks that write a table's updates to the text topics scenario tables
//! read: `String` keys (a window rendered `[key@start/end]`, as Kafka
//! Streams' `Windowed::toString`) and nullable `String` values.

use stoatflow_streams::{KStream, Produced, Serdes, Windowed};

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
