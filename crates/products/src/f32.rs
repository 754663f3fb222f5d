//! f32 products `x · w (+ b)` for the encoders' linear layers on the CPU (`--dtype f32`, the
//! default), `w` packed once at load: every output is one chain of fused multiply-adds over
//! the inner dimension in order, from zero, and then the bias. So the AVX-512, AVX2 and
//! portable copies give the same bits, whatever the CPU and its caches.
//!
//! Why not `gemm` (what this used): gemm picks its micro-kernel by CPU and splits the inner
//! dimension into blocks sized from the L1 cache's geometry and the kernel's shape, adding the
//! blocks' partial sums. Its results then differ in the last bits between an AVX2 and an
//! AVX-512 CPU, and between CPUs with other caches: all-MiniLM-L6-v2's vectors of 300
//! paragraphs differed in 110,717 of 115,200 values (by up to 2·10⁻⁷) between seamcut built
//! with and without gemm's AVX-512 kernels, on one CPU (benches/RESULTS.md). The inner
//! dimensions here are at most a few thousand (a feed-forward's width), so one chain per
//! output loses nothing to blocking: a column group's weights stay in L2 while the rows pass.
//!
//! The layout is the bf16 kernel's ([`crate::bf16`]) without the pairs: groups of [`GROUP`]
//! columns, each `[k][GROUP]`, zeros past the last column. The AVX-512 tile is `R4` rows × 4
//! registers of 16 columns, the AVX2 tile `R3` rows × 2 registers of 8 (a quarter of a
//! group), each as many independent sums as the FMA pipes need to stay busy.

use rayon::prelude::*;

use crate::attention::usable;
use crate::round_up;

/// Columns per group of the layout.
pub const GROUP: usize = 64;
/// Rows each parallel task takes.
const TASK_ROWS: usize = 32;
/// Rows per AVX-512 tile (4 × 4 sums, 4 weight registers, 1 broadcast: 21 of 32 registers).
const R4: usize = 4;
/// Rows per AVX2 tile (6 × 2 sums, 2 weight registers, 1 broadcast: 15 of 16 registers).
const R3: usize = 6;

/// A weight matrix `[k, m]` packed for [`product`].
#[derive(Debug, Clone)]
pub struct Packed {
    k: usize,
    m: usize,
    mp: usize,
    data: Vec<f32>,
}

impl Packed {
    /// Pack `wt` (`k × m`, row-major).
    ///
    /// # Panics
    /// If `wt` does not hold `k × m` values.
    #[must_use]
    pub fn new(wt: &[f32], k: usize, m: usize) -> Self {
        assert_eq!(wt.len(), k * m, "a {k}×{m} matrix");
        let mp = round_up(m.max(1), GROUP);
        let mut data = vec![0f32; k * mp];
        if k > 0 && m > 0 {
            data.par_chunks_mut(k * GROUP).enumerate().for_each(|(g, d)| {
                let (j0, width) = (g * GROUP, (m - g * GROUP).min(GROUP));
                for (row, dst) in wt.chunks_exact(m).zip(d.chunks_exact_mut(GROUP)) {
                    dst[..width].copy_from_slice(&row[j0..j0 + width]);
                }
            });
        }
        Self { k, m, mp, data }
    }

    /// Rows (the products' inner dimension) and columns.
    #[must_use]
    pub fn shape(&self) -> (usize, usize) {
        (self.k, self.m)
    }

    /// Group `g`'s `[k][GROUP]` weights.
    fn group(&self, g: usize) -> &[f32] {
        &self.data[g * self.k * GROUP..(g + 1) * self.k * GROUP]
    }
}

/// Whether this CPU runs the fast copies (AVX2 with FMA at least; the portable copy's
/// `mul_add` is a correctly rounded library call, for checking, not for speed).
#[must_use]
pub fn fast_here() -> bool {
    crate::attention::cpu_level() >= 1
}

/// A raw pointer that the tasks, each writing its own block of rows × a column group, share.
#[derive(Clone, Copy)]
struct Out(*mut f32);
// SAFETY: every task writes a disjoint block of the output (its rows × its group's columns).
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

impl Out {
    fn ptr(self) -> *mut f32 {
        self.0
    }
}

/// `x · w` (+ `bias` on every row) for `x` `[n, k]` row-major, on the copy `level` names (2
/// AVX-512, 1 AVX2 with FMA, else portable; one this CPU lacks is taken down to one it has).
/// Every level gives the same bits.
///
/// # Panics
/// If `x` does not hold `n × k` values for `w`'s `k`, or the bias is not `m` long.
#[must_use]
pub fn product(x: &[f32], n: usize, w: &Packed, bias: Option<&[f32]>, level: u8) -> Vec<f32> {
    let (k, m) = (w.k, w.m);
    if let Some(out) = crate::trivial(x, n, k, m, bias) {
        return out;
    }
    let level = usable(level);
    // Not zeroed first: the tiles write every value.
    let mut out: Vec<f32> = Vec::with_capacity(n * m);
    let dst = Out(out.as_mut_ptr());
    // One task per (up to TASK_ROWS rows, column group): a short input (a query) still
    // spreads over the threads.
    let groups = w.mp / GROUP;
    let tasks = n.div_ceil(TASK_ROWS) * groups;
    (0..tasks).into_par_iter().for_each(|t| {
        let (r0, g) = (t / groups * TASK_ROWS, t % groups);
        let rows = TASK_ROWS.min(n - r0);
        let xs = &x[r0 * k..(r0 + rows) * k];
        // SAFETY: the block (rows r0.., columns of group g below m) is this task's alone, in
        // bounds of the n × m output; the copies read `xs` within rows × k and the group's
        // weights within k × GROUP.
        unsafe {
            let o = dst.ptr().add(r0 * m);
            match level {
                #[cfg(target_arch = "x86_64")]
                2 => run_v4(xs, rows, w, g, bias, o),
                #[cfg(target_arch = "x86_64")]
                1 => run_v3(xs, rows, w, g, bias, o),
                _ => run_portable(xs, rows, w, g, bias, o),
            }
        }
    });
    // SAFETY: the tasks cover every row and column group, and each wrote every column of its
    // group below m for each of its rows.
    unsafe { out.set_len(n * m) };
    out
}

/// The portable copy: the same chain per output as the vector copies.
///
/// # Safety
/// `o` must have room for `rows` rows of `w.m`, this task's to write in group `g`'s columns.
unsafe fn run_portable(xs: &[f32], rows: usize, w: &Packed, g: usize, bias: Option<&[f32]>, o: *mut f32) {
    let (k, m) = (w.k, w.m);
    let ws = w.group(g);
    let j0 = g * GROUP;
    for r in 0..rows {
        let x = &xs[r * k..(r + 1) * k];
        for c in 0..GROUP.min(m - j0) {
            let mut acc = 0f32;
            for (s, &a) in x.iter().enumerate() {
                acc = a.mul_add(ws[s * GROUP + c], acc);
            }
            // (Not `acc + 0.0` without a bias: that turns −0 into +0.)
            *o.add(r * m + j0 + c) = bias.map_or(acc, |b| acc + b[j0 + c]);
        }
    }
}

/// The AVX-512 copy: tiles of up to [`R4`] rows × the group's 64 columns.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run_v4(xs: &[f32], rows: usize, w: &Packed, g: usize, bias: Option<&[f32]>, o: *mut f32) {
    for r0 in (0..rows).step_by(R4) {
        match rows - r0 {
            1 => tile_v4::<1>(xs, r0, w, g, bias, o),
            2 => tile_v4::<2>(xs, r0, w, g, bias, o),
            3 => tile_v4::<3>(xs, r0, w, g, bias, o),
            _ => tile_v4::<R4>(xs, r0, w, g, bias, o),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn tile_v4<const R: usize>(
    xs: &[f32],
    r0: usize,
    w: &Packed,
    g: usize,
    bias: Option<&[f32]>,
    o: *mut f32,
) {
    use std::arch::x86_64::*;
    let (k, m) = (w.k, w.m);
    let b = w.group(g).as_ptr();
    let a = xs.as_ptr().add(r0 * k);
    let mut acc = [[_mm512_setzero_ps(); 4]; R];
    for s in 0..k {
        let ws = [0, 1, 2, 3].map(|c| _mm512_loadu_ps(b.add(s * GROUP + 16 * c)));
        for (r, row) in acc.iter_mut().enumerate() {
            let av = _mm512_set1_ps(*a.add(r * k + s));
            for (v, &wv) in row.iter_mut().zip(&ws) {
                *v = _mm512_fmadd_ps(av, wv, *v);
            }
        }
    }
    let j0 = g * GROUP;
    for (r, row) in acc.iter().enumerate() {
        let dst = o.add((r0 + r) * m);
        for (c, &v) in row.iter().enumerate() {
            let j = j0 + 16 * c;
            if j >= m {
                break;
            }
            let mask: __mmask16 = if m - j >= 16 { 0xffff } else { (1u16 << (m - j)) - 1 };
            let v = match bias {
                Some(bias) => _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, bias.as_ptr().add(j))),
                None => v,
            };
            _mm512_mask_storeu_ps(dst.add(j), mask, v);
        }
    }
}

/// The AVX2 copy: tiles of up to [`R3`] rows × 16 columns, four to a group, the inner
/// dimension [`KC3`] at a time, outermost (each output's chain carried through the output
/// between blocks: the same chain, the same bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_v3(xs: &[f32], rows: usize, w: &Packed, g: usize, bias: Option<&[f32]>, o: *mut f32) {
    let k = w.k;
    for k0 in (0..k).step_by(KC3) {
        let ks = k0..(k0 + KC3).min(k);
        for quarter in 0..4 {
            if g * GROUP + 16 * quarter >= w.m {
                break;
            }
            for r0 in (0..rows).step_by(R3) {
                let t = Tile3 { r0, quarter, ks: ks.clone() };
                match rows - r0 {
                    1 => tile_v3::<1>(xs, &t, w, g, bias, o),
                    2 => tile_v3::<2>(xs, &t, w, g, bias, o),
                    3 => tile_v3::<3>(xs, &t, w, g, bias, o),
                    4 => tile_v3::<4>(xs, &t, w, g, bias, o),
                    5 => tile_v3::<5>(xs, &t, w, g, bias, o),
                    _ => tile_v3::<R3>(xs, &t, w, g, bias, o),
                }
            }
        }
    }
}

/// Inner dimension per block of the AVX2 copy: 6 rows' inputs (12 KB) and a quarter group's
/// weights (32 KB) stay near the core. Unblocked, Qwen3-0.6B's down projection (3,072 → 1,024)
/// ran at 0.84× `gemm`'s AVX2 kernel; the MiniLM and MPNet shapes at 0.94–0.99×.
const KC3: usize = 512;

/// An AVX2 tile: its first row, its quarter of the group, the inner dimensions it adds.
struct Tile3 {
    r0: usize,
    quarter: usize,
    ks: std::ops::Range<usize>,
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_v3<const R: usize>(
    xs: &[f32],
    t: &Tile3,
    w: &Packed,
    g: usize,
    bias: Option<&[f32]>,
    o: *mut f32,
) {
    use std::arch::x86_64::*;
    let (k, m) = (w.k, w.m);
    let b = w.group(g).as_ptr().add(16 * t.quarter);
    let a = xs.as_ptr().add(t.r0 * k);
    let j = g * GROUP + 16 * t.quarter;
    let width = (m - j).min(16);
    let (first, last) = (t.ks.start == 0, t.ks.end == k);
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    if !first {
        // The chains so far, from the output.
        for (r, row) in acc.iter_mut().enumerate() {
            let mut v = [0f32; 16];
            v[..width].copy_from_slice(std::slice::from_raw_parts(o.add((t.r0 + r) * m + j), width));
            *row = [_mm256_loadu_ps(v.as_ptr()), _mm256_loadu_ps(v.as_ptr().add(8))];
        }
    }
    for s in t.ks.clone() {
        let w0 = _mm256_loadu_ps(b.add(s * GROUP));
        let w1 = _mm256_loadu_ps(b.add(s * GROUP + 8));
        for (r, row) in acc.iter_mut().enumerate() {
            let av = _mm256_set1_ps(*a.add(r * k + s));
            row[0] = _mm256_fmadd_ps(av, w0, row[0]);
            row[1] = _mm256_fmadd_ps(av, w1, row[1]);
        }
    }
    let bias = if last { bias } else { None };
    for (r, row) in acc.iter().enumerate() {
        let dst = o.add((t.r0 + r) * m + j);
        if width == 16 {
            if let Some(bias) = bias {
                let b0 = _mm256_add_ps(row[0], _mm256_loadu_ps(bias.as_ptr().add(j)));
                let b1 = _mm256_add_ps(row[1], _mm256_loadu_ps(bias.as_ptr().add(j + 8)));
                _mm256_storeu_ps(dst, b0);
                _mm256_storeu_ps(dst.add(8), b1);
            } else {
                _mm256_storeu_ps(dst, row[0]);
                _mm256_storeu_ps(dst.add(8), row[1]);
            }
        } else {
            let mut v = [0f32; 16];
            _mm256_storeu_ps(v.as_mut_ptr(), row[0]);
            _mm256_storeu_ps(v.as_mut_ptr().add(8), row[1]);
            for (i, &v) in v[..width].iter().enumerate() {
                *dst.add(i) = bias.map_or(v, |b| v + b[j + i]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noise;

    /// Each output is the chain `mul_add` over the inner dimension in order, then the bias,
    /// bit for bit, on every level this CPU has, for shapes with every tail (rows not a
    /// multiple of a tile, columns not of a group or a register, an inner dimension of several
    /// of the AVX2 copy's blocks).
    #[test]
    fn every_level_gives_the_chain_bit_for_bit() {
        for (n, k, m) in
            [(1, 1, 1), (3, 5, 17), (5, 37, 65), (7, 64, 130), (33, 131, 64), (70, 384, 100), (9, 1100, 40)]
        {
            let x = noise(n * k, (n * 31 + k) as u64);
            let wt = noise(k * m, (k * 7 + m) as u64);
            let bias = noise(m, 5);
            let w = Packed::new(&wt, k, m);
            for b in [Some(bias.as_slice()), None] {
                let want: Vec<f32> = (0..n * m)
                    .map(|e| {
                        let (i, j) = (e / m, e % m);
                        let acc = (0..k).fold(0f32, |acc, r| x[i * k + r].mul_add(wt[r * m + j], acc));
                        b.map_or(acc, |b| acc + b[j])
                    })
                    .collect();
                for level in 0..=crate::attention::cpu_level() {
                    let got = product(&x, n, &w, b, level);
                    let diff = got.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits());
                    assert_eq!(diff, None, "{n}×{k}×{m}, bias {}, level {level}", b.is_some());
                }
            }
        }
    }

    /// No rows, no columns or no inner dimension: zeros, or the bias.
    #[test]
    fn empty_shapes() {
        let w = Packed::new(&[], 0, 3);
        assert_eq!(product(&[], 2, &w, Some(&[1.0, 2.0, 3.0]), 2), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
        let w = Packed::new(&[], 4, 0);
        assert!(product(&[0.0; 8], 2, &w, None, 2).is_empty());
        let w = Packed::new(&[1.0; 12], 4, 3);
        assert!(product(&[], 0, &w, None, 2).is_empty());
    }
}
