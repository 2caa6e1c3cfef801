//! A consumer group whose rebalances a test scripts: each member's events,
//! in order, handed to the runtime through the hooked log's group hook, and
//! what describing the group answers.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stoatflow_log::{EmbeddedLog, GroupEvent, GroupMember, LogError, MemberAssignment};

use crate::hooked_log::{HookedLog, Hooks};
use crate::support::create_topics;

/// An in-memory log with the input and output topics, its group scripted:
/// (the log, the script, the log as the runtime sees it).
pub fn scripted_log() -> (Arc<EmbeddedLog>, Arc<ScriptedGroup>, Arc<HookedLog<Script>>) {
    let inner = Arc::new(EmbeddedLog::in_memory());
    let group = Arc::new(ScriptedGroup::default());
    let log = Arc::new(HookedLog {
        inner: inner.clone(),
        hooks: Arc::new(Script(group.clone())),
    });
    create_topics(&*log);
    (inner, group, log)
}

/// A consumer group whose rebalances the test scripts: each member's
/// events, in order.
#[derive(Debug, Default)]
pub struct ScriptedGroup {
    events: Mutex<HashMap<String, VecDeque<GroupEvent>>>,
    /// What describing the group answers (`None`: it cannot be described).
    description: Mutex<Option<Vec<MemberAssignment>>>,
    /// Per member, how many times it released what was taken back.
    released: Mutex<HashMap<String, usize>>,
}

impl ScriptedGroup {
    /// From now on, describing the group answers `members`.
    pub fn describe(&self, members: Vec<MemberAssignment>) {
        *self.description.lock().unwrap() = Some(members);
    }

    /// How many times `member` released what the group took back.
    pub fn released(&self, member: &str) -> usize {
        self.released
            .lock()
            .unwrap()
            .get(member)
            .copied()
            .unwrap_or(0)
    }

    pub fn push(&self, member: &str, event: GroupEvent) {
        self.events
            .lock()
            .unwrap()
            .entry(member.to_owned())
            .or_default()
            .push_back(event);
    }
}

#[derive(Debug)]
struct ScriptedMember {
    group: Arc<ScriptedGroup>,
    name: String,
}

impl GroupMember for ScriptedMember {
    fn poll(&mut self, max_wait: Duration) -> Result<Option<GroupEvent>, LogError> {
        let next = self
            .group
            .events
            .lock()
            .unwrap()
            .get_mut(&self.name)
            .and_then(VecDeque::pop_front);
        if next.is_none() {
            std::thread::sleep(max_wait.min(Duration::from_millis(5)));
        }
        Ok(next)
    }

    fn release(&mut self) -> Result<(), LogError> {
        *self
            .group
            .released
            .lock()
            .unwrap()
            .entry(self.name.clone())
            .or_default() += 1;
        Ok(())
    }

    fn describe_group(&self) -> Option<Result<Vec<MemberAssignment>, LogError>> {
        self.group.description.lock().unwrap().clone().map(Ok)
    }
}

/// The hooks handed to the log: the shared script behind an `Arc`.
#[derive(Debug)]
pub struct Script(pub Arc<ScriptedGroup>);

impl Hooks for Script {
    fn join_group(&self, _group: &str, member: &str) -> Option<Box<dyn GroupMember>> {
        Some(Box::new(ScriptedMember {
            group: self.0.clone(),
            name: member.to_owned(),
        }))
    }
}
