//! Integer matrix products for seamcut's `--dtype int8` on the CPU: the encoders' linear
//! layers read int8 weights (symmetric, quantized once at load with one scale per output
//! channel and block of [`KB`] inputs) and int8 activations (symmetric, quantized at each
//! product with one scale per token and block of [`KB`] inputs), with exact i32 sums inside
//! each block. Everything else stays f32 in seamcut: layer norm, softmax, activations,
//! attention, pooling.
//!
//! Why scales per block of inputs rather than per tensor (ONNX Runtime's `quantize_dynamic`)
//! or per token and channel: BERT-family models carry a few outlier channels in their
//! activations, and a few large weights in the rows that read them. With one scale per token
//! and one per output channel, they crushed the rest (240 parity texts, cosine to
//! sentence-transformers: MiniLM worst 0.981, mean 0.9967; `quantize_dynamic` gives 0.89
//! worst). Scaling activations per block of 64 brought MiniLM to 0.9938 and 0.99893, and
//! MPNet to 0.9915 and 0.99779, most of its loss in the feed-forward's down projection;
//! scaling the weights per block too brought MiniLM to 0.9971 and 0.99933, and MPNet to
//! 0.9966 and 0.99935 (`tests/it/embed_parity.rs` checks floors of 0.995 and 0.999). The cost
//! is one conversion, one product of the two scales and one fused multiply-add per 16 integer
//! steps.
//!
//! Why written here rather than taken from a crate: `gemm` (seamcut's f32 path) has no
//! integer kernel; candle's quantized matmul quantizes weights in GGML blocks of 32 (`q8_0`)
//! rather than per channel, with a dot-product loop rather than a register-blocked kernel;
//! oneDNN would bring a C++ build.
//!
//! The sums are exact, and every path does the same f32 operations in the same order, so
//! every path gives the same bits for the same packed weights, on every CPU. The weights are
//! packed for the best path the CPU has: on 127 levels a side, or 63 where that is AVX2 (see
//! below), so an AVX2-only CPU's int8 vectors are not a VNNI CPU's. The instructions,
//! detected at run time ([`Isa::best`]):
//! - AVX-512 VNNI (`vpdpbusd`: Intel Ice Lake and later, AMD Zen 4 and later): u8 × i8 in one
//!   instruction; activations are quantized straight to u8 (shifted by 128), and each
//!   block's sums start at the shift's products taken off (`−128 · Σ w` over the block, per
//!   column).
//! - AVX2 (`vpmaddubsw` then `vpmaddwd`): `vpmaddubsw` multiplies u8 by i8 and saturates
//!   its i16 pair sums, so on a CPU whose best is AVX2 the weights are quantized to 63
//!   levels a side instead of 127 ([`Isa::weight_levels`]): with activations shifted to u8
//!   as for VNNI, a pair sums to at most 2 · 255 · 63 = 32,130, and the sums are exact. The
//!   kernel is two multiplying instructions and an add per 32 byte pairs. (The earlier
//!   kernel kept 127 levels by taking `|a|` and `b` with `a`'s sign, `vpsignb`: three more
//!   instructions per 64 byte pairs, which left it no faster than f32 on AVX2 CPUs.) The
//!   other paths run weights of either width, with the same bits.
//! - AVX-VNNI (`vpdpbusd` on 256-bit registers, VEX-encoded: Intel Alder Lake and Sierra
//!   Forest and later, AMD Zen 5; CPUs without AVX-512 among them): the AVX-512 VNNI
//!   kernel's scheme (u8-shifted activations, sums starting at the shift's products taken
//!   off) in the AVX2 kernel's shape.
//! - Elsewhere plain loops, which give the same result.
//!
//! Layout: the weight `[k, m]` is held as `[m/16][k/4][16][4]` bytes (16 columns × 4 rows
//! in 64 bytes, what one 512-bit load or two 256-bit loads feed to the products), `k` padded
//! to [`KB`] and `m` to 64 with zeros.

use rayon::prelude::*;

use crate::round_up;

/// The instructions the products run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Generic,
    Avx2,
    AvxVnni,
    Avx512Vnni,
}

impl Isa {
    /// The best this CPU has (checked once), or the one `SEAMCUT_INT8_ISA` names (`generic`,
    /// `avx2`, `avx-vnni`, `avx512-vnni`), to measure or check a slower path on a CPU that has a faster
    /// one; a name this CPU cannot run is said on stderr and the best is used.
    #[must_use]
    pub fn best() -> Self {
        static BEST: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
        *BEST.get_or_init(|| {
            let here = Self::all_here();
            let best = *here.last().unwrap_or(&Self::Generic);
            match std::env::var("SEAMCUT_INT8_ISA") {
                Ok(name) => match here.iter().find(|i| i.name() == name) {
                    Some(&isa) => isa,
                    None => {
                        let names: Vec<&str> = here.iter().map(|i| i.name()).collect();
                        eprintln!(
                            "seamcut: SEAMCUT_INT8_ISA={name:?} is not one this CPU runs ({}): using {}",
                            names.join(", "),
                            best.name()
                        );
                        best
                    }
                },
                Err(_) => best,
            }
        })
    }

    /// Every path this CPU can run, the generic one first (checked once: every product asks),
    /// within [`crate::simd_cap`] (`avx2`: AVX2 alone, as a CPU without VNNI has it).
    #[must_use]
    pub fn all_here() -> &'static [Self] {
        static HERE: std::sync::OnceLock<Vec<Isa>> = std::sync::OnceLock::new();
        HERE.get_or_init(|| {
            let mut v = vec![Self::Generic];
            #[cfg(target_arch = "x86_64")]
            {
                let cap = crate::simd_cap();
                if cap >= 1
                    && std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    v.push(Self::Avx2);
                    if cap >= 2 && std::arch::is_x86_feature_detected!("avxvnni") {
                        v.push(Self::AvxVnni);
                    }
                }
                if cap >= 2
                    && std::arch::is_x86_feature_detected!("avx512vnni")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    v.push(Self::Avx512Vnni);
                }
            }
            v
        })
    }

    /// The levels a side the weights are quantized to for this path: 63 for AVX2, whose
    /// `vpmaddubsw` would saturate on 127 (see the module's note), 127 elsewhere.
    #[must_use]
    pub fn weight_levels(self) -> u8 {
        match self {
            Self::Avx2 => 63,
            _ => 127,
        }
    }

    /// One word for reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Generic => "generic",
            Self::Avx2 => "avx2",
            Self::AvxVnni => "avx-vnni",
            Self::Avx512Vnni => "avx512-vnni",
        }
    }
}

/// Inputs per activation scale: each token's values are quantized in blocks of this many.
pub const KB: usize = 64;
/// Columns per block of the layout, and columns per group the kernels take at once.
const COLS: usize = 16;
const GROUP: usize = 4 * COLS;
/// Bytes of one layout block (16 columns × 4 rows).
const BLOCK: usize = 4 * COLS;
/// Integer steps (4 inputs each) per activation block.
const STEPS: usize = KB / 4;
/// Rows each parallel task takes.
const TASK_ROWS: usize = 32;

/// A weight matrix `[k, m]` quantized and packed for the integer kernels.
#[derive(Debug, Clone)]
pub struct Packed {
    k: usize,
    m: usize,
    kp: usize,
    mp: usize,
    data: Vec<i8>,
    /// Levels a side the weights take: 127, or 63 for the AVX2 path.
    levels: u8,
    /// Per activation block and column (`[kp/KB][mp]`): the scale, `max |w| / levels` over
    /// the block.
    scale: Vec<f32>,
    /// Per activation block and column (`[kp/KB][mp]`): `−128 · Σ w_q` over the block, what
    /// the u8 shift adds to its sums taken off: the VNNI kernel starts each block's sums there.
    shift: Vec<i32>,
}

impl Packed {
    /// Quantize and pack `wt` (`k × m`, row-major) for the best path this CPU has
    /// ([`Isa::best`]).
    ///
    /// # Panics
    /// If `wt` does not hold `k × m` values.
    #[must_use]
    pub fn new(wt: &[f32], k: usize, m: usize) -> Self {
        Self::with_levels(wt, k, m, Isa::best().weight_levels())
    }

    /// [`Self::new`] with the weights on `levels` a side (at most 127; the AVX2 path needs
    /// at most 63).
    ///
    /// # Panics
    /// If `wt` does not hold `k × m` values, or `levels` is 0 or over 127.
    #[must_use]
    pub fn with_levels(wt: &[f32], k: usize, m: usize, levels: u8) -> Self {
        assert_eq!(wt.len(), k * m, "a {k}×{m} matrix");
        assert!((1..=127).contains(&levels), "{levels} levels");
        let lv = f32::from(levels);
        let (kp, mp) = (round_up(k.max(1), KB), round_up(m.max(1), GROUP));
        // Three passes, each split across threads where its output is (blocks of KB rows, or
        // groups of COLS columns), every value computed as a serial loop would: the load
        // quantizes every weight of the model.
        let rows = |b: usize| wt.chunks(m.max(1)).skip(b * KB).take(KB);
        let mut max = vec![0f32; kp / KB * mp];
        max.par_chunks_mut(mp).enumerate().for_each(|(b, max)| {
            for row in rows(b) {
                for (a, &v) in max.iter_mut().zip(row) {
                    *a = a.max(v.abs());
                }
            }
        });
        let scale: Vec<f32> = max.iter().map(|&a| a / lv).collect();
        let inv: Vec<f32> = max.iter().map(|&a| if a > 0.0 { lv / a } else { 0.0 }).collect();
        let mut shift = vec![0i32; kp / KB * mp];
        shift.par_chunks_mut(mp).enumerate().for_each(|(b, shift)| {
            let inv = &inv[b * mp..];
            for row in rows(b) {
                for (j, &v) in row.iter().enumerate() {
                    shift[j] -= 128 * i32::from(quantize(v, inv[j]));
                }
            }
        });
        let mut data = vec![0i8; kp * mp];
        data.par_chunks_mut(kp * COLS).enumerate().for_each(|(g, data)| {
            let cols = g * COLS..((g + 1) * COLS).min(m);
            let start = g * kp * COLS;
            for (r, row) in wt.chunks(m.max(1)).enumerate() {
                let inv = &inv[r / KB * mp..];
                for j in cols.clone() {
                    data[at(kp, r, j) - start] = quantize(row[j], inv[j]);
                }
            }
        });
        Self { k, m, kp, mp, data, levels, scale, shift }
    }

    /// Rows (the products' inner dimension) and columns.
    #[must_use]
    pub fn shape(&self) -> (usize, usize) {
        (self.k, self.m)
    }
}

/// Rows of a table (a token embedding table) held as int8, with one scale per row and block
/// of [`KB`] values, as the activations are quantized ([`quantize_rows`]): a quarter of the
/// f32 table, read back a row at a time.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    k: usize,
    kp: usize,
    q: Vec<i8>,
    /// `[rows][kp/KB]`.
    scale: Vec<f32>,
}

impl Rows {
    /// An empty table of rows `k` wide.
    #[must_use]
    pub fn new(k: usize) -> Self {
        Self { k, kp: round_up(k.max(1), KB), q: Vec::new(), scale: Vec::new() }
    }

    /// Quantize and append the rows of `x` (`k` wide).
    ///
    /// # Panics
    /// If `x` is not whole rows.
    pub fn extend(&mut self, x: &[f32]) {
        assert!(x.len().is_multiple_of(self.k.max(1)), "rows of {}", self.k);
        let n = x.len() / self.k.max(1);
        let (q0, s0) = (self.q.len(), self.scale.len());
        self.q.resize(q0 + n * self.kp, 0);
        self.scale.resize(s0 + n * self.kp / KB, 0.0);
        quantize_rows(x, self.k, self.kp, &mut self.q[q0..], &mut self.scale[s0..]);
    }

    /// Rows held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.q.len() / self.kp
    }

    /// Whether no row is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// Row `i`, dequantized into `out` (`k` values).
    ///
    /// # Panics
    /// If `i` is past the table or `out` is not `k` long.
    pub fn row_into(&self, i: usize, out: &mut [f32]) {
        assert_eq!(out.len(), self.k, "a row of {}", self.k);
        let nb = self.kp / KB;
        let q = &self.q[i * self.kp..i * self.kp + self.k];
        for ((o, q), &s) in out.chunks_mut(KB).zip(q.chunks(KB)).zip(&self.scale[i * nb..(i + 1) * nb]) {
            for (o, &q) in o.iter_mut().zip(q) {
                *o = f32::from(q) * s;
            }
        }
    }
}

/// Where weight `(r, j)` lies in the packed layout.
fn at(kp: usize, r: usize, j: usize) -> usize {
    ((j / COLS * (kp / 4) + r / 4) * COLS + j % COLS) * 4 + r % 4
}

#[inline(always)]
fn quantize(v: f32, inv: f32) -> i8 {
    // |v · inv| ≤ 127 by the scale's choice; `as` saturates anything else (NaN → 0). Rounded
    // to nearest, ties to even, by adding and taking away 1.5 · 2²³: from 2²³ on, f32s are
    // whole numbers, so the sum rounds (the default rounding mode: to nearest even) and the
    // difference is exact, for any |x| < 2²². `round_ties_even` gives the same values but is
    // a call to libm's `rintf` on baseline x86-64 (no SSE4.1): 27% of loading MPNet in int8.
    const MAGIC: f32 = 12_582_912.0;
    let x = v * inv;
    ((x + MAGIC) - MAGIC) as i8
}

/// A block's scale (what its integers are multiplied by) and the factor that quantizes it
/// (its reciprocal, 0 for an all-zero block), from the block's largest magnitude: the one rule
/// every quantizer here uses.
#[inline(always)]
fn block_scale(max: f32) -> (f32, f32) {
    (max / 127.0, if max > 0.0 { 127.0 / max } else { 0.0 })
}

/// A row's last block, shorter than [`KB`], quantized as the vector quantizers write theirs
/// (shifted to u8: the sign bit flipped); returns its scale. The padding after it is left as
/// it is: it meets zero weights.
#[inline(always)]
fn quantize_tail_shifted(piece: &[f32], d: &mut [i8]) -> f32 {
    let (scale, inv) = block_scale(piece.iter().fold(0f32, |a, &v| a.max(v.abs())));
    for (d, &v) in d.iter_mut().zip(piece) {
        *d = quantize(v, inv) ^ i8::MIN;
    }
    scale
}

/// Rows of `x` (`k` wide) as int8, `kp` wide (zero padded), and their scales, one per row
/// and block of [`KB`] (`[rows][kp/KB]`).
#[inline(always)]
fn quantize_rows(x: &[f32], k: usize, kp: usize, q: &mut [i8], scales: &mut [f32]) {
    let nb = kp / KB;
    for ((row, dst), s) in x.chunks(k).zip(q.chunks_mut(kp)).zip(scales.chunks_mut(nb)) {
        for ((piece, d), s) in row.chunks(KB).zip(dst.chunks_mut(KB)).zip(s) {
            // Lane by lane, then across lanes: a fold of `max` over the whole block compiled to
            // one lane at a time (14% of an int8 MiniLM pass).
            let mut lanes = [0f32; 16];
            for part in piece.chunks(16) {
                for (l, &v) in lanes.iter_mut().zip(part) {
                    *l = l.max(v.abs());
                }
            }
            let inv;
            (*s, inv) = block_scale(lanes.iter().fold(0f32, |a, &v| a.max(v)));
            for (d, &v) in d.iter_mut().zip(piece) {
                *d = quantize(v, inv);
            }
        }
    }
}

/// [`quantize_rows`] with AVX-512's conversions, for the VNNI kernel: the saturating `as i8`
/// of the portable loop compiled to one lane at a time (a sixth of an int8 MiniLM pass). The
/// same values (both round to nearest even, and |v · inv| ≤ 127), written shifted by 128 as u8
/// (the sign bit flipped), which `vpdpbusd` takes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn quantize_rows_avx512(x: &[f32], k: usize, kp: usize, q: &mut [i8], scales: &mut [f32]) {
    use std::arch::x86_64::*;
    let nb = kp / KB;
    for ((row, dst), s) in x.chunks(k).zip(q.chunks_mut(kp)).zip(scales.chunks_mut(nb)) {
        for ((piece, d), s) in row.chunks(KB).zip(dst.chunks_mut(KB)).zip(s) {
            if piece.len() < KB {
                *s = quantize_tail_shifted(piece, d);
                continue;
            }
            let mut m = _mm512_setzero_ps();
            for part in piece.chunks_exact(16) {
                m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(part.as_ptr())));
            }
            let inv;
            (*s, inv) = block_scale(_mm512_reduce_max_ps(m));
            let iv = _mm512_set1_ps(inv);
            let flip = _mm_set1_epi8(i8::MIN);
            for (c, part) in piece.chunks_exact(16).enumerate() {
                let v = _mm512_mul_ps(_mm512_loadu_ps(part.as_ptr()), iv);
                let i = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(v));
                _mm_storeu_si128(d.as_mut_ptr().add(16 * c).cast(), _mm_xor_si128(i, flip));
            }
        }
    }
}

/// [`quantize_rows`] shifted to u8 as [`quantize_rows_avx512`] writes them (the sign bit of
/// each real value flipped; the padding stays zero, and meets zero weights), for the AVX2 and
/// AVX-VNNI kernels, with AVX2's conversions: the same values (`vcvtps2dq` rounds to nearest
/// even, as [`quantize`] does, and the packs saturate where `as` does).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn quantize_rows_avx2_shifted(x: &[f32], k: usize, kp: usize, q: &mut [i8], scales: &mut [f32]) {
    use std::arch::x86_64::*;
    let nb = kp / KB;
    let abs = _mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX));
    let flip = _mm256_set1_epi8(i8::MIN);
    // `vpackssdw` and `vpacksswb` interleave the 128-bit lanes: this puts the dwords back.
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for ((row, dst), s) in x.chunks(k).zip(q.chunks_mut(kp)).zip(scales.chunks_mut(nb)) {
        for ((piece, d), s) in row.chunks(KB).zip(dst.chunks_mut(KB)).zip(s) {
            if piece.len() < KB {
                *s = quantize_tail_shifted(piece, d);
                continue;
            }
            let p = piece.as_ptr();
            let mut m = _mm256_setzero_ps();
            for c in 0..KB / 8 {
                m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(p.add(8 * c)), abs));
            }
            let m = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
            let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
            let inv;
            (*s, inv) = block_scale(_mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1))));
            let iv = _mm256_set1_ps(inv);
            for h in 0..KB / 32 {
                let i = [0, 1, 2, 3]
                    .map(|c| _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p.add(32 * h + 8 * c)), iv)));
                let b = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
                let b = _mm256_permutevar8x32_epi32(b, order);
                _mm256_storeu_si256(d.as_mut_ptr().add(32 * h).cast(), _mm256_xor_si256(b, flip));
            }
        }
    }
}

/// `x · w` (+ `bias` on every row) for `x` `[n, k]` row-major f32, on the best instructions
/// this CPU has.
///
/// # Panics
/// If `x` does not hold `n × k` values for `w`'s `k`, or the bias is not `m` long.
#[must_use]
pub fn product(x: &[f32], n: usize, w: &Packed, bias: Option<&[f32]>) -> Vec<f32> {
    product_on(Isa::best(), x, n, w, bias)
}

/// [`product`] on the given instructions (which this CPU must have: see [`Isa::all_here`]).
///
/// # Panics
/// As [`product`], or if the CPU lacks `isa`.
#[must_use]
pub fn product_on(isa: Isa, x: &[f32], n: usize, w: &Packed, bias: Option<&[f32]>) -> Vec<f32> {
    let (k, m, kp) = (w.k, w.m, w.kp);
    assert!(Isa::all_here().contains(&isa), "int8 products on {} on a CPU without it", isa.name());
    // Weights on more levels than the AVX2 kernel takes (packed for another path) go through
    // the generic one, which gives the same bits.
    let isa = if w.levels > isa.weight_levels() { Isa::Generic } else { isa };
    if let Some(out) = crate::trivial(x, n, k, m, bias) {
        return out;
    }
    // Not zeroed first: the kernels write every value (zeroing was 5% of an int8 MiniLM pass).
    let mut out: Vec<f32> = Vec::with_capacity(n * m);
    let spare = &mut out.spare_capacity_mut()[..n * m];
    spare.par_chunks_mut(TASK_ROWS * m).zip(x.par_chunks(TASK_ROWS * k)).for_each(|(o, xs)| {
        let rows = xs.len() / k;
        let mut q = vec![0i8; rows * kp];
        let mut sx = vec![0f32; rows * (kp / KB)];
        match isa {
            // SAFETY (all): the CPU has the features (asserted above).
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Vnni => unsafe { quantize_rows_avx512(xs, k, kp, &mut q, &mut sx) },
            #[cfg(target_arch = "x86_64")]
            Isa::AvxVnni | Isa::Avx2 => unsafe { quantize_rows_avx2_shifted(xs, k, kp, &mut q, &mut sx) },
            _ => quantize_rows(xs, k, kp, &mut q, &mut sx),
        }
        let block = Block { q: &q, sx: &sx, rows, w, bias };
        match isa {
            // SAFETY (all): as above. The kernels read `q` within this task's `rows × kp`,
            // `sx` within `rows × kp/KB`, `w.data` within its `kp × mp` and `w.shift`
            // within its `kp/KB × mp`; `finish` writes inside `o` (`rows × m`).
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Vnni => unsafe { block.run_vnni(o) },
            #[cfg(target_arch = "x86_64")]
            Isa::AvxVnni => unsafe { block.run_avx_vnni(o) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { block.run_avx2(o) },
            _ => block.run_generic(o),
        }
    });
    // SAFETY: each task's kernel wrote every column of each of its rows (`tiles` covers every
    // row and column group, `finish` and the VNNI stores every column of a group up to `m`),
    // and the tasks' chunks cover the `n · m` values.
    unsafe { out.set_len(n * m) };
    out
}

/// The 256-bit kernels, AVX2's and AVX-VNNI's: one body, two `target_feature` sets (the
/// AVX2 one must not enable AVX-VNNI, which LLVM could fold its products into), differing in
/// the step that adds the byte products of `a` and `b` into `acc`. A macro rather than a
/// generic: a step compiled for AVX-VNNI would not inline into a body compiled without it.
#[cfg(target_arch = "x86_64")]
macro_rules! tile_256 {
    ($(#[$doc:meta])* $run:ident, $tile:ident, $features:literal,
     |$acc:ident, $a:ident, $b:ident| $step:expr) => {
        #[target_feature(enable = $features)]
        unsafe fn $run(&self, out: &mut Out) {
            for (r0, nr, g) in self.tiles() {
                match nr {
                    4 => self.$tile::<4>(out, r0, g),
                    3 => self.$tile::<3>(out, r0, g),
                    2 => self.$tile::<2>(out, r0, g),
                    _ => self.$tile::<1>(out, r0, g),
                }
            }
        }

        $(#[$doc])*
        #[target_feature(enable = $features)]
        unsafe fn $tile<const R: usize>(&self, out: &mut Out, r0: usize, g: usize) {
            use std::arch::x86_64::*;
            let (kp, nb, mp) = (self.w.kp, self.blocks(), self.w.mp);
            let steps = kp / 4;
            let a = self.q.as_ptr().add(r0 * kp);
            let m = self.w.m;
            for c in 0..4 {
                let j = g * GROUP + c * COLS;
                if j >= m {
                    break;
                }
                let b = self.w.data.as_ptr().add((g * 4 + c) * steps * BLOCK);
                let mut accf = [[_mm256_setzero_ps(); 2]; R];
                for blk in 0..nb {
                    let shift = self.w.shift.as_ptr().add(blk * mp + (g * 4 + c) * COLS);
                    let shifts = [_mm256_loadu_si256(shift.cast()), _mm256_loadu_si256(shift.add(8).cast())];
                    let mut acc = [shifts; R];
                    for s in blk * STEPS..(blk + 1) * STEPS {
                        let b0 = _mm256_loadu_si256(b.add(s * BLOCK).cast());
                        let b1 = _mm256_loadu_si256(b.add(s * BLOCK + 32).cast());
                        for (r, row) in acc.iter_mut().enumerate() {
                            let av = _mm256_set1_epi32(a.add(r * kp + 4 * s).cast::<i32>().read_unaligned());
                            row[0] = { let ($acc, $a, $b) = (row[0], av, b0); $step };
                            row[1] = { let ($acc, $a, $b) = (row[1], av, b1); $step };
                        }
                    }
                    let scale = self.w.scale.as_ptr().add(blk * mp + (g * 4 + c) * COLS);
                    let (s0, s1) = (_mm256_loadu_ps(scale), _mm256_loadu_ps(scale.add(8)));
                    for (r, (row, f)) in acc.iter().zip(accf.iter_mut()).enumerate() {
                        let sx = _mm256_set1_ps(*self.sx.get_unchecked((r0 + r) * nb + blk));
                        f[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row[0]), _mm256_mul_ps(sx, s0), f[0]);
                        f[1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row[1]), _mm256_mul_ps(sx, s1), f[1]);
                    }
                }
                // Straight from the registers into the output, with the bias, as
                // `tile_vnni` does: through a zeroed buffer of the group's sums and
                // `finish`, the zeroing and the copy were 5% of an int8 MiniLM pass. The same
                // additions as `finish`, so the same bits.
                let width = (m - j).min(COLS);
                for (r, f) in accf.iter().enumerate() {
                    let dst = out.as_mut_ptr().cast::<f32>().add((r0 + r) * m + j);
                    if width == COLS {
                        let f = match self.bias {
                            Some(bias) => [
                                _mm256_add_ps(f[0], _mm256_loadu_ps(bias.as_ptr().add(j))),
                                _mm256_add_ps(f[1], _mm256_loadu_ps(bias.as_ptr().add(j + 8))),
                            ],
                            None => *f,
                        };
                        _mm256_storeu_ps(dst, f[0]);
                        _mm256_storeu_ps(dst.add(8), f[1]);
                    } else {
                        let mut v = [0f32; COLS];
                        _mm256_storeu_ps(v.as_mut_ptr(), f[0]);
                        _mm256_storeu_ps(v.as_mut_ptr().add(8), f[1]);
                        for (i, &v) in v[..width].iter().enumerate() {
                            // (Not `v + 0.0` without a bias: that turns −0 into +0.)
                            *dst.add(i) = self.bias.map_or(v, |b| v + b[j + i]);
                        }
                    }
                }
            }
        }
    };
}
/// A task's rows of the output, written once each by the kernels.
type Out = [std::mem::MaybeUninit<f32>];

/// One task's rows: their int8 values and scales, and the weight.
struct Block<'a> {
    q: &'a [i8],
    sx: &'a [f32],
    rows: usize,
    w: &'a Packed,
    bias: Option<&'a [f32]>,
}

impl Block<'_> {
    /// The tiles of the block, column groups outermost (a group's weights, `64 · kp` bytes,
    /// stay in cache across the rows): `(first row, rows ≤ 4, column group)`.
    fn tiles(&self) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        (0..self.w.mp / GROUP)
            .flat_map(move |g| (0..self.rows).step_by(4).map(move |r| (r, (self.rows - r).min(4), g)))
    }

    /// Activation blocks per row.
    fn blocks(&self) -> usize {
        self.w.kp / KB
    }

    /// One row's f32 sums for the 64 columns of group `g` into outputs, with the bias.
    #[inline(always)]
    fn finish(&self, out: &mut Out, acc: &[f32; GROUP], row: usize, g: usize) {
        let m = self.w.m;
        let j0 = g * GROUP;
        let width = (m - j0).min(GROUP);
        let dst = &mut out[row * m + j0..][..width];
        match self.bias {
            Some(b) => {
                for ((d, &a), &b) in dst.iter_mut().zip(&acc[..width]).zip(&b[j0..][..width]) {
                    d.write(a + b);
                }
            }
            None => {
                for (d, &a) in dst.iter_mut().zip(&acc[..width]) {
                    d.write(a);
                }
            }
        }
    }

    /// The reference path: plain loops over the same layout.
    fn run_generic(&self, out: &mut Out) {
        let (kp, nb, mp) = (self.w.kp, self.blocks(), self.w.mp);
        for (r0, nr, g) in self.tiles() {
            for r in r0..r0 + nr {
                let a = &self.q[r * kp..][..kp];
                let mut acc = [0f32; GROUP];
                for (c, sum) in acc.iter_mut().enumerate() {
                    let col = &self.w.data[(g * 4 + c / COLS) * (kp / 4) * BLOCK..][..kp * COLS];
                    for blk in 0..nb {
                        let mut s = 0i32;
                        for kq in blk * STEPS..(blk + 1) * STEPS {
                            let (x, w) = (&a[kq * 4..][..4], &col[(kq * COLS + c % COLS) * 4..][..4]);
                            s += x.iter().zip(w).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum::<i32>();
                        }
                        let t = self.sx[r * nb + blk] * self.w.scale[blk * mp + g * GROUP + c];
                        *sum = (s as f32).mul_add(t, *sum);
                    }
                }
                self.finish(out, &acc, r, g);
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
    unsafe fn run_vnni(&self, out: &mut Out) {
        for (r0, nr, g) in self.tiles() {
            match nr {
                4 => self.tile_vnni::<4>(out, r0, g),
                3 => self.tile_vnni::<3>(out, r0, g),
                2 => self.tile_vnni::<2>(out, r0, g),
                _ => self.tile_vnni::<1>(out, r0, g),
            }
        }
    }

    /// `R` rows × the 64 columns of group `g`: 4·R accumulators of 16 i32 within a block,
    /// 4·R of 16 f32 across blocks. The activations come already shifted to u8 (see
    /// [`quantize_rows_avx512`]), and each block's sums start at the shift's `−128 · Σ w`, so
    /// the inner loop is one broadcast per row and one `vpdpbusd` per accumulator.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
    unsafe fn tile_vnni<const R: usize>(&self, out: &mut Out, r0: usize, g: usize) {
        use std::arch::x86_64::*;
        let (kp, nb, mp) = (self.w.kp, self.blocks(), self.w.mp);
        let steps = kp / 4;
        let b = self.w.data.as_ptr().add(g * 4 * steps * BLOCK);
        let a = self.q.as_ptr().add(r0 * kp);
        let mut accf = [[_mm512_setzero_ps(); 4]; R];
        for blk in 0..nb {
            let shift = self.w.shift.as_ptr().add(blk * mp + g * GROUP);
            let shifts = [0, 1, 2, 3].map(|c| _mm512_loadu_si512(shift.add(c * COLS).cast()));
            let mut acc = [shifts; R];
            for s in blk * STEPS..(blk + 1) * STEPS {
                let bs = [0, 1, 2, 3].map(|c| _mm512_loadu_si512(b.add((c * steps + s) * BLOCK).cast()));
                for (r, row) in acc.iter_mut().enumerate() {
                    let av = _mm512_set1_epi32(a.add(r * kp + 4 * s).cast::<i32>().read_unaligned());
                    for (c, v) in row.iter_mut().enumerate() {
                        *v = _mm512_dpbusd_epi32(*v, av, bs[c]);
                    }
                }
            }
            let scale = self.w.scale.as_ptr().add(blk * mp + g * GROUP);
            let scales = [0, 1, 2, 3].map(|c| _mm512_loadu_ps(scale.add(c * COLS)));
            for (r, (row, f)) in acc.iter().zip(accf.iter_mut()).enumerate() {
                let sx = _mm512_set1_ps(*self.sx.get_unchecked((r0 + r) * nb + blk));
                for c in 0..4 {
                    f[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(row[c]), _mm512_mul_ps(sx, scales[c]), f[c]);
                }
            }
        }
        // Straight from the registers into the output, with the bias (a copy through a row
        // buffer was a tenth of this kernel's time on MiniLM's shapes).
        let m = self.w.m;
        let j0 = g * GROUP;
        for (r, row) in accf.iter().enumerate() {
            let dst = out.as_mut_ptr().cast::<f32>().add((r0 + r) * m);
            for (c, &v) in row.iter().enumerate() {
                let j = j0 + c * COLS;
                if j >= m {
                    break;
                }
                let mask: __mmask16 = if m - j >= COLS { 0xffff } else { (1u16 << (m - j)) - 1 };
                let v = match self.bias {
                    Some(bias) => _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, bias.as_ptr().add(j))),
                    None => v,
                };
                _mm512_mask_storeu_ps(dst.add(j), mask, v);
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    tile_256! {
        /// `R` rows × the 64 columns of group `g`, a block of 16 columns at a time, each
        /// block's sums starting at the shift's `−128 · Σ w`, one broadcast per row. On AVX2,
        /// each `vpdpbusd` of [`Self::tile_vnni`] is a `vpmaddubsw` (u8 activations × weights
        /// on 63 levels, pair sums exact in i16), a `vpmaddwd` by ones (pairs of those into
        /// i32) and an add.
        run_avx2, tile_avx2, "avx2,fma",
        |acc, a, b| _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)))
    }

    #[cfg(target_arch = "x86_64")]
    tile_256! {
        /// [`Self::tile_avx2`]'s shape with [`Self::tile_vnni`]'s arithmetic: one `vpdpbusd`
        /// per accumulator.
        run_avx_vnni, tile_avx_vnni, "avx2,fma,avxvnni",
        |acc, a, b| _mm256_dpbusd_avx_epi32(acc, a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{cosine, noise};

    /// Every path this CPU has gives the generic path's bits, on shapes with every tail
    /// (the generic path runs everywhere; this checks it against the fast ones where they
    /// exist).
    #[test]
    fn every_path_gives_the_generic_bits() {
        let paths = Isa::all_here();
        eprintln!("int8 paths here: {:?}", paths.iter().map(|i| i.name()).collect::<Vec<_>>());
        let shapes = [(1, 1, 1), (3, 5, 17), (5, 37, 65), (9, 64, 130), (33, 131, 64), (70, 384, 96)];
        for (case, (n, k, m)) in shapes.into_iter().enumerate() {
            let x = noise(n * k, (n * 31 + k) as u64);
            let wt = noise(k * m, (k * 7 + m) as u64);
            // The last shape at the extremes: every activation and weight at its block's
            // largest, so every byte pair of the AVX2 kernel sums to its bound (2 · 255 · 63),
            // one sign and then the other.
            let (x, wt) = if case == shapes.len() - 1 {
                let sign = |i: usize| if i.is_multiple_of(3) { -1.0 } else { 1.0 };
                ((0..n * k).map(|i| sign(i / k)).collect(), (0..k * m).map(|i| sign(i % m)).collect())
            } else {
                (x, wt)
            };
            let bias = noise(m, 5);
            for levels in [127, 63] {
                let w = Packed::with_levels(&wt, k, m, levels);
                for b in [None, Some(&bias[..])] {
                    let want = product_on(Isa::Generic, &x, n, &w, b);
                    for &isa in &paths[1..] {
                        let got = product_on(isa, &x, n, &w, b);
                        assert!(
                            want.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()),
                            "{} differs from the generic path at {n}×{k}×{m}, {levels} levels",
                            isa.name()
                        );
                    }
                }
            }
        }
        // The extremes' products are exact: each output is ±k (a whole number) up to the scales.
        let (n, k, m) = (4, 128, 64);
        let w = Packed::with_levels(&vec![1.0; k * m], k, m, 63);
        for &isa in paths {
            let got = product_on(isa, &vec![1.0; n * k], n, &w, None);
            assert!(got.iter().all(|&v| (v - k as f32).abs() < 1e-3), "{}: {:?}", isa.name(), &got[..4]);
        }
    }

    /// The quantizer rounds as `round_ties_even` does, ties and signs included, and saturates
    /// as `as` does (NaN → 0).
    #[test]
    fn quantize_rounds_ties_to_even() {
        for i in -2600..=2600 {
            let x = i as f32 * 0.05;
            assert_eq!(quantize(x, 1.0), x.round_ties_even() as i8, "{x}");
        }
        for x in [0.5f32, 1.5, 2.5, -0.5, -1.5, 126.5, -126.5, 127.49, -127.5, 0.49999997] {
            assert_eq!(quantize(x, 1.0), x.round_ties_even() as i8, "{x}");
        }
        assert_eq!(quantize(f32::NAN, 1.0), 0);
        assert_eq!(quantize(300.0, 1.0), 127);
        assert_eq!(quantize(-300.0, 1.0), -128);
    }

    /// A table's rows come back within half a step of their block's scale, an outlier value
    /// coarsening only its own block, appended in pieces or at once alike.
    #[test]
    fn table_rows_come_back_within_half_a_step() {
        let k = 150;
        let mut x = noise(7 * k, 3);
        x[2 * k + 70] = 40.0;
        let mut whole = Rows::new(k);
        whole.extend(&x);
        let mut parts = Rows::new(k);
        parts.extend(&x[..3 * k]);
        parts.extend(&x[3 * k..]);
        assert_eq!((whole.len(), parts.len()), (7, 7));
        let (mut a, mut b) = (vec![0f32; k], vec![0f32; k]);
        for (i, row) in x.chunks(k).enumerate() {
            whole.row_into(i, &mut a);
            parts.row_into(i, &mut b);
            assert_eq!(a, b);
            for (j, (&got, &want)) in a.iter().zip(row).enumerate() {
                let max =
                    row[j / KB * KB..(j / KB * KB + KB).min(k)].iter().fold(0f32, |m, v| m.max(v.abs()));
                assert!(
                    (got - want).abs() <= max / 127.0 / 2.0 + 1e-6,
                    "row {i} value {j}: {got} for {want}"
                );
            }
        }
        // The outlier's block (values 64..128 of row 2) is coarse; the blocks beside it are not.
        whole.row_into(2, &mut a);
        let err = |r: std::ops::Range<usize>| r.map(|j| (a[j] - x[2 * k + j]).abs()).fold(0f32, f32::max);
        assert!(err(0..64) < 0.005 && err(128..150) < 0.005 && err(64..128) > 0.01);
    }

    /// The products are the f32 product's within int8's rounding, outlier channels included:
    /// one input channel 50 times the others coarsens only its own block.
    #[test]
    fn products_are_close_to_f32() {
        let (n, k, m) = (20, 384, 200);
        let mut x = noise(n * k, 1);
        for row in x.chunks_mut(k) {
            row[300] *= 50.0;
        }
        let wt = noise(k * m, 2);
        let w = Packed::new(&wt, k, m);
        let got = product(&x, n, &w, None);
        // Without the outlier's own contribution, per-token scales alone would leave 6 bits.
        for i in 0..n {
            let exact: Vec<f32> =
                (0..m).map(|j| (0..k).map(|r| x[i * k + r] * wt[r * m + j]).sum::<f32>()).collect();
            let c = cosine(&exact, &got[i * m..][..m]);
            assert!(c > 0.9995, "row {i}: cosine {c}");
        }
        // Rows of zeros stay zero.
        let zeros = vec![0f32; 2 * k];
        assert!(product(&zeros, 2, &w, None).iter().all(|&v| v == 0.0));
    }
}
