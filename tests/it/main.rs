//! The integration tests, as one test binary with a module per area: each test binary links
//! candle, tokenizers and arrow, so one binary instead of fourteen saves most of the link
//! time of a cold `cargo test` (benches/RESULTS.md, "CI time"). Run one area with
//! `cargo test --test it cli::`.

mod broad_questions;
mod chroma;
mod cli;
mod corpus_jobs;
mod db_jobs;
mod embed_parity;
mod faults;
mod kernels;
#[cfg(feature = "lancedb")]
mod lance;
mod late;
mod long_models;
mod long_words;
mod lumber;
mod metrics_parity;
mod milvus;
mod outputs;
mod pgvector;
mod properties;
mod questions;
mod rules_parity;
mod segmentation;
mod semantic;
mod topics;
mod wordpiece;
