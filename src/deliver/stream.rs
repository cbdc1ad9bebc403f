//! Streaming mastering: a delivery track is never whole in memory.
//!
//! A track's voice is made again for every pass from its takes, read one at a time (trimmed,
//! faded, resampled by a [`StreamResampler`] whose chunks are those of resampling the joined
//! voice at once). The passes are those of whole-buffer mastering, which gains the whole track
//! to the target RMS, limits it, measures it and starts again until the RMS settles: pass 0
//! measures the track; pass `k` runs the gain-and-limit rounds `1..=k` (each round's gain known
//! from the pass before) and measures round `k`; the last pass runs every round, adds the room
//! tone and hands the samples on (to the MP3 encoder, or ffmpeg's input). Each stage does the
//! same arithmetic in the same order as the whole-buffer one, so the samples are the same bits
//! (a test holds the two side by side).
//!
//! What is held: one take, the resampler's and limiters' windows, one block, and per track
//! the rounds' gains and its spans.

use super::mastering::{self, MasteringTargets, StreamLimiter, StreamResampler};
use super::{
    Ctx, DeliverError, Heard, HeardSpan, MASTERING_ROUNDS, Piece, Result, SegmentTexts, Sink,
    Source, Track, read_recording, segment_span,
};
use crate::store::SAMPLE_RATE_HZ;

/// Samples handed on at a time (of silence, of a recording).
const BLOCK: usize = 1 << 14;

/// Feeds the voice of `track` at `rate_hz` to `sink` (no head or tail: takes trimmed to their
/// voiced part and faded at the joins, pauses as silence, leading and trailing pauses
/// dropped) and returns what is heard where in it.
pub(super) fn voice(
    track: &Track,
    texts: &SegmentTexts,
    rate_hz: u32,
    sink: &mut Sink,
) -> Result<Vec<HeardSpan>> {
    match &track.source {
        Source::Recording { path, text } => {
            let x = read_recording(path, rate_hz)?;
            let r = mastering::voiced_range(&x, rate_hz);
            if r.is_empty() {
                return Err(DeliverError::File {
                    path: path.clone(),
                    detail: "nothing but silence".into(),
                });
            }
            let end = r.len() as u64;
            for block in x[r].chunks(BLOCK) {
                sink(block)?;
            }
            let what = Heard::Credits { title: track.title.clone(), text: text.clone() };
            Ok(vec![HeardSpan { start: 0, end, what }])
        }
        Source::Pieces(pieces) => pieces_voice(pieces, texts, rate_hz, sink),
    }
}

/// [`voice`] of takes and pauses: each take read, trimmed and faded on its own, the 24 kHz
/// voice resampled as it comes.
fn pieces_voice(
    pieces: &[&Piece],
    texts: &SegmentTexts,
    rate_hz: u32,
    sink: &mut Sink,
) -> Result<Vec<HeardSpan>> {
    let mut resampler =
        StreamResampler::new(SAMPLE_RATE_HZ, rate_hz).map_err(DeliverError::Audio)?;
    let mut out = Vec::with_capacity(BLOCK);
    let mut feed = |x: &[f32], out: &mut Vec<f32>, sink: &mut Sink| -> Result<()> {
        for block in x.chunks(BLOCK) {
            resampler.push(block, out).map_err(DeliverError::Audio)?;
            sink(out)?;
            out.clear();
        }
        Ok(())
    };
    // Pauses after the last take are dropped: the tail replaces them.
    let last_take = pieces.iter().rposition(|p| matches!(p, Piece::Take(_)));
    let mut spans = Vec::new();
    let mut at = 0u64;
    let silence = vec![0f32; BLOCK];
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Take(t) => {
                let samples = crate::store::takes::read_for_export(t)?;
                let mut voiced =
                    samples[mastering::voiced_range(&samples, SAMPLE_RATE_HZ)].to_vec();
                drop(samples);
                crate::audio::master::fade_edges(&mut voiced);
                feed(&voiced, &mut out, sink)?;
                // A take that trims to nothing still gets its (empty) span: every segment of
                // the file is named, in order.
                let end = at + voiced.len() as u64;
                spans.push(segment_span(t, at, end, texts, rate_hz));
                at = end;
            }
            // Leading pauses are dropped too: the head replaces them.
            Piece::Silence(n) if at > 0 && last_take.is_some_and(|l| i < l) => {
                let mut left = *n as usize;
                while left > 0 {
                    let k = left.min(BLOCK);
                    feed(&silence[..k], &mut out, sink)?;
                    left -= k;
                }
                at += n;
            }
            Piece::Silence(_) => {}
        }
    }
    resampler.finish(&mut out).map_err(DeliverError::Audio)?;
    sink(&out)?;
    Ok(spans)
}

/// How one track is mastered: the gains of its gain-and-limit rounds and its ceiling, found
/// by the measuring passes; and its length and spans.
#[derive(Debug, Clone)]
pub(super) struct MasterPlan {
    /// The gain of each round (none where the level was not finite: silence).
    gains: Vec<Option<f32>>,
    /// The limiter's ceiling, linear.
    ceiling: f32,
    /// Samples of the mastered track, head and tail included.
    pub(super) total: u64,
    /// What is heard where in the mastered track (its head counted).
    pub(super) spans: Vec<HeardSpan>,
    /// Number of the track (seeds its room tone).
    track_no: u64,
}

/// Running RMS of the samples given: the same sum, in the same order, as
/// [`mastering::rms_db`] over them all.
#[derive(Default)]
struct Rms {
    sum: f64,
    n: u64,
}

impl Rms {
    fn add(&mut self, x: &[f32]) {
        for &s in x {
            self.sum += f64::from(s) * f64::from(s);
        }
        self.n += x.len() as u64;
    }

    fn db(&self) -> f64 {
        if self.n == 0 {
            return f64::NEG_INFINITY;
        }
        mastering::gain_to_db((self.sum / self.n as f64).sqrt())
    }
}

/// The gain [`mastering::gain_to_rms`] applies to audio at `now_db` (none when not finite).
fn gain_for(now_db: f64, target_db: f64) -> Option<f32> {
    now_db.is_finite().then(|| mastering::db_to_gain(target_db - now_db) as f32)
}

/// The gain-and-limit rounds, chained: each round's gain, then its limiter.
struct Rounds {
    stages: Vec<(Option<f32>, StreamLimiter)>,
}

impl Rounds {
    fn new(gains: &[Option<f32>], ceiling: f32, rate_hz: u32) -> Self {
        Self { stages: gains.iter().map(|&g| (g, StreamLimiter::new(ceiling, rate_hz))).collect() }
    }

    /// Runs `x` through the rounds from `first` on; appends what comes out of the last.
    fn run_from(&mut self, first: usize, x: &[f32], out: &mut Vec<f32>) {
        let mut cur = x.to_vec();
        let mut next = Vec::with_capacity(cur.len());
        for (gain, limiter) in &mut self.stages[first..] {
            if let Some(g) = gain {
                cur.iter_mut().for_each(|s| *s *= *g);
            }
            limiter.push(&cur, &mut next);
            std::mem::swap(&mut cur, &mut next);
            next.clear();
        }
        out.extend_from_slice(&cur);
    }

    /// Empties each round's limiter in turn through the rounds after it.
    fn finish(&mut self, out: &mut Vec<f32>) {
        for k in 0..self.stages.len() {
            let mut rest = Vec::new();
            self.stages[k].1.finish(&mut rest);
            self.run_from(k + 1, &rest, out);
        }
    }
}

/// One pass over a track: head (silence), voice, tail (silence) through the rounds of
/// `gains`, each block of the result to `sink`. Returns the voice's spans and length.
fn pass(
    track: &Track,
    ctx: &Ctx,
    gains: &[Option<f32>],
    ceiling: f32,
    sink: &mut Sink,
) -> Result<(Vec<HeardSpan>, u64)> {
    let targets = &ctx.opts.targets;
    let mut rounds = Rounds::new(gains, ceiling, targets.rate_hz);
    let mut out = Vec::with_capacity(2 * BLOCK);
    let mut voice_len = 0u64;
    let spans = {
        let mut feed = |x: &[f32], voice: bool, sink: &mut Sink| -> Result<()> {
            if voice {
                voice_len += x.len() as u64;
            }
            rounds.run_from(0, x, &mut out);
            sink(&out)?;
            out.clear();
            Ok(())
        };
        feed_silence(targets.head_samples(), &mut |b| feed(b, false, sink))?;
        let spans = voice(track, ctx.texts, targets.rate_hz, &mut |b| feed(b, true, sink))?;
        feed_silence(targets.tail_samples(), &mut |b| feed(b, false, sink))?;
        spans
    };
    rounds.finish(&mut out);
    sink(&out)?;
    Ok((spans, voice_len))
}

/// `n` samples of silence to `sink`, in blocks.
fn feed_silence(n: usize, sink: &mut Sink) -> Result<()> {
    let zeros = vec![0f32; n.min(BLOCK)];
    let mut left = n;
    while left > 0 {
        let k = left.min(BLOCK);
        sink(&zeros[..k])?;
        left -= k;
    }
    Ok(())
}

/// Finds how track number `track_no` is mastered at `ceiling_db`: measures it, then adds
/// gain-and-limit rounds until its RMS settles within 0.1 dB of the target, as whole-buffer
/// mastering does (limiting lowers the RMS; speech takes one or two rounds, very dynamic audio
/// more; the limiter has the last word, so the ceiling always holds).
pub(super) fn plan(track: &Track, ctx: &Ctx, ceiling_db: f64, track_no: u64) -> Result<MasterPlan> {
    let targets: &MasteringTargets = &ctx.opts.targets;
    let ceiling = mastering::db_to_gain(ceiling_db) as f32;
    let mut rms = Rms::default();
    let (voice_spans, voice_len) = pass(track, ctx, &[], ceiling, &mut |b| {
        rms.add(b);
        Ok(())
    })?;
    let mut level = rms.db();
    let mut gains = Vec::new();
    for _ in 0..MASTERING_ROUNDS {
        gains.push(gain_for(level, targets.rms_db));
        let mut rms = Rms::default();
        pass(track, ctx, &gains, ceiling, &mut |b| {
            rms.add(b);
            Ok(())
        })?;
        level = rms.db();
        if level > targets.rms_db - 0.1 {
            break;
        }
    }
    let head = targets.head_samples() as u64;
    Ok(MasterPlan {
        gains,
        ceiling,
        total: head + voice_len + targets.tail_samples() as u64,
        spans: voice_spans.into_iter().map(|s| s.shifted(head)).collect(),
        track_no,
    })
}

/// The mastered track of `plan` to `sink`: every round, then the room tone under all of it.
pub(super) fn master(track: &Track, ctx: &Ctx, plan: &MasterPlan, sink: &mut Sink) -> Result<()> {
    let mut bed = ctx.room_tone.stream(plan.total as usize, plan.track_no);
    let mut block = Vec::with_capacity(2 * BLOCK);
    pass(track, ctx, &plan.gains, plan.ceiling, &mut |x| {
        block.clear();
        block.extend_from_slice(x);
        bed.add_under(&mut block);
        sink(&block)
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::{DeliveryOptions, load_room_tone};
    use super::*;
    use crate::deliver::RoomToneSource;
    use crate::deliver::mastering::RoomTone;

    /// Today's whole-buffer mastering, kept as the oracle the streaming pipeline must equal:
    /// the voice of a track in one buffer, as the pipeline made it before it streamed.
    fn whole_voice(
        track: &Track,
        texts: &SegmentTexts,
        rate_hz: u32,
    ) -> (Vec<f32>, Vec<HeardSpan>) {
        let mut spans = Vec::new();
        let voice_24k = match &track.source {
            Source::Recording { path, text } => {
                let x = read_recording(path, rate_hz).unwrap();
                let r = mastering::voiced_range(&x, rate_hz);
                let what = Heard::Credits { title: track.title.clone(), text: text.clone() };
                spans.push(HeardSpan { start: 0, end: r.len() as u64, what });
                return (x[r].to_vec(), spans);
            }
            Source::Pieces(pieces) => {
                let mut out = Vec::new();
                for piece in pieces {
                    match piece {
                        Piece::Take(t) => {
                            let samples = crate::store::takes::read_for_export(t).unwrap();
                            let mut voiced =
                                samples[mastering::voiced_range(&samples, SAMPLE_RATE_HZ)].to_vec();
                            crate::audio::master::fade_edges(&mut voiced);
                            let start = out.len() as u64;
                            out.extend_from_slice(&voiced);
                            let end = out.len() as u64;
                            spans.push(segment_span(t, start, end, texts, rate_hz));
                        }
                        Piece::Silence(n) if !out.is_empty() => {
                            out.resize(out.len() + *n as usize, 0.0)
                        }
                        Piece::Silence(_) => {}
                    }
                }
                let last_voice = pieces.iter().rposition(|p| matches!(p, Piece::Take(_)));
                let trailing: u64 =
                    last_voice.map_or(0, |i| pieces[i + 1..].iter().map(|p| p.len()).sum());
                out.truncate(out.len() - trailing as usize);
                out
            }
        };
        (mastering::resample(&voice_24k, SAMPLE_RATE_HZ, rate_hz).unwrap(), spans)
    }

    /// The oracle's mastering: head, voice, tail in one buffer; gain, limit and measure the
    /// whole until the RMS settles; room tone under all of it.
    fn whole_master(
        voice: &[f32],
        ceiling_db: f64,
        room_tone: &RoomTone,
        track: u64,
        targets: &MasteringTargets,
    ) -> Vec<f32> {
        let mut x = vec![0f32; targets.head_samples()];
        x.extend_from_slice(voice);
        x.resize(x.len() + targets.tail_samples(), 0.0);
        let ceiling = mastering::db_to_gain(ceiling_db) as f32;
        for _ in 0..MASTERING_ROUNDS {
            mastering::gain_to_rms(&mut x, targets.rms_db);
            mastering::limit(&mut x, ceiling, targets.rate_hz);
            if mastering::rms_db(&x) > targets.rms_db - 0.1 {
                break;
            }
        }
        room_tone.add_under(&mut x, track);
        x
    }

    /// A take file of `samples` and its record, as the store keeps them.
    fn take(dir: &Path, id: u64, samples: &[f32]) -> Piece {
        let path = dir.join(format!("take-{id}.wav"));
        let mut f = std::fs::File::create(&path).unwrap();
        crate::store::takes::write_wav_to(&mut f, samples, b"").unwrap();
        let mut record = crate::deliver::tests::record();
        record.segment_id = id;
        Piece::Take(Box::new(crate::review::TakeInfo {
            id,
            engine_take_id: id,
            record,
            audio_hash: crate::store::takes::audio_hash(samples),
            wav_path: path,
            num_samples: samples.len() as u64,
            status: crate::review::TakeStatus::Ok,
            segment_hash: 0,
            content_key: String::new(),
            figures: None,
        }))
    }

    /// Speech-like 24 kHz audio of `secs` seconds at `amp`, with `clicks` (peaks the limiter
    /// must hold) and silence at its edges.
    fn speech(secs: f64, amp: f32, clicks: bool, seed: u32) -> Vec<f32> {
        let n = (secs * 24_000.0) as usize;
        let mut next =
            lectern_test_support::signals::xorshift_noise(seed.wrapping_mul(2_654_435_761).max(1));
        (0..n)
            .map(|i| {
                let edge = i < 2400 || n - i < 3600;
                let noise = next() * 0.1;
                let t = i as f32 / 24_000.0;
                let syllable = ((t * 4.0 + seed as f32).sin() * 0.5 + 0.5).powi(2);
                let click = if clicks && i % 2_111 < 2 { 0.9 } else { 0.0 };
                if edge { 0.0 } else { amp * syllable * ((t * 900.0).sin() + noise) + click }
            })
            .collect()
    }

    /// The tracks the comparison runs on: (name, pieces).
    fn tracks(dir: &Path) -> Vec<(&'static str, Vec<Piece>)> {
        let pause = |ms: u64| Piece::Silence(ms * 24);
        let mut long = Vec::new();
        for k in 0..30 {
            long.push(take(
                dir,
                100 + k,
                &speech(0.5 + (k % 5) as f64 * 0.3, 0.3, k % 3 == 0, k as u32),
            ));
            long.push(pause(300 + (k % 4) * 150));
        }
        vec![
            ("short", vec![take(dir, 1, &speech(0.4, 0.3, false, 1))]),
            ("long", long),
            (
                "loud",
                vec![
                    take(dir, 2, &speech(3.0, 0.9, true, 2)),
                    pause(500),
                    take(dir, 3, &speech(2.0, 0.9, true, 3)),
                ],
            ),
            (
                "quiet",
                vec![
                    take(dir, 4, &speech(2.5, 0.004, false, 4)),
                    pause(700),
                    take(dir, 5, &speech(1.5, 0.003, false, 5)),
                ],
            ),
            (
                "pauses",
                vec![
                    pause(900),
                    take(dir, 6, &[0.0; 4800]),
                    pause(200),
                    take(dir, 7, &speech(1.2, 0.2, false, 7)),
                    pause(400),
                    take(dir, 8, &[0.0; 2400]),
                    pause(300),
                    take(dir, 9, &speech(0.8, 0.5, true, 9)),
                    pause(600),
                    take(dir, 10, &[0.0; 1000]),
                    pause(1200),
                ],
            ),
        ]
    }

    fn credits(dir: &Path) -> PathBuf {
        let path = dir.join("credits.wav");
        let spec = hound::WavSpec {
            channels: 2,
            sample_rate: 48_000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::create(&path, spec).unwrap();
        for s in [vec![0f32; 30_000], speech(2.0, 0.4, false, 11), vec![0f32; 20_000]].concat() {
            w.write_sample((s * 32767.0) as i16).unwrap();
            w.write_sample((s * 30000.0) as i16).unwrap();
        }
        w.finalize().unwrap();
        path
    }

    fn streamed(track: &Track, ctx: &Ctx, ceiling_db: f64, n: u64) -> (MasterPlan, Vec<f32>) {
        let plan = plan(track, ctx, ceiling_db, n).unwrap();
        let mut out = Vec::new();
        master(track, ctx, &plan, &mut |x| {
            out.extend_from_slice(x);
            Ok(())
        })
        .unwrap();
        (plan, out)
    }

    #[test]
    fn streamed_mastering_is_whole_buffer_mastering_sample_for_sample() {
        let dir = tempfile::tempdir().unwrap();
        let tone = dir.path().join("tone.wav");
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: 44_100,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::create(&tone, spec).unwrap();
        for i in 0..40_000 {
            w.write_sample(((i * 7919) % 13) as i16 - 6).unwrap();
        }
        w.finalize().unwrap();
        let all = tracks(dir.path());
        // Takes are of segments numbered otherwise: spans name the plan's segment.
        let texts: SegmentTexts =
            (1..200).map(|id| (id, (id + 1000, 1, format!("Segment {id}.")))).collect();
        let opts = DeliveryOptions::default();
        let targets = &opts.targets;
        let credits = credits(dir.path());
        for bed in [RoomToneSource::default(), RoomToneSource::Recording(tone.clone())] {
            let room_tone = load_room_tone(&bed, targets.rate_hz).unwrap();
            let ctx = Ctx { opts: &opts, room_tone: &room_tone, texts: &texts };
            let mut cases: Vec<(&str, Track)> = all
                .iter()
                .map(|(name, pieces)| {
                    let source = Source::Pieces(pieces.iter().collect());
                    (*name, Track { title: name.to_string(), slug: String::new(), source })
                })
                .collect();
            let source = Source::Recording { path: credits.clone(), text: Some("Hi.".into()) };
            cases.push(("credits", Track { title: "Credits".into(), slug: String::new(), source }));
            for (n, (name, track)) in cases.iter().enumerate() {
                for ceiling_db in [-4.0, -9.0] {
                    let (voice, spans) = whole_voice(track, &texts, targets.rate_hz);
                    let want = whole_master(&voice, ceiling_db, &room_tone, n as u64, targets);
                    let (plan, got) = streamed(track, &ctx, ceiling_db, n as u64);
                    assert_eq!(got.len(), want.len(), "{name}");
                    assert_eq!(plan.total, want.len() as u64, "{name}");
                    let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{name} at {ceiling_db} dB differs from whole-buffer mastering");
                    let head = targets.head_samples() as u64;
                    let spans: Vec<HeardSpan> =
                        spans.into_iter().map(|s| s.shifted(head)).collect();
                    assert_eq!(plan.spans, spans, "{name}");
                }
            }
        }
    }

    #[test]
    fn loud_tracks_take_several_rounds() {
        // The comparison above is only as good as its tracks: one of them must need more
        // than one gain-and-limit round, or the rounds' chaining is not tested.
        let dir = tempfile::tempdir().unwrap();
        let all = tracks(dir.path());
        let opts = DeliveryOptions::default();
        let room_tone = load_room_tone(&RoomToneSource::default(), 44_100).unwrap();
        let texts = SegmentTexts::new();
        let ctx = Ctx { opts: &opts, room_tone: &room_tone, texts: &texts };
        let (_, loud) = &all[2];
        let track = Track {
            title: String::new(),
            slug: String::new(),
            source: Source::Pieces(loud.iter().collect()),
        };
        assert!(plan(&track, &ctx, -9.0, 1).unwrap().gains.len() > 1);
    }
}
