//! bf16 products on AVX-512 BF16 (`vdpbf16ps`: AMD Zen 4 and later, Intel Cooper Lake): for
//! `--dtype bf16` on CPUs without AMX tiles. Weights are rounded to bf16 once at load and
//! held at that width; activations are rounded at each product; the sums are f32.
//!
//! Layout: the weight `[k, m]` is held as `[m/16][k/2][16][2]` bf16 values (16 columns × a
//! pair of rows in 64 bytes, the pairs `vdpbf16ps` multiplies and adds), `k` padded to 2 and
//! `m` to 64 with zeros. A tile is 4 rows × 64 columns: 16 accumulators of 16 f32.

use rayon::prelude::*;

use crate::round_up;

/// Columns per block of the layout, and columns per group a tile takes.
const COLS: usize = 16;
const GROUP: usize = 4 * COLS;
/// Values of one layout block (16 columns × 2 rows).
const BLOCK: usize = 2 * COLS;
/// Rows each parallel task takes.
const TASK_ROWS: usize = 32;

/// Whether this CPU has AVX-512 BF16 (checked once), and [`crate::simd_cap`] allows it.
#[must_use]
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            crate::simd_cap() >= 2
                && std::arch::is_x86_feature_detected!("avx512bf16")
                && std::arch::is_x86_feature_detected!("avx512bw")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// f32 → bf16, rounding to nearest even (NaN stays NaN). Branch-free, so that a loop of it
/// vectorises.
#[inline(always)]
#[must_use]
pub fn round(x: f32) -> u16 {
    let b = x.to_bits();
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    let nan = ((b >> 16) | 0x40) as u16;
    if x.is_nan() {
        nan
    } else {
        rounded
    }
}

/// A weight matrix `[k, m]` rounded to bf16 and packed for [`product`].
#[derive(Debug, Clone)]
pub struct Packed {
    k: usize,
    m: usize,
    kp: usize,
    mp: usize,
    data: Vec<u16>,
}

impl Packed {
    /// Round and pack `wt` (`k × m`, row-major).
    ///
    /// # Panics
    /// If `wt` does not hold `k × m` values.
    #[must_use]
    pub fn new(wt: &[f32], k: usize, m: usize) -> Self {
        assert_eq!(wt.len(), k * m, "a {k}×{m} matrix");
        let (kp, mp) = (round_up(k.max(1), 2), round_up(m.max(1), GROUP));
        let mut data = vec![0u16; kp * mp];
        for (r, row) in wt.chunks(m.max(1)).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                data[((j / COLS * (kp / 2) + r / 2) * COLS + j % COLS) * 2 + r % 2] = round(v);
            }
        }
        Self { k, m, kp, mp, data }
    }

    /// Rows (the products' inner dimension) and columns.
    #[must_use]
    pub fn shape(&self) -> (usize, usize) {
        (self.k, self.m)
    }
}

/// Rows of `x` (`k` wide) as bf16, `kp` wide (zero padded).
#[inline(always)]
fn round_rows(x: &[f32], k: usize, kp: usize, dst: &mut [u16]) {
    for (row, d) in x.chunks(k).zip(dst.chunks_mut(kp)) {
        for (d, &v) in d.iter_mut().zip(row) {
            *d = round(v);
        }
    }
}

/// `x · w` (+ `bias` on every row) for `x` `[n, k]` row-major f32: bf16 inputs, f32 sums.
/// Call only where [`available`] is true.
///
/// # Panics
/// If `x` does not hold `n × k` values for `w`'s `k`, the bias is not `m` long, or the CPU
/// lacks AVX-512 BF16.
#[must_use]
pub fn product(x: &[f32], n: usize, w: &Packed, bias: Option<&[f32]>) -> Vec<f32> {
    let (k, m, kp) = (w.k, w.m, w.kp);
    assert!(available(), "AVX-512 BF16 products on a CPU without them");
    if let Some(out) = crate::trivial(x, n, k, m, bias) {
        return out;
    }
    // Not zeroed first: the tiles write every value.
    let mut out: Vec<f32> = Vec::with_capacity(n * m);
    let spare = &mut out.spare_capacity_mut()[..n * m];
    spare.par_chunks_mut(TASK_ROWS * m).zip(x.par_chunks(TASK_ROWS * k)).for_each(|(o, xs)| {
        let rows = xs.len() / k;
        let mut a = vec![0u16; rows * kp];
        // SAFETY: the CPU has AVX-512 BF16 (asserted above); the tiles read `a` within
        // `rows × kp` and `w.data` within `kp × mp`, and write inside `o` (`rows × m`).
        #[cfg(target_arch = "x86_64")]
        unsafe {
            run(xs, k, &mut a, rows, w, bias, o.as_mut_ptr().cast());
        }
    });
    // SAFETY: the tiles wrote every column of every row of each task's chunk (`run` visits
    // every row and column group, a tile stores every column of its group up to `m`), and the
    // chunks cover the `n · m` values. (Off x86-64 `available` is false, asserted above.)
    unsafe { out.set_len(n * m) };
    out
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn run(
    xs: &[f32],
    k: usize,
    a: &mut [u16],
    rows: usize,
    w: &Packed,
    bias: Option<&[f32]>,
    o: *mut f32,
) {
    round_rows(xs, k, w.kp, a);
    for g in 0..w.mp / GROUP {
        for r0 in (0..rows).step_by(4) {
            match rows - r0 {
                1 => tile::<1>(a, r0, g, w, bias, o),
                2 => tile::<2>(a, r0, g, w, bias, o),
                3 => tile::<3>(a, r0, g, w, bias, o),
                _ => tile::<4>(a, r0, g, w, bias, o),
            }
        }
    }
}

/// `R` rows × the 64 columns of group `g`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn tile<const R: usize>(
    a: &[u16],
    r0: usize,
    g: usize,
    w: &Packed,
    bias: Option<&[f32]>,
    o: *mut f32,
) {
    use std::arch::x86_64::*;
    let (kp, m) = (w.kp, w.m);
    let steps = kp / 2;
    let b = w.data.as_ptr().add(g * 4 * steps * BLOCK);
    let ap = a.as_ptr().add(r0 * kp);
    let mut acc = [[_mm512_setzero_ps(); 4]; R];
    for s in 0..steps {
        let bs: [__m512bh; 4] = [0, 1, 2, 3]
            .map(|c| std::mem::transmute(_mm512_loadu_si512(b.add((c * steps + s) * BLOCK).cast())));
        for (r, row) in acc.iter_mut().enumerate() {
            let pair = ap.add(r * kp + 2 * s).cast::<i32>().read_unaligned();
            let av: __m512bh = std::mem::transmute(_mm512_set1_epi32(pair));
            for (c, v) in row.iter_mut().enumerate() {
                *v = _mm512_dpbf16_ps(*v, av, bs[c]);
            }
        }
    }
    // Straight from the registers into the output, with the bias.
    let j0 = g * GROUP;
    for (r, row) in acc.iter().enumerate() {
        let dst = o.add((r0 + r) * m);
        for (c, &v) in row.iter().enumerate() {
            let j = j0 + c * COLS;
            if j >= m {
                break;
            }
            let mask: __mmask16 = if m - j >= COLS { 0xffff } else { (1u16 << (m - j)) - 1 };
            let v = match bias {
                Some(bias) => _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, bias.as_ptr().add(j))),
                None => v,
            };
            _mm512_mask_storeu_ps(dst.add(j), mask, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{cosine, noise};

    fn widen(b: u16) -> f64 {
        f64::from(f32::from_bits(u32::from(b) << 16))
    }

    /// The products are those of the bf16-rounded inputs, summed (in f64 here) within f32's
    /// rounding, on shapes with every tail; skipped on a CPU without AVX-512 BF16.
    #[test]
    fn products_are_those_of_the_rounded_inputs() {
        if !available() {
            eprintln!("skipped: no AVX-512 BF16 on this CPU");
            return;
        }
        for (n, k, m) in [(1, 1, 1), (3, 5, 17), (5, 37, 65), (9, 64, 130), (33, 131, 64), (70, 384, 96)] {
            let x = noise(n * k, (n * 31 + k) as u64);
            let wt = noise(k * m, (k * 7 + m) as u64);
            let bias = noise(m, 5);
            let w = Packed::new(&wt, k, m);
            let got = product(&x, n, &w, Some(&bias));
            for i in 0..n {
                for j in 0..m {
                    let want: f64 =
                        (0..k).map(|r| widen(round(x[i * k + r])) * widen(round(wt[r * m + j]))).sum::<f64>()
                            + f64::from(bias[j]);
                    let scale: f64 = (0..k).map(|r| (x[i * k + r] * wt[r * m + j]).abs()).sum::<f32>().into();
                    let err = (f64::from(got[i * m + j]) - want).abs();
                    assert!(
                        err <= 1e-5 * (scale + 1.0),
                        "{n}×{k}×{m} at ({i}, {j}): {} vs {want}",
                        got[i * m + j]
                    );
                }
            }
        }
        let (n, k, m) = (8, 384, 100);
        let (x, wt) = (noise(n * k, 1), noise(k * m, 2));
        let got = product(&x, n, &Packed::new(&wt, k, m), None);
        for i in 0..n {
            let exact: Vec<f32> =
                (0..m).map(|j| (0..k).map(|r| x[i * k + r] * wt[r * m + j]).sum::<f32>()).collect();
            let c = cosine(&exact, &got[i * m..][..m]);
            assert!(c > 0.9999, "row {i}: cosine {c}");
        }
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        assert_eq!(round(1.0), 0x3f80);
        // 1 + 2^-8 is halfway between two bf16 values: to the even one.
        assert_eq!(round(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(round(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert!(f32::from_bits(u32::from(round(f32::NAN)) << 16).is_nan());
    }
}
