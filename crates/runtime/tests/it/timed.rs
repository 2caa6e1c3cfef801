//! A Processor API topology whose output is made by timers only, for the
//! crash enumeration: per key and 5 s bucket of event time it counts the
//! records in a user store; the first record of a bucket arms an event-time
//! timer at the bucket's end and a wall-clock timer at the task's current
//! wall-clock time (due at the next tick). The event-time timer forwards
//! `key@bucket` with the bucket's count, the wall-clock timer
//! `key@bucket#first` with the value of the bucket's first record. Both are
//! deterministic whatever the timing, so a timer that fires twice or never
//! shows in the committed output.

use stoatflow_state::{AnyKeyValueStore, KeyValueStore, StateError};
use stoatflow_streams::{
    ProcessError, Processor, ProcessorContext, Produced, Record, Serdes, Stores, StreamsBuilder,
    Topology,
};

use crate::support::*;

/// The bucket of event time a timer closes.
pub(crate) const BUCKET_MS: i64 = 5_000;
const STORE: &str = "bucket-counts";

type Ctx<'a> = ProcessorContext<'a, String, i64>;
type Store = AnyKeyValueStore<String, i64>;

struct Timed;

fn state(e: StateError) -> ProcessError {
    ProcessError::State {
        store: STORE.into(),
        source: Box::new(e),
    }
}

fn store(ctx: &Ctx<'_>) -> std::rc::Rc<std::cell::RefCell<Store>> {
    ctx.key_value_store::<String, i64>(STORE)
        .expect("the store is connected")
}

/// The timer key of `key`'s bucket holding `ts`.
pub(crate) fn bucket_id(key: &str, ts: i64) -> String {
    format!("{key}@{}", ts - ts.rem_euclid(BUCKET_MS))
}

/// Takes `id`'s entry out of the store and forwards it as `(id, value)`.
fn fire(ctx: &mut Ctx<'_>, id: &str, ts: i64) -> Result<(), ProcessError> {
    let value = store(ctx)
        .borrow_mut()
        .delete(&id.to_owned(), ts)
        .map_err(state)?
        .expect("a timer fires only for a bucket it counts");
    ctx.forward(Record::new(id.to_owned(), value, ts))
}

impl Processor<String, i64, String, i64> for Timed {
    const EVENT_TIME_TIMERS: bool = true;
    const PROCESSING_TIME_TIMERS: bool = true;

    fn process(&mut self, ctx: &mut Ctx<'_>, r: Record<String, i64>) -> Result<(), ProcessError> {
        let id = bucket_id(&r.key, r.timestamp);
        let counts = store(ctx);
        let seen = counts.borrow().get(&id).map_err(state)?;
        counts
            .borrow_mut()
            .put(id.clone(), seen.unwrap_or(0) + 1, r.timestamp)
            .map_err(state)?;
        if seen.is_none() {
            let first = format!("{id}#first");
            counts
                .borrow_mut()
                .put(first.clone(), r.value, r.timestamp)
                .map_err(state)?;
            let end = r.timestamp - r.timestamp.rem_euclid(BUCKET_MS) + BUCKET_MS;
            ctx.register_event_time_timer(&id, end)?;
            let now = ctx.current_system_time_ms();
            ctx.register_processing_time_timer(&first, now)?;
        }
        Ok(())
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_>, key: &str, ts: i64) -> Result<(), ProcessError> {
        fire(ctx, key, ts)
    }

    fn on_processing_time_timer(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &str,
        ts: i64,
    ) -> Result<(), ProcessError> {
        fire(ctx, key, ts)
    }
}

/// The topology: [`INPUT`] through the timed processor to [`OUTPUT`].
pub(crate) fn timed_processor() -> Topology {
    let mut b = StreamsBuilder::new();
    b.add_state_store(Stores::key_value_store_builder(
        STORE,
        Serdes::string(),
        Serdes::i64(),
    ));
    source(&mut b, INPUT)
        .process(|| Timed, &[STORE])
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::i64()));
    b.build().unwrap()
}
