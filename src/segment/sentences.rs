//! The sentence scanner: one pass over the bytes of a line group, deciding at each
//! terminator whether a sentence ends.
//!
//! Rules, in the order they are tried at a run of terminators (`.`, `!`, `?`, `…`, and the
//! CJK/full-width `。！？｡．`), after skipping closing quotes and brackets:
//! 1. CJK terminators end a sentence wherever they are, with no space needed
//!    (`这是一句。这是另一句。`), except a full-width `．` between digits (`３．１４`).
//! 2. Other terminators need whitespace after them (so `3.14`, `v2.4.13`, `example.com`
//!    and `e.g.x` never split), or a following CJK character.
//! 3. Never before a lower-case word (`e.g. the`, `"Why?" he asked`, `Wait... what`).
//! 4. A single `.` does not end a sentence after a title or Latin abbreviation (`Dr.`,
//!    `Mr.`, `vs.`, `et al.`), an initial (`J. R. R. Tolkien`), a dotted acronym (`U.S.`,
//!    `e.g.`, `Ph.D.`), or before a number after `No.`, `Fig.`, `pp.`, `Jan.` and the like.
//!
//! Hand-written (see `abbrev.rs` for why): a table lookup per byte and no allocation keeps
//! it far above the 30 MB/s per core the pipeline needs (see `benches/RESULTS.md`).

use super::abbrev;
use crate::span::Span;

/// Byte classes for the hot loop.
const OTHER: u8 = 0;
const ASCII_TERM: u8 = 1;
const LEAD_E2: u8 = 2; // … (E2 80 A6)
const LEAD_E3: u8 = 3; // 。 (E3 80 82)
const LEAD_EF: u8 = 4; // ！？． (EF BC 81/9F/8E), ｡ (EF BD A1)

static CLASS: [u8; 256] = {
    let mut t = [OTHER; 256];
    t[b'.' as usize] = ASCII_TERM;
    t[b'!' as usize] = ASCII_TERM;
    t[b'?' as usize] = ASCII_TERM;
    t[0xE2] = LEAD_E2;
    t[0xE3] = LEAD_E3;
    t[0xEF] = LEAD_EF;
    t
};

/// What kind of terminator starts at `i`, and its length in bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Term {
    /// `.`
    Period,
    /// `!` or `?`
    Bang,
    /// `…`
    Ellipsis,
    /// `。！？｡`: ends a sentence without a following space.
    Cjk,
    /// full-width `．`: like Cjk, but not between digits.
    FullStop,
}

#[inline]
fn term_at(b: &[u8], i: usize) -> Option<(Term, usize)> {
    match b[i] {
        b'.' => Some((Term::Period, 1)),
        b'!' | b'?' => Some((Term::Bang, 1)),
        0xE2 if b.get(i + 1) == Some(&0x80) && b.get(i + 2) == Some(&0xA6) => Some((Term::Ellipsis, 3)),
        0xE3 if b.get(i + 1) == Some(&0x80) && b.get(i + 2) == Some(&0x82) => Some((Term::Cjk, 3)),
        0xEF => match (b.get(i + 1), b.get(i + 2)) {
            (Some(0xBC), Some(0x81 | 0x9F)) | (Some(0xBD), Some(0xA1)) => Some((Term::Cjk, 3)),
            (Some(0xBC), Some(0x8E)) => Some((Term::FullStop, 3)),
            _ => None,
        },
        _ => None,
    }
}

/// Length of a closing quote or bracket at `i`, or 0.
#[inline]
fn closer_len(b: &[u8], i: usize) -> usize {
    match b[i] {
        b'"' | b'\'' | b')' | b']' | b'}' | b'*' | b'_' => 1,
        0xC2 if b.get(i + 1) == Some(&0xBB) => 2, // »
        0xE2 if b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0x99 | 0x9D | 0xBA)) => 3, // ’ ” ›
        0xE3 if b.get(i + 1) == Some(&0x80)
            && matches!(b.get(i + 2), Some(0x89 | 0x8B | 0x8D | 0x8F | 0x91 | 0x95 | 0x97)) =>
        {
            3
        } // 〉》」』】〕〗
        0xEF if b.get(i + 1) == Some(&0xBC) && matches!(b.get(i + 2), Some(0x82 | 0x87 | 0x89 | 0xBD)) => 3, // ＂＇）］
        0xEF if b.get(i + 1) == Some(&0xBD) && matches!(b.get(i + 2), Some(0x9D | 0xA3)) => 3, // ｝｣
        _ => 0,
    }
}

/// Length of a whitespace character at `i` that separates sentences (ASCII whitespace or
/// the ideographic space U+3000), or 0. A no-break space deliberately does not count:
/// writers use it to keep `Mr.\u{a0}Smith` together.
#[inline]
fn space_len(b: &[u8], i: usize) -> usize {
    match b[i] {
        b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C => 1,
        0xE3 if b.get(i + 1) == Some(&0x80) && b.get(i + 2) == Some(&0x80) => 3,
        _ => 0,
    }
}

#[inline]
fn char_at(text: &str, i: usize) -> Option<char> {
    text[i..].chars().next()
}

/// CJK ideographs, kana, hangul and full-width forms: scripts written without spaces.
#[inline]
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF
        | 0xF900..=0xFAFF | 0xFF01..=0xFF60 | 0x20000..=0x2FA1F)
}

#[inline]
fn is_digit_at(b: &[u8], i: usize) -> bool {
    match b.get(i) {
        Some(c) if c.is_ascii_digit() => true,
        // full-width digits ０-９: EF BC 90..99
        Some(0xEF) => b.get(i + 1) == Some(&0xBC) && matches!(b.get(i + 2), Some(0x90..=0x99)),
        _ => false,
    }
}

/// Scan the line group `span` of `text` and push its trimmed sentences onto `out`.
pub(crate) fn scan(text: &str, span: Span, out: &mut Vec<Span>) {
    let b = text.as_bytes();
    let end = span.end;
    let mut sent_start = span.start;
    let mut i = span.start;
    while i < end {
        if CLASS[b[i] as usize] == OTHER {
            i += 1;
            continue;
        }
        let Some((first, len)) = term_at(b, i) else {
            i += 1;
            continue;
        };
        // Consume the whole run of terminators (`?!`, `...`, `。。`, `!」`).
        let run_start = i;
        let mut j = i + len;
        let mut kinds_bang = first == Term::Bang;
        let mut kinds_cjk = matches!(first, Term::Cjk | Term::FullStop);
        let mut only_fullstop = first == Term::FullStop;
        let mut periods = usize::from(first == Term::Period);
        let mut ellipsis = first == Term::Ellipsis;
        while j < end {
            // A spaced ellipsis (`. . .`) is one run.
            if b[j] == b' ' && b[j - 1] == b'.' && j + 1 < end && b[j + 1] == b'.' {
                j += 1;
                continue;
            }
            match term_at(b, j) {
                Some((t, l)) => {
                    kinds_bang |= t == Term::Bang;
                    kinds_cjk |= matches!(t, Term::Cjk | Term::FullStop);
                    only_fullstop &= t == Term::FullStop;
                    periods += usize::from(t == Term::Period);
                    ellipsis |= t == Term::Ellipsis;
                    j += l;
                }
                None => break,
            }
        }
        let run_end = j;
        while j < end {
            let l = closer_len(b, j);
            if l == 0 {
                break;
            }
            j += l;
        }
        if j >= end {
            break; // the group's end closes the sentence anyway
        }
        let cut = if kinds_cjk && !only_fullstop {
            true
        } else if kinds_cjk {
            // full-width full stop: not inside a number (３．１４)
            !(run_start > span.start && is_digit_before(b, run_start) && is_digit_at(b, run_end))
        } else {
            decide_latin(text, sent_start, run_start, run_end, j, end, kinds_bang, periods, ellipsis)
        };
        if cut {
            out.push(Span::new(sent_start, j));
            // Skip the whitespace that follows (any Unicode whitespace, a no-break space
            // too, so the next sentence starts trimmed).
            let rest = &text[j..end];
            let k = j + (rest.len() - rest.trim_start().len());
            sent_start = k;
            i = k;
        } else {
            i = j;
        }
    }
    if sent_start < end {
        let s = crate::span::trim(text, Span::new(sent_start, end));
        if !s.is_empty() {
            out.push(s);
        }
    }
}

#[inline]
fn is_digit_before(b: &[u8], i: usize) -> bool {
    (i >= 1 && b[i - 1].is_ascii_digit())
        || (i >= 3 && b[i - 3] == 0xEF && b[i - 2] == 0xBC && (0x90..=0x99).contains(&b[i - 1]))
}

/// Decide a run of Latin terminators `run_start..run_end` followed by closers up to `j`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn decide_latin(
    text: &str,
    sent_start: usize,
    run_start: usize,
    run_end: usize,
    j: usize,
    end: usize,
    bang: bool,
    periods: usize,
    ellipsis: bool,
) -> bool {
    let b = text.as_bytes();
    let sp = space_len(b, j);
    if sp == 0 {
        // No space: only a following CJK character ends the sentence (`Done!然后`), and
        // not after an ellipsis, which runs on inside Chinese sentences (`他说……我`).
        return !ellipsis && char_at(text, j).is_some_and(is_cjk);
    }
    let mut k = j + sp;
    while k < end {
        let l = space_len(b, k);
        if l == 0 {
            break;
        }
        k += l;
    }
    let Some(next) = char_at(text, k) else {
        return true;
    };
    if next.is_lowercase() {
        return false;
    }
    if bang || ellipsis || periods != 1 || run_end - run_start != 1 {
        return true;
    }
    // A single period: look at the word before it.
    let word = word_before(b, sent_start, run_start);
    if word.is_empty() {
        return true;
    }
    // An enumerator opening the sentence (`1. Open the box`, `b. Second item`).
    if run_start - word.len() == sent_start
        && (word.len() <= 3 && word.iter().all(u8::is_ascii_digit)
            || word.len() == 1 && word[0].is_ascii_alphabetic())
    {
        return false;
    }
    if abbrev::never_ends(word) || abbrev::is_initial(word) || abbrev::is_dotted_acronym(word) {
        return false;
    }
    if abbrev::holds_before_digit(word) && is_digit_at(b, k) {
        return false;
    }
    true
}

/// The word that ends at `i` (exclusive), without opening quotes or brackets; at most
/// 24 bytes are looked at, which covers every abbreviation the rules know.
#[inline]
fn word_before(b: &[u8], lo: usize, i: usize) -> &[u8] {
    let mut s = i;
    let floor = i.saturating_sub(24).max(lo);
    while s > floor {
        let c = b[s - 1];
        if c.is_ascii_whitespace() || matches!(c, b'(' | b'[' | b'{' | b'"' | b'\'' | b'/') || c >= 0x80 {
            break;
        }
        s -= 1;
    }
    if s == floor && s > lo && !b[s - 1].is_ascii_whitespace() {
        return &[]; // a longer word than any abbreviation
    }
    &b[s..i]
}

#[cfg(test)]
mod tests {
    use crate::segment::Segmenter;

    fn sents(text: &str) -> Vec<&str> {
        Segmenter::default().sentences(text).iter().map(|s| s.text(text)).collect()
    }

    #[test]
    fn basic() {
        assert_eq!(sents("One. Two! Three? Four"), ["One.", "Two!", "Three?", "Four"]);
        assert_eq!(sents(""), Vec::<&str>::new());
        assert_eq!(sents("   "), Vec::<&str>::new());
    }

    #[test]
    fn abbreviations_and_numbers() {
        assert_eq!(
            sents("Mr. Smith met Dr. Jones. They talked."),
            ["Mr. Smith met Dr. Jones.", "They talked."]
        );
        assert_eq!(sents("Pi is 3.14. Use v2.4.13 now."), ["Pi is 3.14.", "Use v2.4.13 now."]);
        assert_eq!(sents("See No. 5 on Jan. 3. Done."), ["See No. 5 on Jan. 3.", "Done."]);
    }

    #[test]
    fn cjk() {
        assert_eq!(sents("你好。再见！真的？"), ["你好。", "再见！", "真的？"]);
        assert_eq!(sents("圆周率是３．１４。对。"), ["圆周率是３．１４。", "对。"]);
    }
}
