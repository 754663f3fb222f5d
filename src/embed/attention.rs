//! The one attention routine of the long-context architectures ([`super::modernbert`],
//! [`super::qwen3`]): each sequence's tokens attend to its own tokens only, bidirectionally,
//! within a sliding window, or causally, with grouped-query heads.
//!
//! - [`tiled`] (f32 on the CPU): straight from the flat Q, K and V matrices, in blocks of
//!   [`BLOCK`] queries × [`KEY_BLOCK`] keys with an online softmax (a running maximum and sum per
//!   query, the context rescaled as the maximum grows): no n×n score matrix is ever held, so
//!   memory grows linearly with a sequence's length; a sliding window or causal mask visits
//!   only the key blocks it can reach.
//! - [`padded`] (every other device and dtype): candle's ops on a padded
//!   `[batch, heads, longest, d]` layout with an additive mask, the score matrix held whole,
//!   as [`super::encoder`] does there.

use candle_core::{DType, Tensor};
use gemm::{gemm, Parallelism};
use rayon::prelude::*;

/// Queries (and keys) per block of [`tiled`].
pub const BLOCK: usize = 128;

/// Keys per block of [`tiled`]: each step is two products of [`BLOCK`] × this × the head size.
/// Measured on ModernBERT- and NomicBERT-base shapes at 8,192 tokens (benches/RESULTS.md): 64 × 64
/// blocks spent much of the pass in the products' per-call overhead; 128 × 256 scores fit in a
/// core's L2.
pub const KEY_BLOCK: usize = 256;

/// Which keys a query sees, within its own sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mask {
    /// Every token of the sequence.
    Full,
    /// Tokens at most this many positions away on either side (ModernBERT's local layers:
    /// half the `local_attention` window).
    Window(usize),
    /// This token and those before it (a decoder).
    Causal,
}

impl Mask {
    /// The keys query `i` sees in a sequence of `len`: `lo..hi`.
    fn range(self, i: usize, len: usize) -> (usize, usize) {
        match self {
            Mask::Full => (0, len),
            Mask::Window(w) => (i.saturating_sub(w), (i + w + 1).min(len)),
            Mask::Causal => (0, i + 1),
        }
    }
}

/// Heads and scale of an attention.
#[derive(Debug, Clone, Copy)]
pub struct Heads {
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (grouped-query attention: each serves `heads / kv_heads` query heads).
    pub kv_heads: usize,
    /// Dimensions per head.
    pub dim: usize,
    pub scale: f32,
}

/// A row-major host matrix view: row `t`'s head `h` starts at `t·stride + offset + h·dim`.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub data: &'a [f32],
    pub stride: usize,
    pub offset: usize,
}

use super::fused::SharedOut;

/// Attention over flat sequences (`cu_seqlens`), f32 on the host: `q`, `k`, `v` views of
/// `tokens` rows, the result the context `[tokens, heads·dim]`, row-major.
///
/// # Panics
/// When the views or `cu_seqlens` do not fit the token count and head shape (a caller bug).
#[must_use]
pub fn tiled(q: View, k: View, v: View, cu_seqlens: &[usize], heads: Heads, mask: Mask) -> Vec<f32> {
    let Heads { heads: nh, kv_heads, dim: d, scale } = heads;
    assert!(kv_heads > 0 && nh.is_multiple_of(kv_heads), "{nh} heads over {kv_heads} kv heads");
    let n = *cu_seqlens.last().unwrap_or(&0);
    assert!(cu_seqlens.first().is_none_or(|&f| f == 0) && cu_seqlens.windows(2).all(|w| w[0] <= w[1]));
    for (m, heads_in) in [(&q, nh), (&k, kv_heads), (&v, kv_heads)] {
        let need = if n == 0 { 0 } else { (n - 1) * m.stride + m.offset + heads_in * d };
        assert!(m.data.len() >= need, "attention: a view is too short for {n} tokens");
    }
    let h = nh * d;
    let mut out = vec![0f32; n * h];
    let group = nh / kv_heads;
    // One task per (query block, head): its first query, head, and its sequence's bounds.
    let tasks: Vec<(usize, usize, usize, usize)> = cu_seqlens
        .windows(2)
        .flat_map(|w| {
            let (s0, s1) = (w[0], w[1]);
            (0..nh)
                .flat_map(move |hd| (0..(s1 - s0).div_ceil(BLOCK)).map(move |b| (s0 + b * BLOCK, hd, s0, s1)))
        })
        .collect();
    let dst = SharedOut(out.as_mut_ptr());
    tasks.par_iter().for_each_init(
        || {
            (
                vec![0f32; BLOCK * KEY_BLOCK],
                vec![0f32; BLOCK * d],
                vec![0f32; 2 * BLOCK],
                vec![(0usize, 0usize); BLOCK],
            )
        },
        |(scores, acc, stats, live), &(q0, hd, s0, s1)| {
            let len = s1 - s0;
            let rows = BLOCK.min(s1 - q0);
            let (i0, i1) = (q0 - s0, q0 - s0 + rows); // query positions in the sequence
                                                      // The keys any query of the block sees.
            let lo = mask.range(i0, len).0;
            let hi = mask.range(i1 - 1, len).1;
            let acc = &mut acc[..rows * d];
            acc.fill(0.0);
            let (m, l) = stats.split_at_mut(BLOCK);
            m[..rows].fill(f32::NEG_INFINITY);
            l[..rows].fill(0.0);
            let kh = hd / group;
            let qp = q.data[(q0 * q.stride + q.offset + hd * d)..].as_ptr();
            let mut j0 = lo;
            while j0 < hi {
                let cols = KEY_BLOCK.min(hi - j0);
                let s = &mut scores[..rows * cols];
                let kp = k.data[((s0 + j0) * k.stride + k.offset + kh * d)..].as_ptr();
                let vp = v.data[((s0 + j0) * v.stride + v.offset + kh * d)..].as_ptr();
                // SAFETY: the query rows q0..q0+rows, key rows s0+j0..s0+j0+cols and this head's
                // columns are in bounds (checked against the views' lengths above); `s` is
                // rows×cols.
                unsafe {
                    gemm(
                        rows,
                        cols,
                        d,
                        s.as_mut_ptr(),
                        1,
                        cols as isize,
                        false,
                        qp,
                        1,
                        q.stride as isize,
                        kp,
                        k.stride as isize,
                        1,
                        0.0,
                        scale,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    );
                }
                // Each query's live keys in this block (a window's or causal mask's edge cuts it).
                for (r, span) in live[..rows].iter_mut().enumerate() {
                    let (a, b) = mask.range(i0 + r, len);
                    *span = (a.clamp(j0, j0 + cols) - j0, b.clamp(j0, j0 + cols) - j0);
                }
                online_softmax(s, cols, &live[..rows], &mut m[..rows], &mut l[..rows], acc, d);
                // acc += P · V_block
                // SAFETY: as above; `acc` is rows×d.
                unsafe {
                    gemm(
                        rows,
                        d,
                        cols,
                        acc.as_mut_ptr(),
                        1,
                        d as isize,
                        true,
                        s.as_ptr(),
                        1,
                        cols as isize,
                        vp,
                        1,
                        v.stride as isize,
                        1.0,
                        1.0,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    );
                }
                j0 += cols;
            }
            for r in 0..rows {
                let inv = if l[r] > 0.0 { 1.0 / l[r] } else { 0.0 };
                // SAFETY: row q0 + r, columns hd·d..(hd+1)·d belong to this task alone.
                let o = unsafe { std::slice::from_raw_parts_mut(dst.ptr().add((q0 + r) * h + hd * d), d) };
                for (o, a) in o.iter_mut().zip(&acc[r * d..(r + 1) * d]) {
                    *o = a * inv;
                }
            }
        },
    );
    out
}

/// Lanes of the explicit vector loops in [`online_softmax`] (an AVX-512 register of f32).
const LANES: usize = 16;

super::fused::simd_fn! {
    /// One key block's step of the online softmax, for `rows` queries: row `r` of `s`
    /// (`cols` scores) keeps its live keys `live[r]` and zeroes the rest; each live score
    /// becomes e^(score − the running maximum), the row's running sum `l[r]` and maximum `m[r]`
    /// are updated, and its context row in `acc` (`d` floats) is rescaled by how far the
    /// maximum grew. The maximum and the sum run in [`LANES`] explicit lanes, so that the loops
    /// vectorise (a plain float reduction may not be reordered by the compiler) and compile for
    /// AVX-512 or AVX2 where the CPU has them: this step was 40% of a long text's time as a
    /// scalar loop (benches/RESULTS.md).
    fn online_softmax(s: &mut [f32], cols: usize, live: &[(usize, usize)], m: &mut [f32], l: &mut [f32], acc: &mut [f32], d: usize) {
        for (r, &(a, b)) in live.iter().enumerate() {
            let row = &mut s[r * cols..(r + 1) * cols];
            if a >= b {
                row.fill(0.0);
                continue;
            }
            row[..a].fill(0.0);
            row[b..].fill(0.0);
            let live = &mut row[a..b];
            let mut lanes = [f32::NEG_INFINITY; LANES];
            let mut chunks = live.chunks_exact(LANES);
            for c in &mut chunks {
                for (x, &y) in lanes.iter_mut().zip(c) {
                    *x = if y > *x { y } else { *x };
                }
            }
            let mut mx = chunks.remainder().iter().copied().fold(f32::NEG_INFINITY, f32::max);
            for x in lanes {
                mx = mx.max(x);
            }
            let new_m = m[r].max(mx);
            let corr = super::fused::exp(m[r] - new_m);
            for x in live.iter_mut() {
                *x = super::fused::exp(*x - new_m);
            }
            let mut sums = [0f32; LANES];
            let mut chunks = live.chunks_exact(LANES);
            for c in &mut chunks {
                for (x, &y) in sums.iter_mut().zip(c) {
                    *x += y;
                }
            }
            let sum = sums.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>();
            l[r] = l[r] * corr + sum;
            m[r] = new_m;
            if corr != 1.0 {
                for x in &mut acc[r * d..(r + 1) * d] {
                    *x *= corr;
                }
            }
        }
    }
}

/// [`tiled`] on candle tensors, `q` `[tokens, heads, d]`, `k` and `v` `[tokens, kv_heads, d]`
/// (f32, on the CPU): the context `[tokens, heads·d]`.
///
/// # Errors
/// On another device or dtype, or shapes that do not fit.
pub fn tiled_tensors(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    cu_seqlens: &[usize],
    heads: Heads,
    mask: Mask,
) -> candle_core::Result<Tensor> {
    let n = q.dim(0)?;
    if cu_seqlens.last().copied().unwrap_or(0) != n || k.dim(0)? != n || v.dim(0)? != n {
        candle_core::bail!("attention: sequence offsets do not tile {n} tokens");
    }
    // Read in place (no host copies of Q, K and V: at 8,192 tokens they are most of a layer's
    // memory); a strided input is made contiguous first.
    let (q, k, v) = (q.contiguous()?, k.contiguous()?, v.contiguous()?);
    let (qg, ql) = q.storage_and_layout();
    let (kg, kl) = k.storage_and_layout();
    let (vg, vl) = v.storage_and_layout();
    let storage = super::fused::storage_f32;
    let (qd, kd, vd) =
        (storage(&qg, ql, "attention")?, storage(&kg, kl, "attention")?, storage(&vg, vl, "attention")?);
    let (qs, ks) = (heads.heads * heads.dim, heads.kv_heads * heads.dim);
    let ctx = tiled(
        View { data: qd, stride: qs, offset: 0 },
        View { data: kd, stride: ks, offset: 0 },
        View { data: vd, stride: ks, offset: 0 },
        cu_seqlens,
        heads,
        mask,
    );
    Tensor::from_vec(ctx, (n, qs), q.device())
}

/// Attention on a padded layout with candle's ops (devices other than the CPU, dtypes other
/// than f32): `q` `[tokens, heads, d]`, `k`/`v` `[tokens, kv_heads, d]`; the context
/// `[tokens, heads·d]`. Holds each batch's `[batch, heads, longest, longest]` scores.
///
/// # Errors
/// On a device or shape failure.
pub fn padded(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    cu_seqlens: &[usize],
    heads: Heads,
    mask: Mask,
) -> candle_core::Result<Tensor> {
    let dev = q.device();
    let n_seq = cu_seqlens.len().saturating_sub(1);
    let l = cu_seqlens.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0).max(1);
    let n = q.dim(0)?;
    let (nh, kvh, d) = (heads.heads, heads.kv_heads, heads.dim);
    let mut gather = vec![0u32; n_seq * l];
    let mut scatter = Vec::with_capacity(n);
    let mut bias = vec![f32::MIN; n_seq * l * l];
    for i in 0..n_seq {
        let (s, e) = (cu_seqlens[i], cu_seqlens[i + 1]);
        for (j, t) in (s..e).enumerate() {
            gather[i * l + j] = t as u32;
            scatter.push((i * l + j) as u32);
            let (a, b) = mask.range(j, e - s);
            bias[(i * l + j) * l + a..(i * l + j) * l + b].fill(0.0);
        }
    }
    let gather = Tensor::from_vec(gather, n_seq * l, dev)?;
    let scatter = Tensor::from_vec(scatter, n, dev)?;
    let bias = Tensor::from_vec(bias, (n_seq, 1, l, l), dev)?.to_dtype(q.dtype())?;
    let pad = |t: &Tensor, hh: usize| -> candle_core::Result<Tensor> {
        t.index_select(&gather, 0)?.reshape((n_seq, l, hh, d))?.transpose(1, 2)?.contiguous()
    };
    let (qp, mut kp, mut vp) = (pad(q, nh)?, pad(k, kvh)?, pad(v, kvh)?);
    if kvh != nh {
        // Each kv head serves `nh / kvh` consecutive query heads.
        let rep = nh / kvh;
        let expand = |t: &Tensor| -> candle_core::Result<Tensor> {
            t.unsqueeze(2)?.expand((n_seq, kvh, rep, l, d))?.reshape((n_seq, nh, l, d))?.contiguous()
        };
        kp = expand(&kp)?;
        vp = expand(&vp)?;
    }
    let scores = (qp.matmul(&kp.t()?)? * f64::from(heads.scale))?.broadcast_add(&bias)?;
    let probs = if scores.dtype() == DType::F32 {
        candle_nn::ops::softmax_last_dim(&scores)?
    } else {
        candle_nn::ops::softmax_last_dim(&scores.to_dtype(DType::F32)?)?.to_dtype(scores.dtype())?
    };
    let ctx = probs.matmul(&vp)?.transpose(1, 2)?.reshape((n_seq * l, nh * d))?;
    ctx.index_select(&scatter, 0)
}

#[cfg(test)]
mod tests {
    use candle_core::Device;

    use super::*;

    fn pseudo(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 4.0
            })
            .collect()
    }

    /// The tiled online softmax gives the padded full-matrix attention's context, for sequences
    /// shorter and longer than a block, every mask, and grouped-query heads.
    #[test]
    fn tiled_equals_padded() {
        let cu = vec![0usize, 1, 70, 75, 75 + 200, 75 + 200 + 64];
        let n = *cu.last().unwrap();
        for (nh, kvh, d) in [(4usize, 4usize, 8usize), (4, 2, 16), (2, 1, 64)] {
            let heads = Heads { heads: nh, kv_heads: kvh, dim: d, scale: 1.0 / (d as f32).sqrt() };
            let dev = Device::Cpu;
            let q = Tensor::from_vec(pseudo(n * nh * d, 1), (n, nh, d), &dev).unwrap();
            let k = Tensor::from_vec(pseudo(n * kvh * d, 2), (n, kvh, d), &dev).unwrap();
            let v = Tensor::from_vec(pseudo(n * kvh * d, 3), (n, kvh, d), &dev).unwrap();
            for mask in [Mask::Full, Mask::Window(3), Mask::Window(40), Mask::Causal] {
                let a = tiled_tensors(&q, &k, &v, &cu, heads, mask).unwrap();
                let b = padded(&q, &k, &v, &cu, heads, mask).unwrap();
                let a = a.flatten_all().unwrap().to_vec1::<f32>().unwrap();
                let b = b.flatten_all().unwrap().to_vec1::<f32>().unwrap();
                let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
                assert!(worst < 1e-4, "{nh}/{kvh}x{d} {mask:?}: max difference {worst}");
            }
        }
    }
}
