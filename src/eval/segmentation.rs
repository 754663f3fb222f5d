//! Segmentation metrics over units (sentences): a segmentation of `n` units is given by its
//! chunk starts (ascending, first 0), as every rule returns them.
//!
//! - [`pk`] and [`window_diff`]: as nltk's `pk` and `windowdiff` on boundary strings, where
//!   position `i` holds a boundary when a chunk starts at unit `i` (`i > 0`); `k` defaults to
//!   half the mean reference segment length, as in nltk.
//! - [`boundary_prf`]: precision, recall and F1 of hypothesis boundaries, each matched to at
//!   most one reference boundary within `tolerance` units.
//! - [`ami`]: scikit-learn's `adjusted_mutual_info_score` (arithmetic normalisation) of the
//!   two labelings "unit → its chunk", the Max–Min paper's metric.

/// The boundary string of a segmentation: `b[i]` is true when a chunk starts at unit `i > 0`.
#[must_use]
pub fn boundary_mask(starts: &[usize], n: usize) -> Vec<bool> {
    let mut b = vec![false; n];
    for &s in starts {
        if s > 0 && s < n {
            b[s] = true;
        }
    }
    b
}

/// nltk's default `k`: `round(len / (2 · boundaries))`.
#[must_use]
pub fn default_k(reference: &[bool]) -> usize {
    let count = reference.iter().filter(|b| **b).count();
    if count == 0 {
        return reference.len().max(1);
    }
    // Python's round(): halves to even.
    let x = reference.len() as f64 / (count as f64 * 2.0);
    let r = x.round();
    let r = if (x - x.trunc() - 0.5).abs() < 1e-12 && (r as i64) % 2 != 0 { r - 1.0 } else { r };
    (r as usize).max(1)
}

/// Pk (Beeferman et al.): the fraction of windows of `k` positions on which reference and
/// hypothesis disagree about containing a boundary. Lower is better.
#[must_use]
pub fn pk(reference: &[bool], hypothesis: &[bool], k: Option<usize>) -> f64 {
    let k = k.unwrap_or_else(|| default_k(reference));
    let n = reference.len().min(hypothesis.len());
    if n < k {
        return 0.0;
    }
    let windows = n - k + 1;
    let mut err = 0usize;
    for i in 0..windows {
        let r = reference[i..i + k].iter().any(|b| *b);
        let h = hypothesis[i..i + k].iter().any(|b| *b);
        err += usize::from(r != h);
    }
    err as f64 / windows as f64
}

/// WindowDiff (Pevzner and Hearst): the fraction of windows of `k` positions in which the
/// two segmentations have a different number of boundaries. Lower is better.
#[must_use]
pub fn window_diff(reference: &[bool], hypothesis: &[bool], k: usize) -> f64 {
    let n = reference.len().min(hypothesis.len());
    if n < k || k == 0 {
        return 0.0;
    }
    let windows = n - k + 1;
    let mut wd = 0usize;
    for i in 0..windows {
        let r = reference[i..i + k].iter().filter(|b| **b).count();
        let h = hypothesis[i..i + k].iter().filter(|b| **b).count();
        wd += usize::from(r != h);
    }
    wd as f64 / windows as f64
}

/// Precision, recall and F1 of boundaries (chunk starts other than 0), a hypothesis boundary
/// counting as correct when an unmatched reference boundary lies within `tolerance` units.
#[must_use]
pub fn boundary_prf(reference: &[usize], hypothesis: &[usize], tolerance: usize) -> (f64, f64, f64) {
    let r: Vec<usize> = reference.iter().copied().filter(|&s| s > 0).collect();
    let h: Vec<usize> = hypothesis.iter().copied().filter(|&s| s > 0).collect();
    let mut used = vec![false; r.len()];
    let mut hits = 0usize;
    for &x in &h {
        // The nearest unmatched reference boundary within the tolerance.
        let best = r
            .iter()
            .enumerate()
            .filter(|(j, &y)| !used[*j] && x.abs_diff(y) <= tolerance)
            .min_by_key(|(_, &y)| x.abs_diff(y))
            .map(|(j, _)| j);
        if let Some(j) = best {
            used[j] = true;
            hits += 1;
        }
    }
    let p = if h.is_empty() {
        if r.is_empty() {
            1.0
        } else {
            0.0
        }
    } else {
        hits as f64 / h.len() as f64
    };
    let rc = if r.is_empty() { 1.0 } else { hits as f64 / r.len() as f64 };
    let f = if p + rc == 0.0 { 0.0 } else { 2.0 * p * rc / (p + rc) };
    (p, rc, f)
}

/// Chunk label of every unit.
#[must_use]
pub fn labels(starts: &[usize], n: usize) -> Vec<usize> {
    let mut out = vec![0; n];
    let mut label = 0;
    let mut next = starts.iter().skip(1).peekable();
    for (i, o) in out.iter_mut().enumerate() {
        while next.peek().is_some_and(|&&s| s <= i) {
            next.next();
            label += 1;
        }
        *o = label;
    }
    out
}

fn entropy(counts: &[usize], n: f64) -> f64 {
    counts.iter().filter(|&&c| c > 0).map(|&c| -(c as f64 / n) * (c as f64 / n).ln()).sum()
}

/// scikit-learn's `adjusted_mutual_info_score(a, b)` with `average_method="arithmetic"`.
#[must_use]
pub fn ami(a: &[usize], b: &[usize]) -> f64 {
    let n = a.len().min(b.len());
    if n == 0 {
        return 1.0;
    }
    let ka = a.iter().max().map_or(0, |m| m + 1);
    let kb = b.iter().max().map_or(0, |m| m + 1);
    let mut ca = vec![0usize; ka];
    let mut cb = vec![0usize; kb];
    let mut joint = std::collections::HashMap::<(usize, usize), usize>::new();
    for i in 0..n {
        ca[a[i]] += 1;
        cb[b[i]] += 1;
        *joint.entry((a[i], b[i])).or_default() += 1;
    }
    let ca: Vec<usize> = ca.into_iter().filter(|&c| c > 0).collect();
    let cb: Vec<usize> = cb.into_iter().filter(|&c| c > 0).collect();
    // sklearn: a single cluster on both sides, or a perfect one-to-one, scores 1.
    if (ca.len() == 1 && cb.len() == 1) || (ca.len() == n && cb.len() == n) {
        return 1.0;
    }
    let nf = n as f64;
    let mut mi = 0.0;
    let mut ai = vec![0usize; ka];
    let mut bj = vec![0usize; kb];
    for i in 0..n {
        ai[a[i]] += 1;
        bj[b[i]] += 1;
    }
    for (&(x, y), &nij) in &joint {
        let nij = nij as f64;
        mi += (nij / nf) * ((nij * nf) / (ai[x] as f64 * bj[y] as f64)).ln();
    }
    let emi = expected_mi(&ca, &cb, n);
    let (ha, hb) = (entropy(&ca, nf), entropy(&cb, nf));
    let normalizer = (ha + hb) / 2.0;
    let denominator = normalizer - emi;
    // sklearn guards a vanishing denominator with machine epsilon, keeping its sign.
    let eps = f64::EPSILON;
    let denominator = if denominator < 0.0 { denominator.min(-eps) } else { denominator.max(eps) };
    (mi - emi) / denominator
}

/// The expected mutual information of two random labelings with these cluster sizes
/// (Vinh, Epps and Bailey 2010), as scikit-learn's `expected_mutual_information`.
fn expected_mi(a: &[usize], b: &[usize], n: usize) -> f64 {
    let nf = n as f64;
    let lg = |x: f64| libm::lgamma(x);
    let gln_n = lg(nf + 1.0);
    let mut emi = 0.0;
    for &ai in a {
        for &bj in b {
            let start = 1.max((ai + bj).saturating_sub(n));
            let end = ai.min(bj);
            for nij in start..=end {
                let nijf = nij as f64;
                let term1 = nijf / nf;
                let term2 = (nf * nijf).ln() - (ai as f64 * bj as f64).ln();
                let gln = lg(ai as f64 + 1.0)
                    + lg(bj as f64 + 1.0)
                    + lg(nf - ai as f64 + 1.0)
                    + lg(nf - bj as f64 + 1.0)
                    - gln_n
                    - lg(nijf + 1.0)
                    - lg(ai as f64 - nijf + 1.0)
                    - lg(bj as f64 - nijf + 1.0)
                    - lg(nf - ai as f64 - bj as f64 + nijf + 1.0);
                emi += term1 * term2 * gln.exp();
            }
        }
    }
    emi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed() {
        // 10 units; reference chunks start at 0, 4, 7; hypothesis at 0, 5.
        let r = boundary_mask(&[0, 4, 7], 10);
        let h = boundary_mask(&[0, 5], 10);
        assert_eq!(default_k(&r), 2); // round(10 / 4) = round(2.5) = 2 (halves to even)
                                      // windows of 2: [0..2]..[8..10]; r has boundaries at 4, 7; h at 5.
                                      // r: 0,0,0,1,1,0,1,1,0 ; h: 0,0,0,0,1,1,0,0,0 → disagree at 3,5,6,7 → 4/9
        assert!((pk(&r, &h, None) - 4.0 / 9.0).abs() < 1e-12);
        let (p, rc, f) = boundary_prf(&[0, 4, 7], &[0, 5], 1);
        assert_eq!((p, rc), (1.0, 0.5));
        assert!((f - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(labels(&[0, 4, 7], 10), vec![0, 0, 0, 0, 1, 1, 1, 2, 2, 2]);
        assert!((ami(&labels(&[0, 4, 7], 10), &labels(&[0, 4, 7], 10)) - 1.0).abs() < 1e-12);
    }
}

/// Scores of one hypothesis against one reference, over `n` units.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Scores {
    pub pk: f64,
    pub window_diff: f64,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub ami: f64,
}

/// Every metric at once; `k` defaults to nltk's choice from the reference.
#[must_use]
pub fn score(reference: &[usize], hypothesis: &[usize], n: usize, tolerance: usize) -> Scores {
    let (rm, hm) = (boundary_mask(reference, n), boundary_mask(hypothesis, n));
    let k = default_k(&rm);
    let (precision, recall, f1) = boundary_prf(reference, hypothesis, tolerance);
    Scores {
        pk: pk(&rm, &hm, Some(k)),
        window_diff: window_diff(&rm, &hm, k),
        precision,
        recall,
        f1,
        ami: ami(&labels(reference, n), &labels(hypothesis, n)),
    }
}

/// Map chunk start offsets (bytes) to the units they fall in: `unit_starts` ascending.
#[must_use]
pub fn unit_starts_of(chunk_starts: &[usize], unit_starts: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> =
        chunk_starts.iter().map(|&b| unit_starts.partition_point(|&u| u <= b).saturating_sub(1)).collect();
    out.push(0);
    out.sort_unstable();
    out.dedup();
    out
}

/// Chunk starts per document from a chunk JSONL file (`doc_id`, `start`; seamcut's output
/// and other tools' alike).
///
/// # Errors
/// If the file cannot be read or a line lacks `doc_id` or `start` (naming `file:line`).
pub fn read_starts(path: &std::path::Path) -> crate::Result<std::collections::HashMap<String, Vec<usize>>> {
    let text = std::fs::read_to_string(path).map_err(|e| crate::Error::io(path, e))?;
    let mut m: std::collections::HashMap<String, Vec<usize>> = std::collections::HashMap::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let bad = |msg: String| crate::Error::Record {
            path: path.display().to_string(),
            line: i + 1,
            message: msg,
        };
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("invalid JSON: {e}")))?;
        let id = v["doc_id"].as_str().map(str::to_string).ok_or_else(|| bad("no doc_id".into()))?;
        let start = v["start"].as_u64().ok_or_else(|| bad("no start".into()))? as usize;
        m.entry(id).or_default().push(start);
    }
    Ok(m)
}

/// One document's scores: its id, its sentences, the scores.
pub type DocScores = (String, usize, Scores);

/// Score hypothesis chunk starts against reference starts on the sentences of each
/// document in both: per document `(id, sentences, scores)`, and the mean.
///
/// # Errors
/// On an unreadable document, or when no document appears in both.
pub fn score_corpus(
    reference: &std::collections::HashMap<String, Vec<usize>>,
    hypothesis: &std::collections::HashMap<String, Vec<usize>>,
    docs: impl Iterator<Item = crate::Result<crate::corpus::Document>>,
    tolerance: usize,
) -> crate::Result<(Vec<DocScores>, Scores)> {
    let seg = crate::segment::Segmenter::default();
    let mut out = Vec::new();
    let mut sum = Scores::default();
    for doc in docs {
        let doc = doc?;
        let (Some(rs), Some(hs)) = (reference.get(&doc.id), hypothesis.get(&doc.id)) else { continue };
        let units: Vec<usize> = seg.sentences(&doc.text).iter().map(|s| s.start).collect();
        if units.is_empty() {
            continue;
        }
        let s = score(&unit_starts_of(rs, &units), &unit_starts_of(hs, &units), units.len(), tolerance);
        sum.pk += s.pk;
        sum.window_diff += s.window_diff;
        sum.precision += s.precision;
        sum.recall += s.recall;
        sum.f1 += s.f1;
        sum.ami += s.ami;
        out.push((doc.id, units.len(), s));
    }
    if out.is_empty() {
        return Err(crate::Error::Config(
            "no document appears in both the reference and the hypothesis".into(),
        ));
    }
    let d = out.len() as f64;
    let mean = Scores {
        pk: sum.pk / d,
        window_diff: sum.window_diff / d,
        precision: sum.precision / d,
        recall: sum.recall / d,
        f1: sum.f1 / d,
        ami: sum.ami / d,
    };
    Ok((out, mean))
}
