//! seamcut's own device kernels (CUDA C in `kernels/`, compiled at run time through NVRTC, so
//! running needs only the driver) and their CPU references.
//!
//! - [`pool`]: pooling (mean over each sequence's tokens, or its first token) fused with L2
//!   normalisation, over a flat `[tokens, dim]` batch of hidden states with `cu_seqlens`
//!   offsets (`kernels/pool.cu`). It replaces the dense `n × tokens` pooling matrix the
//!   host would otherwise build and upload per batch.
//! - [`pool_spans`]: sums of row ranges of a `[rows, dim]` matrix, optionally L2-normalised
//!   (`kernels/pool_spans.cu`): late pooling sums each (window, span) run of a batch's token
//!   states, then each span's runs, so token states stay on the device ([`crate::embed::late`]).
//! - [`band_many`]: the similarity band of every document of a batch in one launch over the
//!   concatenated unit vectors (`kernels/band.cu`); only `rows × width` floats come back.
//!
//! All are candle custom ops: on a CUDA tensor they launch the kernel; on any other device they
//! run the CPU reference ([`pool_reference`], [`pool_spans_reference`], [`band_reference`]),
//! which is what the kernels are tested against. The CPU pipeline does not call `pool` and
//! `band_many` (it keeps its own code); the late pass calls `pool_spans` on every device.

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Shape, Tensor};

use crate::Result;

/// `kernels/pool.cu`.
pub const POOL_CU: &str = include_str!("../kernels/pool.cu");
/// `kernels/band.cu`.
pub const BAND_CU: &str = include_str!("../kernels/band.cu");
/// `kernels/pool_spans.cu`.
pub const POOL_SPANS_CU: &str = include_str!("../kernels/pool_spans.cu");
/// Every kernel source with its file name, for the NVRTC compile test.
pub const SOURCES: &[(&str, &str)] =
    &[("pool.cu", POOL_CU), ("band.cu", BAND_CU), ("pool_spans.cu", POOL_SPANS_CU)];
/// The entry points each source must export.
pub const ENTRY_POINTS: &[(&str, &[&str])] = &[
    ("pool.cu", &["pool_l2_f32", "pool_l2_f16", "pool_l2_bf16"]),
    ("band.cu", &["band_f32"]),
    ("pool_spans.cu", &["pool_spans_f32", "pool_spans_f16", "pool_spans_bf16"]),
];
/// NVRTC options. PTX for compute 7.5 (the oldest architecture NVRTC 13 targets): the driver
/// JIT-compiles it for the card at hand (Hopper included) and caches the result.
pub const NVRTC_OPTIONS: &[&str] = &["--gpu-architecture=compute_75", "--std=c++17"];

/// Threads per block for both kernels (a multiple of 32, at most 1024).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
const THREADS: u32 = 256;

/// Pooling over a flat batch: for each sequence `s` (rows `cu_seqlens[s]..cu_seqlens[s+1]` of
/// the `[tokens, dim]` matrix `hidden`), the mean of its rows, or its first row when `cls`, then
/// L2-normalised (norm clamped at 1e-12), in f32. An empty sequence gives a zero row.
#[must_use]
pub fn pool_reference(hidden: &[f32], cu_seqlens: &[u32], dim: usize, cls: bool) -> Vec<f32> {
    let n = cu_seqlens.len().saturating_sub(1);
    let mut out = vec![0f32; n * dim];
    for (s, o) in out.chunks_mut(dim.max(1)).enumerate().take(n) {
        let (a, b) = (cu_seqlens[s] as usize, cu_seqlens[s + 1] as usize);
        if b <= a {
            continue;
        }
        let rows = if cls { a..a + 1 } else { a..b };
        for t in rows.clone() {
            for (x, y) in o.iter_mut().zip(&hidden[t * dim..(t + 1) * dim]) {
                *x += y;
            }
        }
        let inv = 1.0 / rows.len() as f32;
        o.iter_mut().for_each(|x| *x *= inv);
        let norm = o.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        o.iter_mut().for_each(|x| *x /= norm);
    }
    out
}

/// Sums of row ranges: `out[r]` is the sum of rows `starts[r]..ends[r]` of the `[rows, dim]`
/// matrix `x`, added in row order in f32, then L2-normalised when `unit` (norm clamped at
/// 1e-12). An empty range gives a zero row. Ranges may overlap and come in any order.
#[must_use]
pub fn pool_spans_reference(x: &[f32], starts: &[u32], ends: &[u32], dim: usize, unit: bool) -> Vec<f32> {
    let mut out = vec![0f32; starts.len() * dim];
    for ((o, &a), &b) in out.chunks_mut(dim.max(1)).zip(starts).zip(ends) {
        for t in a as usize..b as usize {
            for (x, y) in o.iter_mut().zip(&x[t * dim..(t + 1) * dim]) {
                *x += y;
            }
        }
        if unit {
            let norm = o.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            o.iter_mut().for_each(|x| *x /= norm);
        }
    }
    out
}

/// The band of many documents laid end to end: `first[i]` is the row where row `i`'s document
/// starts; `band[i·width + k] = v_i · v_{i−1−k}` when `i−1−k ≥ first[i]`, else 0.
#[must_use]
pub fn band_reference(vectors: &[f32], first: &[u32], dim: usize, width: usize) -> Vec<f32> {
    let n = first.len();
    let mut band = vec![0f32; n * width];
    for i in 0..n {
        for k in 0..width {
            let Some(j) = i.checked_sub(1 + k) else { break };
            if j < first[i] as usize {
                break;
            }
            let (a, b) = (&vectors[i * dim..(i + 1) * dim], &vectors[j * dim..(j + 1) * dim]);
            band[i * width + k] = a.iter().zip(b).map(|(x, y)| x * y).sum();
        }
    }
    band
}

/// Pool and normalise a flat batch of hidden states (`[tokens, dim]`, any float dtype) into
/// `[sequences, dim]` f32 unit vectors, on the tensor's device.
///
/// # Errors
/// If `hidden` is not a matrix, `cu_seqlens` does not end at its row count, or the device fails.
pub fn pool(hidden: &Tensor, cu_seqlens: &[u32], cls: bool) -> Result<Tensor> {
    let (tokens, dim) = hidden.dims2()?;
    if tokens == 0 && cu_seqlens.iter().all(|&c| c == 0) {
        // Nothing to pool: no launch and no zero-byte device allocation (which the driver
        // refuses); zero vectors on the host, as the reference gives.
        let n = cu_seqlens.len().saturating_sub(1);
        return Ok(Tensor::zeros((n, dim), DType::F32, &candle_core::Device::Cpu)?);
    }
    if cu_seqlens.last().copied().unwrap_or(0) as usize != tokens {
        return Err(crate::Error::Internal(format!(
            "cu_seqlens ends at {:?} for {tokens} token rows",
            cu_seqlens.last()
        )));
    }
    Ok(hidden.contiguous()?.apply_op1_no_bwd(&PoolOp { cu_seqlens: cu_seqlens.to_vec(), cls })?)
}

/// Sums of row ranges of `x` (`[rows, dim]`, f32, f16 or bf16): `[ranges, dim]` f32, range `r`
/// being rows `starts[r]..ends[r]`, L2-normalised rows when `unit`; on `x`'s device (see
/// [`pool_spans_reference`]). With no ranges, or no rows, the (zero) result is a host tensor:
/// no launch and no zero-byte device allocation.
///
/// # Errors
/// If `x` is not a matrix, `starts` and `ends` differ in length, a range is reversed or ends
/// past the last row, or the device fails.
pub fn pool_spans(x: &Tensor, starts: &[u32], ends: &[u32], unit: bool) -> Result<Tensor> {
    let (rows, dim) = x.dims2()?;
    if starts.len() != ends.len() {
        return Err(crate::Error::Internal(format!("{} range starts for {} ends", starts.len(), ends.len())));
    }
    if let Some((a, b)) = starts.iter().zip(ends).find(|&(&a, &b)| a > b || b as usize > rows) {
        return Err(crate::Error::Internal(format!("row range {a}..{b} outside {rows} rows")));
    }
    if starts.is_empty() || rows == 0 {
        return Ok(Tensor::zeros((starts.len(), dim), DType::F32, &candle_core::Device::Cpu)?);
    }
    Ok(x.contiguous()?.apply_op1_no_bwd(&PoolSpansOp {
        starts: starts.to_vec(),
        ends: ends.to_vec(),
        unit,
    })?)
}

/// The band (`width` look-back) of every document of a batch: `vectors` is `[rows, dim]` f32,
/// documents end to end, document `d` being rows `offsets[d]..offsets[d+1]`. Returns
/// `[rows, width]` f32, in [`crate::band::Band`]'s row layout.
///
/// # Errors
/// If the offsets do not cover the rows, or the device fails.
pub fn band_many(vectors: &Tensor, offsets: &[usize], width: usize) -> Result<Tensor> {
    let (rows, _) = vectors.dims2()?;
    if rows == 0 && offsets.iter().all(|&o| o == 0) {
        // No rows: no launch and no zero-byte device allocation; an empty host tensor.
        return Ok(Tensor::zeros((0, width.max(1)), DType::F32, &candle_core::Device::Cpu)?);
    }
    if offsets.first().copied().unwrap_or(0) != 0
        || offsets.last().copied().unwrap_or(0) != rows
        || offsets.windows(2).any(|w| w[1] < w[0])
    {
        return Err(crate::Error::Internal(format!("document offsets do not cover {rows} rows")));
    }
    let mut first = Vec::with_capacity(rows);
    for w in offsets.windows(2) {
        first.extend(std::iter::repeat_n(w[0] as u32, w[1] - w[0]));
    }
    let v = vectors.to_dtype(DType::F32)?.contiguous()?;
    Ok(v.apply_op1_no_bwd(&BandOp { first, width: width.max(1) })?)
}

struct PoolOp {
    cu_seqlens: Vec<u32>,
    cls: bool,
}

struct BandOp {
    first: Vec<u32>,
    width: usize,
}

struct PoolSpansOp {
    starts: Vec<u32>,
    ends: Vec<u32>,
    unit: bool,
}

fn contiguous<'a, T>(data: &'a [T], layout: &Layout) -> candle_core::Result<&'a [T]> {
    match layout.contiguous_offsets() {
        Some((a, b)) => Ok(&data[a..b]),
        None => candle_core::bail!("seamcut kernels need contiguous inputs"),
    }
}

impl CustomOp1 for PoolOp {
    fn name(&self) -> &'static str {
        "seamcut-pool-l2"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let dim = layout.dims()[1];
        let n = self.cu_seqlens.len().saturating_sub(1);
        let hidden: Vec<f32> = match storage {
            CpuStorage::F32(v) => contiguous(v, layout)?.to_vec(),
            CpuStorage::F16(v) => contiguous(v, layout)?.iter().map(|x| x.to_f32()).collect(),
            CpuStorage::BF16(v) => contiguous(v, layout)?.iter().map(|x| x.to_f32()).collect(),
            _ => candle_core::bail!("pooling needs f32, f16 or bf16 hidden states"),
        };
        Ok((CpuStorage::F32(pool_reference(&hidden, &self.cu_seqlens, dim, self.cls)), Shape::from((n, dim))))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        storage: &candle_core::CudaStorage,
        layout: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        cuda::pool(self, storage, layout)
    }
}

impl CustomOp1 for PoolSpansOp {
    fn name(&self) -> &'static str {
        "seamcut-pool-spans"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let dim = layout.dims()[1];
        let out = match storage {
            CpuStorage::F32(v) => {
                pool_spans_reference(contiguous(v, layout)?, &self.starts, &self.ends, dim, self.unit)
            }
            CpuStorage::F16(v) => {
                let x: Vec<f32> = contiguous(v, layout)?.iter().map(|x| x.to_f32()).collect();
                pool_spans_reference(&x, &self.starts, &self.ends, dim, self.unit)
            }
            CpuStorage::BF16(v) => {
                let x: Vec<f32> = contiguous(v, layout)?.iter().map(|x| x.to_f32()).collect();
                pool_spans_reference(&x, &self.starts, &self.ends, dim, self.unit)
            }
            _ => candle_core::bail!("span pooling needs f32, f16 or bf16 rows"),
        };
        Ok((CpuStorage::F32(out), Shape::from((self.starts.len(), dim))))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        storage: &candle_core::CudaStorage,
        layout: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        cuda::pool_spans(self, storage, layout)
    }
}

impl CustomOp1 for BandOp {
    fn name(&self) -> &'static str {
        "seamcut-band"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(v) = storage else { candle_core::bail!("the band needs f32 vectors") };
        let dim = layout.dims()[1];
        let band = band_reference(contiguous(v, layout)?, &self.first, dim, self.width);
        Ok((CpuStorage::F32(band), Shape::from((self.first.len(), self.width))))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        storage: &candle_core::CudaStorage,
        layout: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        cuda::band(self, storage, layout)
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    //! Compiling the sources once per process with NVRTC and launching them on candle's stream.
    use std::sync::OnceLock;

    use candle_core::backend::BackendStorage;
    use candle_core::cuda_backend::cudarc::driver::{LaunchConfig, PushKernelArg};
    use candle_core::cuda_backend::cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
    use candle_core::cuda_backend::WrapErr;
    use candle_core::{CudaStorage, DType, Layout, Shape};

    use super::{BandOp, PoolOp, PoolSpansOp, THREADS};

    /// PTX text per source, compiled on first use (NVRTC takes a few hundred milliseconds).
    fn ptx(name: &'static str, src: &'static str) -> candle_core::Result<&'static str> {
        static POOL: OnceLock<Result<String, String>> = OnceLock::new();
        static BAND: OnceLock<Result<String, String>> = OnceLock::new();
        static SPANS: OnceLock<Result<String, String>> = OnceLock::new();
        let cell = match name {
            "pool.cu" => &POOL,
            "pool_spans.cu" => &SPANS,
            _ => &BAND,
        };
        let compiled = cell.get_or_init(|| {
            let opts = CompileOptions {
                options: super::NVRTC_OPTIONS.iter().map(|s| (*s).to_string()).collect(),
                name: Some(name.to_string()),
                ..CompileOptions::default()
            };
            compile_ptx_with_opts(src, opts)
                .map(|p| p.to_src())
                .map_err(|e| format!("NVRTC failed on {name}: {e}"))
        });
        match compiled {
            Ok(p) => Ok(p.as_str()),
            Err(e) => candle_core::bail!("{e}"),
        }
    }

    fn rows_of(layout: &Layout) -> candle_core::Result<(usize, usize, usize)> {
        let Some((a, _)) = layout.contiguous_offsets() else {
            candle_core::bail!("seamcut kernels need contiguous inputs")
        };
        let d = layout.dims();
        Ok((a, d[0], d[1]))
    }

    pub(super) fn pool(
        op: &PoolOp,
        storage: &CudaStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CudaStorage, Shape)> {
        let dev = &storage.device;
        let (start, _, dim) = rows_of(layout)?;
        let n = op.cu_seqlens.len().saturating_sub(1);
        let stream = dev.cuda_stream();
        let cu = stream.clone_htod(&op.cu_seqlens).w()?;
        let mut out = dev.alloc_zeros::<f32>(n * dim)?;
        let ptx = ptx("pool.cu", super::POOL_CU)?;
        let cfg =
            LaunchConfig { grid_dim: (n as u32, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let (dim_i, cls) = (dim as i32, i32::from(op.cls));
        if n > 0 {
            match storage.dtype() {
                DType::F32 => {
                    let f = dev.get_or_load_custom_func("pool_l2_f32", "seamcut_pool", ptx)?;
                    let src = storage.as_cuda_slice::<f32>()?.slice(start..);
                    let mut b = f.builder();
                    b.arg(&src).arg(&cu).arg(&mut out).arg(&dim_i).arg(&cls);
                    // SAFETY: the kernel reads cu_seqlens[0..=n] and rows below its last entry
                    // (checked against the tensor's rows by `kernels::pool`), writes n × dim floats.
                    unsafe { b.launch(cfg) }.w()?;
                }
                DType::F16 => {
                    let f = dev.get_or_load_custom_func("pool_l2_f16", "seamcut_pool", ptx)?;
                    let src = storage.as_cuda_slice::<half::f16>()?.slice(start..);
                    let mut b = f.builder();
                    b.arg(&src).arg(&cu).arg(&mut out).arg(&dim_i).arg(&cls);
                    // SAFETY: as above.
                    unsafe { b.launch(cfg) }.w()?;
                }
                DType::BF16 => {
                    let f = dev.get_or_load_custom_func("pool_l2_bf16", "seamcut_pool", ptx)?;
                    let src = storage.as_cuda_slice::<half::bf16>()?.slice(start..);
                    let mut b = f.builder();
                    b.arg(&src).arg(&cu).arg(&mut out).arg(&dim_i).arg(&cls);
                    // SAFETY: as above.
                    unsafe { b.launch(cfg) }.w()?;
                }
                other => candle_core::bail!("pooling needs f32, f16 or bf16 hidden states, not {other:?}"),
            }
        }
        Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from((n, dim))))
    }

    pub(super) fn pool_spans(
        op: &PoolSpansOp,
        storage: &CudaStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CudaStorage, Shape)> {
        let dev = &storage.device;
        let (start, _, dim) = rows_of(layout)?;
        let n = op.starts.len();
        let stream = dev.cuda_stream();
        let starts = stream.clone_htod(&op.starts).w()?;
        let ends = stream.clone_htod(&op.ends).w()?;
        let mut out = dev.alloc_zeros::<f32>(n * dim)?;
        let ptx = ptx("pool_spans.cu", super::POOL_SPANS_CU)?;
        let cfg =
            LaunchConfig { grid_dim: (n as u32, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let (dim_i, unit) = (dim as i32, i32::from(op.unit));
        match storage.dtype() {
            DType::F32 => {
                let f = dev.get_or_load_custom_func("pool_spans_f32", "seamcut_pool_spans", ptx)?;
                let src = storage.as_cuda_slice::<f32>()?.slice(start..);
                let mut b = f.builder();
                b.arg(&src).arg(&starts).arg(&ends).arg(&mut out).arg(&dim_i).arg(&unit);
                // SAFETY: every range lies within the tensor's rows (checked by
                // `kernels::pool_spans`, which also never calls this with no ranges); the kernel
                // writes n × dim floats.
                unsafe { b.launch(cfg) }.w()?;
            }
            DType::F16 => {
                let f = dev.get_or_load_custom_func("pool_spans_f16", "seamcut_pool_spans", ptx)?;
                let src = storage.as_cuda_slice::<half::f16>()?.slice(start..);
                let mut b = f.builder();
                b.arg(&src).arg(&starts).arg(&ends).arg(&mut out).arg(&dim_i).arg(&unit);
                // SAFETY: as above.
                unsafe { b.launch(cfg) }.w()?;
            }
            DType::BF16 => {
                let f = dev.get_or_load_custom_func("pool_spans_bf16", "seamcut_pool_spans", ptx)?;
                let src = storage.as_cuda_slice::<half::bf16>()?.slice(start..);
                let mut b = f.builder();
                b.arg(&src).arg(&starts).arg(&ends).arg(&mut out).arg(&dim_i).arg(&unit);
                // SAFETY: as above.
                unsafe { b.launch(cfg) }.w()?;
            }
            other => candle_core::bail!("span pooling needs f32, f16 or bf16 rows, not {other:?}"),
        }
        Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from((n, dim))))
    }

    pub(super) fn band(
        op: &BandOp,
        storage: &CudaStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CudaStorage, Shape)> {
        let dev = &storage.device;
        let (start, rows, dim) = rows_of(layout)?;
        let width = op.width;
        let stream = dev.cuda_stream();
        let first = stream.clone_htod(&op.first).w()?;
        let mut out = dev.alloc_zeros::<f32>(rows * width)?;
        if rows > 0 {
            let ptx = ptx("band.cu", super::BAND_CU)?;
            let f = dev.get_or_load_custom_func("band_f32", "seamcut_band", ptx)?;
            let src = storage.as_cuda_slice::<f32>()?.slice(start..);
            let cfg = LaunchConfig {
                grid_dim: (rows as u32, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: (dim * std::mem::size_of::<f32>()) as u32,
            };
            let (dim_i, width_i) = (dim as i32, width as i32);
            let mut b = f.builder();
            b.arg(&src).arg(&first).arg(&mut out).arg(&dim_i).arg(&width_i);
            // SAFETY: first[i] <= i for every row (built by `kernels::band_many`), so the kernel
            // reads rows 0..rows and writes rows × width floats.
            unsafe { b.launch(cfg) }.w()?;
        }
        Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from((rows, width))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn unit_rows(n: usize, dim: usize, seed: usize) -> Vec<f32> {
        let mut v: Vec<f32> =
            (0..n * dim).map(|i| (((i + seed) * 7919 % 211) as f32 / 105.0) - 1.0).collect();
        for r in v.chunks_mut(dim) {
            crate::embed::normalize(r);
        }
        v
    }

    #[test]
    fn pool_reference_means_then_normalises() {
        // Two sequences of 2 and 1 tokens, dim 2, and an empty one.
        let hidden = [1.0, 0.0, 3.0, 4.0, 0.0, 2.0];
        let out = pool_reference(&hidden, &[0, 2, 3, 3], 2, false);
        let mean: [f32; 2] = [2.0, 2.0];
        let n = (8f32).sqrt();
        assert_eq!(out.len(), 6);
        assert!((out[0] - mean[0] / n).abs() < 1e-6 && (out[1] - mean[1] / n).abs() < 1e-6);
        assert_eq!(&out[2..4], &[0.0, 1.0]);
        assert_eq!(&out[4..6], &[0.0, 0.0]);
        let cls = pool_reference(&hidden, &[0, 2, 3, 3], 2, true);
        assert_eq!(&cls[0..2], &[1.0, 0.0]);
    }

    #[test]
    fn band_many_keeps_documents_apart_and_matches_each_documents_band() {
        let dim = 8;
        let sizes = [5usize, 1, 0, 9];
        let total: usize = sizes.iter().sum();
        let v = unit_rows(total, dim, 3);
        let mut offsets = vec![0];
        for s in sizes {
            offsets.push(offsets.last().unwrap() + s);
        }
        let width = 4;
        let t = Tensor::from_slice(&v, (total, dim), &Device::Cpu).unwrap();
        let got = band_many(&t, &offsets, width).unwrap().to_vec2::<f32>().unwrap();
        for w in offsets.windows(2) {
            let own = crate::band::Band::from_vectors(&v[w[0] * dim..w[1] * dim], dim, width);
            for (r, row) in got[w[0]..w[1]].iter().enumerate() {
                for (k, got) in row.iter().enumerate() {
                    let want = if k < r { own.row(r)[k] } else { 0.0 };
                    assert!((got - want).abs() < 1e-5, "row {} k {k}", w[0] + r);
                }
            }
        }
        assert!(band_many(&t, &[0, 3], width).is_err(), "offsets must cover the rows");
    }

    #[test]
    fn pool_op_accepts_half_precision_and_checks_offsets() {
        let hidden = unit_rows(6, 4, 1);
        let t = Tensor::from_slice(&hidden, (6, 4), &Device::Cpu).unwrap();
        let f32_out = pool(&t, &[0, 4, 6], false).unwrap().to_vec2::<f32>().unwrap();
        let f16_out =
            pool(&t.to_dtype(DType::F16).unwrap(), &[0, 4, 6], false).unwrap().to_vec2::<f32>().unwrap();
        for (a, b) in f32_out.iter().flatten().zip(f16_out.iter().flatten()) {
            assert!((a - b).abs() < 2e-3);
        }
        assert!(pool(&t, &[0, 4, 5], false).is_err());
    }

    #[test]
    fn pool_spans_sums_row_ranges_and_checks_them() {
        // Rows (1, 0), (3, 4), (0, 2); ranges: two rows, empty, the last row, all, the first.
        let x = [1.0, 0.0, 3.0, 4.0, 0.0, 2.0];
        let (starts, ends) = ([0u32, 1, 2, 0, 0], [2u32, 1, 3, 3, 1]);
        let sums = pool_spans_reference(&x, &starts, &ends, 2, false);
        assert_eq!(sums, vec![4.0, 4.0, 0.0, 0.0, 0.0, 2.0, 4.0, 6.0, 1.0, 0.0]);
        let unit = pool_spans_reference(&x, &starts, &ends, 2, true);
        let r = 0.5f32.sqrt();
        assert!((unit[0] - r).abs() < 1e-6 && (unit[1] - r).abs() < 1e-6);
        assert_eq!(&unit[2..4], &[0.0, 0.0], "an empty range stays a zero row");
        assert_eq!(&unit[4..6], &[0.0, 1.0]);
        // The op on a CPU tensor (f32 and f16) is the reference.
        let t = Tensor::from_slice(&x, (3, 2), &Device::Cpu).unwrap();
        let got =
            pool_spans(&t, &starts, &ends, false).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(got, sums);
        let half = t.to_dtype(DType::F16).unwrap();
        let got =
            pool_spans(&half, &starts, &ends, true).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert!(got.iter().zip(&unit).all(|(a, b)| (a - b).abs() < 1e-3));
        // Bad ranges are errors, not out-of-bounds reads.
        assert!(pool_spans(&t, &[0], &[4], false).is_err());
        assert!(pool_spans(&t, &[2], &[1], false).is_err());
        assert!(pool_spans(&t, &[0, 1], &[1], false).is_err());
        // No ranges, or no rows: zeros without a launch.
        assert_eq!(pool_spans(&t, &[], &[], false).unwrap().dims(), &[0, 2]);
        let empty = Tensor::zeros((0, 2), DType::F32, &Device::Cpu).unwrap();
        assert_eq!(
            pool_spans(&empty, &[0], &[0], true).unwrap().to_vec2::<f32>().unwrap(),
            vec![vec![0f32; 2]]
        );
    }

    #[test]
    fn empty_batches_give_empty_results_without_a_launch() {
        let t = Tensor::zeros((0, 4), DType::F32, &Device::Cpu).unwrap();
        assert_eq!(pool(&t, &[0], false).unwrap().dims(), &[0, 4]);
        assert_eq!(pool(&t, &[0, 0], true).unwrap().to_vec2::<f32>().unwrap(), vec![vec![0f32; 4]]);
        assert_eq!(band_many(&t, &[0], 3).unwrap().dims(), &[0, 3]);
        assert_eq!(band_many(&t, &[0, 0, 0], 1).unwrap().dims(), &[0, 1]);
        assert!(band_many(&t, &[0, 1], 1).is_err());
    }
}
