//! Structure signals: which units of a document look like headings, and the seam prior a
//! rule can take from them.
//!
//! Plain text carries its structure in short lines: `3.1.2 Quoting`, `Geography`,
//! `CHAPTER IV.`, `# Install`. A chunk that starts at a heading is labelled by it (its words
//! help both lexical and dense retrievers), and a chunk that ends on one orphans it from the
//! text it names. Recursive splitting sees neither; the prior lets a rule prefer cuts before
//! headings and avoid cuts right after them.
//!
//! The test is a heuristic on the unit's text alone (documented, not learned): one line of
//! at most 80 bytes and 10 words, starting with a capital, a digit or Markdown's `# `, not
//! quoted or bracketed, not a `Field: value` line, and either Markdown, all capitals, or
//! without the closing punctuation of a sentence.

/// Whether a unit's text (trimmed) looks like a heading.
#[must_use]
pub fn is_heading(unit: &str) -> bool {
    let t = unit.trim();
    if t.is_empty() || t.len() > 80 || t.contains('\n') || t.split_whitespace().count() > 10 {
        return false;
    }
    // Markdown: one to six `#` and a space (not `#include`, `#1`).
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    if hashes > 0 {
        return hashes <= 6 && t.as_bytes().get(hashes) == Some(&b' ');
    }
    let Some(first) = t.chars().next() else { return false };
    if !(first.is_uppercase() || first.is_ascii_digit()) {
        return false;
    }
    // `Capital: Kabul`, `Climate: arid…`: a field, not a heading.
    if t.split_once(':')
        .is_some_and(|(_, rest)| rest.starts_with(char::is_whitespace) && !rest.trim().is_empty())
    {
        return false;
    }
    let letters = t.chars().filter(|c| c.is_alphabetic());
    if letters.clone().count() >= 2 && letters.clone().all(char::is_uppercase) {
        return true;
    }
    let last = t.chars().next_back().unwrap_or(' ');
    !matches!(
        last,
        '.' | '!' | '?' | ',' | ';' | ':' | '"' | '\'' | '”' | '’' | ')' | '…' | '。' | '！' | '？'
    )
}

/// Seam bonuses from headings for units whose texts are `units`: entry `g` (a cut before
/// unit `g`) gains `weight` if unit `g` is a heading and loses `weight` if unit `g − 1` is one
/// (a cut that would leave a heading at the end of a chunk); entry 0 is 0. All zeros (an empty
/// vector for `weight == 0`) when there is nothing to say.
#[must_use]
pub fn heading_prior(units: &[&str], weight: f64) -> Vec<f64> {
    if weight == 0.0 || units.is_empty() {
        return Vec::new();
    }
    let heads: Vec<bool> = units.iter().map(|u| is_heading(u)).collect();
    let mut prior = vec![0f64; units.len()];
    for g in 1..units.len() {
        if heads[g] {
            prior[g] += weight;
        }
        if heads[g - 1] {
            prior[g] -= weight;
        }
    }
    prior
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_are_short_unpunctuated_lines() {
        for h in [
            "3.1.2 Quoting",
            "Geography",
            "CHAPTER IV.",
            "Chapter 12",
            "# Install\n",
            "## Build from source",
            "###### Deep",
            "3.1. Leitregeln",
            "BOTCHAN (MASTER DARLING)",
            "Übersicht",
        ] {
            assert!(is_heading(h), "{h:?}");
        }
        for p in [
            "Mr. Bennet made no answer.",
            "\"Bingley.\"",
            "\"Is he married or single?\"",
            "Capital: Kabul",
            "Climate: arid to semiarid; cold winters and hot summers",
            "the lower-case start of a wrapped line",
            "A heading\nthat is two lines",
            "This line is far too long to be a heading because it has more than ten words in it",
            "[Applause]",
            "#include <stdio.h>",
            "#1 priority",
            "####### Seven",
            "",
            "Thank you, and God bless America.",
        ] {
            assert!(!is_heading(p), "{p:?}");
        }
    }

    #[test]
    fn the_prior_favours_cuts_before_headings_and_not_after() {
        let units = ["Intro text here.", "2 Usage", "Run it like this.", "More text.", "3 Files", "4 Notes"];
        let p = heading_prior(&units, 2.0);
        assert_eq!(p, vec![0.0, 2.0, -2.0, 0.0, 2.0, 0.0]);
        assert!(heading_prior(&units, 0.0).is_empty());
        assert!(heading_prior(&[], 1.0).is_empty());
    }
}
