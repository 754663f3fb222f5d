//! Greedy packing of units under a token cap, and merging of chunks under a minimum.
//!
//! Unit counts are summed to propose a chunk, then the chunk's own text is counted: most
//! tokenizers are not additive over concatenation (a merge across the join, CJK text with
//! no space between sentences), so the sum is only a proposal and the count reported is
//! always that of the chunk's exact text. A proposal over the cap gives back its last unit.

use crate::chunk::ChunkSpan;
use crate::sizer::Sizer;
use crate::span::Span;

/// Pack contiguous `atoms` (with `counts`) into chunks of at most `cap` tokens.
/// A chunk never spans a barrier: `barrier(i)` says atom `i` must start a chunk.
/// `sentences` is left 0; see [`fill_sentence_counts`].
pub fn pack(
    text: &str,
    atoms: &[Span],
    counts: &[usize],
    barrier: impl Fn(usize) -> bool,
    sizer: &dyn Sizer,
    cap: usize,
) -> Vec<ChunkSpan> {
    let n = atoms.len();
    let mut out = Vec::with_capacity(n / 4 + 1);
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        let mut sum = counts[i];
        while j < n && !barrier(j) && sum.saturating_add(counts[j]) <= cap {
            sum += counts[j];
            j += 1;
        }
        loop {
            let span = Span::new(atoms[i].start, atoms[j - 1].end);
            let actual = if j - i == 1 { counts[i] } else { sizer.count(span.text(text)) };
            if actual <= cap || j - i == 1 {
                out.push(ChunkSpan::new(span.start, span.end, actual, 0));
                break;
            }
            j -= 1;
        }
        i = j;
    }
    out
}

/// Merge chunks under `min` tokens into a neighbour when the merged text fits `cap`:
/// a small chunk first absorbs the chunk after it; a small chunk after a full one joins it.
/// Chunks must be contiguous (no overlap).
#[must_use]
pub fn merge_small(
    text: &str,
    chunks: Vec<ChunkSpan>,
    sizer: &dyn Sizer,
    min: usize,
    cap: usize,
) -> Vec<ChunkSpan> {
    if min == 0 || chunks.len() < 2 {
        return chunks;
    }
    let mut out: Vec<ChunkSpan> = Vec::with_capacity(chunks.len());
    for c in chunks {
        if let Some(last) = out.last_mut() {
            if (last.tokens < min || c.tokens < min)
                && last.tokens.saturating_add(c.tokens) <= cap.saturating_mul(2)
            {
                let merged = sizer.count(&text[last.start..c.end]);
                if merged <= cap {
                    last.end = c.end;
                    last.tokens = merged;
                    last.sentences += c.sentences;
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

/// Set each chunk's `sentences` to the number of `sentence_starts` (ascending byte offsets)
/// inside `start..end`.
pub fn fill_sentence_counts(chunks: &mut [ChunkSpan], sentence_starts: &[usize]) {
    for c in chunks {
        let lo = sentence_starts.partition_point(|&s| s < c.start);
        let hi = sentence_starts.partition_point(|&s| s < c.end);
        c.sentences = hi - lo;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizer::WordSizer;

    #[test]
    fn packs_and_respects_barriers() {
        let text = "a b. c d. e f. g h.";
        let atoms = [Span::new(0, 5), Span::new(5, 10), Span::new(10, 15), Span::new(15, 19)];
        let counts = [2, 2, 2, 2];
        let c = pack(text, &atoms, &counts, |_| false, &WordSizer, 4);
        assert_eq!(
            c.iter().map(|c| (c.start, c.end, c.tokens)).collect::<Vec<_>>(),
            vec![(0, 10, 4), (10, 19, 4)]
        );
        let c = pack(text, &atoms, &counts, |i| i == 1, &WordSizer, 100);
        assert_eq!(c.iter().map(|c| (c.start, c.end)).collect::<Vec<_>>(), vec![(0, 5), (5, 19)]);
    }

    #[test]
    fn merges_small_chunks() {
        let text = "Title\n\nOne two three four. Five six seven eight.";
        let chunks =
            vec![ChunkSpan::new(0, 7, 1, 1), ChunkSpan::new(7, 27, 4, 1), ChunkSpan::new(27, 48, 4, 1)];
        let m = merge_small(text, chunks, &WordSizer, 2, 6);
        assert_eq!(
            m.iter().map(|c| (c.start, c.end, c.tokens)).collect::<Vec<_>>(),
            vec![(0, 27, 5), (27, 48, 4)]
        );
    }
}
