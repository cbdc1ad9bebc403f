//! The fixed random buffers upstream draws at construction (spec/COSYVOICE3.md §10).
//!
//! They are not in any checkpoint. Upstream draws them from PyTorch's CPU generator, an
//! MT19937 reseeded with 0 by the flow's CFM constructor; we rebuild the same word stream so
//! Lectern matches upstream where upstream is deterministic:
//! * flow noise `(1, 80, 15000)` standard normal, from word 0 (§10.2);
//! * HiFT source noise `(1, 7_200_000, 9)` uniform [0, 1), from a word offset that depends on
//!   how many words the constructors drew before it (§10.3; [`HIFT_SINE_WORD_OFFSET_0_5B`]).

use super::config::{MAX_FLOW_FRAMES, N_MELS};

/// 32-bit Mersenne Twister with `init_genrand` seeding (PyTorch's CPU generator core).
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; 624],
    index: usize,
}

impl Mt19937 {
    pub fn new(seed: u32) -> Self {
        let mut state = [0u32; 624];
        state[0] = seed;
        for i in 1..624 {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        Self { state, index: 624 }
    }

    fn twist(&mut self) {
        for i in 0..624 {
            let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % 624] & 0x7fff_ffff);
            let mut next = self.state[(i + 397) % 624] ^ (y >> 1);
            if y & 1 != 0 {
                next ^= 0x9908_b0df;
            }
            self.state[i] = next;
        }
        self.index = 0;
    }

    pub fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// Discards `n` words.
    pub fn skip(&mut self, mut n: u64) {
        while n > 0 {
            if self.index >= 624 {
                self.twist();
            }
            let take = (624 - self.index).min(n as usize);
            self.index += take;
            n -= take as u64;
        }
    }

    /// PyTorch's float32 uniform: the low 24 bits of one word, × 2⁻²⁴ (exact in f32).
    pub fn next_uniform_f32(&mut self) -> f32 {
        (self.next_u32() & 0x00ff_ffff) as f32 * (1.0 / 16_777_216.0)
    }
}

/// The flow's fixed noise, flattened `(80, 15000)` row-major: `torch.randn` after seed 0.
///
/// PyTorch's vectorised normal kernel works in blocks of 16 uniforms: Box–Muller pairs
/// (j, j+8) for j < 8. 1 200 000 is a multiple of 16, so there is no scalar tail.
pub fn flow_noise() -> Vec<f32> {
    let n = N_MELS * MAX_FLOW_FRAMES;
    let mut rng = Mt19937::new(0);
    let mut out = vec![0f32; n];
    let mut u = [0f32; 16];
    for block in out.chunks_exact_mut(16) {
        for x in &mut u {
            *x = rng.next_uniform_f32();
        }
        for j in 0..8 {
            let radius = (-2.0 * (1.0 - u[j]).ln()).sqrt();
            let theta = 2.0 * std::f32::consts::PI * u[j + 8];
            block[j] = radius * theta.cos();
            block[j + 8] = radius * theta.sin();
        }
    }
    out
}

/// Word offset of the HiFT uniform buffer in the seed-0 stream for the released 0.5B model:
/// flow noise 1 200 000 + flow embedding 524 880 + speaker Linear 15 440 + F0 predictor
/// 3 312 641 + SineGen2 initial phases 9 (spec §10.3).
pub const HIFT_SINE_WORD_OFFSET_0_5B: u64 = 5_052_970;

/// The word offset of the HiFT uniform buffer for a model of these sizes, counting the words
/// each constructor draws in upstream's order (every weight and bias init is one uniform or
/// normal word per element).
pub fn hift_sine_word_offset(
    flow_vocab: usize,
    flow_dim: usize,
    spk_embed_dim: usize,
    n_mels: usize,
    f0_cond_channels: usize,
    n_harmonics_plus_one: usize,
) -> u64 {
    let flow_noise = (N_MELS * MAX_FLOW_FRAMES) as u64;
    let embedding = (flow_vocab * flow_dim) as u64;
    let spk_affine = (spk_embed_dim * flow_dim + flow_dim) as u64;
    let c = f0_cond_channels;
    let condnet = (c * n_mels * 4 + c) + 4 * (c * c * 3 + c);
    let classifier = c + 1;
    flow_noise
        + embedding
        + spk_affine
        + (condnet + classifier) as u64
        + n_harmonics_plus_one as u64
}

/// Rows `0..rows` of the HiFT uniform noise buffer `(rows, width)`, row-major, taken from the
/// seed-0 stream starting at `word_offset`.
pub fn hift_uniform_noise(word_offset: u64, rows: usize, width: usize) -> Vec<f32> {
    let mut rng = Mt19937::new(0);
    rng.skip(word_offset);
    (0..rows * width).map(|_| rng.next_uniform_f32()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_reference_words() {
        // First outputs of init_genrand(5489), the reference implementation's default seed.
        let mut rng = Mt19937::new(5489);
        assert_eq!(rng.next_u32(), 3_499_211_612);
        assert_eq!(rng.next_u32(), 581_869_302);
        assert_eq!(rng.next_u32(), 3_890_346_734);
    }

    #[test]
    fn skip_equals_drawing() {
        let mut a = Mt19937::new(0);
        let mut b = Mt19937::new(0);
        for _ in 0..1500 {
            a.next_u32();
        }
        b.skip(1500);
        assert_eq!(a.next_u32(), b.next_u32());
    }

    #[test]
    fn offset_formula_reproduces_the_0_5b_constant() {
        assert_eq!(hift_sine_word_offset(6561, 80, 192, 80, 512, 9), HIFT_SINE_WORD_OFFSET_0_5B);
    }
}
