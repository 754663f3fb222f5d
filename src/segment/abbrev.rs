//! Abbreviations that a period does not end a sentence after.
//!
//! Hand-written rather than taken from a crate: the candidates measured (see the foundation
//! issue) either split after "Dr." (icu_segmenter) or split full-width decimals (sentencex),
//! and a `match` over byte strings compiles to a length switch plus a few `memcmp`s, which
//! keeps the per-period cost negligible in the scanner's hot loop.

/// Words (without their final period) after which a period never ends a sentence:
/// titles and Latin abbreviations that always precede something.
pub(crate) fn never_ends(word: &[u8]) -> bool {
    matches!(
        word,
        b"Mr"
            | b"Mrs"
            | b"Ms"
            | b"Mme"
            | b"Mlle"
            | b"Dr"
            | b"Drs"
            | b"Prof"
            | b"Rev"
            | b"Hon"
            | b"St"
            | b"Ste"
            | b"Mt"
            | b"Ft"
            | b"Gen"
            | b"Capt"
            | b"Cpt"
            | b"Lt"
            | b"Col"
            | b"Maj"
            | b"Sgt"
            | b"Cmdr"
            | b"Adm"
            | b"Gov"
            | b"Sen"
            | b"Rep"
            | b"Pres"
            | b"Supt"
            | b"Messrs"
            | b"vs"
            | b"Vs"
            | b"viz"
            | b"cf"
            | b"Cf"
            | b"al"
            | b"approx"
            | b"Approx"
            | b"ca"
            | b"resp"
            | b"incl"
            | b"ibid"
            | b"Ibid"
    )
}

/// Words after which a period holds before a number (`No. 5`, `Fig. 3`, `Jan. 12`,
/// `pp. 10`) but may still end a sentence before a capitalised word (`in Jan. The`).
pub(crate) fn holds_before_digit(word: &[u8]) -> bool {
    matches!(
        word,
        b"No"
            | b"Nos"
            | b"no"
            | b"nos"
            | b"Nr"
            | b"nr"
            | b"p"
            | b"pp"
            | b"Fig"
            | b"Figs"
            | b"fig"
            | b"figs"
            | b"Eq"
            | b"Eqs"
            | b"eq"
            | b"eqs"
            | b"Ref"
            | b"Refs"
            | b"ref"
            | b"Vol"
            | b"Vols"
            | b"vol"
            | b"Ed"
            | b"ed"
            | b"Ch"
            | b"ch"
            | b"Sec"
            | b"sec"
            | b"Art"
            | b"art"
            | b"Op"
            | b"op"
            | b"Pt"
            | b"pt"
            | b"Par"
            | b"par"
            | b"Para"
            | b"para"
            | b"Tab"
            | b"tab"
            | b"Jan"
            | b"Feb"
            | b"Mar"
            | b"Apr"
            | b"Jun"
            | b"Jul"
            | b"Aug"
            | b"Sep"
            | b"Sept"
            | b"Oct"
            | b"Nov"
            | b"Dec"
    )
}

/// `U.S`, `e.g`, `i.e`, `Ph.D`, `a.m`: letters with interior periods, each part one or two
/// letters long. A period after such a word is taken as part of the abbreviation.
pub(crate) fn is_dotted_acronym(word: &[u8]) -> bool {
    if !word.contains(&b'.') {
        return false;
    }
    word.split(|&b| b == b'.')
        .all(|part| (1..=2).contains(&part.len()) && part.iter().all(u8::is_ascii_alphabetic))
}

/// A single upper-case ASCII letter, as in the initials `J. R. R. Tolkien`.
pub(crate) fn is_initial(word: &[u8]) -> bool {
    word.len() == 1 && word[0].is_ascii_uppercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acronyms() {
        assert!(is_dotted_acronym(b"U.S"));
        assert!(is_dotted_acronym(b"e.g"));
        assert!(is_dotted_acronym(b"Ph.D"));
        assert!(!is_dotted_acronym(b"US"));
        assert!(!is_dotted_acronym(b"v2.4"));
        assert!(!is_dotted_acronym(b"example.com"));
    }
}
