//! Retailer presets: each store's published technical requirements as data, one [`Preset`] per
//! store. `export --preset NAME` masters to its [`Preset::targets`], writes its format and
//! checks the written files with its [`Preset::rules`]; `lectern check --preset NAME` checks
//! with the same rules. `docs/delivery.md` cites the page each figure comes from.
//!
//! A rule is `None` where the store publishes no figure: Lectern checks nothing it cannot cite.
//! Where a store publishes no loudness figures, the mastering still aims at Lectern's usual
//! levels (ACX's: they are the strictest published, and every store below takes them); that
//! is Lectern's choice, not the store's rule, and the check does not enforce it.

use super::DeliveryFormat;
use super::check::{Rules, acx};
use super::mastering::MasteringTargets;

/// A store's delivery requirements.
#[derive(Debug, Clone, PartialEq)]
pub struct Preset {
    /// The name `--preset` takes (`acx`, `google-play`, `findaway`).
    pub name: &'static str,
    /// The store in words.
    pub store: &'static str,
    /// Where the figures come from (the pages `docs/delivery.md` cites).
    pub sources: &'static [&'static str],
    /// Whether the store accepts synthetic (text-to-speech) narration.
    pub accepts_synthetic: bool,
    /// The container Lectern writes for it.
    pub format: DeliveryFormat,
    /// One file per chapter (credits their own files).
    pub split_chapters: bool,
    /// Longest file Lectern writes, seconds: chapters longer are split at segment boundaries.
    pub max_file_s: f64,
    /// What the written files must meet.
    pub rules: Rules,
    /// What the mastering aims at.
    pub targets: MasteringTargets,
    /// The cover's rules (checked before anything is written).
    pub cover: CoverRule,
    /// What the narrator must do outside the files, printed with the export.
    pub notes: &'static [&'static str],
}

/// A store's cover image rules, in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CoverRule {
    /// Shortest side at least this.
    pub min_px: Option<u32>,
    /// Longest side at most this.
    pub max_px: Option<u32>,
    /// Width and height must be equal.
    pub square: bool,
}

/// Google Play Books' longest audiobook, seconds (100 hours).
const GOOGLE_BOOK_MAX_S: f64 = 100.0 * 3600.0;

impl Preset {
    /// Audible's ACX: human narration only (its rules are the usual mastering target).
    #[must_use]
    pub fn acx() -> Self {
        Self {
            name: "acx",
            store: "Audible (ACX)",
            sources: &[
                "https://help.acx.com/s/article/what-are-the-acx-audio-submission-requirements",
            ],
            accepts_synthetic: false,
            format: DeliveryFormat::Mp3,
            split_chapters: true,
            max_file_s: acx::MAX_DURATION_S,
            rules: Rules::acx(),
            targets: MasteringTargets::acx(),
            cover: CoverRule::default(),
            notes: &[],
        }
    }

    /// Google Play Books (Partner Center upload; it sells synthetic narration, its own
    /// auto-narrated program included).
    #[must_use]
    pub fn google_play() -> Self {
        Self {
            name: "google-play",
            store: "Google Play Books",
            sources: &[
                "https://support.google.com/books/partner/answer/3424254",
                "https://support.google.com/books/partner/answer/7626222",
            ],
            accepts_synthetic: true,
            format: DeliveryFormat::Mp3,
            split_chapters: true,
            // Google sets no limit per file; only the whole book's.
            max_file_s: GOOGLE_BOOK_MAX_S,
            rules: Rules {
                store: "Google Play Books",
                mp3_layer3: true,
                // "CBR preferred": a preference, not a rule.
                cbr: false,
                min_bitrate_kbps: Some(128),
                sample_rate_hz: None,
                min_sample_rate_hz: None,
                rms_db: None,
                peak_max_db: None,
                true_peak_max_db: None,
                noise_floor_max_db: None,
                room_tone: false,
                head_s: None,
                tail_s: None,
                max_duration_s: None,
                sample_max_s: None,
                same_channels: false,
                book_min_s: Some(5.0 * 60.0),
                book_max_s: Some(GOOGLE_BOOK_MAX_S),
            },
            targets: MasteringTargets::acx(),
            cover: CoverRule { min_px: Some(1024), max_px: Some(7200), square: false },
            notes: &[
                "Google Play Books asks you to disclose synthetic narration when you list the \
                 book in Partner Center.",
            ],
        }
    }

    /// Spotify's audiobook distribution (Findaway Voices, now also INaudio): it takes
    /// digital-voice narration and distributes it to the stores that accept it.
    #[must_use]
    pub fn findaway() -> Self {
        Self {
            name: "findaway",
            store: "Findaway Voices / Spotify",
            sources: &[
                "https://blog.findawayvoices.com/the-audiobook-mastering-guide/",
                "https://blog.findawayvoices.com/mastering-your-audiobook-for-findaway-voices-video-deep-dive/",
                "https://chapterpass.com/learn/acx-vs-findaway-vs-google-play-audio-requirements",
            ],
            accepts_synthetic: true,
            format: DeliveryFormat::Mp3,
            // "Chapters, credits, and intros must be standalone files."
            split_chapters: true,
            // No per-file limit is published; Lectern keeps ACX's split, which every store takes.
            max_file_s: acx::MAX_DURATION_S,
            // The levels cited for Findaway are ACX's; no head, tail, length or sample rule.
            rules: Rules {
                store: "Findaway Voices",
                head_s: None,
                tail_s: None,
                max_duration_s: None,
                sample_max_s: None,
                ..Rules::acx()
            },
            targets: MasteringTargets::acx(),
            cover: CoverRule::default(),
            notes: &["Spotify labels digital-voice audiobooks: begin the store description with \
                 \"This audiobook is narrated by a digital voice.\""],
        }
    }

    /// Every preset, in the order `--help` lists them.
    #[must_use]
    pub fn all() -> Vec<Self> {
        vec![Self::acx(), Self::google_play(), Self::findaway()]
    }

    /// The preset `name` names (its name or an alias: `spotify` and `inaudio` are Findaway's);
    /// an unknown name is an error listing the known ones.
    pub fn by_name(name: &str) -> Result<Self, String> {
        let wanted = match name.to_ascii_lowercase().as_str() {
            "spotify" | "inaudio" => "findaway".to_string(),
            other => other.to_string(),
        };
        Self::all().into_iter().find(|p| p.name == wanted).ok_or_else(|| {
            let names: Vec<&str> = Self::all().iter().map(|p| p.name).collect();
            format!("no preset `{name}`: use one of {}", names.join(", "))
        })
    }

    /// Checks a cover image's size against [`Self::cover`]; an error names the size and the
    /// rule.
    pub fn check_cover(&self, image: &[u8]) -> Result<(), String> {
        let rule = self.cover;
        if rule == CoverRule::default() {
            return Ok(());
        }
        let size = imagesize::blob_size(image).map_err(|e| format!("the cover: {e}"))?;
        let (w, h) = (size.width as u64, size.height as u64);
        let store = self.store;
        if let Some(min) = rule.min_px.filter(|&m| w.min(h) < u64::from(m)) {
            return Err(format!(
                "the cover is {w}×{h} px; {store} asks for at least {min} px a side"
            ));
        }
        if let Some(max) = rule.max_px.filter(|&m| w.max(h) > u64::from(m)) {
            return Err(format!("the cover is {w}×{h} px; {store} takes at most {max} px a side"));
        }
        if rule.square && w != h {
            return Err(format!("the cover is {w}×{h} px; {store} asks for a square cover"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG header of `w`×`h` (all `imagesize` reads).
    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 2, 0, 0, 0, 0, 0, 0, 0]);
        b
    }

    #[test]
    fn presets_are_found_by_name_and_alias() {
        assert_eq!(Preset::by_name("acx").unwrap().rules, Rules::acx());
        assert_eq!(Preset::by_name("Spotify").unwrap().name, "findaway");
        assert_eq!(Preset::by_name("inaudio").unwrap().name, "findaway");
        let err = Preset::by_name("audible").unwrap_err();
        assert!(err.contains("acx, google-play, findaway"), "{err}");
    }

    #[test]
    fn every_preset_masters_inside_its_own_rules() {
        for p in Preset::all() {
            let t = &p.targets;
            let r = &p.rules;
            if let Some((lo, hi)) = r.rms_db {
                assert!((lo..=hi).contains(&t.rms_db), "{}", p.name);
            }
            if let Some(max) = r.peak_max_db {
                assert!(t.peak_max_db <= max && t.first_ceiling_db < max, "{}", p.name);
            }
            if let Some(min) = r.min_bitrate_kbps {
                assert!(t.mp3_kbps >= min, "{}", p.name);
            }
            if let Some(rate) = r.sample_rate_hz {
                assert_eq!(t.rate_hz, rate, "{}", p.name);
            }
            if let Some((lo, hi)) = r.head_s {
                assert!((lo..=hi).contains(&t.head_s), "{}", p.name);
            }
            if let Some((lo, hi)) = r.tail_s {
                assert!((lo..=hi).contains(&t.tail_s), "{}", p.name);
            }
            if let Some(max) = r.max_duration_s {
                assert!(p.max_file_s <= max, "{}", p.name);
            }
            assert!(!p.sources.is_empty(), "{} cites no source", p.name);
        }
    }

    #[test]
    fn synthetic_narration_is_accepted_by_the_synthetic_stores_only() {
        assert!(!Preset::acx().accepts_synthetic);
        assert!(Preset::google_play().accepts_synthetic && Preset::findaway().accepts_synthetic);
    }

    #[test]
    fn covers_are_held_to_the_store_sizes() {
        let google = Preset::google_play();
        assert!(google.check_cover(&png(1400, 1400)).is_ok());
        let small = google.check_cover(&png(800, 1200)).unwrap_err();
        assert!(small.contains("800×1200 px") && small.contains("at least 1024"), "{small}");
        assert!(google.check_cover(&png(8000, 8000)).unwrap_err().contains("at most 7200"));
        // No published cover rule: nothing is checked (not even that it is an image).
        assert!(Preset::acx().check_cover(b"not an image").is_ok());
    }
}
