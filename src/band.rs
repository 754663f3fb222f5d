//! Similarity bands: the cosine similarity of each sentence to the `width` sentences before
//! it, `O(n·width)` memory rather than the `O(n²)` of a full matrix.
//!
//! A plain data type shared by the similarity stage (which fills it, on the CPU or a
//! device) and the boundary rules (which read it). It imports no model and no device, so a
//! rule can be tested on a band written by hand.

/// `sim(i, j)` for `i - width <= j < i`, stored row by row: row `i` holds
/// `[cos(i, i-1), cos(i, i-2), …]`, `min(i, width)` entries used.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    n: usize,
    width: usize,
    data: Vec<f32>,
}

impl Band {
    /// A band of `n` sentences and `width` look-back filled by `f(i, j)` (`j < i`).
    #[must_use]
    pub fn from_fn(n: usize, width: usize, f: impl Fn(usize, usize) -> f32) -> Self {
        let mut data = vec![0f32; n * width];
        for i in 0..n {
            for k in 0..width.min(i) {
                data[i * width + k] = f(i, i - 1 - k);
            }
        }
        Self { n, width, data }
    }

    /// From L2-normalised row vectors (`n × dim`, row-major), on the CPU: the reference the
    /// device path is checked against, and the fallback for tiny documents.
    #[must_use]
    pub fn from_vectors(vectors: &[f32], dim: usize, width: usize) -> Self {
        let n = vectors.len().checked_div(dim).unwrap_or(0);
        Self::from_fn(n, width, |i, j| {
            let (a, b) = (&vectors[i * dim..(i + 1) * dim], &vectors[j * dim..(j + 1) * dim]);
            a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum::<f64>() as f32
        })
    }

    /// From raw parts (`data.len() == n * width`).
    ///
    /// # Panics
    /// If the length does not match.
    #[must_use]
    pub fn from_parts(n: usize, width: usize, data: Vec<f32>) -> Self {
        assert_eq!(data.len(), n * width, "band data does not match n × width");
        Self { n, width, data }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.n
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// How many sentences back a row reaches.
    #[must_use]
    pub fn width(&self) -> usize {
        self.width
    }

    /// `cos(i, j)` for `j < i <= j + width`.
    #[inline]
    #[must_use]
    pub fn sim(&self, i: usize, j: usize) -> f32 {
        debug_assert!(j < i && i - j <= self.width);
        self.data[i * self.width + (i - 1 - j)]
    }

    /// `[cos(i, i-1), cos(i, i-2), …]`, `min(i, width)` entries.
    #[inline]
    #[must_use]
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.width..i * self.width + self.width.min(i)]
    }
}
