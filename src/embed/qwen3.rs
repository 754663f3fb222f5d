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
use super::layers::{
    add_residual, add_rows, fused_cpu, normed_projections_host, residual_glu_ffn, Act, Glu, Linear, RmsNorm,
    TokenTable,
};
use super::rotary::{Rotary, Tables};
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
    /// `[hidden, heads·head_dim]`: its own product, so that the tiled attention can write the
    /// context over its output ([`attention::tiled_in_place`]).
    q: Linear,
    /// k and v side by side: `[hidden, 2·kv_heads·head_dim]`.
    kv: Linear,
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
    /// The feed-forward's gate: SiLU of the gate half (first), times the up half.
    glu: Glu,
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
                q: Linear::load(&a, "q_proj", h, nh * d, bias)?,
                kv: Linear::concat(&[
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
                for lin in [&mut l.q, &mut l.kv, &mut l.o, &mut l.gate_up, &mut l.down] {
                    lin.pack(products)?;
                }
            }
        }
        Ok(Self {
            embed,
            layers,
            norm: RmsNorm::load(&vb, "norm", h, eps)?,
            heads: Heads { heads: nh, kv_heads: kvh, dim: d, scale: 1.0 / (d as f32).sqrt() },
            glu: Glu { inter, act_at: 0, up_at: inter, act: Act::Silu },
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
            if tiled && fused_cpu(&x) {
                self.attend_host(layer, &x, batch, &rope)?;
            } else {
                let normed = layer.input_norm.forward(&x)?;
                let q = layer.q.forward(&normed)?.reshape((n, nh, d))?;
                let q = rope.apply(&layer.q_norm.forward(&q)?)?;
                // The projection lives only until k and v are made from it.
                let (k, v) = {
                    let kv = layer.kv.forward(&normed)?;
                    let part = |at: usize| kv.narrow(1, at * d, kvh * d).and_then(|t| t.reshape((n, kvh, d)));
                    (rope.apply(&layer.k_norm.forward(&part(0)?)?)?, part(kvh)?.contiguous()?)
                };
                drop(normed);
                let ctx = attention::padded(&q, &k, &v, &batch.cu_seqlens, self.heads, Mask::Causal)?;
                drop((q, k, v));
                x = add_residual(x, &layer.o.forward(&ctx)?)?;
            }
            x = residual_glu_ffn(x, &layer.post_norm, &layer.gate_up, &layer.down, self.glu)?;
        }
        Ok(self.norm.forward(&x)?)
    }

    /// One layer's attention and its residual on the host (`x` takes the fused CPU ops), added
    /// into `x`'s own storage. k and v are made for every token from the input normed a block at
    /// a time, normed and rotated in place; then each range of queries
    /// ([`attention::query_ranges`]) is projected, normed, rotated, attended with its context
    /// written over it, projected back and added into its rows of `x`. The ranges' rows of `x`
    /// are read before they are written, and k and v were made before any was. So neither the
    /// normed input, nor the queries, nor the context, nor the output projection is ever held
    /// whole: at 8,192 tokens in Qwen3-0.6B's shape they were 34, 67, 67 and 34 MB a layer
    /// (candle's ops on q, k and v apart had held 0.5 GB more).
    fn attend_host(&self, layer: &Layer, x: &Tensor, batch: &FlatBatch, rope: &Tables) -> Result<()> {
        let Heads { heads: nh, kv_heads: kvh, dim: d, .. } = self.heads;
        let [mut kv] = normed_projections_host(x, &layer.input_norm, [&layer.kv])?;
        let stride = 2 * kvh * d;
        layer.k_norm.apply_host(&mut kv, stride, 0, kvh)?;
        rope.apply_host(&mut kv, stride, 0, kvh);
        let view = |offset| View { data: &kv, stride, offset };
        let per = attention::rows_per_range(QUERY_ROWS, kvh);
        for rows in attention::query_ranges(&batch.cu_seqlens, per) {
            let block = x.narrow(0, rows.start, rows.len())?;
            let mut q = layer.q.forward_host(&layer.input_norm.forward(&block)?)?;
            drop(block);
            layer.q_norm.apply_host(&mut q, nh * d, 0, nh)?;
            rope.apply_host_from(rows.start, &mut q, nh * d, 0, nh);
            let first = rows.start;
            let len = rows.len();
            attention::tiled_in_place_rows(
                &mut q,
                rows,
                view(0),
                view(kvh * d),
                &batch.cu_seqlens,
                self.heads,
                Mask::Causal,
            );
            let ctx = Tensor::from_vec(q, (len, nh * d), x.device())?;
            add_rows(x, first, &layer.o.forward_host(&ctx)?)?;
        }
        Ok(())
    }
}

/// Query rows attended at a time by [`Qwen3::attend_host`] (at least; more where many threads
/// need the tasks: [`attention::rows_per_range`]).
const QUERY_ROWS: usize = 1024;

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
