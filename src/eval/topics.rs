//! A Choi-style topic-shift benchmark (Choi 2000): documents made of consecutive runs of
//! 3–11 sentences, each run from a different source text, with the true boundaries known.
//! Built from any texts available offline (the CLI defaults to the chapters of the Rust book
//! that rustup installs); deterministic for a seed.

use crate::segment::Segmenter;

/// One synthetic document: its text and the byte offsets where each run starts.
#[derive(Debug, Clone)]
pub struct TopicDoc {
    pub text: String,
    /// Start offsets of every sentence placed (ascending).
    pub sentence_starts: Vec<usize>,
    /// Indices into `sentence_starts` where a new source's run begins (first 0).
    pub boundaries: Vec<usize>,
}

/// A small deterministic generator (xorshift64*), so the benchmark needs no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A sentence worth placing: four or more words, or (in scripts written without spaces)
/// eight or more CJK characters. Drops headings and fragments in either kind of text.
fn long_enough(t: &str) -> bool {
    t.split_whitespace().count() >= 4 || t.chars().filter(|&c| crate::segment::is_cjk(c)).count() >= 8
}

/// Build `n_docs` documents of `runs` runs each from `sources` (each a long text).
#[must_use]
pub fn generate(sources: &[String], n_docs: usize, runs: usize, seed: u64) -> Vec<TopicDoc> {
    let seg = Segmenter::default();
    let sentences: Vec<Vec<&str>> = sources
        .iter()
        .map(|s| seg.sentences(s).iter().map(|sp| sp.text(s)).filter(|t| long_enough(t)).collect())
        .filter(|v: &Vec<&str>| v.len() >= 11)
        .collect();
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut out = Vec::with_capacity(n_docs);
    if sentences.len() < 2 {
        return out;
    }
    for _ in 0..n_docs {
        let mut doc = TopicDoc { text: String::new(), sentence_starts: Vec::new(), boundaries: Vec::new() };
        let mut last = usize::MAX;
        for _ in 0..runs {
            let mut src = rng.below(sentences.len());
            while src == last {
                src = rng.below(sentences.len());
            }
            last = src;
            let len = 3 + rng.below(9);
            let from = rng.below(sentences[src].len() - len);
            doc.boundaries.push(doc.sentence_starts.len());
            for s in &sentences[src][from..from + len] {
                if !doc.text.is_empty() {
                    doc.text.push(' ');
                }
                doc.sentence_starts.push(doc.text.len());
                // One line per document keeps the segmenter from seeing paragraph hints.
                doc.text.push_str(&s.replace('\n', " "));
            }
        }
        out.push(doc);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_sentences_count_by_characters() {
        assert!(long_enough("计算机系统从上电事件到能为用户提供完整的操作系统功能为止。"));
        assert!(!long_enough("第三章。"));
        assert!(long_enough("one two three four"));
        assert!(!long_enough("Chapter 3"));
        let a = "这是关于软件包管理的一个相当长的句子。".repeat(20);
        let b = "网络配置需要仔细地检查每一个接口的设置。".repeat(20);
        let docs = generate(&[a, b], 2, 4, 3);
        assert_eq!(docs.len(), 2);
        assert!(docs.iter().all(|d| d.boundaries.len() == 4 && d.sentence_starts.len() >= 12));
    }

    #[test]
    fn runs_come_from_different_sources() {
        let a = "Alpha one two three. ".repeat(30);
        let b = "Beta four five six. ".repeat(30);
        let docs = generate(&[a, b], 3, 5, 7);
        assert_eq!(docs.len(), 3);
        for d in &docs {
            assert_eq!(d.boundaries.len(), 5);
            assert_eq!(d.boundaries[0], 0);
            for (k, &b) in d.boundaries.iter().enumerate().skip(1) {
                let prev = &d.text[d.sentence_starts[b - 1]..d.sentence_starts[b]];
                let cur = &d.text[d.sentence_starts[b]..];
                assert_ne!(prev.starts_with("Alpha"), cur.starts_with("Alpha"), "run {k} switches source");
            }
        }
    }
}
