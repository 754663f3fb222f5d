//! A job's running counts: documents, chunks, bytes and tokens done, documents skipped by kind,
//! and input items consumed. The pipeline keeps them; a committed output (the manifest of
//! [`crate::pipeline::commit`], a database's progress row or record) stores them with each
//! batch, so that a resumed job reports the whole run. They stand below both, so that a
//! writer records a job's counts without knowing the job that made them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Running totals of a job, kept in the manifest so a resumed job reports the whole run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Documents chunked (fallbacks included, skipped ones not).
    pub documents: u64,
    pub chunks: u64,
    /// Bytes of text in the documents chunked.
    pub bytes: u64,
    pub tokens: u64,
    /// Documents skipped, by kind of problem.
    pub skipped: BTreeMap<String, u64>,
    /// Documents chunked by the sentence-packing fallback after a model failure.
    pub fallbacks: u64,
    /// Input items (documents and bad records) consumed, in the job's (shard's) order.
    pub items: u64,
}

impl Totals {
    #[must_use]
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }
}
