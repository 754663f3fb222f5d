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
//! quoted or bracketed, not a `Field: value` line, not cut short by a dash (`In America —`),
//! and either Markdown, a chapter line (`CHAPTER 40. Midnight, Forecastle.`), all capitals,
//! or without the closing punctuation of a sentence. In a document, a plain line whose next
//! paragraph goes on in lower case is half a sentence, not a heading.
//!
//! The same test gives each chunk its **context** ([`contexts`]): the document's title and
//! the headings above the chunk, `Title > Chapter 3 > 3.2 Quoting`, for an index to store
//! beside the chunk's text (a lexical index indexes it with the text; a dense one can embed
//! it as a prefix). Headings are the first lines of paragraphs (blank-line separated
//! blocks) that pass [`is_heading`], outside Markdown's fenced code blocks; their level comes
//! from their form ([`heading_level`]). A heading that names nothing (`IV.`) and one in
//! capitals or plain over most of a long document (where plain text lost its structure: a
//! dictionary's one entry on a line of its own) close the sections before them but are not
//! named in contexts. The document's first paragraph may also be a
//! Markdown heading in lower case (`# seamcut`): a title, where a `# ...` line elsewhere
//! in lower case is more often a shell comment.

/// Whether a unit's text (trimmed) looks like a heading.
#[must_use]
pub fn is_heading(unit: &str) -> bool {
    let t = unit.trim();
    if t.is_empty() || t.len() > 80 || t.contains('\n') || t.split_whitespace().count() > 10 {
        return false;
    }
    // Markdown: one to six `#` and a space (not `#include`, `#1`), then a capital or a digit
    // (not a shell comment, `# set the path`).
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    if hashes > 0 {
        let rest = t[hashes..].trim_start();
        return hashes <= 6
            && t.as_bytes().get(hashes) == Some(&b' ')
            && rest.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
    }
    let Some(first) = t.chars().next() else { return false };
    if !(first.is_uppercase() || first.is_ascii_digit()) {
        return false;
    }
    // `CHAPTER 40. Midnight, Forecastle.`: a chapter line whatever its last character.
    if is_chapter_line(t) {
        return true;
    }
    // `In America —`, `We --`, `Liste erwähnenswerter Pin-Prioritäts-`: a line cut short (an
    // interrupted speaker, a hyphenated break), in capitals or not.
    if t.ends_with(['—', '–', '-']) {
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
        '.' | '!' | '?' | ',' | ';' | ':' | '"' | '\'' | '”' | '’' | ')' | ']' | '…' | '。' | '！' | '？'
    )
}

/// Words that open a chapter line, in the languages of the benchmark's texts and their
/// neighbours: `Chapter 12`, `BOOK IV.`, `Capítulo 3. Instalación`.
const CHAPTER_WORDS: [&str; 10] =
    ["chapter", "book", "part", "kapitel", "teil", "chapitre", "livre", "partie", "capítulo", "parte"];

/// A chapter line: a chapter word, a number (digits, or a Roman numeral, or a number word in
/// capitals as in `CHAPTER ONE`), then nothing or punctuation and a title (`CHAPTER 40.
/// Midnight, Forecastle.`); not a sentence that starts so (`Part 2 of the form is …`).
fn is_chapter_line(t: &str) -> bool {
    let mut words = t.split_whitespace();
    let (Some(word), Some(number)) = (words.next(), words.next()) else { return false };
    if !CHAPTER_WORDS.contains(&word.to_lowercase().as_str()) || t.len() > 80 {
        return false;
    }
    let bare = number.trim_end_matches(['.', ':', ',', ')']);
    let numeral = is_numeral(bare) || (bare.len() > 2 && bare.chars().all(|c| c.is_uppercase()));
    // After the number: the end, or punctuation on the number (`40.`, `IV:`), or a dash.
    let next = words.next();
    numeral
        && (next.is_none()
            || bare.len() < number.len()
            || next.is_some_and(|w| w.starts_with(['—', '–', '-'])))
}

/// Digits, or a Roman numeral in one case (`iv`, `XII`).
fn is_numeral(w: &str) -> bool {
    !w.is_empty()
        && (w.bytes().all(|b| b.is_ascii_digit())
            || w.bytes().all(|b| b"IVXLCDM".contains(&b))
            || w.bytes().all(|b| b"ivxlcdm".contains(&b)))
}

/// A heading that names nothing (`IV.`, `3`, `* * *`): its words are numerals or punctuation.
/// It still closes the sections before it, but it adds no words to a context.
fn names_nothing(heading: &str) -> bool {
    heading.split_whitespace().all(|w| {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric());
        w.is_empty() || is_numeral(w)
    })
}

/// A Markdown heading of any case (`# seamcut`), as the first line of a document is taken.
fn is_markdown_title(line: &str) -> bool {
    let t = line.trim();
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes)
        && t.as_bytes().get(hashes) == Some(&b' ')
        && !t[hashes..].trim().is_empty()
        && t.len() <= 80
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

/// The level of a plain heading (`Geography`): below a line in capitals or a first-level one.
const PLAIN: usize = 2;

/// A heading's level in the outline: Markdown's `#` count; a numbered heading's depth
/// (`3` → 1, `3.1.2 Quoting` → 3); 1 for a line in capitals (`CHAPTER IV.`); 2 for any other
/// heading-like line (`Geography`), read as a section under the last capitalised or first-level
/// heading ([`headings`] puts one that recurs a level lower). A heuristic: plain text does
/// not say more.
#[must_use]
pub fn heading_level(heading: &str) -> usize {
    let t = heading.trim();
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    if hashes > 0 {
        return hashes;
    }
    if is_chapter_line(t) {
        return 1;
    }
    if let Some(depth) = numbered_depth(t) {
        return depth;
    }
    let letters = t.chars().filter(|c| c.is_alphabetic());
    if letters.clone().count() >= 2 && letters.clone().all(char::is_uppercase) {
        1
    } else {
        PLAIN
    }
}

/// A numbered heading's depth (`3` → 1, `3.1.2 Quoting` → 3).
fn numbered_depth(t: &str) -> Option<usize> {
    let number = t.split_whitespace().next().unwrap_or("").trim_end_matches('.');
    let numbered = number.starts_with(|c: char| c.is_ascii_digit())
        && number.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    numbered.then(|| number.split('.').count())
}

/// A heading whose form says it is one: Markdown, numbered, or a chapter line (`# Install`,
/// `3.1 Quoting`, `Chapter 12`), against one in capitals or a plain short line.
fn is_explicit(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('#') || numbered_depth(t).is_some() || is_chapter_line(t)
}

/// A heading of a document: where its line starts, its level and its text (trimmed, without
/// Markdown's `#`s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    pub start: usize,
    pub level: usize,
    pub text: String,
}

/// The headings of `text`: paragraphs of one line that look like one ([`is_heading`]). A heading of the plain kind (not
/// Markdown, numbered or in capitals) that recurs in the document (`Background`, `Geography`
/// under each country of a reference book) names a section of a template, so it sits a level
/// below the plain headings that occur once (the countries).
#[must_use]
pub fn headings(text: &str) -> Vec<Heading> {
    let mut out = Vec::new();
    let lines: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .scan(0, |at, l| {
            let start = *at;
            *at += l.len();
            Some((start, l.trim()))
        })
        .collect();
    let first = lines.iter().position(|l| !l.1.is_empty());
    let mut fenced = false;
    for (i, &(start, line)) in lines.iter().enumerate() {
        // Markdown's fenced code: its `# comments` are not headings.
        if line.starts_with("```") || line.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        let para_start = i == 0 || lines[i - 1].1.is_empty();
        let para_end = lines.get(i + 1).is_none_or(|l| l.1.is_empty());
        // Its own paragraph: a heading is not the first line of a wrapped sentence, and a
        // Markdown-like `# ...` line followed by more lines is a code comment more often
        // than a heading in the plain texts seamcut reads.
        let heading = is_heading(line) || (Some(i) == first && is_markdown_title(line));
        if fenced || line.is_empty() || !para_start || !para_end || !heading {
            continue;
        }
        let level = heading_level(line);
        // A plain line whose next paragraph goes on in lower case is half a sentence broken
        // by a stray blank line (`… stands where Mr. Truman` / `stood, and I …`).
        let goes_on = || {
            let next = lines[i + 1..].iter().find(|l| !l.1.is_empty());
            next.and_then(|l| l.1.chars().next()).is_some_and(char::is_lowercase)
        };
        if level == PLAIN && goes_on() {
            continue;
        }
        let name = line.trim_start_matches('#').trim();
        out.push(Heading { start, level, text: name.to_string() });
    }
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for h in &out {
        *seen.entry(h.text.as_str()).or_default() += 1;
    }
    let repeated: Vec<bool> = out.iter().map(|h| h.level == PLAIN && seen[h.text.as_str()] > 1).collect();
    for (h, r) in out.iter_mut().zip(repeated) {
        if r {
            h.level = PLAIN + 1;
        }
    }
    out
}

/// A heading in capitals or a plain line (not Markdown, numbered or a chapter) whose section
/// is longer than this and than [`WIDE_SHARE`] of its document is not named in contexts:
/// plain text lost its structure there (`ABRACADABRA.` in a dictionary whose
/// other entries start their paragraphs, `EMP` in the Jargon File), and a name shared by most
/// of a document's chunks would not tell them apart anyway.
const WIDE_BYTES: usize = 32 << 10;

/// See [`WIDE_BYTES`].
const WIDE_SHARE: f64 = 0.25;

/// The context of each chunk starting at `starts` (ascending byte offsets into the document):
/// the title (the heading that opens the document when all others are below it or are
/// chapters, else `id`; none when it is empty), then the path of headings that
/// stand above the chunk's start (the last heading of each level before it, deeper levels
/// closed by a shallower one), joined by ` > `. A chunk that starts on a heading has that
/// heading in its path. A heading that names nothing (`IV.`) or whose section is most of a
/// long document ([`WIDE_BYTES`]) closes the sections before it but is not named.
#[must_use]
pub fn contexts(id: &str, text: &str, starts: &[usize]) -> Vec<String> {
    let heads = headings(text);
    // The first heading is the document's title when it opens the document and every other
    // heading is below it or a chapter (`PRIDE AND PREJUDICE` over its chapters); a first
    // heading with peers (the first country of a reference book) is only the first entry,
    // and one after text is a section of that text: then the id is the title.
    let titled = heads.first().filter(|f| {
        text[..f.start].trim().is_empty()
            && heads
                .iter()
                .skip(1)
                .all(|h| h.level > f.level || (is_chapter_line(&h.text) && !is_chapter_line(&f.text)))
    });
    let title = titled.map_or(id, |h| h.text.as_str());
    let first_start = titled.map(|h| h.start);
    // Whether each heading is named: its section runs to the next heading at its level or
    // above (or the end).
    let named: Vec<bool> = heads
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let end = heads[i + 1..].iter().find(|n| n.level <= h.level).map_or(text.len(), |n| n.start);
            let section = end - h.start;
            let wide = section > WIDE_BYTES
                && section as f64 > WIDE_SHARE * text.len() as f64
                && !is_explicit(text[h.start..].lines().next().unwrap_or(""));
            !names_nothing(&h.text) && !wide
        })
        .collect();
    let mut path: Vec<usize> = Vec::new();
    let mut next = heads.iter().enumerate().peekable();
    starts
        .iter()
        .map(|&s| {
            // A heading line that starts inside the chunk's leading whitespace belongs to it.
            let first = s + text[s..].len() - text[s..].trim_start().len();
            while let Some((i, h)) = next.next_if(|(_, h)| h.start <= first) {
                path.retain(|&p| heads[p].level < h.level);
                path.push(i);
            }
            let mut parts = if title.is_empty() { Vec::new() } else { vec![title] };
            // A title heading is not repeated in the path.
            parts.extend(
                path.iter()
                    .filter(|&&p| named[p] && Some(heads[p].start) != first_start)
                    .map(|&p| heads[p].text.as_str()),
            );
            parts.join(" > ")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_follow_the_outline_above_each_chunk() {
        let text = "# Guide\n\nIntro text here.\n\n## Install\n\nRun the script.\n\n### From source\n\nBuild it.\n\n## Use\n\nCall it.\n";
        let at = |s: &str| text.find(s).unwrap();
        let starts = [
            0,
            at("Intro"),
            at("## Install"),
            at("Run"),
            at("### From"),
            at("Build"),
            at("## Use"),
            at("Call"),
        ];
        let c = contexts("doc-1", text, &starts);
        assert_eq!(
            c,
            vec![
                "Guide",
                "Guide",
                "Guide > Install",
                "Guide > Install",
                "Guide > Install > From source",
                "Guide > Install > From source",
                "Guide > Use",
                "Guide > Use",
            ]
        );
        // Plain text: numbered and capitalised headings; no heading at all gives the id.
        let plain = "CHAPTER I.\n\nIt was a dark night.\n\n1.2 Weather\n\nRain fell.\n\nMore rain.\n";
        let c = contexts("book", plain, &[0, plain.find("1.2").unwrap(), plain.find("More").unwrap()]);
        assert_eq!(c, vec!["CHAPTER I.", "CHAPTER I. > 1.2 Weather", "CHAPTER I. > 1.2 Weather"]);
        assert_eq!(contexts("notes.txt", "just words, no headings.", &[0]), vec!["notes.txt"]);
        // A template's recurring sections sit under the entries that occur once; a wrapped
        // line that starts a paragraph is not a heading.
        let book = "Albania\n\nBackground\n\nOld.\n\nGeography\n\nHilly.\n\nChad\n\nBackground\n\nDry.\n\nGeography\n\nFlat.\n\n5. A list item that wraps\nonto a second line.\n\n# set the path\n";
        let at = |s: &str| book.find(s).unwrap();
        let c = contexts("f", book, &[at("Old"), at("Hilly"), at("Dry"), at("5. A"), at("# set")]);
        assert_eq!(
            c,
            vec![
                "f > Albania > Background",
                "f > Albania > Geography",
                "f > Chad > Background",
                "f > Chad > Geography",
                "f > Chad > Geography"
            ]
        );
        assert_eq!(heading_level("3.1.2 Quoting"), 3);
        assert_eq!(heading_level("CHAPTER IV."), 1);
        assert_eq!(heading_level("Geography"), 2);
        assert_eq!(heading_level("## Build"), 2);
    }

    #[test]
    fn a_chunk_gets_only_the_headings_above_it() {
        // Markdown whose title starts in lower case, and a heading after the first chunk.
        let md = "# seamcut\n\nBody. More.\n\n## Next Part\n\nMore.";
        let at = |s: &str| md.find(s).unwrap();
        let c = contexts("README.md", md, &[0, at("Body"), at("## Next"), at("More.")]);
        assert_eq!(c, vec!["seamcut", "seamcut", "seamcut > Next Part", "seamcut > Next Part"]);
        // No heading opens the document: the id is the title, and chunks before the first
        // heading have none of it.
        let late = "Some opening text.\n\n## Next Part\n\nMore.";
        let c = contexts("doc", late, &[0, late.find("More").unwrap()]);
        assert_eq!(c, vec!["doc", "doc > Next Part"]);
        // Numbered and capitalised headings: each chunk has only those above it.
        let plain = "Preface text here.\n\nCHAPTER ONE\n\nIt began.\n\n1.1 Morning\n\nRain.";
        let at = |s: &str| plain.find(s).unwrap();
        let c = contexts("book", plain, &[0, at("It began"), at("Rain")]);
        assert_eq!(c, vec!["book", "book > CHAPTER ONE", "book > CHAPTER ONE > 1.1 Morning"]);
        // A lower-case `# ...` line after the first paragraph, and any line in a code fence,
        // is not a heading.
        let code = "# Guide\n\n```sh\n# Build It\n\nmake\n```\n\n# set the path\n\nDone.";
        let c = contexts("g", code, &[0, code.find("Done").unwrap()]);
        assert_eq!(c, vec!["Guide", "Guide"]);
    }

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
    fn chapter_lines_are_headings_and_cut_lines_are_not() {
        for h in [
            "CHAPTER 40. Midnight, Forecastle.",
            "BOOK IV.",
            "Chapter 3: The Return",
            "Capítulo 1. Bienvenido",
        ] {
            assert!(is_heading(h), "{h:?}");
            assert_eq!(heading_level(h), 1, "{h:?}");
        }
        for p in [
            "In America —",
            "We --",
            "Liste erwähnenswerter Pin-Prioritäts-",
            "Part 2 of the form is filled.",
        ] {
            assert!(!is_heading(p), "{p:?}");
        }
        // Half a sentence broken by a blank line is not a heading; the same line before a
        // paragraph that starts anew is.
        let broken = "Text.\n\nToday, that freshman Member stands where Mr. Truman\n\nstood, and I say so.\n";
        assert!(headings(broken).is_empty());
        let whole = "Text.\n\nToday, that freshman Member stands where Mr. Truman\n\nStood he did.\n";
        assert_eq!(headings(whole).len(), 1);
    }

    #[test]
    fn a_heading_that_names_nothing_or_most_of_a_long_text_closes_sections_unnamed() {
        // `IV.` ends `TRADE` but adds no words; a book's title stays above its chapters.
        let text = "Intro.\n\nTRADE\n\nText one.\n\nIV.\n\nText two.";
        let at = |s: &str| text.find(s).unwrap();
        assert_eq!(contexts("doc", text, &[at("Text one"), at("Text two")]), vec!["doc > TRADE", "doc"]);
        let book = "PRIDE AND PREJUDICE\n\nChapter 1\n\nText.\n\nCHAPTER 2. Rain.\n\nMore.";
        let at = |s: &str| book.find(s).unwrap();
        assert_eq!(
            contexts("b", book, &[at("Text"), at("More")]),
            vec!["PRIDE AND PREJUDICE > Chapter 1", "PRIDE AND PREJUDICE > CHAPTER 2. Rain."]
        );
        // A line in capitals over most of a long text (a dictionary's one entry on a line of
        // its own) is not named there; a numbered chapter over as much of a manual is.
        let body = "ABASEMENT, n. A decent and customary mental attitude.\n\n".repeat(1000);
        for (head, named) in [("ABRACADABRA.", false), ("4. Concepts", true)] {
            let text = format!("PREFACE\n\nShort.\n\n{head}\n\n{body}TO MY PET TORTOISE\n\nEnd.");
            let c = contexts("d", &text, &[text.find("ABASEMENT").unwrap() + body.len() / 2]);
            assert_eq!(c[0] == format!("d > {head}"), named, "{head}: {c:?}");
            assert!(c[0] == "d" || named, "{head}: {c:?}");
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
