//! Sentence-transformers model directories: BERT (all-MiniLM, BGE, E5, GTE style configs),
//! XLM-RoBERTa/RoBERTa and MPNet, run by [`super::encoder`]; ModernBERT, run by
//! [`super::modernbert`]; NomicBERT and GTE, run by [`super::rope_bert`]; Qwen3
//! (Qwen3-Embedding), run by [`super::qwen3`]. `config.json`'s `model_type` picks the network;
//! pooling (mean, CLS, last token), the window and the special tokens are the same code for all
//! of them.
//!
//! Reads `config.json` (architecture), memory-maps `model.safetensors`, loads
//! `tokenizer.json`, and takes pooling (mean, CLS or last token) from the Pooling module named
//! in `modules.json` (`1_Pooling/config.json`; a module other than Transformer, Pooling and
//! Normalize is refused), and the window from `sentence_bert_config.json`'s `max_seq_length`
//! (or `tokenizer_config.json`'s `model_max_length`). Vectors are always L2-normalised. On a
//! GPU the pooling (mean, CLS) and normalisation are one kernel (`kernels/pool.cu`) and the vectors can
//! stay there ([`super::Embedder::embed_tensor`]); [`super::Embedder::token_states`] gives the
//! last layer's states for the late pass.

use std::path::Path;

use candle_core::{DType, Tensor, D};
use serde::Deserialize;
use tokenizers::Tokenizer;

use super::encoder::{Arch, Encoder, EncoderConfig};
use super::modernbert::{ModernBert, ModernBertConfig};
use super::qwen3::{Qwen3, Qwen3Config};
use super::rope_bert::{Family, RopeBert, RopeBertConfig};
pub use super::st_config::Pooling;
use super::st_config::{load_tokenizer, read_json, StConfig};
use super::{normalize, Embedder, FlatBatch};
use crate::device::Compute;
use crate::wordpiece::TextTokenizer;
use crate::{Error, Result};

/// The network of a model directory, chosen by `config.json`'s `model_type`.
enum Net {
    /// BERT, RoBERTa/XLM-RoBERTa, MPNet ([`super::encoder`]).
    Encoder(Encoder),
    /// ModernBERT ([`super::modernbert`]).
    ModernBert(ModernBert),
    /// NomicBERT and GTE ([`super::rope_bert`]).
    RopeBert(RopeBert),
    /// Qwen3 ([`super::qwen3`]).
    Qwen3(Qwen3),
}

impl Net {
    fn forward(&self, batch: &FlatBatch) -> Result<Tensor> {
        match self {
            Self::Encoder(e) => e.forward(batch),
            Self::ModernBert(m) => m.forward(batch),
            Self::RopeBert(m) => m.forward(batch),
            Self::Qwen3(m) => m.forward(batch),
        }
    }

    /// [`Self::forward`]'s rows in `rows` alone ([`Embedder::token_states_rows`]): the BERT
    /// family skips its last layer's work for the others; the other networks select.
    fn forward_rows(&self, batch: &FlatBatch, rows: &[std::ops::Range<usize>]) -> Result<Tensor> {
        match self {
            Self::Encoder(e) => e.forward_rows(batch, rows),
            _ => super::select_rows(&self.forward(batch)?, rows, batch.ids.len()),
        }
    }
}

/// A transformer encoder of a sentence-transformers directory: the BERT family
/// ([`super::encoder`]), ModernBERT ([`super::modernbert`]), NomicBERT or GTE
/// ([`super::rope_bert`]), or Qwen3 ([`super::qwen3`]).
pub struct BertEmbedder {
    encoder: Net,
    tokenizer: TextTokenizer,
    compute: Compute,
    pooling: Pooling,
    max_tokens: usize,
    dim: usize,
    pre: Vec<u32>,
    post: Vec<u32>,
    prompts: super::tuned::Prompts,
    /// Dense heads after the pooling (most models have none).
    heads: super::dense::Heads,
    name: String,
}

#[derive(Deserialize)]
struct ArchConfig {
    model_type: Option<String>,
    architectures: Option<Vec<String>>,
    #[serde(alias = "n_embd")] // NomicBERT's published config
    hidden_size: usize,
}

impl BertEmbedder {
    /// Load a model directory.
    ///
    /// # Errors
    /// One line naming the directory and what is wrong: a missing file, an unknown
    /// architecture, a corrupt or mismatched `model.safetensors`.
    pub fn load(dir: &Path, compute: &Compute) -> Result<Self> {
        let arch: ArchConfig = read_json(dir, "config.json")?;
        let kind = arch.model_type.clone().unwrap_or_default();
        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            let hint = if dir.join("pytorch_model.bin").is_file() {
                " (only pytorch_model.bin found; convert it to safetensors)"
            } else {
                ""
            };
            return Err(Error::model(dir.display(), format!("missing model.safetensors{hint}")));
        }
        // Read the header before mapping, so a truncated or corrupt file is one clear error
        // rather than a failure deep inside a layer.
        super::safetensors_header(&weights)?;
        let tokenizer = load_tokenizer(dir)?;
        let StConfig { pooling, dense, max_seq_length, prompts } = StConfig::read(dir)?;
        let text =
            std::fs::read_to_string(dir.join("config.json")).map_err(|e| Error::model(dir.display(), e))?;
        // Tensor by tensor into their own buffers (no mapping held through the load: half the
        // peak memory, `super::weights`).
        let vb = super::weights::var_builder(&weights, compute.dtype, &compute.device)?;
        let bad = |e: candle_core::Error| {
            Error::model(dir.display(), format!("weights do not match config.json: {}", first_line(&e)))
        };
        let unknown = |other: &str| {
            let archs = arch.architectures.clone().unwrap_or_default().join(", ");
            Error::model(
                dir.display(),
                format!("unknown architecture {other:?} ({archs}); supported: bert, xlm-roberta, roberta, mpnet, modernbert, nomic_bert, gte (new), qwen3, or a model2vec static model"),
            )
        };
        let not_config = |e: serde_json::Error| {
            Error::model(dir.display(), format!("config.json is not a {kind} config: {e}"))
        };
        let (encoder, pos_limit) = match kind.as_str() {
            "modernbert" => {
                let cfg: ModernBertConfig = serde_json::from_str(&text).map_err(not_config)?;
                let m = ModernBert::load(vb, &cfg, compute.products).map_err(bad)?;
                let limit = m.max_positions;
                (Net::ModernBert(m), limit)
            }
            "nomic_bert" | "gte" | "new" => {
                let family = if kind == "nomic_bert" { Family::Nomic } else { Family::Gte };
                let cfg: RopeBertConfig = serde_json::from_str(&text).map_err(not_config)?;
                let m = RopeBert::load(vb, &cfg, family, compute.products).map_err(bad)?;
                let limit = m.max_positions;
                (Net::RopeBert(m), limit)
            }
            "qwen3" => {
                let cfg: Qwen3Config = serde_json::from_str(&text).map_err(not_config)?;
                let m = Qwen3::load(vb, &cfg, compute.products).map_err(bad)?;
                let limit = m.max_positions;
                (Net::Qwen3(m), limit)
            }
            other => {
                let layout = match other {
                    "bert" => Arch::Bert,
                    "xlm-roberta" | "roberta" | "camembert" => Arch::Roberta,
                    "mpnet" => Arch::Mpnet,
                    other => return Err(unknown(other)),
                };
                let cfg: EncoderConfig = serde_json::from_str(&text).map_err(not_config)?;
                let encoder = Encoder::load(vb, &cfg, layout, compute.products).map_err(bad)?;
                let limit = encoder.max_positions;
                (Net::Encoder(encoder), limit)
            }
        };
        // The window: sentence-transformers' own, capped by the position embeddings.
        let max_tokens = max_seq_length.unwrap_or(512).min(pos_limit);
        let heads = super::dense::Heads::load(dir, &dense, arch.hidden_size, compute)?;
        let (pre, post) = special_tokens(&tokenizer).map_err(|e| Error::model(dir.display(), e))?;
        // The window as a user counts it: the text's tokens, less the special tokens.
        let text_tokens = max_tokens.saturating_sub(pre.len() + post.len());
        Ok(Self {
            encoder,
            tokenizer: TextTokenizer::new(tokenizer),
            compute: compute.clone(),
            pooling,
            max_tokens,
            dim: heads.dim().unwrap_or(arch.hidden_size),
            heads,
            pre,
            post,
            prompts,
            name: format!(
                "{} ({kind}, {:?} pooling{}, window {text_tokens} tokens of text, {})",
                dir.display(),
                pooling,
                if dense.is_empty() { String::new() } else { format!(", {} Dense heads", dense.len()) },
                compute.describe()
            ),
        })
    }
}

/// The special tokens the tokenizer's post-processor puts before and after every sequence
/// (`[CLS]` … `[SEP]`, `<s>` … `</s>`, or only an EOS after, as Qwen3-Embedding's does): the
/// tokens its special-tokens mask marks on either side of a one-word text's content.
fn special_tokens(t: &Tokenizer) -> tokenizers::Result<(Vec<u32>, Vec<u32>)> {
    let with = t.encode("a", true)?;
    let (ids, mask) = (with.get_ids(), with.get_special_tokens_mask());
    match (mask.iter().position(|&m| m == 0), mask.iter().rposition(|&m| m == 0)) {
        (Some(first), Some(last)) => Ok((ids[..first].to_vec(), ids[last + 1..].to_vec())),
        // No content token: the empty text's specials, the first one before.
        _ => {
            let ids = t.encode("", true)?.get_ids().to_vec();
            Ok(match ids.len() {
                0 => (vec![], vec![]),
                _ => (ids[..1].to_vec(), ids[1..].to_vec()),
            })
        }
    }
}

fn first_line(e: &dyn std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

impl Embedder for BertEmbedder {
    fn dim(&self) -> usize {
        self.dim
    }

    fn max_tokens(&self) -> Option<usize> {
        Some(self.max_tokens)
    }

    fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    fn special_ids(&self) -> (&[u32], &[u32]) {
        (&self.pre, &self.post)
    }

    fn embed(&self, batch: &FlatBatch) -> Result<Vec<f32>> {
        self.forward_pooled(batch, self.pooling, true)
    }

    fn prompts(&self) -> &super::tuned::Prompts {
        &self.prompts
    }

    fn embed_tensor(&self, batch: &FlatBatch) -> Result<Tensor> {
        // The fused pooling kernel is CUDA C; other devices (CPU, Metal) pool through the
        // matrix product and hand back host vectors.
        if !self.compute.device.is_cuda() || batch.is_empty() {
            let v = self.embed(batch)?;
            return Ok(Tensor::from_vec(v, (batch.len(), self.dim), &candle_core::Device::Cpu)?);
        }
        self.pool_on_device(batch)
    }

    fn token_states(&self, batch: &FlatBatch) -> Result<Tensor> {
        // The encoder's last layer as it leaves it: f32 from the fused CPU ops, the model's
        // dtype on a GPU (pooled there by `kernels::pool_spans`, never copied to the host).
        if batch.is_empty() {
            return Ok(Tensor::zeros((0, self.dim), DType::F32, &candle_core::Device::Cpu)?);
        }
        self.on_tokens(self.encoder.forward(batch)?)
    }

    fn token_states_rows(&self, batch: &FlatBatch, rows: &[std::ops::Range<usize>]) -> Result<Tensor> {
        if batch.is_empty() {
            return super::select_rows(&self.token_states(batch)?, rows, 0);
        }
        self.on_tokens(self.encoder.forward_rows(batch, rows)?)
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}

impl BertEmbedder {
    /// Token states through the Dense heads, if any: linear heads commute with the span means
    /// (super::dense).
    fn on_tokens(&self, states: Tensor) -> Result<Tensor> {
        if self.heads.is_empty() {
            return Ok(states);
        }
        self.heads.on_tokens(&states)
    }

    /// Run the encoder and pool with `pooling`; L2-normalise when `unit` is set. Distillation
    /// uses the raw mean (`Mean`, `false`), as model2vec does.
    ///
    /// # Errors
    /// On a device or shape failure.
    pub fn forward_pooled(&self, batch: &FlatBatch, pooling: Pooling, unit: bool) -> Result<Vec<f32>> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let pooled =
            if unit && pooling == self.pooling && self.heads.is_empty() && self.encoder_device().is_cuda() {
                // On a GPU, pooling and normalisation are one kernel (kernels/pool.cu).
                self.pool_on_device(batch)?
            } else {
                let hidden = self.encoder.forward(batch)?;
                self.pool_product(&hidden, batch, pooling, unit)?
            };
        let mut out = pooled.flatten_all()?.to_vec1::<f32>()?;
        if unit {
            for row in out.chunks_mut(self.dim) {
                normalize(row); // exact unit length after the device's arithmetic
            }
        }
        Ok(out)
    }

    /// Pool `hidden` (`[tokens, H]`) with `pooling` by a gather (CLS) or one matrix product
    /// (mean), in f32 on the encoder's device; L2-normalised rows when `unit` is set.
    fn pool_product(
        &self,
        hidden: &Tensor,
        batch: &FlatBatch,
        pooling: Pooling,
        unit: bool,
    ) -> Result<Tensor> {
        let n = batch.len();
        let dev = self.encoder_device();
        let hidden = hidden.to_dtype(DType::F32)?; // [N, H]
        let pooled = match pooling {
            Pooling::Cls => {
                let first: Vec<u32> = batch.cu_seqlens[..n].iter().map(|&s| s as u32).collect();
                hidden.index_select(&Tensor::from_vec(first, n, &dev)?, 0)?
            }
            Pooling::LastToken => {
                // Sequences are never empty here (the tokenizer adds the EOS); an empty one would
                // take a neighbour's row rather than fail.
                let top = batch.ids.len().saturating_sub(1);
                let last: Vec<u32> = batch
                    .cu_seqlens
                    .windows(2)
                    .map(|w| w[1].saturating_sub(1).max(w[0]).min(top) as u32)
                    .collect();
                hidden.index_select(&Tensor::from_vec(last, n, &dev)?, 0)?
            }
            Pooling::Mean if dev.is_cpu() => {
                // Each sequence's tokens summed in order (`kernels::pool_spans`), then divided
                // by their count, as sentence-transformers does: the same bits on every CPU,
                // which the product below is not (gemm sizes its blocks of tokens by the CPU's
                // caches).
                let cu: Vec<u32> = batch.cu_seqlens.iter().map(|&c| c as u32).collect();
                let sums = crate::kernels::pool_spans(&hidden, &cu[..n], &cu[1..], false)?;
                let counts: Vec<f32> =
                    batch.cu_seqlens.windows(2).map(|w| (w[1] - w[0]).max(1) as f32).collect();
                sums.broadcast_div(&Tensor::from_vec(counts, (n, 1), &dev)?)?
            }
            Pooling::Mean => {
                // Mean over each sequence's tokens as one product: P[i, t] = 1/len_i on its tokens.
                let total = batch.ids.len();
                let mut p = vec![0f32; n * total];
                for i in 0..n {
                    let (s, e) = (batch.cu_seqlens[i], batch.cu_seqlens[i + 1]);
                    let w = 1.0 / (e - s).max(1) as f32;
                    p[i * total + s..i * total + e].iter_mut().for_each(|x| *x = w);
                }
                Tensor::from_vec(p, (n, total), &dev)?.matmul(&hidden)?
            }
        };
        let pooled = if self.heads.is_empty() { pooled } else { self.heads.forward(&pooled)? };
        if !unit {
            return Ok(pooled);
        }
        let norms = pooled.sqr()?.sum_keepdim(D::Minus1)?.sqrt()?.clamp(1e-12f32, f32::MAX)?;
        Ok(pooled.broadcast_div(&norms)?)
    }

    /// Encode and pool on the device, in the encoder's dtype: unit vectors `[n, dim]` f32,
    /// left on the device. The fused kernel pools; should it fail (an NVRTC or driver it
    /// cannot use), the matrix-product pooling of the same hidden states gives the same
    /// vectors, slower: warned once, and the kernel is not tried again in this process.
    fn pool_on_device(&self, batch: &FlatBatch) -> Result<Tensor> {
        use std::sync::atomic::{AtomicBool, Ordering};
        static KERNEL_FAILED: AtomicBool = AtomicBool::new(false);
        let hidden = self.encoder.forward(batch)?; // [tokens, H], the model's dtype
                                                   // The kernel pools by mean or CLS; the last token is a gather.
        if self.pooling != Pooling::LastToken
            && self.heads.is_empty()
            && !KERNEL_FAILED.load(Ordering::Relaxed)
        {
            let cu: Vec<u32> = batch.cu_seqlens.iter().map(|&c| c as u32).collect();
            match crate::kernels::pool(&hidden, &cu, self.pooling == Pooling::Cls) {
                Ok(t) => return Ok(t),
                Err(e) => {
                    if !KERNEL_FAILED.swap(true, Ordering::Relaxed) {
                        eprintln!("warning: the device pooling kernel failed ({e}); pooling by matrix products instead");
                    }
                }
            }
        }
        self.pool_product(&hidden, batch, self.pooling, true)
    }

    fn encoder_device(&self) -> candle_core::Device {
        self.compute.device.clone()
    }

    /// Ids of `[CLS]`/`<s>` and `[SEP]`/`</s>` around every sequence.
    #[must_use]
    pub fn specials(&self) -> (&[u32], &[u32]) {
        (&self.pre, &self.post)
    }
}
