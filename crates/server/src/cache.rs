//! [`ResponseCache`]: the responses that depend on the application
//! (`/watermarks`, `/info`, `/metrics`, the health probes, the whole
//! history), encoded at most once per refresh interval and then served as
//! they are.
//!
//! This is what keeps a request flood away from the engine: the
//! application's shared cells (its state, the `/watermarks` snapshot, the
//! metrics cells, each behind a lock the engine's threads also take) are
//! read at most once per route per interval, whatever the request rate; a
//! request between refreshes touches only the listener's own memory. The
//! engine refreshes its snapshot every 100 ms, so the default interval
//! loses nothing a reader could see.
//!
//! Owns the entries and their age. Knows nothing of HTTP or of what a
//! response says: the caller builds one when asked.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::response::{Encoded, Response};

/// How long a cached response is served (the engine's snapshot refresh).
pub(crate) const DEFAULT_REFRESH: Duration = Duration::from_millis(100);

/// Encoded responses by key, each with the instant it was built.
#[derive(Debug)]
pub(crate) struct ResponseCache<K> {
    refresh: Duration,
    entries: Vec<(K, Instant, Arc<Encoded>)>,
}

impl<K: PartialEq + Copy> ResponseCache<K> {
    /// A cache serving each response for `refresh` (zero: never cached).
    pub(crate) fn new(refresh: Duration) -> Self {
        ResponseCache {
            refresh,
            entries: Vec::new(),
        }
    }

    /// `key`'s response: the cached one if younger than the refresh
    /// interval at `now`, else `build()`'s, which is kept.
    pub(crate) fn get(
        &mut self,
        key: K,
        now: Instant,
        build: impl FnOnce() -> Response,
    ) -> Arc<Encoded> {
        let fresh = |built: Instant| now.saturating_duration_since(built) < self.refresh;
        let slot = self.entries.iter().position(|(k, _, _)| *k == key);
        if let Some(i) = slot
            && fresh(self.entries[i].1)
        {
            return self.entries[i].2.clone();
        }
        let encoded = build().encode();
        match slot {
            Some(i) => self.entries[i] = (key, now, encoded.clone()),
            None => self.entries.push((key, now, encoded.clone())),
        }
        encoded
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn a_response_is_built_once_per_refresh_interval_and_key() {
        let mut cache = ResponseCache::new(Duration::from_millis(100));
        let t0 = Instant::now();
        let built = Cell::new(0);
        let build = |s: &str| {
            built.set(built.get() + 1);
            Response::text("text/plain", s.to_owned())
        };
        for ms in 0..100 {
            let e = cache.get(1, t0 + Duration::from_millis(ms), || build("a"));
            assert_eq!(e.body(), "a");
        }
        assert_eq!(built.get(), 1, "one build in the first 100 ms");
        cache.get(2, t0, || build("b"));
        assert_eq!(built.get(), 2, "another key is another entry");
        let later = cache.get(1, t0 + Duration::from_millis(100), || build("c"));
        assert_eq!((later.body(), built.get()), ("c", 3), "rebuilt when due");
        let mut uncached = ResponseCache::new(Duration::ZERO);
        uncached.get(1, t0, || build("d"));
        uncached.get(1, t0, || build("d"));
        assert_eq!(built.get(), 5, "a zero interval caches nothing");
    }
}
