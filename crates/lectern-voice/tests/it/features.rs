//! `lectern voice add` front end against upstream CosyVoice3's `frontend_zero_shot` features
//! (fixtures/voice-prompt): resampler, whisper log-mel, Kaldi fbank, reference loading, and the
//! README's length rules.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle::{Device, Tensor};
use lectern_model::mel;
use lectern_voice::dsp::{kaldi, kernel, resample, resample::output_len, whisper};
use lectern_voice::reference::{MAX_REFERENCE_S, ReferenceError, SILENCE_PEAK, load_reference};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/voice-prompt")
}

fn load(name: &str) -> HashMap<String, Tensor> {
    candle::safetensors::load(fixture_dir().join(name), &Device::Cpu).unwrap()
}

fn flat(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max)
}

/// Max deviation over entries whose reference value is above `floor`.
fn max_abs_above(a: &[f32], b: &[f32], floor: f32) -> f32 {
    a.iter().zip(b).filter(|(_, y)| **y > floor).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max)
}

fn waves() -> HashMap<String, Tensor> {
    load("waveforms.safetensors")
}

// ---------------------------------------------------------------- resampler

#[test]
fn resample_kernels_are_bit_exact() {
    let banks = load("filterbanks.safetensors");
    for (to, name, width) in [
        (16_000, "resample_kernel_22050_to_16000", 9),
        (24_000, "resample_kernel_22050_to_24000", 7),
    ] {
        let k = kernel(22_050, to);
        let want = &banks[name];
        assert_eq!(want.dims(), &[k.n, 1, k.taps]);
        assert_eq!(k.width, width);
        let d = max_abs(&k.weights, &flat(want));
        eprintln!("{name}: max abs diff {d:e}");
        assert!(d <= 1e-7, "{name}: {d}");
    }
}

#[test]
fn resampled_waves_match_torchaudio() {
    let w = waves();
    let native = flat(&w["wav_native"]);
    for (to, name) in [(16_000, "wav_16k"), (24_000, "wav_24k")] {
        let got = resample(&native, 22_050, to);
        let d = max_abs(&got, &flat(&w[name]));
        eprintln!("{name}: len {} max abs diff {d:e}", got.len());
        assert!(d < 1e-6, "{name}: {d}");
    }
}

#[test]
fn resampling_30_s_is_fast() {
    for from in [48_000u32, 44_100] {
        let n = 30 * from as usize;
        let x: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.01).sin() * 0.5).collect();
        let t0 = std::time::Instant::now();
        let y16 = resample(&x, from, 16_000);
        let y24 = resample(&x, from, 24_000);
        let dt = t0.elapsed();
        eprintln!("30 s at {from} Hz → 16 k + 24 k: {dt:?}");
        assert_eq!((y16.len(), y24.len()), (480_000, 720_000));
        assert!(dt.as_secs_f64() < 5.0, "{dt:?}");
    }
}

// ---------------------------------------------------------------- whisper

#[test]
fn whisper_filters_match_mel_filters_npz() {
    let banks = load("filterbanks.safetensors");
    let d = max_abs(&whisper::mel_filters_128(), &flat(&banks["whisper_mel_filters_128"]));
    eprintln!("whisper mel filters: max abs diff {d:e}");
    assert!(d < 1e-6, "{d}");
}

#[test]
fn whisper_log_mel_matches_upstream() {
    let feats = load("features.safetensors");
    let wav16 = flat(&waves()["wav_16k"]);
    let (got, t) = whisper::log_mel_128(&wav16);
    assert_eq!(t, 663);
    let want_len = feats["whisper_feats_length"].to_vec1::<i32>().unwrap();
    assert_eq!(want_len, vec![t as i32]);
    let want = flat(&feats["whisper_logmel"]);
    let d = max_abs(&got, &want);
    let d_hi = max_abs_above(&got, &want, 0.5);
    eprintln!("whisper log-mel: max abs diff {d:e} (values > 0.5: {d_hi:e})");
    assert!(d < 1e-4, "{d}");

    let (power, tp) = whisper::mel_power(&wav16);
    assert_eq!(tp, t);
    let want_p = flat(&feats["whisper_mel_power"]);
    let rel = power
        .iter()
        .zip(&want_p)
        .filter(|(_, w)| **w > 1e-6)
        .map(|(p, w)| ((*p as f32 - w) / w).abs())
        .fold(0f32, f32::max);
    eprintln!("whisper mel power: max rel diff {rel:e} (entries > 1e-6)");
    assert!(rel < 1e-3, "{rel}");
}

// ---------------------------------------------------------------- Kaldi fbank

#[test]
fn kaldi_banks_and_window_match_torchaudio() {
    let banks = load("filterbanks.safetensors");
    let d = max_abs(&kaldi::mel_banks_80(), &flat(&banks["kaldi_mel_banks_80x257"]));
    eprintln!("kaldi mel banks: max abs diff {d:e}");
    assert!(d < 1e-6, "{d}");
    let w: Vec<f32> = kaldi::povey_window().iter().map(|&v| v as f32).collect();
    let d = max_abs(&w, &flat(&banks["window_povey_400"]));
    eprintln!("povey window: max abs diff {d:e}");
    assert!(d < 1e-6, "{d}");
}

#[test]
fn kaldi_fbank_and_campplus_input_match_upstream() {
    let feats = load("features.safetensors");
    let wav16 = flat(&waves()["wav_16k"]);
    let (mut got, tk) = kaldi::fbank_80(&wav16);
    assert_eq!(tk, 661);
    assert_eq!(feats["kaldi_fbank_raw"].dims(), &[tk, 80]);
    let raw = flat(&feats["kaldi_fbank_raw"]);
    let d = max_abs(&got, &raw);
    let d_hi = max_abs_above(&got, &raw, -4.0);
    eprintln!("kaldi fbank raw: max abs diff {d:e} (values > -4: {d_hi:e})");
    assert!(d < 1e-3, "{d}");
    assert!(d_hi < 5e-5, "{d_hi}");

    kaldi::subtract_column_mean(&mut got, 80);
    let want = flat(&feats["campplus_input"]);
    let d = max_abs(&got, &want);
    // "> −4" is judged on the raw value (the CMN shifts every column).
    let d_hi = got
        .iter()
        .zip(&want)
        .zip(&raw)
        .filter(|(_, r)| **r > -4.0)
        .map(|((g, w), _)| (g - w).abs())
        .fold(0f32, f32::max);
    eprintln!("campplus input: max abs diff {d:e} (raw values > -4: {d_hi:e})");
    assert!(d < 1e-3, "{d}");
}

// ---------------------------------------------------------------- length rules

#[test]
fn length_rules_match_upstream_cases() {
    let text = std::fs::read_to_string(fixture_dir().join("length_cases.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = json["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 31);
    for c in cases {
        let get = |k: &str| c[k].as_u64().unwrap() as usize;
        let (rate, n) = (get("sample_rate") as u32, get("samples"));
        let (n16, n24) = (output_len(n, rate, 16_000), output_len(n, rate, 24_000));
        assert_eq!((n16, n24), (get("n16"), get("n24")), "{c}");
        assert_eq!(whisper::n_frames(n16), get("whisper_frames"), "{c}");
        assert_eq!(kaldi::n_frames(n16), get("kaldi_frames"), "{c}");
        assert_eq!(mel::n_frames(n24), get("mel24_frames"), "{c}");
    }
    // Run the real functions on a few short cases: output shapes, not just formulas.
    for c in cases.iter().filter(|c| c["samples"].as_u64().unwrap() <= 60_240) {
        let get = |k: &str| c[k].as_u64().unwrap() as usize;
        let rate = get("sample_rate") as u32;
        let x: Vec<f32> = (0..get("samples")).map(|i| ((i as f32) * 0.05).sin() * 0.3).collect();
        let (w16, w24) = (resample(&x, rate, 16_000), resample(&x, rate, 24_000));
        assert_eq!((w16.len(), w24.len()), (get("n16"), get("n24")), "{c}");
        assert_eq!(whisper::log_mel_128(&w16).1, get("whisper_frames"), "{c}");
        let (fb, tk) = kaldi::fbank_80(&w16);
        assert_eq!((fb.len(), tk), (tk * 80, get("kaldi_frames")), "{c}");
        assert_eq!(mel::log_mel_24k(&w24).unwrap().1, get("mel24_frames"), "{c}");
    }
}

// ---------------------------------------------------------------- reference loading

fn spec(rate: u32, channels: u16, bits: u16, float: bool) -> hound::WavSpec {
    hound::WavSpec {
        channels,
        sample_rate: rate,
        bits_per_sample: bits,
        sample_format: if float { hound::SampleFormat::Float } else { hound::SampleFormat::Int },
    }
}

/// A 16-bit WAV of `frames` frames where channel c of frame i is `f(i, c)` (in int16 units).
fn write_i16(path: &Path, rate: u32, channels: u16, frames: usize, f: impl Fn(usize, u16) -> i16) {
    let mut w = hound::WavWriter::create(path, spec(rate, channels, 16, false)).unwrap();
    for i in 0..frames {
        for c in 0..channels {
            w.write_sample(f(i, c)).unwrap();
        }
    }
    w.finalize().unwrap();
}

fn tone(i: usize) -> i16 {
    (((i as f32) * 0.05).sin() * 8000.0) as i16
}

fn assert_names(e: &ReferenceError, path: &Path) {
    let msg = e.to_string();
    eprintln!("{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert_eq!(e.path(), path);
}

#[test]
fn fixture_prompt_loads_exactly() {
    let r = load_reference(&fixture_dir().join("prompt.wav")).unwrap();
    assert_eq!((r.sample_rate_hz, r.channels, r.samples.len()), (22_050, 1, 146_221));
    let want = flat(&waves()["wav_native"]);
    assert_eq!(r.samples, want);
    assert_eq!(r.resampled(22_050), want);
}

#[test]
fn short_reference_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("short.wav");
    write_i16(&p, 16_000, 1, 3_200, |i, _| tone(i));
    let e = load_reference(&p).unwrap_err();
    assert!(matches!(e, ReferenceError::TooShort { .. }), "{e}");
    assert_names(&e, &p);
    assert!(e.to_string().contains("0.5 s"));
}

#[test]
fn long_reference_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("long.wav");
    write_i16(&p, 16_000, 1, 40 * 16_000, |i, _| tone(i));
    let e = load_reference(&p).unwrap_err();
    assert!(matches!(e, ReferenceError::TooLong { seconds, .. } if seconds == 40.0), "{e}");
    assert_names(&e, &p);
    assert!(e.to_string().contains(&format!("{MAX_REFERENCE_S} s")));
}

#[test]
fn eight_bit_pcm_is_scaled_like_soundfile() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("u8.wav");
    let mut w = hound::WavWriter::create(&p, spec(16_000, 1, 8, false)).unwrap();
    for i in 0i32..16_000 {
        w.write_sample(((i % 256) - 128) as i8).unwrap();
    }
    w.finalize().unwrap();
    let r = load_reference(&p).unwrap();
    assert_eq!(r.samples.len(), 16_000);
    for (i, &s) in r.samples.iter().enumerate().take(512) {
        assert_eq!(s, ((i % 256) as f32 - 128.0) / 128.0);
    }
}

#[test]
fn eight_khz_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tel.wav");
    write_i16(&p, 8_000, 1, 8_000, |i, _| tone(i));
    let e = load_reference(&p).unwrap_err();
    assert!(matches!(e, ReferenceError::RateTooLow { rate_hz: 8_000, .. }), "{e}");
    assert_names(&e, &p);
    assert!(e.to_string().contains("16000 Hz"));
}

#[test]
fn six_channels_are_averaged() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("surround.wav");
    let val = |i: usize, c: u16| (tone(i) / 8) * (c as i16 + 1);
    write_i16(&p, 48_000, 6, 24_000, val);
    let r = load_reference(&p).unwrap();
    assert_eq!((r.sample_rate_hz, r.channels, r.samples.len()), (48_000, 6, 24_000));
    for (i, &s) in r.samples.iter().enumerate() {
        let want = (0..6).map(|c| f64::from(val(i, c)) / 32768.0).sum::<f64>() / 6.0;
        assert!((f64::from(s) - want).abs() < 1e-7, "frame {i}: {s} vs {want}");
    }
    assert_eq!(r.resampled(16_000).len(), 8_000);
}

#[test]
fn float_and_24_bit_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f32.wav");
    let mut w = hound::WavWriter::create(&p, spec(24_000, 2, 32, true)).unwrap();
    for i in 0..12_000 {
        w.write_sample(0.25f32).unwrap();
        w.write_sample(if i % 2 == 0 { 0.75f32 } else { -0.25 }).unwrap();
    }
    w.finalize().unwrap();
    let r = load_reference(&p).unwrap();
    assert_eq!(&r.samples[..2], &[0.5, 0.0]);

    let p = dir.path().join("i24.wav");
    let mut w = hound::WavWriter::create(&p, spec(16_000, 1, 24, false)).unwrap();
    for _ in 0..8_000 {
        w.write_sample(-(1i32 << 22)).unwrap();
    }
    w.finalize().unwrap();
    assert!(load_reference(&p).unwrap().samples.iter().all(|&s| s == -0.5));
}

#[test]
fn truncated_header_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.wav");
    write_i16(&good, 16_000, 1, 16_000, |i, _| tone(i));
    let p = dir.path().join("cut.wav");
    std::fs::write(&p, &std::fs::read(&good).unwrap()[..20]).unwrap();
    let e = load_reference(&p).unwrap_err();
    assert!(matches!(e, ReferenceError::Truncated { .. }), "{e}");
    assert_names(&e, &p);
}

#[test]
fn truncated_data_and_unknown_encoding_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.wav");
    write_i16(&good, 16_000, 1, 16_000, |i, _| tone(i));
    let bytes = std::fs::read(&good).unwrap();
    let p = dir.path().join("cut_data.wav");
    std::fs::write(&p, &bytes[..bytes.len() / 2 + 1]).unwrap();
    let e = load_reference(&p).unwrap_err();
    assert!(matches!(e, ReferenceError::Truncated { .. }), "{e}");
    assert_names(&e, &p);

    // Format tag 6 (A-law) in the fmt chunk: a WAV, but not PCM or IEEE float.
    let mut alaw = bytes.clone();
    alaw[20..22].copy_from_slice(&6u16.to_le_bytes());
    let p = dir.path().join("alaw.wav");
    std::fs::write(&p, &alaw).unwrap();
    let e = load_reference(&p).unwrap_err();
    assert!(matches!(e, ReferenceError::UnsupportedFormat { .. }), "{e}");
    assert_names(&e, &p);
    assert!(e.to_string().contains("accepted: WAV"));
}

#[test]
fn non_audio_file_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.wav");
    std::fs::write(&p, "These are my recording notes, not audio.\n").unwrap();
    let e = load_reference(&p).unwrap_err();
    assert!(matches!(e, ReferenceError::NotWav { .. }), "{e}");
    assert_names(&e, &p);
    assert!(e.to_string().contains("accepted: WAV"));
    let missing = dir.path().join("missing.wav");
    let e = load_reference(&missing).unwrap_err();
    assert!(matches!(e, ReferenceError::Io { .. }), "{e}");
    assert_names(&e, &missing);
}

#[test]
fn silent_reference_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("silence.wav");
    write_i16(&p, 16_000, 1, 32_000, |_, _| 0);
    let e = load_reference(&p).unwrap_err();
    assert!(matches!(e, ReferenceError::Silent { peak, .. } if peak < SILENCE_PEAK), "{e}");
    assert_names(&e, &p);
    assert!(e.to_string().contains("reference is silent"));
}

#[test]
fn non_finite_float_samples_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nan.wav");
    let mut w = hound::WavWriter::create(&p, spec(16_000, 1, 32, true)).unwrap();
    for i in 0..16_000 {
        w.write_sample(if i == 100 { f32::NAN } else { 0.1 }).unwrap();
    }
    w.finalize().unwrap();
    let e = load_reference(&p).unwrap_err();
    assert!(matches!(e, ReferenceError::NonFinite { index: 100, .. }), "{e}");
    assert_names(&e, &p);
}

// ---------------------------------------------------------------- full chain

/// prompt.wav → our decode → our resampler → all three features, against upstream's tensors
/// (which came from torchaudio's resampler): the errors do not compound past the tolerances.
#[test]
fn full_chain_from_prompt_wav_matches_upstream() {
    let feats = load("features.safetensors");
    let r = load_reference(&fixture_dir().join("prompt.wav")).unwrap();
    let (w16, w24) = (r.resampled(16_000), r.resampled(24_000));

    let (logmel, _) = whisper::log_mel_128(&w16);
    let d = max_abs(&logmel, &flat(&feats["whisper_logmel"]));
    eprintln!("chain whisper log-mel: max abs diff {d:e}");
    assert!(d < 1e-4, "{d}");

    let (mut fb, _) = kaldi::fbank_80(&w16);
    kaldi::subtract_column_mean(&mut fb, 80);
    let d = max_abs(&fb, &flat(&feats["campplus_input"]));
    eprintln!("chain campplus input: max abs diff {d:e}");
    assert!(d < 1e-3, "{d}");

    let (m24, t) = mel::log_mel_24k(&w24).unwrap();
    assert_eq!(t, 331);
    let d = max_abs(&m24, &flat(&feats["mel24_raw"]));
    eprintln!("chain mel24: max abs diff {d:e}");
    assert!(d < 5e-4, "{d}");
}

#[test]
fn features_of_30_s_are_fast() {
    let x: Vec<f32> = (0..480_000).map(|i| ((i as f32) * 0.013).sin() * 0.4).collect();
    let t0 = std::time::Instant::now();
    let (_, t) = whisper::log_mel_128(&x);
    let (_, tk) = kaldi::fbank_80(&x);
    let dt = t0.elapsed();
    eprintln!("30 s whisper log-mel + Kaldi fbank: {dt:?}");
    assert_eq!((t, tk), (3000, 2998));
    assert!(dt.as_secs_f64() < 10.0, "{dt:?}");
}
