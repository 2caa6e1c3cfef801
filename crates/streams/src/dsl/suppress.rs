//! [`Suppressed`] and [`BufferConfig`]: the three suppress triggers
//! (docs/emission.md#suppress), and `KTable::suppress`.
//!
//! - `until_window_closes(config)`: one final result per window, released
//!   when the committed frontier reaches the window's close (the same close
//!   and the same inclusive test as the aggregation's late rule,
//!   docs/late.md#late-rule).
//!   The close is learned at build time from the windowed aggregation
//!   upstream. Tombstones are not released (a final result never is one).
//! - `until_time_limit(d, config)`: a key's updates are held until the
//!   frontier reaches the time of its first buffered update plus `d`.
//! - `until_barrier()`: holds updates within one epoch and releases at most
//!   one record per key at the commit barrier; no store, never evicts.
//!
//! The two frontier-driven buffers are backed by a changelogged store
//! (`<name>-store`, or `KTABLE-SUPPRESS-STATE-STORE-<n>`). Released records
//! keep the latest update's timestamp and headers and leave in buffer-time,
//! then key, order.
//!
//! This module owns the settings and the graph wiring; the operators are
//! `processors::suppress_time` and `processors::suppress_barrier`.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use stoatflow_state::{InMemoryKeyValueStore, StoreConfig};
use stoatflow_time::duration_ms;

use crate::dsl::grouped::note_missing;
use crate::dsl::kstream::add_processor;
use crate::dsl::ktable::KTable;
use crate::error::TopologyError;
use crate::processors::suppress_barrier::BarrierSuppress;
use crate::processors::suppress_time::{
    BufferConfig, BufferFullStrategy, BufferedCodec, Sizer, TimeSuppress,
};
use crate::record::Windowed;
use crate::serde::{BoxedCodec, codec};
use crate::topology::graph::{Downstream, Factory, Instantiation, NodeId, PortHandle, SharedGraph};

pub(crate) enum Trigger<K> {
    WindowCloses { end_of: fn(&K) -> i64 },
    TimeLimit { limit_ms: i64 },
    Barrier,
}

/// How a table's updates are held back, as Kafka Streams' `Suppressed`.
pub struct Suppressed<K> {
    pub(crate) trigger: Trigger<K>,
    pub(crate) config: BufferConfig,
    pub(crate) name: Option<String>,
}

impl<K> std::fmt::Debug for Suppressed<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let trigger = match &self.trigger {
            Trigger::WindowCloses { .. } => "until_window_closes".to_owned(),
            Trigger::TimeLimit { limit_ms } => format!("until_time_limit({limit_ms} ms)"),
            Trigger::Barrier => "until_barrier".to_owned(),
        };
        f.debug_struct("Suppressed")
            .field("trigger", &trigger)
            .field("config", &self.config)
            .field("name", &self.name)
            .finish()
    }
}

fn window_end<K>(k: &Windowed<K>) -> i64 {
    k.window.end
}

impl<K> Suppressed<Windowed<K>> {
    /// One final result per window, when the committed frontier reaches its
    /// close. The buffer must be strict (an eager one would emit non-final
    /// results; the build refuses it).
    pub fn until_window_closes(config: BufferConfig) -> Self {
        Suppressed {
            trigger: Trigger::WindowCloses {
                end_of: window_end::<K>,
            },
            config,
            name: None,
        }
    }
}

impl<K> Suppressed<K> {
    /// Holds each key's updates until the frontier reaches its first buffered
    /// update's time plus `limit`.
    pub fn until_time_limit(limit: Duration, config: BufferConfig) -> Self {
        Suppressed {
            trigger: Trigger::TimeLimit {
                limit_ms: duration_ms(limit),
            },
            config,
            name: None,
        }
    }

    /// Holds updates within one epoch; releases at most one per key at the
    /// commit barrier. Unbounded by design: it never evicts.
    pub fn until_barrier() -> Self {
        Suppressed {
            trigger: Trigger::Barrier,
            config: BufferConfig::unbounded(),
            name: None,
        }
    }

    /// Names the suppress node; its buffer store is `<name>-store`.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// The close offset (`close − window.end`) of the windowed aggregation at
/// or above `node`, following first parents as Kafka Streams' grace search does.
fn close_offset_above(graph: &SharedGraph, mut node: NodeId) -> Option<i64> {
    let g = graph.borrow();
    loop {
        if let Some(&offset) = g.window_close_offsets.get(&node) {
            return Some(offset);
        }
        node = *g.nodes[node].parents.first()?;
    }
}

/// A buffer's time per key and update.
type BufferTime<K> = Arc<dyn Fn(&K, i64) -> i64 + Send + Sync>;

/// When a frontier-driven buffer releases a key: once the frontier reaches its buffer time
/// plus the delay.
struct Release<K> {
    buffer_time: BufferTime<K>,
    delay_ms: i64,
    /// Only final results leave (tombstones are not released).
    final_results: bool,
}

impl<K, V> KTable<K, V>
where
    K: Ord + Clone + std::fmt::Debug + 'static,
    V: Clone + 'static,
{
    /// Holds back updates per `suppressed` (docs/emission.md#suppress).
    pub fn suppress(&self, suppressed: Suppressed<K>) -> KTable<K, V> {
        let graph = self.graph.clone();
        let Suppressed {
            trigger,
            config,
            name,
        } = suppressed;
        let release = match trigger {
            Trigger::Barrier => return self.suppress_until_barrier(),
            Trigger::TimeLimit { limit_ms } => Release {
                buffer_time: Arc::new(|_: &K, ts: i64| ts),
                delay_ms: limit_ms,
                final_results: false,
            },
            Trigger::WindowCloses { end_of } => self.window_close_release(end_of, &config, &name),
        };
        let store = match &name {
            Some(n) => format!("{n}-store"),
            None => graph.borrow_mut().next_name("KTABLE-SUPPRESS-STATE-STORE"),
        };
        self.check_buffer_serdes(&store, &config);
        let (id, _) = add_processor(
            &graph,
            "KTABLE-SUPPRESS",
            vec![self.node],
            vec![store.clone()],
            Some("suppress"),
            self.time_suppress_factory(store, release, config),
        );
        KTable::new(
            graph,
            id,
            self.key_serde.clone(),
            self.value_serde.clone(),
            None,
        )
    }

    /// When `until_window_closes` releases: at the close of the windowed aggregation upstream.
    /// Records a topology error when there is none, or when the buffer may emit early.
    fn window_close_release(
        &self,
        end_of: fn(&K) -> i64,
        config: &BufferConfig,
        name: &Option<String>,
    ) -> Release<K> {
        let graph = &self.graph;
        let what = name.clone().unwrap_or_else(|| "KTABLE-SUPPRESS".into());
        let offset = close_offset_above(graph, self.node).unwrap_or_else(|| {
            graph
                .borrow_mut()
                .errors
                .push(TopologyError::InvalidArgument {
                    node: what.clone(),
                    reason: "suppress(until_window_closes) needs a windowed aggregation upstream"
                        .into(),
                });
            0
        });
        if config.when_full == BufferFullStrategy::EmitEarly
            && (config.max_records.is_some() || config.max_bytes.is_some())
        {
            graph
                .borrow_mut()
                .errors
                .push(TopologyError::InvalidArgument {
                    node: what,
                    reason: "until_window_closes needs a strict buffer (unbounded or shut_down_when_full): emitting early would emit non-final results".into(),
                });
        }
        Release {
            buffer_time: Arc::new(move |k: &K, _| end_of(k)),
            delay_ms: offset,
            final_results: true,
        }
    }

    /// Notes the buffer store's missing serdes, and records a topology error when a buffer
    /// bounded in bytes cannot size its records.
    fn check_buffer_serdes(&self, store: &str, config: &BufferConfig) {
        let graph = &self.graph;
        note_missing(graph, store, true, &self.key_serde, &self.value_serde);
        if config.max_bytes.is_some() && (self.key_serde.is_none() || self.value_serde.is_none()) {
            graph
                .borrow_mut()
                .errors
                .push(TopologyError::InvalidArgument {
                    node: store.to_owned(),
                    reason: "a suppress buffer bounded in bytes needs key and value serdes to size its records".into(),
                });
        }
    }

    /// The factory of the frontier-driven suppress node: registers its buffer store and the
    /// operator, which the frontier drives.
    fn time_suppress_factory(
        &self,
        store_name: String,
        release: Release<K>,
        config: BufferConfig,
    ) -> Factory {
        let (ks, vs) = (self.key_serde.clone(), self.value_serde.clone());
        Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
            let config_s = StoreConfig::new(store_name.clone())
                .with_changelog_enabled(cx.config.changelog_enabled);
            let kv = InMemoryKeyValueStore::new(
                config_s,
                BoxedCodec(codec(&ks, &store_name)),
                BufferedCodec::new(codec(&vs, &store_name)),
            );
            let kv = Rc::new(RefCell::new(kv));
            cx.add_store(&store_name, kv.clone());
            let sizer = config.max_bytes.is_some().then(|| {
                Sizer::new(
                    codec(&ks, &store_name),
                    BufferedCodec::new(codec(&vs, &store_name)),
                )
            });
            let op = Rc::new(RefCell::new(TimeSuppress::new(
                store_name.clone(),
                release.buffer_time.clone(),
                release.delay_ms,
                config,
                release.final_results,
                kv,
                sizer,
                Downstream::from_children(ch),
            )));
            cx.add_frontier_op(op.clone());
            let port: crate::topology::graph::Port<K, Option<V>> = op;
            PortHandle::of(port)
        })
    }

    fn suppress_until_barrier(&self) -> KTable<K, V> {
        let (id, _) = add_processor(
            &self.graph,
            "KTABLE-SUPPRESS",
            vec![self.node],
            vec![],
            None,
            Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
                let op = Rc::new(RefCell::new(BarrierSuppress::new(
                    Downstream::from_children(ch),
                )));
                cx.add_frontier_op(op.clone());
                let port: crate::topology::graph::Port<K, Option<V>> = op;
                PortHandle::of(port)
            }),
        );
        KTable::new(
            self.graph.clone(),
            id,
            self.key_serde.clone(),
            self.value_serde.clone(),
            None,
        )
    }
}
