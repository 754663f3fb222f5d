//! The layers the long-context architectures share ([`super::modernbert`], [`super::qwen3`]):
//! a linear layer whose bias is optional, layer norm (bias optional) and RMS norm, each taking
//! the fused CPU product ([`super::fused`]) for f32 on the CPU and candle's ops elsewhere.

use candle_core::{DType, Module, Tensor};
use candle_nn::VarBuilder;

/// Whether `x` can take the fused CPU ops: f32, contiguous, on the CPU.
pub(crate) fn fused_cpu(x: &Tensor) -> bool {
    x.device().is_cpu() && x.dtype() == DType::F32 && x.is_contiguous()
}

/// `x · Wᵀ (+ b)`, the weight transposed once at load.
pub struct Linear {
    /// `[in, out]`, contiguous.
    wt: Tensor,
    b: Option<Tensor>,
}

impl Linear {
    /// `{name}.weight` `[out, in]`, and `{name}.bias` when `bias` is set.
    ///
    /// # Errors
    /// When a tensor is missing or has another shape.
    pub fn load(
        vb: &VarBuilder,
        name: &str,
        inp: usize,
        out: usize,
        bias: bool,
    ) -> candle_core::Result<Self> {
        let w = vb.get((out, inp), &format!("{name}.weight"))?;
        let b = if bias { Some(vb.get(out, &format!("{name}.bias"))?) } else { None };
        Ok(Self { wt: w.t()?.contiguous()?, b })
    }

    /// Several layers with the same input (Q, K, V) as one: their outputs side by side.
    ///
    /// # Errors
    /// When their shapes or biases do not fit together.
    pub fn concat(parts: &[Self]) -> candle_core::Result<Self> {
        let wts: Vec<&Tensor> = parts.iter().map(|p| &p.wt).collect();
        let b = if parts.iter().all(|p| p.b.is_some()) {
            let bs: Vec<&Tensor> = parts.iter().filter_map(|p| p.b.as_ref()).collect();
            Some(Tensor::cat(&bs, 0)?)
        } else if parts.iter().any(|p| p.b.is_some()) {
            candle_core::bail!("cannot join linear layers with and without biases")
        } else {
            None
        };
        Ok(Self { wt: Tensor::cat(&wts, 1)?.contiguous()?, b })
    }

    /// Apply to `x` `[tokens, in]`.
    ///
    /// # Errors
    /// On a shape or device failure.
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        if fused_cpu(x) {
            return match &self.b {
                Some(b) => super::fused::linear(x, &self.wt, b),
                None => super::fused::matmul(x, &self.wt),
            };
        }
        let y = x.matmul(&self.wt)?;
        match &self.b {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }
}

/// Layer normalisation over the last dimension; a zero bias where the model has none.
pub struct LayerNorm {
    w: Tensor,
    b: Tensor,
    eps: f32,
}

impl LayerNorm {
    /// `{name}.weight`, and `{name}.bias` when `bias` is set.
    ///
    /// # Errors
    /// When a tensor is missing or has another shape.
    pub fn load(vb: &VarBuilder, name: &str, h: usize, eps: f64, bias: bool) -> candle_core::Result<Self> {
        let w = vb.get(h, &format!("{name}.weight"))?;
        let b = if bias { vb.get(h, &format!("{name}.bias"))? } else { w.zeros_like()? };
        Ok(Self { w, b, eps: eps as f32 })
    }
}

impl Module for LayerNorm {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        candle_nn::ops::layer_norm(x, &self.w, &self.b, self.eps)
    }
}

/// RMS normalisation over the last dimension (Llama's and Qwen's `RMSNorm`: in f32, then
/// scaled by the weight).
pub struct RmsNorm {
    w: Tensor,
    eps: f32,
}

impl RmsNorm {
    /// `{name}.weight` of `h` values.
    ///
    /// # Errors
    /// When the tensor is missing or has another shape.
    pub fn load(vb: &VarBuilder, name: &str, h: usize, eps: f64) -> candle_core::Result<Self> {
        Ok(Self { w: vb.get(h, &format!("{name}.weight"))?, eps: eps as f32 })
    }
}

impl Module for RmsNorm {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        if x.dtype() == DType::F32 {
            return candle_nn::ops::rms_norm(&x.contiguous()?, &self.w, self.eps);
        }
        let y = candle_nn::ops::rms_norm(
            &x.to_dtype(DType::F32)?.contiguous()?,
            &self.w.to_dtype(DType::F32)?,
            self.eps,
        )?;
        y.to_dtype(x.dtype())
    }
}

/// What the architectures' tests share: a random-weight fixture (`tests/fixtures/models/ARCH`,
/// `tests/fixtures/gen_long_models.py`) and the check that the tiled CPU attention and
/// candle's padded path give the same token states.
#[cfg(test)]
pub(crate) mod testing {
    use candle_core::{DType, Device, Tensor};
    use candle_nn::VarBuilder;

    use crate::embed::FlatBatch;

    /// The fixture's config (parsed as `C`) and weights.
    pub(crate) fn fixture<C: serde::de::DeserializeOwned>(arch: &str) -> (C, VarBuilder<'static>) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models").join(arch);
        let cfg = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
        // SAFETY: a test fixture, mapped read-only.
        let vb = unsafe {
            VarBuilder::from_mmaped_safetensors(&[dir.join("model.safetensors")], DType::F32, &Device::Cpu)
        }
        .unwrap();
        (cfg, vb)
    }

    /// `forward(batch, tiled)` of a batch of mixed lengths (ids below `vocab`) through both
    /// paths agree within 1e-4.
    pub(crate) fn tiled_equals_padded(
        arch: &str,
        vocab: usize,
        forward: impl Fn(&FlatBatch, bool) -> crate::Result<Tensor>,
    ) {
        let mut batch = FlatBatch::default();
        for len in [1usize, 200, 7, 65] {
            let seq: Vec<u32> = (0..len).map(|j| ((j * 37 + len) % vocab) as u32).collect();
            batch.push(&seq);
        }
        let host = |t: Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let a = host(forward(&batch, true).unwrap());
        let b = host(forward(&batch, false).unwrap());
        let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
        assert!(worst < 1e-4, "{arch}: max difference {worst}");
    }
}
