//! The crate's one error type.
//!
//! Owns [`StateError`]: every failure a store, a restore or a store directory can report.
//! Messages are lowercase and name the store, and where relevant the key, the changelog
//! partition and offset, or the directory.

use std::fmt;

use crate::changelog::{ChangelogEntry, ChangelogOffset, ChangelogPartition};
use crate::codec::CodecError;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// A changelog record could not be applied during restoration: its key or value is
    /// truncated or does not decode.
    #[error(
        "store {store}: corrupt changelog record at partition {partition} offset {offset}: {reason}"
    )]
    CorruptChangelogRecord {
        /// The store being restored.
        store: String,
        /// The changelog partition the record came from.
        partition: ChangelogPartition,
        /// The record's offset in that partition.
        offset: ChangelogOffset,
        /// What is wrong with it.
        reason: String,
    },
    /// A store directory on disk was written by a different application id.
    #[error(
        "store {store}: directory {dir} belongs to application id {found:?}, not {expected:?}; refusing to open it"
    )]
    ForeignApplication {
        /// The store being opened.
        store: String,
        /// The directory.
        dir: String,
        /// The application id found in the directory's metadata file.
        found: String,
        /// The application id of this application.
        expected: String,
    },
    /// A store directory exists but its metadata file is missing or unreadable.
    #[error(
        "store {store}: directory {dir} has no valid store metadata: {reason}; refusing to open it"
    )]
    BadStoreDirectory {
        /// The store being opened.
        store: String,
        /// The directory.
        dir: String,
        /// What is wrong.
        reason: String,
    },
    /// A store opened directly (not through [`crate::StoreDirectory::recover`]) whose
    /// directory holds files that neither a clean close's checkpoint nor a recovery vouches
    /// for: the last run crashed or dropped the store without a checkpoint, so they may hold
    /// writes that never committed. The files are left in place.
    #[error(
        "store {store}: directory {dir} holds local files no checkpoint vouches for (the last close was not clean, or the store was dropped without StoreDirectory::write_checkpoint), so they may hold writes that never committed; refusing to serve them: open it through StoreDirectory::recover, which rebuilds it from its changelog"
    )]
    UnverifiedLocalCopy {
        /// The store.
        store: String,
        /// The store directory.
        dir: String,
    },
    /// A store directory was written in a store format this version does not read.
    #[error(
        "store {store}: directory {dir} has store format {found}, this version reads format {supported}; {}",
        format_advice(*.found, *.supported)
    )]
    UnsupportedStoreFormat {
        /// The store being opened.
        store: String,
        /// The directory.
        dir: String,
        /// The format found in its metadata file.
        found: u32,
        /// The format this version reads and writes.
        supported: u32,
    },
    /// A store's local copy is damaged and was not rebuilt: its metadata file is damaged,
    /// or [`LocalCopy::VerifyOrRefuse`](crate::LocalCopy::VerifyOrRefuse) found a file that
    /// differs from what the last clean close recorded.
    #[error(
        "store {store}: local copy in {dir} is damaged: {file} {detail}; rebuild it from its changelog (StoreDirectory::rebuild or LocalCopy::Rebuild)"
    )]
    DamagedStore {
        /// The store.
        store: String,
        /// The store directory.
        dir: String,
        /// The damaged file, relative to the store directory.
        file: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The store's engine is open (in this process or another) where it must be closed.
    #[error("store {store}: directory {dir} is in use by an open store; close it first")]
    StoreInUse {
        /// The store.
        store: String,
        /// The store directory.
        dir: String,
    },
    /// A stored key or value does not decode (persistent engine).
    #[error("store {store}: cannot decode stored {what} for key {key}: {source}")]
    Decode {
        /// The store.
        store: String,
        /// "key" or "value".
        what: &'static str,
        /// The key's bytes, hex encoded.
        key: String,
        /// The codec's error.
        #[source]
        source: CodecError,
    },
    /// A value the store's codec cannot encode (a user serializer refusing it), at a write
    /// of the persistent engine or at the barrier flush. The key is its encoding, as quoted
    /// text if it is printable UTF-8, else hex.
    #[error("store {store}: cannot encode the value of key {key}: {source}")]
    EncodeValue {
        /// The store.
        store: String,
        /// The key, rendered from its encoding.
        key: String,
        /// The codec's error.
        #[source]
        source: CodecError,
    },
    /// A key the store's codec cannot encode, so it has no bytes to name it by: `key` says
    /// which one (its position in the barrier flush, or the operation it was passed to).
    #[error("store {store}: cannot encode key {key}: {source}")]
    EncodeKey {
        /// The store.
        store: String,
        /// Which key: `#n of the barrier flush` or `passed to <operation>`.
        key: String,
        /// The codec's error.
        #[source]
        source: CodecError,
    },
    /// A file-system operation failed.
    #[error("store {store}: i/o error on {path}: {source}")]
    Io {
        /// The store.
        store: String,
        /// The path involved.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The persistent engine reported an error.
    #[error("store {store}: persistent engine error: {detail}")]
    Engine {
        /// The store.
        store: String,
        /// The engine's message.
        detail: String,
    },
    /// A configuration value is invalid.
    #[error("store {store}: invalid configuration: {detail}")]
    InvalidConfig {
        /// The store.
        store: String,
        /// What is wrong.
        detail: String,
    },
}

fn format_advice(found: u32, supported: u32) -> &'static str {
    if found < supported {
        "rebuild it from its changelog (StoreDirectory::rebuild or LocalCopy::Rebuild)"
    } else {
        "it was written by a newer version; refusing to open it"
    }
}

impl ChangelogEntry {
    /// A corrupt-record error for this entry. (Defined here, beside the error, so that
    /// `changelog` stays below `error` in the crate's layers.)
    pub fn corrupt(&self, store: &str, reason: impl Into<String>) -> StateError {
        StateError::CorruptChangelogRecord {
            store: store.to_string(),
            partition: self.partition,
            offset: self.offset,
            reason: reason.into(),
        }
    }
}

impl StateError {
    /// A value codec's failure for the key encoded as `key` in `store`.
    pub(crate) fn encode_value(store: &str, key: &[u8], source: CodecError) -> Self {
        Self::EncodeValue {
            store: store.to_string(),
            key: key_text(key),
            source,
        }
    }

    /// A key codec's failure in `store`; `which` names the key (see
    /// [`StateError::EncodeKey`]).
    pub(crate) fn encode_key(store: &str, which: impl fmt::Display, source: CodecError) -> Self {
        Self::EncodeKey {
            store: store.to_string(),
            key: which.to_string(),
            source,
        }
    }
}

/// Names the `n`-th (from 0) key of a barrier flush whose codec failed on it.
pub(crate) fn flushed_key(n: usize) -> String {
    format!("#{} of the barrier flush", n + 1)
}

/// Renders an encoded key for an error message: quoted if it is printable UTF-8 (at most 64
/// characters, then an ellipsis), else as [`hex`].
pub(crate) fn key_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.is_empty() && !s.chars().any(char::is_control) => {
            let shown: String = s.chars().take(64).collect();
            let more = if shown.len() < s.len() { "..." } else { "" };
            format!("{shown:?}{more}")
        }
        _ => hex(bytes),
    }
}

/// Renders bytes as lowercase hex for error messages (at most 64 bytes, then an ellipsis).
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len().min(64) * 2 + 3);
    for b in bytes.iter().take(64) {
        let _ = write!(s, "{b:02x}");
    }
    if bytes.len() > 64 {
        s.push_str("...");
    }
    if s.is_empty() {
        s.push_str("<empty>");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_record_message_names_store_partition_and_offset() {
        let e = StateError::CorruptChangelogRecord {
            store: "counts".into(),
            partition: ChangelogPartition(3),
            offset: ChangelogOffset(42),
            reason: "truncated key".into(),
        };
        assert_eq!(
            e.to_string(),
            "store counts: corrupt changelog record at partition 3 offset 42: truncated key"
        );
    }

    #[test]
    fn key_text_quotes_printable_keys_and_hexes_the_rest() {
        assert_eq!(key_text(b"alice"), "\"alice\"");
        assert_eq!(key_text(b"a\"b"), "\"a\\\"b\"");
        assert_eq!(key_text(&[0, 0, 0, 7]), "00000007");
        assert_eq!(key_text(&[0x61, 0xff]), "61ff");
        assert_eq!(key_text(b""), "<empty>");
        assert_eq!(key_text(&[b'x'; 70]), format!("{:?}...", "x".repeat(64)));
    }

    #[test]
    fn hex_is_bounded() {
        assert_eq!(hex(&[0xab, 0x01]), "ab01");
        assert_eq!(hex(&[]), "<empty>");
        assert!(hex(&[0u8; 100]).ends_with("..."));
    }

    #[test]
    fn error_is_send_sync_static() {
        fn check<T: Send + Sync + 'static>() {}
        check::<StateError>();
    }
}
