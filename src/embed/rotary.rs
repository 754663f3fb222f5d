//! Rotary position embeddings (RoPE) on flat token batches, shared by the RoPE architectures
//! ([`super::modernbert`], [`super::rope_bert`], [`super::qwen3`]).
//!
//! The "rotate half" form transformers uses for these models: the head's first and second
//! halves are the two coordinates of each rotated pair, `x·cos + rotate_half(x)·sin`. Angles
//! are computed as transformers computes them: `inv_freq = 1 / θ^(2i/d)` in f32, the angle
//! `position × inv_freq` in f32, then `cos`/`sin`.
//!
//! Positions count from each sequence's first token (the flat batch has no padding), so the
//! tables are `[tokens, d/2]`, one row per token, and every device applies them with the same
//! candle ops.

use candle_core::{DType, Device, Tensor};

use super::FlatBatch;

/// The frequencies of one RoPE: `d/2` inverse frequencies for a head of `d` dimensions.
#[derive(Debug, Clone)]
pub struct Rotary {
    inv_freq: Vec<f32>,
}

impl Rotary {
    /// RoPE with base `theta` over heads of `head_dim` dimensions (even).
    #[must_use]
    pub fn new(theta: f64, head_dim: usize) -> Self {
        let half = head_dim / 2;
        // As torch: `1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))`, in f32.
        let inv_freq = (0..half)
            .map(|i| {
                let e = (2 * i) as f32 / head_dim as f32;
                1.0 / (theta as f32).powf(e)
            })
            .collect();
        Self { inv_freq }
    }

    /// Every frequency divided by `by` (in f32, as torch divides a tensor by a number): GTE's NTK
    /// scaling ([`super::rope_bert`]).
    #[must_use]
    pub fn divided(mut self, by: f64) -> Self {
        let by = by as f32;
        for f in &mut self.inv_freq {
            *f /= by;
        }
        self
    }

    /// Head dimensions rotated.
    #[must_use]
    pub fn dim(&self) -> usize {
        2 * self.inv_freq.len()
    }

    /// `cos` and `sin` tables `[tokens, d/2]` for the tokens of `batch` (positions counted from
    /// each sequence's start), in `dtype` on `device`.
    ///
    /// # Errors
    /// On a device failure.
    pub fn tables(&self, batch: &FlatBatch, device: &Device, dtype: DType) -> candle_core::Result<Tables> {
        let half = self.inv_freq.len();
        let n = batch.ids.len();
        let (mut cos, mut sin) = (Vec::with_capacity(n * half), Vec::with_capacity(n * half));
        for w in batch.cu_seqlens.windows(2) {
            for p in 0..w[1] - w[0] {
                for &f in &self.inv_freq {
                    let a = p as f32 * f;
                    cos.push(a.cos());
                    sin.push(a.sin());
                }
            }
        }
        let host = (cos.clone(), sin.clone());
        let cos = Tensor::from_vec(cos, (n, 1, half), device)?.to_dtype(dtype)?;
        let sin = Tensor::from_vec(sin, (n, 1, half), device)?.to_dtype(dtype)?;
        Ok(Tables { cos, sin, host, half })
    }
}

/// One batch's rotation tables ([`Rotary::tables`]).
pub struct Tables {
    /// `[tokens, 1, d/2]`, broadcast over heads.
    cos: Tensor,
    sin: Tensor,
    /// The same, on the host (`tokens × d/2`), for the fused CPU path.
    host: (Vec<f32>, Vec<f32>),
    half: usize,
}

impl Tables {
    /// Rotate `x`, `[tokens, heads, d]` (any heads, `d` = the rotary's dimension), with candle
    /// ops: any device and dtype.
    ///
    /// # Errors
    /// On a shape or device failure.
    pub fn apply(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let x1 = x.narrow(2, 0, self.half)?;
        let x2 = x.narrow(2, self.half, self.half)?;
        let a = (x1.broadcast_mul(&self.cos)? - x2.broadcast_mul(&self.sin)?)?;
        let b = (x2.broadcast_mul(&self.cos)? + x1.broadcast_mul(&self.sin)?)?;
        Tensor::cat(&[a, b], 2)
    }

    /// Rotate, in place, the heads of a host matrix of `tokens` rows: row `t` holds `heads`
    /// heads of `2·half` values starting at column `offset`, rows `stride` apart (a slice of a
    /// fused QKV matrix, say). The same arithmetic as [`Self::apply`].
    pub fn apply_host(&self, data: &mut [f32], stride: usize, offset: usize, heads: usize) {
        self.apply_host_from(0, data, stride, offset, heads);
    }

    /// [`Self::apply_host`] on rows `first..` of the batch: `data`'s first row is row `first`.
    pub fn apply_host_from(
        &self,
        first: usize,
        data: &mut [f32],
        stride: usize,
        offset: usize,
        heads: usize,
    ) {
        let half = self.half;
        let (cos, sin) = &self.host;
        for (t, row) in (first..).zip(data.chunks_mut(stride)) {
            let (c, s) = (&cos[t * half..(t + 1) * half], &sin[t * half..(t + 1) * half]);
            for h in 0..heads {
                let head = &mut row[offset + h * 2 * half..offset + (h + 1) * 2 * half];
                let (x1, x2) = head.split_at_mut(half);
                for i in 0..half {
                    let (a, b) = (x1[i], x2[i]);
                    x1[i] = a * c[i] - b * s[i];
                    x2[i] = b * c[i] + a * s[i];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host rotation and the candle one agree, and a rotation keeps each pair's length.
    #[test]
    fn host_and_candle_rotations_agree() {
        let rot = Rotary::new(10_000.0, 8);
        let mut batch = FlatBatch::default();
        batch.push(&[1, 2, 3]);
        batch.push(&[4, 5]);
        let t = rot.tables(&batch, &Device::Cpu, DType::F32).unwrap();
        let v: Vec<f32> = (0..5 * 2 * 8).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
        let x = Tensor::from_vec(v.clone(), (5, 2, 8), &Device::Cpu).unwrap();
        let want = t.apply(&x).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let mut got = v.clone();
        t.apply_host(&mut got, 16, 0, 2);
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() < 1e-5);
        }
        // Position 0 (the first token of each sequence) is not rotated.
        assert_eq!(&got[..16], &v[..16]);
        assert_eq!(&got[48..64], &v[48..64]);
        let len = |x: &[f32], i: usize| (x[i] * x[i] + x[i + 4] * x[i + 4]).sqrt();
        assert!((len(&got, 17) - len(&v, 17)).abs() < 1e-4);
    }
}
