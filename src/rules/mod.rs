//! Boundary rules: pure functions from similarities (a [`crate::band::Band`] or a series)
//! and token counts to chunk starts (sentence indices, the first always 0).
//!
//! No rule imports a model, candle or a device: each is testable on numbers written by
//! hand, and each is checked against its reference implementation on fixtures
//! (`tests/it/rules_parity.rs`).
//!
//! - [`maxmin`]: Max–Min (Kiss, Nagy, Szilágyi 2025; the authors' `maxmin_chunker.py`).
//! - [`minima`]: chonkie 1.7.0 `SemanticChunker` (Savitzky–Golay minima, [`savgol`]).
//! - [`sizing`]: the token cap and minimum every rule's result passes through.
//! - [`global`]: every cut at once, by dynamic programming (seamcut's own; optimal for its
//!   objective, checked against brute force).
//! - [`breakpoint`]: langchain-experimental 0.4.2 `SemanticChunker` (percentile, standard
//!   deviation, interquartile, gradient).

pub mod breakpoint;
pub mod global;
pub mod maxmin;
pub mod minima;
pub mod savgol;
pub mod sizing;
pub mod stats;
