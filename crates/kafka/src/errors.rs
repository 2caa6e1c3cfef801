//! Mapping rdkafka's errors onto the log boundary's [`LogError`].
//!
//! Owns: the classification of librdkafka error codes as retriable,
//! abort-the-transaction or fatal, and the wording of a consumer group's
//! refusal of a stale member's offsets. Never formats a client-configuration
//! error with its value (it may be a secret).

use rdkafka::error::{KafkaError, RDKafkaErrorCode as Code};
use stoatflow_log::{ErrorKind, LogError};

fn is_fenced(code: Code) -> bool {
    matches!(
        code,
        Code::ProducerFenced | Code::InvalidProducerEpoch | Code::Fenced
    )
}

/// The consumer group refused offsets sent as a member of a generation it
/// has moved past (KIP-447), or as a member it no longer knows.
fn is_group_fenced(code: Code) -> bool {
    matches!(
        code,
        Code::IllegalGeneration | Code::UnknownMemberId | Code::FencedInstanceId
    )
}

fn is_retriable_code(code: Code) -> bool {
    matches!(
        code,
        Code::QueueFull
            | Code::RequestTimedOut
            | Code::OperationTimedOut
            | Code::BrokerTransportFailure
            | Code::AllBrokersDown
            | Code::NetworkException
            | Code::NotLeaderForPartition
            | Code::LeaderNotAvailable
            | Code::NotCoordinator
            | Code::CoordinatorNotAvailable
            | Code::CoordinatorLoadInProgress
            | Code::WaitingForCoordinator
            | Code::ConcurrentTransactions
            | Code::NotEnoughReplicas
            | Code::NotEnoughReplicasAfterAppend
            | Code::Resolve
            | Code::Retry
    )
}

/// Maps `err`, raised while doing `op` (which names the topic/partition), for
/// transactional id `tid` if any.
pub(crate) fn map(err: &KafkaError, op: impl Into<String>, tid: Option<(&str, u32)>) -> LogError {
    let op = op.into();
    if let KafkaError::ClientConfig(_, desc, key, _value) = err {
        return LogError::Config {
            key: key.clone(),
            reason: desc.clone(),
        };
    }
    let code = err.rdkafka_error_code();
    if let (Some(code), Some((tid, epoch))) = (code, tid)
        && is_fenced(code)
    {
        return LogError::Fenced {
            transactional_id: tid.to_owned(),
            epoch,
        };
    }
    let kind = match err {
        KafkaError::Transaction(e) => {
            if e.is_fatal() {
                ErrorKind::Fatal
            } else if e.txn_requires_abort() {
                ErrorKind::AbortTransaction
            } else if e.is_retriable() {
                ErrorKind::Retriable
            } else {
                ErrorKind::Fatal
            }
        }
        KafkaError::MessageProduction(c) => match c {
            c if is_retriable_code(*c) => ErrorKind::Retriable,
            _ => ErrorKind::AbortTransaction,
        },
        KafkaError::Canceled | KafkaError::ClientCreation(_) => ErrorKind::Fatal,
        _ => match code {
            Some(c) if is_retriable_code(c) => ErrorKind::Retriable,
            _ => ErrorKind::Fatal,
        },
    };
    LogError::Broker {
        op,
        message: err.to_string(),
        kind,
    }
}

/// Maps `err`, raised while doing `op` in a transaction that carries
/// offsets of consumer `group`: a refusal by the group (this member's
/// generation is over: another instance owns its partitions now) says so
/// and names the group; the transaction must be aborted and the instance
/// must rejoin. Anything else as [`map`].
pub(crate) fn map_with_group(
    err: &KafkaError,
    op: impl Into<String>,
    tid: (&str, u32),
    group: &str,
) -> LogError {
    match err.rdkafka_error_code() {
        Some(code) if is_group_fenced(code) => LogError::Broker {
            op: op.into(),
            message: format!(
                "fenced by consumer group {group:?}: the group has moved past this member's \
                 generation ({code}); its partitions belong to another member now"
            ),
            kind: ErrorKind::AbortTransaction,
        },
        _ => map(err, op, Some(tid)),
    }
}

/// Maps `err`, raised while committing offsets of consumer `group` outside
/// a transaction (at-least-once): a refusal by the group (a generation it
/// has moved past, a member it no longer knows, a rebalance under way)
/// says so and names the group; the member must rejoin and read its
/// partitions again from their last commit, so it is
/// [`ErrorKind::AbortTransaction`]. Anything else as [`map`].
pub(crate) fn map_offset_commit(err: &KafkaError, op: impl Into<String>, group: &str) -> LogError {
    match err.rdkafka_error_code() {
        Some(code) if is_group_fenced(code) || code == Code::RebalanceInProgress => {
            LogError::Broker {
                op: op.into(),
                message: format!(
                    "refused by consumer group {group:?} ({code}): the group is rebalancing or \
                     has moved past this member's generation; the offsets were not committed"
                ),
                kind: ErrorKind::AbortTransaction,
            }
        }
        _ => map(err, op, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        let e = map(
            &KafkaError::MessageProduction(Code::QueueFull),
            "sending to t-0",
            None,
        );
        assert_eq!(e.kind(), ErrorKind::Retriable);
        let e = map(
            &KafkaError::MessageProduction(Code::MessageSizeTooLarge),
            "sending to t-0",
            None,
        );
        assert_eq!(e.kind(), ErrorKind::AbortTransaction);
        let e = map(
            &KafkaError::MessageProduction(Code::ProducerFenced),
            "sending",
            Some(("tx", 0)),
        );
        assert!(matches!(e, LogError::Fenced { .. }));
        let e = map(
            &KafkaError::MetadataFetch(Code::AllBrokersDown),
            "describing t",
            None,
        );
        assert_eq!(e.kind(), ErrorKind::Retriable);
        assert!(e.to_string().contains("describing t"));
    }

    #[test]
    fn a_stale_generation_is_an_abort_naming_the_group() {
        for code in [
            Code::IllegalGeneration,
            Code::UnknownMemberId,
            Code::FencedInstanceId,
        ] {
            let e = map_with_group(
                &KafkaError::MessageProduction(code),
                "adding offsets",
                ("tx", 0),
                "orders-app",
            );
            assert_eq!(e.kind(), ErrorKind::AbortTransaction, "{code:?}");
            let m = e.to_string();
            assert!(m.contains("fenced by consumer group \"orders-app\""), "{m}");
        }
        let e = map_with_group(
            &KafkaError::MessageProduction(Code::ProducerFenced),
            "adding offsets",
            ("tx", 0),
            "orders-app",
        );
        assert!(matches!(e, LogError::Fenced { .. }), "{e}");
    }

    #[test]
    fn a_group_refusing_an_offset_commit_is_named_and_aborts_the_epoch() {
        for code in [
            Code::IllegalGeneration,
            Code::UnknownMemberId,
            Code::FencedInstanceId,
            Code::RebalanceInProgress,
        ] {
            let e = map_offset_commit(&KafkaError::ConsumerCommit(code), "committing", "app");
            assert_eq!(e.kind(), ErrorKind::AbortTransaction, "{code}");
            assert!(e.to_string().contains("\"app\""), "{e}");
        }
        // A coordinator away for a while (librdkafka holds the commit, then
        // gives up waiting) is retried, then replaces the engine.
        for code in [Code::RequestTimedOut, Code::WaitingForCoordinator] {
            let e = map_offset_commit(&KafkaError::ConsumerCommit(code), "committing", "app");
            assert_eq!(e.kind(), ErrorKind::Retriable, "{code}");
        }
    }
}
