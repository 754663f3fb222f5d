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
#[must_use]
pub fn local_minima(data: &[f64], window: usize, order: usize, tolerance: f64) -> (Vec<usize>, Vec<f64>) {
    let d1 = filter(data, window, order, 1);
    let d2 = filter(data, window, order, 2);
    let mut idx = Vec::new();
    let mut val = Vec::new();
    for i in 0..data.len() {
        if d1[i].abs() < tolerance && d2[i] > 0.0 {
            idx.push(i);
            val.push(data[i]);
        }
    }
    (idx, val)
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
    fn quadratic_is_reproduced() {
        let data: Vec<f64> = (0..9).map(|x| f64::from(x * x)).collect();
        let d2 = filter(&data, 5, 3, 2);
        for v in &d2[2..7] {
            assert!((v - 2.0).abs() < 1e-9);
        }
    }
}
