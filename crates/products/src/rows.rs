//! The f32 row loops of seamcut's fused CPU ops (`seamcut::embed::fused`, `gelu`, `layers`):
//! softmax, residual + layer norm, GELU and the gated activations, with the exponential and
//! erf they use. Each loop is compiled for AVX-512, for AVX2 with FMA and for the baseline,
//! and the caller names the copy (`level`, as for [`crate::attention`]); the loops spell out
//! their lanes and never fuse a multiply into an add, so every copy gives the same bits.
//!
//! Here rather than in seamcut's crate so that its debug builds compile them optimised:
//! unoptimised, these loops and their iterator adaptors were about a third of a MiniLM test's
//! time.

/// Defines `fn $name(level: u8, args)`, which runs its body compiled for AVX-512 (level 2)
/// or AVX2 with FMA (1) where the CPU has them, else for the baseline (seamcut's static model
/// defines its row sums with it too). The bodies are loops
/// written to vectorise (independent lanes, no branches) with `#[inline(always)]` helpers, so
/// each copy is compiled for its features. (A closure handed to a `#[target_feature]`
/// function is not inlined into it reliably: measured, it was not, so the bodies are spelled
/// out here.)
#[macro_export]
macro_rules! level_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        $vis fn $name(level: u8, $($arg: $ty),*) {
            #[inline(always)]
            fn body($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
                unsafe fn v4($($arg: $ty),*) {
                    body($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn v3($($arg: $ty),*) {
                    body($($arg),*)
                }
                match $crate::attention::usable(level) {
                    // SAFETY: the level's features were detected on this CPU.
                    2 => return unsafe { v4($($arg),*) },
                    // SAFETY: as above.
                    1 => return unsafe { v3($($arg),*) },
                    _ => {}
                }
            }
            body($($arg),*)
        }
    };
}

/// e^x for f32 (Cephes' `expf`: x = n·ln 2 + r, |r| ≤ ln 2 / 2, a degree-6 polynomial in r,
/// scaled by 2ⁿ through the exponent bits), within about 2 ulp; branch-free so loops over it
/// vectorise. Inputs below −87.3 give 2⁻¹²⁶ rather than 0 (softmax adds them to a sum ≥ 1);
/// above 88 (where e^x nears f32's largest value), e⁸⁸.
#[inline(always)]
#[must_use]
pub fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.3, 88.0);
    // Round to nearest by adding 1.5·2²³: n is then both `m − 1.5·2²³` and the low bits of
    // m's representation, so 2ⁿ is built from bits with no float-to-int conversion (which
    // did not vectorise) and no call to floorf (where SSE4.1 is not assumed).
    const MAGIC: f32 = 12_582_912.0;
    let m = x * std::f32::consts::LOG2_E + MAGIC;
    let n = m - MAGIC;
    let pow2 = f32::from_bits((m.to_bits().wrapping_sub(MAGIC.to_bits()).wrapping_add(127)) << 23);
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5; // Cephes' 5.0000001201e-1, which is 0.5 in f32
    let y = p * r * r + r + 1.0;
    y * pow2
}

/// Softmax of one row in place: e^(x − max) / Σ.
#[inline(always)]
fn softmax_row(r: &mut [f32]) {
    let max = max(r);
    for x in r.iter_mut() {
        *x = exp(*x - max);
    }
    let sum = sum(r);
    let inv = 1.0 / sum;
    for x in r.iter_mut() {
        *x *= inv;
    }
}

level_fn! {
    /// Softmax of each row of `l` in place.
    pub fn softmax_rows(scores: &mut [f32], l: usize) {
        // Plain `for` loops: iterator adaptors such as `for_each` go through `fold`, which
        // the compiler did not inline here, leaving the body compiled for baseline x86-64.
        for r in scores.chunks_mut(l) {
            softmax_row(r);
        }
    }
}

/// The largest element (−∞ for none), in 16 independent lanes.
#[inline(always)]
fn max(v: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 16];
    let mut chunks = v.chunks_exact(16);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a = if x > *a { x } else { *a };
        }
    }
    let mut m = f32::NEG_INFINITY;
    for &x in acc.iter().chain(chunks.remainder()) {
        m = if x > m { x } else { m };
    }
    m
}

/// Σ of a slice in 16 independent lanes (a float sum in order does not vectorise).
#[inline(always)]
fn sum(v: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let mut chunks = v.chunks_exact(16);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    let mut total = 0f32;
    for &x in acc.iter().chain(chunks.remainder()) {
        total += x;
    }
    total
}

/// Σ (x − mean)² of a slice, lanes as in [`sum`].
#[inline(always)]
fn sum_sq_dev(v: &[f32], mean: f32) -> f32 {
    let mut acc = [0f32; 16];
    let mut chunks = v.chunks_exact(16);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += (x - mean) * (x - mean);
        }
    }
    let mut total = 0f32;
    for &a in &acc {
        total += a;
    }
    for &x in chunks.remainder() {
        total += (x - mean) * (x - mean);
    }
    total
}

level_fn! {
    /// `a = LayerNorm((a + ab) + b)` row by row, rows of `w.len()`; `ab`, when given, is added
    /// to every row of `a`.
    pub fn add_norm_rows(a: &mut [f32], ab: Option<&[f32]>, b: &[f32], w: &[f32], c: &[f32], eps: f32) {
        let h = w.len();
        for (o, b) in a.chunks_mut(h).zip(b.chunks(h)) {
            match ab {
                Some(ab) => {
                    for (o, (&ab, &b)) in o.iter_mut().zip(ab.iter().zip(b)) {
                        *o = (*o + ab) + b;
                    }
                }
                None => {
                    for (o, &b) in o.iter_mut().zip(b) {
                        *o += b;
                    }
                }
            }
            // Two passes (mean, then the squared deviations), as torch computes it.
            let mean = sum(o) / h as f32;
            let var = sum_sq_dev(o, mean) / h as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for (o, (&w, &c)) in o.iter_mut().zip(w.iter().zip(c)) {
                *o = (*o - mean) * inv * w + c;
            }
        }
    }
}

/// erf(x) for f32, within a few ulp. Plain multiply-adds rather than `mul_add`: without
/// the FMA target feature `mul_add` is a library call, 30× slower.
#[inline(always)]
#[must_use]
pub fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 + -2.101_024e-6;
    p = p * x2 + -5.692_506_4e-5;
    p = p * x2 + -7.349_906e-4;
    p = p * x2 + -2.954_6e-3;
    p = p * x2 + -1.609_603_3e-2;
    let p = x * p;
    let mut q = -1.456_607_2e-5_f32;
    q = q * x2 + -2.133_740_6e-4;
    q = q * x2 + -1.682_827e-3;
    q = q * x2 + -7.373_329e-3;
    q = q * x2 + -1.426_474e-2;
    p / q
}

level_fn! {
    /// `o[i] = gelu(s[i])`.
    pub fn gelu_slice(o: &mut [f32], s: &[f32]) {
        for (o, &x) in o.iter_mut().zip(s) {
            *o = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
        }
    }
}

level_fn! {
    /// `o = gelu(s + b)` row by row, `b` added to every row (rows of `b.len()`).
    pub fn gelu_bias_rows(o: &mut [f32], s: &[f32], b: &[f32]) {
        let m = b.len();
        for (o, s) in o.chunks_mut(m).zip(s.chunks(m)) {
            for (o, (&x, &c)) in o.iter_mut().zip(s.iter().zip(b)) {
                let x = x + c;
                *o = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
    }
}

level_fn! {
    /// `o[i] += s[i]`: a residual connection added in place.
    pub fn add_slice(o: &mut [f32], s: &[f32]) {
        for (o, &x) in o.iter_mut().zip(s) {
            *o += x;
        }
    }
}

level_fn! {
    /// `o[i] = gelu(o[i])`.
    pub fn gelu_slice_in_place(o: &mut [f32]) {
        for o in o.iter_mut() {
            let x = *o;
            *o = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
        }
    }
}

level_fn! {
    /// `o = gelu(o + b)` row by row, `b` added to every row (rows of `b.len()`).
    pub fn gelu_bias_rows_in_place(o: &mut [f32], b: &[f32]) {
        for o in o.chunks_mut(b.len()) {
            for (o, &c) in o.iter_mut().zip(b) {
                let x = *o + c;
                *o = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
    }
}

level_fn! {
    /// One row of [`glu`]: `o[j] = act(a[j]) · u[j]`, `act` 0 GELU (erf), 1 GELU (tanh),
    /// 2 SiLU, 3 ReLU.
    pub fn glu_row(o: &mut [f32], a: &[f32], u: &[f32], act: u8) {
        match act {
            0 => {
                for (o, (&x, &g)) in o.iter_mut().zip(a.iter().zip(u)) {
                    *o = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2)) * g;
                }
            }
            1 => {
                for (o, (&x, &g)) in o.iter_mut().zip(a.iter().zip(u)) {
                    // tanh(z) = 1 − 2 / (e^(2z) + 1)
                    let z = 0.797_884_6 * (x + 0.044_715 * x * x * x);
                    let t = 1.0 - 2.0 / (exp(2.0 * z) + 1.0);
                    *o = 0.5 * x * (1.0 + t) * g;
                }
            }
            2 => {
                for (o, (&x, &g)) in o.iter_mut().zip(a.iter().zip(u)) {
                    *o = x / (1.0 + exp(-x)) * g;
                }
            }
            _ => {
                for (o, (&x, &g)) in o.iter_mut().zip(a.iter().zip(u)) {
                    *o = if x > 0.0 { x * g } else { 0.0 };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_accurate() {
        let mut worst = 0f64;
        for i in -870_000..=880_000 {
            let x = i as f32 / 10_000.0;
            let want = f64::from(x).exp();
            let rel = (f64::from(exp(x)) - want).abs() / want;
            worst = worst.max(rel);
        }
        assert!(worst < 3e-7, "max relative error {worst}");
        assert!(exp(-1000.0) < 1e-37 && exp(-1000.0) >= 0.0);
    }

    /// Every vector level gives the same bits for these loops: softmax, layer norm, GELU and
    /// the gated activations (not an encoder's output as a whole: gemm picks its own kernels
    /// by CPU). This crate is compiled optimised in every profile, so the copies are
    /// vectorised here.
    #[test]
    fn every_level_gives_the_same_bits() {
        let v: Vec<f32> = (0..389).map(|i| ((i * 7919) % 211) as f32 / 17.0 - 6.0).collect();
        let w: Vec<f32> = (0..389).map(|i| 1.0 + (i % 7) as f32 / 9.0).collect();
        let run = |level| {
            let mut s = v.clone();
            softmax_rows(level, &mut s, 97); // rows of 97: a tail past every vector width
            let mut o = v.clone();
            add_norm_rows(level, &mut o, None, &s, &w, &v, 1e-12);
            let mut g = vec![0f32; 389];
            gelu_slice(level, &mut g, &v);
            let mut a = w.clone();
            add_slice(level, &mut a, &v);
            g.extend_from_slice(&a);
            let mut u = vec![0f32; 389];
            for act in 0..4 {
                glu_row(level, &mut u, &v, &w, act);
                g.extend_from_slice(&u);
            }
            (s, o, g)
        };
        let top = run(2);
        for level in [1, 0] {
            assert!(run(level) == top, "level {level} differs from level 2");
        }
    }

    #[test]
    fn softmax_and_sums_match_plain_loops() {
        let v: Vec<f32> = (0..37).map(|i| ((i * 7919) % 101) as f32 / 13.0 - 3.0).collect();
        let mut r = v.clone();
        softmax_rows(2, &mut r, v.len());
        let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f64> = v.iter().map(|&x| f64::from(x - max).exp()).collect();
        let z: f64 = e.iter().sum();
        for (a, b) in r.iter().zip(&e) {
            assert!((f64::from(*a) - b / z).abs() < 1e-6);
        }
        let plain: f32 = v.iter().sum();
        assert!((sum(&v) - plain).abs() < 1e-4);
    }

    #[test]
    fn erf_is_accurate() {
        let mut worst = 0f64;
        for i in -60_000..=60_000 {
            let x = i as f64 / 10_000.0;
            let e = (f64::from(erf(x as f32)) - libm_erf(x)).abs();
            worst = worst.max(e);
        }
        assert!(worst < 5e-7, "max abs error {worst}");
    }

    // erf in f64 by its series/continued fraction is overkill here; Rust's std has no erf,
    // so use the relation with the regularised incomplete gamma via a high-order series.
    fn libm_erf(x: f64) -> f64 {
        // Taylor series converges well for |x| <= 3; beyond, erf is 1 - tiny.
        if x.abs() > 3.0 {
            let t = 1.0 / (1.0 + 0.5 * x.abs());
            // Numerical Recipes erfc (relative error < 1.2e-7 is too loose); use complement series.
            let y = t
                * (-x * x - 1.265_512_23
                    + t * (1.000_023_68
                        + t * (0.374_091_96
                            + t * (0.096_784_18
                                + t * (-0.186_288_06
                                    + t * (0.278_868_07
                                        + t * (-1.135_203_98
                                            + t * (1.488_515_87
                                                + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
                    .exp();
            return if x > 0.0 { 1.0 - y } else { y - 1.0 };
        }
        let mut sum = 0.0;
        let mut term = x;
        let mut n = 0;
        while n < 200 {
            sum += term / f64::from(2 * n + 1);
            n += 1;
            term *= -x * x / f64::from(n);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }
}
