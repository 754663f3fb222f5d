//! Measuring chunk quality. [`segmentation`]: Pk, WindowDiff, boundary precision/recall/F1
//! with a tolerance, adjusted mutual information; checked against nltk and scikit-learn in
//! `tests/metrics_parity.rs`.

pub mod segmentation;
