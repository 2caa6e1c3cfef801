//! The frontier-driven suppress buffer: `until_window_closes` and
//! `until_time_limit` (docs/emission.md#suppress).
//!
//! Each key holds one entry: the latest update's value (or tombstone),
//! timestamp and headers, under the buffer time of the key's *first*
//! buffered update (Kafka Streams' non-resetting rule). An entry is released
//! when its buffer time plus the delay is at or before the committed
//! frontier: for `until_window_closes` the buffer time is the window's end
//! and the delay `close − end`, so release happens exactly at the close the
//! aggregation's late rule uses (docs/late.md#suppress); for `until_time_limit` the
//! buffer time is the record's time and the delay the limit. Releases leave
//! in buffer-time, then key, order. Final-result buffers do not release
//! tombstones.
//!
//! The entries live in a changelogged key-value store, so the buffer
//! survives restarts; the order index and the byte count are rebuilt from
//! the store on first use. When a bound is exceeded an eager buffer emits
//! its oldest entries early (counted in `suppress_early_emits`) and a strict
//! one fails with `ProcessError::BufferFull`, naming the store and the bound.
//! The bounds are this buffer's [`BufferConfig`] (the DSL's `Suppressed` carries one).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;

use stoatflow_state::{Codec, CodecError, InMemoryKeyValueStore, KeyValueStore};
use stoatflow_time::Watermark;

use crate::error::ProcessError;
use crate::record::{Headers, Record};
use crate::topology::context::{Emitted, TaskContext};
use crate::topology::graph::{Downstream, FrontierOperator, Push};

/// One buffered key: its first buffer time and its latest update.
#[derive(Debug, Clone, PartialEq)]
pub struct Buffered<V> {
    buffer_time: i64,
    value: Option<V>,
    timestamp: i64,
    headers: Headers,
}

/// Changelog layout of a buffered entry: `[buffer time i64 BE][timestamp
/// i64 BE][1 + u32 len + value | 0][u32 header count]([u32 len][key][1 +
/// u32 len + value | 0])*`.
pub(crate) struct BufferedCodec<V> {
    value: Box<dyn Codec<V>>,
}

impl<V> BufferedCodec<V> {
    pub(crate) fn new(value: Box<dyn Codec<V>>) -> Self {
        BufferedCodec { value }
    }
}

impl<V> std::fmt::Debug for BufferedCodec<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BufferedCodec")
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&u32::try_from(b.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(b);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.0.len() < n {
            return Err(CodecError::new(format!(
                "truncated suppress buffer entry: need {n} more bytes, have {}",
                self.0.len()
            )));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn i64(&mut self) -> Result<i64, CodecError> {
        Ok(i64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn u32(&mut self) -> Result<u32, CodecError> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn bytes(&mut self) -> Result<&'a [u8], CodecError> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn flag(&mut self) -> Result<bool, CodecError> {
        Ok(self.take(1)?[0] != 0)
    }
}

impl<V> Codec<Buffered<V>> for BufferedCodec<V> {
    fn encode(&self, b: &Buffered<V>, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(&b.buffer_time.to_be_bytes());
        out.extend_from_slice(&b.timestamp.to_be_bytes());
        match &b.value {
            Some(v) => {
                out.push(1);
                put_bytes(out, &self.value.to_bytes(v)?);
            }
            None => out.push(0),
        }
        let headers: Vec<_> = b.headers.iter().collect();
        out.extend_from_slice(
            &u32::try_from(headers.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes(),
        );
        for (k, v) in headers {
            put_bytes(out, k.as_bytes());
            match v {
                Some(v) => {
                    out.push(1);
                    put_bytes(out, v);
                }
                None => out.push(0),
            }
        }
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Buffered<V>, CodecError> {
        let mut r = Reader(bytes);
        let buffer_time = r.i64()?;
        let timestamp = r.i64()?;
        let value = if r.flag()? {
            Some(self.value.decode(r.bytes()?)?)
        } else {
            None
        };
        let n = r.u32()?;
        let mut pairs = Vec::new();
        for _ in 0..n {
            let k = String::from_utf8(r.bytes()?.to_vec())
                .map_err(|_| CodecError::new("suppress buffer header key is not UTF-8"))?;
            let v = if r.flag()? {
                Some(r.bytes()?.to_vec())
            } else {
                None
            };
            pairs.push((k, v));
        }
        Ok(Buffered {
            buffer_time,
            value,
            timestamp,
            headers: Headers::from_pairs(pairs),
        })
    }
}

/// Serialized size of a buffered entry (key plus entry), for byte bounds.
pub(crate) struct Sizer<K, V> {
    key: Box<dyn Codec<K>>,
    entry: BufferedCodec<V>,
}

impl<K, V> Sizer<K, V> {
    pub(crate) fn new(key: Box<dyn Codec<K>>, entry: BufferedCodec<V>) -> Self {
        Sizer { key, entry }
    }

    fn size(&self, key: &K, b: &Buffered<V>) -> Result<u64, CodecError> {
        let mut out = Vec::new();
        self.key.encode(key, &mut out)?;
        self.entry.encode(b, &mut out)?;
        Ok(out.len() as u64)
    }
}

pub(crate) type BufferStore<K, V> = InMemoryKeyValueStore<K, Buffered<V>>;

pub(crate) struct TimeSuppress<K, V> {
    store_name: String,
    buffer_time: Arc<dyn Fn(&K, i64) -> i64 + Send + Sync>,
    delay_ms: i64,
    config: BufferConfig,
    final_results: bool,
    store: Rc<RefCell<BufferStore<K, V>>>,
    sizer: Option<Sizer<K, V>>,
    index: BTreeSet<(i64, K)>,
    index_ready: bool,
    bytes: u64,
    frontier: Watermark,
    down: Downstream<K, Option<V>>,
}

impl<K, V> TimeSuppress<K, V>
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
{
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        store_name: String,
        buffer_time: Arc<dyn Fn(&K, i64) -> i64 + Send + Sync>,
        delay_ms: i64,
        config: BufferConfig,
        final_results: bool,
        store: Rc<RefCell<BufferStore<K, V>>>,
        sizer: Option<Sizer<K, V>>,
        down: Downstream<K, Option<V>>,
    ) -> Self {
        TimeSuppress {
            store_name,
            buffer_time,
            delay_ms,
            config,
            final_results,
            store,
            sizer,
            index: BTreeSet::new(),
            index_ready: false,
            bytes: 0,
            frontier: Watermark::MIN,
            down,
        }
    }

    fn state_err(&self, source: stoatflow_state::StateError) -> ProcessError {
        ProcessError::State {
            store: self.store_name.clone(),
            source: Box::new(source),
        }
    }

    /// The serialized size of an entry, for `max_bytes`.
    fn size(&self, key: &K, b: &Buffered<V>) -> Result<u64, ProcessError> {
        let Some(sizer) = &self.sizer else {
            return Ok(0);
        };
        sizer.size(key, b).map_err(|e| ProcessError::Processor {
            node: self.store_name.clone(),
            reason: format!("cannot size a buffered record for max_bytes: {e}"),
        })
    }

    /// Rebuilds the order index and byte count from the (restored) store.
    fn ensure_index(&mut self) -> Result<(), ProcessError> {
        if self.index_ready {
            return Ok(());
        }
        let all = self.store.borrow().all().map_err(|e| self.state_err(e))?;
        for (k, b) in all {
            self.bytes += self.size(&k, &b)?;
            self.index.insert((b.buffer_time, k));
        }
        self.index_ready = true;
        Ok(())
    }

    fn evict(&mut self, cx: &mut TaskContext, key: K) -> Result<(), ProcessError> {
        let entry = self
            .store
            .borrow_mut()
            .delete(&key, self.frontier.as_millis().max(0))
            .map_err(|e| self.state_err(e))?;
        let Some(entry) = entry else {
            return Ok(());
        };
        self.bytes = self.bytes.saturating_sub(self.size(&key, &entry)?);
        if entry.value.is_none() && self.final_results {
            return Ok(());
        }
        self.down.forward(
            cx,
            Record {
                key,
                value: entry.value,
                timestamp: entry.timestamp,
                headers: entry.headers,
            },
        )
    }

    /// Releases every entry whose buffer time plus delay is at or before the frontier.
    fn release_due(&mut self, cx: &mut TaskContext) -> Result<(), ProcessError> {
        while let Some((bt, _)) = self.index.first() {
            if !self.frontier.has_closed(bt.saturating_add(self.delay_ms)) {
                break;
            }
            let (bt, key) = self.index.pop_first().expect("checked non-empty");
            let emitted = Emitted {
                close: bt.saturating_add(self.delay_ms),
                start: bt,
            };
            cx.as_final(emitted, |cx| self.evict(cx, key))?;
        }
        Ok(())
    }

    fn enforce_bounds(&mut self, cx: &mut TaskContext) -> Result<(), ProcessError> {
        loop {
            let records = self.index.len() as u64;
            let over = match (self.config.max_records, self.config.max_bytes) {
                (Some(max), _) if records > max => {
                    format!("max_records = {max}, holding {records} records")
                }
                (_, Some(max)) if self.bytes > max => {
                    format!("max_bytes = {max}, holding {} bytes", self.bytes)
                }
                _ => return Ok(()),
            };
            match self.config.when_full {
                BufferFullStrategy::ShutDown => {
                    return Err(ProcessError::BufferFull {
                        store: self.store_name.clone(),
                        bound: over,
                    });
                }
                BufferFullStrategy::EmitEarly => {
                    let (_, key) = self.index.pop_first().expect("over a bound, so non-empty");
                    cx.metrics.suppress_early_emits += 1;
                    self.evict(cx, key)?;
                }
            }
        }
    }
}

impl<K, V> Push<K, Option<V>> for TimeSuppress<K, V>
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
{
    fn push(
        &mut self,
        cx: &mut TaskContext,
        rec: Record<K, Option<V>>,
    ) -> Result<(), ProcessError> {
        self.ensure_index()?;
        let old = self
            .store
            .borrow()
            .get(&rec.key)
            .map_err(|e| self.state_err(e))?;
        let buffer_time = match &old {
            Some(b) => b.buffer_time,
            None => (self.buffer_time)(&rec.key, rec.timestamp),
        };
        let entry = Buffered {
            buffer_time,
            value: rec.value,
            timestamp: rec.timestamp,
            headers: rec.headers,
        };
        if let Some(o) = &old {
            self.bytes = self.bytes.saturating_sub(self.size(&rec.key, o)?);
        }
        self.bytes += self.size(&rec.key, &entry)?;
        self.store
            .borrow_mut()
            .put(rec.key.clone(), entry, rec.timestamp)
            .map_err(|e| self.state_err(e))?;
        if old.is_none() {
            self.index.insert((buffer_time, rec.key));
        }
        self.release_due(cx)?;
        self.enforce_bounds(cx)
    }
}

impl<K, V> FrontierOperator for TimeSuppress<K, V>
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
{
    fn on_frontier(
        &mut self,
        cx: &mut TaskContext,
        frontier: Watermark,
    ) -> Result<(), ProcessError> {
        self.frontier.advance_to(frontier);
        self.ensure_index()?;
        self.release_due(cx)
    }
}

/// What a full buffer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferFullStrategy {
    /// Emit the oldest records early (counted in `suppress_early_emits`).
    EmitEarly,
    /// Stop the application with `ProcessError::BufferFull`.
    ShutDown,
}

/// Bounds of a suppress buffer: records and serialized bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferConfig {
    pub(crate) max_records: Option<u64>,
    pub(crate) max_bytes: Option<u64>,
    pub(crate) when_full: BufferFullStrategy,
}

impl BufferConfig {
    /// No bound (strict: it can never be full).
    pub fn unbounded() -> Self {
        BufferConfig {
            max_records: None,
            max_bytes: None,
            when_full: BufferFullStrategy::ShutDown,
        }
    }

    /// At most `n` records; emits early when full unless told to shut down.
    pub fn max_records(n: u64) -> Self {
        BufferConfig {
            max_records: Some(n),
            max_bytes: None,
            when_full: BufferFullStrategy::EmitEarly,
        }
    }

    /// At most `n` serialized bytes (keys, values, times and headers);
    /// emits early when full unless told to shut down.
    pub fn max_bytes(n: u64) -> Self {
        BufferConfig {
            max_records: None,
            max_bytes: Some(n),
            when_full: BufferFullStrategy::EmitEarly,
        }
    }

    /// Also bounds records.
    #[must_use]
    pub fn with_max_records(mut self, n: u64) -> Self {
        self.max_records = Some(n);
        self
    }

    /// Also bounds bytes.
    #[must_use]
    pub fn with_max_bytes(mut self, n: u64) -> Self {
        self.max_bytes = Some(n);
        self
    }

    /// Eager: when full, emit the oldest records early.
    #[must_use]
    pub fn emit_early_when_full(mut self) -> Self {
        self.when_full = BufferFullStrategy::EmitEarly;
        self
    }

    /// Strict: when full, stop the application with an error naming the
    /// buffer's store and the bound.
    #[must_use]
    pub fn shut_down_when_full(mut self) -> Self {
        self.when_full = BufferFullStrategy::ShutDown;
        self
    }

    /// What a full buffer does.
    pub fn when_full(&self) -> BufferFullStrategy {
        self.when_full
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stoatflow_state::I64Codec;

    #[test]
    fn buffered_entries_round_trip_with_headers_and_tombstones() {
        let codec = BufferedCodec::new(Box::new(I64Codec));
        let mut headers = Headers::empty();
        headers.add("h", Some(vec![1, 2]));
        headers.add("n", None);
        for value in [Some(7i64), None] {
            let b = Buffered {
                buffer_time: 3,
                value,
                timestamp: 9,
                headers: headers.clone(),
            };
            assert_eq!(codec.decode(&codec.to_bytes(&b).unwrap()).unwrap(), b);
        }
        assert!(codec.decode(&[0; 5]).is_err());
    }
}
