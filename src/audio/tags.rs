//! What Lectern's audio says about itself: the book's metadata and the synthetic speech
//! disclosure, as one list of fields that each format writes in its own way (ID3 frames in
//! MP3, iTunes atoms in M4B, Vorbis comments in FLAC, a `LIST`/`INFO` chunk in WAV).
//!
//! Every file Lectern writes is speech a model made, and some markets require synthetic audio
//! to say so in a way a machine can read. The disclosure is therefore never optional: the
//! writers take a [`Disclosure`], not an `Option` of one. The field names are documented in
//! `docs/delivery.md` ("Synthetic speech disclosure").

use std::io::{self, Read, Seek, SeekFrom, Write};

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
