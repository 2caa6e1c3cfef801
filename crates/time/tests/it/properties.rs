//! Property tests of the ordering invariants, each against a small model
//! written here rather than against the tracker's own views.

use std::collections::VecDeque;
use std::time::Duration;

use proptest::prelude::*;
use stoatflow_time::{Offset, OrderedDispatch, SourcePartition, Watermark, WatermarkStrategy};

use crate::{et, tracker, wall};

#[derive(Debug, Clone)]
enum Op {
    Record { partition: usize, ts: i64 },
    Tick { advance_ms: i64 },
}

fn op(partitions: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..partitions, 0i64..10_000).prop_map(|(partition, ts)| Op::Record { partition, ts }),
        1 => (0i64..3_000).prop_map(|advance_ms| Op::Tick { advance_ms }),
    ]
}

fn cases() -> u32 {
    if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() {
        2_000
    } else {
        256
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// The published watermark never decreases, and after every recompute it
    /// equals max(previous, minimum over non-idle partitions), or holds when
    /// every partition is idle.
    #[test]
    fn published_watermark_is_the_monotonic_minimum_over_non_idle_partitions(
        partitions in 1usize..6,
        bound in 0u64..500,
        idleness in prop_oneof![Just(0u64), 500u64..5_000],
        ops in prop::collection::vec(op(5), 1..200),
    ) {
        let mut t = tracker();
        let s = WatermarkStrategy::<(), ()>::for_bounded_out_of_orderness(Duration::from_millis(bound))
            .with_idleness(Duration::from_millis(idleness));
        let idx: Vec<_> = (0..partitions)
            .map(|p| t.register(SourcePartition::new("t", p as i32), s.policy(), wall(0)).unwrap())
            .collect();
        // The model: per partition, max seen and last activity.
        let mut max_seen = vec![None::<i64>; partitions];
        let mut last_activity = vec![0i64; partitions];
        let mut now = 0i64;
        let mut published = Watermark::MIN;
        for op in ops {
            match op {
                Op::Record { partition, ts } => {
                    let p = partition % partitions;
                    t.on_record(idx[p], et(ts), wall(now)).unwrap();
                    max_seen[p] = Some(max_seen[p].map_or(ts, |m| m.max(ts)));
                    last_activity[p] = now;
                }
                Op::Tick { advance_ms } => {
                    now += advance_ms;
                    let got = t.force_watermark(wall(now));
                    let idle = |p: usize| idleness > 0 && now - last_activity[p] >= idleness as i64;
                    let min = (0..partitions)
                        .filter(|&p| !idle(p))
                        .map(|p| max_seen[p].map_or(Watermark::MIN, |m| Watermark::from_millis(m - bound as i64)))
                        .min();
                    let expected = match min {
                        Some(m) if m > published => m,
                        _ => published,
                    };
                    prop_assert!(got >= published, "went backwards: {got:?} < {published:?}");
                    prop_assert_eq!(got, expected);
                    published = got;
                }
            }
        }
    }

    /// Ordered dispatch keeps each partition in offset order and never serves a
    /// record while an older head waits in a partition alignment does not hold.
    #[test]
    fn ordered_dispatch_serves_oldest_non_held_head_in_offset_order(
        partitions in 1usize..6,
        aligned in any::<bool>(),
        ops in prop::collection::vec((0usize..6, 0i64..5_000, 0u8..4), 1..300),
    ) {
        let mut t = tracker();
        let mut s = WatermarkStrategy::<(), ()>::for_monotonous_timestamps();
        if aligned {
            s = s.with_watermark_alignment("g", Duration::from_millis(300), Duration::from_millis(1));
        }
        let idx: Vec<_> = (0..partitions)
            .map(|p| t.register(SourcePartition::new("t", p as i32), s.policy(), wall(0)).unwrap())
            .collect();
        let mut d = OrderedDispatch::new();
        let mut model: Vec<VecDeque<(i64, i64)>> = vec![VecDeque::new(); partitions];
        let mut next_offset = vec![0i64; partitions];
        let mut last_out = vec![-1i64; partitions];
        let mut now = 0;
        for (p, ts, action) in ops {
            let p = p % partitions;
            now += 1;
            match action {
                0 | 1 => {
                    let off = next_offset[p];
                    next_offset[p] += 1;
                    d.push(&mut t, idx[p], Offset(off), et(ts), (p, off), wall(now)).unwrap();
                    model[p].push_back((ts, off));
                }
                2 => { t.force_watermark(wall(now)); }
                _ => {
                    let oldest_free = (0..partitions)
                        .filter(|&q| !t.is_held(idx[q]))
                        .filter_map(|q| model[q].front().map(|&(ts, _)| (ts, q)))
                        .min();
                    match d.next(&mut t, wall(now)) {
                        None => prop_assert!(oldest_free.is_none(), "a servable head was left waiting"),
                        Some(x) => {
                            let (q, off) = x.record;
                            prop_assert_eq!(Some((x.event_time.as_millis(), q)), oldest_free);
                            prop_assert!(off > last_out[q], "offset order broken in partition {}", q);
                            last_out[q] = off;
                            prop_assert_eq!(model[q].pop_front().map(|(_, o)| o), Some(off));
                        }
                    }
                }
            }
        }
    }
}
