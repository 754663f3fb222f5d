//! The hand-checked segmentation set (`tests/data/segmentation.jsonl`, written by
//! `tests/data/make_segmentation_cases.py`): English, Chinese, Japanese, mixed scripts,
//! abbreviations, numbers, quotes, lists, CRLF and edge cases.

use seamcut::segment::Segmenter;

#[derive(serde::Deserialize)]
struct Case {
    text: String,
    sentences: Vec<String>,
}

#[test]
fn hand_checked_cases() {
    let data = include_str!("../data/segmentation.jsonl");
    let seg = Segmenter::default();
    let mut failures = Vec::new();
    let mut n = 0;
    for line in data.lines().filter(|l| !l.trim().is_empty()) {
        let case: Case = serde_json::from_str(line).unwrap();
        n += 1;
        let got: Vec<String> =
            seg.sentences(&case.text).iter().map(|s| s.text(&case.text).to_string()).collect();
        if got != case.sentences {
            failures.push(format!("text: {:?}\n  want: {:?}\n  got:  {:?}", case.text, case.sentences, got));
        }
    }
    assert!(n >= 100, "the set must have at least 100 cases, has {n}");
    assert!(failures.is_empty(), "{} of {n} cases fail:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_sentence_after_a_no_break_space_starts_trimmed() {
    // Found by the property test: ". \u{a0}. “Quote.” " gave a sentence "\u{a0}.".
    let text = ". \u{a0}. \u{201C}Quote.\u{201D} ";
    for s in Segmenter::default().sentences(text) {
        assert_eq!(s.text(text).trim(), s.text(text));
    }
}

#[test]
fn spans_are_trimmed_ordered_and_on_char_boundaries() {
    let data = include_str!("../data/segmentation.jsonl");
    let seg = Segmenter::default();
    for line in data.lines() {
        let case: Case = serde_json::from_str(line).unwrap();
        let t = &case.text;
        let spans = seg.sentences(t);
        let mut last = 0;
        for s in spans {
            assert!(s.start >= last && s.start < s.end && s.end <= t.len());
            assert!(t.is_char_boundary(s.start) && t.is_char_boundary(s.end));
            assert_eq!(s.text(t).trim(), s.text(t));
            last = s.end;
        }
    }
}
