//! Measuring chunk quality. [`segmentation`]: Pk, WindowDiff, boundary precision/recall/F1
//! with a tolerance, adjusted mutual information; checked against nltk and scikit-learn in
//! `tests/metrics_parity.rs`. [`retrieval`]: DCG@k and Recall@k by the GutenQA protocol.

pub mod retrieval;
pub mod segmentation;
