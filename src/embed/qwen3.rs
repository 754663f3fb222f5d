//! Qwen3 (transformers' `Qwen3Model`, the network of Qwen3-Embedding) over flat token batches.
//!
//! A causal decoder: token embeddings, then pre-norm layers (RMSNorm; grouped-query attention
//! whose queries and keys are RMS-normalised per head before RoPE; a SwiGLU feed-forward,
//! `down(silu(gate(x)) · up(x))`), and a final RMSNorm. No biases unless `attention_bias`.
//! Each token sees itself and the tokens before it in its own sequence, so a sequence's states
//! do not depend on padding or on the batch; its vector is its last token's state (the EOS its
//! tokenizer appends), pooled outside the model.
//!
//! Attention runs through [`super::attention`] with the causal mask: tiled on the CPU in f32,
//! padded with candle's ops elsewhere.

use candle_core::{Device, Module, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;

use super::attention::{self, Heads, Mask, View};
use super::layers::{fused_cpu, glu_ffn, Act, Linear, RmsNorm, TokenTable};
use super::rotary::Rotary;
use super::weights::Checkpoint;
use super::FlatBatch;
use crate::Result;

/// The fields of a Qwen3 `config.json` the model reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Qwen3Config {
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    #[serde(default)]
    pub num_key_value_heads: Option<usize>,
    #[serde(default)]
    pub head_dim: Option<usize>,
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    #[serde(default)]
    pub rope_theta: Option<f64>,
    /// transformers 5: `{rope_theta, rope_type}`.
    #[serde(default)]
    pub rope_parameters: Option<super::modernbert::RopeParameters>,
    #[serde(default = "default_max_positions")]
    pub max_position_embeddings: usize,
    #[serde(default)]
    pub attention_bias: bool,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default)]
    pub use_sliding_window: bool,
}

fn default_eps() -> f64 {
    1e-6
}
fn default_max_positions() -> usize {
    32_768
}
fn default_act() -> String {
    "silu".into()
}

struct Layer {
    input_norm: RmsNorm,
    /// q, k and v side by side: `[hidden, (heads + 2·kv_heads)·head_dim]`.
    qkv: Linear,
    q_norm: RmsNorm,
    k_norm: RmsNorm,
    o: Linear,
    post_norm: RmsNorm,
    /// gate and up side by side.
    gate_up: Linear,
    down: Linear,
}

/// A Qwen3 decoder used as an encoder (its last layer's states).
pub struct Qwen3 {
    embed: TokenTable,
    layers: Vec<Layer>,
    norm: RmsNorm,
    heads: Heads,
    inter: usize,
    rope: Rotary,
    /// Positions the model was trained for.
    pub max_positions: usize,
    device: Device,
}

/// Qwen3's checkpoints: the causal-LM ones put the decoder under `model.`.
const CHECKPOINT: Checkpoint = Checkpoint { prefixes: &["model"], probe: "embed_tokens.weight" };

impl Qwen3 {
    /// Load from a VarBuilder at the weights' root (a `model.` prefix, as causal-LM checkpoints
    /// have, is detected), each linear layer's product run as `products` asks
    /// ([`super::packed`]: what `--dtype bf16` and `int8` mean on the CPU), packed as its layer
    /// loads, so the f32 weights are never all held at once.
    ///
    /// # Errors
    /// When a tensor is missing or has the wrong shape, or the config is not one this reads.
    pub fn load(
        vb: VarBuilder,
        cfg: &Qwen3Config,
        products: crate::device::Products,
    ) -> candle_core::Result<Self> {
        let vb = CHECKPOINT.root(vb);
        if cfg.use_sliding_window {
            candle_core::bail!("use_sliding_window is not supported (Qwen3-Embedding does not use it)");
        }
        if cfg.hidden_act != "silu" {
            candle_core::bail!("unsupported hidden_act {:?} (supported: silu)", cfg.hidden_act);
        }
        let (h, nh, inter) = (cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size);
        let kvh = cfg.num_key_value_heads.unwrap_or(nh);
        let d = cfg.head_dim.unwrap_or(h / nh.max(1));
        if nh == 0 || kvh == 0 || !nh.is_multiple_of(kvh) || !d.is_multiple_of(2) {
            candle_core::bail!("{nh} heads over {kvh} kv heads of {d} dimensions do not fit");
        }
        let theta = match &cfg.rope_parameters {
            Some(p) => {
                if let Some(t) = p.rope_type.as_deref().filter(|t| *t != "default") {
                    candle_core::bail!("unsupported rope_type {t:?} (supported: default)");
                }
                p.rope_theta.or(cfg.rope_theta)
            }
            None => cfg.rope_theta,
        }
        .unwrap_or(1_000_000.0);
        let embed = TokenTable::load(&vb, "embed_tokens.weight", h, products)?;
        let eps = cfg.rms_norm_eps;
        let bias = cfg.attention_bias;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for i in 0..cfg.num_hidden_layers {
            let l = vb.pp(format!("layers.{i}"));
            let a = l.pp("self_attn");
            let m = l.pp("mlp");
            layers.push(Layer {
                input_norm: RmsNorm::load(&l, "input_layernorm", h, eps)?,
                qkv: Linear::concat(&[
                    Linear::load(&a, "q_proj", h, nh * d, bias)?,
                    Linear::load(&a, "k_proj", h, kvh * d, bias)?,
                    Linear::load(&a, "v_proj", h, kvh * d, bias)?,
                ])?,
                q_norm: RmsNorm::load(&a, "q_norm", d, eps)?,
                k_norm: RmsNorm::load(&a, "k_norm", d, eps)?,
                o: Linear::load(&a, "o_proj", nh * d, h, bias)?,
                post_norm: RmsNorm::load(&l, "post_attention_layernorm", h, eps)?,
                gate_up: Linear::concat(&[
                    Linear::load(&m, "gate_proj", h, inter, false)?,
                    Linear::load(&m, "up_proj", h, inter, false)?,
                ])?,
                down: Linear::load(&m, "down_proj", inter, h, false)?,
            });
            if let Some(l) = layers.last_mut() {
                for lin in [&mut l.qkv, &mut l.o, &mut l.gate_up, &mut l.down] {
                    lin.pack(products)?;
                }
            }
        }
        Ok(Self {
            embed,
            layers,
            norm: RmsNorm::load(&vb, "norm", h, eps)?,
            heads: Heads { heads: nh, kv_heads: kvh, dim: d, scale: 1.0 / (d as f32).sqrt() },
            inter,
            rope: Rotary::new(theta, d),
            max_positions: cfg.max_position_embeddings,
            device: vb.device().clone(),
        })
    }

    /// The last layer's token states (after the final norm), `[tokens, hidden]`, in batch order.
    ///
    /// # Errors
    /// On a device or shape failure.
    pub fn forward(&self, batch: &FlatBatch) -> Result<Tensor> {
        self.forward_with(batch, self.embed.f32_cpu())
    }

    /// [`Self::forward`] with the tiled CPU attention (`tiled`) or candle's padded one.
    fn forward_with(&self, batch: &FlatBatch, tiled: bool) -> Result<Tensor> {
        let n = batch.ids.len();
        let Heads { heads: nh, kv_heads: kvh, dim: d, .. } = self.heads;
        let ids = Tensor::new(batch.ids.as_slice(), &self.device)?;
        let mut x = self.embed.forward(&ids)?;
        let rope = self.rope.tables(batch, &self.device, x.dtype())?;
        for layer in &self.layers {
            let ctx = if tiled && fused_cpu(&x) {
                // [N, (heads + 2·kv_heads)·d], made on the host where attention reads it, q and
                // k normed and rotated in place: candle's ops on q, k and v apart held 0.5 GB
                // more at 8,192 tokens (Qwen3-0.6B's shape).
                let mut host = layer.qkv.forward_host(&layer.input_norm.forward(&x)?)?;
                let stride = (nh + 2 * kvh) * d;
                layer.q_norm.apply_host(&mut host, stride, 0, nh)?;
                layer.k_norm.apply_host(&mut host, stride, nh * d, kvh)?;
                rope.apply_host(&mut host, stride, 0, nh);
                rope.apply_host(&mut host, stride, nh * d, kvh);
                let view = |offset| View { data: &host, stride, offset };
                let ctx = attention::tiled(
                    view(0),
                    view(nh * d),
                    view((nh + kvh) * d),
                    &batch.cu_seqlens,
                    self.heads,
                    Mask::Causal,
                );
                Tensor::from_vec(ctx, (n, nh * d), &self.device)?
            } else {
                // The projection lives only until q, k and v are made from it.
                let (q, k, v) = {
                    let qkv = layer.qkv.forward(&layer.input_norm.forward(&x)?)?;
                    let part = |at: usize, heads: usize| {
                        qkv.narrow(1, at * d, heads * d).and_then(|t| t.reshape((n, heads, d)))
                    };
                    let q = rope.apply(&layer.q_norm.forward(&part(0, nh)?)?)?;
                    let k = rope.apply(&layer.k_norm.forward(&part(nh, kvh)?)?)?;
                    (q, k, part(nh + kvh, kvh)?.contiguous()?)
                };
                attention::padded(&q, &k, &v, &batch.cu_seqlens, self.heads, Mask::Causal)?
            };
            x = (x + layer.o.forward(&ctx)?)?;
            let normed = layer.post_norm.forward(&x)?;
            x = (x + glu_ffn(&normed, &layer.gate_up, &layer.down, self.inter, 0, self.inter, Act::Silu)?)?;
        }
        Ok(self.norm.forward(&x)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::layers::testing;

    /// The tiled CPU attention and candle's padded path give the same states on the random
    /// fixture (`tests/fixtures/models/qwen3`), for a batch of mixed lengths.
    #[test]
    fn tiled_path_equals_padded_path() {
        let (cfg, vb): (Qwen3Config, _) = testing::fixture("qwen3");
        let m = Qwen3::load(vb, &cfg, crate::device::Products::Tensor).unwrap();
        testing::tiled_equals_padded("qwen3", 500, |b, tiled| m.forward_with(b, tiled));
    }
}
