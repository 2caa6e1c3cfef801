//! [`KeyQueryMetadata`]: which instance owns a key's task and which keep
//! standby copies of it (Kafka Streams' `KeyQueryMetadata`), computed from
//! the group as the engine was built with it, the standby placement every
//! member computes alike, and the members' advertised endpoints.
//!
//! Owns the answer's types, [`MetadataError`] and the pure computation
//! ([`locate`]); knows nothing of the log, the endpoints topic or serdes.

use std::collections::BTreeMap;

use crate::engine::restore::placement::{GroupView, holders};
use crate::host_info::HostInfo;
use crate::task_id::TaskId;

/// One instance that holds a key's state: the active one or a standby.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceInfo {
    /// Its member name in the group (`<application.id>-<instance id>`).
    pub member: String,
    /// Its `application.server`; `None` when it advertises none (or its
    /// endpoint was not yet read).
    pub server: Option<HostInfo>,
    /// It is this instance.
    pub local: bool,
}

/// Where a key's state is: Kafka Streams' `KeyQueryMetadata`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyQueryMetadata {
    /// The instance owning the key's task: ask it.
    pub active: InstanceInfo,
    /// The instances keeping standby copies of the task (stale answers).
    pub standbys: Vec<InstanceInfo>,
    /// The key's partition of the store's source topic.
    pub partition: u32,
    /// The task holding the key.
    pub task: TaskId,
}

impl KeyQueryMetadata {
    /// The active instance's `application.server` (Kafka Streams'
    /// `activeHost`).
    pub fn active_host(&self) -> Option<&HostInfo> {
        self.active.server.as_ref()
    }

    /// The standby instances' `application.server`s that are known
    /// (Kafka Streams' `standbyHosts`).
    pub fn standby_hosts(&self) -> Vec<&HostInfo> {
        self.standbys
            .iter()
            .filter_map(|s| s.server.as_ref())
            .collect()
    }
}

/// Why a key's metadata could not be computed. Each names the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// No task of the topology holds a store of that name.
    #[error("no store '{store}' in the topology (stores: {known})")]
    UnknownStore {
        /// The store asked.
        store: String,
        /// The stores there are.
        known: String,
    },
    /// The key serde refused the key.
    #[error("store '{store}': the key cannot be encoded by serde {serde}: {reason}")]
    KeyEncoding {
        /// The store asked.
        store: String,
        /// The serde's name.
        serde: String,
        /// The serde's words.
        reason: String,
    },
    /// Nobody is known to own the key's task now (not running yet, a
    /// rebalance, a group that cannot be described): ask again later.
    #[error("store '{store}': no owner of task {task} is known: {reason}")]
    NotAvailable {
        /// The store asked.
        store: String,
        /// The key's task.
        task: TaskId,
        /// Why.
        reason: String,
    },
    /// The log could not tell the source's partitions or the endpoints.
    #[error("store '{store}': {message}")]
    Log {
        /// The store asked.
        store: String,
        /// The log's words.
        message: String,
    },
}

/// What [`locate`] knows of this instance and its group.
#[derive(Debug)]
pub(crate) struct Sight<'a> {
    /// This instance's member name.
    pub me: &'a str,
    /// This instance's `application.server`.
    pub server: Option<&'a HostInfo>,
    /// The tasks this instance owns.
    pub active: &'a [TaskId],
    /// The group as the engine was built with it, if described.
    pub group: Option<&'a GroupView>,
    /// `num.standby.replicas`.
    pub replicas: u32,
    /// The other members' endpoints, by member name.
    pub endpoints: &'a BTreeMap<String, String>,
}

/// The metadata of the key in `task`. Without a group description, this
/// instance answers for the tasks it owns (a single instance owns them
/// all) and knows no standby.
///
/// # Errors
/// The reason no owner of `task` is known, for
/// [`MetadataError::NotAvailable`].
pub(crate) fn locate(task: TaskId, sight: &Sight<'_>) -> Result<KeyQueryMetadata, String> {
    let info = |member: &str| {
        let local = member == sight.me;
        let server = match local {
            true => sight.server.cloned(),
            false => sight
                .endpoints
                .get(member)
                .and_then(|s| HostInfo::parse(s).ok()),
        };
        InstanceInfo {
            member: member.to_owned(),
            server,
            local,
        }
    };
    let Some(group) = sight.group else {
        if sight.active.contains(&task) {
            return Ok(KeyQueryMetadata {
                active: info(sight.me),
                standbys: Vec::new(),
                partition: task.partition,
                task,
            });
        }
        return Err(match sight.active.is_empty() {
            true => "this instance owns no task (not running yet, or rebalancing)".into(),
            false => "another instance owns it, and the group could not be described".into(),
        });
    };
    let Some(owner) = group.owners.get(&task) else {
        return Err("no member of the group owns it (a rebalance?)".into());
    };
    Ok(KeyQueryMetadata {
        active: info(owner),
        standbys: holders(sight.replicas, task, group)
            .into_iter()
            .map(info)
            .collect(),
        partition: task.partition,
        task,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(owners: &[(u32, &str)], members: &[&str]) -> GroupView {
        GroupView {
            members: members.iter().map(|m| (*m).to_owned()).collect(),
            owners: owners
                .iter()
                .map(|(p, m)| (TaskId::new(0, *p), (*m).to_owned()))
                .collect(),
        }
    }

    fn endpoints(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(m, e)| ((*m).to_owned(), (*e).to_owned()))
            .collect()
    }

    fn host(text: &str) -> HostInfo {
        HostInfo::parse(text).unwrap()
    }

    #[test]
    fn the_owner_and_the_standby_holders_come_with_their_endpoints() {
        let group = view(&[(0, "app-a"), (1, "app-b")], &["app-a", "app-b", "app-c"]);
        let known = endpoints(&[("app-b", "b.local:7002"), ("app-c", "c.local:7003")]);
        let me = host("a.local:7001");
        let sight = Sight {
            me: "app-a",
            server: Some(&me),
            active: &[TaskId::new(0, 0)],
            group: Some(&group),
            replicas: 2,
            endpoints: &known,
        };
        let m = locate(TaskId::new(0, 1), &sight).unwrap();
        assert_eq!(m.active.member, "app-b");
        assert_eq!(m.active_host(), Some(&host("b.local:7002")));
        assert!(!m.active.local);
        assert_eq!(m.partition, 1);
        // Two replicas over the two members other than the owner: both.
        let mut standbys: Vec<(&str, bool)> = m
            .standbys
            .iter()
            .map(|s| (s.member.as_str(), s.local))
            .collect();
        standbys.sort();
        assert_eq!(standbys, [("app-a", true), ("app-c", false)]);
        let mut hosts = m.standby_hosts();
        hosts.sort();
        assert_eq!(hosts, [&host("a.local:7001"), &host("c.local:7003")]);

        let mine = locate(TaskId::new(0, 0), &sight).unwrap();
        assert!(mine.active.local);
        assert_eq!(mine.active_host(), Some(&me));
    }

    #[test]
    fn the_standbys_are_the_placement_the_engine_computes() {
        let members: Vec<String> = (0..5).map(|i| format!("app-{i}")).collect();
        let names: Vec<&str> = members.iter().map(String::as_str).collect();
        let owners: Vec<(u32, &str)> = (0..10).map(|p| (p, names[p as usize % 5])).collect();
        let group = view(&owners, &names);
        let none = BTreeMap::new();
        let sight = Sight {
            me: "app-0",
            server: None,
            active: &[],
            group: Some(&group),
            replicas: 1,
            endpoints: &none,
        };
        for p in 0..10 {
            let task = TaskId::new(0, p);
            let m = locate(task, &sight).unwrap();
            let members: Vec<&str> = m.standbys.iter().map(|s| s.member.as_str()).collect();
            assert_eq!(members, holders(1, task, &group), "task {task}");
            assert_eq!(m.standbys.len(), 1);
            assert_ne!(m.standbys[0].member, m.active.member);
        }
    }

    #[test]
    fn a_member_without_a_known_endpoint_is_named_without_one() {
        let group = view(&[(0, "app-b")], &["app-a", "app-b"]);
        let bad = endpoints(&[("app-b", "not an endpoint")]);
        let none = BTreeMap::new();
        for known in [&none, &bad] {
            let sight = Sight {
                me: "app-a",
                server: None,
                active: &[],
                group: Some(&group),
                replicas: 0,
                endpoints: known,
            };
            let m = locate(TaskId::new(0, 0), &sight).unwrap();
            assert_eq!(
                (m.active.member.as_str(), m.active.server.clone()),
                ("app-b", None)
            );
            assert!(m.standbys.is_empty());
        }
    }

    #[test]
    fn without_a_group_an_instance_answers_for_its_own_tasks_only() {
        let me = host("127.0.0.1:8080");
        let none = BTreeMap::new();
        let active = [TaskId::new(0, 0), TaskId::new(0, 1)];
        let sight = Sight {
            me: "app-0",
            server: Some(&me),
            active: &active,
            group: None,
            replicas: 1,
            endpoints: &none,
        };
        let m = locate(TaskId::new(0, 1), &sight).unwrap();
        assert!(m.active.local && m.standbys.is_empty());
        assert_eq!(m.active_host(), Some(&me));
        let err = locate(TaskId::new(0, 2), &sight).unwrap_err();
        assert!(err.contains("could not be described"), "{err}");
        let idle = Sight {
            active: &[],
            ..sight
        };
        let err = locate(TaskId::new(0, 0), &idle).unwrap_err();
        assert!(err.contains("owns no task"), "{err}");
    }

    #[test]
    fn a_task_nobody_owns_is_not_available() {
        let group = view(&[(0, "app-a")], &["app-a", "app-b"]);
        let none = BTreeMap::new();
        let sight = Sight {
            me: "app-a",
            server: None,
            active: &[TaskId::new(0, 0)],
            group: Some(&group),
            replicas: 1,
            endpoints: &none,
        };
        let err = locate(TaskId::new(0, 1), &sight).unwrap_err();
        assert!(err.contains("no member"), "{err}");
    }
}
