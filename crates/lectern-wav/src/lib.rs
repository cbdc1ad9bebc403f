//! WAV samples as every part of Lectern reads them: the player's and the store's WAV files and
//! voice making's reference audio decode through one function, so a sample means the same
//! wherever it is read. A leaf: it knows WAV, not playback or voices.

#![forbid(unsafe_code)]

/// The interleaved samples of an open WAV scaled to [-1, 1] as libsndfile does: integer PCM
/// divided by 2^(bits−1), 32-bit float as stored; `hound::Error::Unsupported` for anything else.
pub fn decode_samples<R: std::io::Read>(r: hound::WavReader<R>) -> hound::Result<Vec<f32>> {
    let s = r.spec();
    match (s.sample_format, s.bits_per_sample) {
        (hound::SampleFormat::Float, 32) => r.into_samples::<f32>().collect(),
        (hound::SampleFormat::Int, bits @ 1..=32) => {
            let scale = 1.0 / (1u64 << (bits - 1)) as f32;
            r.into_samples::<i32>().map(|x| x.map(|v| v as f32 * scale)).collect()
        }
        _ => Err(hound::Error::Unsupported),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(
        spec: hound::WavSpec,
        write: impl FnOnce(&mut hound::WavWriter<&mut std::io::Cursor<Vec<u8>>>),
    ) -> hound::Result<Vec<f32>> {
        let mut bytes = std::io::Cursor::new(Vec::new());
        {
            let mut w = hound::WavWriter::new(&mut bytes, spec).unwrap();
            write(&mut w);
            w.finalize().unwrap();
        }
        bytes.set_position(0);
        decode_samples(hound::WavReader::new(bytes).unwrap())
    }

    fn spec(bits: u16, format: hound::SampleFormat) -> hound::WavSpec {
        hound::WavSpec {
            channels: 1,
            sample_rate: 24_000,
            bits_per_sample: bits,
            sample_format: format,
        }
    }

    #[test]
    fn integer_pcm_is_divided_by_two_to_the_bits_minus_one() {
        let got = decoded(spec(16, hound::SampleFormat::Int), |w| {
            for v in [i16::MIN, -16_384, 0, 16_384, i16::MAX] {
                w.write_sample(v).unwrap();
            }
        })
        .unwrap();
        assert_eq!(got, [-1.0, -0.5, 0.0, 0.5, 32_767.0 / 32_768.0]);
        let got =
            decoded(spec(24, hound::SampleFormat::Int), |w| w.write_sample(-(1i32 << 23)).unwrap());
        assert_eq!(got.unwrap(), [-1.0]);
    }

    #[test]
    fn float_samples_are_read_as_stored() {
        let got = decoded(spec(32, hound::SampleFormat::Float), |w| {
            for v in [-1.5f32, 0.25, 1.0] {
                w.write_sample(v).unwrap();
            }
        });
        assert_eq!(got.unwrap(), [-1.5, 0.25, 1.0]);
    }
}
