//! Measuring chunk quality. [`segmentation`]: Pk, WindowDiff, boundary precision/recall/F1
//! with a tolerance, adjusted mutual information; checked against nltk and scikit-learn in
//! `tests/it/metrics_parity.rs`. [`retrieval`]: DCG@k and Recall@k by the GutenQA protocol. [`topics`]: a Choi-style
//! topic-shift benchmark built from offline texts.

pub mod bm25;
pub mod compare;
pub mod retrieval;
pub mod segmentation;
pub mod topics;
