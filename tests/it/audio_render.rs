//! The real-time render state, driven directly (no device): channel fan-out, volume, silence on
//! shortfall, underrun counting, pause and flush.

use std::sync::Arc;

use lectern::audio::callback::{Shared, ring};
use lectern::audio::resample;

fn push(prod: &mut rtrb::Producer<f32>, xs: &[f32]) {
    let (done, rest) = prod.push_partial_slice(xs);
    assert_eq!(done.len(), xs.len());
    assert!(rest.is_empty());
}

#[test]
fn copies_mono_to_every_channel_then_silence() {
    let shared = Arc::new(Shared::default());
    let (mut prod, mut r) = ring(16, Arc::clone(&shared), 2);
    push(&mut prod, &[0.5, -0.25, 0.125]);
    let mut out = [9.0f32; 10];
    assert_eq!(r.render(&mut out), 3);
    assert_eq!(out, [0.5, 0.5, -0.25, -0.25, 0.125, 0.125, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(shared.played_frames(), 3);
    assert_eq!(shared.underruns(), 0, "ran dry with nothing pending: not an underrun");
}

#[test]
fn counts_underruns_only_while_audio_is_pending() {
    let shared = Arc::new(Shared::default());
    let (mut prod, mut r) = ring(16, Arc::clone(&shared), 1);
    push(&mut prod, &[0.1, 0.2]);
    shared.set_pending(true);
    let mut out = [0.0f32; 5];
    assert_eq!(r.render(&mut out), 2);
    assert_eq!(shared.underruns(), 1);
    assert_eq!(shared.underrun_frames(), 3);
    shared.set_pending(false);
    r.render(&mut out);
    assert_eq!(shared.underruns(), 1);
}

#[test]
fn volume_and_integer_formats() {
    let shared = Arc::new(Shared::default());
    let (mut prod, mut r) = ring(16, Arc::clone(&shared), 1);
    shared.set_volume(0.5);
    push(&mut prod, &[1.0, -1.0, 0.5]);
    let mut out = [7i16; 4];
    r.render(&mut out);
    assert_eq!(out[0], 16384);
    assert_eq!(out[1], -16384);
    assert_eq!(out[2], 8192);
    assert_eq!(out[3], 0);
    shared.set_volume(f32::NAN);
    assert!((shared.volume() - 1.0).abs() < f32::EPSILON, "bad volume resets to unity");
}

#[test]
fn pause_outputs_silence_without_consuming() {
    let shared = Arc::new(Shared::default());
    let (mut prod, mut r) = ring(16, Arc::clone(&shared), 1);
    push(&mut prod, &[0.3, 0.4]);
    shared.set_paused(true);
    let mut out = [1.0f32; 2];
    assert_eq!(r.render(&mut out), 0);
    assert_eq!(out, [0.0, 0.0]);
    shared.set_paused(false);
    assert_eq!(r.render(&mut out), 2);
    assert_eq!(out, [0.3, 0.4]);
}

#[test]
fn flush_discards_the_ring_and_acknowledges() {
    let shared = Arc::new(Shared::default());
    let (mut prod, mut r) = ring(16, Arc::clone(&shared), 1);
    push(&mut prod, &[0.3, 0.4, 0.5]);
    let req = shared.request_flush();
    assert!(!shared.flushed(req));
    let mut out = [1.0f32; 4];
    assert_eq!(r.render(&mut out), 0);
    assert!(shared.flushed(req));
    assert_eq!(shared.played_frames(), 0, "discarded frames are not played");
    push(&mut prod, &[0.6]);
    assert_eq!(r.render(&mut out), 1);
    assert_eq!(out[0], 0.6);
}

#[test]
fn resample_doubling_keeps_every_other_sample_exact() {
    let x: Vec<f32> = (0..100).map(|i| (i as f32 * 0.37).sin()).collect();
    let y = resample::linear(&x, 24_000, 48_000);
    assert_eq!(y.len(), 200);
    for i in 0..100 {
        assert_eq!(y[2 * i], x[i]);
    }
    assert!((y[1] - (x[0] + x[1]) / 2.0).abs() < 1e-6);
    assert_eq!(resample::linear(&x, 24_000, 24_000), x);
    assert_eq!(resample::output_len(960, 24_000, 44_100), 1764);
}
