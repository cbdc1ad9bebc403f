//! Text tokenizer: Qwen2 byte-level BPE plus the CosyVoice3 special tokens (spec §5.3).
//!
//! * Built from the model directory's `CosyVoice-BlankEN/` with the `tokenizers` crate: either
//!   `tokenizer.json`, or `vocab.json` + `merges.txt` (+ `tokenizer_config.json` for the base
//!   added tokens `<|endoftext|>` 151643, `<|im_start|>` 151644, `<|im_end|>` 151645), assembled
//!   as §5.3 says: NFC, the Qwen2 split regex (isolated), byte-level without prefix space or its
//!   own regex, BPE without unk or byte fallback, **no BOS/EOS**.
//! * The 280 CosyVoice3 `additional_special_tokens` (upstream order, `cosyvoice3_special_tokens
//!   .txt`); those not already present (278: all but `<|im_start|>`/`<|im_end|>`) get ids from
//!   the first free id, 151646 for the real vocabulary: `<|endofprompt|>` = 151646, …,
//!   `<|endofsystem|>` = 151663, 84 CMU phones 151664–151747, 176 pinyin units 151748–151923.
//!   Special tokens are matched in the raw text before normalisation and become single ids.
//! * **Tiny model fallback, not the Qwen2 vocabulary**: a model directory whose
//!   `CosyVoice-BlankEN/` has only `config.json` with a hidden size below the real 896 (the
//!   random-weight test fixtures) gets a deterministic byte tokenizer: each UTF-8 byte `b` → id
//!   `b`, special tokens → their usual ids. It makes the tiny model usable end to end; the ids
//!   mean nothing, as the tiny model's weights do not.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use super::{Result, TextError};

/// The CosyVoice3 prompt-text convention (spec §5.3).
pub const PROMPT_PREFIX: &str = "You are a helpful assistant.<|endofprompt|>";
/// The end-of-prompt marker the LM requires in prompt text + text.
pub const END_OF_PROMPT: &str = "<|endofprompt|>";
/// Its id in the real vocabulary (hard-coded upstream).
pub const END_OF_PROMPT_ID: u32 = 151_646;

/// The Qwen2 pre-tokenizer pattern.
pub const QWEN2_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

const SPECIAL_LIST: &str = include_str!("cosyvoice3_special_tokens.txt");

/// Upstream's `additional_special_tokens`, in order (280, including `<|im_start|>`/`<|im_end|>`).
pub fn cosyvoice3_special_tokens() -> Vec<&'static str> {
    SPECIAL_LIST.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
}

/// Base Qwen2 added tokens with their fixed ids.
const BASE_SPECIALS: [(&str, u32); 3] =
    [("<|endoftext|>", 151_643), ("<|im_start|>", 151_644), ("<|im_end|>", 151_645)];

static SPECIAL_SET: LazyLock<std::collections::HashSet<&'static str>> = LazyLock::new(|| {
    cosyvoice3_special_tokens().into_iter().chain(BASE_SPECIALS.iter().map(|(t, _)| *t)).collect()
});

/// The byte length of a CosyVoice3 special token at the start of `s` (any `<|…|>` counts).
pub fn is_special_token_at(s: &str) -> Option<usize> {
    if let Some(body) = s.strip_prefix("<|") {
        let end = body.find("|>")?;
        let inner = &body[..end];
        return (!inner.is_empty() && inner.len() <= 64 && !inner.contains(char::is_whitespace))
            .then_some(end + 4);
    }
    let close = match s.as_bytes().first()? {
        b'[' => ']',
        b'<' => '>',
        _ => return None,
    };
    // Special tokens are ASCII and at most 40 bytes; the cut must still fall between chars
    // (slicing at byte 40 inside `é` or `𑶐` panicked, and a cut inside one at byte 32 hid a
    // token before it — both found by tests/it/props.rs).
    let end = char_prefix(s, 40).find(close)?;
    SPECIAL_SET.contains(&s[..=end]).then_some(end + 1)
}

/// The longest prefix of `s` of at most `max_bytes` bytes that ends between two chars.
pub(crate) fn char_prefix(s: &str, max_bytes: usize) -> &str {
    let mut end = max_bytes.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Which vocabulary a [`Tokenizer`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizerKind {
    /// The Qwen2 BPE from `CosyVoice-BlankEN`.
    Qwen2,
    /// Tiny model fallback, not the Qwen2 vocabulary: UTF-8 bytes as ids 0..=255.
    TinyFallback,
}

/// Text → ids for the LM.
pub struct Tokenizer {
    kind: TokenizerKind,
    bpe: Option<tokenizers::Tokenizer>,
    specials: HashMap<String, u32>,
    source: PathBuf,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("kind", &self.kind)
            .field("source", &self.source)
            .field("specials", &self.specials.len())
            .finish_non_exhaustive()
    }
}

fn tok_err(path: &Path, e: impl std::fmt::Display) -> TextError {
    TextError::Tokenizer(format!("{}: {e}", path.display()))
}

impl Tokenizer {
    /// Loads the tokenizer of a model directory (upstream layout: `<dir>/CosyVoice-BlankEN/`),
    /// or of a tokenizer directory itself.
    pub fn from_model_dir(dir: &Path) -> Result<Self> {
        let blank = dir.join("CosyVoice-BlankEN");
        let tdir = if blank.is_dir() { blank } else { dir.to_path_buf() };
        if tdir.join("tokenizer.json").is_file() {
            return Self::from_tokenizer_json(&tdir.join("tokenizer.json"));
        }
        if tdir.join("vocab.json").is_file() && tdir.join("merges.txt").is_file() {
            return Self::from_vocab_merges(&tdir);
        }
        let config = tdir.join("config.json");
        let hidden = std::fs::read_to_string(&config)
            .ok()
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .and_then(|v| v.get("hidden_size").and_then(serde_json::Value::as_u64));
        match hidden {
            Some(h) if h < 896 => Ok(Self::tiny_fallback(&tdir)),
            _ => Err(tok_err(
                &tdir,
                "no tokenizer files (tokenizer.json, or vocab.json + merges.txt) in the model's \
                 CosyVoice-BlankEN directory",
            )),
        }
    }

    /// The labelled byte-level fallback for tiny random-weight models.
    pub fn tiny_fallback(source: &Path) -> Self {
        let mut specials: HashMap<String, u32> =
            BASE_SPECIALS.iter().map(|&(t, id)| (t.to_string(), id)).collect();
        assign_cosyvoice_ids(&mut specials, END_OF_PROMPT_ID);
        Self { kind: TokenizerKind::TinyFallback, bpe: None, specials, source: source.into() }
    }

    fn from_tokenizer_json(path: &Path) -> Result<Self> {
        let bpe = tokenizers::Tokenizer::from_file(path).map_err(|e| tok_err(path, e))?;
        let mut specials: HashMap<String, u32> =
            bpe.get_added_tokens_decoder().into_iter().map(|(id, t)| (t.content, id)).collect();
        let next = bpe.get_vocab(true).values().copied().max().map_or(0, |m| m + 1);
        assign_cosyvoice_ids(&mut specials, next);
        Ok(Self { kind: TokenizerKind::Qwen2, bpe: Some(bpe), specials, source: path.into() })
    }

    fn from_vocab_merges(dir: &Path) -> Result<Self> {
        use tokenizers::models::bpe::BPE;
        use tokenizers::pre_tokenizers::byte_level::ByteLevel;
        use tokenizers::pre_tokenizers::sequence::Sequence;
        use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
        let (vocab, merges) = (dir.join("vocab.json"), dir.join("merges.txt"));
        let model = BPE::from_file(&vocab.to_string_lossy(), &merges.to_string_lossy())
            .build()
            .map_err(|e| tok_err(&vocab, e))?;
        let base_max = tokenizers::Model::get_vocab(&model).values().copied().max();
        let mut bpe = tokenizers::Tokenizer::new(model);
        bpe.with_normalizer(Some(tokenizers::normalizers::unicode::NFC))
            .map_err(|e| tok_err(dir, e))?;
        let split = Split::new(
            SplitPattern::Regex(QWEN2_PATTERN.into()),
            tokenizers::SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|e| tok_err(dir, e))?;
        let byte_level = ByteLevel::new(false, false, false);
        bpe.with_pre_tokenizer(Some(Sequence::new(vec![split.into(), byte_level.into()])));
        bpe.with_decoder(Some(ByteLevel::default()));
        let mut specials = read_added_tokens(&dir.join("tokenizer_config.json"))?;
        let next = specials.values().copied().chain(base_max).max().map_or(0, |m| m + 1);
        assign_cosyvoice_ids(&mut specials, next);
        Ok(Self { kind: TokenizerKind::Qwen2, bpe: Some(bpe), specials, source: dir.into() })
    }

    pub fn kind(&self) -> TokenizerKind {
        self.kind
    }

    /// One line for logs and the UI, naming the fallback plainly.
    pub fn describe(&self) -> String {
        match self.kind {
            TokenizerKind::Qwen2 => format!("Qwen2 BPE from {}", self.source.display()),
            TokenizerKind::TinyFallback => format!(
                "tiny model fallback, not the Qwen2 vocabulary (UTF-8 bytes as ids; {})",
                self.source.display()
            ),
        }
    }

    /// The id of a special token, e.g. `<|endofprompt|>`.
    pub fn special_id(&self, token: &str) -> Option<u32> {
        self.specials.get(token).copied()
    }

    /// Text → ids: special tokens become single ids, the rest goes through the BPE; no BOS/EOS.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids = Vec::new();
        let mut plain_start = 0;
        let mut i = 0;
        let bytes = text.as_bytes();
        while i < bytes.len() {
            if (bytes[i] == b'<' || bytes[i] == b'[')
                && let Some(n) = is_special_token_at(&text[i..])
                && let Some(&id) = self.specials.get(&text[i..i + n])
            {
                self.encode_plain(&text[plain_start..i], &mut ids)?;
                ids.push(id);
                i += n;
                plain_start = i;
                continue;
            }
            i += 1;
        }
        self.encode_plain(&text[plain_start..], &mut ids)?;
        Ok(ids)
    }

    fn encode_plain(&self, text: &str, ids: &mut Vec<u32>) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        match &self.bpe {
            Some(bpe) => {
                let enc = bpe.encode(text, false).map_err(|e| tok_err(&self.source, e))?;
                ids.extend_from_slice(enc.get_ids());
            }
            None => ids.extend(text.bytes().map(u32::from)),
        }
        Ok(())
    }

    /// The number of ids `text` encodes to (the English length measure of `split_paragraph`).
    pub fn count(&self, text: &str) -> usize {
        self.encode(text).map_or_else(|_| text.len(), |v| v.len())
    }

    /// Prompt ids for a voice's transcript, with the CosyVoice3 convention
    /// `You are a helpful assistant.<|endofprompt|>` + transcript (unless the text already holds
    /// `<|endofprompt|>`, then it is used as is).
    pub fn prompt_ids(&self, prompt_text: &str) -> Result<Vec<u32>> {
        if prompt_text.contains(END_OF_PROMPT) {
            self.encode(prompt_text)
        } else {
            self.encode(&format!("{PROMPT_PREFIX}{prompt_text}"))
        }
    }
}

/// Gives the CosyVoice3 tokens not yet present consecutive ids from `next`.
fn assign_cosyvoice_ids(specials: &mut HashMap<String, u32>, mut next: u32) {
    for t in cosyvoice3_special_tokens() {
        if !specials.contains_key(t) {
            specials.insert(t.to_string(), next);
            next += 1;
        }
    }
}

/// `added_tokens_decoder` of a `tokenizer_config.json` (absent file: none).
fn read_added_tokens(path: &Path) -> Result<HashMap<String, u32>> {
    let Ok(src) = std::fs::read_to_string(path) else { return Ok(HashMap::new()) };
    let v: serde_json::Value = serde_json::from_str(&src).map_err(|e| tok_err(path, e))?;
    let mut out = HashMap::new();
    if let Some(map) = v.get("added_tokens_decoder").and_then(serde_json::Value::as_object) {
        for (id, tok) in map {
            let id: u32 = id.parse().map_err(|e| tok_err(path, e))?;
            if let Some(c) = tok.get("content").and_then(serde_json::Value::as_str) {
                out.insert(c.to_string(), id);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_tokens_are_found_next_to_multibyte_text() {
        // Byte 40 inside a 4-byte char: used to panic.
        let s = format!("<{}", "a".repeat(37) + "𑶐");
        assert_eq!(is_special_token_at(&s), None);
        // Byte 32 inside `é`, after a complete `[breath]`: used to hide the token.
        let s = format!("[breath]{}é", "a".repeat(23));
        assert_eq!(is_special_token_at(&s), Some(8));
        assert_eq!(char_prefix("aé", 2), "a");
    }

    #[test]
    fn special_token_ids_follow_upstream_order() {
        let t = Tokenizer::tiny_fallback(Path::new("x"));
        assert_eq!(cosyvoice3_special_tokens().len(), 280);
        assert_eq!(t.special_id("<|endofprompt|>"), Some(151_646));
        assert_eq!(t.special_id("[breath]"), Some(151_647));
        assert_eq!(t.special_id("</strong>"), Some(151_649));
        assert_eq!(t.special_id("[mn]"), Some(151_662));
        assert_eq!(t.special_id("<|endofsystem|>"), Some(151_663));
        assert_eq!(t.special_id("[AA]"), Some(151_664));
        assert_eq!(t.special_id("[ZH]"), Some(151_747));
        assert_eq!(t.special_id("[a]"), Some(151_748));
        assert_eq!(t.special_id("[ǜ]"), Some(151_923));
        assert_eq!(t.special_id("<|im_end|>"), Some(151_645));
    }

    #[test]
    fn tokenizer_json_matches_vocab_and_merges() {
        let from_files = Tokenizer::from_model_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/text"),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("tokenizer.json");
        from_files.bpe.as_ref().unwrap().save(&json, false).unwrap();
        let from_json = Tokenizer::from_model_dir(dir.path()).unwrap();
        assert_eq!(from_json.kind(), TokenizerKind::Qwen2);
        for text in ["Hello the world", " the\n\nI'm here, 123 é!", "a  b\tc"] {
            assert_eq!(
                from_json.encode(text).unwrap(),
                from_files.encode(text).unwrap(),
                "{text:?}"
            );
        }
        // Without base added tokens in the file, CosyVoice3 ids follow the vocabulary.
        assert_eq!(from_json.special_id("<|endofprompt|>"), Some(281 + 2));
    }

    #[test]
    fn special_token_detection() {
        assert_eq!(is_special_token_at("<|endofprompt|>x"), Some(15));
        assert_eq!(is_special_token_at("[breath] a"), Some(8));
        assert_eq!(is_special_token_at("[iàng]"), Some("[iàng]".len()));
        assert_eq!(is_special_token_at("[pause]"), None);
        assert_eq!(is_special_token_at("<b>"), None);
        assert_eq!(is_special_token_at("[link](x)"), None);
    }
}
