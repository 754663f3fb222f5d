//! NomicBERT (nomic-embed-text) and GTE (gte-base-en-v1.5, gte-multilingual-base, arctic-embed
//! v2): BERT's post-norm layers with rotary positions and a gated feed-forward, over flat
//! token batches. transformers 5 builds both from the same layer (`NomicBertModel` and
//! `GteModel` share jina-embeddings-v3's), so they share this file; they differ in names,
//! biases and defaults, all read here.
//!
//! Word embeddings plus the token-type-0 row (where the model has token types), a layer norm;
//! then per layer `x = LN(x + attn(x))`, `x = LN(x + down(act(gate(x)) · up(x)))`: SwiGLU for
//! NomicBERT, GeGLU for GTE. No position embeddings: queries and keys are rotated (RoPE, the
//! rotate-half form), base `rope_theta` (NomicBERT's `rotary_emb_base`, default 1000; GTE's
//! default 160000), with GTE's fixed NTK scaling where `rope_scaling` says `ntk` (Alibaba's
//! `NTKScalingRotaryEmbedding`: base × factor, every frequency divided by factor^(2/d)).
//!
//! Weight names: the published checkpoints' (NomicBERT: `emb_ln`, `encoder.layers.N.attn.Wqkv`,
//! `attn.out_proj`, `mlp.fc11` (up), `mlp.fc12` (gate), `mlp.fc2`, `norm1`, `norm2`; GTE,
//! `model_type` `new`: `encoder.layer.N.attention.qkv_proj`, `attention.o_proj`, `attn_ln`,
//! `mlp.up_gate_proj` (up, then gate), `mlp.down_proj`, `mlp_ln`, under a `new.` prefix in
//! some), which transformers 5 also writes, or transformers 5's own module names
//! (`layers.N.self_attn.q_proj`, …, `post_attention_layernorm`, `mlp.gate_proj`,
//! `post_mlp_layernorm`). A bias is used where the checkpoint has one.

use candle_core::{Device, Module, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;

use super::attention::{self, Heads, Mask, View};
use super::layers::{fused_cpu, glu_ffn, Act, Glu, LayerNorm, Linear, TokenTable};
use super::rotary::Rotary;
use super::weights::Checkpoint;
use super::FlatBatch;
use crate::Result;

/// Which of the two families a directory holds (its `model_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `nomic_bert`.
    Nomic,
    /// `gte`, and the published checkpoints' `new`.
    Gte,
}

/// The fields of a NomicBERT or GTE `config.json` the model reads, under either the
/// transformers 5 names or the published checkpoints' (`n_embd`, `n_head`, `rotary_emb_base`, …).
#[derive(Debug, Clone, Deserialize)]
pub struct RopeBertConfig {
    #[serde(alias = "n_embd")]
    pub hidden_size: usize,
    #[serde(alias = "n_layer")]
    pub num_hidden_layers: usize,
    #[serde(alias = "n_head")]
    pub num_attention_heads: usize,
    #[serde(alias = "n_inner", default)]
    pub intermediate_size: Option<usize>,
    #[serde(alias = "activation_function", default)]
    pub hidden_act: Option<String>,
    #[serde(alias = "layer_norm_epsilon", default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(alias = "n_positions", default)]
    pub max_position_embeddings: Option<usize>,
    #[serde(default)]
    pub type_vocab_size: Option<usize>,
    #[serde(alias = "rotary_emb_base", default)]
    pub rope_theta: Option<f64>,
    /// transformers 5: `{rope_theta, rope_type}`.
    #[serde(default)]
    pub rope_parameters: Option<RopeParameters>,
    /// The published GTE checkpoints: `{type: "ntk", factor}`.
    #[serde(default)]
    pub rope_scaling: Option<RopeParameters>,
    /// NomicBERT: the share of each head rotated (1.0 in the published models).
    #[serde(default)]
    pub rotary_emb_fraction: Option<f64>,
    /// NomicBERT: interleaved pairs (false in the published models).
    #[serde(default)]
    pub rotary_emb_interleaved: Option<bool>,
    /// GTE: `layer_norm` (the published models) or `rms_norm`.
    #[serde(default)]
    pub layer_norm_type: Option<String>,
    /// NomicBERT: norms before attention and feed-forward (false in the published models).
    #[serde(default)]
    pub prenorm: Option<bool>,
    /// NomicBERT: dynamic NTK scaling of the rotation (null in the published models).
    #[serde(default)]
    pub rotary_scaling_factor: Option<f64>,
    /// GTE: attention scaled by log n (false in the published models).
    #[serde(default)]
    pub logn_attention_scale: Option<bool>,
    /// GTE: `rope` in the published models.
    #[serde(default)]
    pub position_embedding_type: Option<String>,
}

/// A RoPE parameter block (transformers 5's `rope_parameters`, the published `rope_scaling`).
#[derive(Debug, Clone, Deserialize)]
pub struct RopeParameters {
    #[serde(default)]
    pub rope_theta: Option<f64>,
    #[serde(alias = "type", default)]
    pub rope_type: Option<String>,
    #[serde(default)]
    pub factor: Option<f64>,
}

fn default_eps() -> f64 {
    1e-12
}

struct Layer {
    qkv: Linear,
    o: Linear,
    ln1: LayerNorm,
    /// Gate and up side by side (in the order `gate_at`/`up_at` say).
    gate_up: Linear,
    down: Linear,
    ln2: LayerNorm,
}

/// A NomicBERT or GTE encoder.
pub struct RopeBert {
    word: TokenTable,
    /// Token type 0's row, where the model has token types.
    typ0: Option<Tensor>,
    ln: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
    inter: usize,
    /// Column where the gate (and the up projection) starts in `gate_up`'s output.
    gate_at: usize,
    up_at: usize,
    act: Act,
    rope: Rotary,
    /// Positions the model was trained for.
    pub max_positions: usize,
    device: Device,
}

/// `name` if the checkpoint has `{name}.weight`.
fn has(vb: &VarBuilder, name: &str) -> bool {
    vb.contains_tensor(&format!("{name}.weight"))
}

/// A linear layer with a bias where the checkpoint has one.
fn linear(vb: &VarBuilder, name: &str, inp: usize, out: usize) -> candle_core::Result<Linear> {
    Linear::load(vb, name, inp, out, vb.contains_tensor(&format!("{name}.bias")))
}

fn layer_norm(vb: &VarBuilder, name: &str, h: usize, eps: f64) -> candle_core::Result<LayerNorm> {
    LayerNorm::load(vb, name, h, eps, vb.contains_tensor(&format!("{name}.bias")))
}

/// NomicBERT's and GTE's checkpoints (remote code: `new.`, `nomic_bert.`, `gte.`, or `model.`).
const CHECKPOINT: Checkpoint = Checkpoint {
    prefixes: &["new", "nomic_bert", "gte", "model"],
    probe: "embeddings.word_embeddings.weight",
};

/// The tensor names of one layer in one of the layouts these checkpoints use: one name for a
/// joined projection, several for separate ones (joined here in the order given).
struct LayerNames {
    /// The layers' names: `{at}.{i}.`.
    at: &'static str,
    /// A tensor below a layer that only this layout has.
    probe: &'static str,
    qkv: &'static [&'static str],
    o: &'static str,
    ln1: &'static str,
    gate_up: &'static [&'static str],
    /// Whether the joined gate/up projection holds the up half first (GTE's `up_gate_proj`).
    up_first: bool,
    down: &'static str,
    ln2: &'static str,
}

/// The three layouts: separate projections (sentence-transformers' conversions), NomicBERT's
/// remote code (`Wqkv`, `fc12` then `fc11`: gate first), and GTE's (`qkv_proj`, `up_gate_proj`).
const LAYOUTS: [LayerNames; 3] = [
    LayerNames {
        at: "layers",
        probe: "self_attn.q_proj.weight",
        qkv: &["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"],
        o: "self_attn.o_proj",
        ln1: "post_attention_layernorm",
        gate_up: &["mlp.gate_proj", "mlp.up_proj"],
        up_first: false,
        down: "mlp.down_proj",
        ln2: "post_mlp_layernorm",
    },
    LayerNames {
        at: "encoder.layers",
        probe: "attn.Wqkv.weight",
        qkv: &["attn.Wqkv"],
        o: "attn.out_proj",
        ln1: "norm1",
        gate_up: &["mlp.fc12", "mlp.fc11"],
        up_first: false,
        down: "mlp.fc2",
        ln2: "norm2",
    },
    LayerNames {
        at: "encoder.layer",
        probe: "attention.qkv_proj.weight",
        qkv: &["attention.qkv_proj"],
        o: "attention.o_proj",
        ln1: "attn_ln",
        gate_up: &["mlp.up_gate_proj"],
        up_first: true,
        down: "mlp.down_proj",
        ln2: "mlp_ln",
    },
];

impl LayerNames {
    /// Layer `i` in this layout: its weights, and where gate and up start in the joined
    /// projection.
    fn load(
        &self,
        vb: &VarBuilder,
        i: usize,
        h: usize,
        inter: usize,
        eps: f64,
    ) -> candle_core::Result<(Layer, (usize, usize))> {
        let l = vb.pp(format!("{}.{i}", self.at));
        // One joined projection of `parts` outputs of `each` is read whole; separate ones are
        // joined in the table's order.
        let joined = |names: &[&str], parts: usize, each: usize| -> candle_core::Result<Linear> {
            match names {
                [one] => linear(&l, one, h, parts * each),
                many => Linear::concat(
                    &many.iter().map(|n| linear(&l, n, h, each)).collect::<candle_core::Result<Vec<_>>>()?,
                ),
            }
        };
        let layer = Layer {
            qkv: joined(self.qkv, 3, h)?,
            o: linear(&l, self.o, h, h)?,
            ln1: layer_norm(&l, self.ln1, h, eps)?,
            gate_up: joined(self.gate_up, 2, inter)?,
            down: linear(&l, self.down, inter, h)?,
            ln2: layer_norm(&l, self.ln2, h, eps)?,
        };
        Ok((layer, if self.up_first { (inter, 0) } else { (0, inter) }))
    }
}

impl RopeBert {
    /// Load from a VarBuilder at the weights' root (a `new.`, `nomic_bert.` or `gte.` prefix is
    /// detected). Each linear layer's product runs as `products` asks
    /// ([`super::packed`]: what `--dtype bf16` and `int8` mean on the CPU), packed as its layer
    /// loads, so the f32 weights are never all held at once.
    ///
    /// # Errors
    /// When a tensor is missing or has the wrong shape, or the config asks for what this does
    /// not implement (partial or interleaved rotation, RMS norms, another RoPE scaling).
    pub fn load(
        vb: VarBuilder,
        cfg: &RopeBertConfig,
        family: Family,
        products: crate::device::Products,
    ) -> candle_core::Result<Self> {
        let vb = CHECKPOINT.root(vb);
        let (h, nh) = (cfg.hidden_size, cfg.num_attention_heads);
        let inter = cfg.intermediate_size.unwrap_or(4 * h);
        if nh == 0 || !h.is_multiple_of(nh) || !(h / nh).is_multiple_of(2) {
            candle_core::bail!("hidden_size {h} does not split into {nh} heads of an even size");
        }
        let d = h / nh;
        if cfg.rotary_emb_fraction.is_some_and(|f| (f - 1.0).abs() > 1e-9) {
            candle_core::bail!(
                "rotary_emb_fraction {:?} is not supported (only 1.0)",
                cfg.rotary_emb_fraction
            );
        }
        if cfg.rotary_emb_interleaved == Some(true) {
            candle_core::bail!("rotary_emb_interleaved is not supported");
        }
        if cfg.layer_norm_type.as_deref().is_some_and(|t| t != "layer_norm") {
            candle_core::bail!(
                "layer_norm_type {:?} is not supported (only layer_norm)",
                cfg.layer_norm_type
            );
        }
        if cfg.prenorm == Some(true) {
            candle_core::bail!("prenorm is not supported (the published NomicBERT models are post-norm)");
        }
        if cfg.rotary_scaling_factor.is_some() {
            candle_core::bail!("rotary_scaling_factor (dynamic NTK) is not supported");
        }
        if cfg.logn_attention_scale == Some(true) {
            candle_core::bail!("logn_attention_scale is not supported");
        }
        if cfg.position_embedding_type.as_deref().is_some_and(|t| t != "rope") {
            candle_core::bail!(
                "position_embedding_type {:?} is not supported (only rope)",
                cfg.position_embedding_type
            );
        }
        let act = match (family, cfg.hidden_act.as_deref()) {
            (Family::Nomic, None) | (_, Some("silu" | "swiglu" | "swish")) => Act::Silu,
            (Family::Gte, None) | (_, Some("gelu" | "geglu" | "gelu_python")) => Act::GeluErf,
            (_, Some("gelu_new" | "gelu_pytorch_tanh")) => Act::GeluTanh,
            (_, Some(other)) => candle_core::bail!("unsupported hidden_act {other:?}"),
        };
        let rope = rotary(cfg, family, d)?;
        let e = vb.pp("embeddings");
        let word = TokenTable::load(&e, "word_embeddings.weight", h, products)?;
        let typ0 = if e.contains_tensor("token_type_embeddings.weight") && cfg.type_vocab_size != Some(0) {
            Some(e.get_unchecked("token_type_embeddings.weight")?.get(0)?)
        } else {
            None
        };
        let eps = cfg.layer_norm_eps;
        let ln = if has(&vb, "emb_ln") {
            layer_norm(&vb, "emb_ln", h, eps)?
        } else {
            layer_norm(&e, "LayerNorm", h, eps)?
        };
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        // Gate first for the separate projections and NomicBERT's fc12/fc11 (joined so), up
        // first in GTE's up_gate_proj.
        let mut order = (0, inter);
        for i in 0..cfg.num_hidden_layers {
            let names = LAYOUTS
                .iter()
                .find(|n| vb.contains_tensor(&format!("{}.{i}.{}", n.at, n.probe)))
                .unwrap_or(&LAYOUTS[LAYOUTS.len() - 1]);
            let (layer, o) = names.load(&vb, i, h, inter, eps)?;
            if i > 0 && o != order {
                candle_core::bail!("layers {} and {i} use different weight layouts", i - 1);
            }
            order = o;
            layers.push(layer);
            if let Some(l) = layers.last_mut() {
                for lin in [&mut l.qkv, &mut l.o, &mut l.gate_up, &mut l.down] {
                    lin.pack(products)?;
                }
            }
        }
        Ok(Self {
            word,
            typ0,
            ln,
            layers,
            heads: nh,
            hidden: h,
            inter,
            gate_at: order.0,
            up_at: order.1,
            act,
            rope,
            max_positions: cfg.max_position_embeddings.unwrap_or(8192),
            device: vb.device().clone(),
        })
    }

    /// The last layer's token states, `[tokens, hidden]`, in batch order.
    ///
    /// # Errors
    /// On a device or shape failure.
    pub fn forward(&self, batch: &FlatBatch) -> Result<Tensor> {
        self.forward_with(batch, self.word.f32_cpu())
    }

    /// [`Self::forward`] with the tiled CPU attention (`tiled`) or candle's padded one.
    fn forward_with(&self, batch: &FlatBatch, tiled: bool) -> Result<Tensor> {
        let n = batch.ids.len();
        let (h, nh) = (self.hidden, self.heads);
        let d = h / nh;
        let ids = Tensor::new(batch.ids.as_slice(), &self.device)?;
        let mut x = self.word.forward(&ids)?;
        if let Some(t) = &self.typ0 {
            x = x.broadcast_add(t)?;
        }
        let mut x = self.ln.forward(&x)?;
        let rope = self.rope.tables(batch, &self.device, x.dtype())?;
        let heads = Heads { heads: nh, kv_heads: nh, dim: d, scale: 1.0 / (d as f32).sqrt() };
        for layer in &self.layers {
            let ctx = if tiled && fused_cpu(&x) {
                // [N, 3H], made on the host where attention reads it.
                let mut host = layer.qkv.forward_host(&x)?;
                rope.apply_host(&mut host, 3 * h, 0, nh);
                rope.apply_host(&mut host, 3 * h, h, nh);
                let view = |offset| View { data: &host, stride: 3 * h, offset };
                let ctx =
                    attention::tiled(view(0), view(h), view(2 * h), &batch.cu_seqlens, heads, Mask::Full);
                Tensor::from_vec(ctx, (n, h), &self.device)?
            } else {
                let qkv = layer.qkv.forward(&x)?.reshape((n, 3, nh, d))?;
                let part = |i| qkv.narrow(1, i, 1).and_then(|t| t.squeeze(1));
                let (q, k, v) = (rope.apply(&part(0)?)?, rope.apply(&part(1)?)?, part(2)?.contiguous()?);
                attention::padded(&q, &k, &v, &batch.cu_seqlens, heads, Mask::Full)?
            };
            x = layer.ln1.forward(&(x + layer.o.forward(&ctx)?)?)?;
            let g = Glu { inter: self.inter, act_at: self.gate_at, up_at: self.up_at, act: self.act };
            let y = glu_ffn(&x, &layer.gate_up, &layer.down, g)?;
            x = layer.ln2.forward(&(x + y)?)?;
        }
        Ok(x)
    }
}

/// The rotary frequencies of `cfg`.
fn rotary(cfg: &RopeBertConfig, family: Family, d: usize) -> candle_core::Result<Rotary> {
    let default_theta = match family {
        Family::Nomic => 1000.0,
        Family::Gte => 160_000.0,
    };
    let params = cfg.rope_parameters.as_ref();
    if let Some(t) = params.and_then(|p| p.rope_type.as_deref()).filter(|t| *t != "default") {
        candle_core::bail!("unsupported rope_type {t:?} (supported: default)");
    }
    let theta = params.and_then(|p| p.rope_theta).or(cfg.rope_theta).unwrap_or(default_theta);
    match &cfg.rope_scaling {
        None => Ok(Rotary::new(theta, d)),
        Some(s) => match (s.rope_type.as_deref(), s.factor) {
            (Some("ntk"), Some(f)) if f > 1.0 => {
                // NewModel's NTKScalingRotaryEmbedding without mixed_b: base × f, then every
                // frequency divided by f^(2/d).
                Ok(Rotary::new(theta * f, d).divided(f.powf(2.0 / d as f64)))
            }
            (Some("ntk"), _) => Ok(Rotary::new(theta, d)),
            (t, _) => candle_core::bail!("unsupported rope_scaling {t:?} (supported: ntk)"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::layers::testing;

    /// The tiled CPU attention and candle's padded path give the same states on both random
    /// fixtures, for a batch of mixed lengths.
    #[test]
    fn tiled_path_equals_padded_path() {
        for (arch, family) in [("nomic_bert", Family::Nomic), ("gte", Family::Gte)] {
            let (cfg, vb): (RopeBertConfig, _) = testing::fixture(arch);
            let m = RopeBert::load(vb, &cfg, family, crate::device::Products::Tensor).unwrap();
            testing::tiled_equals_padded(arch, 900, |b, tiled| m.forward_with(b, tiled));
        }
    }
}
