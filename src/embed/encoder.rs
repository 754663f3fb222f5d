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
//! product over real tokens only. Attention on the CPU in f32 runs per (sequence, head)
//! straight from the flat QKV matrix ([`super::fused`]); on other devices and dtypes it
//! gathers the tokens into a padded `[batch, heads, longest, head_dim]` layout (with a mask)
//! and scatters them back. Measured in `benches/RESULTS.md`.

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;

use super::layers::TokenTable;
use super::weights::Checkpoint;
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

/// Whether `x` can take the fused CPU ops ([`super::fused`]): f32 on the CPU.
fn fused_cpu(x: &Tensor) -> bool {
    x.device().is_cpu() && x.dtype() == DType::F32
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
    /// The bias on the host, for the fused CPU ops that add it (f32 on the CPU only).
    b_host: Option<Vec<f32>>,
    /// The weight packed for its products' kernel ([`Encoder::load`]; f32 too, on CPUs with
    /// AVX2 and FMA); `wt` is then emptied.
    packed: Option<super::packed::Weight>,
}

impl Linear {
    fn load(vb: &VarBuilder, name: &str, inp: usize, out: usize) -> candle_core::Result<Self> {
        let w = vb.get((out, inp), &format!("{name}.weight"))?;
        let b = vb.get(out, &format!("{name}.bias"))?;
        Self::new(super::layers::transposed(&w)?, b)
    }

    fn new(wt: Tensor, b: Tensor) -> candle_core::Result<Self> {
        let b_host = if fused_cpu(&b) { Some(b.to_vec1()?) } else { None };
        Ok(Self { wt, b, b_host, packed: None })
    }

    /// Pack the weight for `products` (f32 on the CPU only), and let go of its f32 copy: the
    /// weights are held at the products' width.
    fn pack(&mut self, products: crate::device::Products) -> candle_core::Result<()> {
        if self.b_host.is_some() {
            let (k, m) = self.wt.dims2()?;
            self.packed =
                super::layers::with_host_f32(&self.wt, |wt| super::packed::Weight::new(products, wt, k, m))?;
            if self.packed.is_some() {
                self.wt = Tensor::zeros((0, 0), DType::F32, &Device::Cpu)?;
            }
        }
        Ok(())
    }

    /// Concatenate several linears with the same input (Q, K, V) into one.
    fn fused(parts: &[Self]) -> candle_core::Result<Self> {
        let wts: Vec<&Tensor> = parts.iter().map(|p| &p.wt).collect();
        let bs: Vec<&Tensor> = parts.iter().map(|p| &p.b).collect();
        Self::new(Tensor::cat(&wts, 1)?.contiguous()?, Tensor::cat(&bs, 0)?)
    }

    fn forward(&self, x: &Tensor, fused: bool) -> candle_core::Result<Tensor> {
        if let Some(p) = &self.packed {
            return super::fused::linear_packed(&x.contiguous()?, p, self.b_host.as_deref());
        }
        if fused && x.is_contiguous() {
            return super::fused::linear(x, &self.wt, &self.b);
        }
        x.matmul(&self.wt)?.broadcast_add(&self.b)
    }

    /// The product without its bias and the bias to add next, on the fused path; `None` on
    /// candle's (the caller then uses [`Self::forward`]).
    fn forward_unbiased(&self, x: &Tensor, fused: bool) -> candle_core::Result<Option<(Tensor, &[f32])>> {
        match &self.b_host {
            Some(b) if fused && x.is_contiguous() => match &self.packed {
                Some(p) => Ok(Some((super::fused::linear_packed(x, p, None)?, b))),
                None => Ok(Some((super::fused::matmul(x, &self.wt)?, b))),
            },
            _ => Ok(None),
        }
    }
}

struct Norm {
    w: Tensor,
    b: Tensor,
    eps: f32,
    /// The weight and bias on the host, for the fused CPU op (f32 on the CPU only).
    host: Option<(Vec<f32>, Vec<f32>)>,
}

impl Norm {
    fn load(vb: &VarBuilder, name: &str, h: usize, eps: f64) -> candle_core::Result<Self> {
        // Old BERT checkpoints name LayerNorm parameters gamma/beta.
        let (w, b) = if vb.contains_tensor(&format!("{name}.weight")) {
            (vb.get(h, &format!("{name}.weight"))?, vb.get(h, &format!("{name}.bias"))?)
        } else {
            (vb.get(h, &format!("{name}.gamma"))?, vb.get(h, &format!("{name}.beta"))?)
        };
        let host = if fused_cpu(&w) { Some((w.to_vec1()?, b.to_vec1()?)) } else { None };
        Ok(Self { w, b, eps: eps as f32, host })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        candle_nn::ops::layer_norm(x, &self.w, &self.b, self.eps)
    }

    /// `LayerNorm(linear(x) + residual)`: on the fused path the linear's bias is added in the
    /// norm's pass.
    fn forward_residual(
        &self,
        linear: &Linear,
        x: &Tensor,
        residual: &Tensor,
        fused: bool,
    ) -> candle_core::Result<Tensor> {
        if let (Some((w, b)), Some((y, yb))) = (&self.host, linear.forward_unbiased(x, fused)?) {
            return super::fused::add_bias_layer_norm(y, yb, residual, w, b, self.eps);
        }
        let y = linear.forward(x, fused)?;
        match &self.host {
            Some((w, b)) if fused => super::fused::add_layer_norm(y, residual, w, b, self.eps),
            _ => self.forward(&(y + residual)?),
        }
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
    word: TokenTable,
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
    /// The linear layers' products on the CPU: f32 ones take attention's exact kernels too.
    products: crate::device::Products,
}

/// BERT's, RoBERTa's and MPNet's checkpoints: the encoder under its family's name, or `model.`.
const CHECKPOINT: Checkpoint = Checkpoint {
    prefixes: &["bert", "roberta", "mpnet", "model"],
    probe: "embeddings.word_embeddings.weight",
};

impl Encoder {
    /// Load from a VarBuilder rooted at the model's weights (a `bert.`/`roberta.` prefix is
    /// detected). Each linear layer's product runs as `products` asks ([`super::packed`]; f32
    /// weights on the CPU only: what `--dtype bf16` and `int8` mean on the CPU, everything else
    /// staying f32), packed as its layer loads, so the f32 weights are never all held at once.
    ///
    /// # Errors
    /// When a tensor is missing or has the wrong shape.
    pub fn load(
        vb: VarBuilder,
        cfg: &EncoderConfig,
        arch: Arch,
        products: crate::device::Products,
    ) -> candle_core::Result<Self> {
        let vb = CHECKPOINT.root(vb);
        let h = cfg.hidden_size;
        if cfg.num_attention_heads == 0 || !h.is_multiple_of(cfg.num_attention_heads) {
            candle_core::bail!(
                "hidden_size {h} is not a multiple of num_attention_heads {}",
                cfg.num_attention_heads
            );
        }
        let e = vb.pp("embeddings");
        let word = TokenTable::load(&e, "word_embeddings.weight", h, products)?;
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
            let [q, k, v, o, ln1] = attention_names(arch);
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
            if let Some(l) = layers.last_mut() {
                for lin in [&mut l.qkv, &mut l.out, &mut l.up, &mut l.down] {
                    lin.pack(products)?;
                }
            }
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
            word,
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
            products,
        })
    }

    /// Token vectors of the last layer, `[total_tokens, hidden]`, in batch order.
    ///
    /// # Errors
    /// On a device or shape failure.
    pub fn forward(&self, batch: &FlatBatch) -> Result<Tensor> {
        self.forward_with(batch, self.device.is_cpu() && self.dtype == DType::F32, None)
    }

    /// [`Self::forward`]'s rows in `rows` alone (flat-batch ranges, stacked in the order given):
    /// the last layer's output projection and feed-forward run on those rows only, its keys
    /// and values on every token, so each row is the one [`Self::forward`] gives it, bit for
    /// bit (every op after the attention is per row). The late pass pools only the tokens
    /// at the centre of each window: at 254 tokens every 127, half of them.
    ///
    /// # Errors
    /// As [`Self::forward`], and on a range outside the batch.
    pub fn forward_rows(&self, batch: &FlatBatch, rows: &[std::ops::Range<usize>]) -> Result<Tensor> {
        self.forward_with(batch, self.device.is_cpu() && self.dtype == DType::F32, Some(rows))
    }

    /// [`Self::forward`] with the fused CPU ops ([`super::fused`]) or candle's own (`fused`
    /// false: the path every other device and dtype takes).
    fn forward_with(
        &self,
        batch: &FlatBatch,
        fused: bool,
        rows: Option<&[std::ops::Range<usize>]>,
    ) -> Result<Tensor> {
        let n_seq = batch.len();
        let n_tok = batch.ids.len();
        let l = batch.max_len().max(1);
        let dev = &self.device;
        let mut pos = Vec::with_capacity(n_tok);
        for i in 0..n_seq {
            let len = batch.cu_seqlens[i + 1] - batch.cu_seqlens[i];
            pos.extend((0..len).map(|j| (self.pos_offset + j) as u32));
        }
        let ids = Tensor::new(batch.ids.as_slice(), dev)?;
        let pos = Tensor::from_vec(pos, n_tok, dev)?;
        // Elsewhere than the fused CPU path, attention runs padded: gather/scatter map between
        // the flat and padded layouts, and a mask hides the padding.
        let padded = if fused { None } else { Some(self.padding_maps(batch, l)?) };

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
        // The fused CPU attention reads the bias from the host, `[heads, l, l]`.
        let rel_host: Option<Vec<f32>> = match (&rel, fused) {
            (Some(r), true) => Some(r.flatten_all()?.to_dtype(DType::F32)?.to_vec1()?),
            _ => None,
        };
        let x = self.word.forward(&ids)?.add(&self.pos.forward(&pos)?)?.broadcast_add(&self.typ0)?;
        let mut x = self.ln.forward(&x)?;
        let (h, heads) = (self.hidden, self.heads);
        let d = h / heads;
        let scale = 1.0 / (d as f64).sqrt();
        let last = self.layers.len().saturating_sub(1);
        for (i, layer) in self.layers.iter().enumerate() {
            let qkv = layer.qkv.forward(&x, fused)?; // [N, 3H]
            let ctx = match &padded {
                None => super::fused::attention(
                    &qkv,
                    &batch.cu_seqlens,
                    heads,
                    scale as f32,
                    rel_host.as_deref().map(|b| (b, l)),
                    self.products == crate::device::Products::Tensor,
                )?,
                Some((gather, scatter, bias)) => {
                    self.padded_attention(&qkv, (gather, scatter, bias), rel.as_ref(), (n_seq, l), scale)?
                }
            };
            // The last layer's remaining ops are per row: on the rows asked for alone.
            let ctx = match rows {
                Some(rows) if i == last => {
                    x = super::select_rows(&x, rows, n_tok)?;
                    super::select_rows(&ctx, rows, n_tok)?
                }
                _ => ctx,
            };
            x = layer.ln1.forward_residual(&layer.out, &ctx, &x, fused)?;
            let up = match self.act {
                Act::GeluErf => match layer.up.forward_unbiased(&x, fused)? {
                    Some((y, b)) => super::gelu::gelu_erf_bias(y, b)?,
                    None => super::gelu::gelu_erf(&layer.up.forward(&x, fused)?)?,
                },
                Act::GeluTanh => layer.up.forward(&x, fused)?.gelu()?,
                Act::Relu => layer.up.forward(&x, fused)?.relu()?,
            };
            x = layer.ln2.forward_residual(&layer.down, &up, &x, fused)?;
        }
        match rows {
            Some(rows) if self.layers.is_empty() => super::select_rows(&x, rows, n_tok),
            _ => Ok(x),
        }
    }

    /// The gather (padded slot → flat token), scatter (flat token → padded slot) and additive
    /// mask (`[n_seq, 1, 1, l]`, 0 on tokens, `f32::MIN` on padding) of a batch padded to `l`.
    fn padding_maps(&self, batch: &FlatBatch, l: usize) -> Result<(Tensor, Tensor, Tensor)> {
        let n_seq = batch.len();
        let dev = &self.device;
        let mut gather = vec![0u32; n_seq * l];
        let mut scatter = Vec::with_capacity(batch.ids.len());
        let mut bias = vec![f32::MIN; n_seq * l];
        for i in 0..n_seq {
            let (s, e) = (batch.cu_seqlens[i], batch.cu_seqlens[i + 1]);
            for (j, t) in (s..e).enumerate() {
                gather[i * l + j] = t as u32;
                scatter.push((i * l + j) as u32);
                bias[i * l + j] = 0.0;
            }
        }
        let n = scatter.len();
        Ok((
            Tensor::from_vec(gather, n_seq * l, dev)?,
            Tensor::from_vec(scatter, n, dev)?,
            Tensor::from_vec(bias, (n_seq, 1, 1, l), dev)?.to_dtype(self.dtype)?,
        ))
    }

    /// Attention on the padded layout (devices other than the CPU, dtypes other than f32):
    /// `qkv` `[N, 3H]` gathered to `[b, heads, l, d]`, masked softmax, scattered back to `[N, H]`.
    fn padded_attention(
        &self,
        qkv: &Tensor,
        (gather, scatter, mask): (&Tensor, &Tensor, &Tensor),
        rel: Option<&Tensor>,
        (n_seq, l): (usize, usize),
        scale: f64,
    ) -> Result<Tensor> {
        let (h, heads) = (self.hidden, self.heads);
        let d = h / heads;
        let padded = qkv.index_select(gather, 0)?.reshape((n_seq, l, 3, heads, d))?;
        let q = padded.narrow(2, 0, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous()?; // [b, h, L, d]
        let k = padded.narrow(2, 1, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous()?;
        let v = padded.narrow(2, 2, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous()?;
        let mut scores = (q.matmul(&k.t()?)? * scale)?;
        if let Some(r) = rel {
            scores = scores.broadcast_add(r)?;
        }
        let scores = scores.broadcast_add(mask)?;
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let ctx = probs.matmul(&v)?.transpose(1, 2)?.reshape((n_seq * l, h))?; // [b*L, H]
        Ok(ctx.index_select(scatter, 0)?) // [N, H]
    }
}

/// A layer's attention weight names in `arch`'s checkpoints: query, key, value, output, and
/// the layer norm after attention.
fn attention_names(arch: Arch) -> [&'static str; 5] {
    if arch == Arch::Mpnet {
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A small encoder of `arch`'s layout with pseudo-random weights (the same every run):
    /// 2 layers, `h` hidden, `heads` heads.
    fn random(arch: Arch, h: usize, heads: usize) -> Encoder {
        let (inter, vocab, max_pos, layers) = (2 * h, 60usize, 80usize, 2usize);
        let dev = Device::Cpu;
        let mut w: HashMap<String, Tensor> = HashMap::new();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut put = |name: String, shape: &[usize]| {
            let n: usize = shape.iter().product();
            // Uniform in (−0.87, 0.87): standard deviation 0.5.
            let v: Vec<f32> = (0..n)
                .map(|_| {
                    state =
                        state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 1.732
                })
                .collect();
            w.insert(name, Tensor::from_vec(v, shape, &dev).unwrap());
        };
        put("embeddings.word_embeddings.weight".into(), &[vocab, h]);
        put("embeddings.position_embeddings.weight".into(), &[max_pos, h]);
        put("embeddings.token_type_embeddings.weight".into(), &[2, h]);
        put("embeddings.LayerNorm.weight".into(), &[h]);
        put("embeddings.LayerNorm.bias".into(), &[h]);
        let names = attention_names(arch);
        for i in 0..layers {
            let p = format!("encoder.layer.{i}");
            for lin in &names[..4] {
                put(format!("{p}.{lin}.weight"), &[h, h]);
                put(format!("{p}.{lin}.bias"), &[h]);
            }
            for ln in [names[4], "output.LayerNorm"] {
                put(format!("{p}.{ln}.weight"), &[h]);
                put(format!("{p}.{ln}.bias"), &[h]);
            }
            put(format!("{p}.intermediate.dense.weight"), &[inter, h]);
            put(format!("{p}.intermediate.dense.bias"), &[inter]);
            put(format!("{p}.output.dense.weight"), &[h, inter]);
            put(format!("{p}.output.dense.bias"), &[h]);
        }
        put("encoder.relative_attention_bias.weight".into(), &[32, heads]);
        let cfg = EncoderConfig {
            hidden_size: h,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            intermediate_size: inter,
            hidden_act: "gelu".into(),
            layer_norm_eps: 1e-12,
            max_position_embeddings: max_pos,
            type_vocab_size: 2,
            pad_token_id: Some(1),
            model_type: None,
            relative_attention_num_buckets: Some(32),
        };
        Encoder::load(
            VarBuilder::from_tensors(w, DType::F32, &dev),
            &cfg,
            arch,
            crate::device::Products::Tensor,
        )
        .unwrap()
    }

    /// The fused CPU ops give candle's padded path's hidden states, for sequences of mixed
    /// lengths (one token, longer than the rest, the same length) and with MPNet's bias.
    #[test]
    fn fused_cpu_path_equals_candle_path() {
        let mut batch = FlatBatch::default();
        for (n, len) in [1usize, 9, 70, 9, 33, 2].into_iter().enumerate() {
            let seq: Vec<u32> = (0..len).map(|j| ((n * 31 + j * 7) % 60) as u32).collect();
            batch.push(&seq);
        }
        // Head dims of 12 and of 64 (as in MiniLM and MPNet: whole vector tiles).
        let shapes = [
            (Arch::Bert, 48, 4),
            (Arch::Roberta, 48, 4),
            (Arch::Mpnet, 48, 4),
            (Arch::Bert, 128, 2),
            (Arch::Mpnet, 128, 2),
        ];
        for (arch, h, heads) in shapes {
            let enc = random(arch, h, heads);
            let fused = enc.forward_with(&batch, true, None).unwrap().to_vec2::<f32>().unwrap();
            let plain = enc.forward_with(&batch, false, None).unwrap().to_vec2::<f32>().unwrap();
            assert_eq!(fused.len(), batch.ids.len());
            let worst = fused
                .iter()
                .flatten()
                .zip(plain.iter().flatten())
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            // Measured 2.4e-7 to 1.1e-6 (float rounding of sums in another order); a 1% error in
            // the attention scale gives 1e-4 and more.
            assert!(worst < 1e-5, "{arch:?} h{h}: max difference {worst}");
            assert!(fused.iter().flatten().all(|x| x.is_finite()));
        }
    }
}
