//! A voice reference must hold speech (issue #17: white noise was accepted as a voice). The
//! measure (`voice::speech`) runs on the audio itself: the voiced-frame ratio (YIN) and the
//! syllabic (2–8 Hz) modulation of the loudness. Speech is `fixtures/voice-prompt/prompt.wav`
//! (espeak-ng, see fixtures/voice-prompt/README.md); noise, a tone and a tone melody are
//! generated here. `voice add` refuses them, or warns with `--allow-non-speech`.

use std::path::Path;

use lectern_test_support::signals::{melody, tone, white_noise};
use lectern_voice::reference::load_reference;
use lectern_voice::speech::SpeechEvidence;

const SPEECH: &str = "../../fixtures/voice-prompt/prompt.wav";

const RATE: u32 = 22_050;

const SECONDS: f64 = 4.0;

#[test]
fn speech_passes_and_noise_tone_and_melody_do_not() {
    let speech = load_reference(Path::new(SPEECH)).unwrap();
    let e = SpeechEvidence::measure(&speech.samples, speech.sample_rate_hz);
    eprintln!("speech: {e:?}");
    assert!(e.is_speech(), "the fixture's speech was refused: {e:?} {:?}", e.problem());
    for (what, samples, why) in [
        ("white noise", white_noise(7, RATE, SECONDS), "noise"),
        ("220 Hz tone", tone(220.0, RATE, SECONDS), "tone"),
        ("1 kHz tone", tone(1000.0, RATE, SECONDS), "tone"),
        ("melody", melody(RATE, SECONDS), "instrument"),
    ] {
        let e = SpeechEvidence::measure(&samples, RATE);
        eprintln!("{what}: {e:?}");
        let problem = e.problem().unwrap_or_else(|| panic!("{what} passed as speech: {e:?}"));
        assert!(problem.contains(why), "{what}: {problem}");
    }
}
