//! What a group of instances went through, for a failure message: every
//! state change of each instance with its time since the recording began.
//! A wait that gives up prints it, so a group that never settles says
//! whether its members were stuck in one state or kept rebalancing.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use stoatflow_kafka::KafkaLog;
use stoatflow_runtime::StreamsApp;

/// The state changes of the instances it is attached to, in order.
#[derive(Debug, Clone)]
pub(crate) struct History {
    began: Instant,
    changes: Arc<Mutex<Vec<String>>>,
}

impl History {
    pub(crate) fn new() -> Self {
        History {
            began: Instant::now(),
            changes: Arc::default(),
        }
    }

    /// Records `app`'s state changes under `name` from now on.
    pub(crate) fn attach(&self, name: &str, app: &StreamsApp<KafkaLog>) {
        let (began, changes, name) = (self.began, self.changes.clone(), name.to_owned());
        app.set_state_listener(move |new, old| {
            let line = format!(
                "{:>7.2} s {name}: {old} -> {new}",
                began.elapsed().as_secs_f64()
            );
            changes.lock().expect("history lock").push(line);
        });
    }

    /// The changes so far, one a line.
    pub(crate) fn render(&self) -> String {
        self.changes.lock().expect("history lock").join("\n")
    }
}
