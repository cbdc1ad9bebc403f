//! A FLAC stream written as it is encoded: one block of samples in memory, each frame written
//! as soon as it is encoded, and the stream's header (STREAMINFO: sizes, length, MD5) written
//! again at the end, when it is known.
//!
//! flacenc's `encode_with_fixed_block_size` keeps the whole encoded stream in memory (a
//! ten-hour book is about a gigabyte of frames); this writer drives the same per-frame encoder
//! (`encode_fixed_size_frame`) in the same order with the same settings, so its bytes are the
//! same (a test below holds it to that).

use std::io::{Seek, SeekFrom, Write};

use flacenc::component::{BitRepr, Stream};
use flacenc::error::Verify;
use flacenc::source::{Context, Fill, FrameBuf};

/// A FLAC stream being written to `W`; [`Self::finish`] completes it.
pub struct FlacWriter<W: Write + Seek> {
    out: W,
    config: flacenc::error::Verified<flacenc::config::Encoder>,
    /// Holds the STREAMINFO being gathered; it never holds frames.
    header: Stream,
    block: (FrameBuf, Context),
    pending: Vec<i32>,
    block_size: usize,
}

/// Why a FLAC stream could not be written.
#[derive(Debug, thiserror::Error)]
pub enum FlacError {
    #[error("FLAC encoding: {0}")]
    Encode(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A metadata block after the STREAMINFO, its body as [`crate::audio::tags`] makes it.
#[derive(Debug, Clone, Copy)]
pub enum Metadata<'a> {
    /// [`crate::audio::tags::vorbis_comment`]'s body.
    VorbisComment(&'a [u8]),
    /// [`crate::audio::tags::flac_picture`]'s body.
    Picture(&'a [u8]),
}

impl Metadata<'_> {
    /// The block's type (RFC 9639, 8.1) and body.
    fn kind_and_body(&self) -> (u8, &[u8]) {
        match *self {
            Self::VorbisComment(body) => (4, body),
            Self::Picture(body) => (6, body),
        }
    }
}

fn encode_err(e: impl std::fmt::Display) -> FlacError {
    FlacError::Encode(e.to_string())
}

impl<W: Write + Seek> FlacWriter<W> {
    /// Starts a mono stream of `bits`-bit integer samples at `sample_rate` Hz: writes a
    /// placeholder header, rewritten by [`Self::finish`].
    pub fn new(out: W, sample_rate: u32, bits: u32) -> Result<Self, FlacError> {
        Self::with_metadata(out, sample_rate, bits, &[])
    }

    /// As [`Self::new`], with `metadata` blocks after the STREAMINFO: the frames are the same
    /// bytes, only the header grows.
    pub fn with_metadata(
        mut out: W,
        sample_rate: u32,
        bits: u32,
        metadata: &[Metadata<'_>],
    ) -> Result<Self, FlacError> {
        let config =
            flacenc::config::Encoder::default().into_verified().map_err(|(_, e)| encode_err(e))?;
        let block_size = config.block_size;
        let mut header = Stream::new(sample_rate as usize, 1, bits as usize).map_err(encode_err)?;
        // As flacenc's one-call encoder does: the fixed block size is the header's range.
        header.stream_info_mut().set_block_sizes(block_size, block_size).map_err(encode_err)?;
        for m in metadata {
            let (kind, body) = m.kind_and_body();
            if body.len() > crate::audio::tags::FLAC_BLOCK_MAX_BYTES {
                return Err(FlacError::Encode(format!(
                    "a metadata block of {} bytes is more than FLAC's 16 MiB",
                    body.len()
                )));
            }
            let block = flacenc::component::MetadataBlockData::new_unknown(kind, body)
                .map_err(encode_err)?;
            header.add_metadata_block(block);
        }
        write_bits(&mut out, &header)?;
        let block = (
            FrameBuf::with_size(1, block_size).map_err(encode_err)?,
            Context::new(bits as usize, 1),
        );
        Ok(Self { out, config, header, block, pending: Vec::with_capacity(block_size), block_size })
    }

    /// Adds samples; every full block is encoded and written.
    pub fn write(&mut self, mut samples: &[i32]) -> Result<(), FlacError> {
        while !samples.is_empty() {
            let take = (self.block_size - self.pending.len()).min(samples.len());
            self.pending.extend_from_slice(&samples[..take]);
            samples = &samples[take..];
            if self.pending.len() == self.block_size {
                self.flush_block()?;
            }
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<(), FlacError> {
        self.block.fill_interleaved(&self.pending).map_err(encode_err)?;
        self.pending.clear();
        let number = self.block.1.current_frame_number().unwrap_or(0);
        let frame = flacenc::encode_fixed_size_frame(
            &self.config,
            &self.block.0,
            number,
            self.header.stream_info(),
        )
        .map_err(encode_err)?;
        self.header.stream_info_mut().update_frame_info(&frame);
        write_bits(&mut self.out, &frame)
    }

    /// Encodes the last, shorter block, writes the final header over the placeholder and
    /// returns the writer.
    pub fn finish(mut self) -> Result<W, FlacError> {
        if !self.pending.is_empty() {
            self.flush_block()?;
        }
        let info = self.header.stream_info_mut();
        info.set_md5_digest(&self.block.1.md5_digest());
        info.set_total_samples(self.block.1.total_samples());
        self.out.seek(SeekFrom::Start(0))?;
        write_bits(&mut self.out, &self.header)?;
        self.out.seek(SeekFrom::End(0))?;
        self.out.flush()?;
        Ok(self.out)
    }
}

fn write_bits<W: Write>(out: &mut W, what: &impl BitRepr) -> Result<(), FlacError> {
    let mut sink = flacenc::bitsink::ByteSink::new();
    what.write(&mut sink).map_err(encode_err)?;
    out.write_all(sink.as_slice())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_call(samples: &[i32], bits: u32) -> Vec<u8> {
        let config = flacenc::config::Encoder::default().into_verified().unwrap();
        let source = flacenc::source::MemSource::from_samples(samples, 1, bits as usize, 24_000);
        let stream =
            flacenc::encode_with_fixed_block_size(&config, source, config.block_size).unwrap();
        let mut sink = flacenc::bitsink::ByteSink::new();
        stream.write(&mut sink).unwrap();
        sink.as_slice().to_vec()
    }

    fn streamed(samples: &[i32], bits: u32, chunk: usize) -> Vec<u8> {
        let mut w = FlacWriter::new(std::io::Cursor::new(Vec::new()), 24_000, bits).unwrap();
        for c in samples.chunks(chunk) {
            w.write(c).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn streaming_writes_the_bytes_of_the_one_call_encoder() {
        let mut x = 12345u32;
        let samples: Vec<i32> = (0..50_001)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                ((i as f32 * 0.05).sin() * 8000.0) as i32 + (x >> 24) as i32 - 128
            })
            .collect();
        for bits in [16, 24] {
            let expected = one_call(&samples, bits);
            for chunk in [1, 777, 4096, 100_000] {
                assert!(
                    streamed(&samples, bits, chunk) == expected,
                    "{bits} bits, chunks of {chunk}"
                );
            }
        }
        assert_eq!(streamed(&[], 16, 10), one_call(&[], 16));
    }

    #[test]
    fn metadata_blocks_grow_the_header_and_leave_the_frames_alone() {
        let samples: Vec<i32> =
            (0..9000).map(|i| ((i as f32 * 0.01).sin() * 3000.0) as i32).collect();
        let plain = streamed(&samples, 16, 4096);
        let body = crate::audio::tags::vorbis_comment("lectern", &[("TITLE".into(), "T".into())]);
        let picture = b"a picture block's body".to_vec();
        let metadata = [Metadata::VorbisComment(&body), Metadata::Picture(&picture)];
        let mut w =
            FlacWriter::with_metadata(std::io::Cursor::new(Vec::new()), 24_000, 16, &metadata)
                .unwrap();
        w.write(&samples).unwrap();
        let tagged = w.finish().unwrap().into_inner();
        // fLaC, STREAMINFO (now not the last block), the comment, the picture (the last block),
        // then the frames.
        let info_end = 4 + 4 + 34;
        assert_eq!(tagged[4] & 0x80, 0, "STREAMINFO must no longer be the last block");
        let block = |at: usize| {
            let len = u32::from_be_bytes([0, tagged[at + 1], tagged[at + 2], tagged[at + 3]]);
            (tagged[at], &tagged[at + 4..at + 4 + len as usize])
        };
        assert_eq!(block(info_end), (4, &body[..]));
        let picture_at = info_end + 4 + body.len();
        assert_eq!(block(picture_at), (0x80 | 6, &picture[..]));
        let frames_at = picture_at + 4 + picture.len();
        assert_eq!(&tagged[frames_at..], &plain[info_end..]);
        assert_eq!(&tagged[8..info_end], &plain[8..info_end]);
    }
}
