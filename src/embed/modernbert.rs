//! ModernBERT (Warner et al. 2024; transformers' `ModernBertModel`) over flat token batches.
//!
//! Token embeddings and a layer norm (no position embeddings); then pre-norm layers: the first
//! layer's attention takes the embeddings as they are, every other layer normalises first;
//! attention from one fused `Wqkv` product, rotated by RoPE; a GeGLU feed-forward (`Wi` gives
//! the input and the gate side by side, `act(input) · gate`); and a final layer norm. Norms and
//! linear layers have no biases unless `norm_bias`, `attention_bias`, `mlp_bias` say so.
//!
//! Layers alternate global and local attention: layer `i` is global when `i` is a multiple of
//! `global_attn_every_n_layers` (or as `layer_types` lists them), with RoPE base
//! `global_rope_theta`; the others attend to tokens at most `local_attention / 2` positions
//! away, with base `local_rope_theta`. transformers 5 keeps the two bases in
//! `rope_parameters` (`full_attention`, `sliding_attention`); both spellings are read.
//!
//! Attention runs through [`super::attention`]: tiled on the CPU in f32 (memory linear in the
//! length, a local layer visiting only the key blocks its window reaches), padded with candle's
//! ops elsewhere.

use std::collections::HashMap;

use candle_core::{Device, Module, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;

use super::attention::{self, Heads, Mask, View};
use super::layers::{add_residual, fused_cpu, residual_glu_ffn, Act, Glu, LayerNorm, Linear, TokenTable};
use super::rotary::Rotary;
use super::weights::Checkpoint;
use super::FlatBatch;
use crate::Result;

/// The fields of a ModernBERT `config.json` the model reads.
#[derive(Debug, Clone, Deserialize)]
pub struct ModernBertConfig {
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    #[serde(default = "default_act")]
    pub hidden_activation: String,
    #[serde(default = "default_max_positions")]
    pub max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub norm_eps: f64,
    #[serde(default)]
    pub norm_bias: bool,
    #[serde(default)]
    pub attention_bias: bool,
    #[serde(default)]
    pub mlp_bias: bool,
    #[serde(default = "default_every")]
    pub global_attn_every_n_layers: usize,
    #[serde(default = "default_local")]
    pub local_attention: usize,
    #[serde(default)]
    pub global_rope_theta: Option<f64>,
    #[serde(default)]
    pub local_rope_theta: Option<f64>,
    /// transformers 5: `full_attention` / `sliding_attention`, each with a `rope_theta`.
    #[serde(default)]
    pub rope_parameters: Option<HashMap<String, RopeParameters>>,
    /// transformers 5: `full_attention` or `sliding_attention` per layer.
    #[serde(default)]
    pub layer_types: Option<Vec<String>>,
}

/// One entry of transformers 5's `rope_parameters`.
#[derive(Debug, Clone, Deserialize)]
pub struct RopeParameters {
    #[serde(default)]
    pub rope_theta: Option<f64>,
    #[serde(default)]
    pub rope_type: Option<String>,
}

fn default_act() -> String {
    "gelu".into()
}
fn default_max_positions() -> usize {
    8192
}
fn default_eps() -> f64 {
    1e-5
}
fn default_every() -> usize {
    3
}
fn default_local() -> usize {
    128
}

impl ModernBertConfig {
    /// The RoPE base of global (`full_attention`) or local (`sliding_attention`) layers.
    fn theta(&self, global: bool) -> candle_core::Result<f64> {
        let (key, old, default) = if global {
            ("full_attention", self.global_rope_theta, 160_000.0)
        } else {
            ("sliding_attention", self.local_rope_theta, 10_000.0)
        };
        if let Some(p) = self.rope_parameters.as_ref().and_then(|r| r.get(key)) {
            if let Some(t) = p.rope_type.as_deref().filter(|t| *t != "default") {
                candle_core::bail!("unsupported rope_type {t:?} for {key} (supported: default)");
            }
            if let Some(theta) = p.rope_theta {
                return Ok(theta);
            }
        }
        Ok(old.unwrap_or(default))
    }

    /// Whether layer `i` attends globally.
    fn is_global(&self, i: usize) -> candle_core::Result<bool> {
        match &self.layer_types {
            Some(t) => match t.get(i).map(String::as_str) {
                Some("full_attention") => Ok(true),
                Some("sliding_attention") => Ok(false),
                other => candle_core::bail!("layer_types[{i}] is {other:?}"),
            },
            None => Ok(i.is_multiple_of(self.global_attn_every_n_layers.max(1))),
        }
    }
}

struct Layer {
    attn_norm: Option<LayerNorm>,
    wqkv: Linear,
    wo: Linear,
    mlp_norm: LayerNorm,
    wi: Linear,
    mlp_wo: Linear,
    global: bool,
}

/// A ModernBERT encoder.
pub struct ModernBert {
    tok: TokenTable,
    norm: LayerNorm,
    layers: Vec<Layer>,
    final_norm: LayerNorm,
    heads: usize,
    hidden: usize,
    inter: usize,
    act: Act,
    global_rope: Rotary,
    local_rope: Rotary,
    /// Half the local window: a local layer's token sees this many on either side.
    half_window: usize,
    /// Positions the model was trained for.
    pub max_positions: usize,
    device: Device,
}

/// ModernBERT's checkpoints: the masked-LM ones put the encoder under `model.`.
const CHECKPOINT: Checkpoint = Checkpoint { prefixes: &["model"], probe: "embeddings.tok_embeddings.weight" };

impl ModernBert {
    /// Load from a VarBuilder at the weights' root (a `model.` prefix, as the masked-LM
    /// checkpoints have, is detected). Each linear layer's product runs as `products` asks
    /// ([`super::packed`]: what `--dtype bf16` and `int8` mean on the CPU), packed as its layer
    /// loads, so the f32 weights are never all held at once.
    ///
    /// # Errors
    /// When a tensor is missing or has the wrong shape, or the config is not one this reads.
    pub fn load(
        vb: VarBuilder,
        cfg: &ModernBertConfig,
        products: crate::device::Products,
    ) -> candle_core::Result<Self> {
        let vb = CHECKPOINT.root(vb);
        let (h, nh, inter) = (cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size);
        if nh == 0 || !h.is_multiple_of(nh) || !(h / nh).is_multiple_of(2) {
            candle_core::bail!("hidden_size {h} does not split into {nh} heads of an even size");
        }
        let d = h / nh;
        let tok = TokenTable::load(&vb, "embeddings.tok_embeddings.weight", h, products)?;
        let eps = cfg.norm_eps;
        let norm = LayerNorm::load(&vb, "embeddings.norm", h, eps, cfg.norm_bias)?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for i in 0..cfg.num_hidden_layers {
            let l = vb.pp(format!("layers.{i}"));
            // The first layer's attention norm is the identity (and has no weights).
            let attn_norm = if i == 0 && !l.contains_tensor("attn_norm.weight") {
                None
            } else {
                Some(LayerNorm::load(&l, "attn_norm", h, eps, cfg.norm_bias)?)
            };
            layers.push(Layer {
                attn_norm,
                wqkv: Linear::load(&l, "attn.Wqkv", h, 3 * h, cfg.attention_bias)?,
                wo: Linear::load(&l, "attn.Wo", h, h, cfg.attention_bias)?,
                mlp_norm: LayerNorm::load(&l, "mlp_norm", h, eps, cfg.norm_bias)?,
                wi: Linear::load(&l, "mlp.Wi", h, 2 * inter, cfg.mlp_bias)?,
                mlp_wo: Linear::load(&l, "mlp.Wo", inter, h, cfg.mlp_bias)?,
                global: cfg.is_global(i)?,
            });
            if let Some(l) = layers.last_mut() {
                for lin in [&mut l.wqkv, &mut l.wo, &mut l.wi, &mut l.mlp_wo] {
                    lin.pack(products)?;
                }
            }
        }
        Ok(Self {
            tok,
            norm,
            layers,
            final_norm: LayerNorm::load(&vb, "final_norm", h, eps, cfg.norm_bias)?,
            heads: nh,
            hidden: h,
            inter,
            act: Act::parse(&cfg.hidden_activation)?,
            global_rope: Rotary::new(cfg.theta(true)?, d),
            local_rope: Rotary::new(cfg.theta(false)?, d),
            half_window: cfg.local_attention / 2,
            max_positions: cfg.max_position_embeddings,
            device: vb.device().clone(),
        })
    }

    /// The last layer's token states, `[tokens, hidden]`, in batch order.
    ///
    /// # Errors
    /// On a device or shape failure.
    pub fn forward(&self, batch: &FlatBatch) -> Result<Tensor> {
        self.forward_with(batch, self.tok.f32_cpu())
    }

    /// [`Self::forward`] with the tiled CPU attention (`tiled`) or candle's padded one.
    fn forward_with(&self, batch: &FlatBatch, tiled: bool) -> Result<Tensor> {
        let n = batch.ids.len();
        let (h, nh) = (self.hidden, self.heads);
        let d = h / nh;
        let ids = Tensor::new(batch.ids.as_slice(), &self.device)?;
        let mut x = self.norm.forward(&self.tok.forward(&ids)?)?;
        let dtype = x.dtype();
        let global = self.global_rope.tables(batch, &self.device, dtype)?;
        let local = self.local_rope.tables(batch, &self.device, dtype)?;
        let heads = Heads { heads: nh, kv_heads: nh, dim: d, scale: 1.0 / (d as f32).sqrt() };
        for layer in &self.layers {
            let (rope, mask) =
                if layer.global { (&global, Mask::Full) } else { (&local, Mask::Window(self.half_window)) };
            let a = match &layer.attn_norm {
                Some(nm) => nm.forward(&x)?,
                None => x.clone(),
            };
            let ctx = if tiled && fused_cpu(&a) {
                // [N, 3H]: q, k, v, heads contiguous in each, made on the host where attention
                // reads it.
                let mut host = layer.wqkv.forward_host(&a)?;
                drop(a);
                rope.apply_host(&mut host, 3 * h, 0, nh);
                rope.apply_host(&mut host, 3 * h, h, nh);
                let view = |offset| View { data: &host, stride: 3 * h, offset };
                let ctx = attention::tiled(view(0), view(h), view(2 * h), &batch.cu_seqlens, heads, mask);
                Tensor::from_vec(ctx, (n, h), &self.device)?
            } else {
                let qkv = layer.wqkv.forward(&a)?.reshape((n, 3, nh, d))?;
                let part = |i| qkv.narrow(1, i, 1).and_then(|t| t.squeeze(1));
                let (q, k, v) = (rope.apply(&part(0)?)?, rope.apply(&part(1)?)?, part(2)?.contiguous()?);
                attention::padded(&q, &k, &v, &batch.cu_seqlens, heads, mask)?
            };
            x = add_residual(x, &layer.wo.forward(&ctx)?)?;
            // Wi gives [N, 2I]: the input, then the gate.
            let g = Glu { inter: self.inter, act_at: 0, up_at: self.inter, act: self.act };
            x = residual_glu_ffn(x, &layer.mlp_norm, &layer.wi, &layer.mlp_wo, g)?;
        }
        Ok(self.final_norm.forward(&x)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::layers::testing;

    /// The tiled CPU attention and candle's padded path give the same states on the random
    /// fixture (`tests/fixtures/models/modernbert`), for a batch of mixed lengths.
    #[test]
    fn tiled_path_equals_padded_path() {
        let (cfg, vb): (ModernBertConfig, _) = testing::fixture("modernbert");
        let m = ModernBert::load(vb, &cfg, crate::device::Products::Tensor).unwrap();
        testing::tiled_equals_padded("modernbert", 500, |b, tiled| m.forward_with(b, tiled));
    }
}
