//! `lectern voice add/list/show`: makes, lists and shows voice prompts.

use anyhow::Result;

use super::VoiceCommand;

pub(super) fn run(action: VoiceCommand) -> Result<()> {
    match action {
        VoiceCommand::List => {
            let dir = crate::voices::voices_dir();
            let voices = lectern_voice::list(&dir)?;
            if voices.is_empty() {
                println!("no voices in {} yet (`lectern voice add` makes one)", dir.display());
            }
            let line = |m: &lectern_voice::Manifest, note: &str| {
                let secs = m.prompt_tokens as f64 / lectern_voice::TOKENS_PER_SECOND;
                println!(
                    "{:<20} {:>6.2} s  {:>5} tokens  {}{note}",
                    m.name, secs, m.prompt_tokens, m.model.name
                );
            };
            for m in &voices {
                line(m, "");
            }
            let demo = crate::assets::DEMO_VOICE;
            if !voices.iter().any(|m| m.name == demo) {
                if let Some(d) = crate::voices::demo_voice_dir(demo) {
                    if let Ok(v) = lectern_voice::Voice::load_dir(&d) {
                        line(&v.manifest, "  (demo voice, for the demo model)");
                    }
                }
            }
            Ok(())
        }
        VoiceCommand::Show { name } => {
            println!("{}", crate::voices::load(&name)?.describe());
            Ok(())
        }
        VoiceCommand::Add { reference, text, name, model, force, allow_non_speech } => {
            // The model the other commands use: the flag, else config.toml's `model`.
            let model = model.or_else(|| crate::config::Config::load_default().settings.model);
            let model = crate::session::ModelChoice::resolve_for(
                model.as_deref(),
                crate::model_dir::ModelUse::VoiceMaking,
            )?;
            let req = lectern_voice::add::AddRequest {
                reference,
                text,
                name,
                model_dir: model.dir.clone(),
                voices_dir: crate::voices::voices_dir(),
                force,
                allow_non_speech,
            };
            let added = lectern_voice::add::add_voice(&req)?;
            for w in &added.warnings {
                eprintln!("warning: {w}");
            }
            let v = &added.voice;
            println!("{}", v.describe());
            println!(
                "aligned:      {} of {} tokens, {} of {} mel frames",
                v.manifest.prompt_tokens,
                added.raw_tokens,
                v.manifest.prompt_mel_frames,
                added.raw_mel_frames
            );
            if model.bundled_tiny {
                println!("note:         {}", crate::session::TINY_NOTICE);
            }
            Ok(())
        }
    }
}
