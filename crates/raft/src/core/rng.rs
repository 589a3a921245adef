//! The core's only source of randomness: a seeded xorshift64* generator, so that a node's
//! choices (election timeouts, bootstrap server) are a function of its seed and inputs.

/// xorshift64* (Vigna); plenty for timeouts and never used for anything secret.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator for `seed` (zero is mapped to a fixed non-zero state).
    pub fn new(seed: u64) -> Self {
        let mixed = seed ^ 0x9E37_79B9_7F4A_7C15;
        Rng {
            state: if mixed == 0 {
                0x2545_F491_4F6C_DD1D
            } else {
                mixed
            },
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            0
        } else {
            self.next_u64() % bound
        }
    }
}
