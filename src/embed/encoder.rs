//! An unpadded transformer encoder (BERT, RoBERTa/XLM-RoBERTa and MPNet weights) on candle.
//!
//! MPNet is the BERT layout with other weight names, no token-type embeddings, RoBERTa's
//! position ids, and a learned bias per attention head and relative-position bucket (T5-style
//! buckets) added to every layer's attention scores.
//!
//! Precision: with f16/bf16 weights, candle's CUDA layer norm accumulates mean and variance in
//! f32 and its softmax sums in f32; the pooling kernel (`kernels/pool.cu`) reads the last hidden
//! states in their dtype and pools and normalises in f32.
//!
//! Why not candle-transformers' `BertModel`: it runs every layer on a padded
//! `[batch, longest, hidden]` tensor, so each linear layer is a batch of small matrix
//! products and padding is computed too. Here, as in text-embeddings-inference, the tokens
//! of all sequences stay flat, `[tokens, hidden]`: every linear layer is one large matrix
//! product over real tokens only, and only attention gathers the tokens into a padded
//! `[batch, heads, longest, head_dim]` layout (with a mask) and scatters them back.
//! Measured in `benches/RESULTS.md`.

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;

use super::FlatBatch;
use crate::Result;

/// The fields of a BERT/RoBERTa `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub struct EncoderConfig {
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    pub max_position_embeddings: usize,
    #[serde(default = "one")]
    pub type_vocab_size: usize,
    #[serde(default)]
    pub pad_token_id: Option<u32>,
    #[serde(default)]
    pub model_type: Option<String>,
    /// MPNet: relative-position buckets of the attention bias.
    #[serde(default)]
    pub relative_attention_num_buckets: Option<usize>,
}

/// The weight layout of an encoder checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    Bert,
    /// RoBERTa and XLM-RoBERTa: positions start after the padding id.
    Roberta,
    /// MPNet: RoBERTa's positions, relative-position attention bias, its own weight names.
    Mpnet,
}

fn default_act() -> String {
    "gelu".into()
}
fn default_eps() -> f64 {
    1e-12
}
fn one() -> usize {
    1
}

#[derive(Debug, Clone, Copy)]
enum Act {
    GeluErf,
    GeluTanh,
    Relu,
}

struct Linear {
    /// `[in, out]`, contiguous (transposed once at load).
    wt: Tensor,
    b: Tensor,
}

impl Linear {
    fn load(vb: &VarBuilder, name: &str, inp: usize, out: usize) -> candle_core::Result<Self> {
        let w = vb.get((out, inp), &format!("{name}.weight"))?;
        let b = vb.get(out, &format!("{name}.bias"))?;
        Ok(Self { wt: w.t()?.contiguous()?, b })
    }

    /// Concatenate several linears with the same input (Q, K, V) into one.
    fn fused(parts: &[Self]) -> candle_core::Result<Self> {
        let wts: Vec<&Tensor> = parts.iter().map(|p| &p.wt).collect();
        let bs: Vec<&Tensor> = parts.iter().map(|p| &p.b).collect();
        Ok(Self { wt: Tensor::cat(&wts, 1)?.contiguous()?, b: Tensor::cat(&bs, 0)? })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        x.matmul(&self.wt)?.broadcast_add(&self.b)
    }
}

struct Norm {
    w: Tensor,
    b: Tensor,
    eps: f32,
}

impl Norm {
    fn load(vb: &VarBuilder, name: &str, h: usize, eps: f64) -> candle_core::Result<Self> {
        // Old BERT checkpoints name LayerNorm parameters gamma/beta.
        let (w, b) = if vb.contains_tensor(&format!("{name}.weight")) {
            (vb.get(h, &format!("{name}.weight"))?, vb.get(h, &format!("{name}.bias"))?)
        } else {
            (vb.get(h, &format!("{name}.gamma"))?, vb.get(h, &format!("{name}.beta"))?)
        };
        Ok(Self { w, b, eps: eps as f32 })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        candle_nn::ops::layer_norm(x, &self.w, &self.b, self.eps)
    }
}

struct Layer {
    qkv: Linear,
    out: Linear,
    ln1: Norm,
    up: Linear,
    down: Linear,
    ln2: Norm,
}

/// A BERT-style encoder over flat token batches.
pub struct Encoder {
    word: candle_nn::Embedding,
    pos: candle_nn::Embedding,
    typ0: Tensor,
    ln: Norm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
    act: Act,
    /// Position of a sequence's first token: 0 for BERT, `pad + 1` for RoBERTa and MPNet.
    pos_offset: usize,
    /// MPNet: `[buckets, heads]` attention bias per relative-position bucket.
    rel_bias: Option<Tensor>,
    /// Positions available after the offset.
    pub max_positions: usize,
    device: Device,
    dtype: DType,
}

impl Encoder {
    /// Load from a VarBuilder rooted at the model's weights (a `bert.`/`roberta.` prefix is
    /// detected).
    ///
    /// # Errors
    /// When a tensor is missing or has the wrong shape.
    pub fn load(vb: VarBuilder, cfg: &EncoderConfig, arch: Arch) -> candle_core::Result<Self> {
        let prefix = ["bert", "roberta", "mpnet", "model"]
            .into_iter()
            .find(|p| vb.contains_tensor(&format!("{p}.embeddings.word_embeddings.weight")));
        let vb = match prefix {
            Some(p) => vb.pp(p),
            None => vb,
        };
        let h = cfg.hidden_size;
        if cfg.num_attention_heads == 0 || h % cfg.num_attention_heads != 0 {
            candle_core::bail!(
                "hidden_size {h} is not a multiple of num_attention_heads {}",
                cfg.num_attention_heads
            );
        }
        let e = vb.pp("embeddings");
        // Rows come from the file: config.json's vocab_size is sometimes stale.
        let word = e.get_unchecked("word_embeddings.weight")?;
        if word.rank() != 2 || word.dim(1)? != h {
            candle_core::bail!("word_embeddings.weight has shape {:?}, expected [_, {h}]", word.dims());
        }
        let pos = e.get((cfg.max_position_embeddings, h), "position_embeddings.weight")?;
        // MPNet has no token types: a zero row.
        let typ = if arch == Arch::Mpnet {
            Tensor::zeros((1, h), vb.dtype(), vb.device())?
        } else {
            e.get((cfg.type_vocab_size, h), "token_type_embeddings.weight")?
        };
        let ln = Norm::load(&e, "LayerNorm", h, cfg.layer_norm_eps)?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for i in 0..cfg.num_hidden_layers {
            let l = vb.pp(format!("encoder.layer.{i}"));
            let [q, k, v, o, ln1] = if arch == Arch::Mpnet {
                [
                    "attention.attn.q",
                    "attention.attn.k",
                    "attention.attn.v",
                    "attention.attn.o",
                    "attention.LayerNorm",
                ]
            } else {
                [
                    "attention.self.query",
                    "attention.self.key",
                    "attention.self.value",
                    "attention.output.dense",
                    "attention.output.LayerNorm",
                ]
            };
            let (q, k, v) =
                (Linear::load(&l, q, h, h)?, Linear::load(&l, k, h, h)?, Linear::load(&l, v, h, h)?);
            layers.push(Layer {
                qkv: Linear::fused(&[q, k, v])?,
                out: Linear::load(&l, o, h, h)?,
                ln1: Norm::load(&l, ln1, h, cfg.layer_norm_eps)?,
                up: Linear::load(&l, "intermediate.dense", h, cfg.intermediate_size)?,
                down: Linear::load(&l, "output.dense", cfg.intermediate_size, h)?,
                ln2: Norm::load(&l, "output.LayerNorm", h, cfg.layer_norm_eps)?,
            });
        }
        let act = match cfg.hidden_act.as_str() {
            "gelu" | "gelu_python" => Act::GeluErf,
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_approximate" => Act::GeluTanh,
            "relu" => Act::Relu,
            other => candle_core::bail!("unsupported hidden_act {other:?}"),
        };
        let pos_offset = if arch == Arch::Bert { 0 } else { cfg.pad_token_id.unwrap_or(1) as usize + 1 };
        let rel_bias = if arch == Arch::Mpnet {
            let buckets = cfg.relative_attention_num_buckets.unwrap_or(32);
            Some(vb.get((buckets, cfg.num_attention_heads), "encoder.relative_attention_bias.weight")?)
        } else {
            None
        };
        Ok(Self {
            word: candle_nn::Embedding::new(word, h),
            pos: candle_nn::Embedding::new(pos, h),
            typ0: typ.get(0)?,
            ln,
            layers,
            heads: cfg.num_attention_heads,
            hidden: h,
            act,
            pos_offset,
            rel_bias,
            max_positions: cfg.max_position_embeddings.saturating_sub(pos_offset),
            device: vb.device().clone(),
            dtype: vb.dtype(),
        })
    }

    /// Token vectors of the last layer, `[total_tokens, hidden]`, in batch order.
    ///
    /// # Errors
    /// On a device or shape failure.
    pub fn forward(&self, batch: &FlatBatch) -> Result<Tensor> {
        let n_seq = batch.len();
        let n_tok = batch.ids.len();
        let l = batch.max_len().max(1);
        let dev = &self.device;
        // Flat ids and positions; gather/scatter maps between flat and padded layouts.
        let mut pos = Vec::with_capacity(n_tok);
        let mut gather = vec![0u32; n_seq * l];
        let mut scatter = Vec::with_capacity(n_tok);
        let mut bias = vec![f32::MIN; n_seq * l];
        for i in 0..n_seq {
            let (s, e) = (batch.cu_seqlens[i], batch.cu_seqlens[i + 1]);
            for (j, t) in (s..e).enumerate() {
                pos.push((self.pos_offset + j) as u32);
                gather[i * l + j] = t as u32;
                scatter.push((i * l + j) as u32);
                bias[i * l + j] = 0.0;
            }
        }
        let ids = Tensor::new(batch.ids.as_slice(), dev)?;
        let pos = Tensor::from_vec(pos, n_tok, dev)?;
        let gather = Tensor::from_vec(gather, n_seq * l, dev)?;
        let scatter = Tensor::from_vec(scatter, n_tok, dev)?;
        let bias = Tensor::from_vec(bias, (n_seq, 1, 1, l), dev)?.to_dtype(self.dtype)?;

        // MPNet: the relative-position bias `[1, heads, L, L]`, the same for every sequence
        // (positions count from each sequence's start; padding comes after).
        let rel = match &self.rel_bias {
            Some(w) => {
                let buckets = w.dim(0)?;
                let idx: Vec<u32> = (0..l)
                    .flat_map(|i| (0..l).map(move |j| relative_bucket(j as i64 - i as i64, buckets, 128)))
                    .collect();
                let idx = Tensor::from_vec(idx, l * l, dev)?;
                Some(w.index_select(&idx, 0)?.reshape((l, l, self.heads))?.permute((2, 0, 1))?.unsqueeze(0)?)
            }
            None => None,
        };
        let x = self.word.forward(&ids)?.add(&self.pos.forward(&pos)?)?.broadcast_add(&self.typ0)?;
        let mut x = self.ln.forward(&x)?;
        let (h, heads) = (self.hidden, self.heads);
        let d = h / heads;
        let scale = 1.0 / (d as f64).sqrt();
        for layer in &self.layers {
            let qkv = layer.qkv.forward(&x)?; // [N, 3H]
            let padded = qkv.index_select(&gather, 0)?.reshape((n_seq, l, 3, heads, d))?;
            let q = padded.narrow(2, 0, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous()?; // [b, h, L, d]
            let k = padded.narrow(2, 1, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous()?;
            let v = padded.narrow(2, 2, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous()?;
            let mut scores = (q.matmul(&k.t()?)? * scale)?;
            if let Some(r) = &rel {
                scores = scores.broadcast_add(r)?;
            }
            let scores = scores.broadcast_add(&bias)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let ctx = probs.matmul(&v)?.transpose(1, 2)?.reshape((n_seq * l, h))?; // [b*L, H]
            let ctx = ctx.index_select(&scatter, 0)?; // [N, H]
            let attn = layer.out.forward(&ctx)?;
            x = layer.ln1.forward(&(attn + &x)?)?;
            let up = layer.up.forward(&x)?;
            let up = match self.act {
                Act::GeluErf => super::gelu::gelu_erf(&up)?,
                Act::GeluTanh => up.gelu()?,
                Act::Relu => up.relu()?,
            };
            let down = layer.down.forward(&up)?;
            x = layer.ln2.forward(&(down + &x)?)?;
        }
        Ok(x)
    }
}

/// MPNet's relative-position bucket (transformers' `MPNetEncoder.relative_position_bucket`, the
/// T5 scheme): half the buckets for each direction, exact up to a quarter of them, then
/// logarithmic up to `max_distance`. `relative` is the key's position minus the query's.
#[must_use]
pub fn relative_bucket(relative: i64, buckets: usize, max_distance: usize) -> u32 {
    let half = (buckets / 2) as i64;
    let n = -relative;
    let mut ret = if n < 0 { half } else { 0 };
    let n = n.abs();
    let max_exact = half / 2;
    if n < max_exact {
        ret += n;
    } else {
        // In f32, as the reference computes it, truncated toward zero.
        let large = max_exact
            + ((n as f32 / max_exact as f32).ln() / (max_distance as f32 / max_exact as f32).ln()
                * (half - max_exact) as f32) as i64;
        ret += large.min(half - 1);
    }
    ret as u32
}
