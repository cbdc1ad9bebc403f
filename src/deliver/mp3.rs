//! MP3 encoding (LAME 3.100 through `mp3lame-encoder`, 44.1 kHz mono CBR) and ID3v2.3 tags
//! (`id3`).
//!
//! No Xing/LAME "Info" frame is written: it would carry the encoder delay for gapless players,
//! but ACX asks for plain CBR and a frame whose size differs from the others reads as VBR to
//! some checkers. Every frame of the output has the same bitrate.

use id3::{TagLike, Version};
use mp3lame_encoder::{Bitrate, Builder, FlushNoGap, Mode, MonoPcm, Quality};

use super::mastering::DELIVERY_RATE_HZ;

/// ACX's bitrate, kbps (192 or more, constant).
pub const BITRATE_KBPS: u32 = 192;

/// What a delivery file's ID3 tag says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tags {
    /// The book's title (album).
    pub book: String,
    /// The author (artist and album artist).
    pub author: String,
    /// The narrator (composer, as audiobook players read it, and a `NARRATOR` text frame).
    pub narrator: String,
    /// This file's title: the chapter or section.
    pub title: String,
    /// Position in reading order, 1-based, and the number of files.
    pub track: u32,
    pub total_tracks: u32,
    /// The book's cover, as the front-cover picture (APIC).
    pub cover: Option<Picture>,
    /// Publisher, rights, ISBN, description, date and language (title, author and narrator
    /// are the fields above).
    pub publication: super::Publication,
    /// That the speech is synthetic, by which voice (`TXXX` frames and a comment).
    pub disclosure: crate::audio::tags::Disclosure,
}

pub use crate::audio::tags::Picture;

/// Encodes 44.1 kHz mono 16-bit samples as 192 kbps CBR MPEG-1 Layer III frames.
pub fn encode(samples: &[i16]) -> Result<Vec<u8>, String> {
    let mut enc = Encoder::new(DELIVERY_RATE_HZ, BITRATE_KBPS)?;
    let mut out = Vec::with_capacity(mp3lame_encoder::max_required_buffer_size(samples.len()));
    enc.push(samples, &mut out)?;
    enc.finish(&mut out)?;
    Ok(out)
}

/// Samples LAME is given per call. LAME's own buffer wants bounded calls, and the streaming
/// encoder hands over exactly these blocks, so its frames are the one-call encoder's bytes.
const BLOCK: usize = 1 << 16;

/// A mono CBR MP3 encoder fed in pieces of any size: holds one `BLOCK` of samples and LAME's
/// state, and appends the frames it completes to the caller's buffer.
pub struct Encoder {
    lame: mp3lame_encoder::Encoder,
    pending: Vec<i16>,
}

impl Encoder {
    /// LAME at `rate_hz`, mono, `kbps` constant (one of MPEG's bitrates), `-q 2`, no info frame.
    pub fn new(rate_hz: u32, kbps: u32) -> Result<Self, String> {
        let err = |what: &str, e: &dyn std::fmt::Display| format!("MP3 encoder: {what}: {e}");
        let mut b = Builder::new().ok_or("MP3 encoder: LAME could not be initialised")?;
        b.set_num_channels(1).map_err(|e| err("channels", &e))?;
        b.set_sample_rate(rate_hz).map_err(|e| err("sample rate", &e))?;
        b.set_mode(Mode::Mono).map_err(|e| err("mode", &e))?;
        b.set_brate(bitrate(kbps)?).map_err(|e| err("bitrate", &e))?;
        // LAME's -q 2: its recommended "near best" noise shaping; 0 is far slower for no
        // audible gain.
        b.set_quality(Quality::NearBest).map_err(|e| err("quality", &e))?;
        b.set_to_write_vbr_tag(false).map_err(|e| err("info frame", &e))?;
        let lame = b.build().map_err(|e| err("setup", &e))?;
        Ok(Self { lame, pending: Vec::with_capacity(BLOCK) })
    }

    /// Takes `samples`; appends to `out` the frames of every block completed.
    pub fn push(&mut self, mut samples: &[i16], out: &mut Vec<u8>) -> Result<(), String> {
        while !samples.is_empty() {
            let take = (BLOCK - self.pending.len()).min(samples.len());
            self.pending.extend_from_slice(&samples[..take]);
            samples = &samples[take..];
            if self.pending.len() == BLOCK {
                self.encode_pending(out)?;
            }
        }
        Ok(())
    }

    /// Encodes what is pending and LAME's last frames into `out`.
    pub fn finish(mut self, out: &mut Vec<u8>) -> Result<(), String> {
        if !self.pending.is_empty() {
            self.encode_pending(out)?;
        }
        out.reserve(7200);
        self.lame
            .flush_to_vec::<FlushNoGap>(out)
            .map_err(|e| format!("MP3 encoder: flushing: {e}"))?;
        Ok(())
    }

    fn encode_pending(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        out.reserve(mp3lame_encoder::max_required_buffer_size(self.pending.len()));
        self.lame
            .encode_to_vec(MonoPcm(&self.pending), out)
            .map_err(|e| format!("MP3 encoder: encoding: {e}"))?;
        self.pending.clear();
        Ok(())
    }
}

/// LAME's bitrate for `kbps`, or an error naming the bitrates MPEG-1 Layer III has.
fn bitrate(kbps: u32) -> Result<Bitrate, String> {
    Ok(match kbps {
        32 => Bitrate::Kbps32,
        40 => Bitrate::Kbps40,
        48 => Bitrate::Kbps48,
        64 => Bitrate::Kbps64,
        80 => Bitrate::Kbps80,
        96 => Bitrate::Kbps96,
        112 => Bitrate::Kbps112,
        128 => Bitrate::Kbps128,
        160 => Bitrate::Kbps160,
        192 => Bitrate::Kbps192,
        224 => Bitrate::Kbps224,
        256 => Bitrate::Kbps256,
        320 => Bitrate::Kbps320,
        other => {
            return Err(format!(
                "MP3 bitrate {other} kbps: use one of 32, 40, 48, 64, 80, 96, 112, 128, 160, \
                 192, 224, 256, 320"
            ));
        }
    })
}

/// The ID3v2.3 tag for `tags`, as bytes to put before the MP3 frames.
pub fn id3_tag(tags: &Tags) -> Result<Vec<u8>, String> {
    let mut tag = id3::Tag::new();
    tag.set_album(&tags.book);
    tag.set_title(&tags.title);
    if !tags.author.is_empty() {
        tag.set_artist(&tags.author);
        tag.set_album_artist(&tags.author);
    }
    if !tags.narrator.is_empty() {
        tag.set_text("TCOM", &tags.narrator);
        tag.add_frame(id3::frame::ExtendedText {
            description: "NARRATOR".into(),
            value: tags.narrator.clone(),
        });
    }
    tag.set_track(tags.track);
    tag.set_total_tracks(tags.total_tracks);
    tag.set_genre("Audiobook");
    add_publication(&mut tag, &tags.publication);
    add_disclosure(&mut tag, &tags.disclosure);
    if let Some(cover) = &tags.cover {
        tag.add_frame(id3::frame::Picture {
            mime_type: cover.mime_type.clone(),
            picture_type: id3::frame::PictureType::CoverFront,
            description: String::new(),
            data: cover.data.clone(),
        });
    }
    let mut bytes = Vec::new();
    tag.write_to(&mut bytes, Version::Id3v23).map_err(|e| format!("ID3 tag: {e}"))?;
    Ok(bytes)
}

/// Publisher (`TPUB`), rights (`TCOP`), year (`TYER`), the ISBN, full date and language as
/// `TXXX` frames, and the description as a comment described `description`.
fn add_publication(tag: &mut id3::Tag, p: &super::Publication) {
    let text = |tag: &mut id3::Tag, id: &str, value: &str| {
        if !value.trim().is_empty() {
            tag.set_text(id, value.trim());
        }
    };
    text(tag, "TPUB", &p.publisher);
    text(tag, "TCOP", &p.rights);
    if let Some(year) = p.date.get(..4).and_then(|y| y.parse::<i32>().ok()) {
        tag.set_year(year);
    }
    for (name, value) in [("ISBN", &p.isbn), ("DATE", &p.date), ("LANGUAGE", &p.language)] {
        if !value.trim().is_empty() {
            tag.add_frame(id3::frame::ExtendedText {
                description: name.into(),
                value: value.trim().to_string(),
            });
        }
    }
    if !p.description.trim().is_empty() {
        tag.add_frame(id3::frame::Comment {
            lang: "eng".into(),
            description: "description".into(),
            text: p.description.trim().to_string(),
        });
    }
}

/// The synthetic speech disclosure: one `TXXX` frame per field (`SYNTHETIC_SPEECH=yes`, the
/// voice, the engine) and the plain sentence as the file's comment (`COMM`, no description:
/// the comment players show).
fn add_disclosure(tag: &mut id3::Tag, d: &crate::audio::tags::Disclosure) {
    for (name, value) in d.fields() {
        tag.add_frame(id3::frame::ExtendedText { description: name.into(), value });
    }
    tag.add_frame(id3::frame::Comment {
        lang: "eng".into(),
        description: String::new(),
        text: d.sentence(),
    });
}

/// Converts to 16-bit with rounding and clamping (the mastered signal is under −3 dBFS, so
/// nothing clamps in practice; the room-tone bed dithers the rounding).
#[must_use]
pub fn to_i16(x: &[f32]) -> Vec<i16> {
    x.iter().map(|&s| sample_to_i16(s)).collect()
}

/// One sample of [`to_i16`].
#[must_use]
pub fn sample_to_i16(s: f32) -> i16 {
    (f64::from(s) * 32768.0).round().clamp(-32768.0, 32767.0) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_in_pieces_gives_the_one_call_bytes() {
        let pcm: Vec<i16> = (0..200_000)
            .map(|i| ((i as f32 * 0.013).sin() * 9000.0) as i16 ^ (i % 7) as i16)
            .collect();
        let whole = encode(&pcm).unwrap();
        let mut enc = Encoder::new(DELIVERY_RATE_HZ, BITRATE_KBPS).unwrap();
        let mut out = Vec::new();
        for piece in pcm.chunks(12_345) {
            enc.push(piece, &mut out).unwrap();
        }
        enc.finish(&mut out).unwrap();
        assert!(out == whole);
        assert!(Encoder::new(DELIVERY_RATE_HZ, 191).is_err());
    }
}
