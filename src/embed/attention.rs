//! The one attention routine of the long-context architectures ([`super::modernbert`],
//! [`super::qwen3`]): each sequence's tokens attend to its own tokens only, bidirectionally,
//! within a sliding window, or causally, with grouped-query heads.
//!
//! - [`tiled`] (f32 on the CPU): straight from the flat Q, K and V matrices, in blocks of
//!   [`BLOCK`] queries × [`KEY_BLOCK`] keys with an online softmax (a running maximum and sum per
//!   query, the context rescaled as the maximum grows): no n×n score matrix is ever held, so
//!   memory grows linearly with a sequence's length; a sliding window or causal mask visits
//!   only the key blocks it can reach. Each task packs the keys and values its queries reach
//!   once, and [`tiles`]' kernels compute the two products (why not `gemm`: see there) and
//!   the online softmax between them.
//! - [`padded`] (every other device and dtype): candle's ops on a padded
//!   `[batch, heads, longest, d]` layout with an additive mask, the score matrix held whole,
//!   as [`super::encoder`] does there.

use candle_core::{DType, Tensor};
use rayon::prelude::*;

/// Queries (and keys) per block of [`tiled`].
pub const BLOCK: usize = 128;

/// Keys per block of [`tiled`]: each step is two products of [`BLOCK`] × this × the head size.
/// Measured on ModernBERT- and NomicBERT-base shapes at 8,192 tokens (benches/RESULTS.md), when
/// the products were `gemm`'s: 64 × 64 blocks spent much of the pass in the products' per-call
/// overhead; 128 × 256 scores fit in a core's L2.
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
pub use seamcut_products::attention::View;

use super::fused::SharedOut;
use seamcut_products::attention as tiles;

/// Attention over flat sequences (`cu_seqlens`), f32 on the host: `q`, `k`, `v` views of
/// `tokens` rows, the result the context `[tokens, heads·dim]`, row-major.
///
/// # Panics
/// When the views or `cu_seqlens` do not fit the token count and head shape (a caller bug).
#[must_use]
pub fn tiled(q: View, k: View, v: View, cu_seqlens: &[usize], heads: Heads, mask: Mask) -> Vec<f32> {
    let n = check(k, v, cu_seqlens, heads);
    let need = if n == 0 { 0 } else { (n - 1) * q.stride + q.offset + heads.heads * heads.dim };
    assert!(q.data.len() >= need, "attention: a view is too short for {n} tokens");
    let mut out: Vec<f32> = Vec::with_capacity(n * heads.heads * heads.dim);
    // Not zeroed first: the tasks write every row of every head once.
    run(Queries::View(q), 0..n, k, v, cu_seqlens, heads, mask, SharedOut(out.as_mut_ptr()));
    // SAFETY: every (sequence, query block, head) was written by one task of `run`, and they
    // tile the n × h values.
    unsafe { out.set_len(n * heads.heads * heads.dim) };
    out
}

/// [`tiled`] with the queries `q` `[tokens, heads·dim]` (row-major) overwritten by the context:
/// no buffer of the context's size beside them (Qwen3-0.6B at 8,192 tokens: 67 MB a layer).
///
/// # Panics
/// As [`tiled`], and when `q` is not `tokens × heads·dim`.
pub fn tiled_in_place(q: &mut [f32], k: View, v: View, cu_seqlens: &[usize], heads: Heads, mask: Mask) {
    let n = check(k, v, cu_seqlens, heads);
    tiled_in_place_rows(q, 0..n, k, v, cu_seqlens, heads, mask);
}

/// [`tiled_in_place`] for the query rows `rows` of the flat batch alone: `q` holds those rows,
/// `[rows.len(), heads·dim]`, and their context is written over them; the keys and values are
/// the whole batch's. So a layer can project, attend and project back one range of queries at
/// a time (Qwen3: no `[tokens, heads·dim]` queries held whole, 67 MB at 8,192 tokens). Each
/// query's context is the one [`tiled`] gives it, bit for bit.
///
/// # Panics
/// As [`tiled`], when `q` is not `rows.len() × heads·dim`, and when `rows` does not start and
/// end on a block boundary of its sequences ([`query_ranges`] makes ranges that do).
#[allow(clippy::too_many_arguments)]
pub fn tiled_in_place_rows(
    q: &mut [f32],
    rows: std::ops::Range<usize>,
    k: View,
    v: View,
    cu_seqlens: &[usize],
    heads: Heads,
    mask: Mask,
) {
    let n = check(k, v, cu_seqlens, heads);
    assert!(rows.start <= rows.end && rows.end <= n, "attention: rows {rows:?} of {n}");
    assert!(
        on_block_boundary(cu_seqlens, rows.start) && on_block_boundary(cu_seqlens, rows.end),
        "attention: rows {rows:?} do not start and end on blocks"
    );
    assert_eq!(
        q.len(),
        rows.len() * heads.heads * heads.dim,
        "attention: the queries are not {} rows",
        rows.len()
    );
    run(Queries::Output, rows, k, v, cu_seqlens, heads, mask, SharedOut(q.as_mut_ptr()));
}

/// Whether row `r` of the flat batch starts a query block of [`tiled`] (or is the end).
fn on_block_boundary(cu_seqlens: &[usize], r: usize) -> bool {
    let n = cu_seqlens.last().copied().unwrap_or(0);
    r == n || cu_seqlens.windows(2).any(|w| w[0] <= r && r < w[1] && (r - w[0]).is_multiple_of(BLOCK))
}

/// Consecutive ranges of the flat batch's rows that cover it, each cut where a query block
/// starts and holding at least `rows` rows where the batch has them (the last may hold fewer):
/// the ranges [`tiled_in_place_rows`] takes.
#[must_use]
pub fn query_ranges(cu_seqlens: &[usize], rows: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = cu_seqlens.first().copied().unwrap_or(0);
    for w in cu_seqlens.windows(2) {
        let mut at = w[0];
        while at < w[1] {
            at = (at + BLOCK).min(w[1]);
            if at - start >= rows.max(1) {
                out.push(start..at);
                start = at;
            }
        }
    }
    let n = cu_seqlens.last().copied().unwrap_or(0);
    if start < n {
        out.push(start..n);
    }
    out
}

/// Query rows per range when a layer attends one range of queries at a time
/// ([`tiled_in_place_rows`]): at least `rows`, and enough blocks that each call still makes two
/// tasks a thread (a task is one key/value head's [`TASK_BLOCKS`] query blocks).
#[must_use]
pub fn rows_per_range(rows: usize, kv_heads: usize) -> usize {
    let tasks = 2 * rayon::current_num_threads();
    rows.max(BLOCK * TASK_BLOCKS * tasks.div_ceil(kv_heads.max(1)))
}

/// The token count, after checking the keys' and values' views and `cu_seqlens`.
fn check(k: View, v: View, cu_seqlens: &[usize], heads: Heads) -> usize {
    let Heads { heads: nh, kv_heads, dim: d, .. } = heads;
    assert!(kv_heads > 0 && nh.is_multiple_of(kv_heads), "{nh} heads over {kv_heads} kv heads");
    let n = *cu_seqlens.last().unwrap_or(&0);
    assert!(cu_seqlens.first().is_none_or(|&f| f == 0) && cu_seqlens.windows(2).all(|w| w[0] <= w[1]));
    for m in [&k, &v] {
        let need = if n == 0 { 0 } else { (n - 1) * m.stride + m.offset + kv_heads * d };
        assert!(m.data.len() >= need, "attention: a view is too short for {n} tokens");
    }
    n
}

/// Where [`run`]'s tasks read their queries.
#[derive(Clone, Copy)]
enum Queries<'a> {
    View(View<'a>),
    /// In the output, `[tokens, heads·dim]`: each task copies its block's queries out before it
    /// writes the block's context over them.
    Output,
}

/// The tasks of [`tiled`] and [`tiled_in_place_rows`], writing the context of the query rows
/// `rows` (on block boundaries) `[rows.len(), heads·dim]` through `dst`, row `rows.start` first.
#[allow(clippy::too_many_arguments)]
fn run(
    q: Queries,
    rows: std::ops::Range<usize>,
    k: View,
    v: View,
    cu_seqlens: &[usize],
    heads: Heads,
    mask: Mask,
    dst: SharedOut,
) {
    let Heads { heads: nh, kv_heads, dim: d, .. } = heads;
    let h = nh * d;
    let group = nh / kv_heads;
    let r0 = rows.start;
    // One task per (sequence, key/value head, up to TASK_BLOCKS query blocks within `rows`):
    // it packs the keys and values its queries see once, for every query head of the group.
    let tasks: Vec<(usize, usize, usize, usize)> = cu_seqlens
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] < rows.end && rows.start < w[1])
        .flat_map(|(seq, w)| {
            let first = (rows.start.max(w[0]) - w[0]) / BLOCK;
            let end = (rows.end.min(w[1]) - w[0]).div_ceil(BLOCK);
            (0..kv_heads).flat_map(move |kh| {
                (first..end).step_by(TASK_BLOCKS).map(move |b| (seq, kh, b, TASK_BLOCKS.min(end - b)))
            })
        })
        .collect();
    tasks.par_iter().for_each_init(Scratch::new, |sc, &(seq, kh, b0, nb)| {
        let (s0, s1) = (cu_seqlens[seq], cu_seqlens[seq + 1]);
        let len = s1 - s0;
        // The keys any query of the task sees, from a whole panel (the ranges' ends only grow
        // with the query's position).
        let lo = mask.range(b0 * BLOCK, len).0 / tiles::PANEL * tiles::PANEL;
        let hi = mask.range(((b0 + nb) * BLOCK).min(len) - 1, len).1;
        sc.keys.fill(k, v, kh, s0 + lo..s0 + hi, d, super::fused::simd_level());
        let mut copied = std::mem::take(&mut sc.queries);
        for b in b0..b0 + nb {
            let (t0, rows) = (s0 + b * BLOCK, BLOCK.min(len - b * BLOCK));
            // The block's first row in the output (and in the queries).
            let o0 = t0 - r0;
            for hd in kh * group..(kh + 1) * group {
                let (qs, q_stride) = match q {
                    Queries::View(q) => (&q.data[o0 * q.stride + q.offset + hd * d..], q.stride),
                    Queries::Output => {
                        copied.clear();
                        for r in 0..rows {
                            // SAFETY: row t0 + r, columns hd·d..(hd+1)·d belong to this task alone
                            // (tasks split the sequences, heads and query blocks), and it writes
                            // them only below, after this copy.
                            let row = unsafe {
                                std::slice::from_raw_parts(dst.ptr().add((o0 + r) * h + hd * d), d)
                            };
                            copied.extend_from_slice(row);
                        }
                        (copied.as_slice(), d)
                    }
                };
                let ctx = query_block(sc, qs, q_stride, b * BLOCK, len, lo, heads, mask);
                for (r, row) in ctx.chunks_exact(d).enumerate() {
                    // SAFETY: as above: this task's rows and head alone.
                    let o =
                        unsafe { std::slice::from_raw_parts_mut(dst.ptr().add((o0 + r) * h + hd * d), d) };
                    o.copy_from_slice(row);
                }
            }
        }
        sc.queries = copied;
    });
}

/// Query blocks per task of [`tiled`]: enough that packing the keys is a small part of a
/// task, few enough that a long text still makes many tasks.
const TASK_BLOCKS: usize = 8;

/// A task's buffers, reused from task to task.
struct Scratch {
    keys: tiles::PackedKeys,
    scores: Vec<f32>,
    acc: Vec<f32>,
    stats: Vec<f32>,
    live: Vec<(usize, usize)>,
    /// A block's queries for one head, where they are read from the output.
    queries: Vec<f32>,
}

impl Scratch {
    fn new() -> Self {
        Self {
            keys: tiles::PackedKeys::default(),
            scores: vec![0f32; BLOCK * KEY_BLOCK],
            acc: Vec::new(),
            stats: vec![0f32; 2 * BLOCK],
            live: vec![(0, 0); BLOCK],
            queries: Vec::new(),
        }
    }
}

/// One head's context for the queries of sequence positions `i0..` (one block, within a
/// sequence of `len`; `q` its first query, the next `q_stride` on), against the keys packed in
/// `sc` from position `lo`: rows of `d`, normalised.
#[allow(clippy::too_many_arguments)]
fn query_block<'a>(
    sc: &'a mut Scratch,
    q: &[f32],
    q_stride: usize,
    i0: usize,
    len: usize,
    lo: usize,
    heads: Heads,
    mask: Mask,
) -> &'a [f32] {
    let (d, scale) = (heads.dim, heads.scale);
    let rows = BLOCK.min(len - i0);
    let Scratch { keys, scores, acc, stats, live, .. } = sc;
    acc.clear();
    acc.resize(rows * d, 0.0);
    let (m, l) = stats.split_at_mut(BLOCK);
    m[..rows].fill(f32::NEG_INFINITY);
    l[..rows].fill(0.0);
    // The keys this block's queries see, from a whole panel of the task's.
    let first = lo + (mask.range(i0, len).0 - lo) / tiles::PANEL * tiles::PANEL;
    let hi = mask.range(i0 + rows - 1, len).1;
    let mut j0 = first;
    while j0 < hi {
        let cols = KEY_BLOCK.min(hi - j0);
        // Each query's live keys in this block (a window's or causal mask's edge cuts it).
        for (r, span) in live[..rows].iter_mut().enumerate() {
            let (a, b) = mask.range(i0 + r, len);
            *span = (a.clamp(j0, j0 + cols) - j0, b.clamp(j0, j0 + cols) - j0);
        }
        let step = tiles::Step {
            q,
            q_stride,
            rows,
            keys: keys.keys(j0 - lo),
            v: keys.values(j0 - lo),
            v_stride: d,
            cols,
            d,
            live: &live[..rows],
        };
        let width = step.width();
        let s = &mut scores[..rows * width];
        tiles::scores(&step, scale, s, super::fused::simd_level());
        tiles::online_softmax(
            super::fused::simd_level(),
            s,
            width,
            &live[..rows],
            &mut m[..rows],
            &mut l[..rows],
            acc,
            d,
        );
        tiles::context(&step, s, acc, super::fused::simd_level());
        j0 += cols;
    }
    for (row, &l) in acc.chunks_exact_mut(d.max(1)).zip(l.iter()) {
        let inv = if l > 0.0 { 1.0 / l } else { 0.0 };
        row.iter_mut().for_each(|x| *x *= inv);
    }
    acc
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

    /// The AVX-512, AVX2 and portable copies of the kernels give the same bits, with every
    /// tail: rows and keys not a whole tile, head sizes not a whole register.
    #[test]
    fn every_simd_level_gives_the_same_bits() {
        let cu = vec![0usize, 1, 70, 75, 75 + 300];
        let n = *cu.last().unwrap();
        for (nh, kvh, d) in [(2usize, 1usize, 8usize), (2, 2, 24), (2, 1, 64), (1, 1, 128)] {
            let heads = Heads { heads: nh, kv_heads: kvh, dim: d, scale: 1.0 / (d as f32).sqrt() };
            let stride = (nh + 2 * kvh) * d;
            let qkv = pseudo(n * stride, 5);
            let view = |offset| View { data: &qkv, stride, offset };
            for mask in [Mask::Full, Mask::Window(20), Mask::Causal] {
                // The cap is per thread: set on every thread of a pool of our own.
                let run = |level: u8| {
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
                    pool.broadcast(|_| crate::embed::fused::cap_simd(level));
                    pool.install(|| tiled(view(0), view(nh * d), view((nh + kvh) * d), &cu, heads, mask))
                };
                let best = run(u8::MAX);
                for level in [0u8, 1] {
                    let other = run(level);
                    let same = best.iter().zip(&other).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{nh}/{kvh}x{d} {mask:?}: level {level} differs");
                }
            }
        }
    }

    /// The context written over the queries is the context written beside them, bit for
    /// bit: sequences of several blocks (so tasks of several query blocks), grouped-query
    /// heads, every mask.
    #[test]
    fn in_place_equals_beside() {
        let cu = vec![0usize, 1, 70, 75, 75 + 300, 75 + 300 + 1200];
        let n = *cu.last().unwrap();
        for (nh, kvh, d) in [(4usize, 2usize, 16usize), (2, 1, 64)] {
            let heads = Heads { heads: nh, kv_heads: kvh, dim: d, scale: 1.0 / (d as f32).sqrt() };
            let q = pseudo(n * nh * d, 1);
            let kv = pseudo(n * 2 * kvh * d, 2);
            let view = |offset| View { data: &kv, stride: 2 * kvh * d, offset };
            for mask in [Mask::Full, Mask::Window(40), Mask::Causal] {
                let beside = tiled(
                    View { data: &q, stride: nh * d, offset: 0 },
                    view(0),
                    view(kvh * d),
                    &cu,
                    heads,
                    mask,
                );
                let mut over = q.clone();
                tiled_in_place(&mut over, view(0), view(kvh * d), &cu, heads, mask);
                let same = beside.iter().zip(&over).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same && beside.len() == over.len(), "{nh}/{kvh}x{d} {mask:?}");
            }
        }
    }

    /// Attending a range of query rows at a time, over ranges of every size [`query_ranges`]
    /// makes (one block, several, sequences split and joined, the whole batch), writes each
    /// row's context as the whole batch's call does, bit for bit; ranges cut off a block are
    /// refused.
    #[test]
    fn rows_at_a_time_equal_the_whole() {
        let cu = vec![0usize, 1, 70, 75, 75 + 300, 75 + 300 + 1200];
        let n = *cu.last().unwrap();
        let (nh, kvh, d) = (4usize, 2usize, 16usize);
        let heads = Heads { heads: nh, kv_heads: kvh, dim: d, scale: 0.25 };
        let q = pseudo(n * nh * d, 1);
        let kv = pseudo(n * 2 * kvh * d, 2);
        let view = |offset| View { data: &kv, stride: 2 * kvh * d, offset };
        for mask in [Mask::Full, Mask::Window(40), Mask::Causal] {
            let whole =
                tiled(View { data: &q, stride: nh * d, offset: 0 }, view(0), view(kvh * d), &cu, heads, mask);
            for per in [1usize, 100, 256, 700, n] {
                let ranges = query_ranges(&cu, per);
                assert_eq!(ranges.first().map(|r| r.start), Some(0));
                assert!(ranges.windows(2).all(|w| w[0].end == w[1].start) && ranges.last().unwrap().end == n);
                let mut got = Vec::new();
                for rows in ranges {
                    let mut part = q[rows.start * nh * d..rows.end * nh * d].to_vec();
                    tiled_in_place_rows(&mut part, rows, view(0), view(kvh * d), &cu, heads, mask);
                    got.extend_from_slice(&part);
                }
                let same = whole.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same && whole.len() == got.len(), "{mask:?}, ranges of {per}");
            }
        }
        let cut = std::panic::catch_unwind(|| {
            let mut part = vec![0f32; 10 * nh * d];
            tiled_in_place_rows(&mut part, 80..90, view(0), view(kvh * d), &cu, heads, Mask::Causal);
        });
        assert!(cut.is_err(), "a range that starts inside a block");
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
