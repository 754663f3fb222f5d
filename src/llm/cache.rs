//! The answer cache: one JSON line per answered request, keyed by a SHA-256 of the model's
//! identity and the request, so a rerun (or a job resumed after a crash) replays its answers
//! instead of paying for them again.
//!
//! Lines are appended whole and flushed at once; a line torn by a crash, or written by
//! another version, is ignored on load. Several processes may share one file: each appends
//! single `write` calls under `O_APPEND`.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ChatRequest, Reply};
use crate::{Error, Result};

#[derive(Serialize, Deserialize)]
struct Line {
    key: String,
    #[serde(flatten)]
    reply: Reply,
}

/// The cache key of a request: model, messages, temperature, token limit and the attempt.
#[must_use]
pub fn key(model: &str, req: &ChatRequest, attempt: u32) -> String {
    let v = serde_json::json!({
        "model": model,
        "messages": req.messages,
        "temperature": req.temperature,
        "max_tokens": req.max_tokens,
        "attempt": attempt,
    });
    let digest = Sha256::digest(v.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Answers by key, backed by an append-only JSONL file.
pub struct AnswerCache {
    path: PathBuf,
    map: Mutex<HashMap<String, Reply>>,
    file: Mutex<File>,
}

impl AnswerCache {
    /// Open (creating it and its folder if needed) and load the cache at `path`.
    ///
    /// # Errors
    /// If the file or its folder cannot be created or read.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let mut map = HashMap::new();
        let mut torn = false;
        for line in BufReader::new(&file).split(b'\n') {
            let line = line.map_err(|e| Error::io(path, e))?;
            match serde_json::from_slice::<Line>(&line) {
                Ok(l) => {
                    map.insert(l.key, l.reply);
                    torn = false;
                }
                Err(_) => torn = !line.is_empty(),
            }
        }
        // A line torn by a crash must not swallow the next answer appended: end it.
        if torn {
            (&file).write_all(b"\n").map_err(|e| Error::io(path, e))?;
        }
        Ok(Self { path: path.to_path_buf(), map: Mutex::new(map), file: Mutex::new(file) })
    }

    /// The answer stored under `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<Reply> {
        self.map.lock().ok()?.get(key).cloned()
    }

    /// Store an answer (in memory and appended to the file).
    ///
    /// # Errors
    /// If the file cannot be written.
    pub fn put(&self, key: String, reply: &Reply) -> Result<()> {
        let mut line = serde_json::to_string(&Line { key: key.clone(), reply: reply.clone() })
            .map_err(|e| Error::Internal(e.to_string()))?;
        line.push('\n');
        if let Ok(mut f) = self.file.lock() {
            f.write_all(line.as_bytes()).and_then(|()| f.flush()).map_err(|e| Error::io(&self.path, e))?;
        }
        if let Ok(mut m) = self.map.lock() {
            m.insert(key, reply.clone());
        }
        Ok(())
    }

    /// Answers held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.map.lock().map_or(0, |m| m.len())
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;

    fn req(text: &str) -> ChatRequest {
        ChatRequest {
            messages: vec![Message::new("user", text)],
            temperature: 0.1,
            max_tokens: None,
            seed: 0,
        }
    }

    #[test]
    fn answers_survive_a_reopen_and_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/answers.jsonl");
        let c = AnswerCache::open(&path).unwrap();
        let k = key("m", &req("a"), 0);
        assert_ne!(k, key("m", &req("a"), 1));
        assert_ne!(k, key("other", &req("a"), 0));
        let r = Reply { text: "Answer: ID 3".into(), prompt_tokens: 10, completion_tokens: 4 };
        c.put(k.clone(), &r).unwrap();
        drop(c);
        // A crash mid-line: the torn line is ignored, the whole ones load.
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"key\": \"x").unwrap();
        let c = AnswerCache::open(&path).unwrap();
        assert_eq!(c.get(&k), Some(r.clone()));
        assert_eq!(c.len(), 1);
        let k2 = key("m", &req("b"), 0);
        c.put(k2.clone(), &r).unwrap();
        drop(c);
        assert_eq!(AnswerCache::open(&path).unwrap().len(), 2);
    }
}
