//! Deterministic random values for property, differential and fuzz-seed tests (feature
//! `testing` only): a tiny seeded generator, so a failing case is reproduced from its seed.

use crate::codec::Uuid;
use bytes::Bytes;

/// A seeded xorshift generator with helpers for the shapes Kafka's schemas use.
#[derive(Debug, Clone)]
pub struct SampleRng {
    state: u64,
}

impl SampleRng {
    pub fn new(seed: u64) -> Self {
        SampleRng {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True once in `n` times.
    pub fn chance(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    pub fn bool(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    /// A finite float (NaN would not compare equal after a round trip).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() % 1_000_000) as f64 / 7.0
    }

    pub fn uuid(&mut self) -> Uuid {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&self.next_u64().to_be_bytes());
        id[8..].copy_from_slice(&self.next_u64().to_be_bytes());
        Uuid(id)
    }

    pub fn string(&mut self) -> String {
        let len = self.below(8) as usize;
        (0..len)
            .map(|_| (b'a' + self.below(26) as u8) as char)
            .collect()
    }

    pub fn bytes(&mut self) -> Bytes {
        let len = self.below(12) as usize;
        (0..len).map(|_| self.next_u64() as u8).collect()
    }

    pub fn vec<T>(&mut self, mut element: impl FnMut(&mut Self) -> T) -> Vec<T> {
        let len = self.below(4) as usize;
        (0..len).map(|_| element(self)).collect()
    }
}
