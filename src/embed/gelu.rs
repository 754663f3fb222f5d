//! GELU (erf form) for f32 tensors on the CPU, vectorisable.
//!
//! candle's `gelu_erf` calls libm's scalar `erff` per element, which took 11% of a MiniLM
//! forward pass in a profile (`benches/RESULTS.md`). This op evaluates erf with the
//! rational approximation Eigen and TensorFlow use for float (odd polynomial over even
//! polynomial on [-4, 4]; a few ulp from the true value), in a branch-free loop the compiler
//! vectorises (for AVX-512 or AVX2 when the CPU has them, `simd_fn!` in [`super::fused`]), over rayon
//! chunks. Other devices and dtypes use candle's own `gelu_erf`.

use candle_core::{CpuStorage, CustomOp1, InplaceOp1, Layout, Shape, Tensor};
use rayon::prelude::*;

/// erf(x) for f32, within a few ulp. Plain multiply-adds rather than `mul_add`: without
/// the FMA target feature `mul_add` is a library call, 30× slower.
#[inline(always)]
#[must_use]
pub fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 + -2.101_024e-6;
    p = p * x2 + -5.692_506_4e-5;
    p = p * x2 + -7.349_906e-4;
    p = p * x2 + -2.954_6e-3;
    p = p * x2 + -1.609_603_3e-2;
    let p = x * p;
    let mut q = -1.456_607_2e-5_f32;
    q = q * x2 + -2.133_740_6e-4;
    q = q * x2 + -1.682_827e-3;
    q = q * x2 + -7.373_329e-3;
    q = q * x2 + -1.426_474e-2;
    p / q
}

super::fused::simd_fn! {
    /// `o[i] = gelu(s[i])`.
    pub(super) fn gelu_slice(o: &mut [f32], s: &[f32]) {
        for (o, &x) in o.iter_mut().zip(s) {
            *o = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
        }
    }
}

super::fused::simd_fn! {
    /// `o = gelu(s + b)` row by row, `b` added to every row (rows of `b.len()`).
    fn gelu_bias_rows(o: &mut [f32], s: &[f32], b: &[f32]) {
        let m = b.len();
        for (o, s) in o.chunks_mut(m).zip(s.chunks(m)) {
            for (o, (&x, &c)) in o.iter_mut().zip(s.iter().zip(b)) {
                let x = x + c;
                *o = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
    }
}

/// GELU of the input, with `bias` (one value per column) added first when given.
struct GeluErf<'a> {
    bias: Option<&'a [f32]>,
}

impl GeluErf<'_> {
    /// `o = gelu(src (+ bias))`, or in place when `src` is `None`.
    fn run(&self, o: &mut [f32], src: Option<&[f32]>, dims: &[usize]) -> candle_core::Result<()> {
        let chunk = match self.bias {
            None => 16 * 1024,
            Some(b) => {
                let m = b.len();
                if m == 0 || dims.last() != Some(&m) {
                    candle_core::bail!("seamcut-gelu-erf: bias of {m} for shape {dims:?}");
                }
                (16 * 1024 / m).max(1) * m
            }
        };
        let one = |o: &mut [f32], s: Option<&[f32]>| match (self.bias, s) {
            (None, Some(s)) => gelu_slice(o, s),
            (None, None) => gelu_slice_in_place(o),
            (Some(b), Some(s)) => gelu_bias_rows(o, s, b),
            (Some(b), None) => gelu_bias_rows_in_place(o, b),
        };
        match src {
            Some(s) => o.par_chunks_mut(chunk).zip(s.par_chunks(chunk)).for_each(|(o, s)| one(o, Some(s))),
            None => o.par_chunks_mut(chunk).for_each(|o| one(o, None)),
        }
        Ok(())
    }
}

super::fused::simd_fn! {
    /// `o[i] = gelu(o[i])`.
    fn gelu_slice_in_place(o: &mut [f32]) {
        for o in o.iter_mut() {
            let x = *o;
            *o = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
        }
    }
}

super::fused::simd_fn! {
    /// `o = gelu(o + b)` row by row, `b` added to every row (rows of `b.len()`).
    fn gelu_bias_rows_in_place(o: &mut [f32], b: &[f32]) {
        for o in o.chunks_mut(b.len()) {
            for (o, &c) in o.iter_mut().zip(b) {
                let x = *o + c;
                *o = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
    }
}

impl CustomOp1 for GeluErf<'_> {
    fn name(&self) -> &'static str {
        "seamcut-gelu-erf"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(data) = storage else { candle_core::bail!("seamcut-gelu-erf: f32 only") };
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("seamcut-gelu-erf: contiguous input only")
        };
        let src = &data[start..end];
        let mut out = vec![0f32; src.len()];
        self.run(&mut out, Some(src), layout.dims())?;
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

impl InplaceOp1 for GeluErf<'_> {
    fn name(&self) -> &'static str {
        "seamcut-gelu-erf"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> candle_core::Result<()> {
        let CpuStorage::F32(data) = storage else { candle_core::bail!("seamcut-gelu-erf: f32 only") };
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("seamcut-gelu-erf: contiguous input only")
        };
        self.run(&mut data[start..end], None, layout.dims())
    }
}

/// GELU, erf form: `0.5 x (1 + erf(x / √2))`.
///
/// # Errors
/// On a device failure.
pub fn gelu_erf(x: &Tensor) -> candle_core::Result<Tensor> {
    if x.device().is_cpu() && x.dtype() == candle_core::DType::F32 && x.is_contiguous() {
        x.apply_op1_no_bwd(&GeluErf { bias: None })
    } else {
        x.gelu_erf()
    }
}

/// GELU (erf form) of `x + bias`, `bias` added to every row: for the output of
/// [`super::fused::matmul`], f32 and contiguous on the CPU. Written over `x`'s storage, which
/// is returned: `x` must be the only tensor that holds it (fresh from the product).
///
/// # Errors
/// On another device, dtype or layout, or a bias that does not fit the last dimension.
pub fn gelu_erf_bias(x: Tensor, bias: &[f32]) -> candle_core::Result<Tensor> {
    x.inplace_op1(&GeluErf { bias: Some(bias) })?;
    Ok(x)
}

#[cfg(test)]
mod tests {
    #[test]
    fn erf_is_accurate() {
        let mut worst = 0f64;
        for i in -60_000..=60_000 {
            let x = i as f64 / 10_000.0;
            let e = (f64::from(super::erf(x as f32)) - libm_erf(x)).abs();
            worst = worst.max(e);
        }
        assert!(worst < 5e-7, "max abs error {worst}");
    }

    // erf in f64 by its series/continued fraction is overkill here; Rust's std has no erf,
    // so use the relation with the regularised incomplete gamma via a high-order series.
    fn libm_erf(x: f64) -> f64 {
        // Taylor series converges well for |x| <= 3; beyond, erf is 1 - tiny.
        if x.abs() > 3.0 {
            let t = 1.0 / (1.0 + 0.5 * x.abs());
            // Numerical Recipes erfc (relative error < 1.2e-7 is too loose); use complement series.
            let y = t
                * (-x * x - 1.265_512_23
                    + t * (1.000_023_68
                        + t * (0.374_091_96
                            + t * (0.096_784_18
                                + t * (-0.186_288_06
                                    + t * (0.278_868_07
                                        + t * (-1.135_203_98
                                            + t * (1.488_515_87
                                                + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
                    .exp();
            return if x > 0.0 { 1.0 - y } else { y - 1.0 };
        }
        let mut sum = 0.0;
        let mut term = x;
        let mut n = 0;
        while n < 200 {
            sum += term / f64::from(2 * n + 1);
            n += 1;
            term *= -x * x / f64::from(n);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }
}
