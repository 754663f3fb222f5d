//! The two products of seamcut's tiled attention's inner step (`seamcut::embed::attention::
//! tiled`, f32 on the CPU), written here rather than called through `gemm`: scores `S = scale · Q Kᵀ` for a block of queries against a block of keys, and the
//! context update `acc += P V`; and the step between them, the online softmax.
//!
//! Why not `gemm` (what this used): every call packs its operands again, and the tiled
//! attention makes two calls per (query block, head, key block): each key block was packed
//! once per query block that reads it (64 times per head at 8,192 tokens), each call's
//! dispatch paid for a product of only 128 × 256 × 64, and a window's or causal mask's edge
//! blocks were computed whole. Here each task of the tiled attention packs its key/value head's
//! keys and values once ([`PackedKeys`]: the keys transposed into panels of [`PANEL`] keys),
//! for every query block and query head of its group it runs, and each tile of rows skips
//! the keys none of its rows sees.
//!
//! Every element is one chain of fused multiply-adds in a fixed order (over the head's
//! dimensions for a score, over the keys for a context value), whatever the tile shape, so
//! the AVX-512, AVX2 and portable copies give the same bits (the portable copy's `mul_add` is
//! a correctly rounded library call: slow, and only for CPUs without AVX2). The caller names
//! the copy (`level`: 2 AVX-512, 1 AVX2 with FMA, else portable), as seamcut detects it once
//! for all its f32 loops (`seamcut::embed::fused::simd_level`); a level the CPU lacks is
//! taken down to one it has.
//!
//! Here rather than in seamcut's crate so that its debug builds compile them optimised (see
//! the crate's documentation): the tests run long texts through them. The online softmax
//! was left there at first, and its unoptimised `mul_add` (a library call per step) made the
//! long-context tests several times slower: GTE's parity test 68 s instead of 7.

/// A row-major host matrix view: row `t`'s head `h` starts at `t·stride + offset + h·dim`.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub data: &'a [f32],
    pub stride: usize,
    pub offset: usize,
}

/// `level`, or the best below it this CPU has.
#[must_use]
pub fn usable(level: u8) -> u8 {
    level.min(cpu_level())
}

/// The f32 loops' level this CPU has, checked once: 2 AVX-512 (F, VL, DQ, BW) with AVX2 and
/// FMA, 1 AVX2 with FMA, else 0; no more than [`crate::simd_cap`]. seamcut's
/// `fused::simd_level` reads it too.
#[must_use]
pub fn cpu_level() -> u8 {
    static HERE: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    *HERE.get_or_init(|| detected_level().min(crate::simd_cap()))
}

fn detected_level() -> u8 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f")
            && has!("avx512vl")
            && has!("avx512dq")
            && has!("avx512bw")
            && has!("avx2")
            && has!("fma")
        {
            return 2;
        }
        if has!("avx2") && has!("fma") {
            return 1;
        }
    }
    0
}

/// Keys per panel of [`PackedKeys`]: one AVX-512 register of f32, two AVX2 registers.
pub const PANEL: usize = 16;

/// One key/value head's keys and values over a span of one sequence, packed for the
/// kernels: the keys transposed into panels of [`PANEL`] (`[d][PANEL]` each, dimension-major,
/// the keys side by side, zeros past the span's end), the values `[keys][d]`, each key's row
/// contiguous. (Read in place, a value row was a page of the fused projection away from the
/// next, and a key block's 256 rows missed the TLB.) Filled once per task and read by every
/// query block and query head of the task; grown, never shrunk.
#[derive(Default)]
pub struct PackedKeys {
    keys: Vec<f32>,
    values: Vec<f32>,
    d: usize,
}

impl PackedKeys {
    /// Packs head `h`'s keys and values (of `d` each) for `tokens`, on the kernels' `level`.
    pub fn fill(&mut self, k: View, v: View, h: usize, tokens: std::ops::Range<usize>, d: usize, level: u8) {
        let (t0, count) = (tokens.start, tokens.len());
        let panels = count.div_ceil(PANEL);
        self.d = d;
        self.keys.resize(panels * PANEL * d, 0.0);
        self.values.resize(count * d, 0.0);
        match usable(level) {
            // SAFETY (both): the level's features were detected on this CPU.
            #[cfg(target_arch = "x86_64")]
            2 => unsafe { pack_panels_v4(&mut self.keys, k, h, t0, count, d) },
            #[cfg(target_arch = "x86_64")]
            1 => unsafe { pack_panels_v3(&mut self.keys, k, h, t0, count, d) },
            _ => pack_panels(&mut self.keys, k, h, t0, count, d),
        }
        for (t, dst) in self.values.chunks_exact_mut(d.max(1)).enumerate() {
            dst.copy_from_slice(&v.data[(t0 + t) * v.stride + v.offset + h * d..][..d]);
        }
    }

    /// The panels from key `key` (a multiple of [`PANEL`], from the span's start) on.
    pub fn keys(&self, key: usize) -> &[f32] {
        debug_assert!(key.is_multiple_of(PANEL));
        &self.keys[key * self.d..]
    }

    /// The values from key `key` on, a row of `d` each.
    pub fn values(&self, key: usize) -> &[f32] {
        &self.values[key * self.d..]
    }
}

/// [`PackedKeys::fill`]'s keys: head `h`'s keys of tokens `t0..t0 + count` into panels.
#[inline(always)]
fn pack_panels(keys: &mut [f32], k: View, h: usize, t0: usize, count: usize, d: usize) {
    for (p, dst) in keys.chunks_exact_mut(PANEL * d).enumerate() {
        let here = PANEL.min(count - p * PANEL);
        if here < PANEL {
            dst.fill(0.0);
        }
        let row = |key: usize| &k.data[(t0 + p * PANEL + key) * k.stride + k.offset + h * d..][..d];
        // Dimension-major from key-major rows, in squares of 16 × 16 (one key's run at a
        // time wrote single values 16 apart: a tenth of a long text's attention).
        let mut d0 = 0;
        while here == PANEL && d0 + PANEL <= d {
            let mut square = [[0f32; PANEL]; PANEL];
            for (key, sq) in square.iter_mut().enumerate() {
                sq.copy_from_slice(&row(key)[d0..d0 + PANEL]);
            }
            for (dd, out) in dst[d0 * PANEL..(d0 + PANEL) * PANEL].chunks_exact_mut(PANEL).enumerate() {
                for (o, sq) in out.iter_mut().zip(&square) {
                    *o = sq[dd];
                }
            }
            d0 += PANEL;
        }
        for key in 0..here {
            for (dd, &x) in row(key).iter().enumerate().skip(d0) {
                dst[dd * PANEL + key] = x;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
unsafe fn pack_panels_v4(keys: &mut [f32], k: View, h: usize, t0: usize, count: usize, d: usize) {
    // Whole squares of 16 keys × 16 dimensions by register transposition: moved one value at
    // a time (as `pack_panels` does, even compiled for AVX-512), packing took half as long as
    // a 128-token window's scores at MiniLM's 32 dimensions. The rest as `pack_panels` does.
    let whole = count / PANEL;
    for (p, dst) in keys.chunks_exact_mut(PANEL * d).take(whole).enumerate() {
        let mut d0 = 0;
        while d0 + PANEL <= d {
            let rows: [*const f32; PANEL] = std::array::from_fn(|key| {
                k.data[(t0 + p * PANEL + key) * k.stride + k.offset + h * d + d0..][..PANEL].as_ptr()
            });
            transpose16(rows, dst[d0 * PANEL..(d0 + PANEL) * PANEL].as_mut_ptr());
            d0 += PANEL;
        }
        for key in 0..PANEL {
            let row = &k.data[(t0 + p * PANEL + key) * k.stride + k.offset + h * d..][..d];
            for (dd, &x) in row.iter().enumerate().skip(d0) {
                dst[dd * PANEL + key] = x;
            }
        }
    }
    if whole * PANEL < count {
        let rest = &mut keys[whole * PANEL * d..];
        pack_panels(rest, k, h, t0 + whole * PANEL, count - whole * PANEL, d);
    }
}

/// 16 rows of 16 values (`rows[i]`, each readable for 16) written transposed to `dst`, 16
/// rows of 16: `dst[j·16 + i] = rows[i][j]`. Pairs of values, then pairs of pairs, interleaved
/// within each 128-bit lane, then the lanes gathered across registers.
///
/// # Safety
/// The CPU has AVX-512F; every `rows[i]` has 16 values to read and `dst` 256 to write.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn transpose16(rows: [*const f32; PANEL], dst: *mut f32) {
    use std::arch::x86_64::*;
    let r: [__m512; 16] = std::array::from_fn(|i| _mm512_loadu_ps(rows[i]));
    // t[2i] and t[2i+1]: rows 2i and 2i+1 interleaved, columns 0-1 and 2-3 of each lane.
    let t: [__m512; 16] = std::array::from_fn(|x| {
        let (a, b) = (r[x & !1], r[x | 1]);
        if x % 2 == 0 {
            _mm512_unpacklo_ps(a, b)
        } else {
            _mm512_unpackhi_ps(a, b)
        }
    });
    // u[4i+c], lane L: column 4L + c of rows 4i..4i+3.
    let u: [__m512; 16] = std::array::from_fn(|x| {
        let (i, c) = (x / 4, x % 4);
        let (a, b) = (_mm512_castps_pd(t[4 * i + c / 2]), _mm512_castps_pd(t[4 * i + 2 + c / 2]));
        _mm512_castpd_ps(if c % 2 == 0 { _mm512_unpacklo_pd(a, b) } else { _mm512_unpackhi_pd(a, b) })
    });
    for c in 0..4 {
        let p0 = _mm512_shuffle_f32x4::<0x44>(u[c], u[4 + c]);
        let p1 = _mm512_shuffle_f32x4::<0xEE>(u[c], u[4 + c]);
        let q0 = _mm512_shuffle_f32x4::<0x44>(u[8 + c], u[12 + c]);
        let q1 = _mm512_shuffle_f32x4::<0xEE>(u[8 + c], u[12 + c]);
        _mm512_storeu_ps(dst.add(c * PANEL), _mm512_shuffle_f32x4::<0x88>(p0, q0));
        _mm512_storeu_ps(dst.add((4 + c) * PANEL), _mm512_shuffle_f32x4::<0xDD>(p0, q0));
        _mm512_storeu_ps(dst.add((8 + c) * PANEL), _mm512_shuffle_f32x4::<0x88>(p1, q1));
        _mm512_storeu_ps(dst.add((12 + c) * PANEL), _mm512_shuffle_f32x4::<0xDD>(p1, q1));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn pack_panels_v3(keys: &mut [f32], k: View, h: usize, t0: usize, count: usize, d: usize) {
    pack_panels(keys, k, h, t0, count, d);
}

/// One key block's step for a block of queries.
pub struct Step<'a> {
    /// The block's first query row, `rows` rows `q_stride` apart, this head's `d` values each.
    pub q: &'a [f32],
    pub q_stride: usize,
    pub rows: usize,
    /// The block's keys' panels ([`PackedKeys::at`]), `cols` keys.
    pub keys: &'a [f32],
    /// The block's first value row, `v_stride` apart.
    pub v: &'a [f32],
    pub v_stride: usize,
    pub cols: usize,
    pub d: usize,
    /// Each row's live keys in the block (`a..b`, within `cols`).
    pub live: &'a [(usize, usize)],
}

impl Step<'_> {
    /// Columns of the score rows: `cols` rounded up to whole panels.
    pub fn width(&self) -> usize {
        self.cols.div_ceil(PANEL) * PANEL
    }

    /// The live keys of rows `r0..r0 + n`: the span covering each row's.
    fn reach(&self, r0: usize, n: usize) -> (usize, usize) {
        self.live[r0..r0 + n]
            .iter()
            .filter(|(a, b)| a < b)
            .fold((usize::MAX, 0), |(lo, hi), &(a, b)| (lo.min(a), hi.max(b)))
    }

    fn check(&self, s_len: usize) {
        let (d, w) = (self.d, self.width());
        assert!(
            self.live.len() >= self.rows
                && self.live[..self.rows].iter().all(|&(a, b)| a <= b && b <= self.cols)
        );
        assert!(self.rows == 0 || self.q.len() >= (self.rows - 1) * self.q_stride + d);
        assert!(self.keys.len() >= w * d && s_len >= self.rows * w);
        assert!(self.cols == 0 || self.v.len() >= (self.cols - 1) * self.v_stride + d);
    }
}

/// `s[r, j] = scale · q_r · k_j` for every row and, at least, every live key of each row,
/// `s` `rows × width()`; scores no row of a tile sees are left as they were.
///
/// # Panics
/// When a slice is too short for the step's shape.
pub fn scores(step: &Step, scale: f32, s: &mut [f32], level: u8) {
    step.check(s.len());
    #[cfg(target_arch = "x86_64")]
    match usable(level) {
        // SAFETY (both): the level's features were detected; the shapes were checked above.
        2 => return unsafe { scores_v4(step, scale, s) },
        1 => return unsafe { scores_v3(step, scale, s) },
        _ => {}
    }
    scores_in::<4, 1>(step, scale, s);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
unsafe fn scores_v4(step: &Step, scale: f32, s: &mut [f32]) {
    // 8 rows × 2 panels: 16 accumulators of the 32 registers, a broadcast folded into each FMA.
    scores_in::<8, 2>(step, scale, s);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn scores_v3(step: &Step, scale: f32, s: &mut [f32]) {
    // 6 rows × 1 panel: 12 accumulators, 2 for the panel, 1 for the broadcast.
    scores_in::<6, 1>(step, scale, s);
}

/// [`scores`] in tiles of `R` rows × `P` panels: panels outermost (a pair's keys, 8 KB at 64
/// dimensions, stay in L1 while every row tile reads them).
#[inline(always)]
fn scores_in<const R: usize, const P: usize>(step: &Step, scale: f32, s: &mut [f32]) {
    let np = step.cols.div_ceil(PANEL);
    let w = np * PANEL;
    let mut p0 = 0;
    while p0 < np {
        let wide = np - p0 >= P;
        let mut r0 = 0;
        while r0 < step.rows {
            let n = if step.rows - r0 >= R { R } else { 1 };
            let (lo, hi) = step.reach(r0, n);
            let reach = if wide { p0 * PANEL..(p0 + P) * PANEL } else { p0 * PANEL..(p0 + 1) * PANEL };
            if lo < hi && lo < reach.end && hi > reach.start {
                let q = &step.q[r0 * step.q_stride..];
                let keys = &step.keys[p0 * step.d * PANEL..];
                let out = &mut s[r0 * w + p0 * PANEL..];
                match (n == R, wide) {
                    (true, true) => score_tile::<R, P>(q, step.q_stride, keys, step.d, scale, out, w),
                    (true, false) => score_tile::<R, 1>(q, step.q_stride, keys, step.d, scale, out, w),
                    (false, true) => score_tile::<1, P>(q, step.q_stride, keys, step.d, scale, out, w),
                    (false, false) => score_tile::<1, 1>(q, step.q_stride, keys, step.d, scale, out, w),
                }
            }
            r0 += n;
        }
        p0 += if wide { P } else { 1 };
    }
}

/// `R` rows × `P` panels of scores: for each dimension, the panels' keys loaded once and
/// each row's value broadcast against them.
#[inline(always)]
fn score_tile<const R: usize, const P: usize>(
    q: &[f32],
    qs: usize,
    keys: &[f32],
    d: usize,
    scale: f32,
    out: &mut [f32],
    w: usize,
) {
    let mut acc = [[[0f32; PANEL]; P]; R];
    let keys = &keys[..P * d * PANEL];
    let q = &q[..(R - 1) * qs + d];
    let (qp, kp) = (q.as_ptr(), keys.as_ptr());
    for dd in 0..d {
        // SAFETY (both reads): `keys` holds P panels of d × PANEL and `q` R rows of d, `qs`
        // apart (both sliced to that above): indices p·d·PANEL + dd·PANEL + PANEL ≤ P·d·PANEL
        // and r·qs + dd < (R − 1)·qs + d. (Indexed, the bounds checks of the 2·P + R reads
        // outnumbered the multiply-adds.)
        let k: [[f32; PANEL]; P] = std::array::from_fn(|p| unsafe {
            kp.add((p * d + dd) * PANEL).cast::<[f32; PANEL]>().read_unaligned()
        });
        for (r, acc) in acc.iter_mut().enumerate() {
            let a = unsafe { *qp.add(r * qs + dd) };
            for (acc, k) in acc.iter_mut().zip(&k) {
                for (x, &y) in acc.iter_mut().zip(k) {
                    *x = a.mul_add(y, *x);
                }
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        let row = &mut out[r * w..][..P * PANEL];
        for (dst, acc) in row.chunks_exact_mut(PANEL).zip(acc) {
            for (o, &x) in dst.iter_mut().zip(acc) {
                *o = x * scale;
            }
        }
    }
}

/// `acc[r] += Σ_j p[r, j] · v_j` over each row tile's live keys, `p` `rows × width()`
/// (zero outside each row's live keys, as the online softmax leaves it), `acc` `rows × d`.
///
/// # Panics
/// When a slice is too short for the step's shape.
pub fn context(step: &Step, p: &[f32], acc: &mut [f32], level: u8) {
    step.check(p.len());
    assert!(acc.len() >= step.rows * step.d);
    #[cfg(target_arch = "x86_64")]
    match usable(level) {
        // SAFETY (both): as in `scores`.
        2 => return unsafe { context_v4(step, p, acc) },
        1 => return unsafe { context_v3(step, p, acc) },
        _ => {}
    }
    context_in::<2, 32>(step, p, acc);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
unsafe fn context_v4(step: &Step, p: &[f32], acc: &mut [f32]) {
    // 4 rows × 64 columns: 16 accumulators, 4 registers of values.
    context_in::<4, 64>(step, p, acc);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn context_v3(step: &Step, p: &[f32], acc: &mut [f32]) {
    // 2 rows × 32 columns: 8 accumulators, 4 registers of values, 1 for the broadcast.
    context_in::<2, 32>(step, p, acc);
}

/// Keys per pass of [`context_in`]'s row tiles: 64 keys' values (16 KB at 64 dimensions) stay
/// in L1 while every row tile reads them.
const KEY_CHUNK: usize = 64;

/// [`context`] in tiles of `R` rows × `C` columns, then 16 columns, then one at a time; keys
/// [`KEY_CHUNK`] at a time, outermost.
#[inline(always)]
fn context_in<const R: usize, const C: usize>(step: &Step, p: &[f32], acc: &mut [f32]) {
    let (d, w) = (step.d, step.width());
    for k0 in (0..step.cols).step_by(KEY_CHUNK) {
        let k1 = (k0 + KEY_CHUNK).min(step.cols);
        let mut r0 = 0;
        while r0 < step.rows {
            let n = if step.rows - r0 >= R { R } else { 1 };
            let (lo, hi) = step.reach(r0, n);
            let (lo, hi) = (lo.max(k0), hi.min(k1));
            if lo < hi {
                let mut c0 = 0;
                while c0 < d {
                    let (p, v, a) = (&p[r0 * w..], &step.v[c0..], &mut acc[r0 * d + c0..]);
                    let vs = step.v_stride;
                    c0 += match (n == R, d - c0) {
                        (true, left) if left >= C => context_tile::<R, C>(p, w, v, vs, lo, hi, a, d),
                        (false, left) if left >= C => context_tile::<1, C>(p, w, v, vs, lo, hi, a, d),
                        // A head of 32 (MiniLM's) in one tile, not two of 16: twice the sums
                        // in flight (MiniLM's exact attention 154 → 166 GFLOP/s).
                        (true, left) if C > 32 && left >= 32 => {
                            context_tile::<R, 32>(p, w, v, vs, lo, hi, a, d)
                        }
                        (true, left) if left >= 16 => context_tile::<R, 16>(p, w, v, vs, lo, hi, a, d),
                        (false, left) if left >= 16 => context_tile::<1, 16>(p, w, v, vs, lo, hi, a, d),
                        (true, _) => context_tile::<R, 1>(p, w, v, vs, lo, hi, a, d),
                        (false, _) => context_tile::<1, 1>(p, w, v, vs, lo, hi, a, d),
                    };
                }
            }
            r0 += n;
        }
    }
}

/// `R` rows × `C` columns of the context, over keys `lo..hi`: each key's values loaded once
/// and each row's probability broadcast against them. Returns `C`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn context_tile<const R: usize, const C: usize>(
    p: &[f32],
    w: usize,
    v: &[f32],
    vs: usize,
    lo: usize,
    hi: usize,
    acc: &mut [f32],
    d: usize,
) -> usize {
    let mut a = [[0f32; C]; R];
    for (r, a) in a.iter_mut().enumerate() {
        a.copy_from_slice(&acc[r * d..][..C]);
    }
    if lo < hi {
        let p = &p[..(R - 1) * w + hi];
        let v = &v[..(hi - 1) * vs + C];
        let (pp, vp) = (p.as_ptr(), v.as_ptr());
        for j in lo..hi {
            // SAFETY (both reads): `v` holds key rows to hi − 1, `vs` apart, C values each,
            // and `p` R rows of `w` to column hi − 1 (both sliced to that above). (As in
            // `score_tile`: indexed, the bounds checks outnumbered the multiply-adds.)
            let x = unsafe { vp.add(j * vs).cast::<[f32; C]>().read_unaligned() };
            for (r, a) in a.iter_mut().enumerate() {
                let pr = unsafe { *pp.add(r * w + j) };
                for (a, &x) in a.iter_mut().zip(&x) {
                    *a = pr.mul_add(x, *a);
                }
            }
        }
    }
    for (r, a) in a.iter().enumerate() {
        acc[r * d..][..C].copy_from_slice(a);
    }
    C
}

/// Lanes of the explicit vector loops in [`online_softmax`] (an AVX-512 register of f32).
const LANES: usize = 16;

crate::level_fn! {
    /// One key block's step of the online softmax, for `rows` queries: row `r` of `s`
    /// (`cols` scores) keeps its live keys `live[r]` and zeroes the rest; each live score
    /// becomes e^(score − the running maximum), the row's running sum `l[r]` and maximum `m[r]`
    /// are updated, and its context row in `acc` (`d` floats) is rescaled by how far the
    /// maximum grew. The maximum and the sum run in [`LANES`] explicit lanes, so that the loops
    /// vectorise (a plain float reduction may not be reordered by the compiler) and compile for
    /// AVX-512 or AVX2 where the CPU has them: this step was 40% of a long text's time as a
    /// scalar loop (benches/RESULTS.md). `level` names the copy, as for [`scores`]; the
    /// exponential is [`exp_fused`], one fused chain in every copy, so all give the same bits.
    ///
    /// # Panics
    /// When a slice is too short for `live.len()` rows.
    #[allow(clippy::too_many_arguments)]
    pub fn online_softmax(
        s: &mut [f32],
        cols: usize,
        live: &[(usize, usize)],
        m: &mut [f32],
        l: &mut [f32],
        acc: &mut [f32],
        d: usize,
    ) {
        let rows = live.len();
        assert!(s.len() >= rows * cols && m.len() >= rows && l.len() >= rows && acc.len() >= rows * d);
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
            let corr = exp_fused(m[r] - new_m);
            // e^(x − max) and its sum in one pass, in lanes.
            let mut sums = [0f32; LANES];
            let mut chunks = live.chunks_exact_mut(LANES);
            for c in &mut chunks {
                for (x, s) in c.iter_mut().zip(sums.iter_mut()) {
                    *x = exp_fused(*x - new_m);
                    *s += *x;
                }
            }
            let mut sum = sums.iter().sum::<f32>();
            for x in chunks.into_remainder() {
                *x = exp_fused(*x - new_m);
                sum += *x;
            }
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

/// e^x for f32: seamcut's `fused::exp` (Cephes' `expf`, within about 2 ulp, branch-free) with
/// its polynomial's steps fused (`mul_add`): about half the vector operations where the CPU has
/// FMA, for [`online_softmax`], a quarter of a long text's attention with the unfused one.
/// Its bits differ from `fused::exp`'s, and without FMA each step is a library call.
#[inline(always)]
#[must_use]
pub fn exp_fused(x: f32) -> f32 {
    let x = x.clamp(-87.3, 88.0);
    const MAGIC: f32 = 12_582_912.0;
    let m = x.mul_add(std::f32::consts::LOG2_E, MAGIC);
    let n = m - MAGIC;
    let pow2 = f32::from_bits((m.to_bits().wrapping_sub(MAGIC.to_bits()).wrapping_add(127)) << 23);
    let r = n.mul_add(2.121_944_4e-4, n.mul_add(-0.693_359_4, x));
    let mut p = 1.987_569_1e-4_f32;
    p = p.mul_add(r, 1.398_199_9e-3);
    p = p.mul_add(r, 8.333_452e-3);
    p = p.mul_add(r, 4.166_579_6e-2);
    p = p.mul_add(r, 1.666_666_5e-1);
    p = p.mul_add(r, 0.5);
    let y = (p * r).mul_add(r, r + 1.0);
    y * pow2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX-512 packing (squares transposed in registers) equals the portable one, for
    /// spans with partial panels and head sizes with partial squares.
    #[test]
    fn packed_keys_are_the_same_on_every_level() {
        let (n, stride) = (80, 3 * 96);
        let data = crate::noise(n * stride, 9);
        for (d, h, t0, count) in
            [(32, 2, 0, 64), (64, 0, 3, 67), (40, 1, 5, 33), (16, 5, 0, 16), (8, 3, 1, 20)]
        {
            let k = View { data: &data, stride, offset: 7 };
            let mut want = PackedKeys::default();
            want.fill(k, k, h, t0..t0 + count, d, 0);
            for level in 1..=cpu_level() {
                let mut got = PackedKeys::default();
                got.fill(k, k, h, t0..t0 + count, d, level);
                assert_eq!(got.keys, want.keys, "d {d}, head {h}, {count} keys from {t0}, level {level}");
            }
        }
    }
}
