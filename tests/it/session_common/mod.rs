//! Shared by the session and workstation tests: a session on the bundled tiny model's files
//! (content hashes, tokenizer, demo voice) with the engine's `FakeBackend` behind it.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use lectern::session::{self, ModelChoice, ProjectChoice, Session};
use lectern::tui::desk::{Desk, read_manuscript};
use lectern_engine::protocol::{EngineEvent, RenderParams, Request, Take};
use lectern_engine::{Engine, EngineHandle, FakeBackend};
use lectern_text::Tokenizer;
use lectern_voice::Voice;

/// The bundled tiny model, its demo voice and tokenizer.
pub fn tiny() -> (ModelChoice, Voice, Arc<Tokenizer>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = ModelChoice::tiny_at(&root.join("fixtures/cosyvoice3-tiny-a/model"));
    let voice = Voice::load_dir(&root.join("voices/tiny-demo")).unwrap();
    let tokenizer = Arc::new(session::tokenizer(&model).unwrap());
    (model, voice, tokenizer)
}

/// A session on `manuscript`'s project (beside it), synced.
pub fn open_session(manuscript: &Path, base_seed: u64) -> Session {
    let (model, voice, tokenizer) = tiny();
    let mut s =
        Session::open(&ProjectChoice::NextToManuscript, manuscript, &voice, &model.dir, base_seed)
            .unwrap();
    let book = read_manuscript(manuscript, &tokenizer).unwrap();
    s.sync(&book, &tokenizer).unwrap();
    s
}

/// A desk (session + manuscript) for the workstation's loop.
pub fn open_desk(manuscript: &Path, base_seed: u64) -> Desk {
    let (model, voice, tokenizer) = tiny();
    let s =
        Session::open(&ProjectChoice::NextToManuscript, manuscript, &voice, &model.dir, base_seed)
            .unwrap();
    Desk::open(s, manuscript, tokenizer).unwrap()
}

/// The fake engine with the demo voice's name.
pub fn fake_engine(params: RenderParams) -> EngineHandle {
    Engine::spawn(FakeBackend::new(), "tiny-demo", params)
}

/// Renders what the session says is missing, saving every take; returns the takes in the
/// order they arrived.
pub fn render_all(session: &mut Session, params: RenderParams) -> Vec<Take> {
    let work = session.work().unwrap();
    let h = fake_engine(params);
    for r in &work.regenerate {
        h.tx.send(Request::Regenerate(Box::new(r.clone()))).unwrap();
    }
    h.tx.send(Request::Enqueue(work.render.clone())).unwrap();
    let mut takes = Vec::new();
    let mut left = work.len();
    while left > 0 {
        match h.rx.recv_timeout(std::time::Duration::from_secs(60)).expect("engine event") {
            EngineEvent::TakeReady(t) => {
                takes.push((*t).clone());
                session.accept(*t).unwrap();
                left -= 1;
            }
            EngineEvent::SegmentState {
                id,
                state: lectern_engine::protocol::SegmentState::Failed(w),
            } => {
                panic!("segment {id} failed: {w}")
            }
            _ => {}
        }
    }
    h.shutdown();
    takes
}

/// A take of one token for segment `key` (samples made up), current for no content.
pub fn synthetic_take(key: i64) -> Take {
    use lectern_engine::protocol::{GroupInfo, TakeRecord};
    Take {
        id: 0,
        record: TakeRecord {
            segment_id: key as u64,
            text: String::new(),
            voice_id: "tiny-demo".into(),
            model_id: "m".into(),
            seed: 1,
            nfe: 10,
            cfg_rate: 0.7,
            precision: Default::default(),
            min_len_rule: Default::default(),
            backend: "cpu".into(),
            flow_matmul: "f32".into(),
            group: GroupInfo {
                segment_ids: vec![key as u64],
                token_counts: vec![1],
                index: 0,
                tokens: vec![vec![1]],
            },
            noise_source: "x".into(),
            engine_version: "0".into(),
            tokens: vec![1],
            timings: Default::default(),
            content: Default::default(),
        },
        samples: Arc::new(vec![0.1; 960]),
    }
}

/// A copy of `voice` under another name, optionally with another transcript.
pub fn copy_voice(voice: &Voice, dir: &Path, name: &str, transcript: Option<&str>) -> Voice {
    let to = dir.join(name);
    std::fs::create_dir_all(&to).unwrap();
    for f in ["voice.json", "prompt.safetensors"] {
        std::fs::copy(voice.dir.join(f), to.join(f)).unwrap();
    }
    let manifest = to.join("voice.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    json["name"] = name.into();
    if let Some(t) = transcript {
        json["prompt_text"] = t.into();
    }
    std::fs::write(&manifest, json.to_string()).unwrap();
    Voice::load_dir(&to).unwrap()
}
