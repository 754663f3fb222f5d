//! An unpadded transformer encoder (BERT and RoBERTa/XLM-RoBERTa weights) on candle.
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
    /// Position of a sequence's first token: 0 for BERT, `pad + 1` for RoBERTa.
    pos_offset: usize,
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
    pub fn load(vb: VarBuilder, cfg: &EncoderConfig, roberta: bool) -> candle_core::Result<Self> {
        let prefix = ["bert", "roberta", "model"]
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
        let typ = e.get((cfg.type_vocab_size, h), "token_type_embeddings.weight")?;
        let ln = Norm::load(&e, "LayerNorm", h, cfg.layer_norm_eps)?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for i in 0..cfg.num_hidden_layers {
            let l = vb.pp(format!("encoder.layer.{i}"));
            let q = Linear::load(&l, "attention.self.query", h, h)?;
            let k = Linear::load(&l, "attention.self.key", h, h)?;
            let v = Linear::load(&l, "attention.self.value", h, h)?;
            layers.push(Layer {
                qkv: Linear::fused(&[q, k, v])?,
                out: Linear::load(&l, "attention.output.dense", h, h)?,
                ln1: Norm::load(&l, "attention.output.LayerNorm", h, cfg.layer_norm_eps)?,
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
        let pos_offset = if roberta { cfg.pad_token_id.unwrap_or(1) as usize + 1 } else { 0 };
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
            let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(&bias)?;
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
