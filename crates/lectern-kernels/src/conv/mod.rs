//! Convolutions: the vocoder's on the CPU, the DiT's grouped position convolution, and the
//! tap-major form both are checked against.

pub mod direct;
pub mod grouped;
pub mod input;
pub mod tap_major;
pub mod vocoder;
