//! The breakpoint family, identical to langchain-experimental 0.4.2's `SemanticChunker`
//! (Greg Kamradt's method; LlamaIndex's splitter is the percentile case) given the same
//! distances: `distance[i] = 1 − cos(combined_i, combined_{i+1})` between neighbouring
//! buffered sentences; a breakpoint where the distance (or its gradient) is strictly above
//! a threshold: the `amount` percentile, mean + `amount`·std, mean + `amount`·IQR, or the
//! `amount` percentile of the gradient; `number_of_chunks` maps a chunk count to a
//! percentile; `min_chunk_size` (characters of the space-joined chunk) skips breakpoints
//! that would close a smaller chunk.

use super::stats::{gradient, mean, percentile, std};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum ThresholdType {
    Percentile,
    StandardDeviation,
    Interquartile,
    Gradient,
}

impl ThresholdType {
    /// LangChain's default amount for each type.
    #[must_use]
    pub fn default_amount(self) -> f64 {
        match self {
            Self::Percentile | Self::Gradient => 95.0,
            Self::StandardDeviation => 3.0,
            Self::Interquartile => 1.5,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakpointParams {
    pub kind: ThresholdType,
    pub amount: f64,
    pub number_of_chunks: Option<usize>,
    pub min_chunk_size: Option<usize>,
}

impl Default for BreakpointParams {
    fn default() -> Self {
        Self { kind: ThresholdType::Percentile, amount: 95.0, number_of_chunks: None, min_chunk_size: None }
    }
}

/// Chunk starts (first 0) for sentences with `chars[i]` characters each and the
/// `chars.len() − 1` neighbour distances.
#[must_use]
pub fn breakpoints(distances: &[f64], chars: &[usize], p: &BreakpointParams) -> Vec<usize> {
    let n = chars.len();
    if n == 0 {
        return Vec::new();
    }
    if n == 1 || (p.kind == ThresholdType::Gradient && n == 2) {
        // LangChain returns the sentences as they are here: one chunk each.
        return (0..n).collect();
    }
    let (thr, array): (f64, Vec<f64>) = if let Some(k) = p.number_of_chunks {
        let (x1, y1, x2, y2) = (distances.len() as f64, 0.0, 1.0, 100.0);
        let x = (k as f64).min(x1).max(x2);
        let y = if x2 == x1 { y2 } else { y1 + ((y2 - y1) / (x2 - x1)) * (x - x1) };
        (percentile(distances, y.clamp(0.0, 100.0)), distances.to_vec())
    } else {
        match p.kind {
            ThresholdType::Percentile => (percentile(distances, p.amount), distances.to_vec()),
            ThresholdType::StandardDeviation => {
                (mean(distances) + p.amount * std(distances), distances.to_vec())
            }
            ThresholdType::Interquartile => {
                let iqr = percentile(distances, 75.0) - percentile(distances, 25.0);
                (mean(distances) + p.amount * iqr, distances.to_vec())
            }
            ThresholdType::Gradient => {
                let g = gradient(distances);
                (percentile(&g, p.amount), g)
            }
        }
    };
    let mut starts = vec![0];
    let mut start = 0;
    for (i, &x) in array.iter().enumerate() {
        if x <= thr {
            continue;
        }
        if let Some(min) = p.min_chunk_size {
            let len: usize = chars[start..=i].iter().sum::<usize>() + (i - start);
            if len < min {
                continue;
            }
        }
        start = i + 1;
        if start < n {
            starts.push(start);
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_breaks_at_the_largest_distance() {
        let d = [0.1, 0.2, 0.9, 0.1, 0.15];
        assert_eq!(breakpoints(&d, &[10; 6], &BreakpointParams::default()), vec![0, 3]);
        let p = BreakpointParams { min_chunk_size: Some(100), ..BreakpointParams::default() };
        assert_eq!(breakpoints(&d, &[10; 6], &p), vec![0]);
    }
}
