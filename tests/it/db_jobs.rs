//! What the database tests share (`pgvector.rs`, `chroma.rs`, `lance.rs`, `faults.rs`): the CLI, a
//! corpus, a run killed with SIGKILL as soon as it has committed something, and a server of a
//! test's own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn seamcut(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seamcut")).args(args).output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A failed run's error, which is one line.
pub fn one_line(o: &Output) -> String {
    assert!(!o.status.success());
    let e = stderr(o);
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    e
}

/// The progress records a collection keeps beside its rows, as JSON texts under keys that
/// start with `prefix` (Chroma's metadata `seamcut_job_*`, Milvus's properties
/// `seamcut.job.*`): `{"totals": ..., "complete": ...}` each.
pub fn job_records_in(map: &serde_json::Value, prefix: &str) -> Vec<serde_json::Value> {
    let Some(map) = map.as_object() else { return Vec::new() };
    map.iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .filter_map(|(_, p)| serde_json::from_str(p.as_str()?).ok())
        .collect()
}

/// A JSONL corpus of `n` documents (`doc-000`, ...) of a few paragraphs each, with a `lang`
/// field.
pub fn corpus(dir: &Path, n: usize) -> PathBuf {
    let sentences: Vec<&str> = include_str!("../../benches/data-sentences.txt").lines().collect();
    let path = dir.join("corpus.jsonl");
    let mut out = String::new();
    let mut k = 0;
    for d in 0..n {
        let mut text = String::new();
        for p in 0..2 + d % 4 {
            for _ in 0..2 + (d + p) % 3 {
                text.push_str(sentences[k % sentences.len()]);
                text.push(' ');
                k += 1;
            }
            text.push_str("\n\n");
        }
        out.push_str(
            &serde_json::json!({"id": format!("doc-{d:03}"), "text": text, "lang": "en"}).to_string(),
        );
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
    path
}

/// Run `seamcut ARGS` and SIGKILL it as soon as `progress` (what the database holds of the
/// job) moves; whether it was stopped before it finished.
pub fn killed_after_progress(args: &[&str], progress: impl Fn() -> u64) -> bool {
    let before = progress();
    let mut child = Command::new(env!("CARGO_BIN_EXE_seamcut"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if progress() > before {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    !child.wait().unwrap().success()
}

/// Run `seamcut ARGS` `rounds` times, each killed as [`killed_after_progress`] kills it, every
/// round after the first with `--resume`; how many were stopped before they finished.
#[cfg(feature = "lancedb")]
pub fn killed_rounds(args: &[&str], rounds: usize, progress: impl Fn() -> u64) -> usize {
    (0..rounds)
        .filter(|&round| {
            let mut a = args.to_vec();
            if round > 0 {
                a.push("--resume");
            }
            killed_after_progress(&a, &progress)
        })
        .count()
}

/// A database server of a test's own (`tests/db/postgres.sh` or `chroma.sh` with a state
/// folder of its own), which the test may kill and restart; stopped and removed when dropped.
pub struct OwnServer {
    script: &'static str,
    state_var: &'static str,
    /// More of the script's settings.
    env: &'static [(&'static str, &'static str)],
    state: String,
    pub url: String,
}

impl OwnServer {
    /// A PostgreSQL with durable commits: killed, it keeps every transaction it acknowledged.
    pub fn postgres(name: &str) -> Self {
        Self::start("postgres", "SEAMCUT_PG_STATE", &[("SEAMCUT_PG_SYNC_COMMIT", "on")], name)
    }

    pub fn chroma(name: &str) -> Self {
        Self::start("chroma", "SEAMCUT_CHROMA_STATE", &[], name)
    }

    pub fn milvus(name: &str) -> Self {
        Self::start("milvus", "SEAMCUT_MILVUS_STATE", &[], name)
    }

    fn start(
        script: &'static str,
        state_var: &'static str,
        env: &'static [(&'static str, &'static str)],
        name: &str,
    ) -> Self {
        let state = format!("/tmp/seamcut-{script}-{name}-{}", std::process::id());
        let mut s = Self { script, state_var, env, state, url: String::new() };
        s.url = String::from_utf8(s.run("start").stdout).unwrap().trim().to_string();
        s
    }

    /// `tests/db/SCRIPT.sh CMD` on this server (`kill`, `restart`, `stop`).
    pub fn run(&self, cmd: &str) -> Output {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/db/{}.sh", self.script));
        let o = Command::new(script)
            .arg(cmd)
            .env(self.state_var, &self.state)
            .envs(self.env.iter().copied())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}.sh {cmd}: {}", self.script, stderr(&o));
        o
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.run("stop");
        let _ = std::fs::remove_dir_all(&self.state);
    }
}
