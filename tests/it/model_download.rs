//! `lectern model download` against a hub in the test process: a std `TcpListener` speaking
//! the two parts of the Hugging Face API the client uses (the revision listing with sizes and
//! hashes, `resolve` with `Range`), which can drop a connection mid-file, serve bytes other than
//! those it lists, or answer 404.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::Digest;

const REPO: &str = "FunAudioLLM/Fun-CosyVoice3-0.5B-2512";
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

/// One file of the test repository.
struct HubFile {
    path: &'static str,
    bytes: Vec<u8>,
    lfs: bool,
}

/// A request the hub saw: its path and `Range` header.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    range: Option<String>,
}

#[derive(Default)]
struct Faults {
    /// File → bytes sent before the connection is dropped, on its first request only.
    drop_once: HashMap<String, usize>,
    /// Files served with one byte changed from what the listing hashes.
    corrupt: HashSet<String>,
    /// Files listed but answered 404.
    missing: HashSet<String>,
}

struct Hub {
    files: Vec<HubFile>,
    faults: Mutex<Faults>,
    seen: Mutex<Vec<Seen>>,
}

/// Bytes that end like a zip archive, as a `torch.save` checkpoint does.
fn checkpoint(len: usize, seed: u8) -> Vec<u8> {
    let mut bytes: Vec<u8> =
        (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8).collect();
    bytes.extend_from_slice(&[0x50, 0x4b, 0x05, 0x06]);
    bytes.extend_from_slice(&[0; 18]);
    bytes
}

fn repository() -> Vec<HubFile> {
    let lfs = |path, bytes| HubFile { path, bytes, lfs: true };
    let git = |path, text: &str| HubFile { path, bytes: text.as_bytes().to_vec(), lfs: false };
    vec![
        lfs("llm.pt", checkpoint(200_000, 1)),
        lfs("flow.pt", checkpoint(300_000, 2)),
        lfs("hift.pt", checkpoint(50_000, 3)),
        lfs("campplus.onnx", checkpoint(40_000, 4)),
        lfs("speech_tokenizer_v3.onnx", checkpoint(60_000, 5)),
        git("CosyVoice-BlankEN/config.json", "{\"hidden_size\": 896}\n"),
        git("CosyVoice-BlankEN/vocab.json", "{\"a\": 0, \"b\": 1}\n"),
        git("CosyVoice-BlankEN/merges.txt", "#version: 0.2\na b\n"),
        git("CosyVoice-BlankEN/tokenizer_config.json", "{}\n"),
        // Listed, not needed: never downloaded.
        lfs("llm.rl.pt", checkpoint(10_000, 6)),
        lfs("CosyVoice-BlankEN/model.safetensors", checkpoint(10_000, 7)),
        git("README.md", "# Fun-CosyVoice3\n"),
    ]
}

const NEEDED: usize = 9;

impl Hub {
    fn start(faults: Faults) -> (Arc<Self>, String) {
        let hub = Arc::new(Self {
            files: repository(),
            faults: Mutex::new(faults),
            seen: Mutex::new(Vec::new()),
        });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let served = Arc::clone(&hub);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let hub = Arc::clone(&served);
                std::thread::spawn(move || hub.serve(stream));
            }
        });
        (hub, endpoint)
    }

    /// Requests of one connection, until the client closes it or a fault drops it.
    fn serve(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut out = stream;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut range = None;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    if k.eq_ignore_ascii_case("range") {
                        range = Some(v.trim().to_string());
                    }
                }
            }
            self.seen.lock().unwrap().push(Seen { path: path.clone(), range: range.clone() });
            if !self.respond(&mut out, &path, range.as_deref()) {
                let _ = out.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
    }

    /// Answers one request; false when the connection is to be dropped.
    fn respond(&self, out: &mut TcpStream, path: &str, range: Option<&str>) -> bool {
        let listing = format!("/api/models/{REPO}/revision/main?blobs=true");
        if path == listing {
            return send(out, "200 OK", &[], self.listing().as_bytes());
        }
        let prefix = format!("/{REPO}/resolve/{COMMIT}/");
        let wanted = path.strip_prefix(&prefix);
        let lfs = |p: &str| self.files.iter().any(|f| f.path == p && f.lfs);
        // As the hub does, LFS files are redirected to the CDN (the client keeps its `Range`).
        if let Some(p) = wanted.filter(|p| lfs(p)) {
            return send(out, "302 Found", &[format!("Location: /cdn/{p}")], b"");
        }
        let wanted = wanted.or_else(|| path.strip_prefix("/cdn/"));
        let file = wanted.and_then(|p| self.files.iter().find(|f| f.path == p));
        let mut faults = self.faults.lock().unwrap();
        let Some(file) = file.filter(|f| !faults.missing.contains(f.path)) else {
            return send(out, "404 Not Found", &[], b"Entry not found");
        };
        let mut bytes = file.bytes.clone();
        if faults.corrupt.contains(file.path) {
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0xff;
        }
        let from: usize = range
            .and_then(|r| r.strip_prefix("bytes="))
            .and_then(|r| r.strip_suffix('-'))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let body = &bytes[from..];
        let (status, headers) = if range.is_some() {
            let cr = format!("Content-Range: bytes {from}-{}/{}", bytes.len() - 1, bytes.len());
            ("206 Partial Content", vec![cr])
        } else {
            ("200 OK", vec![])
        };
        if let Some(cut) = faults.drop_once.remove(file.path) {
            let head = head(status, &headers, body.len());
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(&body[..cut]);
            let _ = out.flush();
            return false;
        }
        send(out, status, &headers, body)
    }

    fn listing(&self) -> String {
        let siblings: Vec<serde_json::Value> = self
            .files
            .iter()
            .map(|f| {
                let mut v = serde_json::json!({
                    "rfilename": f.path,
                    "size": f.bytes.len(),
                    "blobId": git_blob_id(&f.bytes),
                });
                if f.lfs {
                    v["lfs"] = serde_json::json!({
                        "sha256": hex(&sha2::Sha256::digest(&f.bytes)),
                        "size": f.bytes.len(),
                        "pointerSize": 134,
                    });
                }
                v
            })
            .collect();
        serde_json::json!({ "id": REPO, "sha": COMMIT, "siblings": siblings }).to_string()
    }

    /// The requests that asked for `file`'s bytes: its CDN address for an LFS file, else its
    /// `resolve` address.
    fn requests_for(&self, file: &str) -> Vec<Seen> {
        let lfs = self.files.iter().any(|f| f.path == file && f.lfs);
        let at =
            if lfs { format!("/cdn/{file}") } else { format!("/{REPO}/resolve/{COMMIT}/{file}") };
        self.seen.lock().unwrap().iter().filter(|s| s.path == at).cloned().collect()
    }

    fn file(&self, path: &str) -> &[u8] {
        &self.files.iter().find(|f| f.path == path).unwrap().bytes
    }
}

fn head(status: &str, headers: &[String], len: usize) -> String {
    let mut h = format!("HTTP/1.1 {status}\r\nContent-Length: {len}\r\n");
    for line in headers {
        h.push_str(line);
        h.push_str("\r\n");
    }
    h + "\r\n"
}

fn send(out: &mut TcpStream, status: &str, headers: &[String], body: &[u8]) -> bool {
    out.write_all(head(status, headers, body.len()).as_bytes()).is_ok()
        && out.write_all(body).is_ok()
        && out.flush().is_ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Git's blob id, computed here independently of the client's.
fn git_blob_id(bytes: &[u8]) -> String {
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    hex(&h.finalize())
}

/// `lectern` with its own HOME and XDG folders (the config file is written there) and the hub
/// at `endpoint`.
fn lectern(home: &Path, endpoint: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lectern"));
    c.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("HF_ENDPOINT", endpoint)
        .env_remove("HF_TOKEN")
        .env_remove("HF_HUB_OFFLINE");
    c
}

fn download(home: &Path, endpoint: &str, dir: &Path) -> Output {
    lectern(home, endpoint).args(["model", "download", "--dir"]).arg(dir).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn config_file(home: &Path) -> PathBuf {
    home.join(".config/lectern/config.toml")
}

fn assert_complete(hub: &Hub, dir: &Path) {
    for f in hub.files.iter().take(NEEDED) {
        let got = std::fs::read(dir.join(f.path)).unwrap_or_default();
        assert!(got == hub.file(f.path), "{} differs from the hub's", f.path);
    }
}

#[test]
fn a_download_fetches_the_model_files_checks_them_and_records_the_folder() {
    let (hub, endpoint) = Hub::start(Faults::default());
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path().join("home"), tmp.path().join("models/cv3"));
    std::fs::create_dir_all(home.join(".config/lectern")).unwrap();
    std::fs::write(config_file(&home), "# my settings\nnfe = 12\n").unwrap();
    let o = download(&home, &endpoint, &dir);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_complete(&hub, &dir);
    for extra in ["llm.rl.pt", "CosyVoice-BlankEN/model.safetensors", "README.md"] {
        assert!(hub.requests_for(extra).is_empty(), "{extra} was downloaded");
        assert!(!dir.join(extra).exists());
    }
    assert!(stderr(&o).contains("SHA-256 ok") && stderr(&o).contains("git hash ok"));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(".lectern-model.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["revision"], COMMIT);
    assert_eq!(manifest["files"].as_array().unwrap().len(), NEEDED);

    // Recorded in config.toml, the file's own lines kept, and used by the other commands.
    let config = std::fs::read_to_string(config_file(&home)).unwrap();
    let canonical = std::fs::canonicalize(&dir).unwrap();
    assert!(config.starts_with("# my settings\nnfe = 12\n"), "{config}");
    assert!(config.contains(&format!("model = \"{}\"", canonical.display())), "{config}");
    let shown = lectern(&home, &endpoint).arg("config").output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    let model_line = shown.lines().find(|l| l.starts_with("model ")).unwrap_or_default();
    assert!(model_line.contains(&canonical.display().to_string()), "{shown}");
    assert!(model_line.contains("config.toml"), "{shown}");

    // A second run finds every file in place and fetches nothing.
    let before = hub.seen.lock().unwrap().len();
    let again = download(&home, &endpoint, &dir);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stderr(&again).matches("already there").count(), NEEDED, "{}", stderr(&again));
    assert_eq!(hub.seen.lock().unwrap().len(), before + 1, "only the listing is asked again");
}

#[test]
fn a_dropped_connection_is_resumed_with_a_range_request() {
    let cut = 100_000;
    let faults =
        Faults { drop_once: HashMap::from([("flow.pt".into(), cut)]), ..Default::default() };
    let (hub, endpoint) = Hub::start(faults);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cv3");
    let o = download(tmp.path(), &endpoint, &dir);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_complete(&hub, &dir);
    let asked: Vec<Option<String>> =
        hub.requests_for("flow.pt").into_iter().map(|s| s.range).collect();
    assert_eq!(asked, vec![None, Some(format!("bytes={cut}-"))]);
    assert!(stderr(&o).contains("resumed after 1 dropped connection"), "{}", stderr(&o));
}

#[test]
fn an_interrupted_run_is_resumed_by_the_next() {
    let (hub, endpoint) = Hub::start(Faults::default());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cv3");
    std::fs::create_dir_all(&dir).unwrap();
    let have = 123_456;
    std::fs::write(dir.join("flow.pt.part"), &hub.file("flow.pt")[..have]).unwrap();
    // A model check before the download names the unfinished file and says how to go on.
    let check = lectern(tmp.path(), &endpoint).arg("doctor").arg("--model").arg(&dir).output();
    let check = String::from_utf8_lossy(&check.unwrap().stdout).into_owned();
    assert!(check.contains("flow.pt: its download did not finish"), "{check}");
    let o = download(tmp.path(), &endpoint, &dir);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_complete(&hub, &dir);
    let asked: Vec<Option<String>> =
        hub.requests_for("flow.pt").into_iter().map(|s| s.range).collect();
    assert_eq!(asked, vec![Some(format!("bytes={have}-"))]);
    assert!(!dir.join("flow.pt.part").exists());
}

#[test]
fn a_file_that_fails_its_checksum_is_refused_and_removed() {
    let faults = Faults { corrupt: HashSet::from(["hift.pt".into()]), ..Default::default() };
    let (_hub, endpoint) = Hub::start(faults);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cv3");
    let o = download(tmp.path(), &endpoint, &dir);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("hift.pt: the download does not match the hub's listing"), "{err}");
    assert!(err.contains("SHA-256"), "{err}");
    assert!(!dir.join("hift.pt").exists() && !dir.join("hift.pt.part").exists());
    assert!(!config_file(tmp.path()).exists(), "an incomplete model was recorded");
}

#[test]
fn a_missing_repository_or_file_is_named() {
    let faults = Faults { missing: HashSet::from(["campplus.onnx".into()]), ..Default::default() };
    let (_hub, endpoint) = Hub::start(faults);
    let tmp = tempfile::tempdir().unwrap();
    let o = lectern(tmp.path(), &endpoint)
        .args(["model", "download", "someone/No-Such-Model", "--dir"])
        .arg(tmp.path().join("x"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("not found on the hub: model someone/No-Such-Model at revision main"),
        "{err}"
    );

    let o = download(tmp.path(), &endpoint, &tmp.path().join("cv3"));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("not found on the hub: file campplus.onnx"), "{err}");
    assert!(err.contains(&format!("/resolve/{COMMIT}/campplus.onnx")), "{err}");
}

#[test]
fn an_unreachable_hub_fails_fast_and_says_how_to_copy_the_model_in() {
    // A port nothing listens on: refused at once, as an offline machine's lookup fails.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let o = download(tmp.path(), &endpoint, &tmp.path().join("cv3"));
    let took = started.elapsed();
    assert!(!o.status.success());
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let err = stderr(&o);
    assert!(err.contains(&format!("cannot reach the model hub at {endpoint}")), "{err}");
    for named in ["by hand", "llm.pt", "campplus.onnx", "CosyVoice-BlankEN/vocab.json", "--model"] {
        assert!(err.contains(named), "{named}: {err}");
    }
}

#[test]
fn offline_by_setting_or_a_second_download_into_the_folder_fetch_nothing() {
    let (hub, endpoint) = Hub::start(Faults::default());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cv3");
    let o = lectern(tmp.path(), &endpoint)
        .env("HF_HUB_OFFLINE", "1")
        .args(["model", "download", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("HF_HUB_OFFLINE is set") && stderr(&o).contains("by hand"));
    assert!(hub.seen.lock().unwrap().is_empty(), "the hub was asked");

    std::fs::create_dir_all(&dir).unwrap();
    let held = std::fs::File::create(dir.join(".lectern-download.lock")).unwrap();
    fs2::FileExt::lock_exclusive(&held).unwrap();
    let o = download(tmp.path(), &endpoint, &dir);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("another `lectern model download` is writing into"),
        "{}",
        stderr(&o)
    );
    assert!(hub.requests_for("llm.pt").is_empty());
}
