//! Segment expiry: nothing goes before its retention is at or below the committed frontier,
//! whole segments go, and the segment count follows.

use proptest::prelude::*;
use stoatflow_state::SessionWindow;

use crate::engines::{ENGINES, Factory, segmented, session_state, window_state};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// With retention = size + grace, no window whose close (start + size + grace) is above
    /// the frontier is ever expired, and every window whose start + retention is below it is.
    #[test]
    fn windows_survive_until_their_close_is_at_or_below_the_frontier(
        starts in prop::collection::vec(0i64..400, 1..40),
        frontiers in prop::collection::vec(0i64..600, 1..10),
    ) {
        let cfg = segmented();
        let (size, grace) = (30i64, 10i64);
        prop_assert_eq!(cfg.retention_ms(), size + grace);
        for engine in ENGINES {
            let mut f = Factory::new(engine);
            let mut w = f.window("w");
            for (i, s) in starts.iter().enumerate() {
                w.put(format!("k{i}"), *s, i as i64, 0).unwrap();
            }
            let mut frontier = i64::MIN;
            for fr in &frontiers {
                frontier = frontier.max(*fr);
                w.expire(frontier).unwrap();
                let live = window_state(&w);
                for (i, s) in starts.iter().enumerate() {
                    let present = live.iter().any(|(st, k, _)| st == s && *k == format!("k{i}"));
                    let close = s + size + grace;
                    if close > frontier {
                        prop_assert!(present, "window at {} (close {}) expired at frontier {}", s, close, frontier);
                    }
                    if s + cfg.retention_ms() < frontier
                        && cfg.segment_expired(cfg.segment_id(*s), frontier)
                    {
                        prop_assert!(!present, "window at {} kept at frontier {}", s, frontier);
                    }
                }
                let distinct: std::collections::BTreeSet<_> =
                    live.iter().map(|(st, _, _)| cfg.segment_id(*st)).collect();
                prop_assert_eq!(w.segments(), distinct.len());
            }
        }
    }

    /// Sessions with retention = gap + grace survive until end + gap + 1 + grace is at or
    /// below the frontier (a session's close: docs/late.md#closes).
    #[test]
    fn sessions_survive_until_their_close_is_at_or_below_the_frontier(
        ends in prop::collection::vec(0i64..400, 1..40),
        frontiers in prop::collection::vec(0i64..600, 1..10),
    ) {
        let cfg = segmented();
        let (gap, grace) = (25i64, 15i64);
        prop_assert_eq!(cfg.retention_ms(), gap + grace);
        for engine in ENGINES {
            let mut f = Factory::new(engine);
            let mut s = f.session("s");
            for (i, e) in ends.iter().enumerate() {
                s.put(format!("k{i}"), SessionWindow::new(e - 3, *e), 1, 0).unwrap();
            }
            let mut frontier = i64::MIN;
            for fr in &frontiers {
                frontier = frontier.max(*fr);
                s.expire(frontier).unwrap();
                let live = session_state(&s);
                for (i, e) in ends.iter().enumerate() {
                    let present = live.iter().any(|(_, en, k, _)| en == e && *k == format!("k{i}"));
                    if e + gap + 1 + grace > frontier {
                        prop_assert!(present, "session ending {} expired at frontier {}", e, frontier);
                    }
                }
            }
        }
    }
}

#[test]
fn whole_segments_drop_and_the_gauge_follows() {
    for engine in ENGINES {
        let mut f = Factory::new(engine);
        let mut w = f.window("w");
        // Interval 20, retention 40: segments 0 (0..=19), 1 (20..=39), 2 (40..=59).
        for start in [0, 19, 20, 45] {
            w.put("a".into(), start, start, 0).unwrap();
        }
        assert_eq!(w.segments(), 3);
        // Segment 0's last time 19 expires once 19 + 40 < frontier.
        assert_eq!(w.expire(59).unwrap(), 0);
        assert_eq!(w.segments(), 3);
        assert_eq!(w.expire(60).unwrap(), 1);
        assert_eq!(w.segments(), 2);
        assert_eq!(w.fetch(&"a".into(), 0).unwrap(), None);
        assert_eq!(w.fetch(&"a".into(), 20).unwrap(), Some(20));
        // The frontier never goes back.
        assert_eq!(w.expire(0).unwrap(), 0);
        w.put("a".into(), 5, 1, 0).unwrap();
        assert_eq!(w.fetch(&"a".into(), 5).unwrap(), None);
        assert_eq!(w.expired_writes(), 1);
    }
}
