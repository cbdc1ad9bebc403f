//! What Lectern's audio says about itself: the book's metadata and the synthetic speech
//! disclosure, as one list of fields that each format writes in its own way (ID3 frames in
//! MP3, iTunes atoms in M4B, Vorbis comments in FLAC, a `LIST`/`INFO` chunk in WAV).
//!
//! Every file Lectern writes is speech a model made, and some markets require synthetic audio
//! to say so in a way a machine can read. The disclosure is therefore never optional: the
//! writers take a [`Disclosure`], not an `Option` of one. The field names are documented in
//! `docs/delivery.md` ("Synthetic speech disclosure").

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Key of the machine-readable disclosure (ID3 `TXXX`, Vorbis comment); its value is
/// [`Disclosure::FLAG`].
pub const SYNTHETIC_SPEECH: &str = "SYNTHETIC_SPEECH";
/// Key of the voice (or voices) that spoke the audio.
pub const SYNTHETIC_SPEECH_VOICE: &str = "SYNTHETIC_SPEECH_VOICE";
/// Key of the program and model that made the speech.
pub const SYNTHETIC_SPEECH_ENGINE: &str = "SYNTHETIC_SPEECH_ENGINE";

/// That a file's speech is synthetic, by which voice and engine.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Disclosure {
    /// The voices' names in the order they first speak (one for most books).
    pub voices: Vec<String>,
    /// The program and model (`Lectern 0.1.0 (CosyVoice3)`).
    pub engine: String,
}

impl Default for Disclosure {
    /// Lectern's engine, voices not yet known (the export fills them from the takes).
    fn default() -> Self {
        Self::lectern(Vec::new())
    }
}

impl Disclosure {
    /// The value of [`SYNTHETIC_SPEECH`]: a fixed word, so a reader needs no parsing.
    pub const FLAG: &'static str = "yes";

    /// The disclosure of speech by `voices` made with this build of Lectern.
    #[must_use]
    pub fn lectern(voices: Vec<String>) -> Self {
        Self { voices, engine: engine_name() }
    }

    /// The voices as one value: names joined by `, ` (`unnamed voice` when none is known).
    #[must_use]
    pub fn voice_list(&self) -> String {
        if self.voices.is_empty() { "unnamed voice".into() } else { self.voices.join(", ") }
    }

    /// The disclosure in plain words, for comments and descriptions.
    #[must_use]
    pub fn sentence(&self) -> String {
        let voice = if self.voices.len() > 1 { "synthetic voices" } else { "a synthetic voice" };
        format!(
            "This audiobook was narrated by {voice} ({}), made with {}; no human narrator \
             read it.",
            self.voice_list(),
            self.engine
        )
    }

    /// The machine-readable fields, in the order every format writes them.
    #[must_use]
    pub fn fields(&self) -> [(&'static str, String); 3] {
        [
            (SYNTHETIC_SPEECH, Self::FLAG.to_string()),
            (SYNTHETIC_SPEECH_VOICE, self.voice_list()),
            (SYNTHETIC_SPEECH_ENGINE, self.engine.clone()),
        ]
    }

    /// One line holding the machine-readable fields and the sentence, for containers that
    /// carry only a free-text comment (ffmpeg's MP4 writer keeps iTunes' known atoms only):
    /// `SYNTHETIC_SPEECH=yes; SYNTHETIC_SPEECH_VOICE=…; SYNTHETIC_SPEECH_ENGINE=…. Sentence.`
    #[must_use]
    pub fn comment_line(&self) -> String {
        let fields: Vec<String> = self.fields().iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}. {}", fields.join("; "), self.sentence())
    }
}

/// `Lectern VERSION (CosyVoice3)`: the program and the model family it runs (deterministic: the
/// same build names itself the same way).
#[must_use]
pub fn engine_name() -> String {
    format!("Lectern {} (CosyVoice3)", env!("CARGO_PKG_VERSION"))
}

/// The book's metadata and the disclosure as Vorbis comment fields (the names Xiph's
/// recommendations and common players use), in a fixed order. Empty values are left out.
#[must_use]
pub fn vorbis_fields(book: &BookFields, disclosure: &Disclosure) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = [
        ("TITLE", &book.title),
        ("ALBUM", &book.title),
        ("ARTIST", &book.author),
        ("ALBUMARTIST", &book.author),
        ("PERFORMER", &book.narrator),
        ("ORGANIZATION", &book.publication.publisher),
        ("COPYRIGHT", &book.publication.rights),
        ("ISBN", &book.publication.isbn),
        ("DESCRIPTION", &book.publication.description),
        ("DATE", &book.publication.date),
        ("LANGUAGE", &book.publication.language),
    ]
    .into_iter()
    .filter(|(_, v)| !v.trim().is_empty())
    .map(|(k, v)| (k.to_string(), v.trim().to_string()))
    .collect();
    out.push(("GENRE".into(), "Audiobook".into()));
    out.extend(disclosure.fields().into_iter().map(|(k, v)| (k.to_string(), v)));
    out.push(("COMMENT".into(), disclosure.sentence()));
    out
}

/// The book's metadata every format's tags carry (empty: not known).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BookFields {
    pub title: String,
    pub author: String,
    pub narrator: String,
    pub publication: Publication,
}

/// What a book says of its publication, for every format's tags (empty: not known).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Publication {
    pub publisher: String,
    /// The rights statement (a copyright line).
    pub rights: String,
    /// Digits only (and a final `X`).
    pub isbn: String,
    pub description: String,
    /// As the book writes it (`2024`, `2024-03-01`).
    pub date: String,
    /// BCP 47 tag.
    pub language: String,
}

/// The body of a FLAC `VORBIS_COMMENT` metadata block (little-endian lengths, as the Vorbis
/// comment header has them, without its framing bit): vendor string, then `KEY=value` fields.
#[must_use]
pub fn vorbis_comment(vendor: &str, fields: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |text: &str| {
        out.extend((text.len() as u32).to_le_bytes());
        out.extend(text.as_bytes());
    };
    put(vendor);
    let entries: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
    out.extend((entries.len() as u32).to_le_bytes());
    for e in &entries {
        out.extend((e.len() as u32).to_le_bytes());
        out.extend(e.as_bytes());
    }
    out
}

/// A RIFF `LIST` chunk of type `INFO` (`INAM` title, `IART` artist, `ICMT` comment, …): the
/// tags a WAV file can carry. Each value is NUL-terminated and padded to an even length, as
/// RIFF requires.
#[must_use]
pub fn wav_info_chunk(book: &BookFields, disclosure: &Disclosure) -> Vec<u8> {
    let comment = disclosure.comment_line();
    let fields: [(&[u8; 4], &str); 7] = [
        (b"INAM", &book.title),
        (b"IART", &book.author),
        (b"IPRD", &book.title),
        (b"ICOP", &book.publication.rights),
        (b"ICRD", &book.publication.date),
        (b"IGNR", "Audiobook"),
        (b"ICMT", &comment),
    ];
    let mut body = b"INFO".to_vec();
    for (id, value) in fields.into_iter().filter(|(_, v)| !v.trim().is_empty()) {
        let mut data = value.trim().as_bytes().to_vec();
        data.push(0);
        body.extend(id);
        body.extend((data.len() as u32).to_le_bytes());
        body.extend(&data);
        if data.len() % 2 == 1 {
            body.push(0);
        }
    }
    let mut out = b"LIST".to_vec();
    out.extend((body.len() as u32).to_le_bytes());
    out.extend(body);
    out
}

/// Appends `chunk` to the RIFF/WAVE file `wav` (after its last chunk, padded to an even
/// offset) and updates the RIFF size: the audio bytes are left as they are. An error names
/// what is not a RIFF/WAVE file.
pub fn append_wav_chunk<F: Read + Write + Seek>(wav: &mut F, chunk: &[u8]) -> io::Result<()> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut head = [0u8; 12];
    wav.seek(SeekFrom::Start(0))?;
    wav.read_exact(&mut head).map_err(|_| invalid("not a RIFF/WAVE file"))?;
    if &head[..4] != b"RIFF" || &head[8..12] != b"WAVE" {
        return Err(invalid("not a RIFF/WAVE file"));
    }
    let mut end = wav.seek(SeekFrom::End(0))?;
    if end % 2 == 1 {
        wav.write_all(&[0])?;
        end += 1;
    }
    wav.write_all(chunk)?;
    let riff_size = u32::try_from(end + chunk.len() as u64 - 8)
        .map_err(|_| invalid("a WAV file over 4 GiB cannot hold more chunks"))?;
    wav.seek(SeekFrom::Start(4))?;
    wav.write_all(&riff_size.to_le_bytes())?;
    wav.seek(SeekFrom::End(0))?;
    Ok(())
}

/// An image for a file's tags: the MP3's `APIC`, the M4B's `covr`, the FLAC's `PICTURE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    /// `image/jpeg` or `image/png`.
    pub mime_type: String,
    pub data: Vec<u8>,
}

impl Picture {
    /// Reads a cover image, bounded and checked as a book's own cover is: a JPEG or PNG of
    /// sane size (`what` names it in the check's error).
    pub fn read(path: &Path, what: &str) -> Result<Self, lectern_text::limits::LimitError> {
        let limits = lectern_text::InputLimits::from_env();
        let data = limits.read_image(path)?;
        limits.check_image(&data, what)?;
        let mime_type = crate::reading::image_type(&data).unwrap_or("image/jpeg").to_string();
        Ok(Self { mime_type, data })
    }

    /// The usual file extension of its type.
    #[must_use]
    pub fn extension(&self) -> &'static str {
        if self.mime_type == "image/png" { "png" } else { "jpg" }
    }
}

/// The most bytes a FLAC metadata block holds (its length is 24 bits).
pub const FLAC_BLOCK_MAX_BYTES: usize = (1 << 24) - 1;

/// A FLAC `PICTURE` metadata block's body (RFC 9639, 8.8) holding `picture` as the front
/// cover (type 3), with the width, height and colour depth its header gives; `None` when it
/// is too large for a metadata block.
#[must_use]
pub fn flac_picture(picture: &Picture) -> Option<Vec<u8>> {
    /// ID3v2's picture type of the front cover, which FLAC reuses.
    const FRONT_COVER: u32 = 3;
    let size = imagesize::blob_size(&picture.data).ok();
    let dimension = |d: Option<usize>| d.and_then(|d| u32::try_from(d).ok()).unwrap_or(0);
    let (depth, colours) = colour_depth(&picture.data);
    let mime = picture.mime_type.as_bytes();
    let description: &[u8] = b"";
    let numbers =
        [dimension(size.map(|s| s.width)), dimension(size.map(|s| s.height)), depth, colours];
    let mut out = Vec::with_capacity(32 + mime.len() + picture.data.len());
    out.extend(FRONT_COVER.to_be_bytes());
    for text in [mime, description] {
        out.extend((text.len() as u32).to_be_bytes());
        out.extend(text);
    }
    numbers.iter().for_each(|n| out.extend(n.to_be_bytes()));
    out.extend(u32::try_from(picture.data.len()).ok()?.to_be_bytes());
    out.extend(&picture.data);
    (out.len() <= FLAC_BLOCK_MAX_BYTES).then_some(out)
}

/// An image's bits per pixel and, for an indexed one, its palette's size, as its header says
/// (zeros where it does not say): a PNG's `IHDR` and `PLTE`, a JPEG's start of frame.
fn colour_depth(data: &[u8]) -> (u32, u32) {
    if data.starts_with(b"\x89PNG\r\n\x1a\n") && data.len() > 25 {
        let channels = match data[25] {
            0 | 3 => 1,
            2 => 3,
            4 => 2,
            6 => 4,
            _ => 0,
        };
        let palette = if data[25] == 3 { png_palette_colours(data) } else { 0 };
        return (u32::from(data[24]) * channels, palette);
    }
    (jpeg_frame_depth(data).unwrap_or(0), 0)
}

/// The number of colours in a PNG's `PLTE` chunk (three bytes each).
fn png_palette_colours(data: &[u8]) -> u32 {
    let mut at = 8;
    while at + 8 <= data.len() {
        let len = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
        match &data[at + 4..at + 8] {
            b"PLTE" => return len / 3,
            b"IDAT" | b"IEND" => return 0,
            _ => at = at.saturating_add(12 + len as usize),
        }
    }
    0
}

/// A JPEG's sample precision times its components, from its first start-of-frame segment.
fn jpeg_frame_depth(data: &[u8]) -> Option<u32> {
    let mut at = 2;
    while at + 4 <= data.len() {
        if data[at] != 0xFF {
            return None;
        }
        let marker = data[at + 1];
        let len = usize::from(u16::from_be_bytes([data[at + 2], data[at + 3]]));
        // SOF0–SOF15, less DHT (C4), JPG (C8) and DAC (CC), which share the range.
        if (0xC0..=0xCF).contains(&marker) && ![0xC4, 0xC8, 0xCC].contains(&marker) {
            let (precision, components) = (data.get(at + 4)?, data.get(at + 9)?);
            return Some(u32::from(*precision) * u32::from(*components));
        }
        at += 2 + len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disclosure() -> Disclosure {
        Disclosure { voices: vec!["Nell".into()], engine: "Lectern 9 (CosyVoice3)".into() }
    }

    #[test]
    fn the_disclosure_names_voice_and_engine_in_fields_and_words() {
        let d = disclosure();
        assert_eq!(d.fields()[0], (SYNTHETIC_SPEECH, "yes".to_string()));
        assert_eq!(d.fields()[1].1, "Nell");
        assert!(d.sentence().contains("a synthetic voice (Nell)"), "{}", d.sentence());
        assert!(
            d.comment_line().starts_with(
                "SYNTHETIC_SPEECH=yes; SYNTHETIC_SPEECH_VOICE=Nell; \
                 SYNTHETIC_SPEECH_ENGINE=Lectern 9 (CosyVoice3). This audiobook"
            ),
            "{}",
            d.comment_line()
        );
        let two = Disclosure { voices: vec!["A".into(), "B".into()], ..d };
        assert!(two.sentence().contains("synthetic voices (A, B)"));
        assert_eq!(Disclosure::lectern(Vec::new()).voice_list(), "unnamed voice");
    }

    /// A 3×2 RGB PNG (8 bits a channel).
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x03\x00\x00\x00\x02\x08\x02\
        \x00\x00\x00\x12\x16\xf1\x4d\x00\x00\x00\x10IDAT\x78\x9c\x63\x38\x21\x27\x07\x41\x0c\x70\x16\
        \x00\x41\x00\x06\x19\x3c\x45\x41\x96\x00\x00\x00\x00IEND\xae\x42\x60\x82";

    #[test]
    fn a_flac_picture_is_the_front_cover_with_its_size_and_depth() {
        let png = Picture { mime_type: "image/png".into(), data: PNG.to_vec() };
        assert_eq!(png.extension(), "png");
        let block = flac_picture(&png).unwrap();
        let word = |at: usize| u32::from_be_bytes(block[at..at + 4].try_into().unwrap());
        assert_eq!(word(0), 3, "front cover");
        assert_eq!(word(4), 9);
        assert_eq!(&block[8..17], b"image/png");
        assert_eq!(word(17), 0, "no description");
        assert_eq!((word(21), word(25), word(29), word(33)), (3, 2, 24, 0));
        assert_eq!(word(37) as usize, PNG.len());
        assert_eq!(&block[41..], PNG);
        let huge = Picture { data: vec![0; FLAC_BLOCK_MAX_BYTES], ..png };
        assert_eq!(flac_picture(&huge), None);
    }

    #[test]
    fn colour_depth_reads_a_png_palette_and_a_jpeg_frame() {
        // An indexed PNG of 4 bits a pixel with a five-colour palette.
        let mut indexed = PNG[..33].to_vec();
        indexed[24] = 4;
        indexed[25] = 3;
        indexed.extend(b"\x00\x00\x00\x0fPLTE");
        indexed.extend([0; 15 + 4]);
        assert_eq!(colour_depth(&indexed), (4, 5));
        // SOI, APP0, a DHT (in the SOF range, not a frame), then a baseline frame: 8 bits, 2×4,
        // three components.
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 0, 0, 0xFF, 0xC4, 0, 3, 0];
        jpeg.extend([0xFF, 0xC0, 0, 17, 8, 0, 4, 0, 2, 3]);
        assert_eq!(colour_depth(&jpeg), (24, 0));
        assert_eq!(colour_depth(b"neither"), (0, 0));
    }

    #[test]
    fn a_vorbis_comment_has_its_lengths_and_fields() {
        let fields = vec![("TITLE".to_string(), "Ü".to_string())];
        let b = vorbis_comment("v", &fields);
        let mut expected = vec![1, 0, 0, 0, b'v', 1, 0, 0, 0, 8, 0, 0, 0];
        expected.extend("TITLE=Ü".as_bytes());
        assert_eq!(b, expected);
    }

    #[test]
    fn wav_info_is_appended_with_the_riff_size_updated() {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: 24_000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut cursor = std::io::Cursor::new(Vec::new());
        let mut w = hound::WavWriter::new(&mut cursor, spec).unwrap();
        for s in [1i16, -2, 3] {
            w.write_sample(s).unwrap();
        }
        w.finalize().unwrap();
        let book = BookFields {
            title: "T".into(),
            publication: Publication { rights: "© A".into(), ..Publication::default() },
            ..BookFields::default()
        };
        append_wav_chunk(&mut cursor, &wav_info_chunk(&book, &disclosure())).unwrap();
        let wav = cursor.into_inner();
        assert_eq!(u32::from_le_bytes(wav[4..8].try_into().unwrap()) as usize, wav.len() - 8);
        // The samples read back unchanged, and the chunk is where a reader finds it.
        let r = hound::WavReader::new(std::io::Cursor::new(&wav)).unwrap();
        let samples: Vec<i16> = r.into_samples().map(Result::unwrap).collect();
        assert_eq!(samples, [1, -2, 3]);
        let has = |needle: &[u8]| wav.windows(needle.len()).any(|w| w == needle);
        assert!(has(b"LIST") && has(b"INAM\x02\0\0\0T\0") && has(b"SYNTHETIC_SPEECH=yes"));
        assert!(append_wav_chunk(&mut std::io::Cursor::new(b"nope".to_vec()), b"").is_err());
    }
}
