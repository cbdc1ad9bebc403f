//! Voices by name (the voices directory): a missing voice is a clear error naming it.

use lectern_voice::VoiceError;

#[test]
fn missing_voice_is_a_clear_error() {
    let e = lectern::voices::load("no-such-voice-anywhere").unwrap_err();
    assert!(matches!(e, VoiceError::Missing { .. }));
    assert!(e.to_string().contains("no-such-voice-anywhere"));
}
