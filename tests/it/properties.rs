//! Property tests: for every chunker and sizer, on arbitrary Unicode text (CJK, emoji,
//! combining marks, CRLF, empty strings, long unpunctuated runs), chunks are in order, in
//! bounds, on char boundaries, cover the document exactly, report their exact token count,
//! and stay within the token cap. Under the real tokenizer, text includes words over its
//! 100-character limit, and every chunk must fit the cap tokenized piecewise
//! ([`piecewise_count`]).

use std::sync::Arc;

use proptest::prelude::*;
use seamcut::chunk::verify;
use seamcut::chunkers::{build, ChunkOptions, ChunkerKind};
use seamcut::segment::Segmenter;
use seamcut::sizer::{CharSizer, HfSizer, Sizer, WordSizer};

/// Text made of pieces that exercise the segmenter's rules, mixed with arbitrary chars.
fn texty() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-zA-Z]{1,12}".prop_map(|w| w + " "),
        1 => Just(". ".to_string()),
        1 => Just("! ".to_string()),
        1 => Just("? ".to_string()),
        1 => Just("... ".to_string()),
        1 => Just("\n".to_string()),
        1 => Just("\n\n".to_string()),
        1 => Just("\r\n".to_string()),
        1 => Just("Dr. ".to_string()),
        1 => Just("3.14 ".to_string()),
        1 => Just("- item\n".to_string()),
        1 => Just("你好世界。".to_string()),
        1 => Just("真的？！".to_string()),
        1 => Just("３．１４".to_string()),
        1 => Just("\u{1F600}\u{1F680}".to_string()),
        1 => Just("e\u{301}\u{302}".to_string()),
        1 => Just("\u{201C}Quote.\u{201D} ".to_string()),
        1 => Just("    ".to_string()),
        1 => Just("\u{3000}".to_string()),
        1 => any::<char>().prop_map(|c| c.to_string()),
        // Words around and over WordPiece's 100-character limit: ASCII, accented (the fast
        // path's Latin table), Greek (the HF pipeline).
        1 => "[a-z0-9]{90,330}".prop_map(|w| w + " "),
        1 => "[a-zéèàçöß]{95,260}",
        1 => "[α-ω]{95,260}".prop_map(|w| w + "."),
    ];
    prop::collection::vec(piece, 0..120).prop_map(|v| v.concat())
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![3 => texty(), 1 => any::<String>(), 1 => "\\PC{0,300}"]
}

/// A chunk's tokens as the issue defines a fitting chunk, from the HF tokenizer itself (no
/// fast path, no sizer): its tokens, with each `[UNK]` that stands for more than 100
/// characters (a word over WordPiece's limit) counted as one per started 100 characters.
pub fn piecewise_count(hf: &tokenizers::Tokenizer, text: &str) -> usize {
    let unk = hf.token_to_id("[UNK]").unwrap();
    let enc = hf.encode(text, false).unwrap();
    enc.get_ids()
        .iter()
        .zip(enc.get_offsets())
        .map(|(&id, &(s, e))| {
            let n = text[s..e].chars().count();
            if id == unk && n > 100 {
                n.div_ceil(100)
            } else {
                1
            }
        })
        .sum()
}

fn check_all(
    text: &str,
    sizer: Arc<dyn Sizer>,
    cap: usize,
    min: usize,
    overlap: usize,
) -> Result<(), TestCaseError> {
    check_all_with(text, sizer, cap, min, overlap, None)
}

fn check_all_with(
    text: &str,
    sizer: Arc<dyn Sizer>,
    cap: usize,
    min: usize,
    overlap: usize,
    piecewise: Option<&tokenizers::Tokenizer>,
) -> Result<(), TestCaseError> {
    for kind in ChunkerKind::ALL.into_iter().filter(|k| k.is_baseline()) {
        let mn = if kind == ChunkerKind::Fixed { 0 } else { min.min(cap) };
        let opts = ChunkOptions::new(cap).with_min_tokens(mn).with_overlap(overlap);
        let chunker = build(kind, sizer.clone(), opts).unwrap();
        let chunks = chunker.chunk(text).unwrap();
        if let Err(e) = verify(text, &chunks) {
            return Err(TestCaseError::fail(format!("{}: {e} on {text:?}", kind.name())));
        }
        // Windows: on every chunk with overlap, never past a neighbour, and (counted the way
        // the window was measured, on the neighbour's own text) at most `overlap` tokens of it.
        for (i, c) in chunks.iter().enumerate() {
            prop_assert_eq!(c.window.is_some(), overlap > 0, "{}: window on chunk {}", kind.name(), i);
            let Some(w) = c.window else { continue };
            let prev = if i > 0 { chunks[i - 1].start } else { c.start };
            let next = chunks.get(i + 1).map_or(c.end, |n| n.end);
            prop_assert!(
                w.start >= prev && w.end <= next,
                "{}: window {:?} past a neighbour",
                kind.name(),
                w
            );
            if piecewise.is_none() && i > 0 {
                let back = sizer.token_starts(&text[prev..c.start]);
                let reach = back.iter().filter(|&&t| prev + t >= w.start).count();
                prop_assert!(reach <= overlap, "{}: window reaches {} tokens back", kind.name(), reach);
            }
        }
        for c in &chunks {
            let t = &text[c.start..c.end];
            prop_assert_eq!(c.tokens, sizer.count(t), "{}: reported count differs for {:?}", kind.name(), t);
            let single_char = t.chars().nth(1).is_none();
            prop_assert!(
                c.tokens <= cap || single_char,
                "{}: {} tokens > cap {} in {:?}",
                kind.name(),
                c.tokens,
                cap,
                t
            );
            if let Some(hf) = piecewise {
                let n = piecewise_count(hf, t);
                prop_assert_eq!(n, c.tokens, "{}: piecewise count differs for {:?}", kind.name(), t);
            }
        }
        let joined: String = chunks.iter().map(|c| &text[c.start..c.end]).collect();
        if !text.trim().is_empty() {
            prop_assert_eq!(&joined, text);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn chunkers_hold_invariants_chars(text in any_text(), cap in 1usize..80, min in 0usize..20, overlap in 0usize..10) {
        check_all(&text, Arc::new(CharSizer), cap, min, overlap)?;
    }

    #[test]
    fn chunkers_hold_invariants_words(text in any_text(), cap in 1usize..30, min in 0usize..10, overlap in 0usize..5) {
        check_all(&text, Arc::new(WordSizer), cap, min, overlap)?;
    }

    #[test]
    fn segmenter_spans_are_sane(text in any_text()) {
        let seg = Segmenter::default();
        let mut last = 0;
        for s in seg.sentences(&text) {
            prop_assert!(s.start >= last && s.start < s.end && s.end <= text.len());
            prop_assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
            prop_assert_eq!(s.text(&text).trim(), s.text(&text));
            last = s.end;
        }
        let paras = seg.paragraphs(&text);
        prop_assert_eq!(paras.is_empty(), text.trim().is_empty());
    }
}

proptest! {
    // The real tokenizer is slower; fewer cases.
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    #[test]
    fn chunkers_hold_invariants_tokenizer(text in any_text(), cap in 1usize..60, min in 0usize..16, overlap in 0usize..8) {
        thread_local! { static SIZER: Arc<HfSizer> = Arc::new(HfSizer::default_model()); }
        let sizer = SIZER.with(Clone::clone);
        let hf = sizer.tokenizer().hf().clone();
        check_all_with(&text, sizer, cap, min, overlap, Some(&hf))?;
    }
}

#[test]
fn uncapped_chunkers_cover() {
    let text = "One. Two. Three.\n\nFour five six. Seven.";
    for kind in [ChunkerKind::Recursive, ChunkerKind::Sentence, ChunkerKind::Paragraph] {
        let c = build(kind, Arc::new(WordSizer), ChunkOptions::new(0)).unwrap().chunk(text).unwrap();
        verify(text, &c).unwrap();
    }
}
