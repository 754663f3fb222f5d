//! A fast path for BERT WordPiece tokenizers on ASCII text.
//!
//! The HF `tokenizers` pipeline builds a full `Encoding` (token strings, offsets, masks)
//! for every call, which made token counting the bottleneck of chunking jobs (3.5 MB/s on
//! two cores). For the common case, a tokenizer made of `BertNormalizer` (lower-casing),
//! `BertPreTokenizer` and `WordPiece` (all-MiniLM's, BGE's) on ASCII text without control
//! characters (typographic quotes and dashes allowed), the pipeline reduces to: lower-case,
//! split on whitespace, isolate each punctuation character, and greedy longest-match
//! WordPiece. That is what this file does, with no allocation per token. Text in Latin
//! scripts with accents (Latin-1 Supplement and Latin Extended-A/B: German, French,
//! Spanish…) takes the same path through a table that says, for each such character, what
//! the tokenizer's own normaliser and pre-tokenizer make of it (built by running them on the
//! character alone: lower-casing and accent stripping act per character). Any other input
//! takes the HF path, so results are always identical to HF's; `tests/it/wordpiece.rs` checks
//! that on prose and on random strings.

use std::sync::Arc;

use rustc_hash::FxHashMap;
use tokenizers::{NormalizedString, Normalizer, PreTokenizedString, PreTokenizer, Tokenizer};

/// What the tokenizer makes of one non-ASCII character of the table.
#[derive(Debug, Clone)]
enum Class {
    /// Whitespace: ends a word.
    Space,
    /// Removed by the normaliser (a control or format character).
    Drop,
    /// Letters (normalised) that continue the current word.
    Letters(Box<str>),
    /// A word of its own (normalised).
    Punct(Box<str>),
    /// Anything else: the HF path.
    Other,
}

/// The table covers U+0080..=U+024F (Latin-1 Supplement, Latin Extended-A and -B).
const TABLE_END: u32 = 0x250;
/// The WordPiece vocabulary split for greedy matching.
#[derive(Debug, Clone)]
pub struct FastWordPiece {
    /// Word-initial pieces.
    head: FxHashMap<Box<[u8]>, u32>,
    /// Continuation pieces, without their `##` prefix.
    tail: FxHashMap<Box<[u8]>, u32>,
    unk: u32,
    max_chars: usize,
    /// Longest piece in bytes: no match is tried past it.
    longest: usize,
    lowercase: bool,
    /// [`Class`] of U+0080 + i.
    latin: Vec<Class>,
}

impl FastWordPiece {
    /// Build the fast path if `t` is a BERT WordPiece tokenizer it reproduces exactly.
    #[must_use]
    pub fn from_tokenizer(t: &Tokenizer) -> Option<Self> {
        use tokenizers::{ModelWrapper, NormalizerWrapper, PreTokenizerWrapper};
        // Matched on the types rather than read from the serialised tokenizer: serialising
        // a 30k vocabulary into a JSON value took most of a job's start-up.
        let Some(NormalizerWrapper::BertNormalizer(norm)) = t.get_normalizer() else { return None };
        if !norm.clean_text {
            return None;
        }
        let lowercase = norm.lowercase;
        let Some(PreTokenizerWrapper::BertPreTokenizer(_)) = t.get_pre_tokenizer() else { return None };
        let ModelWrapper::WordPiece(model) = t.get_model() else { return None };
        let prefix = model.continuing_subword_prefix.clone();
        let max_chars = model.max_input_chars_per_word;
        let unk = t.token_to_id(&model.unk_token)?;
        // Added tokens (like "[CLS]") are matched in the raw text before the model. The fast
        // path sends any text with a `[` to HF, so bracketed added tokens are safe; refuse it
        // when the tokenizer has any other kind.
        if t.get_added_tokens_decoder().values().any(|a| !a.content.starts_with('[')) {
            return None;
        }
        let mut head = FxHashMap::default();
        let mut tail = FxHashMap::default();
        let mut longest = 0;
        for (tok, id) in t.get_vocab(false) {
            if let Some(rest) = tok.strip_prefix(&prefix) {
                longest = longest.max(rest.len());
                tail.insert(rest.as_bytes().into(), id);
            } else {
                longest = longest.max(tok.len());
                head.insert(tok.as_bytes().into(), id);
            }
        }
        let latin =
            (0x80..TABLE_END).map(|u| char::from_u32(u).map_or(Class::Other, |c| classify(t, c))).collect();
        Some(Self { head, tail, unk, max_chars, longest, lowercase, latin })
    }

    fn class(&self, c: char) -> &Class {
        static OTHER: Class = Class::Other;
        let u = c as u32;
        if (0x80..TABLE_END).contains(&u) {
            &self.latin[(u - 0x80) as usize]
        } else {
            &OTHER
        }
    }

    /// [`Self::encode`] for text with characters of the Latin table: words are normalised
    /// into a buffer that remembers each byte's offset in `text`.
    fn encode_latin(&self, text: &str, ids: &mut Vec<u32>, mut starts: Option<&mut Vec<usize>>) -> bool {
        let mut word: Vec<u8> = Vec::with_capacity(64);
        let mut orig: Vec<usize> = Vec::with_capacity(64);
        let mut chars = 0usize;
        let flush = |word: &mut Vec<u8>,
                     orig: &mut Vec<usize>,
                     chars: &mut usize,
                     ids: &mut Vec<u32>,
                     st: Option<&mut Vec<usize>>| {
            if word.is_empty() {
                return;
            }
            if *chars > self.max_chars {
                ids.push(self.unk);
                if let Some(st) = st {
                    st.push(orig[0]);
                }
            } else {
                self.word_mapped(word, orig, ids, st);
            }
            word.clear();
            orig.clear();
            *chars = 0;
        };
        for (i, c) in text.char_indices() {
            if c.is_ascii() {
                let b = c as u8;
                if b.is_ascii_whitespace() {
                    flush(&mut word, &mut orig, &mut chars, ids, starts.as_deref_mut());
                } else if b.is_ascii_alphanumeric() {
                    word.push(if self.lowercase { b.to_ascii_lowercase() } else { b });
                    orig.push(i);
                    chars += 1;
                } else {
                    flush(&mut word, &mut orig, &mut chars, ids, starts.as_deref_mut());
                    self.word(&[b], i, ids, starts.as_deref_mut());
                }
                continue;
            }
            match self.class(c) {
                Class::Space => flush(&mut word, &mut orig, &mut chars, ids, starts.as_deref_mut()),
                Class::Drop => {}
                Class::Letters(s) => {
                    word.extend_from_slice(s.as_bytes());
                    orig.extend(std::iter::repeat_n(i, s.len()));
                    chars += s.chars().count();
                }
                Class::Punct(s) => {
                    flush(&mut word, &mut orig, &mut chars, ids, starts.as_deref_mut());
                    self.word(s.as_bytes(), i, ids, starts.as_deref_mut());
                }
                Class::Other => {
                    if typographic_punct(c) {
                        flush(&mut word, &mut orig, &mut chars, ids, starts.as_deref_mut());
                        let mut buf = [0u8; 4];
                        self.word(c.encode_utf8(&mut buf).as_bytes(), i, ids, starts.as_deref_mut());
                    } else {
                        return false;
                    }
                }
            }
        }
        flush(&mut word, &mut orig, &mut chars, ids, starts);
        true
    }

    /// [`Self::word`] of a normalised word whose byte `k` came from `orig[k]` of the text.
    fn word_mapped(&self, w: &[u8], orig: &[usize], ids: &mut Vec<u32>, starts: Option<&mut Vec<usize>>) {
        match starts {
            None => self.word(w, 0, ids, None),
            Some(st) => {
                let mark = st.len();
                self.word(w, 0, ids, Some(st));
                for s in &mut st[mark..] {
                    *s = orig[*s];
                }
            }
        }
    }

    /// Token ids of `text` (no special tokens), with each token's start byte offset when
    /// `starts` is given. Returns `false`, having pushed nothing, when `text` needs the HF
    /// path (non-ASCII other than typographic punctuation, control characters, or a `[` that
    /// might open an added token).
    pub fn encode(&self, text: &str, ids: &mut Vec<u32>, mut starts: Option<&mut Vec<usize>>) -> bool {
        let b = text.as_bytes();
        if b.iter().any(|&c| (c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r')) || c == 0x7F || c == b'[') {
            return false;
        }
        let ascii = b.is_ascii();
        if !ascii && !text.chars().all(|c| c.is_ascii() || typographic_punct(c) || c == '\u{a0}') {
            // Accented Latin letters and the like: normalised through the table, or HF.
            ids.reserve(0);
            let (mark, mark_s) = (ids.len(), starts.as_ref().map_or(0, |s| s.len()));
            if self.encode_latin(text, ids, starts.as_deref_mut()) {
                return true;
            }
            ids.truncate(mark);
            if let Some(st) = starts {
                st.truncate(mark_s);
            }
            return false;
        }
        let mut word = [0u8; 128];
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            if c >= 0x80 {
                // Checked above: typographic punctuation (a word of its own) or a no-break space.
                let ch = text[i..].chars().next().unwrap_or(' ');
                let n = ch.len_utf8();
                if ch != '\u{a0}' {
                    self.word(&b[i..i + n], i, ids, starts.as_deref_mut());
                }
                i += n;
                continue;
            }
            if !c.is_ascii_alphanumeric() {
                // ASCII punctuation: a word of its own.
                self.word(&[c], i, ids, starts.as_deref_mut());
                i += 1;
                continue;
            }
            let s = i;
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let w = &b[s..i];
            if w.len() > self.max_chars || w.len() > word.len() {
                ids.push(self.unk);
                if let Some(st) = starts.as_deref_mut() {
                    st.push(s);
                }
                continue;
            }
            if self.lowercase {
                for (d, &x) in word.iter_mut().zip(w) {
                    *d = x.to_ascii_lowercase();
                }
                self.word(&word[..w.len()], s, ids, starts.as_deref_mut());
            } else {
                self.word(w, s, ids, starts.as_deref_mut());
            }
        }
        true
    }

    /// Greedy longest-match-first WordPiece of one (normalised) word starting at `at`.
    fn word(&self, w: &[u8], at: usize, ids: &mut Vec<u32>, mut starts: Option<&mut Vec<usize>>) {
        let mark = ids.len();
        let mark_s = starts.as_ref().map_or(0, |s| s.len());
        let mut start = 0;
        while start < w.len() {
            let map = if start == 0 { &self.head } else { &self.tail };
            let mut end = w.len().min(start + self.longest);
            let mut found = None;
            while end > start {
                if let Some(&id) = map.get(&w[start..end]) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => {
                    ids.push(id);
                    if let Some(st) = starts.as_deref_mut() {
                        st.push(at + start);
                    }
                    start = end;
                }
                None => {
                    // No piece matches: the whole word is one unknown token.
                    ids.truncate(mark);
                    ids.push(self.unk);
                    if let Some(st) = starts.as_deref_mut() {
                        st.truncate(mark_s);
                        st.push(at);
                    }
                    return;
                }
            }
        }
    }
}

/// What the tokenizer's normaliser and pre-tokenizer make of `c` alone: normalise it, then
/// pre-tokenise `a`, `c`, `b` and see whether it stays in the word, stands alone or vanishes.
fn classify(t: &Tokenizer, c: char) -> Class {
    let (Some(norm), Some(pre)) = (t.get_normalizer(), t.get_pre_tokenizer()) else { return Class::Other };
    let mut n = NormalizedString::from(c.to_string().as_str());
    if norm.normalize(&mut n).is_err() {
        return Class::Other;
    }
    let s = n.get().to_string();
    if s.is_empty() {
        return Class::Drop;
    }
    if s.chars().all(char::is_whitespace) {
        return Class::Space;
    }
    if s.chars().any(|x| x.is_whitespace() || x == '[') {
        return Class::Other;
    }
    let mut p = PreTokenizedString::from(format!("a{s}b").as_str());
    if pre.pre_tokenize(&mut p).is_err() {
        return Class::Other;
    }
    let words: Vec<String> = p
        .get_splits(tokenizers::OffsetReferential::Original, tokenizers::OffsetType::Byte)
        .into_iter()
        .map(|(w, _, _)| w.to_string())
        .collect();
    if words == [format!("a{s}b")] {
        Class::Letters(s.into())
    } else if words.len() == 3 && words[0] == "a" && words[1] == s && words[2] == "b" {
        Class::Punct(s.into())
    } else {
        Class::Other
    }
}

/// Non-ASCII characters the fast path handles: Unicode punctuation that BERT's normaliser
/// leaves alone (no case, no accent) and its pre-tokenizer isolates, as in typeset English.
fn typographic_punct(c: char) -> bool {
    matches!(
        c,
        '\u{2018}'
            | '\u{2019}'
            | '\u{201C}'
            | '\u{201D}'
            | '\u{2013}'
            | '\u{2014}'
            | '\u{2026}'
            | '\u{AB}'
            | '\u{BB}'
            | '\u{2022}'
            | '\u{B7}'
    )
}

/// A tokenizer with the fast path where it applies: the one type every stage uses to turn
/// text into ids, counts or token offsets.
#[derive(Debug, Clone)]
pub struct TextTokenizer {
    // Shared: a model and the sizer counting with its tokenizer hold the same one (a clone
    // of the HF tokenizer copies its vocabulary maps, about 3 ms at start-up).
    hf: Arc<Tokenizer>,
    fast: Option<Arc<FastWordPiece>>,
}

impl TextTokenizer {
    /// Wrap an HF tokenizer; truncation and padding are switched off.
    #[must_use]
    pub fn new(mut hf: Tokenizer) -> Self {
        let _ = hf.with_truncation(None);
        hf.with_padding(None);
        let fast = FastWordPiece::from_tokenizer(&hf).map(Arc::new);
        Self { hf: Arc::new(hf), fast }
    }

    #[must_use]
    pub fn hf(&self) -> &Tokenizer {
        &self.hf
    }

    /// Whether the ASCII fast path is available.
    #[must_use]
    pub fn has_fast_path(&self) -> bool {
        self.fast.is_some()
    }

    /// Whether the fast path handles `text` (else the HF pipeline does).
    #[must_use]
    pub fn fast_path_covers(&self, text: &str) -> bool {
        self.fast.as_ref().is_some_and(|f| f.encode(text, &mut Vec::new(), None))
    }

    /// Content token ids (no special tokens).
    #[must_use]
    pub fn ids(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        if let Some(f) = &self.fast {
            if f.encode(text, &mut ids, None) {
                return ids;
            }
        }
        self.hf.encode_fast(text, false).map(|e| e.get_ids().to_vec()).unwrap_or_default()
    }

    /// Content token ids, or `None` where the HF pipeline fails on `text` (where [`Self::count`]
    /// falls back to characters): `try_ids(t).map(|i| i.len()) == Some(count(t))` otherwise.
    #[must_use]
    pub fn try_ids(&self, text: &str) -> Option<Vec<u32>> {
        let mut ids = Vec::with_capacity(text.len() / 3);
        if let Some(f) = &self.fast {
            if f.encode(text, &mut ids, None) {
                return Some(ids);
            }
        }
        self.hf.encode_fast(text, false).ok().map(|e| e.get_ids().to_vec())
    }

    /// Content token ids with the byte offset where each token starts in `text` (the same ids
    /// as [`Self::ids`], one start per id, non-decreasing, at most `text.len()`). A token's start
    /// is its first byte that is not whitespace: SentencePiece's `▁word` and byte-level BPE's
    /// `Ġword` tokens cover the space before their word, which belongs to the text before it
    /// (a token of whitespace alone keeps its own start). Several tokens may share a start (a
    /// character split into byte pieces). Empty when the HF pipeline fails on `text`, as
    /// [`Self::ids`] is.
    #[must_use]
    pub fn ids_and_starts(&self, text: &str) -> (Vec<u32>, Vec<usize>) {
        if let Some(f) = &self.fast {
            let (mut ids, mut starts) =
                (Vec::with_capacity(text.len() / 3), Vec::with_capacity(text.len() / 3));
            if f.encode(text, &mut ids, Some(&mut starts)) {
                return (ids, starts);
            }
        }
        match self.hf.encode(text, false) {
            Ok(enc) => {
                let mut last = 0;
                let starts = enc
                    .get_offsets()
                    .iter()
                    .map(|&(s, e)| {
                        // Offsets are bytes into `text` (the Rust API).
                        let (s, e) = (s.min(text.len()), e.min(text.len()).max(s.min(text.len())));
                        let inner = text.get(s..e).map_or(0, |t| t.len() - t.trim_start().len());
                        let start = if s + inner < e { s + inner } else { s };
                        // Kept monotone, as [`Self::token_starts`] does, so tokens map to spans
                        // in order.
                        last = start.max(last);
                        last
                    })
                    .collect();
                (enc.get_ids().to_vec(), starts)
            }
            Err(_) => (Vec::new(), Vec::new()),
        }
    }

    /// Number of content tokens.
    #[must_use]
    pub fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        if let Some(f) = &self.fast {
            let mut ids = Vec::with_capacity(text.len() / 3);
            if f.encode(text, &mut ids, None) {
                return ids.len();
            }
        }
        // Encoding only fails on a broken tokenizer; fall back to a char count so a cap is
        // still enforced rather than silently ignored.
        self.hf.encode_fast(text, false).map_or_else(|_| text.chars().count(), |e| e.len())
    }

    /// Byte offsets where each token starts (ascending, on char boundaries).
    #[must_use]
    pub fn token_starts(&self, text: &str) -> Vec<usize> {
        if text.is_empty() {
            return Vec::new();
        }
        if let Some(f) = &self.fast {
            let (mut ids, mut starts) = (Vec::new(), Vec::new());
            if f.encode(text, &mut ids, Some(&mut starts)) {
                return starts;
            }
        }
        match self.hf.encode(text, false) {
            Ok(enc) => {
                let mut out: Vec<usize> = enc.get_offsets().iter().map(|&(s, _)| s).collect();
                // Offsets are bytes into `text` for the Rust API. Keep them monotone and on
                // char boundaries (several tokens may share a start, e.g. byte-level BPE of
                // one emoji); the cutter only needs places where a cut is allowed.
                let mut last = 0;
                for o in &mut out {
                    let mut x = (*o).min(text.len()).max(last);
                    while !text.is_char_boundary(x) {
                        x -= 1;
                    }
                    *o = x.max(last);
                    last = *o;
                }
                out
            }
            Err(_) => text.char_indices().map(|(i, _)| i).collect(),
        }
    }
}
