//! Join settings, named as in Kafka Streams: [`JoinWindows`] (the window of a
//! stream-stream join), [`StreamJoined`] (its serdes and store names) and
//! [`Joined`] (serdes of a stream-table join).
//!
//! This module owns the join-window arithmetic, including the close of a
//! null side (docs/late.md#closes); it knows nothing of stores or of how records reach
//! a join.

use std::sync::Arc;
use std::time::Duration;

use stoatflow_time::duration_ms;

use crate::error::TopologyError;
use crate::serde::{Serde, SerdeRef};
use crate::topology::BytesStoreSupplier;

/// The window of a stream-stream join: a left record at `t` joins right
/// records in `[t - before, t + after]`, both edges inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinWindows {
    before_ms: i64,
    after_ms: i64,
    grace_ms: i64,
}

impl JoinWindows {
    /// Records at most `difference` apart join; unmatched null sides wait
    /// `grace` more before they are final.
    pub fn of_time_difference_and_grace(difference: Duration, grace: Duration) -> Self {
        let d = duration_ms(difference);
        JoinWindows {
            before_ms: d,
            after_ms: d,
            grace_ms: duration_ms(grace),
        }
    }

    /// Records at most `difference` apart join; no grace.
    pub fn of_time_difference_with_no_grace(difference: Duration) -> Self {
        Self::of_time_difference_and_grace(difference, Duration::ZERO)
    }

    /// How far before a left record a right record may be.
    #[must_use]
    pub fn before(mut self, before: Duration) -> Self {
        self.before_ms = duration_ms(before);
        self
    }

    /// How far after a left record a right record may be.
    #[must_use]
    pub fn after(mut self, after: Duration) -> Self {
        self.after_ms = duration_ms(after);
        self
    }

    /// `before`, ms.
    pub fn before_ms(&self) -> i64 {
        self.before_ms
    }

    /// `after`, ms.
    pub fn after_ms(&self) -> i64 {
        self.after_ms
    }

    /// Grace, ms.
    pub fn grace_ms(&self) -> i64 {
        self.grace_ms
    }

    /// `before + after`, as Kafka Streams' `JoinWindows.size()`.
    pub fn size_ms(&self) -> i64 {
        self.before_ms.saturating_add(self.after_ms)
    }

    /// Retention of the join stores: `size + grace` (Kafka Streams).
    pub fn retention_ms(&self) -> i64 {
        self.size_ms().saturating_add(self.grace_ms)
    }

    /// The close of the null side of a left record at `ts`:
    /// `ts + after + 1 + grace` (docs/late.md#closes).
    pub fn left_close(&self, ts: i64) -> i64 {
        ts.saturating_add(self.after_ms)
            .saturating_add(1)
            .saturating_add(self.grace_ms)
    }

    /// The close of the null side of a right record at `ts`:
    /// `ts + before + 1 + grace` (docs/late.md#closes).
    pub fn right_close(&self, ts: i64) -> i64 {
        ts.saturating_add(self.before_ms)
            .saturating_add(1)
            .saturating_add(self.grace_ms)
    }

    pub(crate) fn validate(&self, node: &str) -> Result<(), TopologyError> {
        if self.size_ms() < 0 {
            return Err(TopologyError::InvalidArgument {
                node: node.into(),
                reason: format!(
                    "join window before + after must be >= 0 ms, got {} + {}",
                    self.before_ms, self.after_ms
                ),
            });
        }
        Ok(())
    }
}

/// Serdes, store names and logging of a stream-stream join, as Kafka
/// Streams' `StreamJoined<K, V1, V2>`.
pub struct StreamJoined<K, V1, V2> {
    pub(crate) key_serde: Option<SerdeRef<K>>,
    pub(crate) value_serde: Option<SerdeRef<V1>>,
    pub(crate) other_value_serde: Option<SerdeRef<V2>>,
    pub(crate) store_name: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) logging: bool,
    pub(crate) this_store: Option<BytesStoreSupplier>,
    pub(crate) other_store: Option<BytesStoreSupplier>,
}

impl<K, V1, V2> Default for StreamJoined<K, V1, V2> {
    fn default() -> Self {
        StreamJoined {
            key_serde: None,
            value_serde: None,
            other_value_serde: None,
            store_name: None,
            name: None,
            logging: true,
            this_store: None,
            other_store: None,
        }
    }
}

impl<K: 'static, V1: 'static, V2: 'static> StreamJoined<K, V1, V2> {
    /// Serdes for the key and both values (the join stores' changelogs).
    pub fn with(
        key_serde: impl Serde<K> + 'static,
        value_serde: impl Serde<V1> + 'static,
        other_value_serde: impl Serde<V2> + 'static,
    ) -> Self {
        StreamJoined {
            key_serde: Some(Arc::new(key_serde)),
            value_serde: Some(Arc::new(value_serde)),
            other_value_serde: Some(Arc::new(other_value_serde)),
            ..Self::default()
        }
    }

    /// Prefix of the store names: `<name>-this-join-store`,
    /// `<name>-other-join-store`, `<name>-outer-shared-join-store`.
    #[must_use]
    pub fn with_store_name(mut self, name: impl Into<String>) -> Self {
        self.store_name = Some(name.into());
        self
    }

    /// Prefix of the processor names.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The window stores of this side and the other side, as Kafka Streams'
    /// `StreamJoined.with(thisStoreSupplier, otherStoreSupplier)`: their names and engines
    /// (`Stores::persistent_window_store(..)`, `Stores::in_memory_window_store(..)`). The
    /// shared store of an outer join takes this side's engine.
    #[must_use]
    pub fn with_store_suppliers(
        mut self,
        this_store: BytesStoreSupplier,
        other_store: BytesStoreSupplier,
    ) -> Self {
        self.this_store = Some(this_store);
        self.other_store = Some(other_store);
        self
    }

    /// No changelogs for the join stores.
    #[must_use]
    pub fn with_logging_disabled(mut self) -> Self {
        self.logging = false;
        self
    }
}

impl<K, V1, V2> std::fmt::Debug for StreamJoined<K, V1, V2> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamJoined")
            .field("store_name", &self.store_name)
            .field("logging", &self.logging)
            .finish()
    }
}

/// Serdes of a stream-table join, as Kafka Streams' `Joined<K, V, VT>`.
///
/// [`Joined::with_grace_period`] is stored and returned by
/// [`Joined::grace_period`] so ported code compiles and reads back what it
/// wrote, but it has **no effect** (docs/emission.md#joined-grace): a stream-table join has no
/// grace, and a stream-stream join takes its grace from [`JoinWindows`].
pub struct Joined<K, V, VT> {
    pub(crate) key_serde: Option<SerdeRef<K>>,
    pub(crate) value_serde: Option<SerdeRef<V>>,
    pub(crate) other_value_serde: Option<SerdeRef<VT>>,
    grace: Option<Duration>,
    pub(crate) name: Option<String>,
}

impl<K, V, VT> Default for Joined<K, V, VT> {
    fn default() -> Self {
        Joined {
            key_serde: None,
            value_serde: None,
            other_value_serde: None,
            grace: None,
            name: None,
        }
    }
}

impl<K: 'static, V: 'static, VT: 'static> Joined<K, V, VT> {
    /// Serdes for the key, the stream's value and the table's value.
    pub fn with(
        key_serde: impl Serde<K> + 'static,
        value_serde: impl Serde<V> + 'static,
        other_value_serde: impl Serde<VT> + 'static,
    ) -> Self {
        Joined {
            key_serde: Some(Arc::new(key_serde)),
            value_serde: Some(Arc::new(value_serde)),
            other_value_serde: Some(Arc::new(other_value_serde)),
            ..Self::default()
        }
    }

    /// Stored and returned, with no effect (see the type's docs).
    #[must_use]
    pub fn with_grace_period(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// What [`Joined::with_grace_period`] stored; it does not change the join.
    pub fn grace_period(&self) -> Option<Duration> {
        self.grace
    }

    /// Names the join processor.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

impl<K, V, VT> std::fmt::Debug for Joined<K, V, VT> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Joined")
            .field("grace", &self.grace)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_side_closes_one_past_the_inclusive_edge_plus_grace() {
        let w = JoinWindows::of_time_difference_and_grace(
            Duration::from_millis(100),
            Duration::from_millis(10),
        )
        .after(Duration::from_millis(50));
        assert_eq!(w.left_close(1000), 1000 + 50 + 1 + 10);
        assert_eq!(w.right_close(1000), 1000 + 100 + 1 + 10);
        assert_eq!(w.retention_ms(), 160);
    }

    #[test]
    fn grace_on_joined_is_kept_and_inert() {
        let j: Joined<String, i64, i64> =
            Joined::default().with_grace_period(Duration::from_secs(5));
        assert_eq!(j.grace_period(), Some(Duration::from_secs(5)));
    }
}
