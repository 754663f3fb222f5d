//! Sentences as contiguous, size-capped units: what sentence-based chunkers (and the
//! semantic rules) pack.
//!
//! The segmenter's trimmed sentences are turned into covering spans (each owns the
//! whitespace after it), counted, and any unit over the cap is cut at token boundaries, so
//! that every unit fits and the units tile the document.

use crate::segment::Segmenter;
use crate::sizer::cut::{cut_into, CutMode};
use crate::sizer::Sizer;
use crate::span::{covering, trim, Span};

/// Contiguous units tiling a document, with their token counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Units {
    /// Covering spans: `spans[0].start == 0`, `spans[i].end == spans[i+1].start`,
    /// last `end == text.len()`.
    pub spans: Vec<Span>,
    /// Tokens in each covering span.
    pub tokens: Vec<usize>,
    /// Byte offsets where the segmenter's sentences start (before any cutting), ascending;
    /// what a chunk's `sentences` count is measured against.
    pub sentence_starts: Vec<usize>,
}

impl Units {
    #[must_use]
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// Spans longer than this many bytes per token of cap are cut without counting first:
/// no tokenizer makes fewer than one token per this many bytes of ordinary text, and
/// cutting a span that would have fitted is harmless (the pieces are packed again).
pub(crate) const BYTES_PER_TOKEN_BOUND: usize = 64;

/// Sentences of `text` as size-capped covering units.
#[must_use]
pub fn sentence_units(text: &str, segmenter: &Segmenter, sizer: &dyn Sizer, cap: usize) -> Units {
    let sentences = segmenter.sentences(text);
    let mut units = spans_to_units(text, &covering(&sentences, text.len()), sizer, cap);
    units.sentence_starts = sentences.iter().map(|s| s.start).collect();
    units
}

/// Paragraphs of `text` as size-capped covering units: a paragraph within `cap` tokens is
/// one unit, a longer one becomes its sentences (and any sentence still over the cap is cut
/// at token boundaries). For rules that should group the author's paragraphs rather than
/// single sentences.
#[must_use]
pub fn paragraph_units(text: &str, segmenter: &Segmenter, sizer: &dyn Sizer, cap: usize) -> Units {
    paragraph_units_ids(text, segmenter, sizer, cap, false).0
}

/// Token ids of some units (`ids[i]` for unit `i`, `None` where not known), or no entries.
pub type UnitIds = Vec<Option<Vec<u32>>>;

/// [`paragraph_units`], and with `want_ids` the sizer's token ids ([`Sizer::ids`]) of each unit
/// that is a whole paragraph (the common case), taken from the tokenization that counted it:
/// a model sharing the sizer's tokenizer then need not tokenize those units again. Empty
/// when not wanted or the sizer has no ids.
#[must_use]
pub fn paragraph_units_ids(
    text: &str,
    segmenter: &Segmenter,
    sizer: &dyn Sizer,
    cap: usize,
    want_ids: bool,
) -> (Units, UnitIds) {
    let paragraphs = segmenter.paragraphs(text);
    let limit = cap.saturating_mul(BYTES_PER_TOKEN_BOUND);
    let texts: Vec<&str> =
        paragraphs.iter().map(|p| if p.len() > limit { "" } else { p.text(text) }).collect();
    let mut para_ids = if want_ids { sizer.ids_many(&texts) } else { None }.map(Vec::into_iter);
    let counts = match &para_ids {
        Some(ids) => ids.as_slice().iter().map(Vec::len).collect(),
        None => sizer.count_many(&texts),
    };
    let mut known_ids: UnitIds = Vec::new();
    let mut spans = Vec::with_capacity(paragraphs.len());
    // A paragraph kept whole has its count already, and it holds for its covering unit (the
    // paragraph plus whitespace) when whitespace adds no tokens; sentences of a split
    // paragraph are counted as units.
    let reuse = sizer.whitespace_free();
    let mut known = Vec::with_capacity(paragraphs.len());
    let mut sentence_starts = Vec::new();
    let mut sentences = Vec::new();
    for (p, &n) in paragraphs.iter().zip(&counts) {
        sentences.clear();
        segmenter.sentences_in_paragraph(text, *p, &mut sentences);
        sentence_starts.extend(sentences.iter().map(|s| s.start));
        let ids = para_ids.as_mut().and_then(Iterator::next);
        if p.len() <= limit && n <= cap {
            spans.push(*p);
            known.push(reuse.then_some(n));
            if para_ids.is_some() {
                known_ids.push(ids.filter(|_| reuse));
            }
        } else {
            spans.extend_from_slice(&sentences);
            known.extend(std::iter::repeat_n(None, sentences.len()));
            if para_ids.is_some() {
                known_ids.extend(std::iter::repeat_n(None, sentences.len()));
            }
        }
    }
    let cover = covering(&spans, text.len());
    // What a covering unit adds to its paragraph must be whitespace (checked, not assumed).
    for (i, (c, s)) in cover.iter().zip(&spans).enumerate() {
        if known[i].is_some()
            && !(text[c.start..s.start].trim().is_empty() && text[s.end..c.end].trim().is_empty())
        {
            known[i] = None;
            if let Some(k) = known_ids.get_mut(i) {
                *k = None;
            }
        }
    }
    let (mut units, ids) = counted_spans_to_units(text, &cover, &known, known_ids, sizer, cap);
    units.sentence_starts = sentence_starts;
    (units, ids)
}

/// Count covering spans and cut those over `cap`.
#[must_use]
pub fn spans_to_units(text: &str, cover: &[Span], sizer: &dyn Sizer, cap: usize) -> Units {
    counted_spans_to_units(text, cover, &vec![None; cover.len()], Vec::new(), sizer, cap).0
}

/// [`spans_to_units`] with the counts already known for some spans (`Some`): the others are
/// counted. `ids` (empty, or one entry per span) are the known spans' token ids: each goes to
/// the unit its span becomes when kept whole (a span cut into pieces loses its ids).
fn counted_spans_to_units(
    text: &str,
    cover: &[Span],
    known: &[Option<usize>],
    ids: UnitIds,
    sizer: &dyn Sizer,
    cap: usize,
) -> (Units, UnitIds) {
    let with_ids = !ids.is_empty();
    let mut ids = ids.into_iter();
    let mut unit_ids: UnitIds = Vec::new();
    let limit = cap.saturating_mul(BYTES_PER_TOKEN_BOUND);
    let todo: Vec<&str> = cover
        .iter()
        .zip(known)
        .filter(|(_, k)| k.is_none())
        .map(|(s, _)| if s.len() > limit { "" } else { s.text(text) })
        .collect();
    let mut fresh = sizer.count_many(&todo).into_iter();
    let counts: Vec<usize> = known.iter().map(|k| k.unwrap_or_else(|| fresh.next().unwrap_or(0))).collect();
    let mut units = Units {
        spans: Vec::with_capacity(cover.len()),
        tokens: Vec::with_capacity(cover.len()),
        sentence_starts: Vec::new(),
    };
    let mut pieces = Vec::new();
    for (s, &n) in cover.iter().zip(&counts) {
        let span_ids = ids.next().flatten();
        if s.len() <= limit && n <= cap {
            units.spans.push(*s);
            units.tokens.push(n);
            if with_ids {
                unit_ids.push(span_ids);
            }
        } else {
            pieces.clear();
            cut_into(text, *s, sizer, cap, CutMode::WordBoundary, &mut pieces);
            for p in &pieces {
                units.spans.push(p.span);
                units.tokens.push(p.tokens);
                if with_ids {
                    unit_ids.push(None);
                }
            }
        }
    }
    (units, unit_ids)
}

/// The text of each unit, trimmed: what an embedding pass embeds.
#[must_use]
pub fn unit_texts<'t>(text: &'t str, units: &Units) -> Vec<&'t str> {
    units.spans.iter().map(|s| trim(text, *s).text(text)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizer::WordSizer;

    #[test]
    fn paragraph_units_keep_paragraphs_whole_unless_over_the_cap() {
        let text =
            "Short one. Two.\n\nA longer paragraph with many words here. It goes on and on. And on.\n\nEnd.";
        let seg = Segmenter::default();
        let u = paragraph_units(text, &seg, &WordSizer, 8);
        let pieces: Vec<&str> = u.spans.iter().map(|s| s.text(text).trim_end()).collect();
        assert_eq!(
            pieces,
            vec![
                "Short one. Two.",
                "A longer paragraph with many words here.",
                "It goes on and on.",
                "And on.",
                "End."
            ]
        );
        assert_eq!(u.tokens, vec![3, 7, 5, 2, 1]);
        // The same sentences as sentence units see, and the units tile the text.
        assert_eq!(u.sentence_starts, sentence_units(text, &seg, &WordSizer, 8).sentence_starts);
        assert_eq!(u.spans[0].start, 0);
        assert_eq!(u.spans.last().unwrap().end, text.len());
        assert!(u.spans.windows(2).all(|w| w[0].end == w[1].start));
        assert!(u.tokens.iter().all(|&t| t <= 8));
    }

    #[test]
    fn reused_paragraph_counts_equal_counting_each_unit_again() {
        // Whitespace of several kinds around and between paragraphs, a paragraph split into
        // sentences, one over the byte bound: every unit's count is its own text's.
        let text = "\u{3000} Lead para one. Two.\n\n\t\nA much longer second paragraph here. It goes on. \
                    And on and on.\r\n\r\nShort.\n\n   \n\nLast one here.  \n";
        for cap in [4, 8, 64] {
            let u = paragraph_units(text, &Segmenter::default(), &WordSizer, cap);
            let recount: Vec<usize> = u.spans.iter().map(|s| WordSizer.count(s.text(text))).collect();
            assert_eq!(u.tokens, recount, "cap {cap}");
            assert_eq!(u.spans.last().unwrap().end, text.len());
        }
    }

    #[test]
    fn paragraph_ids_are_the_units_own_and_embed_as_if_tokenized_again() {
        use crate::embed::{prepare, prepare_known, static_model::StaticEmbedder, Embedder};
        use crate::sizer::HfSizer;
        let model = StaticEmbedder::builtin_default().unwrap();
        let sizer = HfSizer::from_text_tokenizer(model.tokenizer().clone(), "model");
        // Paragraphs kept whole, one split into sentences, accents (the fast path's Latin
        // branch), CJK and an unknown character (the HF pipeline), odd whitespace around.
        let text = "\u{3000} Lead para one. Two.\n\n\t\nA much longer second paragraph here, with \
                    many more words than the cap allows. It goes on. And on and on.\r\n\r\nCafé \
                    naïve résumé.\n\n   \n\n这是第一句。\n\nA \u{10FFFF} symbol.  \n";
        for cap in [8, 16, 64] {
            let (units, ids) = paragraph_units_ids(text, &Segmenter::default(), &sizer, cap, true);
            assert_eq!(units, paragraph_units(text, &Segmenter::default(), &sizer, cap), "cap {cap}");
            assert_eq!(ids.len(), units.len());
            assert!(ids.iter().filter(|i| i.is_some()).count() >= 4, "cap {cap}: {ids:?}");
            let texts: Vec<&str> =
                units.spans.iter().map(|s| crate::span::trim(text, *s).text(text)).collect();
            for ((t, id), &n) in texts.iter().zip(&ids).zip(&units.tokens) {
                if let Some(id) = id {
                    assert_eq!(Some(id), sizer.ids(t).as_ref(), "{t:?}");
                    assert_eq!(id.len(), n, "{t:?}");
                }
            }
            let opts = crate::embed::EmbedOptions::default();
            assert_eq!(prepare_known(&model, &texts, ids, opts), prepare(&model, &texts, opts));
            // Without ids wanted, none are given.
            assert!(paragraph_units_ids(text, &Segmenter::default(), &sizer, cap, false).1.is_empty());
            assert!(paragraph_units_ids(text, &Segmenter::default(), &WordSizer, cap, true).1.is_empty());
        }
    }
}
