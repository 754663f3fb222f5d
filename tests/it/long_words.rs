//! Over-long words under the default sizer (issue 24): BERT WordPiece reads a word over 100
//! characters as one `[UNK]`, so a multi-megabyte line with no spaces was "1 token" and came
//! out as one chunk. Every chunker, baselines and embedding chunkers, on multi-megabyte
//! words (the fast path's ASCII and Latin branches, and the HF pipeline) and on a long run
//! of spaced words: chunks tile the text exactly, each counts what it reports, fits the cap
//! when tokenized piecewise (`properties::piecewise_count`, from the HF tokenizer itself),
//! and none holds more than cap × 100 (the tokenizer's longest word) characters of text.

use seamcut::chunk::verify;
use seamcut::sizer::{HfSizer, Sizer};
use seamcut::spec::ChunkerSpec;

use crate::properties::piecewise_count;

const LONGEST_WORD: usize = 100;

/// `bytes` of a word from `alphabet`, cycling through it with a small xorshift so that no
/// vocabulary piece repeats regularly.
fn word(alphabet: &[char], bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 4);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    while s.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push(alphabet[(x % alphabet.len() as u64) as usize]);
    }
    s
}

fn texts() -> Vec<(&'static str, String)> {
    let ascii: Vec<char> = ('a'..='z').chain('0'..='9').collect();
    let latin: Vec<char> = "abcdeéèêàçñöüß".chars().collect();
    let greek: Vec<char> = ('α'..='ω').collect();
    let spaced = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"];
    let mut words = String::new();
    let mut i = 0;
    while words.len() < 600_000 {
        words.push_str(spaced[i % spaced.len()]);
        words.push(' ');
        i += 7;
    }
    vec![
        // ASCII fast path, one line of 2 MB with no space or punctuation.
        ("ascii word", word(&ascii, 2_000_000) + "\n"),
        // The fast path's Latin table (accents), inside prose.
        ("latin word", format!("A sentence first. {}\n\nThen a paragraph.\n", word(&latin, 1_000_000))),
        // The HF pipeline (Greek is not in the fast path's table).
        ("greek word", word(&greek, 1_000_000)),
        // A long run of spaced words with no punctuation: one 600 kB "sentence".
        ("spaced words", words),
    ]
}

#[test]
fn multi_megabyte_words_and_lines_give_chunks_that_fit_the_cap() {
    let sizer = HfSizer::default_model();
    let hf = sizer.tokenizer().hf().clone();
    let cap = 256;
    for (what, text) in texts() {
        let mut checked = std::collections::HashSet::new();
        for chunker in ["sentence", "paragraph", "recursive", "fixed", "maxmin"] {
            let spec: ChunkerSpec =
                serde_json::from_value(serde_json::json!({"chunker": chunker, "max_tokens": cap})).unwrap();
            let c = spec.build().unwrap();
            let chunks = c.chunk(&text).unwrap();
            verify(&text, &chunks).unwrap_or_else(|e| panic!("{what}, {chunker}: {e}"));
            let joined: String = chunks.iter().map(|c| &text[c.start..c.end]).collect();
            assert!(joined == text, "{what}, {chunker}: chunks do not give the text back");
            let longest = chunks.iter().map(|c| c.end - c.start).max().unwrap();
            assert!(chunks.len() > 1, "{what}, {chunker}: one chunk of {longest} bytes");
            for ch in &chunks {
                // Chunkers often agree on a chunk: each is tokenized once per text.
                if !checked.insert((ch.start, ch.end, ch.tokens)) {
                    continue;
                }
                let t = &text[ch.start..ch.end];
                assert_eq!(ch.tokens, sizer.count(t), "{what}, {chunker}: reported count");
                let piecewise = piecewise_count(&hf, t);
                assert!(piecewise <= cap, "{what}, {chunker}: {piecewise} tokens piecewise > {cap}");
                assert_eq!(
                    piecewise, ch.tokens,
                    "{what}, {chunker}: the sizer's count is not the piecewise count"
                );
                let chars = t.chars().filter(|c| !c.is_whitespace()).count();
                assert!(
                    chars <= cap * LONGEST_WORD,
                    "{what}, {chunker}: {chars} characters > cap × longest word ({})",
                    cap * LONGEST_WORD
                );
            }
            // A chunk of the 2 MB word is as large as the cap allows, not a sliver: 256
            // pieces of 100 characters.
            if what == "ascii word" && chunker != "fixed" {
                assert!(
                    longest >= cap * LONGEST_WORD / 2,
                    "{what}, {chunker}: largest chunk {longest} bytes"
                );
            }
        }
    }
}

#[test]
fn embedding_chunkers_ids_stay_the_models_own_for_an_over_long_word() {
    // A paragraph with an over-long word gets no ids from the sizer (its ids, one [UNK], are
    // fewer than its count): the model tokenizes it itself and sees the tokenizer's [UNK].
    let sizer = HfSizer::default_model();
    let w = "x".repeat(250);
    let text = format!("Short words here. {w} more words.");
    assert_eq!(sizer.ids(&text), None);
    assert_eq!(sizer.tokenizer().ids(&text).len() + 2, sizer.count(&text));
    let spec: ChunkerSpec =
        serde_json::from_value(serde_json::json!({"chunker": "maxmin", "max_tokens": 8})).unwrap();
    let chunks = spec.build().unwrap().chunk(&text).unwrap();
    verify(&text, &chunks).unwrap();
    assert!(chunks.iter().all(|c| c.tokens <= 8 && c.tokens == sizer.count(&text[c.start..c.end])));
}
