//! Randomness as policies see it.
//!
//! Policies take `&mut dyn RngCore` (or a generic `R: Rng`) from the caller.
//! [`PolicyRng`] is the seeded generator everyone uses, so a seed fixes every
//! random choice (tie-breaks, Random allocation, generated workloads).

pub use rand::{Rng, RngCore, SeedableRng};

/// The project's deterministic RNG: PCG-64 (MCG variant), small, fast and
/// reproducible across platforms.
pub type PolicyRng = rand_pcg::Pcg64Mcg;

/// A generator fixed by `seed`.
pub fn seeded(seed: u64) -> PolicyRng {
    PolicyRng::seed_from_u64(seed)
}

/// Derives an independent stream for component `stream` of a run seeded with
/// `seed` (for example one stream per station), so adding a component does not
/// shift the random numbers every other component sees.
pub fn substream(seed: u64, stream: u64) -> PolicyRng {
    // SplitMix64 finaliser over the pair; cheap and well mixed.
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    PolicyRng::seed_from_u64(z)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let a: Vec<u64> = (0..5)
            .map({
                let mut r = seeded(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..5)
            .map({
                let mut r = seeded(7);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(substream(7, 0).next_u64(), substream(7, 1).next_u64());
    }
}
