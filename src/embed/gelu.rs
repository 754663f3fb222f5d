//! GELU (erf form) for f32 tensors on the CPU, vectorisable.
//!
//! candle's `gelu_erf` calls libm's scalar `erff` per element, which took 11% of a MiniLM
//! forward pass in a profile (`benches/RESULTS.md`). This op evaluates erf with the
//! rational approximation Eigen and TensorFlow use for float (odd polynomial over even
//! polynomial on [-4, 4]; a few ulp from the true value), in a branch-free loop the compiler
//! vectorises (for AVX-512 or AVX2 when the CPU has them; the loops are in
//! `seamcut_products::rows`), over rayon chunks. Other devices and dtypes use candle's own
//! `gelu_erf`.

use candle_core::{CpuStorage, CustomOp1, InplaceOp1, Layout, Shape, Tensor};
use rayon::prelude::*;
use seamcut_products::rows;

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
        let level = super::fused::simd_level();
        let one = |o: &mut [f32], s: Option<&[f32]>| match (self.bias, s) {
            (None, Some(s)) => rows::gelu_slice(level, o, s),
            (None, None) => rows::gelu_slice_in_place(level, o),
            (Some(b), Some(s)) => rows::gelu_bias_rows(level, o, s, b),
            (Some(b), None) => rows::gelu_bias_rows_in_place(level, o, b),
        };
        match src {
            Some(s) => o.par_chunks_mut(chunk).zip(s.par_chunks(chunk)).for_each(|(o, s)| one(o, Some(s))),
            None => o.par_chunks_mut(chunk).for_each(|o| one(o, None)),
        }
        Ok(())
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
