//! Property tests of every parser that reads a user's file (issue #17): the manuscript (plain
//! and Markdown, with pause markup), the pronunciation file, theme and keymap TOML, and the WAV
//! readers (`audio::wav` and the voice reference). For any input each must return (a value or an
//! error) — no panic — in bounded time and memory.
//!
//! Memory is measured by this binary's global allocator: it counts the bytes each thread has
//! live and the peak since the case began, so a case is failed if it makes its thread hold more
//! than [`MEMORY_LIMIT`] above what it held before (a WAV header claiming 4 GiB of samples must
//! not make the reader reserve them). Time is checked per case against [`TIME_LIMIT`]: a parser
//! that hangs never returns, so the test run's own time-out is the backstop, while the limit
//! catches run times that grow out of proportion with the (small) inputs.
//!
//! Cases per property: `PROPTEST_CASES` (proptest's variable), 128 by default.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Cursor;
use std::path::Path;
use std::time::{Duration, Instant};

use lectern::tui::keymap::{KeyChord, KeyMap};
use lectern::tui::theme::Theme;
use lectern_text::{Format, Manuscript, ParseOptions, Pronunciations};
use proptest::prelude::*;

/// Most a case may make its thread allocate above its starting point, bytes.
const MEMORY_LIMIT: usize = 64 << 20;
/// Longest a case may run.
const TIME_LIMIT: Duration = Duration::from_secs(5);

/// The system allocator, counting live bytes and their peak per thread.
struct Counting;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn add_live(n: usize) {
    // `try_with`: the counters may already be gone while a thread is torn down.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + n;
        live.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

fn sub_live(n: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get().saturating_sub(n)));
}

// SAFETY: every call is forwarded to `System` unchanged; the counting only reads sizes.
#[allow(unsafe_code)] // a counting allocator wraps the system one
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add_live(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        sub_live(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add_live(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add_live(new_size);
        sub_live(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `f`, failing the case if it takes longer than [`TIME_LIMIT`] or makes this thread hold
/// more than [`MEMORY_LIMIT`] above its starting point. (A panic in `f` fails the case too.)
fn bounded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let t0 = Instant::now();
    let out = f();
    let took = t0.elapsed();
    let grew = PEAK.with(Cell::get).saturating_sub(base);
    prop_assert!(took <= TIME_LIMIT, "{what}: took {took:?}");
    prop_assert!(grew <= MEMORY_LIMIT, "{what}: held {} MiB more", grew >> 20);
    Ok(out)
}

fn config() -> ProptestConfig {
    // `PROPTEST_CASES` in the environment overrides the default (proptest reads it).
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(128);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Pieces manuscripts are made of: Markdown structure, pause markup (good and bad), numbers and
/// symbols the normaliser rewrites, special tokens, multi-byte text, and control characters.
fn manuscript_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z]{1,8}",
        2 => Just(" ".to_string()),
        2 => Just("\n".to_string()),
        1 => Just("\n\n".to_string()),
        1 => prop::sample::select(vec![
            "# ", "## ", "###### ", "#", "*", "**", "_", "`", "```", "```rust\n", "~~~", "    ",
            "> ", "- ", "1. ", "[", "]", "(", ")", "![", "](", "<", ">", "</b>", "<br>", "---",
            "[x]: http://x", "\\", "|", "\t", "\r\n", "\u{feff}",
        ])
        .prop_map(str::to_string),
        2 => prop::sample::select(vec![
            "[pause]", "[break]", "[pause:1.5s]", "[pause:300ms]", "[pause:", "[pause:]",
            "[pause:-1s]", "[pause:1e9s]", "[pause:NaN]", "[pause:inf]", "[pause:0.0001ms]",
            "[pause:99999999999999999999s]", "[pause:ééééééééééé", "[pause:1.5s",
        ])
        .prop_map(str::to_string),
        2 => prop::sample::select(vec![
            ".", "!", "?", ",", ";", ":", "…", "\"", "'", "“", "”", "—", "42", "3.14", "1,000",
            "$3.50", "€5", "50%", "1st", "2nd", "1999", "10:30", "Dr.", "Mr.", "e.g.", "-7",
            "1e10", "99999999999999999999", "<|endofprompt|>", "<|", "|>", "[breath]",
            "<strong>", "[AA1]", "中文", "一二三", "。", "，", "é", "ß", "\u{0301}", "🙂",
            "\u{200b}", "\u{0}", "\u{7f}",
        ])
        .prop_map(str::to_string),
        1 => any::<String>(),
    ]
}

fn manuscript_text() -> impl Strategy<Value = String> {
    prop::collection::vec(manuscript_piece(), 0..120).prop_map(|v| v.concat())
}

/// Lines of a pronunciation file, well-formed or not.
fn pronunciation_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        3 => ("[a-zA-Z.]{1,6}( [a-zA-Z.]{1,6})?", "[a-zA-Z0-9 \\[\\]]{0,12}")
            .prop_map(|(k, v)| format!("{k} = {v}")),
        1 => Just("# comment".to_string()),
        1 => Just(String::new()),
        1 => Just("=".to_string()),
        1 => Just("word =".to_string()),
        1 => "[^\n]{0,30}",
    ];
    prop::collection::vec(line, 0..12).prop_map(|v| v.join("\n"))
}

/// Theme TOML: real role names and colour forms, mixed with broken ones.
fn theme_text() -> impl Strategy<Value = String> {
    let role = prop_oneof![
        4 => prop::sample::select(Theme::ROLES.to_vec()).prop_map(str::to_string),
        1 => "[a-z_]{1,12}",
    ];
    let colour = prop_oneof![
        prop::sample::select(vec![
            "red",
            "lightblue",
            "darkgray",
            "reset",
            "#5fafd7",
            "#fff",
            "#gggggg",
            "237",
            "256",
            "-1",
            "",
            "é",
            "#ééé",
            "rgb(1,2,3)",
        ])
        .prop_map(str::to_string),
        "[^\"\\\\\n]{0,10}",
    ];
    let field = prop_oneof![
        colour.clone().prop_map(|c| format!("fg = \"{c}\"")),
        colour.prop_map(|c| format!("bg = \"{c}\"")),
        (
            prop::sample::select(vec!["bold", "dim", "italic", "underlined", "reversed", "x"]),
            any::<bool>()
        )
            .prop_map(|(m, b)| format!("{m} = {b}")),
        Just("bold = 1".to_string()),
    ];
    let entry = (role, prop::collection::vec(field, 0..4))
        .prop_map(|(r, fs)| format!("{r} = {{ {} }}", fs.join(", ")));
    let base = prop_oneof![
        Just(String::new()),
        prop::sample::select(vec!["dark", "light", "plain", "nope", ""])
            .prop_map(|b| format!("base = \"{b}\"\n")),
    ];
    prop_oneof![
        4 => (base, prop::collection::vec(entry, 0..8))
            .prop_map(|(b, es)| format!("{b}[roles]\n{}\n", es.join("\n"))),
        1 => any::<String>(),
    ]
}

/// Keymap TOML: key names (with modifiers) bound to actions, mixed with broken ones.
fn keymap_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        prop::sample::select(vec![
            "q",
            "space",
            "enter",
            "f1",
            "f12",
            "f13",
            "f0",
            "fé",
            "ctrl-r",
            "alt-ctrl-x",
            "ctrl-",
            "",
            "é",
            "pgup",
            "Home",
            "ctrl-alt-ctrl-f5",
            "f99999999999",
        ])
        .prop_map(str::to_string),
        "[a-z\\-]{0,10}",
    ];
    let action = prop_oneof![
        prop::sample::select(vec!["quit", "reseed", "none", "bogus"]).prop_map(str::to_string),
        "[a-z_]{0,10}"
    ];
    let entry = (key, action).prop_map(|(k, a)| format!("\"{k}\" = \"{a}\""));
    prop_oneof![
        4 => prop::collection::vec(entry, 0..8)
            .prop_map(|es| format!("[bindings]\n{}\n", es.join("\n"))),
        1 => any::<String>(),
    ]
}

/// A RIFF/WAVE file built from arbitrary header fields and chunks: sizes that lie (a data chunk
/// claiming 4 GiB), odd formats, truncation — and sometimes plain random bytes.
fn wav_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![4 => wav_like_bytes(), 1 => prop::collection::vec(any::<u8>(), 0..256)]
}

fn wav_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    let fmt = (
        prop::sample::select(vec![1u16, 3, 0xFFFE, 0, 2, 7]),
        prop::sample::select(vec![0u16, 1, 2, 6, 65535]),
        prop::sample::select(vec![0u32, 1, 8_000, 16_000, 22_050, 24_000, 48_000, u32::MAX]),
        prop::sample::select(vec![0u16, 1, 8, 12, 16, 24, 32, 64, 65535]),
    );
    let data_len = prop_oneof![Just(None), Just(Some(u32::MAX)), (0u32..4096).prop_map(Some)];
    (fmt, data_len, prop::collection::vec(any::<u8>(), 0..2048), any::<bool>(), 0usize..200)
        .prop_map(|((tag, channels, rate, bits), data_len, payload, extensible, cut)| {
            let mut fmt = Vec::new();
            let block_align = channels.wrapping_mul(bits / 8);
            fmt.extend_from_slice(&tag.to_le_bytes());
            fmt.extend_from_slice(&channels.to_le_bytes());
            fmt.extend_from_slice(&rate.to_le_bytes());
            fmt.extend_from_slice(&rate.wrapping_mul(u32::from(block_align)).to_le_bytes());
            fmt.extend_from_slice(&block_align.to_le_bytes());
            fmt.extend_from_slice(&bits.to_le_bytes());
            if extensible {
                fmt.extend_from_slice(&22u16.to_le_bytes());
                fmt.extend_from_slice(&bits.to_le_bytes());
                fmt.extend_from_slice(&0u32.to_le_bytes());
                fmt.extend_from_slice(&[
                    1, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71,
                ]);
            }
            let mut body = b"WAVE".to_vec();
            body.extend_from_slice(b"fmt ");
            body.extend_from_slice(&(fmt.len() as u32).to_le_bytes());
            body.extend_from_slice(&fmt);
            body.extend_from_slice(b"data");
            let len = data_len.unwrap_or(payload.len() as u32);
            body.extend_from_slice(&len.to_le_bytes());
            body.extend_from_slice(&payload);
            let mut file = b"RIFF".to_vec();
            file.extend_from_slice(&(body.len() as u32).to_le_bytes());
            file.extend_from_slice(&body);
            file.truncate(file.len().saturating_sub(cut));
            file
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn manuscripts_parse_or_fail_cleanly(text in manuscript_text(), markdown in any::<bool>()) {
        let format = if markdown { Format::Markdown } else { Format::Plain };
        let opts = ParseOptions::default().with_format(format);
        let parsed = bounded("manuscript", || Manuscript::parse(&text, &opts))?;
        if let Ok(m) = parsed {
            for seg in m.segments() {
                prop_assert!(seg.span.bytes.end <= text.len(), "span past the end: {seg:?}");
            }
        }
    }

    #[test]
    fn manuscript_bytes_decode_or_fail_cleanly(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let path = Path::new("book.md");
        bounded("decode", || {
            if let Ok(src) = lectern_text::manuscript::decode(&bytes, path) {
                let opts = ParseOptions::default().with_format(Format::Markdown);
                let _ = Manuscript::parse(src, &opts);
            }
        })?;
    }

    #[test]
    fn pronunciation_files_parse_or_fail_cleanly(
        file in pronunciation_text(),
        text in manuscript_text(),
    ) {
        let path = Path::new("p.txt");
        let parsed = bounded("pronunciations", || Pronunciations::parse(&file, path))?;
        if let Ok(p) = parsed {
            let opts = ParseOptions::default().with_pronunciations(p);
            let _ = bounded("manuscript with pronunciations", || Manuscript::parse(&text, &opts))?;
        }
    }

    #[test]
    fn theme_files_load_or_fail_cleanly(text in theme_text()) {
        let _ = bounded("theme", || Theme::from_toml("t", &text, "t.toml"))?;
        let _ = bounded("theme patch", || Theme::dark().patch(&text, "t.toml"))?;
    }

    #[test]
    fn keymap_files_load_or_fail_cleanly(text in keymap_text(), key in ".{0,12}") {
        let _ = bounded("keymap", || KeyMap::default().patch(&text))?;
        if let Ok(chord) = bounded("key name", || KeyChord::parse(&key))? {
            // A parsed key's name reads back to the same key (arrows print as symbols).
            if !matches!(chord.code, crossterm::event::KeyCode::Up | crossterm::event::KeyCode::Down
                | crossterm::event::KeyCode::Left | crossterm::event::KeyCode::Right) {
                prop_assert_eq!(KeyChord::parse(&chord.name()).ok(), Some(chord));
            }
        }
    }

    #[test]
    fn wav_files_decode_or_fail_cleanly(bytes in wav_bytes()) {
        bounded("wav decode", || {
            if let Ok(r) = hound::WavReader::new(Cursor::new(&bytes)) {
                let _ = lectern::audio::wav::decode_samples(r);
            }
        })?;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ref.wav");
        std::fs::write(&path, &bytes).expect("write");
        let _ = bounded("wav read_any", || lectern::audio::wav::read_any(&path))?;
        let _ = bounded("voice reference", || lectern_voice::reference::load_reference(&path))?;
    }
}

/// Most a hostile archive may make its reader hold (issue #49): the largest entry accepted
/// (`InputLimits::entry_bytes`) and what is parsed from it.
const ARCHIVE_MEMORY_LIMIT: usize = 256 << 20;

/// One entry of a hostile archive: its name (well-formed, escaping the folder, absolute, very
/// long), its inflated size, and whether it is zeros (a bomb) or bytes that barely compress.
fn hostile_entry() -> impl Strategy<Value = (String, usize, bool)> {
    let name = prop::sample::select(vec![
        "OEBPS/c1.xhtml".to_string(),
        "OEBPS/cover.png".to_string(),
        "OEBPS/content.opf".to_string(),
        "word/document.xml".to_string(),
        "../../escape.xhtml".to_string(),
        "/absolute/c1.xhtml".to_string(),
        format!("OEBPS/{}.xhtml", "n".repeat(300)),
    ]);
    let size = prop::sample::select(vec![0usize, 4 << 10, 8 << 20, 80 << 20, 300 << 20]);
    (name, size, any::<bool>())
        .prop_filter("random bytes stay small enough to write", |(_, size, zeros)| {
            *zeros || *size <= 80 << 20
        })
}

/// Writes an EPUB-shaped archive (a valid small book, the DOCX document part) plus `entry`,
/// without holding the entry in memory.
fn hostile_zip(path: &Path, (name, size, zeros): &(String, usize, bool)) {
    use std::io::Write;
    use zip::write::SimpleFileOptions;
    let book = tempfile::tempdir().expect("temp dir");
    let good = book.path().join("good.epub");
    lectern_test_support::epub::epub3(&good);
    let mut source = zip::ZipArchive::new(std::fs::File::open(&good).unwrap()).unwrap();
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..source.len() {
        let entry = source.by_index_raw(i).unwrap();
        if entry.name().map_or(true, |n| n != name.as_str()) {
            zip.raw_copy_file(entry).unwrap();
        }
    }
    let opts = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(1));
    zip.start_file(name.as_str(), opts).unwrap();
    let mut block = vec![0u8; 1 << 20];
    let mut x = 0x2545_f491_u32;
    for _ in 0..size.div_ceil(1 << 20) {
        if !zeros {
            for b in &mut block {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = x as u8;
            }
        }
        zip.write_all(&block).unwrap();
    }
    zip.finish().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: config().cases.min(12), ..config() })]

    #[test]
    fn hostile_archives_are_read_in_bounded_memory_and_write_nothing(entry in hostile_entry()) {
        let dir = tempfile::tempdir().expect("temp dir");
        let inner = dir.path().join("a/b");
        std::fs::create_dir_all(&inner).unwrap();
        let book = inner.join("book.epub");
        hostile_zip(&book, &entry);
        let policy = lectern_text::ReadPolicy::default();
        let base = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(base));
        let _ = lectern_text::epub::read(&book, &policy);
        let _ = lectern_text::docx::read(&book, &policy);
        let grew = PEAK.with(Cell::get).saturating_sub(base);
        prop_assert!(grew <= ARCHIVE_MEMORY_LIMIT, "{entry:?}: held {} MiB", grew >> 20);
        let listing = |d: &Path| -> Vec<String> {
            walk(d).into_iter().map(|p| p.strip_prefix(d).unwrap().display().to_string()).collect()
        };
        prop_assert_eq!(listing(dir.path()), vec!["a", "a/b", "a/b/book.epub"]);
    }
}

/// Every path under `dir`, sorted.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        out.push(p.clone());
        if p.is_dir() {
            out.extend(walk(&p));
        }
    }
    out.sort();
    out
}

/// Inputs the properties found that panicked, kept as plain tests.
#[test]
fn regressions_found_by_the_properties() {
    let opts = ParseOptions::default();
    // A `<` followed by text whose byte 40 falls inside a 4-byte char (the tokenizer's special
    // token lookup sliced there).
    let _ = Manuscript::parse("<ෲ0𚿵0\u{1133b}A aaa 0\u{d00}0𞣇Aa0¡𝕀\u{11d90}", &opts);
    // An unclosed pause whose byte 20 falls inside `é` (the error message sliced there).
    let e = Manuscript::parse("Hello [pause:ééééééééééé", &opts).unwrap_err().to_string();
    assert!(e.contains("bad pause `[pause:éééééé`"), "{e}");
}
