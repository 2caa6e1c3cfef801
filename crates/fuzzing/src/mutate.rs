//! Inputs for a fuzz target: arbitrary bytes, and valid seeds mutated.
//!
//! The mutations are those that find decoder bugs: bit flips and byte writes
//! (checksums, tags), cuts and removals (a field ending early), insertions
//! and repeats (trailing bytes, many records), splices between seeds, tokens
//! of the format (for text), and boundary integers (`u32::MAX`, `i32::MAX`,
//! `-1`, `u64::MAX`, ...) written in either byte order over any position, so
//! that every length and count field is sometimes a lie as large as its type.
//!
//! Owns [`Mutation`], [`apply`] and [`inputs`]; knows no format.

use proptest::prelude::*;
use proptest::sample::Index;

/// Boundary values for 32-bit fields (lengths, counts, deltas).
const WORDS: [u32; 13] = [
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0x100,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fffe,
    0xffff_ffff,
];

/// Boundary values for 64-bit fields (offsets, timestamps, sizes).
const LONGS: [u64; 8] = [
    0,
    1,
    0x7fff_ffff,
    0xffff_ffff,
    i64::MAX as u64,
    i64::MIN as u64,
    u64::MAX - 1,
    u64::MAX,
];

/// One change to an input; positions are fractions of its length.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Flips one bit.
    Flip(Index, u8),
    /// Writes one byte.
    Set(Index, u8),
    /// Inserts bytes.
    Insert(Index, Vec<u8>),
    /// Removes up to `n` bytes.
    Remove(Index, usize),
    /// Cuts the input.
    Truncate(Index),
    /// Writes a boundary 32-bit value (little-endian unless `big`).
    Word(Index, usize, bool),
    /// Writes a boundary 64-bit value (little-endian unless `big`).
    Long(Index, usize, bool),
    /// Repeats a range of the input `times` times in place.
    Repeat(Index, usize, u8),
    /// Inserts a range of another seed.
    Splice(Index, Index, Index, usize),
    /// Inserts a token of the format.
    Token(Index, Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, v)| Mutation::Insert(i, v)),
        (any::<Index>(), 1usize..32).prop_map(|(i, n)| Mutation::Remove(i, n)),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), 0..WORDS.len(), any::<bool>())
            .prop_map(|(i, w, big)| Mutation::Word(i, w, big)),
        (any::<Index>(), 0..LONGS.len(), any::<bool>())
            .prop_map(|(i, w, big)| Mutation::Long(i, w, big)),
        (any::<Index>(), 1usize..64, 1u8..8).prop_map(|(i, n, t)| Mutation::Repeat(i, n, t)),
        (any::<Index>(), any::<Index>(), any::<Index>(), 1usize..64)
            .prop_map(|(s, from, at, n)| Mutation::Splice(s, from, at, n)),
        (any::<Index>(), any::<Index>()).prop_map(|(t, at)| Mutation::Token(t, at)),
    ]
}

/// Where `at` falls in an input of `len` bytes, counting the end as a place.
fn place(at: &Index, len: usize) -> usize {
    at.index(len + 1)
}

/// Writes `bytes` over `input` at `at` (as much as fits).
fn overwrite(input: &mut [u8], at: &Index, bytes: &[u8]) {
    if input.is_empty() {
        return;
    }
    let p = at.index(input.len());
    let n = bytes.len().min(input.len() - p);
    input[p..p + n].copy_from_slice(&bytes[..n]);
}

/// Writes the integer whose little-endian bytes are `le` over `input` at
/// `at`, in big-endian order if `big`.
fn write_int(input: &mut [u8], at: &Index, le: &[u8], big: bool) {
    let mut bytes = le.to_vec();
    if big {
        bytes.reverse();
    }
    overwrite(input, at, &bytes);
}

/// Applies `m` to `input`; `seeds` and `tokens` feed splices and tokens.
pub fn apply(input: &mut Vec<u8>, m: &Mutation, seeds: &[Vec<u8>], tokens: &[&[u8]]) {
    match m {
        Mutation::Flip(at, bit) => {
            if !input.is_empty() {
                let p = at.index(input.len());
                input[p] ^= 1 << bit;
            }
        }
        Mutation::Set(at, b) => overwrite(input, at, &[*b]),
        Mutation::Insert(at, bytes) => {
            let p = place(at, input.len());
            input.splice(p..p, bytes.iter().copied());
        }
        Mutation::Remove(at, n) => {
            let p = place(at, input.len());
            let end = (p + n).min(input.len());
            input.drain(p..end);
        }
        Mutation::Truncate(at) => input.truncate(place(at, input.len())),
        Mutation::Word(at, w, big) => write_int(input, at, &WORDS[*w].to_le_bytes(), *big),
        Mutation::Long(at, w, big) => write_int(input, at, &LONGS[*w].to_le_bytes(), *big),
        Mutation::Repeat(at, n, times) => {
            let p = place(at, input.len());
            let end = (p + n).min(input.len());
            let range = input[p..end].to_vec();
            for _ in 0..*times {
                input.splice(end..end, range.iter().copied());
            }
        }
        Mutation::Splice(seed, from, at, n) => {
            if seeds.is_empty() {
                return;
            }
            let other = seed.get(seeds);
            let f = place(from, other.len());
            let piece = &other[f..(f + n).min(other.len())];
            let p = place(at, input.len());
            input.splice(p..p, piece.iter().copied());
        }
        Mutation::Token(t, at) => {
            if tokens.is_empty() {
                return;
            }
            let token = t.get(tokens);
            let p = place(at, input.len());
            input.splice(p..p, token.iter().copied());
        }
    }
}

/// Inputs for a target: now and then arbitrary bytes (up to `max_len`), most
/// often one of `seeds` (valid encodings) with a few [`Mutation`]s, or a seed
/// as it is. `tokens` are pieces of the format for [`Mutation::Token`]
/// (empty for a binary format).
///
/// # Panics
/// When `seeds` is empty.
pub fn inputs(
    seeds: Vec<Vec<u8>>,
    tokens: &'static [&'static [u8]],
    max_len: usize,
) -> impl Strategy<Value = Vec<u8>> {
    assert!(!seeds.is_empty(), "a fuzz target needs at least one seed");
    let seeds = std::sync::Arc::new(seeds);
    let pick = seeds.clone();
    let mutated =
        (any::<Index>(), prop::collection::vec(mutation(), 1..8)).prop_map(move |(seed, ms)| {
            let mut input = seed.get(&pick).clone();
            for m in &ms {
                apply(&mut input, m, &pick, tokens);
            }
            input
        });
    let whole = seeds.clone();
    prop_oneof![
        2 => prop::collection::vec(any::<u8>(), 0..max_len),
        1 => any::<Index>().prop_map(move |i| i.get(&whole).clone()),
        12 => mutated,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    /// Every length field of a seed is sometimes `u32::MAX`: over a few
    /// thousand inputs from one 12-byte seed, each 4-byte-aligned position
    /// holds `ff ff ff ff` at least once, and inputs differ from the seed.
    #[test]
    fn boundary_values_land_on_every_field() {
        let seed = vec![0u8; 12];
        let strategy = inputs(vec![seed.clone()], &[], 16);
        let mut runner = TestRunner::deterministic();
        let mut hit = [false; 3];
        let mut changed = 0;
        for _ in 0..4_000 {
            let v = strategy.new_tree(&mut runner).expect("input").current();
            for (k, h) in hit.iter_mut().enumerate() {
                *h |= v.get(4 * k..4 * k + 4) == Some(&[0xff; 4]);
            }
            changed += usize::from(v != seed);
        }
        assert_eq!(hit, [true; 3]);
        assert!(changed > 3_000, "{changed}");
    }

    #[test]
    fn mutations_stay_in_bounds_of_any_input() {
        let seeds = vec![b"abc".to_vec(), Vec::new()];
        let tokens: &[&[u8]] = &[b"tok"];
        let mut runner = TestRunner::deterministic();
        for _ in 0..2_000 {
            let m = mutation()
                .new_tree(&mut runner)
                .expect("mutation")
                .current();
            for start in [Vec::new(), b"x".to_vec(), vec![7u8; 100]] {
                let mut input = start;
                apply(&mut input, &m, &seeds, tokens);
            }
        }
    }
}
