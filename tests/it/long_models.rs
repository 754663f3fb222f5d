//! Parity of the long-context architectures with transformers and sentence-transformers, on the
//! random-weight fixtures of `tests/fixtures/gen_long_models.py` (`tests/fixtures/models/ARCH`):
//! the ids of each text (special tokens, truncation), every token's last hidden state, and the
//! pooled vectors of one batch that mixes short texts with long ones.
//!
//! The fixtures' weights are random: these tests check the arithmetic, not any model's quality.

use std::path::PathBuf;

use seamcut::device::Compute;
use seamcut::embed::{embed_texts, EmbedOptions, FlatBatch};
use seamcut::models::load_dir;

fn dir(arch: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models").join(arch)
}

struct Expected {
    texts: Vec<String>,
    ids: Vec<Vec<u32>>,
}

fn expected(arch: &str) -> Expected {
    let text = std::fs::read_to_string(dir(arch).join("expected.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["random_weights"], true);
    let texts = v["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
    let ids = v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as u32).collect())
        .collect();
    Expected { texts, ids }
}

fn cos(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// The worst cosine between the rows of two `rows × cols` matrices, and its row.
fn worst(a: &[f32], b: &[f32], cols: usize) -> (f64, usize) {
    assert_eq!(a.len(), b.len());
    a.chunks(cols)
        .zip(b.chunks(cols))
        .map(|(x, y)| cos(x, y))
        .enumerate()
        .fold((1.0f64, 0usize), |w, (i, c)| if c < w.0 { (c, i) } else { w })
}

/// Ids, token states and pooled vectors of `arch`'s fixture against the references; returns the
/// worst cosines (token states, pooled vectors).
fn check(arch: &str) -> (f64, f64) {
    let model = load_dir(&dir(arch), &Compute::cpu()).unwrap();
    let e = expected(arch);
    assert!(e.ids.iter().any(|s| s.len() > 128), "{arch}: no text past a 128-token block");

    // Ids: the tokenizer's content ids, truncated on the right to the window, inside the special
    // tokens, as sentence-transformers tokenizes.
    let (pre, post) = model.special_ids();
    let window = model.max_tokens().unwrap() - pre.len() - post.len();
    for (t, want) in e.texts.iter().zip(&e.ids) {
        let mut ids = model.content_ids(t);
        ids.truncate(window);
        let got: Vec<u32> = pre.iter().chain(&ids).chain(post).copied().collect();
        assert_eq!(&got, want, "{arch}: ids of {t:?}");
    }

    // Token states of every text in one flat batch (mixed lengths), against each text run alone.
    let mut batch = FlatBatch::default();
    for s in &e.ids {
        batch.push(s);
    }
    let states = model.token_states(&batch).unwrap();
    let (n, h) = states.dims2().unwrap();
    assert_eq!((n, h), (batch.ids.len(), model.dim()));
    let got = states.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    let (want, rows, cols) = seamcut::npy::read_f32(&dir(arch).join("tokens.npy")).unwrap();
    assert_eq!((rows, cols), (n, h));
    let (tok_cos, at) = worst(&got, &want, h);
    assert!(tok_cos >= 0.9999, "{arch}: token {at}: cosine {tok_cos}");

    // Pooled vectors through the embedding driver, against sentence-transformers' one padded batch.
    let refs: Vec<&str> = e.texts.iter().map(String::as_str).collect();
    let (emb, _) = embed_texts(model.as_ref(), &refs, EmbedOptions::default()).unwrap();
    let (want, rows, cols) = seamcut::npy::read_f32(&dir(arch).join("pooled.npy")).unwrap();
    assert_eq!((rows, cols), (e.texts.len(), model.dim()));
    let (pool_cos, at) = worst(&emb.data, &want, cols);
    assert!(pool_cos >= 0.9999, "{arch}: text {at} {:?}: cosine {pool_cos}", e.texts[at]);
    eprintln!(
        "{arch}: worst cosine 1 - {:.1e} over {n} token states, 1 - {:.1e} over {rows} pooled vectors",
        1.0 - tok_cos,
        1.0 - pool_cos
    );
    (tok_cos, pool_cos)
}

#[test]
fn modernbert_matches_transformers() {
    check("modernbert");
}

/// A causal decoder with grouped-query heads (and a head size that is not hidden / heads), its
/// vector the last token (the EOS its tokenizer appends), against sentence-transformers'
/// left-padded batch.
#[test]
fn qwen3_matches_transformers() {
    check("qwen3");
}
