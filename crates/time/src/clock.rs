//! Injected wall clocks: [`Clock`], [`SystemClock`] and [`ManualClock`].
//!
//! Owns the only call to the operating system's clock in the engine; every
//! other component reads wall time through a `Clock` so tests control it.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::{WallTime, instant::duration_ms};

/// A source of wall-clock time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current wall-clock time.
    fn now(&self) -> WallTime;
}

/// The operating system's real-time clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> WallTime {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(duration_ms)
            .unwrap_or(0);
        WallTime::from_millis(ms)
    }
}

/// A clock that moves only when told to. Clones share one time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    ms: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: WallTime) -> Self {
        ManualClock {
            ms: Arc::new(AtomicI64::new(start.as_millis())),
        }
    }

    /// Moves the clock forward by `span`.
    pub fn advance(&self, span: Duration) {
        self.ms.fetch_add(duration_ms(span), Ordering::SeqCst);
    }

    /// Sets the clock to `to` (which may be earlier: wall clocks can step back).
    pub fn set(&self, to: WallTime) {
        self.ms.store(to.as_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> WallTime {
        WallTime::from_millis(self.ms.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_clones_share_one_time() {
        let a = ManualClock::new(WallTime::from_millis(100));
        let b = a.clone();
        a.advance(Duration::from_millis(50));
        assert_eq!(b.now(), WallTime::from_millis(150));
        b.set(WallTime::from_millis(7));
        assert_eq!(a.now(), WallTime::from_millis(7));
    }

    #[test]
    fn system_clock_reads_after_2020() {
        assert!(SystemClock.now().as_millis() > 1_577_836_800_000);
    }
}
