//! Scheduled sources in the DSL: [`Schedule`] and
//! [`StreamsBuilder::scheduled_source`]. A STREAM_TIME schedule is driven by
//! the watermark, so it is refused beside a `no_watermarks()` source, under
//! DISABLED coordination or with no source topic (docs/validation.md#refusals); wall-clock and
//! cron schedules run on the task's wall-clock tick.
//!
//! This module wires the node; what it does is `processors::scheduled_source`.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use crate::dsl::builder::StreamsBuilder;
use crate::dsl::kstream::KStream;
use crate::processors::scheduled_source::{Schedule, ScheduledSource};
use crate::topology::graph::{Downstream, Instantiation, NodeDef, NodeKind, PortHandle};

impl StreamsBuilder {
    /// A source node named `name` that emits `generator(fire_time)` on
    /// `schedule`, each record stamped with the time it fires at.
    pub fn scheduled_source<K, V>(
        &mut self,
        name: &str,
        schedule: Schedule,
        generator: impl Fn(i64) -> Vec<(K, V)> + Send + Sync + 'static,
    ) -> KStream<K, V>
    where
        K: Clone + 'static,
        V: Clone + 'static,
    {
        let generator: Arc<dyn Fn(i64) -> Vec<(K, V)> + Send + Sync> = Arc::new(generator);
        let watermark_driven =
            matches!(schedule, Schedule::StreamTime(_)).then_some("STREAM_TIME scheduled source");
        let factory = Arc::new(move |cx: &mut Instantiation, ch: Vec<Box<dyn Any>>| {
            let op = Rc::new(RefCell::new(ScheduledSource {
                schedule: schedule.clone(),
                generator: generator.clone(),
                next: None,
                down: Downstream::<K, V>::from_children(ch),
            }));
            cx.add_time_op(op);
            PortHandle::none()
        });
        let id = self.graph.borrow_mut().add(NodeDef {
            name: name.to_owned(),
            kind: NodeKind::Processor,
            parents: vec![],
            stores: vec![],
            watermark_driven,
            internal: false,
            factory,
        });
        KStream::new(self.graph.clone(), id, None, None)
    }
}
