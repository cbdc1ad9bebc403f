//! `lectern export`'s arguments: formats, the delivery options, and their value parsers.

use std::path::PathBuf;

use crate::limits;

/// `lectern export`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Project directory, or the manuscript (its project is `NAME.lectern` beside it).
    pub project: PathBuf,
    /// Output file (`book.wav`, `book.flac`: the extension sets the format); with `--split
    /// chapters`, and for `mp3`, `m4b` and `--preset acx`, the output folder, replaced as a
    /// whole [default: NAME.wav (or the folder NAME) in config.toml's output_dir, else in the
    /// current directory]
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Replace an existing output Lectern did not write (never an input of the export, never
    /// something that is not a file or folder).
    #[arg(long)]
    pub force: bool,
    /// `chapters`: one file per chapter.
    #[arg(long, value_enum)]
    pub split: Option<ExportSplit>,
    /// Audio format: `wav`/`flac` are the 24 kHz master; `mp3`/`m4b` are mastered for
    /// delivery (44.1 kHz, RMS −20 dB, peaks ≤ −3 dB, room tone) [default: wav; mp3 with
    /// --preset acx]
    #[arg(long, value_enum)]
    pub format: Option<ExportFormatArg>,
    /// A store's requirements, checked after writing (docs/delivery.md cites each): `acx`
    /// (Audible: one MP3 per chapter, 192 kbps CBR, 44.1 kHz mono, ≤ 120 min each, RMS
    /// −23…−18 dB, peaks ≤ −3 dB, room tone; human narration only), `google-play` (Google Play
    /// Books: MP3 ≥ 128 kbps, a book of 5 min to 100 h, cover 1024–7200 px), `findaway`
    /// (Spotify / Findaway Voices, also `spotify`: MP3 192 kbps CBR 44.1 kHz, RMS −23…−18 dB,
    /// peaks ≤ −3 dB, noise floor ≤ −60 dB, chapters and credits as their own files).
    #[arg(long, value_enum)]
    pub preset: Option<ExportPreset>,
    #[command(flatten)]
    pub delivery: DeliveryArgs,
    /// Bits per sample: 16 or 24 (WAV also 32 = float).
    #[arg(long, default_value_t = 16)]
    pub bits: u32,
    /// Normalise each file to this integrated loudness, LUFS (-70 to -5, e.g. -18)
    /// [default: no normalisation]
    #[arg(long, allow_hyphen_values = true, value_parser = limits::parse_loudness)]
    pub loudness: Option<f64>,
    /// Export chosen takes made for an earlier text, voice or model anyway (a warning names
    /// each); without it such takes are refused.
    #[arg(long)]
    pub allow_stale: bool,
    /// Refuse to export while any segment is not approved (naming them); without it, the
    /// book's state is one line before the export.
    #[arg(long)]
    pub require_approved: bool,
    /// Also write a JSON report here: the book's state, each segment's review and note, the
    /// files written.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Render what has no take yet first (the manuscript, with the project's model, voice and
    /// reading options, or the flags below for a first render), then export: EPUB to M4B in one
    /// command.
    #[arg(long)]
    pub render: bool,
    /// With `--render`: the model, voice and engine settings of the render.
    #[command(flatten)]
    pub synth: super::SynthArgs,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExportSplit {
    Chapters,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormatArg {
    Wav,
    Flac,
    Mp3,
    M4b,
    /// The MP3 delivery with an SRT caption file beside each MP3.
    Srt,
    /// The MP3 delivery with a WebVTT caption file beside each MP3.
    Vtt,
    /// The MP3 delivery with the book's read-along EPUB 3 (Media Overlays) beside it; an EPUB
    /// book only.
    Epub,
}

/// Caption file formats (`--captions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CaptionsArg {
    Srt,
    Vtt,
}

impl ExportFormatArg {
    /// A delivery format: mastered files in a folder (mp3, m4b, and the MP3 delivery with its
    /// captions or read-along EPUB).
    #[must_use]
    pub fn is_delivery(self) -> bool {
        !matches!(self, Self::Wav | Self::Flac)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ExportPreset {
    #[default]
    Acx,
    GooglePlay,
    #[value(alias = "spotify", alias = "inaudio")]
    Findaway,
}

impl ExportPreset {
    /// The store's preset (its data and rules).
    #[must_use]
    pub fn preset(self) -> crate::deliver::preset::Preset {
        use crate::deliver::preset::Preset;
        match self {
            Self::Acx => Preset::acx(),
            Self::GooglePlay => Preset::google_play(),
            Self::Findaway => Preset::findaway(),
        }
    }
}

/// `lectern export`'s options for delivery formats (`mp3`, `m4b`, `--preset acx`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DeliveryArgs {
    /// Book title (tags, credits; the M4B's name) [default: the EPUB's or the Markdown front
    /// matter's `title:`, else the manuscript's file name]
    #[arg(long)]
    pub title: Option<String>,
    /// Author (tags, credits) [default: the EPUB's creators or the front matter's `author:`,
    /// else config.toml's `[book] author`]
    #[arg(long)]
    pub author: Option<String>,
    /// Narrator (tags, credits) [default: the front matter's `narrator:`, else config.toml's
    /// `[book] narrator`]
    #[arg(long)]
    pub narrator: Option<String>,
    /// Cover image (JPEG or PNG): the M4B's cover, each MP3's and the FLAC master's front-cover
    /// picture, and the file beside a master [default: the EPUB's cover or the front matter's
    /// `cover:`]
    #[arg(long)]
    pub cover: Option<PathBuf>,
    /// Publisher (tags) [default: the EPUB's `dc:publisher` or the front matter's
    /// `publisher:`]
    #[arg(long)]
    pub publisher: Option<String>,
    /// Rights statement, e.g. "© 2026 Ada Writer" (tags) [default: the EPUB's `dc:rights` or
    /// the front matter's `rights:`]
    #[arg(long)]
    pub rights: Option<String>,
    /// ISBN (tags) [default: the EPUB's ISBN identifier or the front matter's `isbn:`]
    #[arg(long)]
    pub isbn: Option<String>,
    /// Description (tags) [default: the EPUB's `dc:description` or the front matter's
    /// `description:`]
    #[arg(long)]
    pub description: Option<String>,
    /// Publication date, e.g. 2026 or 2026-03-01 (tags) [default: the EPUB's `dc:date` or the
    /// front matter's `date:`]
    #[arg(long)]
    pub date: Option<String>,
    /// A room-tone recording (WAV, under −60 dB RMS) to lay under every file instead of the
    /// generated noise bed.
    #[arg(long)]
    pub room_tone: Option<PathBuf>,
    /// Level of the generated room tone, dB RMS (between −90 and −60) [default: -70]
    #[arg(long, allow_hyphen_values = true, conflicts_with = "room_tone")]
    pub room_tone_db: Option<f64>,
    /// Recording (WAV) of the opening credits, delivered as the first file.
    #[arg(long)]
    pub opening_credits: Option<PathBuf>,
    /// Recording (WAV) of the closing credits, delivered as the last file.
    #[arg(long)]
    pub closing_credits: Option<PathBuf>,
    /// Speak the opening and closing credits in the book's voice (ACX's wording, e.g.
    /// "{title}. Written by {author}. Narrated by {narrator}."; config.toml's [book]
    /// opening_credits / closing_credits change it) where no recording is given.
    // Help text, shown as written: `[book]` is config.toml's table, not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long)]
    pub credits: bool,
    /// Speak the opening credits from this template ({title}, {author}, {narrator}, {voice}).
    #[arg(long, value_name = "TEMPLATE", conflicts_with = "opening_credits")]
    pub opening_credits_text: Option<String>,
    /// Speak the closing credits from this template ({title}, {author}, {narrator}, {voice}).
    #[arg(long, value_name = "TEMPLATE", conflicts_with = "closing_credits")]
    pub closing_credits_text: Option<String>,
    /// Also write a retail sample (`sample.mp3`): the start of chapter N, whole segments,
    /// at most 5 minutes.
    #[arg(long, value_name = "CHAPTER", conflicts_with_all = ["sample_from", "sample_start"])]
    pub sample: Option<u32>,
    /// Write the retail sample from segment SEG of chapter CH (both from 1: `3:12`).
    #[arg(long, value_name = "CH:SEG", value_parser = parse_chapter_segment,
          conflicts_with = "sample_start")]
    pub sample_from: Option<(u32, u32)>,
    /// Write the retail sample from the segment playing at this time of the book's master
    /// (`m:ss`, `h:mm:ss` or seconds), whole segments.
    #[arg(long, value_name = "TIME", value_parser = parse_clock)]
    pub sample_start: Option<f64>,
    /// Length of the retail sample, room tone included (`m:ss` or seconds; at most 5:00)
    /// [default: 5:00]
    #[arg(long, value_name = "TIME", value_parser = parse_clock)]
    pub sample_length: Option<f64>,
    /// Print the check of the written files as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write captions beside each delivered file (`srt` or `vtt`, the file's name with
    /// that extension): one cue per segment, timed on that file's timeline.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub captions: Option<CaptionsArg>,
}

impl DeliveryArgs {
    /// The book's metadata as the flags give it (each wins over the manuscript and config).
    #[must_use]
    pub fn meta_flags(&self) -> crate::deliver::MetaFlags {
        crate::deliver::MetaFlags {
            title: self.title.clone(),
            author: self.author.clone(),
            narrator: self.narrator.clone(),
            cover: self.cover.clone(),
            publisher: self.publisher.clone(),
            rights: self.rights.clone(),
            isbn: self.isbn.clone(),
            description: self.description.clone(),
            date: self.date.clone(),
        }
    }

    /// The flags given that shape a delivery only, by name: a master export (WAV, FLAC)
    /// refuses them rather than leave them unused. The metadata flags tag every format.
    #[must_use]
    pub fn given_for_delivery_only(&self) -> Vec<&'static str> {
        self.delivery_only_flags().into_iter().filter(|(_, given)| *given).map(|(n, _)| n).collect()
    }

    /// The flags that shape a delivery only, by name, with whether each was given (a test
    /// keeps the list in step with the struct's fields; the others are [`Self::meta_flags`]).
    fn delivery_only_flags(&self) -> [(&'static str, bool); 13] {
        [
            ("--room-tone", self.room_tone.is_some()),
            ("--room-tone-db", self.room_tone_db.is_some()),
            ("--opening-credits", self.opening_credits.is_some()),
            ("--closing-credits", self.closing_credits.is_some()),
            ("--credits", self.credits),
            ("--opening-credits-text", self.opening_credits_text.is_some()),
            ("--closing-credits-text", self.closing_credits_text.is_some()),
            ("--sample", self.sample.is_some()),
            ("--sample-from", self.sample_from.is_some()),
            ("--sample-start", self.sample_start.is_some()),
            ("--sample-length", self.sample_length.is_some()),
            ("--json", self.json),
            ("--captions", self.captions.is_some()),
        ]
    }
}

/// `CH:SEG`, both whole numbers from 1.
fn parse_chapter_segment(text: &str) -> std::result::Result<(u32, u32), String> {
    let bad = || format!("`{text}`: write CHAPTER:SEGMENT, both from 1 (e.g. 3:12)");
    let (ch, seg) = text.split_once(':').ok_or_else(bad)?;
    let ch: u32 = ch.trim().parse().map_err(|_| bad())?;
    let seg: u32 = seg.trim().parse().map_err(|_| bad())?;
    if ch == 0 || seg == 0 {
        return Err(bad());
    }
    Ok((ch, seg))
}

/// `m:ss`, `h:mm:ss` or seconds (fractions allowed), as seconds.
pub fn parse_clock(text: &str) -> std::result::Result<f64, String> {
    let bad = || format!("`{text}`: write m:ss, h:mm:ss or seconds (e.g. 4:30 or 270)");
    let mut seconds = 0.0;
    let parts: Vec<&str> = text.trim().split(':').collect();
    if parts.len() > 3 {
        return Err(bad());
    }
    for (i, part) in parts.iter().enumerate() {
        let value: f64 = part.parse().map_err(|_| bad())?;
        let last = i + 1 == parts.len();
        if !value.is_finite() || value < 0.0 || (!last && value.fract() != 0.0) {
            return Err(bad());
        }
        if i > 0 && value >= 60.0 {
            return Err(bad());
        }
        seconds = seconds * 60.0 + value;
    }
    Ok(seconds)
}

#[cfg(test)]
mod tests {
    use super::DeliveryArgs;

    /// `given` names every delivery flag clap knows, so none is left unused by a master export.
    #[test]
    fn given_knows_every_delivery_flag() {
        use clap::Args;
        let cmd = DeliveryArgs::augment_args(clap::Command::new("export"));
        let mut defined: Vec<String> =
            cmd.get_arguments().filter_map(|a| a.get_long()).map(|l| format!("--{l}")).collect();
        // What `meta_flags` holds; every other flag must be on the delivery-only list.
        let metadata = [
            "--title",
            "--author",
            "--narrator",
            "--cover",
            "--publisher",
            "--rights",
            "--isbn",
            "--description",
            "--date",
        ];
        let delivery = DeliveryArgs::default().delivery_only_flags();
        let mut listed: Vec<String> =
            metadata.into_iter().chain(delivery.map(|(name, _)| name)).map(String::from).collect();
        defined.sort();
        listed.sort();
        assert_eq!(listed, defined);
    }
}
