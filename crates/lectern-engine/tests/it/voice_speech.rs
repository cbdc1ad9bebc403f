//! A voice reference must hold speech (issue #17: white noise was accepted as a voice). The
//! measure (`voice::speech`) runs on the audio itself: the voiced-frame ratio (YIN) and the
//! syllabic (2–8 Hz) modulation of the loudness. Speech is `fixtures/voice-prompt/prompt.wav`
//! (espeak-ng, see fixtures/voice-prompt/README.md); noise, a tone and a tone melody are
//! generated here. `voice add` refuses them, or warns with `--allow-non-speech`.

use std::path::Path;

use lectern_engine::voice::reference::load_reference;
use lectern_engine::voice::speech::SpeechEvidence;
use rand::{Rng, SeedableRng};

const SPEECH: &str = "../../fixtures/voice-prompt/prompt.wav";

const RATE: u32 = 22_050;

const SECONDS: f64 = 4.0;

fn white_noise(seed: u64) -> Vec<f32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..(SECONDS * f64::from(RATE)) as usize).map(|_| rng.gen_range(-0.3f32..0.3)).collect()
}

fn tone(hz: f64) -> Vec<f32> {
    let n = (SECONDS * f64::from(RATE)) as usize;
    (0..n)
        .map(|i| (0.3 * (std::f64::consts::TAU * hz * i as f64 / f64::from(RATE)).sin()) as f32)
        .collect()
}

/// A melody of plucked notes, four a second, each decaying: tonal and loudness-modulated at a
/// syllable-like rate, but pitched without a break — music, not speech.
fn melody() -> Vec<f32> {
    let notes = [220.0, 247.0, 262.0, 294.0, 330.0, 294.0, 262.0, 247.0];
    let note_len = RATE as usize / 4;
    let n = (SECONDS * f64::from(RATE)) as usize;
    (0..n)
        .map(|i| {
            let (k, j) = (i / note_len, i % note_len);
            let t = j as f64 / f64::from(RATE);
            let hz = notes[k % notes.len()];
            (0.3 * (-6.0 * t).exp() * (std::f64::consts::TAU * hz * t).sin()) as f32
        })
        .collect()
}

#[test]
fn speech_passes_and_noise_tone_and_melody_do_not() {
    let speech = load_reference(Path::new(SPEECH)).unwrap();
    let e = SpeechEvidence::measure(&speech.samples, speech.sample_rate_hz);
    eprintln!("speech: {e:?}");
    assert!(e.is_speech(), "the fixture's speech was refused: {e:?} {:?}", e.problem());
    for (what, samples, why) in [
        ("white noise", white_noise(7), "noise"),
        ("220 Hz tone", tone(220.0), "tone"),
        ("1 kHz tone", tone(1000.0), "tone"),
        ("melody", melody(), "instrument"),
    ] {
        let e = SpeechEvidence::measure(&samples, RATE);
        eprintln!("{what}: {e:?}");
        let problem = e.problem().unwrap_or_else(|| panic!("{what} passed as speech: {e:?}"));
        assert!(problem.contains(why), "{what}: {problem}");
    }
}
