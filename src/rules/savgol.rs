//! Savitzky–Golay filtering with mirror boundaries, as `scipy.signal.savgol_filter(mode=
//! "mirror")` and chonkie_core compute it, and the candidate minima chonkie derives from it.

/// Correlation coefficients that evaluate the `deriv`-th derivative (unit spacing) of the
/// least-squares polynomial of order `order` fitted to a window of `window` points, at the
/// window's centre.
#[must_use]
pub fn coefficients(window: usize, order: usize, deriv: usize) -> Vec<f64> {
    let half = (window / 2) as f64;
    let m = order + 1;
    // Normal equations: (AᵀA) c = Aᵀ, with A[i][j] = (i − half)^j.
    let a: Vec<Vec<f64>> =
        (0..window).map(|i| (0..m).map(|j| (i as f64 - half).powi(j as i32)).collect()).collect();
    let mut ata = vec![vec![0.0; m]; m];
    for r in &a {
        for x in 0..m {
            for y in 0..m {
                ata[x][y] += r[x] * r[y];
            }
        }
    }
    // Solve (AᵀA) z = e_deriv; then coefficient_i = deriv! · (A z)_i.
    let mut rhs = vec![0.0; m];
    if deriv < m {
        rhs[deriv] = 1.0;
    }
    let z = solve(ata, rhs);
    let fact: f64 = (1..=deriv).map(|k| k as f64).product();
    a.iter().map(|r| fact * r.iter().zip(&z).map(|(x, y)| x * y).sum::<f64>()).collect()
}

/// Gaussian elimination with partial pivoting for the tiny normal equations.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for col in 0..n {
        let piv = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs())).unwrap_or(col);
        a.swap(col, piv);
        b.swap(col, piv);
        let d = a[col][col];
        if d == 0.0 {
            continue;
        }
        let pivot_row = a[col].clone();
        for r in 0..n {
            if r != col {
                let f = a[r][col] / d;
                for (x, p) in a[r][col..].iter_mut().zip(&pivot_row[col..]) {
                    *x -= f * p;
                }
                b[r] -= f * b[col];
            }
        }
    }
    (0..n).map(|i| if a[i][i] == 0.0 { 0.0 } else { b[i] / a[i][i] }).collect()
}

/// Filter `data` with mirror boundaries (index −k reads k, index n−1+k reads n−1−k).
/// Requires `data.len() >= window`.
#[must_use]
pub fn filter(data: &[f64], window: usize, order: usize, deriv: usize) -> Vec<f64> {
    let h = coefficients(window, order, deriv);
    let n = data.len() as isize;
    let half = (window / 2) as isize;
    let at = |i: isize| -> f64 {
        let j = if i < 0 {
            -i
        } else if i >= n {
            2 * (n - 1) - i
        } else {
            i
        };
        data[j.clamp(0, n - 1) as usize]
    };
    let mut out = Vec::with_capacity(data.len());
    for i in 0..n {
        let mut s = 0.0;
        if i >= half && i + half < n {
            // Interior: read the window directly (same sum order as at the edges).
            let w = &data[(i - half) as usize..(i + half + 1) as usize];
            for (c, x) in h.iter().zip(w) {
                s += c * x;
            }
        } else {
            for (k, c) in h.iter().enumerate() {
                s += c * at(i - half + k as isize);
            }
        }
        out.push(s);
    }
    out
}

/// chonkie's `find_local_minima_interpolated`: indices where the smoothed first derivative
/// is within `tolerance` of zero and the second derivative is positive, with the raw values.
///
/// Both derivatives are computed in one pass with no intermediate arrays (the same sums, in
/// the same order, as [`filter`]): this is the minima rule's hot loop.
#[must_use]
pub fn local_minima(data: &[f64], window: usize, order: usize, tolerance: f64) -> (Vec<usize>, Vec<f64>) {
    let n = data.len();
    if n < window || window == 0 {
        let d1 = filter(data, window.max(1), order, 1);
        let d2 = filter(data, window.max(1), order, 2);
        let keep: Vec<usize> = (0..n).filter(|&i| d1[i].abs() < tolerance && d2[i] > 0.0).collect();
        let vals = keep.iter().map(|&i| data[i]).collect();
        return (keep, vals);
    }
    let h1 = coefficients(window, order, 1);
    let h2 = coefficients(window, order, 2);
    let half = window / 2;
    // Candidates are compacted without branches: about half of all points qualify, in no
    // predictable pattern, so a branch per point would mispredict every other time.
    let mut idx = vec![0usize; n];
    let mut val = vec![0f64; n];
    let mut len = 0usize;
    let mirror = |i: isize| -> f64 {
        let last = n as isize - 1;
        let j = if i < 0 {
            -i
        } else if i > last {
            2 * last - i
        } else {
            i
        };
        data[j.clamp(0, last) as usize]
    };
    let mut test = |i: usize, d1: f64, d2: f64| {
        idx[len] = i;
        val[len] = data[i];
        len += usize::from((d1.abs() < tolerance) & (d2 > 0.0));
    };
    let edge = |i: usize, h: &[f64]| -> f64 {
        let mut s = 0.0;
        for (k, c) in h.iter().enumerate() {
            s += c * mirror(i as isize - half as isize + k as isize);
        }
        s
    };
    for i in 0..half.min(n) {
        test(i, edge(i, &h1), edge(i, &h2));
    }
    match window {
        // Fixed sizes unroll fully; 5 is chonkie's default.
        3 => interior::<3>(data, &h1, &h2, &mut test),
        5 => interior::<5>(data, &h1, &h2, &mut test),
        7 => interior::<7>(data, &h1, &h2, &mut test),
        _ => {
            for (w, i) in data.windows(window).zip(half..) {
                let (mut d1, mut d2) = (0.0, 0.0);
                for k in 0..window {
                    d1 += h1[k] * w[k];
                    d2 += h2[k] * w[k];
                }
                test(i, d1, d2);
            }
        }
    }
    for i in (n - half).max(half)..n {
        test(i, edge(i, &h1), edge(i, &h2));
    }
    idx.truncate(len);
    val.truncate(len);
    (idx, val)
}

/// Interior points for a window of `W` taps (same sums, same order, as [`filter`]).
#[inline]
fn interior<const W: usize>(data: &[f64], h1: &[f64], h2: &[f64], test: &mut impl FnMut(usize, f64, f64)) {
    let h1: [f64; W] = h1.try_into().expect("window taps");
    let h2: [f64; W] = h2.try_into().expect("window taps");
    for (i, w) in data.windows(W).enumerate() {
        let w: &[f64; W] = w.try_into().expect("window");
        let (mut d1, mut d2) = (0.0, 0.0);
        for k in 0..W {
            d1 += h1[k] * w[k];
            d2 += h2[k] * w[k];
        }
        test(i + W / 2, d1, d2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coefficients_match_scipy() {
        // scipy.signal.savgol_coeffs(5, 2, use="dot") = [-3, 12, 17, 12, -3] / 35
        let c = coefficients(5, 2, 0);
        for (x, want) in c.iter().zip([-3.0, 12.0, 17.0, 12.0, -3.0]) {
            assert!((x - want / 35.0).abs() < 1e-12);
        }
        // first derivative, window 5, order 3 (use="dot"): [1, -8, 0, 8, -1] / 12
        let c = coefficients(5, 3, 1);
        for (x, want) in c.iter().zip([1.0, -8.0, 0.0, 8.0, -1.0]) {
            assert!((x - want / 12.0).abs() < 1e-12, "{c:?}");
        }
    }

    #[test]
    fn fused_minima_match_the_two_filters() {
        let data: Vec<f64> = (0..200)
            .map(|i| ((i as f64) * 0.37).sin() * 0.3 + 0.5 + ((i * 7919) % 13) as f64 * 0.01)
            .collect();
        for (w, o) in [(5, 3), (7, 2), (3, 1), (9, 4)] {
            let d1 = filter(&data, w, o, 1);
            let d2 = filter(&data, w, o, 2);
            let want: Vec<usize> = (0..data.len()).filter(|&i| d1[i].abs() < 0.2 && d2[i] > 0.0).collect();
            assert_eq!(local_minima(&data, w, o, 0.2).0, want, "window {w}, order {o}");
        }
    }

    #[test]
    fn quadratic_is_reproduced() {
        let data: Vec<f64> = (0..9).map(|x| f64::from(x * x)).collect();
        let d2 = filter(&data, 5, 3, 2);
        for v in &d2[2..7] {
            assert!((v - 2.0).abs() < 1e-9);
        }
    }
}
