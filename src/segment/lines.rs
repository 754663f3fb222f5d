//! Paragraphs and hard line breaks.
//!
//! A blank line (only whitespace) separates paragraphs. Inside a paragraph a newline is a
//! *hard* break, ending a sentence even without punctuation, when:
//! - the next line starts a list item (`-`, `*`, `+`, `•`, `1.`, `2)`, `a)`), a Markdown
//!   heading (`#`) or a table row (`|`), or the current line is a heading; or
//! - the paragraph is not hard-wrapped prose, and the line does not visibly run on.
//!
//! A paragraph counts as wrapped when its longest line has at least [`WRAP_MIN_CHARS`]
//! characters and every line but the last is at least [`WRAP_RATIO`] of that length; a
//! wrapped paragraph's newlines are soft (like spaces). Markdown sources are often wrapped
//! raggedly (by hand, or one clause per line), so in a paragraph that is not evenly wrapped
//! a single line still runs on into the next ([`runs_on`]) when it is at least
//! [`RUN_ON_MIN_CHARS`] long and either the next line starts in lower case, or the line
//! ends in a comma or semicolon, or it is [`WRAP_MIN_CHARS`] or longer and ends in a
//! lower-case letter.
//!
//! So a Project Gutenberg paragraph wrapped at 70 columns, or a Markdown paragraph wrapped
//! anywhere, stays one flow of sentences, while a title line followed by text, a poem's
//! capitalised lines or a short unpunctuated list splits per line.

use crate::span::Span;

/// Below this many bytes for the longest line, a paragraph is never treated as wrapped.
pub(crate) const WRAP_MIN_CHARS: usize = 40;
/// A line shorter than this fraction of the longest line marks the paragraph as not wrapped.
pub(crate) const WRAP_RATIO: f32 = 0.6;
/// A line shorter than this never runs on into the next in a paragraph that is not wrapped
/// (list items, titles, short verse lines).
pub(crate) const RUN_ON_MIN_CHARS: usize = 20;

/// Does `cur` visibly continue on the line `next` (a sentence wrapped mid-way)?
fn runs_on(cur: &str, next: &str) -> bool {
    let len = char_len(cur);
    if len < RUN_ON_MIN_CHARS {
        return false;
    }
    let last = cur.chars().next_back().unwrap_or(' ');
    next.chars().next().is_some_and(char::is_lowercase)
        || matches!(last, ',' | ';')
        || (len >= WRAP_MIN_CHARS && last.is_lowercase())
}

/// Call `f` with each trimmed paragraph span of `text`.
pub(crate) fn paragraphs(text: &str, mut f: impl FnMut(Span)) {
    let b = text.as_bytes();
    let mut pos = 0;
    let mut para_start: Option<usize> = None;
    let mut para_end = 0;
    while pos < b.len() {
        let nl = memchr::memchr(b'\n', &b[pos..]).map_or(b.len(), |i| pos + i);
        let line = &text[pos..nl];
        let t = line.trim();
        if t.is_empty() {
            if let Some(s) = para_start.take() {
                f(Span::new(s, para_end));
            }
        } else {
            let lead = line.len() - line.trim_start().len();
            if para_start.is_none() {
                para_start = Some(pos + lead);
            }
            para_end = pos + lead + t.len();
        }
        pos = nl + 1;
    }
    if let Some(s) = para_start {
        f(Span::new(s, para_end));
    }
}

/// Call `f` with each group of lines between hard breaks inside `para` (trimmed spans).
pub(crate) fn hard_line_groups(text: &str, para: Span, mut f: impl FnMut(Span)) {
    let b = text.as_bytes();
    // Fast path: a paragraph on one line.
    let Some(first_nl) = memchr::memchr(b'\n', &b[para.start..para.end]) else {
        f(para);
        return;
    };
    let _ = first_nl;
    // Collect the paragraph's lines (trimmed) once; paragraphs are short.
    let mut lines: Vec<Span> = Vec::new();
    let mut pos = para.start;
    while pos < para.end {
        let nl = memchr::memchr(b'\n', &b[pos..para.end]).map_or(para.end, |i| pos + i);
        let l = crate::span::trim(text, Span::new(pos, nl));
        if !l.is_empty() {
            lines.push(l);
        }
        pos = nl + 1;
    }
    let longest = lines.iter().map(|l| char_len(l.text(text))).max().unwrap_or(0);
    let wrapped = longest >= WRAP_MIN_CHARS
        && lines[..lines.len() - 1]
            .iter()
            .all(|l| char_len(l.text(text)) as f32 >= WRAP_RATIO * longest as f32);
    let mut group_start = lines[0].start;
    for k in 0..lines.len() - 1 {
        let cur = lines[k].text(text);
        let next = lines[k + 1].text(text);
        let hard = starts_block(next) || cur.starts_with('#') || !(wrapped || runs_on(cur, next));
        if hard {
            f(Span::new(group_start, lines[k].end));
            group_start = lines[k + 1].start;
        }
    }
    f(Span::new(group_start, lines[lines.len() - 1].end));
}

fn char_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// Does a (left-trimmed) line start a list item, heading, table row or similar block?
pub(crate) fn starts_block(line: &str) -> bool {
    let b = line.as_bytes();
    match b.first() {
        None => false,
        Some(b'#' | b'|') => true,
        Some(b'-' | b'*' | b'+') => b.len() == 1 || b[1] == b' ' || b[1] == b'\t',
        Some(c) if c.is_ascii_digit() => {
            let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
            digits <= 3
                && matches!(b.get(digits), Some(b'.' | b')'))
                && matches!(b.get(digits + 1), None | Some(b' ' | b'\t'))
        }
        Some(c) if c.is_ascii_alphabetic() => b.len() >= 3 && b[1] == b')' && (b[2] == b' ' || b[2] == b'\t'),
        _ => {
            line.starts_with('•')
                || line.starts_with('·')
                || line.starts_with('▪')
                || line.starts_with('–') && line[3..].starts_with(' ')
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paras(text: &str) -> Vec<&str> {
        let mut v = Vec::new();
        paragraphs(text, |p| v.push(p.text(text)));
        v
    }

    #[test]
    fn paragraphs_split_on_blank_lines() {
        assert_eq!(paras("a\nb\n\n  \nc\r\n\r\nd  "), vec!["a\nb", "c", "d"]);
        assert!(paras("").is_empty());
        assert!(paras(" \n\t\n").is_empty());
    }

    #[test]
    fn blocks() {
        assert!(starts_block("- item"));
        assert!(starts_block("12. item"));
        assert!(starts_block("a) item"));
        assert!(starts_block("# Title"));
        assert!(starts_block("• item"));
        assert!(!starts_block("-5 degrees"));
        assert!(!starts_block("2024. It was"));
        assert!(!starts_block("Hello"));
    }
}
