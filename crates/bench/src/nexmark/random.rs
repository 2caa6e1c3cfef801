//! [`JavaRandom`]: the 48-bit linear congruential generator of
//! `java.util.Random`, which the reference generator seeds with each event's
//! id. Reproducing it exactly means an event id draws the same numbers here as
//! there, so the rules below give the same ids, prices and ratios.

/// `java.util.Random`, bit for bit.
#[derive(Debug, Clone)]
pub struct JavaRandom {
    seed: u64,
}

const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const ADDEND: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;

impl JavaRandom {
    /// A generator seeded as `new Random(seed)`.
    pub fn new(seed: i64) -> Self {
        JavaRandom {
            seed: (seed as u64 ^ MULTIPLIER) & MASK,
        }
    }

    fn next(&mut self, bits: u32) -> i32 {
        self.seed = (self.seed.wrapping_mul(MULTIPLIER).wrapping_add(ADDEND)) & MASK;
        (self.seed >> (48 - bits)) as i64 as i32
    }

    /// `nextInt(bound)`: uniform in `[0, bound)`.
    ///
    /// # Panics
    /// If `bound <= 0` (as Java throws).
    pub fn next_int(&mut self, bound: i32) -> i32 {
        assert!(bound > 0, "bound must be positive, got {bound}");
        if bound & -bound == bound {
            return ((bound as i64 * self.next(31) as i64) >> 31) as i32;
        }
        loop {
            let bits = self.next(31);
            let val = bits % bound;
            if bits.wrapping_sub(val).wrapping_add(bound - 1) >= 0 {
                return val;
            }
        }
    }

    /// `nextDouble()`: uniform in `[0, 1)`.
    pub fn next_double(&mut self) -> f64 {
        let hi = (self.next(26) as i64) << 27;
        let lo = self.next(27) as i64;
        (hi + lo) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `nextLong()`.
    pub fn next_long(&mut self) -> i64 {
        ((self.next(32) as i64) << 32).wrapping_add(self.next(32) as i64)
    }

    /// The reference generator's `LongGenerator.nextLong(random, n)`: uniform
    /// in `[0, n)`, through `nextInt` when `n` fits.
    pub fn next_below(&mut self, n: i64) -> i64 {
        if n < i32::MAX as i64 {
            self.next_int(n as i32) as i64
        } else {
            self.next_long().rem_euclid(n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_java_util_random() {
        // Values printed by java.util.Random on OpenJDK 17.
        let mut r = JavaRandom::new(42);
        assert_eq!(r.next_int(100), 30);
        assert_eq!(r.next_int(100), 63);
        assert_eq!(JavaRandom::new(7).next_long(), -4967725919621401576);
        assert_eq!(JavaRandom::new(1234).next_int(1 << 20), 677990);
        assert_eq!(JavaRandom::new(0).next_int(10), 0);
        let d = JavaRandom::new(42).next_double();
        assert!((d - 0.7275636800328681).abs() < 1e-15, "{d}");
    }
}
