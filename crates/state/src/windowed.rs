//! The two kinds of segmented entry: time windows and sessions.
//!
//! Owns [`WindowKind`] and its two kinds. [`TimeWindowKind`]: an entry is a key's window,
//! named by its start, which is also the time that places it in a segment. [`SessionKind`]:
//! an entry is a key's session, named by (start, end), placed by its end. A kind says what
//! names an entry, which time places it, the order of its changelog records in one flush
//! (time windows by start then key, sessions by key, end, start) and its changelog key
//! layout (Kafka Streams', from `changelog`). The segmented cores of both engines are
//! generic over it; the window and session stores keep only their layout inside a segment
//! and their queries.
//!
//! This module never knows how an engine stores an entry.

use std::fmt;

use crate::changelog::{
    ChangelogEntry, decode_session_key, decode_window_key, push_session_key_suffix,
    push_window_key_suffix,
};
use crate::error::StateError;
use crate::store::SessionWindow;

/// What distinguishes the entries of window stores from those of session stores.
pub(crate) trait WindowKind {
    /// What names an entry's window (with its key): a window start, or a session.
    type Window: Copy + fmt::Debug;
    /// An entry (key, window) ordered as its changelog records are within one flush.
    type Id<K>: Ord
    where
        K: Ord;
    /// The kind's name in messages about a truncated changelog key.
    const KEY_NAME: &'static str;
    /// Bytes after the key in a changelog key.
    const KEY_SUFFIX: usize;

    /// The time that places an entry in a segment and against the retention.
    fn time(window: Self::Window) -> i64;

    /// The id of (key, window).
    fn id<K: Ord>(key: K, window: Self::Window) -> Self::Id<K>;

    /// The key of an id.
    fn key<K: Ord>(id: &Self::Id<K>) -> &K;

    /// The window of an id.
    fn window<K: Ord>(id: &Self::Id<K>) -> Self::Window;

    /// The time an id's order begins with, if its order begins with one (a dirty log
    /// sorts such ids by that integer first).
    fn leading_time<K: Ord>() -> Option<fn(&Self::Id<K>) -> i64>;

    /// Appends what follows the key bytes in the changelog key of an entry of `window`
    /// (to a key encoded in place).
    fn push_key_suffix(window: Self::Window, out: &mut Vec<u8>);

    /// Splits a changelog key into (key bytes, window); `None` if it is too short.
    fn split_changelog_key(bytes: &[u8]) -> Option<(&[u8], Self::Window)>;

    /// The key bytes and window of a restored entry of `store`.
    ///
    /// # Errors
    /// [`StateError::CorruptChangelogRecord`] if the changelog key is shorter than its suffix.
    #[inline]
    fn restored<'e>(
        entry: &'e ChangelogEntry,
        store: &str,
    ) -> Result<(&'e [u8], Self::Window), StateError> {
        Self::split_changelog_key(&entry.key).ok_or_else(|| {
            entry.corrupt(
                store,
                format!(
                    "truncated {} key: {} bytes, need at least {}",
                    Self::KEY_NAME,
                    entry.key.len(),
                    Self::KEY_SUFFIX
                ),
            )
        })
    }
}

/// Time windows: a key's window named by its start.
#[derive(Debug)]
pub(crate) enum TimeWindowKind {}

impl WindowKind for TimeWindowKind {
    type Window = i64;
    type Id<K>
        = (i64, K)
    where
        K: Ord;
    const KEY_NAME: &'static str = "windowed";
    const KEY_SUFFIX: usize = 12;

    #[inline]
    fn time(start: i64) -> i64 {
        start
    }

    #[inline]
    fn id<K: Ord>(key: K, start: i64) -> (i64, K) {
        (start, key)
    }

    #[inline]
    fn key<K: Ord>(id: &(i64, K)) -> &K {
        &id.1
    }

    #[inline]
    fn window<K: Ord>(id: &(i64, K)) -> i64 {
        id.0
    }

    fn leading_time<K: Ord>() -> Option<fn(&(i64, K)) -> i64> {
        Some(|id| id.0)
    }

    #[inline]
    fn push_key_suffix(start: i64, out: &mut Vec<u8>) {
        push_window_key_suffix(start, 0, out);
    }

    #[inline]
    fn split_changelog_key(bytes: &[u8]) -> Option<(&[u8], i64)> {
        decode_window_key(bytes).map(|(key, start, _seqnum)| (key, start))
    }
}

/// Sessions: a key's session named by its start and end, placed by its end.
#[derive(Debug)]
pub(crate) enum SessionKind {}

impl WindowKind for SessionKind {
    type Window = SessionWindow;
    /// (key, end, start).
    type Id<K>
        = (K, i64, i64)
    where
        K: Ord;
    const KEY_NAME: &'static str = "session";
    const KEY_SUFFIX: usize = 16;

    #[inline]
    fn time(window: SessionWindow) -> i64 {
        window.end
    }

    #[inline]
    fn id<K: Ord>(key: K, window: SessionWindow) -> (K, i64, i64) {
        (key, window.end, window.start)
    }

    #[inline]
    fn key<K: Ord>(id: &(K, i64, i64)) -> &K {
        &id.0
    }

    #[inline]
    fn window<K: Ord>(id: &(K, i64, i64)) -> SessionWindow {
        SessionWindow::new(id.2, id.1)
    }

    fn leading_time<K: Ord>() -> Option<fn(&(K, i64, i64)) -> i64> {
        None
    }

    #[inline]
    fn push_key_suffix(window: SessionWindow, out: &mut Vec<u8>) {
        push_session_key_suffix(window.start, window.end, out);
    }

    #[inline]
    fn split_changelog_key(bytes: &[u8]) -> Option<(&[u8], SessionWindow)> {
        decode_session_key(bytes).map(|(key, start, end)| (key, SessionWindow::new(start, end)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_order_windows_by_start_then_key_and_sessions_by_key_end_start() {
        let mut w = vec![
            TimeWindowKind::id("b", 1),
            TimeWindowKind::id("a", 2),
            TimeWindowKind::id("c", 1),
        ];
        w.sort();
        assert_eq!(w, vec![(1, "b"), (1, "c"), (2, "a")]);
        let mut s = [
            SessionKind::id("b", SessionWindow::new(0, 1)),
            SessionKind::id("a", SessionWindow::new(5, 9)),
            SessionKind::id("a", SessionWindow::new(1, 9)),
            SessionKind::id("a", SessionWindow::new(0, 3)),
        ];
        s.sort();
        let windows: Vec<_> = s
            .iter()
            .map(|id| (*SessionKind::key(id), SessionKind::window(id)))
            .collect();
        assert_eq!(
            windows,
            vec![
                ("a", SessionWindow::new(0, 3)),
                ("a", SessionWindow::new(1, 9)),
                ("a", SessionWindow::new(5, 9)),
                ("b", SessionWindow::new(0, 1)),
            ]
        );
    }

    #[test]
    fn changelog_keys_round_trip_and_short_ones_are_corrupt() {
        let mut out = b"k".to_vec();
        SessionKind::push_key_suffix(SessionWindow::new(3, 8), &mut out);
        let mut public = Vec::new();
        crate::changelog::encode_session_key(b"k", 3, 8, &mut public);
        assert_eq!(out, public, "the public layout");
        assert_eq!(
            SessionKind::split_changelog_key(&out),
            Some((&b"k"[..], SessionWindow::new(3, 8)))
        );
        out = b"k".to_vec();
        TimeWindowKind::push_key_suffix(-4, &mut out);
        public.clear();
        crate::changelog::encode_window_key(b"k", -4, 0, &mut public);
        assert_eq!(out, public, "the public layout");
        assert_eq!(
            TimeWindowKind::split_changelog_key(&out),
            Some((&b"k"[..], -4))
        );
        let entry = ChangelogEntry {
            partition: crate::changelog::ChangelogPartition(1),
            offset: crate::changelog::ChangelogOffset(2),
            key: vec![0; 11],
            value: None,
            timestamp: 0,
        };
        assert_eq!(
            TimeWindowKind::restored(&entry, "w")
                .unwrap_err()
                .to_string(),
            "store w: corrupt changelog record at partition 1 offset 2: truncated windowed key: 11 bytes, need at least 12"
        );
    }
}
