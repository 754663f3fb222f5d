//! seamcut: cut text at its semantic seams.
//!
//! The library is organised as a pipeline of stages, each a module with one job (see
//! `ARCHITECTURE.md`): [`segment`] finds paragraphs and sentences as byte [`span::Span`]s,
//! [`sizer`] counts tokens and cuts oversize units, [`chunkers`] turn units into
//! [`chunk::ChunkSpan`]s, [`corpus`] reads documents and [`output`] writes chunks.

pub mod band;
pub mod bench;
pub mod cap;
pub mod chunk;
pub mod chunkers;
pub mod corpus;
#[cfg(feature = "db")]
pub mod db;
pub mod device;
pub mod distill;
pub mod embed;
pub mod error;
pub mod eval;
pub mod kernels;
pub mod llm;
pub mod models;
pub mod npy;
pub mod output;
pub mod pipeline;
pub mod plot;
pub mod rules;
pub mod segment;
mod serde_text;
#[cfg(feature = "serve")]
pub mod serve;
pub mod similarity;
pub mod sizer;
pub mod span;
pub mod spec;
pub mod tokenizer_json;
pub mod totals;
pub mod wording;
pub mod wordpiece;

pub use error::{Error, Result};
