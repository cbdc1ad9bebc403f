//! M4B: one AAC file with chapter marks, title/author/narrator tags and an optional cover.
//!
//! The AAC encoder is Debian's (or any) `ffmpeg` program, run as a separate process reading a
//! 16-bit WAV stream of the mastered book on its standard input, with an FFMETADATA file for
//! the tags and chapters. Why a program and not a linked library: `fdk-aac` (the only AAC
//! encoder crate that builds offline) bundles Fraunhofer's FDK library, whose licence is not a
//! free-software licence (Debian keeps it in non-free), and it would bind every Lectern binary
//! to it; ffmpeg's native AAC encoder is LGPL, and running it as a program links nothing into
//! Lectern. Without ffmpeg, `--format m4b` is an error that says how to install it; nothing is
//! written.
//!
//! `-fflags +bitexact -flags:a +bitexact` keep ffmpeg's version string and timestamps out of
//! the file, so two exports of the same project are the same bytes.

use std::path::Path;
use std::process::{Command, Stdio};

use super::ffmpeg::require_ffmpeg;
use super::mastering::DELIVERY_RATE_HZ;
use super::{DeliverError, DeliveredFile, DeliveryOptions, Result, Sink, TrackAudio};

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
    let p = &m.publication;
    let year = p.date.get(..4).filter(|y| y.chars().all(|c| c.is_ascii_digit()));
    let mut s = String::from(";FFMETADATA1\n");
    // The keys ffmpeg's MP4 writer turns into iTunes atoms (©nam, ©alb, ©ART, aART, ©wrt,
    // cprt, desc, ©day); it drops keys it does not know, so the disclosure's fields travel in
    // the comment (©cmt) as `KEY=value` pairs before the sentence.
    for (key, value) in [
        ("title", m.title.as_str()),
        ("album", &m.title),
        ("artist", &m.author),
        ("album_artist", &m.author),
        ("composer", &m.narrator),
        ("copyright", &p.rights),
        ("description", &p.description),
        ("date", year.unwrap_or_default()),
        ("comment", &comment(m)),
    ] {
        if !value.trim().is_empty() {
            s.push_str(&format!("{key}={}\n", escape(value.trim())));
        }
    }
    s.push_str("genre=Audiobook\n");
    let rate = f64::from(DELIVERY_RATE_HZ);
    let total = audio.total_samples;
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

/// The M4B's comment: the disclosure's fields and sentence, then the publisher and ISBN (which
/// ffmpeg's MP4 writer has no atom for).
fn comment(m: &super::BookMeta) -> String {
    let p = &m.publication;
    let mut parts = vec![m.disclosure.comment_line()];
    if !p.publisher.trim().is_empty() {
        parts.push(format!("Publisher: {}.", p.publisher.trim()));
    }
    if !p.isbn.trim().is_empty() {
        parts.push(format!("ISBN: {}.", p.isbn.trim()));
    }
    parts.join(" ")
}

/// Writes `BOOK.m4b` in the output directory from the mastered book, which `feed` streams
/// (to the sink it is given) and `audio` describes, and checks it.
pub fn write(
    audio: &TrackAudio,
    opts: &DeliveryOptions,
    feed: &mut dyn FnMut(&mut Sink) -> Result<()>,
) -> Result<DeliveredFile> {
    // The cover was checked (a readable JPEG or PNG) with the other options.
    let program = require_ffmpeg()?;
    let name =
        if opts.meta.title.is_empty() { "book".into() } else { super::slug(&opts.meta.title) };
    let path = opts.out_dir.join(format!("{name}.m4b"));
    let work = tempfile::tempdir_in(&opts.out_dir).map_err(|e| DeliverError::File {
        path: opts.out_dir.clone(),
        detail: format!("creating a work folder: {e}"),
    })?;
    let meta = work.path().join("chapters.txt");
    std::fs::write(&meta, ffmetadata(audio, opts))
        .map_err(|e| DeliverError::File { path: meta.clone(), detail: e.to_string() })?;
    let part = work.path().join("book.m4b");
    let input = Pcm { samples: audio.total_samples, rate_hz: opts.targets.rate_hz };
    run_ffmpeg(&program, input, feed, &meta, opts.meta.cover.as_deref(), &part)?;
    std::fs::rename(&part, &path).map_err(|e| DeliverError::File {
        path: path.clone(),
        detail: format!("moving into place: {e}"),
    })?;
    let check = super::check::check_file_with(&path, &opts.rules).map_err(DeliverError::Audio)?;
    Ok(DeliveredFile {
        path,
        title: opts.meta.title.clone(),
        track: 1,
        samples: audio.total_samples,
        ceiling_db: audio.ceiling_db,
        chapters: audio.chapters.clone(),
        spans: audio.spans.clone(),
        check,
    })
}

/// The book's audio as ffmpeg's input takes it: 16-bit mono at `rate_hz`, `samples` long.
#[derive(Clone, Copy)]
struct Pcm {
    samples: u64,
    rate_hz: u32,
}

impl Pcm {
    /// The 44-byte header of a 16-bit mono PCM WAV of these samples: ffmpeg reads the stream
    /// from a pipe, so the sizes are written first (the audio is planned, its length known).
    fn wav_header(self) -> Result<Vec<u8>> {
        let data = self.samples * 2;
        let data = u32::try_from(data).ok().filter(|&d| d <= u32::MAX - 36).ok_or_else(|| {
            DeliverError::Invalid(format!(
                "the book is {:.1} hours long: one M4B's 16-bit input holds at most about 13.5 \
                 hours at {} Hz; deliver MP3s per chapter",
                self.samples as f64 / f64::from(self.rate_hz) / 3600.0,
                self.rate_hz
            ))
        })?;
        let mut h = Vec::with_capacity(44);
        h.extend_from_slice(b"RIFF");
        h.extend_from_slice(&(36 + data).to_le_bytes());
        h.extend_from_slice(b"WAVEfmt ");
        h.extend_from_slice(&16u32.to_le_bytes());
        h.extend_from_slice(&1u16.to_le_bytes()); // PCM
        h.extend_from_slice(&1u16.to_le_bytes()); // mono
        h.extend_from_slice(&self.rate_hz.to_le_bytes());
        h.extend_from_slice(&(self.rate_hz * 2).to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&16u16.to_le_bytes());
        h.extend_from_slice(b"data");
        h.extend_from_slice(&data.to_le_bytes());
        Ok(h)
    }
}

/// Runs ffmpeg with the book streamed into its standard input as a WAV (the bytes a WAV file
/// of the book would hold, so the M4B is the same bytes; nothing the size of the book is held
/// or written but the M4B itself).
fn run_ffmpeg(
    program: &Path,
    input: Pcm,
    feed: &mut dyn FnMut(&mut Sink) -> Result<()>,
    meta: &Path,
    cover: Option<&Path>,
    out: &Path,
) -> Result<()> {
    let mut cmd = Command::new(program);
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-f", "wav", "-i", "-"]);
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
    cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| DeliverError::Invalid(format!("running {}: {e}", program.display())))?;
    // Its error output is read on a thread, so a chatty ffmpeg never blocks on a full pipe.
    let stderr = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut e, &mut text);
            text
        })
    });
    let fed = child.stdin.take().map_or_else(
        || Err(DeliverError::Audio("ffmpeg took no input".into())),
        |stdin| feed_pcm(stdin, input, feed),
    );
    if fed.is_err() {
        let _ = child.kill();
    }
    let status = child.wait().map_err(|e| DeliverError::Audio(format!("waiting for ffmpeg: {e}")));
    let err = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    match (fed, status) {
        (_, Ok(status)) if !status.success() && !err.trim().is_empty() => Err(DeliverError::Audio(
            format!("ffmpeg failed writing the M4B ({status}): {}", err.trim()),
        )),
        (Err(e), _) => Err(e),
        (Ok(()), Err(e)) => Err(e),
        (Ok(()), Ok(status)) if !status.success() => {
            Err(DeliverError::Audio(format!("ffmpeg failed writing the M4B ({status})")))
        }
        (Ok(()), Ok(_)) => Ok(()),
    }
}

/// Writes the WAV header, then the samples `feed` gives as 16-bit PCM, to ffmpeg's input.
fn feed_pcm(
    stdin: std::process::ChildStdin,
    input: Pcm,
    feed: &mut dyn FnMut(&mut Sink) -> Result<()>,
) -> Result<()> {
    use std::io::Write;
    let broken = |e: std::io::Error| DeliverError::Audio(format!("feeding ffmpeg: {e}"));
    let mut w = std::io::BufWriter::with_capacity(1 << 16, stdin);
    w.write_all(&input.wav_header()?).map_err(broken)?;
    let mut written = 0u64;
    let mut bytes = Vec::new();
    feed(&mut |x| {
        bytes.clear();
        bytes.extend(x.iter().flat_map(|&s| super::mp3::sample_to_i16(s).to_le_bytes()));
        written += x.len() as u64;
        w.write_all(&bytes).map_err(broken)
    })?;
    if written != input.samples {
        return Err(DeliverError::Audio(format!(
            "the book's audio was planned {} samples long and came {written}",
            input.samples
        )));
    }
    w.flush().map_err(broken)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_values_are_escaped_and_chapters_end_where_the_next_starts() {
        assert_eq!(escape("a=b;c#d\\e\nf"), "a\\=b\\;c\\#d\\\\e\\\nf");
        let audio = TrackAudio {
            title: String::new(),
            total_samples: 44_100 * 3,
            ceiling_db: -4.0,
            chapters: vec![("One".into(), 0.0), ("Two = 2".into(), 1.5)],
            spans: Vec::new(),
        };
        let opts = DeliveryOptions::default();
        let m = ffmetadata(&audio, &opts);
        assert!(m.contains("START=0\nEND=66150\ntitle=One\n"), "{m}");
        assert!(m.contains("START=66150\nEND=132300\ntitle=Two \\= 2\n"), "{m}");
    }
}
