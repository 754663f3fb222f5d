//! Token-budget batching with length bucketing.
//!
//! Sequences are sorted by length and cut into consecutive groups whose padded size
//! (group size × longest member) stays within the budget. Sorting keeps neighbours close in
//! length, so padding stays small; the budget, not a count of texts, bounds memory.

/// A group closes early once its padding would exceed this fraction of its real tokens
/// (and it has at least [`MIN_GROUP`] members), so one long sequence does not pad a
/// hundred short ones.
pub const MAX_PADDING: f64 = 0.15;
/// Groups smaller than this are not closed for padding alone.
pub const MIN_GROUP: usize = 8;

/// Groups of sequence indices, each within `budget` padded tokens (a sequence longer than
/// the budget gets a group of its own). Every index appears exactly once.
#[must_use]
pub fn plan(lengths: &[usize], budget: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    // Longest first: the first batch is the largest, so an out-of-memory shows up at once.
    order.sort_by_key(|&i| (std::cmp::Reverse(lengths[i]), i));
    let mut groups = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    let mut cur_max = 0;
    let mut cur_real = 0;
    for i in order {
        let l = lengths[i].max(1);
        let new_max = cur_max.max(l);
        let padded = new_max * (cur.len() + 1);
        let too_big = padded > budget;
        let too_padded =
            cur.len() >= MIN_GROUP && padded as f64 > (1.0 + MAX_PADDING) * (cur_real + l) as f64;
        if !cur.is_empty() && (too_big || too_padded) {
            groups.push(std::mem::take(&mut cur));
            cur_max = 0;
            cur_real = 0;
        }
        cur_max = cur_max.max(l);
        cur_real += l;
        cur.push(i);
    }
    if !cur.is_empty() {
        groups.push(cur);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_covers_and_respects_budget() {
        let lengths = [5, 100, 7, 7, 50, 3, 300, 1];
        let groups = plan(&lengths, 120);
        let mut seen: Vec<usize> = groups.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..lengths.len()).collect::<Vec<_>>());
        for g in &groups {
            let max = g.iter().map(|&i| lengths[i]).max().unwrap();
            assert!(g.len() == 1 || max * g.len() <= 120, "{g:?}");
        }
    }
}
