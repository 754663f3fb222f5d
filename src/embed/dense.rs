//! sentence-transformers' Dense modules: linear heads after the pooling (`2_Dense/`, …), each
//! `y = act(W·x + b)`, applied in `modules.json`'s order before the vector is normalised
//! (EmbeddingGemma's two heads, the older models' Tanh heads).
//!
//! A head's `config.json` gives `in_features`, `out_features`, `bias` and
//! `activation_function` (Identity or Tanh; another is refused by name, as are `use_residual`
//! and a head that reads anything but the pooled vector); its weights are `linear.weight` and
//! `linear.bias` in its `model.safetensors`.
//!
//! Heads whose activations are all Identity are affine, and an affine map commutes with a mean:
//! they are applied to each token's state too ([`Heads::on_tokens`]), so that the late pass's
//! span means are the vectors the heads give the span's mean. With a Tanh head the late pass is
//! refused, since no per-token form gives the same vectors.

use std::path::Path;

use candle_core::Tensor;
use serde::Deserialize;

use super::layers::Linear;
use crate::device::Compute;
use crate::{Error, Result};

#[derive(Deserialize)]
struct DenseConfig {
    in_features: usize,
    out_features: usize,
    #[serde(default = "yes")]
    bias: bool,
    #[serde(default)]
    activation_function: Option<String>,
    #[serde(default)]
    module_input_name: Option<String>,
    #[serde(default)]
    use_residual: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Activation {
    Identity,
    Tanh,
}

struct Head {
    linear: Linear,
    act: Activation,
}

/// The Dense heads of a model, in order (none for most models).
pub struct Heads {
    heads: Vec<Head>,
    /// `out_features` of the last head.
    dim: Option<usize>,
    /// The weights' dtype.
    dtype: candle_core::DType,
}

impl Heads {
    /// Load the heads in `paths` (each a Dense module's directory, in `modules.json`'s order)
    /// onto `compute`; the first must take `hidden` features.
    ///
    /// # Errors
    /// One line naming the model directory and the head: a missing or invalid file, an
    /// activation or option seamcut does not run, sizes that do not chain.
    pub fn load(dir: &Path, paths: &[std::path::PathBuf], hidden: usize, compute: &Compute) -> Result<Self> {
        let mut heads = Vec::with_capacity(paths.len());
        let mut width = hidden;
        for p in paths {
            let name = p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let bad = |m: String| Error::model(dir.display(), format!("{name}: {m}"));
            let cfg: DenseConfig = super::st_config::read_json(p, "config.json")?;
            let act = match cfg.activation_function.as_deref().map(|a| a.rsplit('.').next().unwrap_or(a)) {
                None | Some("Identity") => Activation::Identity,
                Some("Tanh") => Activation::Tanh,
                Some(other) => {
                    return Err(bad(format!(
                        "a Dense head with activation {other}, which seamcut does not run (Identity, Tanh)"
                    )))
                }
            };
            if cfg.use_residual {
                return Err(bad("a Dense head with use_residual, which seamcut does not run".into()));
            }
            if let Some(input) = cfg.module_input_name.as_deref().filter(|i| *i != "sentence_embedding") {
                return Err(bad(format!(
                    "a Dense head reading {input:?}, which seamcut does not run (only the pooled vector)"
                )));
            }
            if cfg.in_features != width {
                return Err(bad(format!(
                    "takes {} features, but what comes before it gives {width}",
                    cfg.in_features
                )));
            }
            let weights = p.join("model.safetensors");
            if !weights.is_file() {
                return Err(bad(
                    "missing model.safetensors (convert pytorch_model.bin to safetensors)".into()
                ));
            }
            let vb = super::weights::var_builder(&weights, compute.dtype, &compute.device)?;
            let mut linear = Linear::load(&vb, "linear", cfg.in_features, cfg.out_features, cfg.bias)
                .map_err(|e| {
                    bad(format!(
                        "weights do not match its config.json: {}",
                        e.to_string().lines().next().unwrap_or_default()
                    ))
                })?;
            // On the CPU in f32 (whatever `--dtype` the encoder's layers take: a head is one
            // small product), the f32 kernel's one chain per value: the same bits on every CPU.
            linear.pack(crate::device::Products::Tensor).map_err(|e| bad(e.to_string()))?;
            heads.push(Head { linear, act });
            width = cfg.out_features;
        }
        Ok(Self { dim: (!heads.is_empty()).then_some(width), heads, dtype: compute.dtype })
    }

    /// Whether there are any heads.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// The vector's size after the heads (`None`: no heads).
    #[must_use]
    pub fn dim(&self) -> Option<usize> {
        self.dim
    }

    /// Apply the heads to rows `[n, hidden]` (pooled vectors, unnormalised, or token states),
    /// computed in the weights' dtype; the rows come back in `x`'s.
    ///
    /// # Errors
    /// On a device or shape failure.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let dtype = x.dtype();
        let mut x = x.to_dtype(self.dtype)?;
        for h in &self.heads {
            x = h.linear.forward(&x.contiguous()?)?;
            if h.act == Activation::Tanh {
                x = x.tanh()?;
            }
        }
        Ok(x.to_dtype(dtype)?)
    }

    /// Apply the heads to token states `[tokens, hidden]`, for the late pass: exact only for
    /// affine heads, so a Tanh head is refused.
    ///
    /// # Errors
    /// A [`Error::Config`] for a Tanh head; a device or shape failure.
    pub fn on_tokens(&self, states: &Tensor) -> Result<Tensor> {
        if self.heads.iter().any(|h| h.act != Activation::Identity) {
            return Err(Error::Config(
                "late pooling needs the model's Dense heads to be linear (Identity); this model has a Tanh head".into(),
            ));
        }
        self.forward(states)
    }
}
