//! Sorting (time, position) pairs by time, stably: the order the in-memory stores' barrier
//! flush and emission pass put their entries in.
//!
//! Owns [`sort_by_time`]: a least-significant-digit radix sort on the time's offset from the
//! smallest time, one byte per pass, when the times span few bytes (a barrier's entries
//! span seconds to minutes of milliseconds: two or three passes, linear in the entries),
//! and the standard library's stable sort otherwise. It never knows what the positions
//! point at.

/// Times spanning more than this many bytes are sorted by comparison instead.
const MAX_PASSES: u32 = 3;

/// Below this many pairs a comparison sort is as cheap as counting.
const SMALL: usize = 64;

/// Sorts `pairs` by time, keeping pairs of equal time in their order (stable); `scratch`
/// is working space, kept by the caller across calls.
pub(crate) fn sort_by_time(pairs: &mut Vec<(i64, usize)>, scratch: &mut Vec<(i64, usize)>) {
    if pairs.len() < SMALL {
        pairs.sort_by_key(|&(t, _)| t);
        return;
    }
    let (min, max) = pairs
        .iter()
        .fold((i64::MAX, i64::MIN), |(lo, hi), &(t, _)| {
            (lo.min(t), hi.max(t))
        });
    let span = max.wrapping_sub(min) as u64;
    let passes = (u64::BITS - span.leading_zeros()).div_ceil(8);
    if passes > MAX_PASSES {
        pairs.sort_by_key(|&(t, _)| t);
        return;
    }
    let digit = |t: i64, shift: u32| ((t.wrapping_sub(min) as u64 >> shift) & 0xff) as usize;
    scratch.clear();
    scratch.resize(pairs.len(), (0, 0));
    for pass in 0..passes {
        let shift = pass * 8;
        let mut next = [0usize; 256];
        for &(t, _) in pairs.iter() {
            next[digit(t, shift)] += 1;
        }
        let mut at = 0;
        for slot in next.iter_mut() {
            let n = *slot;
            *slot = at;
            at += n;
        }
        for &pair in pairs.iter() {
            let d = digit(pair.0, shift);
            scratch[next[d]] = pair;
            next[d] += 1;
        }
        std::mem::swap(pairs, scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every span (one time, a few bytes, past the pass limit, the whole i64 range) and size
    /// (below and above the counting threshold) sorts exactly as the standard stable sort.
    #[test]
    fn sorts_as_the_stable_sort_does() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut scratch = Vec::new();
        for span in [0u64, 1, 255, 256, 20_000, 1 << 24, 1 << 40, u64::MAX] {
            for n in [0usize, 1, 63, 64, 1_000, 5_000] {
                let base = next() as i64;
                let mut pairs: Vec<(i64, usize)> = (0..n)
                    .map(|i| {
                        let offset = if span == u64::MAX {
                            next()
                        } else {
                            next() % (span + 1)
                        };
                        (base.wrapping_add(offset as i64), i)
                    })
                    .collect();
                let mut expected = pairs.clone();
                expected.sort_by_key(|&(t, _)| t);
                sort_by_time(&mut pairs, &mut scratch);
                assert_eq!(pairs, expected, "span {span}, {n} pairs");
            }
        }
    }
}
