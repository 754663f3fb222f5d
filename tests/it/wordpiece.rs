//! The ASCII WordPiece fast path gives exactly what the HF tokenizer gives: ids, counts and
//! token start offsets, on prose and on random strings. The sizing counts differ from HF's
//! in one rule only (an `[UNK]` over 100 characters counts one per started 100), and the fast
//! path applies it exactly as it is applied to HF's own tokens.

use proptest::prelude::*;
use seamcut::wordpiece::TextTokenizer;
use tokenizers::Tokenizer;

fn default_tokenizer() -> (TextTokenizer, Tokenizer) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/models/default/tokenizer.json");
    let mut hf = Tokenizer::from_file(path).unwrap();
    let _ = hf.with_truncation(None);
    hf.with_padding(None);
    (TextTokenizer::new(hf.clone()), hf)
}

fn same(t: &TextTokenizer, hf: &Tokenizer, text: &str) -> Result<(), TestCaseError> {
    let enc = hf.encode(text, false).unwrap();
    prop_assert_eq!(t.ids(text), enc.get_ids().to_vec(), "ids differ for {:?}", text);
    prop_assert_eq!(t.count(text), enc.len());
    let starts: Vec<usize> = enc.get_offsets().iter().map(|o| o.0).collect();
    prop_assert_eq!(t.token_starts(text), starts, "starts differ for {:?}", text);
    Ok(())
}

#[test]
fn fast_path_is_active_for_the_default_tokenizer() {
    let (t, _) = default_tokenizer();
    assert!(t.has_fast_path());
}

#[test]
fn accented_latin_prose_takes_the_fast_path_and_matches_hf() {
    let (t, hf) = default_tokenizer();
    for text in [
        "Die Größe des Paketes „debian-reference“ beträgt 1,5 MiB; Änderungen übernehmen Sie mit »apt«.",
        "Où est la bibliothèque ? Élève, garçon, cœur, naïve — déjà vu. ¿Qué pasó? ¡Mañana!",
        "Smørrebrød, Ærø, Łódź, İstanbul, Straße × 2 ÷ 3 ± 1 ° § ¶ © µ ½",
    ] {
        same(&t, &hf, text).unwrap();
    }
    assert!(t.fast_path_covers("Die Größe beträgt 1,5 MiB; Änderungen übernehmen."));
    assert!(t.fast_path_covers("Élève, garçon, naïve — déjà vu."));
    assert!(!t.fast_path_covers("Ελληνικά"), "Greek takes the HF path");
}

#[test]
fn prose_matches_hf() {
    let (t, hf) = default_tokenizer();
    let text = "It was the best of times, it was the worst of times; Dr. O'Neil paid $3.14 (approx.) \
                for v2.4.13 -- e.g. supercalifragilisticexpialidocious ANTIDISESTABLISHMENTARIANISM!!! \
                \t\r\nemail: a.b@example.org, url https://docs.rs/x?y=1&z=2#frag ~ `code` {braces} |pipe| \
                xqzjvw qqqqq 12345678901234567890 [CLS] [MASK] tail";
    same(&t, &hf, text).unwrap();
    for w in text.split(' ') {
        same(&t, &hf, w).unwrap();
    }
    let long = "a".repeat(150) + " b";
    same(&t, &hf, &long).unwrap();
}

/// The sizing rule applied to HF's own encoding: (starts, ids if no token was split).
fn sizing_by_hf(hf: &Tokenizer, text: &str) -> (Vec<usize>, Option<Vec<u32>>) {
    let unk = hf.token_to_id("[UNK]").unwrap();
    let enc = hf.encode(text, false).unwrap();
    let mut starts = Vec::new();
    let mut split = false;
    for (&id, &(s, e)) in enc.get_ids().iter().zip(enc.get_offsets()) {
        if id == unk && text[s..e].chars().count() > 100 {
            starts.extend(text[s..e].char_indices().step_by(100).map(|(o, _)| s + o));
            split = true;
        } else {
            starts.push(s);
        }
    }
    (starts, (!split).then(|| enc.get_ids().to_vec()))
}

fn same_sizing(t: &TextTokenizer, hf: &Tokenizer, text: &str) -> Result<(), TestCaseError> {
    let (starts, ids) = sizing_by_hf(hf, text);
    prop_assert_eq!(t.sizing_token_starts(text), starts.clone(), "sizing starts differ for {:?}", text);
    prop_assert_eq!(t.sizing_count(text), starts.len(), "sizing count differs for {:?}", text);
    prop_assert_eq!(t.sizing_ids(text), ids, "sizing ids differ for {:?}", text);
    Ok(())
}

#[test]
fn sizing_splits_only_over_long_unknown_words() {
    let (t, hf) = default_tokenizer();
    for text in [
        "a".repeat(150) + " b",
        format!("Über {} naïve", "é".repeat(101)),
        format!("[CLS] {} x", "z".repeat(1000)),
        format!("{}\u{ad}{} end", "ö".repeat(60), "ö".repeat(60)),
        "λ".repeat(250),
        "short words only, no long one".to_string(),
    ] {
        same_sizing(&t, &hf, &text).unwrap();
        same(&t, &hf, &text).unwrap();
    }
    assert_eq!(t.sizing_count(&"a".repeat(100)), t.count(&"a".repeat(100)));
    assert_eq!(t.sizing_count(&"a".repeat(101)), 2);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn sizing_of_long_words_matches_the_rule_on_hf(words in prop::collection::vec(
        "[a-zA-Z0-9]{1,12}|[a-z0-9]{90,260}|[a-zäöüéèß\u{ad}]{90,260}|[α-ω]{90,230}|[.,;!?\\[\\]-]|\\PC{1,3}", 0..12)) {
        let (t, hf) = default_tokenizer_cached();
        same_sizing(t, hf, &words.concat())?;
        same_sizing(t, hf, &words.join(" "))?;
        same(t, hf, &words.join(" "))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn ascii_matches_hf(text in "[ -~\t\n\r]{0,200}") {
        let (t, hf) = default_tokenizer_cached();
        same(t, hf, &text)?;
    }

    #[test]
    fn wordy_matches_hf(words in prop::collection::vec("[a-zA-Z]{1,30}|[0-9]{1,8}|[.,!?;:'\"()-]", 0..40)) {
        let text = words.join(" ");
        let (t, hf) = default_tokenizer_cached();
        same(t, hf, &text)?;
    }

    #[test]
    fn typeset_matches_hf(words in prop::collection::vec("[a-zA-Z]{1,12}|[\u{2018}\u{2019}\u{201C}\u{201D}\u{2013}\u{2014}\u{2026}\u{AB}\u{BB}\u{2022}\u{B7}\u{A0}]", 0..40)) {
        let text = words.join(" ");
        let (t, hf) = default_tokenizer_cached();
        same(t, hf, &words.concat())?;
        same(t, hf, &text)?;
    }

    #[test]
    fn latin_matches_hf(words in prop::collection::vec("[a-zA-Z]{1,8}|[äöüÄÖÜßéèêëàâçñÉøÅåæœŒıİĳŁłđĐŉſ]{1,3}[a-z]{0,5}|[¿¡«»§°±×÷¶©®¬\u{ad}\u{a0}µ¹½]|[.,;:!?()-]|Straße|Größe", 0..40)) {
        let (t, hf) = default_tokenizer_cached();
        same(t, hf, &words.concat())?;
        same(t, hf, &words.join(" "))?;
    }

    #[test]
    fn any_text_matches_hf(text in "\\PC{0,80}") {
        let (t, hf) = default_tokenizer_cached();
        same(t, hf, &text)?;
        same_sizing(t, hf, &text)?;
    }
}

fn default_tokenizer_cached() -> &'static (TextTokenizer, Tokenizer) {
    static T: std::sync::OnceLock<(TextTokenizer, Tokenizer)> = std::sync::OnceLock::new();
    T.get_or_init(default_tokenizer)
}
