//! The similarity stage: sentence vectors in, what the rules read out.
//!
//! [`band`] computes each sentence's cosine similarity to the `width` sentences before it
//! with matrix products on the embedder's device (blocks of rows against the rows they
//! can see), and brings back only the band: `O(n·width)` on the host, never `O(n²)`.
//! [`window_series_mean`] and [`combined_distances_mean`] derive the minima and breakpoint
//! inputs from the vectors; the `concat` variants (re-embedding the window text, as
//! chonkie and LangChain do) live with the chunker, which owns the embedder.

use candle_core::Tensor;

use crate::band::Band;
use crate::device::Compute;
use crate::Result;

/// Rows per block: a block's product is `BLOCK × (BLOCK + width)` floats.
const BLOCK: usize = 1024;

/// The band of `n = vectors.len() / dim` L2-normalised vectors.
///
/// # Errors
/// On a device failure.
pub fn band(vectors: &[f32], dim: usize, width: usize, compute: &Compute) -> Result<Band> {
    let width = width.max(1);
    if compute.device.is_cpu() {
        return Ok(band_cpu(vectors, dim, width));
    }
    band_blocked(vectors, dim, width, compute)
}

/// The bands of many documents at once from their unit vectors on the device (`[rows, dim]`,
/// document `d` being rows `offsets[d]..offsets[d+1]`), one kernel launch for all
/// ([`crate::kernels::band_many`]); only `rows × max(widths)` floats come back to the host,
/// cut to each document's own width. Vectors on the CPU take the host code ([`band`]).
///
/// # Errors
/// If the offsets and widths do not match, or the device fails.
pub fn bands_many(vectors: &Tensor, offsets: &[usize], widths: &[usize]) -> Result<Vec<Band>> {
    if widths.len() + 1 != offsets.len() {
        return Err(crate::Error::Internal(format!(
            "{} widths for {} documents",
            widths.len(),
            offsets.len().saturating_sub(1)
        )));
    }
    if !vectors.device().is_cuda() {
        // Vectors not on a CUDA device (a CPU model, a model without a device path, Metal,
        // where the band kernel is not written): the host code, document by document, each
        // band's rows in parallel (the kernels' reference is sequential).
        let (rows, dim) = vectors.dims2()?;
        if offsets.last().copied().unwrap_or(0) != rows {
            return Err(crate::Error::Internal(format!("document offsets do not cover {rows} rows")));
        }
        let host = vectors.to_dtype(candle_core::DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        return Ok(offsets
            .windows(2)
            .zip(widths)
            .map(|(w, &width)| band_cpu(&host[w[0] * dim..w[1] * dim], dim, width.max(1)))
            .collect());
    }
    let wmax = widths.iter().copied().max().unwrap_or(1).max(1);
    let flat = crate::kernels::band_many(vectors, offsets, wmax)?.flatten_all()?.to_vec1::<f32>()?;
    Ok(offsets
        .windows(2)
        .zip(widths)
        .map(|(w, &width)| {
            let width = width.max(1);
            let mut data = Vec::with_capacity((w[1] - w[0]) * width);
            for r in w[0]..w[1] {
                data.extend_from_slice(&flat[r * wmax..r * wmax + width]);
            }
            Band::from_parts(w[1] - w[0], width, data)
        })
        .collect())
}

/// The band by blocked matrix products on the compute device (GPU backends).
fn band_blocked(vectors: &[f32], dim: usize, width: usize, compute: &Compute) -> Result<Band> {
    let n = vectors.len().checked_div(dim).unwrap_or(0);
    let e = Tensor::from_slice(vectors, (n, dim), &compute.device)?;
    let mut data = vec![0f32; n * width];
    let mut r0 = 0;
    while r0 < n {
        let r1 = (r0 + BLOCK).min(n);
        let c0 = r0.saturating_sub(width);
        let rows = e.narrow(0, r0, r1 - r0)?;
        let cols = e.narrow(0, c0, r1 - c0)?;
        let s = rows.matmul(&cols.t()?)?.to_dtype(candle_core::DType::F32)?.to_vec2::<f32>()?;
        for (bi, row) in s.iter().enumerate() {
            let i = r0 + bi;
            for k in 0..width.min(i) {
                data[i * width + k] = row[i - 1 - k - c0];
            }
        }
        r0 = r1;
    }
    Ok(Band::from_parts(n, width, data))
}

/// The band on the CPU: `n·width` dot products, rows in parallel. On a CPU the blocked
/// matrix product computes `BLOCK + width` columns per row to keep `width` of them (a
/// thousand times the work for the width-1 bands of minima and breakpoints) and allocates a
/// block of results per step; the direct loop does only the work the band needs (a novel
/// chunked by Max–Min: band time 0.10 s → 0.01 s).
fn band_cpu(vectors: &[f32], dim: usize, width: usize) -> Band {
    use rayon::prelude::*;
    let n = vectors.len().checked_div(dim).unwrap_or(0);
    let mut data = vec![0f32; n * width];
    data.par_chunks_mut(width).enumerate().with_min_len(256).for_each(|(i, row)| {
        let a = &vectors[i * dim..(i + 1) * dim];
        for (k, out) in row.iter_mut().enumerate().take(width.min(i)) {
            let j = i - 1 - k;
            *out = dot8(a, &vectors[j * dim..(j + 1) * dim]);
        }
    });
    Band::from_parts(n, width, data)
}

/// Dot product in eight f32 lanes (the compiler vectorises it; a plain iterator sum is kept
/// sequential by float associativity).
fn dot8(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Dot product of two vectors, accumulated in f64 (the cosine of two unit vectors).
#[must_use]
pub fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum()
}

fn mean_unit(vectors: &[f32], dim: usize, from: usize, to: usize) -> Vec<f32> {
    let mut m = vec![0f32; dim];
    for i in from..to {
        for (a, b) in m.iter_mut().zip(&vectors[i * dim..(i + 1) * dim]) {
            *a += b;
        }
    }
    crate::embed::normalize(&mut m);
    m
}

/// chonkie's similarity series with the window embedding taken as the mean of the window's
/// sentence vectors: `cos(mean(e_i..e_{i+w}), e_{i+w})`, `n − w` values.
#[must_use]
pub fn window_series_mean(vectors: &[f32], dim: usize, w: usize) -> Vec<f64> {
    let n = vectors.len().checked_div(dim).unwrap_or(0);
    if n <= w {
        return Vec::new();
    }
    (0..n - w)
        .map(|i| dot(&mean_unit(vectors, dim, i, i + w), &vectors[(i + w) * dim..(i + w + 1) * dim]))
        .collect()
}

/// LangChain's distances with each buffered sentence embedded as the mean of its
/// neighbours' vectors: `1 − cos(c_i, c_{i+1})`, `c_i = mean(e_{i−b}..e_{i+b})`.
#[must_use]
pub fn combined_distances_mean(vectors: &[f32], dim: usize, buffer: usize) -> Vec<f64> {
    let n = vectors.len().checked_div(dim).unwrap_or(0);
    let combined: Vec<Vec<f32>> =
        (0..n).map(|i| mean_unit(vectors, dim, i.saturating_sub(buffer), (i + buffer + 1).min(n))).collect();
    (0..n.saturating_sub(1)).map(|i| 1.0 - dot(&combined[i], &combined[i + 1])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_band_matches_the_cpu_reference() {
        let (n, dim, width) = (300, 8, 17);
        let mut v: Vec<f32> = (0..n * dim).map(|i| ((i * 7919) % 101) as f32 / 50.0 - 1.0).collect();
        for row in v.chunks_mut(dim) {
            crate::embed::normalize(row);
        }
        let slow = Band::from_vectors(&v, dim, width);
        let direct = band(&v, dim, width, &Compute::cpu()).unwrap();
        let blocked = band_blocked(&v, dim, width, &Compute::cpu()).unwrap();
        for fast in [direct, blocked] {
            for i in 0..n {
                for (a, b) in fast.row(i).iter().zip(slow.row(i)) {
                    assert!((a - b).abs() < 1e-5, "row {i}");
                }
            }
        }
    }
}
