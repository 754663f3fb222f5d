//! `seamcut distill`: make a static (model2vec-format) model from a BERT-family teacher,
//! the way model2vec 0.10 `distill` does:
//! 1. every vocabulary token `t` is embedded as `[CLS] t [SEP]` through the teacher, and the
//!    three output vectors are mean-pooled (no normalisation);
//! 2. PCA to `dims` components (eigendecomposition of the covariance, components ordered
//!    by variance, each component's sign chosen so its largest-magnitude score is positive);
//! 3. each row is scaled by its SIF weight `sif / (sif + p(rank))`, with `p` Zipf's law over
//!    the token's rank (its id): `p(r) ∝ 1 / (r + 2)`.
//!
//! One difference, on purpose: model2vec rebuilds the tokenizer without `[unusedN]` tokens;
//! seamcut keeps the teacher's tokenizer unchanged (those tokens never occur in text) and
//! leaves them out of the PCA fit only, so the model loads with the teacher's exact
//! `tokenizer.json`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::device::Compute;
use crate::embed::bert::{BertEmbedder, Pooling};
use crate::embed::FlatBatch;
use crate::{Error, Result};

/// Options for distillation.
#[derive(Debug, Clone, Copy)]
pub struct DistillOptions {
    pub dims: usize,
    /// SIF coefficient; `None` for no weighting.
    pub sif: Option<f64>,
    /// Store the matrix as float16 (half the size) instead of float32.
    pub f16: bool,
    /// Padded tokens per teacher batch.
    pub batch_tokens: usize,
    /// A progress bar on stderr (vocabulary tokens through the teacher, then the PCA).
    pub progress: bool,
}

impl Default for DistillOptions {
    fn default() -> Self {
        Self { dims: 256, sif: Some(1e-4), f16: true, batch_tokens: 16_384, progress: false }
    }
}

/// Token vectors of the teacher: `vocab × hidden`, f64, plus which rows fit the PCA.
fn token_vectors(
    teacher: &BertEmbedder,
    batch_tokens: usize,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<(Vec<f64>, usize, usize, Vec<bool>)> {
    use crate::embed::Embedder;
    let vocab = crate::tokenizer_json::vocab_size_with_added(teacher.tokenizer().hf());
    let hidden = teacher.dim();
    let (pre, post) = teacher.specials();
    let (pre, post) = (pre.to_vec(), post.to_vec());
    let per_batch = (batch_tokens / (1 + pre.len() + post.len())).max(1);
    let mut out = vec![0f64; vocab * hidden];
    if let Some(b) = bar {
        b.set_length(vocab as u64);
    }
    let mut id = 0u32;
    while (id as usize) < vocab {
        let end = (id as usize + per_batch).min(vocab) as u32;
        let mut fb = FlatBatch::default();
        for t in id..end {
            let mut s = pre.clone();
            s.push(t);
            s.extend_from_slice(&post);
            fb.push(&s);
        }
        let v = teacher.forward_pooled(&fb, Pooling::Mean, false)?;
        for (k, x) in v.iter().enumerate() {
            out[id as usize * hidden + k] = f64::from(*x);
        }
        id = end;
        if let Some(b) = bar {
            b.set_position(u64::from(id));
        }
    }
    let fit: Vec<bool> = (0..vocab as u32)
        .map(|t| {
            teacher
                .tokenizer()
                .hf()
                .id_to_token(t)
                .is_none_or(|s| !(s.starts_with("[unused") && s.ends_with(']')))
        })
        .collect();
    Ok((out, vocab, hidden, fit))
}

/// PCA of the rows of `x` (`n × d`) fitted on rows where `fit` holds; returns `n × k` scores.
fn pca(x: &[f64], n: usize, d: usize, k: usize, fit: &[bool]) -> Vec<f64> {
    let m = fit.iter().filter(|f| **f).count().max(2);
    let mut mean = vec![0f64; d];
    for i in (0..n).filter(|&i| fit[i]) {
        for j in 0..d {
            mean[j] += x[i * d + j];
        }
    }
    mean.iter_mut().for_each(|v| *v /= m as f64);
    let mut cov = nalgebra::DMatrix::<f64>::zeros(d, d);
    let mut row = vec![0f64; d];
    for i in (0..n).filter(|&i| fit[i]) {
        for j in 0..d {
            row[j] = x[i * d + j] - mean[j];
        }
        for a in 0..d {
            let ra = row[a];
            for b in a..d {
                cov[(a, b)] += ra * row[b];
            }
        }
    }
    for a in 0..d {
        for b in a..d {
            let v = cov[(a, b)] / (m - 1) as f64;
            cov[(a, b)] = v;
            cov[(b, a)] = v;
        }
    }
    let eig = nalgebra::SymmetricEigen::new(cov);
    let mut order: Vec<usize> = (0..d).collect();
    order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
    let k = k.min(d);
    let mut scores = vec![0f64; n * k];
    for i in 0..n {
        for (c, &e) in order.iter().take(k).enumerate() {
            let mut s = 0.0;
            for j in 0..d {
                s += (x[i * d + j] - mean[j]) * eig.eigenvectors[(j, e)];
            }
            scores[i * k + c] = s;
        }
    }
    // Deterministic signs: the largest-magnitude score of each component is positive.
    for c in 0..k {
        let (mut best, mut val) = (0f64, 0f64);
        for i in 0..n {
            let s = scores[i * k + c];
            if s.abs() > best {
                best = s.abs();
                val = s;
            }
        }
        if val < 0.0 {
            for i in 0..n {
                scores[i * k + c] = -scores[i * k + c];
            }
        }
    }
    scores
}

/// Distill `teacher` into a model2vec directory at `out`.
///
/// # Errors
/// If the teacher fails or the output cannot be written.
pub fn distill(teacher_dir: &Path, out: &Path, opts: DistillOptions) -> Result<()> {
    let teacher = BertEmbedder::load(teacher_dir, &Compute::cpu())?;
    let bar = opts.progress.then(|| {
        let bar = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} tokens {per_sec} eta {eta}  {msg}")
        {
            bar.set_style(style);
        }
        bar.set_message("through the teacher");
        bar
    });
    let (x, n, d, fit) = token_vectors(&teacher, opts.batch_tokens, bar.as_ref())?;
    if let Some(b) = &bar {
        b.set_message("PCA");
    }
    let k = opts.dims.min(d);
    let mut emb = pca(&x, n, d, k, &fit);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(sif) = opts.sif {
        let z: f64 = (0..n).map(|r| 1.0 / (r as f64 + 2.0)).sum();
        for r in 0..n {
            let p = (1.0 / (r as f64 + 2.0)) / z;
            let w = sif / (sif + p);
            emb[r * k..(r + 1) * k].iter_mut().for_each(|v| *v *= w);
        }
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let (dtype, bytes): (safetensors::Dtype, Vec<u8>) = if opts.f16 {
        (safetensors::Dtype::F16, emb.iter().flat_map(|v| half::f16::from_f64(*v).to_le_bytes()).collect())
    } else {
        (safetensors::Dtype::F32, emb.iter().flat_map(|v| (*v as f32).to_le_bytes()).collect())
    };
    let view = safetensors::tensor::TensorView::new(dtype, vec![n, k], &bytes)
        .map_err(|e| Error::Internal(format!("safetensors view: {e}")))?;
    let mut tensors = BTreeMap::new();
    tensors.insert("embeddings".to_string(), view);
    safetensors::serialize_to_file(tensors, None, &out.join("model.safetensors"))
        .map_err(|e| Error::Internal(format!("writing model.safetensors: {e}")))?;
    let mut tok = teacher_tokenizer(teacher_dir)?;
    let _ = tok.with_truncation(None);
    tok.with_padding(None);
    tok.save(out.join("tokenizer.json"), false)
        .map_err(|e| Error::Internal(format!("writing tokenizer.json: {e}")))?;
    let config = serde_json::json!({
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": teacher_dir.display().to_string(),
        "apply_pca": k,
        "sif_coefficient": opts.sif,
        "hidden_dim": k,
        "seq_length": 1_000_000,
        "normalize": true,
        "max_length": null,
        "embedding_dtype": if opts.f16 { "float16" } else { "float32" },
        "distilled_by": format!("seamcut {}", env!("CARGO_PKG_VERSION")),
    });
    std::fs::write(out.join("config.json"), serde_json::to_string_pretty(&config).unwrap_or_default())
        .map_err(|e| Error::io(out, e))?;
    Ok(())
}

fn teacher_tokenizer(dir: &Path) -> Result<tokenizers::Tokenizer> {
    crate::tokenizer_json::from_file(&dir.join("tokenizer.json")).map_err(|e| Error::model(dir.display(), e))
}
