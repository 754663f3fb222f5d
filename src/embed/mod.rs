//! Embedding: texts in, one L2-normalised vector per text out.
//!
//! An [`Embedder`] (one file per model family: [`bert`] for sentence-transformers encoders,
//! BERT, RoBERTa/XLM-RoBERTa and MPNet, run by [`encoder`] on candle, with [`fused`] f32
//! CPU ops, and ModernBERT, NomicBERT/GTE and Qwen3, run by [`modernbert`], [`rope_bert`] and
//! [`qwen3`] with [`attention`]'s tiled attention;
//! [`static_model`] for model2vec static models) embeds a [`FlatBatch`]: the token ids of many
//! sequences concatenated, with cumulative lengths marking where each starts,
//! as text-embeddings-inference does. Models know nothing about documents.
//!
//! [`embed_texts`] is the driver: it tokenizes, applies the long-input rule
//! ([`LongInput`]), forms token-budget batches with length bucketing ([`batch`]), embeds,
//! and returns vectors in input order, so a sentence's vector does not depend on which
//! other sentences share its batch.
//!
//! [`late`] is the other pass: whole documents through the encoder in overlapping windows,
//! each span (unit or chunk) pooled from its tokens' states ([`Embedder::token_states`]).

pub mod amx;
pub mod attention;
pub mod batch;
pub mod bert;
pub mod dense;
pub mod encoder;
pub mod fused;
pub mod gelu;
pub mod inspect;
/// The linear layers' products on the CPU (`crates/products`): f32 (`--dtype f32`, the
/// default), the AVX-512 bf16 ones of `--dtype bf16` and the int8 ones of `--dtype int8`.
pub use seamcut_products::{bf16, f32, int8};
pub mod late;
pub mod layers;
pub mod modernbert;
pub mod packed;
pub mod qwen3;
pub mod rope_bert;
pub mod rotary;
pub mod st_config;
pub mod static_model;
pub mod tuned;
pub mod weights;

use rayon::prelude::*;

use crate::wordpiece::TextTokenizer;
use crate::Result;

/// Sequences as one flat id array: sequence `i` is `ids[cu_seqlens[i]..cu_seqlens[i+1]]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlatBatch {
    pub ids: Vec<u32>,
    pub cu_seqlens: Vec<usize>,
}

impl FlatBatch {
    #[must_use]
    pub fn len(&self) -> usize {
        self.cu_seqlens.len().saturating_sub(1)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[must_use]
    pub fn seq(&self, i: usize) -> &[u32] {
        &self.ids[self.cu_seqlens[i]..self.cu_seqlens[i + 1]]
    }

    /// Longest sequence.
    #[must_use]
    pub fn max_len(&self) -> usize {
        self.cu_seqlens.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0)
    }

    pub fn push(&mut self, seq: &[u32]) {
        if self.cu_seqlens.is_empty() {
            self.cu_seqlens.push(0);
        }
        self.ids.extend_from_slice(seq);
        self.cu_seqlens.push(self.ids.len());
    }
}

/// A model that turns token sequences into vectors.
pub trait Embedder: Send + Sync {
    /// Vector dimension.
    fn dim(&self) -> usize;

    /// Longest sequence the model accepts, special tokens included; `None` for no limit.
    fn max_tokens(&self) -> Option<usize>;

    /// The model's tokenizer (truncation and padding off).
    fn tokenizer(&self) -> &TextTokenizer;

    /// Ids that wrap every sequence (`[CLS]` … `[SEP]`); empty for static models.
    fn special_ids(&self) -> (&[u32], &[u32]);

    /// Content token ids of `text` (no special tokens): the tokenizer's ids through
    /// [`Self::content_ids_from`].
    fn content_ids(&self, text: &str) -> Vec<u32> {
        self.content_ids_from(self.tokenizer().ids(text))
    }

    /// Content ids from the tokenizer's ids of a text, for callers that tokenized it already
    /// ([`prepare_known`]). The default keeps them; static models drop unknown tokens, as
    /// model2vec does. Must agree with [`Self::content_ids`]: an embedder that overrides or
    /// forwards one (a wrapper) overrides or forwards both.
    fn content_ids_from(&self, ids: Vec<u32>) -> Vec<u32> {
        ids
    }

    /// Content token ids of `text` with the byte offset where each starts (one per id, non-
    /// decreasing: [`TextTokenizer::ids_and_starts`]), for pooling tokens by the span that holds
    /// them ([`late`]). Must keep the ids [`Self::content_ids`] keeps: an embedder that drops
    /// tokens there drops them, with their starts, here.
    fn content_ids_with_starts(&self, text: &str) -> (Vec<u32>, Vec<usize>) {
        self.tokenizer().ids_and_starts(text)
    }

    /// The final hidden state of every token of the batch (special tokens already added, as
    /// for [`Self::embed`]): a `[batch.ids.len(), dim]` tensor in batch order, on the model's
    /// device and in its dtype, so a caller can pool it there ([`late`]). A static model gives
    /// each token's (weighted) row, so that the mean of a text's token states is its ordinary
    /// vector before normalisation.
    ///
    /// # Errors
    /// The default: a one-line [`crate::Error::Config`] saying that this model cannot give
    /// token states. Implementations: on a device or shape failure.
    fn token_states(&self, batch: &FlatBatch) -> Result<candle_core::Tensor> {
        let _ = batch;
        Err(crate::Error::Config(format!(
            "the model {} cannot give per-token states (needed for late pooling)",
            self.describe()
        )))
    }

    /// [`Self::token_states`] of the batch's rows in `rows` alone (ranges of flat-batch
    /// positions, each within the batch), stacked in the order given: `[Σ len, dim]`. The late
    /// pass pools only these rows, so a model may skip the work no other row needs: the BERT
    /// family runs its last layer's output projection and feed-forward on these rows alone
    /// (the keys and values still come from every token). Each row is the state
    /// [`Self::token_states`] gives it, bit for bit. The default takes every row's state and
    /// selects.
    ///
    /// # Errors
    /// As [`Self::token_states`], and on a range outside the batch.
    fn token_states_rows(
        &self,
        batch: &FlatBatch,
        rows: &[std::ops::Range<usize>],
    ) -> Result<candle_core::Tensor> {
        select_rows(&self.token_states(batch)?, rows, batch.ids.len())
    }

    /// Embed every sequence of the batch (special tokens already added). Returns
    /// `batch.len() * dim` floats, row-major, each row L2-normalised (a zero row for a
    /// sequence with nothing to embed).
    ///
    /// # Errors
    /// On a device or shape failure.
    fn embed(&self, batch: &FlatBatch) -> Result<Vec<f32>>;

    /// As [`Embedder::embed`], with the vectors left where the model computed them: a
    /// `[batch.len(), dim]` f32 tensor, on the GPU for a GPU model (so that the band can be
    /// computed there and only it comes back). The default wraps the host vectors in a CPU
    /// tensor.
    ///
    /// # Errors
    /// On a device or shape failure.
    fn embed_tensor(&self, batch: &FlatBatch) -> Result<candle_core::Tensor> {
        let v = self.embed(batch)?;
        Ok(candle_core::Tensor::from_vec(v, (batch.len(), self.dim()), &candle_core::Device::Cpu)?)
    }

    /// The prompt put in front of every text before it is tokenized ([`tuned::Tuned`]):
    /// [`Self::content_ids`] and [`Self::content_ids_with_starts`] tokenize it with the text, so
    /// the starts of the latter count from the prompt's first byte, and tokens that start
    /// inside it belong to no span. `None` for a plain model.
    fn prompt(&self) -> Option<&str> {
        None
    }

    /// The model's named prompts (`config_sentence_transformers.json`); none by default.
    fn prompts(&self) -> &tuned::Prompts {
        static NONE: std::sync::OnceLock<tuned::Prompts> = std::sync::OnceLock::new();
        NONE.get_or_init(tuned::Prompts::default)
    }

    /// This model's own late-pass defaults, `(window, stride)` in content tokens, where it
    /// knows better than [`late::LateOptions::for_model`]'s fallback (a static model, whose
    /// tokens do not see each other, needs no overlap). `None`: the fallback.
    fn late_window(&self) -> Option<(usize, usize)> {
        None
    }

    /// A short description for reports.
    fn describe(&self) -> String;
}

/// What to do with a text longer than the model's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum LongInput {
    /// Keep the first window (as sentence-transformers does); such texts are counted in the
    /// summary.
    #[default]
    Truncate,
    /// Embed every window and average the vectors, weighted by tokens, then normalise.
    Mean,
}

/// Batching options.
#[derive(Debug, Clone, Copy)]
pub struct EmbedOptions {
    /// Padded tokens per batch (sequences × longest sequence).
    pub batch_tokens: usize,
    pub long: LongInput,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        Self { batch_tokens: 16_384, long: LongInput::Truncate }
    }
}

/// Vectors for a list of texts, in input order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Embeddings {
    pub dim: usize,
    /// `n * dim` floats, row-major.
    pub data: Vec<f32>,
}

impl Embeddings {
    #[must_use]
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    #[must_use]
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }
}

/// What embedding saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbedStats {
    pub texts: usize,
    /// Real tokens embedded (special tokens included).
    pub tokens: usize,
    /// Tokens including padding, as the model computed them.
    pub padded_tokens: usize,
    pub batches: usize,
    /// Texts longer than the window.
    pub long_texts: usize,
}

impl EmbedStats {
    /// Padding overhead: padded tokens over real tokens, minus one.
    #[must_use]
    pub fn padding_overhead(&self) -> f64 {
        if self.tokens == 0 {
            0.0
        } else {
            self.padded_tokens as f64 / self.tokens as f64 - 1.0
        }
    }
}

/// Texts tokenized, windowed and planned into token-budget batches: the CPU half of
/// embedding, which a corpus job runs for batch k+1 while the device runs [`run`] on batch k.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prepared {
    /// Every window of every text, special tokens added.
    seqs: Vec<Vec<u32>>,
    /// The text each window belongs to.
    owner: Vec<usize>,
    /// Windows per text.
    windows: Vec<usize>,
    /// Batches of window indices, from [`batch::plan`].
    plan: Vec<Vec<usize>>,
    specials: usize,
    stats: EmbedStats,
}

impl Prepared {
    /// Texts prepared.
    #[must_use]
    pub fn len(&self) -> usize {
        self.windows.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// Real tokens (special tokens included) the device will see.
    #[must_use]
    pub fn tokens(&self) -> usize {
        self.seqs.iter().map(Vec::len).sum()
    }

    /// Real tokens (special tokens included) each text will be embedded with, in input order:
    /// what a service bills each request for.
    #[must_use]
    pub fn text_tokens(&self) -> Vec<usize> {
        let mut t = vec![0; self.windows.len()];
        for (s, &i) in self.seqs.iter().zip(&self.owner) {
            t[i] += s.len();
        }
        t
    }
}

/// Tokenize `texts` for `model`, apply the long-input rule and plan the batches.
#[must_use]
pub fn prepare(model: &dyn Embedder, texts: &[&str], opts: EmbedOptions) -> Prepared {
    prepare_known(model, texts, Vec::new(), opts)
}

/// [`prepare`] with the model tokenizer's ids already known for some texts (`known[i]`, from
/// a sizer sharing the model's tokenizer: [`crate::sizer::Sizer::ids`]); the others, and all
/// of them when `known` is empty, are tokenized here. The result is the same as
/// [`prepare`]'s; each text is just not tokenized twice.
#[must_use]
pub fn prepare_known(
    model: &dyn Embedder,
    texts: &[&str],
    mut known: Vec<Option<Vec<u32>>>,
    opts: EmbedOptions,
) -> Prepared {
    let (pre, post) = model.special_ids();
    let window = model.max_tokens().map(|m| m.saturating_sub(pre.len() + post.len()).max(1));
    known.resize(texts.len(), None);
    // Tokenize in parallel; each text becomes one or more windows.
    let per_text: Vec<(Vec<Vec<u32>>, bool)> = texts
        .par_iter()
        .zip(known)
        .with_min_len(16)
        .map(|(t, k)| {
            // Known ids are of the text alone: a prompted text is tokenized again, whole.
            let ids = match k {
                Some(ids) if model.prompt().is_none() => model.content_ids_from(ids),
                _ => model.content_ids(t),
            };
            let pieces: Vec<&[u32]> = match window {
                Some(w) if ids.len() > w => match opts.long {
                    LongInput::Truncate => vec![&ids[..w]],
                    LongInput::Mean => ids.chunks(w).collect(),
                },
                _ => vec![&ids[..]],
            };
            let long = window.is_some_and(|w| ids.len() > w);
            let seqs = pieces
                .into_iter()
                .map(|p| {
                    let mut s = Vec::with_capacity(p.len() + pre.len() + post.len());
                    s.extend_from_slice(pre);
                    s.extend_from_slice(p);
                    s.extend_from_slice(post);
                    s
                })
                .collect();
            (seqs, long)
        })
        .collect();
    let mut p = Prepared {
        specials: pre.len() + post.len(),
        stats: EmbedStats { texts: texts.len(), ..EmbedStats::default() },
        ..Prepared::default()
    };
    for (i, (windows, long)) in per_text.into_iter().enumerate() {
        p.stats.long_texts += usize::from(long);
        p.windows.push(windows.len());
        for w in windows {
            p.seqs.push(w);
            p.owner.push(i);
        }
    }
    let lengths: Vec<usize> = p.seqs.iter().map(Vec::len).collect();
    p.plan = batch::plan(&lengths, opts.batch_tokens);
    p
}

/// Embed prepared texts: vectors in input order, L2-normalised (a text of several windows
/// gets the token-weighted mean of its windows, normalised).
///
/// # Errors
/// On a model failure.
pub fn run(model: &dyn Embedder, p: &Prepared) -> Result<(Embeddings, EmbedStats)> {
    let dim = model.dim();
    let mut stats = p.stats.clone();
    let mut seq_vecs = vec![0f32; p.seqs.len() * dim];
    for group in &p.plan {
        let mut fb = FlatBatch::default();
        for &k in group {
            fb.push(&p.seqs[k]);
        }
        stats.batches += 1;
        stats.tokens += fb.ids.len();
        stats.padded_tokens += fb.max_len() * fb.len();
        let out = model.embed(&fb)?;
        for (j, &k) in group.iter().enumerate() {
            seq_vecs[k * dim..(k + 1) * dim].copy_from_slice(&out[j * dim..(j + 1) * dim]);
        }
    }
    // Gather windows back to their texts.
    let n = p.windows.len();
    let mut data = vec![0f32; n * dim];
    for (k, &i) in p.owner.iter().enumerate() {
        let row = &mut data[i * dim..(i + 1) * dim];
        if p.windows[i] == 1 {
            row.copy_from_slice(&seq_vecs[k * dim..(k + 1) * dim]);
        } else {
            let weight = (p.seqs[k].len() - p.specials).max(1) as f32;
            for (r, v) in row.iter_mut().zip(&seq_vecs[k * dim..(k + 1) * dim]) {
                *r += weight * v;
            }
        }
    }
    for (i, &w) in p.windows.iter().enumerate() {
        if w > 1 {
            normalize(&mut data[i * dim..(i + 1) * dim]);
        }
    }
    Ok((Embeddings { dim, data }, stats))
}

/// As [`run`], with the vectors left on the model's device: a `[texts, dim]` f32 tensor in
/// input order. `None` when a text spans several windows (their weighted mean is formed on the
/// host by [`run`]); the caller then uses [`run`].
///
/// # Errors
/// On a model failure.
pub fn run_tensor(model: &dyn Embedder, p: &Prepared) -> Result<Option<(candle_core::Tensor, EmbedStats)>> {
    if p.windows.iter().any(|&w| w != 1) || p.seqs.is_empty() {
        return Ok(None);
    }
    let mut stats = p.stats.clone();
    let mut parts = Vec::with_capacity(p.plan.len());
    // Row of the concatenated batches where each text's vector lands.
    let mut row_of = vec![0u32; p.seqs.len()];
    let mut at = 0u32;
    for group in &p.plan {
        let mut fb = FlatBatch::default();
        for &k in group {
            fb.push(&p.seqs[k]);
            row_of[k] = at;
            at += 1;
        }
        stats.batches += 1;
        stats.tokens += fb.ids.len();
        stats.padded_tokens += fb.max_len() * fb.len();
        parts.push(model.embed_tensor(&fb)?);
    }
    let all = candle_core::Tensor::cat(&parts, 0)?;
    let order = candle_core::Tensor::from_vec(row_of, p.seqs.len(), all.device())?;
    Ok(Some((all.index_select(&order, 0)?, stats)))
}

/// Embed `texts` with `model`; vectors come back in input order, L2-normalised.
/// [`prepare`] then [`run`].
///
/// # Errors
/// On a model failure.
pub fn embed_texts(
    model: &dyn Embedder,
    texts: &[&str],
    opts: EmbedOptions,
) -> Result<(Embeddings, EmbedStats)> {
    run(model, &prepare(model, texts, opts))
}

/// L2-normalise a vector in place (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        for x in v {
            *x /= n;
        }
    }
}

/// The re-normalised mean of each range of rows of `vectors` (`dim` floats a row): one row
/// per range, e.g. a chunk's vector from its units' vectors.
#[must_use]
pub fn mean_rows(vectors: &[f32], dim: usize, ranges: &[std::ops::Range<usize>]) -> Vec<f32> {
    let mut out = vec![0f32; ranges.len() * dim];
    for (row, r) in out.chunks_exact_mut(dim).zip(ranges) {
        for u in r.clone() {
            for (o, v) in row.iter_mut().zip(&vectors[u * dim..(u + 1) * dim]) {
                *o += v;
            }
        }
        normalize(row);
    }
    out
}

/// The JSON header of a safetensors file and the length of its data section, read without
/// loading the tensors; a truncated or corrupt file is one clear error naming `path`.
///
/// # Errors
/// If the file cannot be read, its header is not valid, or its data is shorter than the
/// header says.
pub fn safetensors_header(path: &std::path::Path) -> Result<serde_json::Map<String, serde_json::Value>> {
    use std::io::Read;
    let name =
        path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let dir = path.parent().map_or_else(|| path.display().to_string(), |d| d.display().to_string());
    let bad = |m: String| crate::Error::model(&dir, format!("{name} {m}"));
    let mut f = std::fs::File::open(path).map_err(|e| bad(format!("cannot be opened: {e}")))?;
    let len = f.metadata().map_err(|e| bad(e.to_string()))?.len();
    let mut n = [0u8; 8];
    f.read_exact(&mut n).map_err(|_| bad("is truncated (no header)".into()))?;
    let hlen = u64::from_le_bytes(n);
    if hlen == 0 || hlen > 100 << 20 || 8 + hlen > len {
        return Err(bad("is corrupt (bad header length)".into()));
    }
    let mut header = vec![0u8; hlen as usize];
    f.read_exact(&mut header).map_err(|_| bad("is truncated".into()))?;
    let meta: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| bad(format!("is corrupt (header: {e})")))?;
    let data_len = len - 8 - hlen;
    let max_end = meta.values().filter_map(|v| v.get("data_offsets")?.get(1)?.as_u64()).max().unwrap_or(0);
    if max_end > data_len {
        return Err(bad(format!("is truncated: tensors need {max_end} bytes, file has {data_len}")));
    }
    Ok(meta)
}

/// Names of the tensors in a safetensors file, read from its header only.
///
/// # Errors
/// As [`safetensors_header`].
pub fn tensor_names(path: &std::path::Path) -> Result<Vec<String>> {
    Ok(safetensors_header(path)?.keys().filter(|k| *k != "__metadata__").cloned().collect())
}

/// The rows `rows` of `t` (`[n, …]`, ranges within `0..n`) stacked in order, on `t`'s device:
/// [`Embedder::token_states_rows`]'s selection.
///
/// # Errors
/// A range outside `0..n` (one line), or a device failure.
pub fn select_rows(
    t: &candle_core::Tensor,
    rows: &[std::ops::Range<usize>],
    n: usize,
) -> Result<candle_core::Tensor> {
    if let Some(r) = rows.iter().find(|r| r.start > r.end || r.end > n) {
        return Err(crate::Error::Internal(format!("token rows {r:?} outside a batch of {n}")));
    }
    let idx: Vec<u32> = rows.iter().flat_map(|r| r.start as u32..r.end as u32).collect();
    let len = idx.len();
    let idx = candle_core::Tensor::from_vec(idx, len, t.device())?;
    Ok(t.index_select(&idx, 0)?)
}
