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
}

/// An image for the tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    /// `image/jpeg` or `image/png`.
    pub mime_type: String,
    pub data: Vec<u8>,
}

/// Encodes 44.1 kHz mono 16-bit samples as 192 kbps CBR MPEG-1 Layer III frames.
pub fn encode(samples: &[i16]) -> Result<Vec<u8>, String> {
    let err = |what: &str, e: &dyn std::fmt::Display| format!("MP3 encoder: {what}: {e}");
    let mut b = Builder::new().ok_or("MP3 encoder: LAME could not be initialised")?;
    b.set_num_channels(1).map_err(|e| err("channels", &e))?;
    b.set_sample_rate(DELIVERY_RATE_HZ).map_err(|e| err("sample rate", &e))?;
    b.set_mode(Mode::Mono).map_err(|e| err("mode", &e))?;
    b.set_brate(Bitrate::Kbps192).map_err(|e| err("bitrate", &e))?;
    // LAME's -q 2: its recommended "near best" noise shaping; 0 is far slower for no audible gain.
    b.set_quality(Quality::NearBest).map_err(|e| err("quality", &e))?;
    b.set_to_write_vbr_tag(false).map_err(|e| err("info frame", &e))?;
    let mut enc = b.build().map_err(|e| err("setup", &e))?;
    let mut out = Vec::with_capacity(mp3lame_encoder::max_required_buffer_size(samples.len()));
    // LAME's own buffer wants bounded calls; encode in blocks.
    for block in samples.chunks(1 << 16) {
        out.reserve(mp3lame_encoder::max_required_buffer_size(block.len()));
        enc.encode_to_vec(MonoPcm(block), &mut out).map_err(|e| err("encoding", &e))?;
    }
    out.reserve(7200);
    enc.flush_to_vec::<FlushNoGap>(&mut out).map_err(|e| err("flushing", &e))?;
    Ok(out)
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

/// Converts to 16-bit with rounding and clamping (the mastered signal is under −3 dBFS, so
/// nothing clamps in practice; the room-tone bed dithers the rounding).
#[must_use]
pub fn to_i16(x: &[f32]) -> Vec<i16> {
    x.iter().map(|&s| (f64::from(s) * 32768.0).round().clamp(-32768.0, 32767.0) as i16).collect()
}
