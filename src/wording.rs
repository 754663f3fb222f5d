//! Wording shared by every layer's messages: a small home of its own, so that a database
//! writer, an LLM backend or the CLI words a count as the pipeline does without importing it.

/// `n word`, with the word's plural (an `s`, or `es` after `ch`, `sh`, `s`, `x`) unless `n` is 1.
#[must_use]
pub fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else if ["ch", "sh", "s", "x"].iter().any(|e| word.ends_with(e)) {
        format!("{n} {word}es")
    } else if word.ends_with('y')
        && !matches!(word.chars().rev().nth(1), Some('a' | 'e' | 'i' | 'o' | 'u') | None)
    {
        // retry → retries, batch of a query → queries; day → days.
        format!("{n} {}ies", &word[..word.len() - 1])
    } else {
        format!("{n} {word}s")
    }
}
