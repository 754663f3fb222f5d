//! Property tests: for every chunker and sizer, on arbitrary Unicode text (CJK, emoji,
//! combining marks, CRLF, empty strings, long unpunctuated runs), chunks are in order, in
//! bounds, on char boundaries, cover the document exactly, report their exact token count,
//! and stay within the token cap.

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
    ];
    prop::collection::vec(piece, 0..120).prop_map(|v| v.concat())
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![3 => texty(), 1 => any::<String>(), 1 => "\\PC{0,300}"]
}

fn check_all(
    text: &str,
    sizer: Arc<dyn Sizer>,
    cap: usize,
    min: usize,
    overlap: usize,
) -> Result<(), TestCaseError> {
    for kind in ChunkerKind::ALL.into_iter().filter(|k| k.is_baseline()) {
        let ov = if kind == ChunkerKind::Fixed { overlap.min(cap - 1) } else { 0 };
        let mn = if kind == ChunkerKind::Fixed { 0 } else { min.min(cap) };
        let opts = ChunkOptions::new(cap).with_min_tokens(mn).with_overlap(ov);
        let chunker = build(kind, sizer.clone(), opts).unwrap();
        let chunks = chunker.chunk(text).unwrap();
        if let Err(e) = verify(text, &chunks, chunker.overlapping()) {
            return Err(TestCaseError::fail(format!("{}: {e} on {text:?}", kind.name())));
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
        }
        if !chunker.overlapping() {
            let joined: String = chunks.iter().map(|c| &text[c.start..c.end]).collect();
            if !text.trim().is_empty() {
                prop_assert_eq!(&joined, text);
            }
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
        thread_local! { static SIZER: Arc<dyn Sizer> = Arc::new(HfSizer::default_model()); }
        let sizer = SIZER.with(Clone::clone);
        check_all(&text, sizer, cap, min, overlap)?;
    }
}

#[test]
fn uncapped_chunkers_cover() {
    let text = "One. Two. Three.\n\nFour five six. Seven.";
    for kind in [ChunkerKind::Recursive, ChunkerKind::Sentence, ChunkerKind::Paragraph] {
        let c = build(kind, Arc::new(WordSizer), ChunkOptions::new(0)).unwrap().chunk(text).unwrap();
        verify(text, &c, false).unwrap();
    }
}
