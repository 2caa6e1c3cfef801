//! [`KafkaMember`]: a member of a Kafka consumer group, through librdkafka's
//! group protocol.
//!
//! Owns: the subscription, the rebalance callback and the timing of
//! `unassign`. The callback only records what happened; a revocation is
//! released (unassigned) when the caller says its work is committed, and
//! librdkafka holds the rebalance until then (it keeps heartbeating while it
//! waits for the unassign call). The member never reads records: what it is
//! assigned it pauses at once; an ordinary consumer reads those partitions.
//! Static membership (`group.instance.id` = the caller's member id): an
//! instance restarted after a kill takes its own place back at once instead
//! of waiting for the dead member to leave the group, and a static member
//! closes without leaving it, so a restart within the session timeout moves
//! nothing; a dynamic member leaves when it is closed. Eager rebalancing
//! by default (librdkafka's `range,roundrobin` assignors); with
//! `partition.assignment.strategy: cooperative-sticky` the protocol is
//! incremental: each rebalance names only the partitions added or taken
//! back ([`GroupEvent::Added`], [`GroupEvent::Removed`]), handed to
//! `incremental_assign` / `incremental_unassign`. Each assignment's group
//! metadata (generation, member id) goes to the log's [`Generations`], so
//! the log's producers commit offsets as this member (KIP-447). Knows
//! nothing of streams, tasks or watermarks.
//!
//! [`Generations`]: crate::generation::Generations

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer as _, ConsumerContext, RebalanceProtocol,
};
use rdkafka::error::KafkaResult;
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientContext, TopicPartitionList};
use stoatflow_log::{
    ErrorKind, GroupEvent, GroupMember, LogError, MemberAssignment, OffsetAndMetadata,
    TopicPartition,
};

use crate::committed::committed;
use crate::config::KafkaConfig;
use crate::errors::map;
use crate::generation::{Generations, MemberCommit, MemberToken};
use crate::group_description::{assignments, member_client_id};

/// What the rebalance callback saw, in order.
#[derive(Debug)]
enum Seen {
    Assign {
        partitions: Vec<TopicPartition>,
        incremental: bool,
    },
    Revoke {
        partitions: Vec<TopicPartition>,
        lost: bool,
        incremental: bool,
    },
    Failed(String),
}

/// The consumer's context: records rebalances for [`KafkaMember::poll`]
/// and publishes each assignment's generation to the log's producers.
struct MemberContext {
    seen: Mutex<VecDeque<Seen>>,
    /// The member is being dropped: a revocation is released at once (the
    /// close waits for it).
    closing: AtomicBool,
    group: String,
    token: MemberToken,
    generations: Generations,
}

impl ClientContext for MemberContext {}

fn partitions(tpl: &TopicPartitionList) -> Vec<TopicPartition> {
    let mut out: Vec<TopicPartition> = tpl
        .elements()
        .iter()
        .map(|e| TopicPartition::new(e.topic(), e.partition().max(0) as u32))
        .collect();
    out.sort();
    out
}

impl ConsumerContext for MemberContext {
    fn rebalance(
        &self,
        consumer: &BaseConsumer<Self>,
        err: RDKafkaRespErr,
        tpl: &mut TopicPartitionList,
    ) {
        let incremental = matches!(
            consumer.rebalance_protocol(),
            RebalanceProtocol::Cooperative
        );
        let seen = match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                // The generation this assignment belongs to: offsets sent
                // with it are refused once the group has moved on.
                if let Some(metadata) = consumer.group_metadata() {
                    self.generations.set(&self.group, self.token, metadata);
                }
                Seen::Assign {
                    partitions: partitions(tpl),
                    incremental,
                }
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                if self.closing.load(Ordering::Acquire) {
                    let _ = match incremental {
                        true => consumer.incremental_unassign(tpl),
                        false => consumer.unassign(),
                    };
                    return;
                }
                Seen::Revoke {
                    partitions: partitions(tpl),
                    lost: consumer.assignment_lost(),
                    incremental,
                }
            }
            other => {
                let code: RDKafkaErrorCode = other.into();
                // Assign nothing so the group can go on; the caller hears of it.
                let _ = consumer.unassign();
                Seen::Failed(code.to_string())
            }
        };
        self.seen.lock().expect("rebalance queue").push_back(seen);
    }
}

impl MemberCommit for BaseConsumer<MemberContext> {
    /// librdkafka's synchronous commit waits on a queue of its own, so it
    /// may run on another thread than the one serving the group.
    fn commit_offsets(&self, offsets: &TopicPartitionList) -> KafkaResult<()> {
        self.commit(offsets, CommitMode::Sync)
    }
}

/// A member of a Kafka consumer group. Dropping it leaves the group unless
/// it is a static member.
pub struct KafkaMember {
    /// Shared (weakly) with the log's at-least-once offset commits.
    consumer: Arc<BaseConsumer<MemberContext>>,
    group: String,
    request_timeout: Duration,
    /// Joined with `group.instance.id`: closing does not leave the group.
    is_static: bool,
    /// Incremental rebalancing: what the last [`GroupEvent::Removed`] named,
    /// to be unassigned by [`GroupMember::release`] (eager: everything).
    to_release: Option<Vec<TopicPartition>>,
}

impl std::fmt::Debug for KafkaMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaMember")
            .field("group", &self.group)
            .finish_non_exhaustive()
    }
}

impl KafkaMember {
    pub(crate) fn join(
        config: &KafkaConfig,
        group: &str,
        member: &str,
        topics: &[String],
        generations: &Generations,
    ) -> Result<Self, LogError> {
        let mut client = config.client_config("member");
        // A member that died (kill -9) holds its partitions until its
        // session expires: librdkafka's 45 s default would stall every
        // takeover that long. 10 s unless the properties say otherwise.
        for (key, value) in [
            ("session.timeout.ms", "10000"),
            ("heartbeat.interval.ms", "3000"),
        ] {
            if !config.properties.iter().any(|(k, _)| k == key) {
                client.set(key, value);
            }
        }
        if config.static_membership {
            client.set("group.instance.id", member);
        }
        // The group's description names members by client id.
        client.set("client.id", member_client_id(&config.client_id, member));
        let token = MemberToken::next();
        let consumer: BaseConsumer<MemberContext> = client
            .set("group.id", group)
            .set("isolation.level", "read_committed")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .create_with_context(MemberContext {
                seen: Mutex::default(),
                closing: AtomicBool::new(false),
                group: group.to_owned(),
                token,
                generations: generations.clone(),
            })
            .map_err(|e| map(&e, format!("joining consumer group {group:?}"), None))?;
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        consumer.subscribe(&names).map_err(|e| {
            map(
                &e,
                format!("subscribing group {group:?} to {topics:?}"),
                None,
            )
        })?;
        let consumer = Arc::new(consumer);
        let commit: Arc<dyn MemberCommit> = consumer.clone();
        generations.register(group, token, Arc::downgrade(&commit));
        Ok(KafkaMember {
            consumer,
            group: group.to_owned(),
            request_timeout: config.request_timeout,
            is_static: config.static_membership,
            to_release: None,
        })
    }

    /// Leaves the group, so the others take its partitions now rather than
    /// when its session expires. Bounded: serves the group until the
    /// assignment is given up, then a little longer for the leave request to
    /// go out.
    fn leave(&self) {
        self.consumer.unsubscribe();
        let deadline = Instant::now() + LEAVE_WITHIN;
        let mut released_at = None;
        while Instant::now() < deadline {
            let _ = self.consumer.poll(Duration::from_millis(20));
            let empty = self.consumer.assignment().is_ok_and(|a| a.count() == 0);
            match (empty, released_at) {
                (true, None) => released_at = Some(Instant::now()),
                (true, Some(t)) if t.elapsed() >= LEAVE_GRACE => break,
                _ => {}
            }
        }
    }

    fn assign_paused(
        &self,
        partitions: &[TopicPartition],
        incremental: bool,
    ) -> Result<(), LogError> {
        let tpl = list(partitions);
        let op = || format!("taking the assignment of group {:?}", self.group);
        match incremental {
            true => self.consumer.incremental_assign(&tpl),
            false => self.consumer.assign(&tpl),
        }
        .map_err(|e| map(&e, op(), None))?;
        if !partitions.is_empty() {
            self.consumer.pause(&tpl).map_err(|e| map(&e, op(), None))?;
        }
        Ok(())
    }
}

impl GroupMember for KafkaMember {
    fn poll(&mut self, max_wait: Duration) -> Result<Option<GroupEvent>, LogError> {
        // Serves the group protocol and the rebalance callback; a record
        // fetched before the pause took effect is dropped (the engine's
        // consumer reads it).
        if let Some(Err(e)) = self.consumer.poll(max_wait) {
            return Err(map(
                &e,
                format!("serving consumer group {:?}", self.group),
                None,
            ));
        }
        let next = self
            .consumer
            .context()
            .seen
            .lock()
            .expect("rebalance queue")
            .pop_front();
        match next {
            None => Ok(None),
            Some(Seen::Assign {
                partitions,
                incremental,
            }) => {
                self.assign_paused(&partitions, incremental)?;
                Ok(Some(match incremental {
                    true => GroupEvent::Added(partitions),
                    false => GroupEvent::Assigned(partitions),
                }))
            }
            Some(Seen::Revoke {
                partitions,
                lost,
                incremental,
            }) => {
                self.to_release = incremental.then(|| partitions.clone());
                if lost {
                    self.release()?;
                    return Ok(Some(GroupEvent::Lost(partitions)));
                }
                Ok(Some(match incremental {
                    true => GroupEvent::Removed(partitions),
                    false => GroupEvent::Revoked(partitions),
                }))
            }
            Some(Seen::Failed(message)) => Err(LogError::Broker {
                op: format!("rebalancing consumer group {:?}", self.group),
                message,
                kind: ErrorKind::Retriable,
            }),
        }
    }

    /// Through the member's own consumer (it has the group's id and reads
    /// committed, so the broker answers with stable offsets): no client to
    /// create and connect, which costs about 100 ms at every engine start.
    fn committed_offsets(
        &self,
        partitions: &[TopicPartition],
    ) -> Option<Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, LogError>> {
        Some(committed(
            &self.consumer,
            partitions,
            self.request_timeout,
            &self.group,
        ))
    }

    /// The group's description (DescribeGroups) through the member's own
    /// connection; members are named by their client id.
    fn describe_group(&self) -> Option<Result<Vec<MemberAssignment>, LogError>> {
        let op = || format!("describing consumer group {:?}", self.group);
        Some(
            self.consumer
                .fetch_group_list(Some(&self.group), self.request_timeout)
                .map_err(|e| map(&e, op(), None))
                .and_then(|list| assignments(&list, &self.group)),
        )
    }

    fn release(&mut self) -> Result<(), LogError> {
        match self.to_release.take() {
            Some(partitions) => self.consumer.incremental_unassign(&list(&partitions)),
            None => self.consumer.unassign(),
        }
        .map_err(|e| {
            map(
                &e,
                format!("releasing the partitions of group {:?}", self.group),
                None,
            )
        })
    }
}

impl Drop for KafkaMember {
    fn drop(&mut self) {
        // No producer of this log sends offsets as this member any more.
        let context = self.consumer.context();
        context.generations.clear(&self.group, context.token);
        // Revocations are released at once from here on.
        self.consumer
            .context()
            .closing
            .store(true, Ordering::Release);
        // A static member closes without leaving (librdkafka sends no
        // LeaveGroup on close when `group.instance.id` is set): coming back
        // within the session timeout gives it its partitions back and moves
        // nothing, as a Kafka Streams instance's restart does. Unsubscribing
        // would leave, and make every other member rebalance twice.
        if !self.is_static {
            self.leave();
        }
        // The consumer's own drop closes it.
    }
}

/// `partitions` as librdkafka's list.
fn list(partitions: &[TopicPartition]) -> TopicPartitionList {
    let mut tpl = TopicPartitionList::new();
    for tp in partitions {
        tpl.add_partition(&tp.topic, tp.partition.0 as i32);
    }
    tpl
}

/// How long dropping a member serves the group while it leaves.
const LEAVE_WITHIN: Duration = Duration::from_secs(3);
/// How long it keeps serving after giving up its assignment (the leave
/// request goes out once the unassign is done).
const LEAVE_GRACE: Duration = Duration::from_millis(200);
