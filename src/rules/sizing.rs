//! The sizing pass shared by every semantic rule: split any chunk over the token cap at
//! its weakest internal seam (the lowest similarity between neighbouring sentences), and
//! merge chunks under the minimum into the more similar neighbour when the cap allows.
//! Pure: chunk starts, per-unit token counts and seam similarities in; chunk starts out.

/// `seam[i]` is the similarity between unit `i − 1` and unit `i` (`seam[0]` unused).
#[must_use]
pub fn size(
    starts: &[usize],
    tokens: &[usize],
    seam: &[f32],
    max_tokens: usize,
    min_tokens: usize,
) -> Vec<usize> {
    let n = tokens.len();
    if n == 0 {
        return Vec::new();
    }
    let cap = if max_tokens == 0 { usize::MAX } else { max_tokens };
    let mut prefix = vec![0usize; n + 1];
    for i in 0..n {
        prefix[i + 1] = prefix[i].saturating_add(tokens[i]);
    }
    let sum = |a: usize, b: usize| prefix[b] - prefix[a];
    // Split: every chunk over the cap at its weakest seam, recursively.
    let mut out = Vec::with_capacity(starts.len());
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(n);
        stack.push((s, e));
        while let Some((a, b)) = stack.pop() {
            if sum(a, b) <= cap || b - a <= 1 {
                out.push(a);
                continue;
            }
            let cut =
                (a + 1..b).min_by(|&x, &y| seam[x].total_cmp(&seam[y]).then(y.cmp(&x))).unwrap_or(a + 1);
            // Process the left part first: push right, then left.
            stack.push((cut, b));
            stack.push((a, cut));
        }
    }
    if min_tokens == 0 || out.len() < 2 {
        return out;
    }
    // Merge: a chunk under the minimum joins the neighbour across the stronger seam.
    let mut chunks: Vec<(usize, usize)> =
        out.iter().enumerate().map(|(k, &s)| (s, out.get(k + 1).copied().unwrap_or(n))).collect();
    let mut k = 0;
    while k < chunks.len() {
        let (a, b) = chunks[k];
        if sum(a, b) >= min_tokens || chunks.len() < 2 {
            k += 1;
            continue;
        }
        let left = (k > 0).then(|| (seam[a], sum(chunks[k - 1].0, b)));
        let right = (k + 1 < chunks.len()).then(|| (seam[chunks[k + 1].0], sum(a, chunks[k + 1].1)));
        let pick = match (left, right) {
            (Some((ls, lt)), Some((rs, rt))) => {
                if ls >= rs && lt <= cap {
                    Some(false)
                } else if rt <= cap {
                    Some(true)
                } else if lt <= cap {
                    Some(false)
                } else {
                    None
                }
            }
            (Some((_, lt)), None) => (lt <= cap).then_some(false),
            (None, Some((_, rt))) => (rt <= cap).then_some(true),
            (None, None) => None,
        };
        match pick {
            Some(true) => {
                chunks[k].1 = chunks[k + 1].1;
                chunks.remove(k + 1);
            }
            Some(false) => {
                chunks[k - 1].1 = b;
                chunks.remove(k);
                k = k.saturating_sub(1);
            }
            None => k += 1,
        }
    }
    chunks.into_iter().map(|(s, _)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_the_weakest_seam_and_merges_small() {
        let tokens = [4, 4, 4, 4];
        let seam = [0.0, 0.9, 0.2, 0.8];
        assert_eq!(size(&[0], &tokens, &seam, 8, 0), vec![0, 2]);
        // A 4-token chunk under min 5 joins the side with the stronger seam.
        assert_eq!(size(&[0, 1, 2], &[4, 4, 8], &[0.0, 0.9, 0.2], 8, 5), vec![0, 2]);
        assert_eq!(size(&[0], &[20], &[0.0], 8, 0), vec![0], "a single unit is never split");
    }
}
