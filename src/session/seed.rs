//! The seed policy: a segment's default seed comes from the base seed and a stable key of the
//! segment — its content hash and occurrence — never from its position, so inserting a sentence
//! changes no other segment's seed. Re-seeds derive from the default seed and the take's number,
//! so a segment's sequence of takes is reproducible too. Seeds stay below a million: short
//! enough to read off the screen and type.

/// Seeds are in `[0, SEED_RANGE)`.
pub const SEED_RANGE: u64 = 1_000_000;

pub use lectern_text::hashing::splitmix64;

/// The default seed of the `occurrence`-th segment (0 for the first) with content hash `hash`.
#[must_use]
pub fn segment_seed(base: u64, hash: u64, occurrence: u32) -> u64 {
    let key = splitmix64(hash ^ splitmix64(u64::from(occurrence)));
    splitmix64(base ^ key) % SEED_RANGE
}

/// The seed of a segment's `n`-th re-seed (1 for the first), never equal to one in `taken`.
#[must_use]
pub fn reseed(default_seed: u64, n: u32, taken: &[u64]) -> u64 {
    let mut k = u64::from(n);
    loop {
        let seed = splitmix64(default_seed ^ splitmix64(k.wrapping_mul(0x2545_f491_4f6c_dd1d)))
            % SEED_RANGE;
        if seed != default_seed && !taken.contains(&seed) {
            return seed;
        }
        k = k.wrapping_add(1 << 32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_depend_on_content_and_occurrence_not_position() {
        let a = segment_seed(1000, 0xabc, 0);
        assert_eq!(a, segment_seed(1000, 0xabc, 0));
        assert_ne!(a, segment_seed(1000, 0xabc, 1));
        assert_ne!(a, segment_seed(1000, 0xabd, 0));
        assert_ne!(a, segment_seed(1001, 0xabc, 0));
        assert!(a < SEED_RANGE);
    }

    #[test]
    fn reseeds_are_reproducible_and_new() {
        let d = segment_seed(7, 42, 0);
        let first = reseed(d, 1, &[d]);
        assert_eq!(first, reseed(d, 1, &[d]));
        assert_ne!(first, d);
        let second = reseed(d, 2, &[d, first]);
        assert_ne!(second, first);
        // A collision with a taken seed moves on instead of repeating it.
        assert_ne!(reseed(d, 1, &[d, first]), first);
    }
}
