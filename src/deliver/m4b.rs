//! M4B: one AAC file with chapter marks, title/author/narrator tags and an optional cover.
//!
//! The AAC encoder is Debian's (or any) `ffmpeg` program, run as a separate process on a 16-bit
//! WAV of the mastered book, with an FFMETADATA file for the tags and chapters. Why a program
//! and not a linked library: `fdk-aac` (the only AAC encoder crate that builds offline) bundles
//! Fraunhofer's FDK library, whose licence is not a free-software licence (Debian keeps it in
//! non-free), and it would bind every Lectern binary to it; ffmpeg's native AAC encoder is
//! LGPL, and running it as a program links nothing into Lectern. Without ffmpeg, `--format m4b`
//! is an error that says how to install it; nothing is written.
//!
//! `-fflags +bitexact -flags:a +bitexact` keep ffmpeg's version string and timestamps out of
//! the file, so two exports of the same project are the same bytes.

use std::path::Path;
use std::process::Command;

use super::ffmpeg::require_ffmpeg;
use super::mastering::DELIVERY_RATE_HZ;
use super::{DeliverError, DeliveredFile, DeliveryOptions, Result, TrackAudio};

/// AAC bitrate of the M4B, kbps (mono speech; well above what AAC-LC needs for it).
pub const AAC_BITRATE_KBPS: u32 = 96;

/// Escapes a value for ffmpeg's FFMETADATA format (`=`, `;`, `#`, `\` and newlines).
#[must_use]
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '=' | ';' | '#' | '\\' | '\n') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The FFMETADATA text: book tags, then one chapter per mark, in 1/44100 s units.
#[must_use]
pub fn ffmetadata(audio: &TrackAudio, opts: &DeliveryOptions) -> String {
    let m = &opts.meta;
    let mut s = String::from(";FFMETADATA1\n");
    for (key, value) in [
        ("title", &m.title),
        ("album", &m.title),
        ("artist", &m.author),
        ("album_artist", &m.author),
        ("composer", &m.narrator),
    ] {
        if !value.is_empty() {
            s.push_str(&format!("{key}={}\n", escape(value)));
        }
    }
    s.push_str("genre=Audiobook\n");
    let rate = f64::from(DELIVERY_RATE_HZ);
    let total = audio.samples.len() as u64;
    for (i, (title, start_s)) in audio.chapters.iter().enumerate() {
        let start = (start_s * rate).round() as u64;
        let end = audio.chapters.get(i + 1).map_or(total, |(_, s)| (s * rate).round() as u64);
        s.push_str(&format!(
            "[CHAPTER]\nTIMEBASE=1/{DELIVERY_RATE_HZ}\nSTART={start}\nEND={end}\ntitle={}\n",
            escape(title)
        ));
    }
    s
}

/// Writes `BOOK.m4b` in the output directory from the mastered book and checks it.
pub fn write(audio: &TrackAudio, opts: &DeliveryOptions) -> Result<DeliveredFile> {
    // The cover was checked (a readable JPEG or PNG) with the other options.
    let program = require_ffmpeg()?;
    let name =
        if opts.meta.title.is_empty() { "book".into() } else { super::slug(&opts.meta.title) };
    let path = opts.out_dir.join(format!("{name}.m4b"));
    let work = tempfile::tempdir_in(&opts.out_dir).map_err(|e| DeliverError::File {
        path: opts.out_dir.clone(),
        detail: format!("creating a work folder: {e}"),
    })?;
    let wav = work.path().join("book.wav");
    write_wav(&wav, &audio.samples)?;
    let meta = work.path().join("chapters.txt");
    std::fs::write(&meta, ffmetadata(audio, opts))
        .map_err(|e| DeliverError::File { path: meta.clone(), detail: e.to_string() })?;
    let part = work.path().join("book.m4b");
    run_ffmpeg(&program, &wav, &meta, opts.meta.cover.as_deref(), &part)?;
    std::fs::rename(&part, &path).map_err(|e| DeliverError::File {
        path: path.clone(),
        detail: format!("moving into place: {e}"),
    })?;
    let check = super::check::check_file(&path).map_err(DeliverError::Audio)?;
    Ok(DeliveredFile {
        path,
        title: opts.meta.title.clone(),
        track: 1,
        samples: audio.samples.len() as u64,
        ceiling_db: audio.ceiling_db,
        chapters: audio.chapters.clone(),
        check,
    })
}

fn write_wav(path: &Path, samples: &[f32]) -> Result<()> {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: DELIVERY_RATE_HZ,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let err =
        |e: hound::Error| DeliverError::File { path: path.to_path_buf(), detail: e.to_string() };
    let mut w = hound::WavWriter::create(path, spec).map_err(err)?;
    for s in super::mp3::to_i16(samples) {
        w.write_sample(s).map_err(err)?;
    }
    w.finalize().map_err(err)
}

fn run_ffmpeg(
    program: &Path,
    wav: &Path,
    meta: &Path,
    cover: Option<&Path>,
    out: &Path,
) -> Result<()> {
    let mut cmd = Command::new(program);
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i"]).arg(wav);
    cmd.arg("-i").arg(meta);
    if let Some(c) = cover {
        cmd.arg("-i").arg(c);
    }
    cmd.args(["-map", "0:a", "-map_metadata", "1", "-map_chapters", "1"]);
    if cover.is_some() {
        cmd.args(["-map", "2:v", "-c:v", "copy", "-disposition:v", "attached_pic"]);
    }
    cmd.args(["-c:a", "aac", "-b:a", &format!("{AAC_BITRATE_KBPS}k"), "-ac", "1"]);
    cmd.args(["-fflags", "+bitexact", "-flags:a", "+bitexact", "-threads", "1", "-f", "mp4"]);
    cmd.arg(out);
    let output = cmd
        .output()
        .map_err(|e| DeliverError::Invalid(format!("running {}: {e}", program.display())))?;
    if !output.status.success() {
        return Err(DeliverError::Audio(format!(
            "ffmpeg failed writing the M4B ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_values_are_escaped_and_chapters_end_where_the_next_starts() {
        assert_eq!(escape("a=b;c#d\\e\nf"), "a\\=b\\;c\\#d\\\\e\\\nf");
        let audio = TrackAudio {
            title: String::new(),
            samples: vec![0.0; 44_100 * 3],
            ceiling_db: -4.0,
            chapters: vec![("One".into(), 0.0), ("Two = 2".into(), 1.5)],
        };
        let opts = DeliveryOptions::default();
        let m = ffmetadata(&audio, &opts);
        assert!(m.contains("START=0\nEND=66150\ntitle=One\n"), "{m}");
        assert!(m.contains("START=66150\nEND=132300\ntitle=Two \\= 2\n"), "{m}");
    }
}
