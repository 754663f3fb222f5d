//! NumPy's statistics, bit for bit where the rules compare against them: `percentile`
//! (linear interpolation, NumPy's `_lerp`), `mean`, population `std`, `gradient`.

/// `numpy.percentile(values, q)` with the default linear method; `q` in 0..=100.
#[must_use]
pub fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    // Two order statistics by selection, O(n), rather than a full sort; selection runs on
    // integer keys that order like the floats (`total_cmp` order), which compares faster.
    let mut v: Vec<u64> = values.iter().map(|x| key(*x)).collect();
    let idx = (q / 100.0) * (v.len() - 1) as f64;
    let lo_f = idx.floor();
    let t = idx - lo_f;
    let lo = lo_f as usize;
    let (_, &mut a, rest) = v.select_nth_unstable(lo);
    let b = if lo + 1 < values.len() { rest.iter().copied().min().unwrap_or(a) } else { a };
    lerp(unkey(a), unkey(b), t)
}

/// [`percentile`] of already sorted values.
#[must_use]
pub fn percentile_sorted(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let idx = (q / 100.0) * (v.len() - 1) as f64;
    let lo = idx.floor();
    let t = idx - lo;
    let lo = lo as usize;
    let hi = (lo + 1).min(v.len() - 1);
    lerp(v[lo], v[hi], t)
}

/// An integer with the same order as `f64::total_cmp` (flip all bits of negatives, the
/// sign bit of positives).
#[inline]
fn key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

#[inline]
fn unkey(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// NumPy's `_lerp`: `a + (b-a)·t`, computed from `b` when `t >= 0.5` for monotonicity.
#[inline]
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let d = b - a;
    if t >= 0.5 {
        b - d * (1.0 - t)
    } else {
        a + d * t
    }
}

/// `numpy.mean` (pairwise summation does not matter at these sizes beyond the last ulp;
/// NumPy sums float64 pairwise in blocks of 8, which this reproduces for n < 8 exactly).
#[must_use]
pub fn mean(v: &[f64]) -> f64 {
    pairwise_sum(v) / v.len() as f64
}

/// `numpy.std` (population, ddof = 0).
#[must_use]
pub fn std(v: &[f64]) -> f64 {
    let m = mean(v);
    let sq: Vec<f64> = v.iter().map(|x| (x - m) * (x - m)).collect();
    (pairwise_sum(&sq) / v.len() as f64).sqrt()
}

/// NumPy's pairwise summation (`pairwise_sum` in `loops_utils.h`): blocks of up to 8
/// unrolled, recursive halves above 128 elements.
fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut s = 0.0;
        for x in a {
            s += x;
        }
        s
    } else if n <= 128 {
        let mut r = [a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]];
        let mut i = 8;
        while i + 8 <= n {
            for k in 0..8 {
                r[k] += a[i + k];
            }
            i += 8;
        }
        let mut s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            s += a[i];
            i += 1;
        }
        s
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
    }
}

/// `numpy.gradient(v)` with unit spacing: central differences inside, one-sided at the ends.
#[must_use]
pub fn gradient(v: &[f64]) -> Vec<f64> {
    let n = v.len();
    if n < 2 {
        return vec![0.0; n];
    }
    let mut g = vec![0.0; n];
    g[0] = v[1] - v[0];
    g[n - 1] = v[n - 1] - v[n - 2];
    for i in 1..n - 1 {
        g[i] = (v[i + 1] - v[i - 1]) / 2.0;
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_matches_numpy() {
        // numpy.percentile([1, 2, 3, 4, 10], [0, 25, 50, 80, 95, 100]) = 1, 2, 3, 5.2, 8.8, 10
        let v = [4.0, 1.0, 10.0, 3.0, 2.0];
        for (q, want) in [(0.0, 1.0), (25.0, 2.0), (50.0, 3.0), (80.0, 5.2), (95.0, 8.8), (100.0, 10.0)] {
            assert!((percentile(&v, q) - want).abs() < 1e-12, "q={q}");
        }
    }

    #[test]
    fn keys_order_like_floats() {
        let xs = [-3.5, -0.0, 0.0, 1e-300, 2.0, f64::INFINITY, f64::NEG_INFINITY, -1e-300];
        for a in xs {
            assert_eq!(unkey(key(a)).to_bits(), a.to_bits());
            for b in xs {
                assert_eq!(key(a).cmp(&key(b)), a.total_cmp(&b), "{a} {b}");
            }
        }
    }

    #[test]
    fn gradient_and_std() {
        assert_eq!(gradient(&[1.0, 2.0, 4.0, 7.0]), vec![1.0, 1.5, 2.5, 3.0]);
        assert!((std(&[1.0, 2.0, 3.0, 4.0]) - 1.118_033_988_749_895).abs() < 1e-15);
    }
}
