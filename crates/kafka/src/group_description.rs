//! A consumer group's description read as [`MemberAssignment`]s: which
//! member owns which partitions, as every member can see it.
//!
//! Owns how a member's name travels (in its `client.id`, after
//! [`NAME_MARK`]: the description carries the client id, whereas the
//! member id the broker hands out changes at every join) and the decoding of
//! Kafka's consumer-protocol assignment (version, then per topic its name and
//! partitions, then user data, which is not read). Knows nothing of the
//! rebalance callback or of tasks.

use rdkafka::groups::GroupList;
use stoatflow_log::{LogError, MemberAssignment, TopicPartition};

/// What separates the client id's prefix from the member's name: only
/// characters every broker accepts in a client id (letters, digits, `.`,
/// `_`, `-`); a name containing it is cut at its last occurrence.
pub(crate) const NAME_MARK: &str = "--member--";

/// The client id of the member named `member`.
pub(crate) fn member_client_id(prefix: &str, member: &str) -> String {
    format!("{prefix}{NAME_MARK}{member}")
}

/// The members of `group` in `list` whose client id names them.
pub(crate) fn assignments(
    list: &GroupList,
    group: &str,
) -> Result<Vec<MemberAssignment>, LogError> {
    let Some(info) = list.groups().iter().find(|g| g.name() == group) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for m in info.members() {
        let Some((_, name)) = m.client_id().rsplit_once(NAME_MARK) else {
            continue;
        };
        let partitions = match m.assignment() {
            Some(bytes) if !bytes.is_empty() => {
                decode(bytes).map_err(|reason| LogError::Broker {
                    op: format!("describing consumer group {group:?}"),
                    message: format!("member {name:?}'s assignment: {reason}"),
                    kind: stoatflow_log::ErrorKind::Retriable,
                })?
            }
            _ => Vec::new(),
        };
        out.push(MemberAssignment {
            member: name.to_owned(),
            partitions,
        });
    }
    out.sort_by(|a, b| a.member.cmp(&b.member));
    Ok(out)
}

/// Big-endian reads off the front of a byte slice.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.0.len() < n {
            return Err(format!(
                "truncated: {n} bytes wanted, {} left",
                self.0.len()
            ));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn i16(&mut self) -> Result<i16, String> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, String> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn count(&mut self) -> Result<usize, String> {
        let n = self.i32()?;
        usize::try_from(n.max(0)).map_err(|_| format!("bad count {n}"))
    }
}

/// Kafka's consumer-protocol assignment: the partitions it lists.
pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<TopicPartition>, String> {
    let mut r = Reader(bytes);
    let _version = r.i16()?;
    let mut out = Vec::new();
    for _ in 0..r.count()? {
        let len = usize::try_from(r.i16()?).map_err(|_| "negative topic length")?;
        let topic = std::str::from_utf8(r.take(len)?)
            .map_err(|e| format!("topic name not UTF-8: {e}"))?
            .to_owned();
        for _ in 0..r.count()? {
            let p = r.i32()?;
            let p = u32::try_from(p).map_err(|_| format!("partition {p} of {topic:?}"))?;
            out.push(TopicPartition::new(&topic, p));
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An assignment encoded as Kafka's consumer protocol (version 1).
    fn encode(topics: &[(&str, &[i32])]) -> Vec<u8> {
        let mut b = 1i16.to_be_bytes().to_vec();
        b.extend((topics.len() as i32).to_be_bytes());
        for (t, ps) in topics {
            b.extend((t.len() as i16).to_be_bytes());
            b.extend(t.as_bytes());
            b.extend((ps.len() as i32).to_be_bytes());
            for p in *ps {
                b.extend(p.to_be_bytes());
            }
        }
        b.extend((-1i32).to_be_bytes()); // no user data
        b
    }

    #[test]
    fn an_assignment_decodes_to_its_partitions() {
        let bytes = encode(&[("orders", &[4, 1]), ("app-rekeyed", &[0])]);
        assert_eq!(
            decode(&bytes).unwrap(),
            [
                TopicPartition::new("app-rekeyed", 0),
                TopicPartition::new("orders", 1),
                TopicPartition::new("orders", 4),
            ]
        );
    }

    #[test]
    fn a_truncated_assignment_is_an_error_not_a_guess() {
        let bytes = encode(&[("orders", &[4, 1])]);
        let err = decode(&bytes[..bytes.len() - 7]).unwrap_err();
        assert!(err.contains("truncated"), "{err}");
    }

    #[test]
    fn the_name_comes_back_from_the_client_id() {
        let id = member_client_id("stoatflow", "app-b");
        assert_eq!(id, "stoatflow--member--app-b");
        assert_eq!(id.rsplit_once(NAME_MARK).map(|x| x.1), Some("app-b"));
    }
}
