//! Per-take quality figures, so drift across a long book is visible: how like the voice a take
//! sounds (cosine of CAM++ speaker embeddings, the model the voice was made with), how fast it
//! speaks (text units per second of voiced audio: words, or characters for Chinese), and how
//! loud it is against the book's median (integrated loudness, BS.1770).
//!
//! Outliers are flagged against the book itself, not fixed thresholds: voices, languages and
//! models differ, a take that differs from its neighbours is what a narrator needs to hear.
//! On the bundled tiny model (random weights) the figures are computed the same way but mean
//! nothing about a voice: no speaker discrimination is claimed there.

use serde::{Deserialize, Serialize};

use crate::deliver::mastering::{TRIM_THRESHOLD_DB, rms_db};

/// A take louder or quieter than the book's median by more than this is flagged, dB.
pub const LOUDNESS_OUTLIER_DB: f64 = 3.0;
/// A take faster or slower than the book's median rate by more than this factor is flagged.
pub const RATE_OUTLIER_RATIO: f64 = 1.3;
/// A take whose similarity is this far under the book's median is flagged (cosine).
pub const SIMILARITY_OUTLIER: f32 = 0.1;

/// What a take measures, and how it compares with the book.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TakeQuality {
    /// Seconds of 10 ms frames over the trim threshold (−50 dBFS).
    pub voiced_s: f64,
    /// Words (Latin script), plus characters of Chinese.
    pub text_units: usize,
    /// Text units per voiced second (0 when nothing is voiced).
    pub rate_per_s: f64,
    /// Integrated loudness, LUFS (None for a take under 0.4 s, one BS.1770 block, or silence).
    pub loudness_lufs: Option<f64>,
    /// Loudness minus the book's median, dB (0 when not measured).
    pub loudness_vs_median_db: f64,
    /// Cosine of the take's CAM++ embedding and the voice's (None: no CAM++ model).
    pub similarity: Option<f32>,
    /// Rate over the book's median rate (None when either is not measured).
    pub rate_vs_median: Option<f64>,
    /// Which figures are outliers in this book: `loudness`, `rate`, `voice`; `silent` for a
    /// take with text but no voiced frame.
    pub flags: Vec<&'static str>,
}

/// Cosine similarity of two vectors (0 when either is all zeros).
#[must_use]
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 { 0.0 } else { (dot / (na * nb)) as f32 }
}

/// Text units of `text`: each Han character counts one, each other run of letters or digits
/// one word.
#[must_use]
pub fn text_units(text: &str) -> usize {
    let mut units = 0;
    let mut in_word = false;
    for c in text.chars() {
        if is_han(c) {
            units += 1;
            in_word = false;
        } else if c.is_alphanumeric() {
            if !in_word {
                units += 1;
            }
            in_word = true;
        } else if c != '\'' && c != '’' {
            in_word = false;
        }
    }
    units
}

fn is_han(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}' | '\u{F900}'..='\u{FAFF}')
}

/// Seconds of `samples` in 10 ms frames louder than [`TRIM_THRESHOLD_DB`].
#[must_use]
pub fn voiced_seconds(samples: &[f32], rate_hz: u32) -> f64 {
    let frame = (rate_hz / 100) as usize;
    let voiced = samples.chunks(frame).filter(|c| rms_db(c) > TRIM_THRESHOLD_DB).count();
    voiced as f64 * 0.01
}

/// Median of the finite values (None if there are none).
#[must_use]
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 0 { f64::midpoint(v[mid - 1], v[mid]) } else { v[mid] })
}

/// One take's own figures, before the book's medians are known (stored with the take).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TakeFigures {
    pub voiced_s: f64,
    pub text_units: usize,
    pub loudness_lufs: Option<f64>,
    pub similarity: Option<f32>,
}

impl TakeFigures {
    /// Measures a take of `text` (24 kHz samples); `similarity` from the caller's CAM++.
    pub fn measure(text: &str, samples: &[f32], similarity: Option<f32>) -> Result<Self, String> {
        let rate = crate::audio::SAMPLE_RATE_HZ;
        let lufs = crate::audio::loudness::integrated_lufs(samples).map_err(|e| e.to_string())?;
        Ok(Self {
            voiced_s: voiced_seconds(samples, rate),
            text_units: text_units(text),
            loudness_lufs: lufs.is_finite().then_some(lufs),
            // A degenerate embedding (a take of a few frames) says nothing.
            similarity: similarity.filter(|s| s.is_finite()),
        })
    }

    fn rate_per_s(&self) -> f64 {
        if self.voiced_s > 0.0 { self.text_units as f64 / self.voiced_s } else { 0.0 }
    }
}

/// The book's medians every take is compared with.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BookNorms {
    pub loudness_lufs: Option<f64>,
    pub rate_per_s: Option<f64>,
    pub similarity: Option<f64>,
}

impl BookNorms {
    /// The medians of `figures` (the book's chosen takes).
    pub fn of<'a>(figures: impl IntoIterator<Item = &'a TakeFigures>) -> Self {
        let all: Vec<&TakeFigures> = figures.into_iter().collect();
        let all = all.into_iter();
        Self {
            loudness_lufs: median(all.clone().filter_map(|f| f.loudness_lufs)),
            rate_per_s: median(all.clone().map(TakeFigures::rate_per_s).filter(|r| *r > 0.0)),
            similarity: median(all.filter_map(|f| f.similarity.map(f64::from))),
        }
    }

    /// How one take compares with the book: its figures and its outlier flags.
    #[must_use]
    pub fn judge(&self, f: &TakeFigures) -> TakeQuality {
        let rate = f.rate_per_s();
        let vs_median = match (f.loudness_lufs, self.loudness_lufs) {
            (Some(l), Some(m)) => l - m,
            _ => 0.0,
        };
        let mut flags = Vec::new();
        if vs_median.abs() > LOUDNESS_OUTLIER_DB {
            flags.push("loudness");
        }
        if f.voiced_s == 0.0 && f.text_units > 0 {
            flags.push("silent");
        }
        if let (Some(m), true) = (self.rate_per_s, rate > 0.0) {
            if rate > m * RATE_OUTLIER_RATIO || rate < m / RATE_OUTLIER_RATIO {
                flags.push("rate");
            }
        }
        if let (Some(s), Some(m)) = (f.similarity, self.similarity) {
            if f64::from(s) < m - f64::from(SIMILARITY_OUTLIER) {
                flags.push("voice");
            }
        }
        TakeQuality {
            voiced_s: f.voiced_s,
            text_units: f.text_units,
            rate_per_s: rate,
            loudness_lufs: f.loudness_lufs,
            loudness_vs_median_db: vs_median,
            similarity: f.similarity,
            rate_vs_median: self.rate_per_s.filter(|_| rate > 0.0).map(|m| rate / m),
            flags,
        }
    }
}

/// Compares every take with the book: medians of loudness, rate and similarity, and flags.
#[must_use]
pub fn assess(figures: &[TakeFigures]) -> Vec<TakeQuality> {
    let norms = BookNorms::of(figures);
    figures.iter().map(|f| norms.judge(f)).collect()
}

impl TakeQuality {
    /// The flags as a narrator reads them, each with its figure: `quiet −5.0 dB`,
    /// `fast ×1.6`, `voice 0.55`, `silent`.
    #[must_use]
    pub fn flag_labels(&self) -> Vec<String> {
        self.flags
            .iter()
            .map(|flag| match *flag {
                "loudness" => {
                    let word = if self.loudness_vs_median_db > 0.0 { "loud" } else { "quiet" };
                    format!("{word} {:+.1} dB", self.loudness_vs_median_db)
                }
                "rate" => {
                    let ratio = self.rate_vs_median.unwrap_or(1.0);
                    let word = if ratio > 1.0 { "fast" } else { "slow" };
                    format!("{word} ×{ratio:.2}")
                }
                "voice" => format!("voice {:.2}", self.similarity.unwrap_or(0.0)),
                other => other.to_string(),
            })
            .collect()
    }

    /// The figures on one line: `similarity 0.81 · 2.9 words/s (×1.02) · -21.3 LUFS (+0.4 dB vs
    /// book)` (words, or characters of Chinese).
    #[must_use]
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = self.similarity {
            parts.push(format!("similarity {s:.2}"));
        }
        let ratio = self.rate_vs_median.map_or(String::new(), |r| format!(" (×{r:.2})"));
        parts.push(format!("{:.1} words/s{ratio}", self.rate_per_s));
        match self.loudness_lufs {
            Some(l) => {
                parts.push(format!("{l:.1} LUFS ({:+.1} dB vs book)", self.loudness_vs_median_db));
            }
            None => parts.push("loudness not measured".to_string()),
        }
        parts.join(" · ")
    }
}

/// What measures takes: the CAM++ embedding of each voice of the cast and, when the model has
/// `campplus.onnx`, the encoder that embeds a take the same way (else similarity is left out).
/// A take is compared with the voice that spoke it.
pub struct QualityProbe {
    encoder: Option<lectern_voice::onnx::SpeakerEncoder>,
    /// (voice name, its speaker embedding).
    voice_embeddings: Vec<(String, Vec<f32>)>,
}

impl std::fmt::Debug for QualityProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QualityProbe").field("similarity", &self.encoder.is_some()).finish()
    }
}

impl QualityProbe {
    /// Loads the model directory's CAM++ (if it has one) for `voice`.
    pub fn load(model_dir: &std::path::Path, voice: &lectern_voice::Voice) -> anyhow::Result<Self> {
        use anyhow::Context;
        use lectern_voice::extract::CAMPPLUS_ONNX;
        let campplus = model_dir.join(CAMPPLUS_ONNX);
        let encoder = if campplus.is_file() {
            let e = lectern_voice::onnx::SpeakerEncoder::load(&campplus)
                .with_context(|| format!("loading {}", campplus.display()))?;
            Some(e)
        } else {
            None
        };
        let mut probe = Self { encoder, voice_embeddings: Vec::new() };
        probe.add_voice(voice)?;
        Ok(probe)
    }

    /// Takes spoken by `voice` are compared with it from now on.
    pub fn add_voice(&mut self, voice: &lectern_voice::Voice) -> anyhow::Result<()> {
        let name = &voice.manifest.name;
        if !self.voice_embeddings.iter().any(|(n, _)| n == name) {
            let embedding = voice.speaker_embedding.flatten_all()?.to_vec1()?;
            self.voice_embeddings.push((name.clone(), embedding));
        }
        Ok(())
    }

    /// The figures of a take of `text` (24 kHz samples) spoken by the voice named `voice`
    /// (similarity left out for a voice the probe was not given).
    pub fn measure(&self, text: &str, samples: &[f32], voice: &str) -> anyhow::Result<TakeFigures> {
        let reference = self.voice_embeddings.iter().find(|(n, _)| n == voice).map(|(_, e)| e);
        let similarity = match (&self.encoder, reference) {
            (Some(e), Some(r)) => take_embedding(e, samples)?.map(|emb| cosine(&emb, r)),
            _ => None,
        };
        TakeFigures::measure(text, samples, similarity).map_err(anyhow::Error::msg)
    }
}

/// The CAM++ embedding of a 24 kHz take, as the voice's was made (16 kHz, 80-bin Kaldi fbank,
/// mean-normalised); None for a take too short for one fbank frame.
fn take_embedding(
    encoder: &lectern_voice::onnx::SpeakerEncoder,
    samples: &[f32],
) -> anyhow::Result<Option<Vec<f32>>> {
    use lectern_voice::dsp::{kaldi, resample};
    let wav16 = resample(samples, crate::audio::SAMPLE_RATE_HZ, 16_000);
    let (mut fbank, frames) = kaldi::fbank_80(&wav16);
    if frames == 0 {
        return Ok(None);
    }
    kaldi::subtract_column_mean(&mut fbank, 80);
    Ok(Some(encoder.embed(&fbank, frames)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_known_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 2.0]).abs() < 1e-6);
        assert!((cosine(&[1.0, 1.0], &[-1.0, -1.0]) + 1.0).abs() < 1e-6);
        assert!((cosine(&[3.0, 4.0], &[4.0, 3.0]) - 0.96).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 2.0]), 0.0);
    }

    #[test]
    fn text_units_are_words_or_han_characters() {
        assert_eq!(text_units("The keeper's lamp, lit at 9."), 6);
        assert_eq!(text_units("灯塔亮了。"), 4);
        assert_eq!(text_units("Mixed 中文 text"), 4);
        assert_eq!(text_units("…"), 0);
    }

    #[test]
    fn rate_is_units_per_voiced_second() {
        // 1 s of tone and 1 s of silence: 1 voiced second; 4 words → 4 words/s.
        let mut x: Vec<f32> = (0..24_000).map(|i| 0.3 * (i as f32 * 0.05).sin()).collect();
        x.extend(vec![0.0; 24_000]);
        let f = TakeFigures::measure("one two three four", &x, None).unwrap();
        assert!((f.voiced_s - 1.0).abs() < 1e-9, "{}", f.voiced_s);
        assert!((f.rate_per_s() - 4.0).abs() < 1e-9);
    }

    #[test]
    fn outliers_are_flagged_against_the_book() {
        let take = |lufs: f64, voiced_s: f64, sim: f32| TakeFigures {
            voiced_s,
            text_units: 10,
            loudness_lufs: Some(lufs),
            similarity: Some(sim),
        };
        let q = assess(&[
            take(-20.0, 4.0, 0.8),
            take(-20.5, 4.0, 0.82),
            take(-19.5, 4.1, 0.79),
            take(-25.0, 4.0, 0.8),  // quiet
            take(-20.0, 2.0, 0.8),  // fast: 5 units/s against 2.5
            take(-20.0, 4.0, 0.55), // another voice
            TakeFigures { voiced_s: 0.1, text_units: 0, loudness_lufs: None, similarity: None },
            TakeFigures { voiced_s: 0.0, text_units: 5, loudness_lufs: None, similarity: None },
        ]);
        assert_eq!(q[3].loudness_vs_median_db, -5.0);
        let flags: Vec<&[&str]> = q.iter().map(|t| t.flags.as_slice()).collect();
        // The last, too short to measure, is not flagged for what could not be measured.
        let want: [&[&str]; 8] =
            [&[], &[], &[], &["loudness"], &["rate"], &["voice"], &[], &["silent"]];
        assert_eq!(flags, want);
        assert_eq!(median([3.0, 1.0, 2.0, f64::NEG_INFINITY]), Some(2.0));
        assert_eq!(median([4.0, 1.0]), Some(2.5));
    }
}
