//! Windowed-key serdes, byte-compatible with Kafka Streams'
//! `TimeWindowedSerde` (`[key][start: i64 BE]`) and `SessionWindowedSerde`
//! (`[key][end: i64 BE][start: i64 BE]`). Sliding windows use the
//! time-windowed layout with the time difference as the size, as Kafka
//! Streams does: a sliding window is `[start, start + D]`, so that is its
//! real end (`SlidingWindows::windowed_serde` takes it from the windows).

use crate::record::{Window, Windowed};

use super::{Serde, SerdeError, SerdeRef, malformed};

/// Time-windowed keys; the window size restores the end on read
/// (Kafka Streams' `TimeWindowedDeserializer` needs it too).
#[derive(Clone)]
pub struct TimeWindowedSerde<K> {
    inner: SerdeRef<K>,
    window_size_ms: i64,
    name: String,
}

impl<K> TimeWindowedSerde<K> {
    /// Wraps the key serde.
    pub fn new(inner: SerdeRef<K>, window_size_ms: i64) -> Self {
        let name = format!("time-windowed({})", inner.name());
        TimeWindowedSerde {
            inner,
            window_size_ms,
            name,
        }
    }
}

impl<K> Serde<Windowed<K>> for TimeWindowedSerde<K> {
    fn name(&self) -> &str {
        &self.name
    }
    fn serialize(&self, topic: &str, v: &Windowed<K>, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        self.inner.serialize(topic, &v.key, out)?;
        out.extend_from_slice(&v.window.start.to_be_bytes());
        Ok(())
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<Windowed<K>, SerdeError> {
        if b.len() < 8 {
            return Err(malformed(
                &self.name,
                topic,
                b.len(),
                "shorter than the 8-byte window start",
            ));
        }
        let (k, s) = b.split_at(b.len() - 8);
        let start = i64::from_be_bytes(s.try_into().expect("split at 8"));
        let end = start.saturating_add(self.window_size_ms);
        Ok(Windowed::new(
            self.inner.deserialize(topic, k)?,
            Window::new(start, end),
        ))
    }
}

/// Session-windowed keys.
#[derive(Clone)]
pub struct SessionWindowedSerde<K> {
    inner: SerdeRef<K>,
    name: String,
}

impl<K> SessionWindowedSerde<K> {
    /// Wraps the key serde.
    pub fn new(inner: SerdeRef<K>) -> Self {
        let name = format!("session-windowed({})", inner.name());
        SessionWindowedSerde { inner, name }
    }
}

impl<K> Serde<Windowed<K>> for SessionWindowedSerde<K> {
    fn name(&self) -> &str {
        &self.name
    }
    fn serialize(&self, topic: &str, v: &Windowed<K>, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        self.inner.serialize(topic, &v.key, out)?;
        out.extend_from_slice(&v.window.end.to_be_bytes());
        out.extend_from_slice(&v.window.start.to_be_bytes());
        Ok(())
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<Windowed<K>, SerdeError> {
        if b.len() < 16 {
            return Err(malformed(
                &self.name,
                topic,
                b.len(),
                "shorter than the 16-byte session bounds",
            ));
        }
        let (k, rest) = b.split_at(b.len() - 16);
        let end = i64::from_be_bytes(rest[..8].try_into().expect("8 bytes"));
        let start = i64::from_be_bytes(rest[8..].try_into().expect("8 bytes"));
        Ok(Windowed::new(
            self.inner.deserialize(topic, k)?,
            Window::new(start, end),
        ))
    }
}

impl<T> std::fmt::Debug for TimeWindowedSerde<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TimeWindowedSerde")
    }
}

impl<T> std::fmt::Debug for SessionWindowedSerde<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionWindowedSerde")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::serde::StringSerde;

    #[test]
    fn time_windowed_layout_is_key_then_start() {
        let s = TimeWindowedSerde::new(Arc::new(StringSerde), 10);
        let mut out = Vec::new();
        s.serialize(
            "t",
            &Windowed::new("k".to_string(), Window::new(5, 15)),
            &mut out,
        )
        .unwrap();
        assert_eq!(out, [b'k', 0, 0, 0, 0, 0, 0, 0, 5]);
        assert_eq!(s.deserialize("t", &out).unwrap().window, Window::new(5, 15));
    }

    #[test]
    fn session_windowed_layout_is_key_end_start() {
        let s = SessionWindowedSerde::new(Arc::new(StringSerde));
        let mut out = Vec::new();
        s.serialize(
            "t",
            &Windowed::new("k".to_string(), Window::new(5, 9)),
            &mut out,
        )
        .unwrap();
        assert_eq!(out, [b'k', 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 5]);
        assert_eq!(s.deserialize("t", &out).unwrap().window, Window::new(5, 9));
        assert!(
            s.deserialize("t", &[1, 2])
                .unwrap_err()
                .to_string()
                .contains("session-windowed(string)")
        );
    }
}
