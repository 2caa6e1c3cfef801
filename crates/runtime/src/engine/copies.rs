//! An engine's standby copies and the group view they are placed from
//! (docs/scale-out.md#standbys): placed when the engine starts, and placed
//! again when an incremental rebalance changes the group but not this
//! engine's tasks (docs/scale-out.md#incremental-rebalancing), so the
//! copies follow the group without a rebuild.
//!
//! Owns: the standby thread of the running engine, the tasks it copies,
//! and what placing them needs. Publishes the group view (`Shared::group`)
//! and the assignment (`Shared::assignment`). Knows nothing of lanes, the
//! tracker or commits; how a copy is kept is `restore::standby`'s.

use std::collections::BTreeSet;
use std::sync::Arc;

use stoatflow_log::Log;
use stoatflow_streams::{StreamsConfig, Topology};

use crate::config::RuntimeConfig;
use crate::engine::Assignment;
use crate::engine::Shared;
use crate::engine::assignment::Membership;
use crate::engine::restore::standby::{self, Standby};
use crate::error::RuntimeError;
use crate::task_id::TaskId;

/// The standby copies of an engine, and what placing them again needs.
pub(crate) struct Copies<L: Log> {
    config: Arc<RuntimeConfig>,
    topology: Arc<Topology>,
    streams_config: Arc<StreamsConfig>,
    log: Arc<L>,
    shared: Arc<Shared>,
    /// Every task of the topology.
    all_tasks: Vec<TaskId>,
    /// The tasks this engine owns.
    owned: BTreeSet<TaskId>,
    /// The tasks copied, and the thread copying them (none when no state
    /// directory keeps copies, or there is nothing to copy).
    placed: BTreeSet<TaskId>,
    standby: Option<Standby>,
}

impl<L: Log + 'static> Copies<L> {
    /// No copies yet, of an engine of `topology` on `log`.
    pub(crate) fn new(
        config: &Arc<RuntimeConfig>,
        topology: &Arc<Topology>,
        streams_config: &Arc<StreamsConfig>,
        log: &Arc<L>,
        shared: &Arc<Shared>,
    ) -> Self {
        Copies {
            config: config.clone(),
            topology: topology.clone(),
            streams_config: streams_config.clone(),
            log: log.clone(),
            shared: shared.clone(),
            all_tasks: Vec::new(),
            owned: BTreeSet::new(),
            placed: BTreeSet::new(),
            standby: None,
        }
    }

    /// Places the copies of the tasks among `all_tasks` owned elsewhere
    /// than in `owned`, and starts them.
    pub(crate) fn start(
        mut self,
        all_tasks: Vec<TaskId>,
        owned: &BTreeSet<TaskId>,
        membership: &Membership,
    ) -> Result<Self, RuntimeError> {
        self.all_tasks = all_tasks;
        self.owned = owned.clone();
        let placed = self.place(membership);
        self.run(placed)?;
        Ok(self)
    }

    /// The group changed without changing this engine's tasks: the group
    /// view is read again, and the copies, if their placement changed, are
    /// stopped (checkpointed where they got to) and started on the new one.
    pub(crate) fn regroup(&mut self, membership: &Membership) -> Result<(), RuntimeError> {
        let placed = self.place(membership);
        if placed == self.placed {
            return Ok(());
        }
        tracing::info!(from = ?self.placed, to = ?placed, "standby copies placed again");
        if let Some(standby) = self.standby.take() {
            standby.stop(true);
        }
        self.run(placed)
    }

    /// Stops the copies: checkpointed where they got to, unless halted.
    pub(crate) fn stop(&mut self, checkpoint: bool) {
        if let Some(standby) = self.standby.take() {
            standby.stop(checkpoint);
        }
    }

    /// The group view (published) and the tasks to copy by it.
    fn place(&self, membership: &Membership) -> BTreeSet<TaskId> {
        let me = self.config.transactional_id();
        // Described for the copies' placement, and for key metadata when the
        // instance advertises where it serves queries.
        let described = match (
            self.config.standby_replicas,
            &self.config.application_server,
        ) {
            (0, None) => None,
            _ => membership.group_view(&me),
        };
        self.shared
            .group
            .lock()
            .expect("group lock")
            .clone_from(&described);
        let group = described.filter(|_| self.config.standby_replicas > 0);
        standby::standby_tasks(
            self.config.standby_replicas,
            self.all_tasks.iter().copied(),
            &self.owned,
            &me,
            group.as_ref(),
        )
    }

    /// Starts copying `placed` and publishes the assignment.
    fn run(&mut self, placed: BTreeSet<TaskId>) -> Result<(), RuntimeError> {
        self.standby = Standby::start_for(
            placed.clone(),
            &self.config,
            &self.topology,
            &self.streams_config,
            &self.log,
            &self.shared,
        )?;
        *self.shared.assignment.lock().expect("assignment lock") = Assignment {
            active: self.owned.iter().copied().collect(),
            standby: match self.standby {
                Some(_) => placed.iter().copied().collect(),
                None => Vec::new(),
            },
        };
        self.placed = placed;
        Ok(())
    }
}
