//! The ASCII WordPiece fast path gives exactly what the HF tokenizer gives: ids, counts and
//! token start offsets, on prose and on random strings.

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
    }
}

fn default_tokenizer_cached() -> &'static (TextTokenizer, Tokenizer) {
    static T: std::sync::OnceLock<(TextTokenizer, Tokenizer)> = std::sync::OnceLock::new();
    T.get_or_init(default_tokenizer)
}
