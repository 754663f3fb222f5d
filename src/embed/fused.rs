//! Fused encoder steps for f32 on the CPU: a linear layer with its bias, and attention over
//! the flat token layout.
//!
//! Why own ops rather than candle's: on the CPU a forward pass spent about 40% of its time
//! outside the matrix products (a profile in `benches/RESULTS.md`): zero-filling every
//! product's output, a second pass to add the bias, and for attention a gather of the flat
//! tokens into a padded `[batch, heads, longest, head_dim]` layout, three transposed copies,
//! a mask added to every score, softmax over the padding, and a scatter back.
//!
//! - [`linear`]: the output starts as the bias, row by row, and gemm accumulates the
//!   product into it (`dst = dst + x·W`): one pass over the output instead of three.
//! - [`attention`]: one task per (sequence, head), each two small gemm calls read straight
//!   out of the fused `[tokens, 3·hidden]` QKV matrix by strides (Kᵀ is K with its strides
//!   swapped) and write the context into its columns of `[tokens, hidden]`; softmax runs over
//!   the sequence's real tokens only, so there is no padding and no mask.
//!
//! The arithmetic is the same as the candle path's (the same gemm, softmax as candle's
//! `softmax_last_dim` computes it); only the order of some sums differs, by float rounding.
//! Other devices and dtypes keep candle's ops ([`super::encoder`] chooses).

use candle_core::{CpuStorage, CustomOp1, CustomOp2, CustomOp3, Layout, Shape, Tensor};
use gemm::{gemm, Parallelism};
use rayon::prelude::*;
use seamcut_products::attention as tiles;
use seamcut_products::rows;

/// The vector level the CPU runs: 2 = AVX-512 (F, VL, DQ, BW), 1 = AVX2 with FMA, 0 = the
/// baseline the crate is compiled for. Detected once.
#[must_use]
pub(crate) fn simd_level() -> u8 {
    // Detected once, where the attention kernels (`seamcut-products`) detect it.
    let level = seamcut_products::attention::cpu_level();
    #[cfg(test)]
    let level = level.min(SIMD_CAP.with(std::cell::Cell::get));
    level
}

#[cfg(test)]
thread_local! {
    /// An upper bound on [`simd_level`] on this thread, for tests that run every level on one
    /// machine (the levels give bit-identical results: the loops spell out their lanes and
    /// never fuse a multiply into an add, so only the speed differs).
    static SIMD_CAP: std::cell::Cell<u8> = const { std::cell::Cell::new(u8::MAX) };
}

/// Caps [`simd_level`] on the calling thread (tests only).
#[cfg(test)]
pub(crate) fn cap_simd(level: u8) {
    SIMD_CAP.with(|c| c.set(level));
}

fn parallelism() -> Parallelism {
    match rayon::current_num_threads() {
        0 | 1 => Parallelism::None,
        n => Parallelism::Rayon(n),
    }
}

fn f32_slice<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> candle_core::Result<&'a [f32]> {
    let CpuStorage::F32(data) = s else { candle_core::bail!("seamcut fused {what}: f32 only") };
    let Some((a, b)) = l.contiguous_offsets() else {
        candle_core::bail!("seamcut fused {what}: contiguous input only")
    };
    Ok(&data[a..b])
}

/// A tensor's storage as [`f32_slice`] reads it: the contiguous f32 floats of a CPU tensor,
/// for callers that hold the storage guard (`Tensor::storage_and_layout`) while they read.
pub(super) fn storage_f32<'a>(
    g: &'a candle_core::Storage,
    l: &Layout,
    what: &str,
) -> candle_core::Result<&'a [f32]> {
    match g {
        candle_core::Storage::Cpu(c) => f32_slice(c, l, what),
        _ => candle_core::bail!("seamcut fused {what}: CPU tensors only"),
    }
}

struct Linear;

impl CustomOp3 for Linear {
    fn name(&self) -> &'static str {
        "seamcut-linear"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (x, wt, b) =
            (f32_slice(s1, l1, "linear")?, f32_slice(s2, l2, "linear")?, f32_slice(s3, l3, "linear")?);
        let (n, k) = l1.shape().dims2()?;
        let (k2, m) = l2.shape().dims2()?;
        if k != k2 || b.len() != m {
            candle_core::bail!("seamcut-linear: shapes {:?} {:?} {:?}", l1.dims(), l2.dims(), l3.dims());
        }
        let out = product(x, wt, (n, k, m), Some(b));
        Ok((CpuStorage::F32(out), Shape::from((n, m))))
    }
}

/// `x · wt` (`[n, k]` · `[k, m]`, row-major), plus `bias` on every row when given: the output
/// starts as the bias and gemm accumulates into it; without one, gemm writes the output
/// straight into fresh memory (no zero fill first).
fn product(x: &[f32], wt: &[f32], (n, k, m): (usize, usize, usize), bias: Option<&[f32]>) -> Vec<f32> {
    let mut out: Vec<f32> = Vec::with_capacity(n * m);
    if let Some(b) = bias {
        for _ in 0..n {
            out.extend_from_slice(b);
        }
    }
    if n == 0 || m == 0 {
        return out;
    }
    // SAFETY: `out` has room for n×m values, row-major; `x` is n×k and `wt` k×m row-major,
    // all in bounds for the strides given. With a bias gemm reads `out` (initialised above);
    // without, `read_dst` is false and gemm writes all n×m values without reading any (its
    // k = 0 case writes zeros), so they are initialised when the length is set.
    unsafe {
        // gemm's arguments: m, n, k, then each matrix as (pointer, column stride, row
        // stride); dst = alpha·dst + beta·lhs·rhs (alpha unused when dst is not read).
        gemm(
            n,
            m,
            k,
            out.as_mut_ptr(),
            1,
            m as isize,
            bias.is_some(),
            x.as_ptr(),
            1,
            k as isize,
            wt.as_ptr(),
            1,
            m as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            parallelism(),
        );
        out.set_len(n * m);
    }
    out
}

/// `x · w` (+ `bias`) with `w` packed for its products' kernel ([`super::packed`]): the
/// products of `--dtype bf16` and `int8` on the CPU.
struct PackedLinear<'a> {
    w: &'a super::packed::Weight,
    bias: Option<&'a [f32]>,
}

impl CustomOp1 for PackedLinear<'_> {
    fn name(&self) -> &'static str {
        "seamcut-linear-packed"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(storage, layout, "linear-packed")?;
        let out = packed_product(x, layout, self.w, self.bias)?;
        Ok((CpuStorage::F32(out), Shape::from((layout.shape().dims2()?.0, self.w.shape().1))))
    }
}

/// `x · w` (+ `bias`) for `x`'s host values laid out as `layout` `[n, k]`, once the shapes and
/// the CPU are checked: what [`linear_packed`] and [`linear_packed_host`] run.
fn packed_product(
    x: &[f32],
    layout: &Layout,
    w: &super::packed::Weight,
    bias: Option<&[f32]>,
) -> candle_core::Result<Vec<f32>> {
    let (n, k) = layout.shape().dims2()?;
    let (k2, m) = w.shape();
    if k != k2 || bias.is_some_and(|b| b.len() != m) || !w.runs_here() {
        candle_core::bail!(
            "seamcut-linear-packed: shapes {:?} {:?}, or this CPU cannot run {} products",
            layout.dims(),
            w.shape(),
            w.name()
        );
    }
    Ok(w.product(x, n, bias))
}

/// [`linear_packed`] as a host vector `[n, m]`, as [`linear_host`] is for the f32 product: no
/// tensor to copy out of.
///
/// # Errors
/// As [`linear_packed`].
pub fn linear_packed_host(
    x: &Tensor,
    w: &super::packed::Weight,
    bias: Option<&[f32]>,
) -> candle_core::Result<Vec<f32>> {
    let (xs, xl) = x.storage_and_layout();
    packed_product(storage_f32(&xs, xl, "linear-packed")?, xl, w, bias)
}

/// `x · w` (+ `bias` on every row) for `x` `[n, k]` f32 and contiguous on the CPU, `w` packed
/// for its products' kernel (bf16 on AMX tiles, or int8).
///
/// # Errors
/// On another device, dtype or layout, mismatched shapes, or a CPU without the kernel.
pub fn linear_packed(
    x: &Tensor,
    w: &super::packed::Weight,
    bias: Option<&[f32]>,
) -> candle_core::Result<Tensor> {
    x.apply_op1_no_bwd(&PackedLinear { w, bias })
}

/// `x · wt` on the f32 path (for the AMX products' timing test).
#[cfg(test)]
pub(crate) fn product_f32(x: &[f32], wt: &[f32], shape: (usize, usize, usize)) -> Vec<f32> {
    product(x, wt, shape, None)
}

struct MatMul;

impl CustomOp2 for MatMul {
    fn name(&self) -> &'static str {
        "seamcut-matmul"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (x, wt) = (f32_slice(s1, l1, "matmul")?, f32_slice(s2, l2, "matmul")?);
        let (n, k) = l1.shape().dims2()?;
        let (k2, m) = l2.shape().dims2()?;
        if k != k2 {
            candle_core::bail!("seamcut-matmul: shapes {:?} {:?}", l1.dims(), l2.dims());
        }
        Ok((CpuStorage::F32(product(x, wt, (n, k, m), None)), Shape::from((n, m))))
    }
}

/// `x · wt` for `x` `[n, k]` and `wt` `[k, m]`, f32 and contiguous on the CPU; the bias is
/// left to the next op ([`add_bias_layer_norm`], [`super::gelu::gelu_erf_bias`]).
///
/// # Errors
/// On another device, dtype or layout, or mismatched shapes.
pub fn matmul(x: &Tensor, wt: &Tensor) -> candle_core::Result<Tensor> {
    x.apply_op2_no_bwd(wt, &MatMul)
}

/// `x · wt + b` for `x` `[n, k]`, `wt` `[k, m]` and `b` `[m]`, f32 and contiguous on the CPU.
///
/// # Errors
/// On another device, dtype or layout, or mismatched shapes.
pub fn linear(x: &Tensor, wt: &Tensor, b: &Tensor) -> candle_core::Result<Tensor> {
    x.apply_op3_no_bwd(wt, b, &Linear)
}

/// `x · wt (+ b)` as a host vector, `[n, m]` row-major, for `x` `[n, k]` and `wt` `[k, m]` f32
/// and contiguous on the CPU: [`linear`]'s product, for a caller whose next step works on the
/// host (the tiled attention reads Q, K and V from it): no tensor to copy out of, so a long
/// text's `[tokens, 3·hidden]` projection is held once, not twice.
///
/// # Errors
/// On another device, dtype or layout, or mismatched shapes.
pub fn linear_host(x: &Tensor, wt: &Tensor, b: Option<&Tensor>) -> candle_core::Result<Vec<f32>> {
    let bias = b.map(Tensor::to_vec1::<f32>).transpose()?;
    let (xs, xl) = x.storage_and_layout();
    let (ws, wl) = wt.storage_and_layout();
    let (xv, wv) = (storage_f32(&xs, xl, "linear")?, storage_f32(&ws, wl, "linear")?);
    let (n, k) = xl.shape().dims2()?;
    let (k2, m) = wl.shape().dims2()?;
    if k != k2 || bias.as_ref().is_some_and(|b| b.len() != m) {
        candle_core::bail!("seamcut linear_host: shapes {:?} {:?}", xl.dims(), wl.dims());
    }
    Ok(product(xv, wv, (n, k, m), bias.as_deref()))
}

/// A task's buffers in [`Attention`], reused from task to task.
#[derive(Default)]
struct Scratch {
    keys: tiles::PackedKeys,
    scores: Vec<f32>,
    ctx: Vec<f32>,
    live: Vec<(usize, usize)>,
}

/// Attention over flat sequences, see [`attention`].
struct Attention<'a> {
    cu_seqlens: &'a [usize],
    heads: usize,
    scale: f32,
    /// `[heads, l, l]` added to the scores (MPNet's relative-position bias), `l` ≥ every
    /// sequence's length.
    bias: Option<(&'a [f32], usize)>,
    /// The two products on seamcut's attention kernels, every value one chain of fused
    /// multiply-adds in a fixed order (the same bits on every CPU, as the f32 linear layers'
    /// are), or on `gemm`, whose kernels and blocking follow the CPU: the attention 1.2× as
    /// fast at MiniLM's 128-token windows on a Zen 5, 1.05× at MPNet's 254
    /// (benches/RESULTS.md), and where the linear layers' products are bf16 or int8 the
    /// vectors differ by CPU anyway.
    exact: bool,
}

/// A raw pointer that tasks writing disjoint parts of one buffer can share (here and in
/// [`super::attention`]).
#[derive(Clone, Copy)]
pub(super) struct SharedOut(pub(super) *mut f32);
// SAFETY: every task writes its own block of the output (here, the rows of one sequence × the
// columns of one head; in the tiled attention, a query block's rows × one head's columns).
unsafe impl Send for SharedOut {}
unsafe impl Sync for SharedOut {}

impl SharedOut {
    /// The pointer (a method, so a closure captures the whole `Send` wrapper, not its field).
    pub(super) fn ptr(self) -> *mut f32 {
        self.0
    }
}

/// One (sequence, head) task of [`Attention`]: the flat QKV matrix (`3·h` wide), heads of
/// `d`, the sequence's rows `s0..s0 + l`, the head.
struct Head<'a> {
    qkv: &'a [f32],
    h: usize,
    d: usize,
    s0: usize,
    l: usize,
    hd: usize,
}

impl Attention<'_> {
    /// Adds this head's relative-position bias (MPNet) to query row `i`'s scores.
    fn add_bias(&self, row: &mut [f32], hd: usize, i: usize) {
        if let Some((bias, bl)) = self.bias {
            let n = row.len();
            for (x, &y) in row.iter_mut().zip(&bias[hd * bl * bl + i * bl..][..n]) {
                *x += y;
            }
        }
    }

    /// One head's context on the tiled attention's kernels (`exact`), written into `dst`.
    fn exact_head(&self, sc: &mut Scratch, t: &Head, dst: SharedOut, level: u8) {
        let Head { qkv, h, d, s0, l, hd } = *t;
        let view = |offset| tiles::View { data: qkv, stride: 3 * h, offset };
        // This head's keys and values packed for the kernels (keys in panels of 16; read in
        // place, the values' rows, a page apart, made the context 30% slower).
        sc.keys.fill(view(h), view(2 * h), hd, s0..s0 + l, d, level);
        sc.live.clear();
        sc.live.resize(l, (0, l));
        let step = tiles::Step {
            q: &qkv[s0 * 3 * h + hd * d..],
            q_stride: 3 * h,
            rows: l,
            keys: sc.keys.keys(0),
            v: sc.keys.values(0),
            v_stride: d,
            cols: l,
            d,
            live: &sc.live,
        };
        // scores[i, j] = scale · Σc q[i, c] k[j, c], rows of `w` (whole panels); grown, never
        // cleared: the kernel writes every score read below.
        let w = step.width();
        if sc.scores.len() < l * w {
            sc.scores.resize(l * w, 0.0);
        }
        let scores = &mut sc.scores[..l * w];
        tiles::scores(&step, self.scale, scores, level);
        for (i, row) in scores.chunks_exact_mut(w).enumerate() {
            let row = &mut row[..l];
            self.add_bias(row, hd, i);
            rows::softmax_rows(level, row, l);
        }
        // ctx[i, c] = Σj p[i, j] v[j, c], then into the output's rows and this head's columns.
        sc.ctx.clear();
        sc.ctx.resize(l * d, 0.0);
        tiles::context(&step, scores, &mut sc.ctx, level);
        for (r, row) in sc.ctx.chunks_exact(d).enumerate() {
            // SAFETY: rows s0..s0+l, columns hd·d..(hd+1)·d of the output belong to this task
            // alone (the tasks split the sequences and heads), in bounds of n × h.
            unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), dst.ptr().add((s0 + r) * h + hd * d), d) };
        }
    }

    /// One head's context with `gemm`'s products, written into `dst`.
    fn gemm_head(&self, scores: &mut Vec<f32>, t: &Head, dst: SharedOut, level: u8) {
        let Head { qkv, h, d, s0, l, hd } = *t;
        let row = (3 * h) as isize;
        // Grown, never cleared: the first product writes all l×l scores without reading them
        // (zeroing 256 KB per head and window cost a tenth of a bf16 pass).
        if scores.len() < l * l {
            scores.resize(l * l, 0.0);
        }
        let scores = &mut scores[..l * l];
        let base = qkv.as_ptr();
        // SAFETY: rows s0..s0+l of qkv, columns of this head in each third, are in bounds; the
        // scores buffer is l×l; the output block (rows s0..s0+l, columns hd·d..(hd+1)·d)
        // belongs to this task alone.
        unsafe {
            let q = base.add(s0 * 3 * h + hd * d);
            let k = base.add(s0 * 3 * h + h + hd * d);
            let v = base.add(s0 * 3 * h + 2 * h + hd * d);
            // scores[i, j] = scale · Σc q[i, c] k[j, c]
            gemm(
                l,
                l,
                d,
                scores.as_mut_ptr(),
                1,
                l as isize,
                false,
                q,
                1,
                row,
                k,
                row,
                1,
                0.0,
                self.scale,
                false,
                false,
                false,
                Parallelism::None,
            );
            for (i, r) in scores.chunks_exact_mut(l).enumerate() {
                self.add_bias(r, hd, i);
            }
            rows::softmax_rows(level, scores, l);
            // ctx[i, c] = Σj p[i, j] v[j, c], into the output's rows and this head's columns
            gemm(
                l,
                d,
                l,
                dst.ptr().add(s0 * h + hd * d),
                1,
                h as isize,
                false,
                scores.as_ptr(),
                1,
                l as isize,
                v,
                1,
                row,
                0.0,
                1.0,
                false,
                false,
                false,
                Parallelism::None,
            );
        }
    }
}

impl CustomOp1 for Attention<'_> {
    fn name(&self) -> &'static str {
        "seamcut-attention"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let qkv = f32_slice(storage, layout, "attention")?;
        let (n, h3) = layout.shape().dims2()?;
        let h = h3 / 3;
        if h3 % 3 != 0 || self.heads == 0 || !h.is_multiple_of(self.heads) {
            candle_core::bail!(
                "seamcut-attention: qkv {:?} does not fit {} heads",
                layout.dims(),
                self.heads
            );
        }
        if n == 0 && self.cu_seqlens.len() <= 1 {
            return Ok((CpuStorage::F32(Vec::new()), Shape::from((0, h))));
        }
        // The blocks the tasks write are disjoint, and every read in bounds, only for
        // sequences that tile the tokens in order.
        let cu = self.cu_seqlens;
        if cu.first() != Some(&0) || cu.last() != Some(&n) || cu.windows(2).any(|w| w[0] > w[1]) {
            candle_core::bail!("seamcut-attention: sequence offsets do not tile {n} tokens");
        }
        let longest = cu.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        if let Some((bias, bl)) = self.bias {
            if bl < longest || bias.len() < self.heads * bl * bl {
                candle_core::bail!(
                    "seamcut-attention: a bias of {} for {} heads and sequences of {longest}",
                    bias.len(),
                    self.heads
                );
            }
        }
        let d = h / self.heads;
        // Not zeroed first: the second product of every (sequence, head) writes its block
        // without reading it, and the blocks tile the output (checked above).
        let mut out: Vec<f32> = Vec::with_capacity(n * h);
        let dst = SharedOut(out.as_mut_ptr());
        let n_seq = self.cu_seqlens.len() - 1;
        let tasks: Vec<(usize, usize)> =
            (0..n_seq).flat_map(|s| (0..self.heads).map(move |hd| (s, hd))).collect();
        let level = simd_level();
        tasks.par_iter().with_min_len(4).for_each_init(Scratch::default, |sc, &(s, hd)| {
            let (s0, s1) = (self.cu_seqlens[s], self.cu_seqlens[s + 1]);
            if s1 > s0 {
                let head = Head { qkv, h, d, s0, l: s1 - s0, hd };
                if self.exact {
                    self.exact_head(sc, &head, dst, level);
                } else {
                    self.gemm_head(&mut sc.scores, &head, dst, level);
                }
            }
        });
        // SAFETY: every (sequence, head) block was written above, and they tile n × h.
        unsafe { out.set_len(n * h) };
        Ok((CpuStorage::F32(out), Shape::from((n, h))))
    }
}

/// Multi-head self-attention of each sequence over its own tokens: `qkv` is `[tokens, 3·hidden]`
/// (queries, keys, values side by side, heads contiguous within each), sequences as
/// `cu_seqlens` delimits them; the result is the context `[tokens, hidden]`. `bias`, when
/// given, is `[heads, l, l]` (row = query position, column = key position) added to the
/// scaled scores. `exact`: the products in a fixed order of additions, the same bits on every
/// CPU (the f32 path), or on `gemm` (faster; see [`Attention`]'s field).
///
/// # Errors
/// On another device, dtype or layout, or when the shapes do not fit.
pub fn attention(
    qkv: &Tensor,
    cu_seqlens: &[usize],
    heads: usize,
    scale: f32,
    bias: Option<(&[f32], usize)>,
    exact: bool,
) -> candle_core::Result<Tensor> {
    qkv.apply_op1_no_bwd(&Attention { cu_seqlens, heads, scale, bias, exact })
}

/// `LayerNorm(a + b)` over the last dimension, written over `a`: see [`add_layer_norm`].
struct AddLayerNorm<'a> {
    weight: &'a [f32],
    bias: &'a [f32],
    eps: f32,
    /// Added to every row of `a` first (the bias of the product `a` came from).
    a_bias: Option<&'a [f32]>,
}

impl candle_core::InplaceOp2 for AddLayerNorm<'_> {
    fn name(&self) -> &'static str {
        "seamcut-add-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<()> {
        let b = f32_slice(s2, l2, "add-layer-norm")?;
        let h = self.weight.len();
        let CpuStorage::F32(data) = s1 else { candle_core::bail!("add-layer-norm: f32 only") };
        let Some((start, end)) = l1.contiguous_offsets() else {
            candle_core::bail!("add-layer-norm: contiguous input only")
        };
        let a = &mut data[start..end];
        if l1.shape() != l2.shape()
            || h == 0
            || l1.dims().last() != Some(&h)
            || self.bias.len() != h
            || self.a_bias.is_some_and(|b| b.len() != h)
        {
            candle_core::bail!("seamcut-add-layer-norm: shapes {:?} {:?}, norm of {h}", l1.dims(), l2.dims());
        }
        let (w, c, eps) = (self.weight, self.bias, self.eps);
        a.par_chunks_mut(h * 16)
            .zip(b.par_chunks(h * 16))
            .for_each(|(a, b)| rows::add_norm_rows(simd_level(), a, self.a_bias, b, w, c, eps));
        Ok(())
    }
}

/// Layer normalisation of `a + b` (the residual connection and the norm in one pass) over
/// the last dimension, with `weight` and `bias` of that length; f32 and contiguous on the CPU.
/// Written over `a`'s storage, which is returned: `a` must be the only tensor that holds it
/// (fresh from a product), as the encoders' callers have it. (A new buffer here, zeroed and
/// written, cost a few percent of an int8 pass.)
///
/// # Errors
/// On another device, dtype or layout, or mismatched shapes.
pub fn add_layer_norm(
    a: Tensor,
    b: &Tensor,
    weight: &[f32],
    bias: &[f32],
    eps: f32,
) -> candle_core::Result<Tensor> {
    a.inplace_op2(b, &AddLayerNorm { weight, bias, eps, a_bias: None })?;
    Ok(a)
}

/// [`add_layer_norm`] of `(a + a_bias) + b`, `a_bias` added to every row of `a` (the bias of
/// the product `a` came from, [`matmul`]) in the same pass.
///
/// # Errors
/// As [`add_layer_norm`].
pub fn add_bias_layer_norm(
    a: Tensor,
    a_bias: &[f32],
    b: &Tensor,
    weight: &[f32],
    bias: &[f32],
    eps: f32,
) -> candle_core::Result<Tensor> {
    a.inplace_op2(b, &AddLayerNorm { weight, bias, eps, a_bias: Some(a_bias) })?;
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seconds of the tiles' product against the f32 one (`gemm`, as the fused path runs it) on
    /// MiniLM's feed-forward shape: `cargo test --release --lib amx_speed -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a test"]
    fn amx_speed() {
        if !crate::embed::amx::available() {
            return;
        }
        let (n, k, m) = (4096, 384, 1536);
        let x: Vec<f32> = (0..n * k).map(|i| (i % 17) as f32 / 17.0).collect();
        let wt: Vec<f32> = (0..k * m).map(|i| (i % 13) as f32 / 13.0).collect();
        let packed = crate::embed::amx::Packed::new(&wt, k, m);
        let t = std::time::Instant::now();
        for _ in 0..10 {
            std::hint::black_box(crate::embed::amx::product(&x, n, &packed, None));
        }
        let amx = t.elapsed().as_secs_f64() / 10.0;
        let t = std::time::Instant::now();
        for _ in 0..10 {
            std::hint::black_box(product_f32(&x, &wt, (n, k, m)));
        }
        let f32s = t.elapsed().as_secs_f64() / 10.0;
        let gflop = 2.0 * (n * k * m) as f64 / 1e9;
        eprintln!(
            "amx {amx:.4} s ({:.0} GFLOP/s), f32 {f32s:.4} s ({:.0} GFLOP/s): ×{:.2}",
            gflop / amx,
            gflop / f32s,
            f32s / amx
        );
    }

    /// The exact attention (the f32 path's) gives the same bits on every vector level, with
    /// and without MPNet's bias, for sequences not a whole panel long and heads of 32 and 64;
    /// and it is the gemm one's within rounding.
    #[test]
    fn exact_attention_is_the_same_bits_on_every_level() {
        let cu = [0usize, 1, 19, 147, 150];
        let n = cu[4];
        for (heads, d) in [(3usize, 32usize), (2, 64)] {
            let h = heads * d;
            let qkv: Vec<f32> =
                (0..n * 3 * h).map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * 2.0).collect();
            let t = Tensor::from_slice(&qkv, (n, 3 * h), &candle_core::Device::Cpu).unwrap();
            let bl = 128 + 32;
            let bias: Vec<f32> = (0..heads * bl * bl).map(|i| (i % 11) as f32 / 11.0 - 0.5).collect();
            for b in [None, Some((bias.as_slice(), bl))] {
                let run = |level: u8, exact: bool| {
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
                    pool.broadcast(|_| cap_simd(level));
                    let out = pool.install(|| attention(&t, &cu, heads, 1.0 / (d as f32).sqrt(), b, exact));
                    out.unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap()
                };
                let best = run(u8::MAX, true);
                for level in [0u8, 1] {
                    let same = run(level, true).iter().zip(&best).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{heads}×{d}, bias {}: level {level} differs", b.is_some());
                }
                let worst =
                    run(u8::MAX, false).iter().zip(&best).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                assert!(worst < 1e-5, "{heads}×{d}: exact and gemm differ by {worst}");
            }
        }
    }
}
