//! Casting (#22): the LM input of each mode as upstream's frontends assemble it, pace as
//! upstream's `speed`, and renders that mix voices, modes and paces without changing what any
//! segment would be alone.

use crate::common;
use std::path::Path;

use lectern_engine::backend::Mel;
use lectern_engine::cosyvoice::{LmPrompt, instruct_prompt, lm_prompt};
use lectern_engine::protocol::{
    Casting, EngineEvent, Mode, RenderParams, Request, SegmentSpec, Take, paced_frames,
};
use lectern_engine::{Engine, FakeBackend};
use lectern_text::Tokenizer;

/// The real Qwen2 vocabulary with CosyVoice3's special tokens.
fn qwen2() -> Tokenizer {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/qwen2-tokenizer");
    Tokenizer::from_model_dir(&dir).expect("the Qwen2 BPE fixture")
}

/// Ids from upstream's own frontend: `transformers.AutoTokenizer` over the same `vocab.json`,
/// `merges.txt` and `tokenizer_config.json`, with CosyVoice3's `add_special_tokens` (its
/// `QwenTokenizer`), for the texts below (script in the test's commit message).
const SYSTEM: [u32; 6] = [2610, 525, 264, 10950, 17847, 13]; // "You are a helpful assistant."
const END_OF_PROMPT: u32 = 151_646;
const TRANSCRIPT: &str = "Hello, this is my voice.";
const TRANSCRIPT_IDS: [u32; 7] = [9707, 11, 419, 374, 847, 7743, 13];
const INSTRUCTION: &str = "Speak softly, like telling a secret.";
const INSTRUCTION_IDS: [u32; 8] = [67201, 56050, 11, 1075, 11629, 264, 6234, 13];
const TEXT: &str = "The door creaked open.";
const TEXT_IDS: [u32; 7] = [785, 6006, 272, 1108, 291, 1787, 13];

fn cat(parts: &[&[u32]]) -> Vec<u32> {
    parts.concat()
}

/// The voice's prompt text ids as the backend prepares them (`Tokenizer::prompt_ids`).
fn voice_ids(t: &Tokenizer) -> Vec<u32> {
    t.prompt_ids(TRANSCRIPT).unwrap()
}

#[test]
fn zero_shot_input_is_transcript_text_and_prompt_tokens() {
    let _one = common::one_at_a_time();
    let t = qwen2();
    assert_eq!(voice_ids(&t), cat(&[&SYSTEM, &[END_OF_PROMPT], &TRANSCRIPT_IDS]));
    let p = lm_prompt(&t, &Mode::ZeroShot, &voice_ids(&t), &[7, 8, 9], TEXT).unwrap();
    let expected = LmPrompt {
        prompt_text_ids: cat(&[&SYSTEM, &[END_OF_PROMPT], &TRANSCRIPT_IDS]),
        text_ids: TEXT_IDS.to_vec(),
        prompt_speech_tokens: vec![7, 8, 9],
    };
    assert_eq!(p, expected);
}

/// `frontend_instruct2`: `You are a helpful assistant. <instruction><|endofprompt|>` as the
/// prompt text, and no prompt speech tokens for the LM.
#[test]
fn instruct_input_is_the_instruction_and_no_prompt_speech() {
    let _one = common::one_at_a_time();
    let t = qwen2();
    assert_eq!(
        instruct_prompt(INSTRUCTION),
        "You are a helpful assistant. Speak softly, like telling a secret.<|endofprompt|>"
    );
    let mode = Mode::Instruct(INSTRUCTION.into());
    let p = lm_prompt(&t, &mode, &voice_ids(&t), &[7, 8, 9], TEXT).unwrap();
    let expected = LmPrompt {
        prompt_text_ids: cat(&[&SYSTEM, &INSTRUCTION_IDS, &[END_OF_PROMPT]]),
        text_ids: TEXT_IDS.to_vec(),
        prompt_speech_tokens: Vec::new(),
    };
    assert_eq!(p, expected);
}

/// `frontend_cross_lingual`: no prompt text, no prompt speech tokens; the text is led by the
/// system prompt and `<|endofprompt|>`, which count towards the text's length rule.
#[test]
fn cross_lingual_input_leads_the_text_with_the_system_prompt() {
    let _one = common::one_at_a_time();
    let t = qwen2();
    let p = lm_prompt(&t, &Mode::CrossLingual, &voice_ids(&t), &[7, 8, 9], TEXT).unwrap();
    let expected = LmPrompt {
        prompt_text_ids: Vec::new(),
        text_ids: cat(&[&SYSTEM, &[END_OF_PROMPT], &TEXT_IDS]),
        prompt_speech_tokens: Vec::new(),
    };
    assert_eq!(p, expected);
}

/// Upstream's `F.interpolate(mel, size=int(T / speed), mode="linear")` on a ramp: frame `i` of
/// the output reads the input at `max((i + ½)·T/T' − ½, 0)`.
#[test]
fn pace_resamples_the_mel_linearly_in_time() {
    let _one = common::one_at_a_time();
    let frames = 10;
    let data: Vec<f32> = (0..frames * 80).map(|i| (i / 80) as f32).collect(); // frame f = f
    let mel = Mel::new(frames, data).unwrap();
    assert_eq!(mel.paced(1.0), mel);
    let slow = mel.paced(0.8); // int(10 / 0.8) = 12 frames
    assert_eq!(slow.frames, 12);
    let scale = 10.0f32 / 12.0;
    for i in 0..12 {
        let at = (scale * (i as f32 + 0.5) - 0.5).clamp(0.0, 9.0);
        assert!((slow.frame(i)[0] - at).abs() < 1e-6, "frame {i}: {} vs {at}", slow.frame(i)[0]);
        assert!(slow.frame(i).iter().all(|&v| v == slow.frame(i)[0]));
    }
    let fast = mel.paced(1.5); // int(10 / 1.5) = 6 frames
    assert_eq!(fast.frames, 6);
    assert!((fast.frame(0)[0] - 1.0 / 3.0).abs() < 1e-6); // 0.5·10/6 − 0.5
    assert_eq!(paced_frames(90, 0.9), 100);
    assert_eq!(paced_frames(7, 2.0), 3);
}

fn params(lanes: usize, group_target_frames: usize) -> RenderParams {
    RenderParams { lanes, group_target_frames, ..RenderParams::default() }
}

fn render(specs: Vec<SegmentSpec>, p: RenderParams) -> Vec<Take> {
    let n = specs.len();
    let h = Engine::spawn(FakeBackend::new(), "narrator", p);
    h.tx.send(Request::Enqueue(specs)).unwrap();
    let mut takes = Vec::new();
    while takes.len() < n {
        match h.rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap() {
            EngineEvent::TakeReady(t) => takes.push(*t),
            EngineEvent::SegmentState {
                state: lectern_engine::protocol::SegmentState::Failed(e),
                ..
            } => {
                panic!("{e}")
            }
            _ => {}
        }
    }
    h.shutdown();
    takes.sort_by_key(|t| t.record.segment_id);
    takes
}

fn cast(voice: &str, mode: Mode, pace: f64) -> Casting {
    Casting { voice: voice.into(), mode, pace }
}

/// A scene: narrator, Anna (instruct), Tom (cross-lingual, slower), narrator again.
fn scene() -> Vec<SegmentSpec> {
    let lines = [
        ("The door creaked open.", cast("", Mode::ZeroShot, 1.0)),
        ("Who is there?", cast("anna", Mode::Instruct("Whisper.".into()), 1.0)),
        ("Only me, Anna.", cast("tom", Mode::CrossLingual, 0.9)),
        ("Nobody moved.", cast("", Mode::ZeroShot, 1.0)),
        ("Then come in.", cast("anna", Mode::ZeroShot, 1.2)),
    ];
    lines
        .into_iter()
        .enumerate()
        .map(|(i, (text, casting))| SegmentSpec {
            casting,
            ..SegmentSpec::new(i as u64, text, 100 + i as u64)
        })
        .collect()
}

/// Mixed voices decode in the same LM batches and never share a flow group; each segment has
/// the tokens it has rendered alone with its voice, mode and seed, and with one segment per
/// group (where groups cannot differ) the same audio.
#[test]
fn a_mixed_voice_render_is_each_segment_rendered_alone() {
    let _one = common::one_at_a_time();
    let mixed = render(scene(), params(8, 0));
    let grouped = render(scene(), params(8, 100_000));
    for (i, spec) in scene().into_iter().enumerate() {
        let alone = render(vec![spec.clone()], params(1, 0));
        let voice = if spec.casting.voice.is_empty() { "narrator" } else { &spec.casting.voice };
        assert_eq!(mixed[i].record.voice_id, voice);
        assert_eq!(mixed[i].record.tokens, alone[0].record.tokens, "segment {i}");
        assert_eq!(grouped[i].record.tokens, alone[0].record.tokens, "segment {i}");
        assert_eq!(mixed[i].samples, alone[0].samples, "segment {i}");
        let frames = paced_frames(2 * alone[0].record.tokens.len(), spec.casting.pace);
        assert_eq!(mixed[i].samples.len(), frames * 480, "segment {i}");
        // The record says how it was spoken.
        let content = &mixed[i].record.content;
        assert_eq!(content.mode, spec.casting.mode.name());
        assert_eq!(content.instruction.as_deref(), spec.casting.mode.instruction());
        assert_eq!(content.pace_value(), spec.casting.pace);
    }
    // Groups never mix voices or paces, even with room to spare: here every line changes
    // voice or pace, so every group is one line.
    assert!(grouped.iter().all(|t| t.record.group.segment_ids.len() == 1));
    // The mode changes the tokens (another prompt), as it does upstream.
    let mut zero_shot = scene()[1].clone();
    zero_shot.casting.mode = Mode::ZeroShot;
    let plain = render(vec![zero_shot], params(1, 0));
    assert_ne!(plain[0].record.tokens, mixed[1].record.tokens);
}

/// A take of a paced segment regenerates bit for bit from its record.
#[test]
fn a_paced_take_regenerates_from_its_record() {
    let _one = common::one_at_a_time();
    let spec = scene()[2].clone();
    let first = render(vec![spec], params(1, 0)).remove(0);
    let h = Engine::spawn(FakeBackend::new(), "narrator", params(1, 0));
    h.tx.send(Request::Regenerate(Box::new(first.record.clone()))).unwrap();
    let again = loop {
        if let EngineEvent::TakeReady(t) =
            h.rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap()
        {
            break *t;
        }
    };
    h.shutdown();
    assert_eq!(again.samples, first.samples);
    assert_eq!(again.record.voice_id, "tom");
}
