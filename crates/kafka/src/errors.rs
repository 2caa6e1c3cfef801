//! Mapping rdkafka's errors onto the log boundary's [`LogError`].
//!
//! Owns: the classification of librdkafka error codes as retriable,
//! abort-the-transaction or fatal. Never formats a client-configuration
//! error with its value (it may be a secret).

use rdkafka::error::{KafkaError, RDKafkaErrorCode as Code};
use stoatflow_log::{ErrorKind, LogError};

fn is_fenced(code: Code) -> bool {
    matches!(
        code,
        Code::ProducerFenced | Code::InvalidProducerEpoch | Code::Fenced
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
}
