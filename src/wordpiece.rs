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
//!
//! # Over-long words, for sizing
//!
//! `ids`, `count` and `token_starts` are exactly the tokenizer's. The `sizing_*` methods,
//! what [`crate::sizer::HfSizer`] counts caps with, differ in one place: an unknown token
//! that stands for more than [`TextTokenizer::long_token_chars`] characters of the text (BERT
//! WordPiece turns any word over `max_input_chars_per_word`, 100, into one `[UNK]`, so a
//! 10 MB line with no spaces is "1 token") counts as one token per started piece of that
//! many characters, each piece a token start. Why this rule: the tokenizer itself never lets
//! one token stand for more than that many characters of a word it accepts, so the rule
//! bounds the text behind every counted token by the tokenizer's own limit (a chunk of `cap`
//! tokens holds at most `cap × 100` characters of such a word) while every word the
//! tokenizer accepts is counted exactly as HF counts it; and it never counts fewer tokens
//! than the model sees (one `[UNK]` per word). Counting the pieces' own WordPieces instead
//! would not change what the model reads (any part over 100 characters is still one
//! `[UNK]` to it) and would cost a full WordPiece pass over what is usually a blob (base64,
//! a hash list, minified code). The model's ids are untouched: `sizing_ids` gives `None`
//! for a text with such a token, so a caller tokenizes it for the model itself.

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

/// An unknown token that stands for more than [`TextTokenizer::long_token_chars`]
/// characters: its index among the ids and its byte range in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongToken {
    pub index: usize,
    pub start: usize,
    pub end: usize,
}
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
    fn encode_latin(
        &self,
        text: &str,
        ids: &mut Vec<u32>,
        mut starts: Option<&mut Vec<usize>>,
        mut long: Option<&mut Vec<LongToken>>,
    ) -> bool {
        let mut word: Vec<u8> = Vec::with_capacity(64);
        let mut orig: Vec<usize> = Vec::with_capacity(64);
        let mut chars = 0usize;
        let flush = |word: &mut Vec<u8>,
                     orig: &mut Vec<usize>,
                     chars: &mut usize,
                     ids: &mut Vec<u32>,
                     st: Option<&mut Vec<usize>>,
                     long: Option<&mut Vec<LongToken>>| {
            if word.is_empty() {
                return;
            }
            let mark = ids.len();
            if *chars > self.max_chars {
                ids.push(self.unk);
                if let Some(st) = st {
                    st.push(orig[0]);
                }
            } else {
                self.word_mapped(word, orig, ids, st);
            }
            // The word's one `[UNK]` (over-long, or no piece matched) spans its text in the
            // original, which the sizing rule bounds (module doc).
            if let Some(long) = long {
                if ids.len() == mark + 1 && ids[mark] == self.unk {
                    let (s, last) = (orig[0], orig[orig.len() - 1]);
                    let end = last + text[last..].chars().next().map_or(1, char::len_utf8);
                    if end - s > self.max_chars && text[s..end].chars().count() > self.max_chars {
                        long.push(LongToken { index: mark, start: s, end });
                    }
                }
            }
            word.clear();
            orig.clear();
            *chars = 0;
        };
        for (i, c) in text.char_indices() {
            if c.is_ascii() {
                let b = c as u8;
                if b.is_ascii_whitespace() {
                    flush(&mut word, &mut orig, &mut chars, ids, starts.as_deref_mut(), long.as_deref_mut());
                } else if b.is_ascii_alphanumeric() {
                    word.push(if self.lowercase { b.to_ascii_lowercase() } else { b });
                    orig.push(i);
                    chars += 1;
                } else {
                    flush(&mut word, &mut orig, &mut chars, ids, starts.as_deref_mut(), long.as_deref_mut());
                    self.word(&[b], i, ids, starts.as_deref_mut());
                }
                continue;
            }
            match self.class(c) {
                Class::Space => {
                    flush(&mut word, &mut orig, &mut chars, ids, starts.as_deref_mut(), long.as_deref_mut());
                }
                Class::Drop => {}
                Class::Letters(s) => {
                    word.extend_from_slice(s.as_bytes());
                    orig.extend(std::iter::repeat_n(i, s.len()));
                    chars += s.chars().count();
                }
                Class::Punct(s) => {
                    flush(&mut word, &mut orig, &mut chars, ids, starts.as_deref_mut(), long.as_deref_mut());
                    self.word(s.as_bytes(), i, ids, starts.as_deref_mut());
                }
                Class::Other => {
                    if typographic_punct(c) {
                        flush(
                            &mut word,
                            &mut orig,
                            &mut chars,
                            ids,
                            starts.as_deref_mut(),
                            long.as_deref_mut(),
                        );
                        let mut buf = [0u8; 4];
                        self.word(c.encode_utf8(&mut buf).as_bytes(), i, ids, starts.as_deref_mut());
                    } else {
                        return false;
                    }
                }
            }
        }
        flush(&mut word, &mut orig, &mut chars, ids, starts, long);
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
    /// `starts` is given, and with `long` the `[UNK]`s that stand for more than
    /// `max_input_chars_per_word` characters of `text` (see the module doc). Returns `false`,
    /// having pushed nothing, when `text` needs the HF path (non-ASCII other than typographic
    /// punctuation, control characters, or a `[` that might open an added token).
    pub fn encode(
        &self,
        text: &str,
        ids: &mut Vec<u32>,
        mut starts: Option<&mut Vec<usize>>,
        mut long: Option<&mut Vec<LongToken>>,
    ) -> bool {
        let b = text.as_bytes();
        if b.iter().any(|&c| (c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r')) || c == 0x7F || c == b'[') {
            return false;
        }
        let ascii = b.is_ascii();
        if !ascii && !text.chars().all(|c| c.is_ascii() || typographic_punct(c) || c == '\u{a0}') {
            // Accented Latin letters and the like: normalised through the table, or HF.
            ids.reserve(0);
            let (mark, mark_s) = (ids.len(), starts.as_ref().map_or(0, |s| s.len()));
            let mark_l = long.as_ref().map_or(0, |l| l.len());
            if self.encode_latin(text, ids, starts.as_deref_mut(), long.as_deref_mut()) {
                return true;
            }
            ids.truncate(mark);
            if let Some(st) = starts {
                st.truncate(mark_s);
            }
            if let Some(l) = long {
                l.truncate(mark_l);
            }
            return false;
        }
        let mut word = [0u8; 128];
        let mut heap = Vec::new();
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
            if w.len() > self.max_chars {
                if let Some(l) = long.as_deref_mut() {
                    l.push(LongToken { index: ids.len(), start: s, end: i });
                }
                ids.push(self.unk);
                if let Some(st) = starts.as_deref_mut() {
                    st.push(s);
                }
                continue;
            }
            if self.lowercase {
                // A word longer than the stack buffer (a tokenizer whose word limit is over
                // 128 characters) is lower-cased on the heap.
                let buf: &mut [u8] = if w.len() <= word.len() {
                    &mut word[..w.len()]
                } else {
                    heap.resize(w.len(), 0);
                    &mut heap[..]
                };
                for (d, &x) in buf.iter_mut().zip(w) {
                    *d = x.to_ascii_lowercase();
                }
                self.word(buf, s, ids, starts.as_deref_mut());
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
    /// The model's unknown token, where it has one: the only token that can stand for an
    /// unbounded run of text (a vocabulary token stands for its own few characters).
    unk: Option<u32>,
    /// [`Self::long_token_chars`].
    long_chars: usize,
}

/// Characters an unknown token may stand for before sizing splits it, for models without a
/// word limit of their own (BPE or Unigram with fused unknowns, WordLevel): BERT's 100.
const DEFAULT_LONG_CHARS: usize = 100;

impl TextTokenizer {
    /// Wrap an HF tokenizer; truncation and padding are switched off.
    #[must_use]
    pub fn new(mut hf: Tokenizer) -> Self {
        let _ = hf.with_truncation(None);
        hf.with_padding(None);
        let fast = FastWordPiece::from_tokenizer(&hf).map(Arc::new);
        let (unk, long_chars) = unknown_token(&hf);
        Self { hf: Arc::new(hf), fast, unk, long_chars }
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
        self.fast.as_ref().is_some_and(|f| f.encode(text, &mut Vec::new(), None, None))
    }

    /// Content token ids (no special tokens).
    #[must_use]
    pub fn ids(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        if let Some(f) = &self.fast {
            if f.encode(text, &mut ids, None, None) {
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
            if f.encode(text, &mut ids, None, None) {
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
            if f.encode(text, &mut ids, Some(&mut starts), None) {
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
            if f.encode(text, &mut ids, None, None) {
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
            if f.encode(text, &mut ids, Some(&mut starts), None) {
                return starts;
            }
        }
        match self.hf.encode(text, false) {
            Ok(enc) => monotone_starts(text, enc.get_offsets()),
            Err(_) => text.char_indices().map(|(i, _)| i).collect(),
        }
    }

    /// How many characters of text one unknown token may stand for in the `sizing_*`
    /// methods: WordPiece's `max_input_chars_per_word` (100 for BERT's), else 100. See the
    /// module doc.
    #[must_use]
    pub fn long_token_chars(&self) -> usize {
        self.long_chars
    }

    /// The count a token cap is checked against: [`Self::count`], except that an unknown
    /// token standing for more than [`Self::long_token_chars`] characters counts one per
    /// started piece of that many characters (module doc).
    #[must_use]
    pub fn sizing_count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        if let Some(f) = &self.fast {
            let mut ids = Vec::with_capacity(text.len() / 3);
            let mut long = Vec::new();
            if f.encode(text, &mut ids, None, Some(&mut long)) {
                return ids.len() + long.iter().map(|l| self.piece_count(text, l) - 1).sum::<usize>();
            }
        }
        let Some(unk) = self.unk else { return self.count(text) };
        match self.hf.encode_fast(text, false) {
            // As in `count`: a broken tokenizer still enforces a cap, by characters.
            Err(_) => text.chars().count(),
            // Offsets (a second, slower encoding) only where a long unknown token can be.
            Ok(e) if text.len() <= self.long_chars || !e.get_ids().contains(&unk) => e.len(),
            Ok(_) => match self.hf_long_tokens(text) {
                Some((n, long)) => n + long.iter().map(|l| self.piece_count(text, l) - 1).sum::<usize>(),
                None => text.chars().count(),
            },
        }
    }

    /// Token starts for [`Self::sizing_count`]: [`Self::token_starts`], with an over-long
    /// unknown token's start replaced by the starts of its pieces.
    /// `sizing_token_starts(t).len() == sizing_count(t)`.
    #[must_use]
    pub fn sizing_token_starts(&self, text: &str) -> Vec<usize> {
        if text.is_empty() {
            return Vec::new();
        }
        let mut long = Vec::new();
        let starts = 'enc: {
            if let Some(f) = &self.fast {
                let (mut ids, mut starts) = (Vec::new(), Vec::new());
                if f.encode(text, &mut ids, Some(&mut starts), Some(&mut long)) {
                    break 'enc starts;
                }
            }
            if self.unk.is_none() {
                return self.token_starts(text);
            }
            match self.hf.encode(text, false) {
                Ok(enc) => {
                    long = self.long_in(text, enc.get_ids(), enc.get_offsets());
                    monotone_starts(text, enc.get_offsets())
                }
                Err(_) => return text.char_indices().map(|(i, _)| i).collect(),
            }
        };
        if long.is_empty() {
            return starts;
        }
        let mut out = Vec::with_capacity(starts.len() + long.len());
        let mut next = long.iter().peekable();
        for (i, s) in starts.into_iter().enumerate() {
            match next.peek() {
                Some(l) if l.index == i => {
                    let last = out.last().copied().unwrap_or(0);
                    out.extend(self.pieces(text, l).map(|p| p.max(last)));
                    next.next();
                }
                _ => out.push(s),
            }
        }
        out
    }

    /// The token ids [`Self::sizing_count`] counts, where they are the tokenizer's own:
    /// [`Self::try_ids`] of a text without an over-long unknown token; `None` for a text with
    /// one (its ids are fewer than its sizing count) or where the tokenizer fails.
    #[must_use]
    pub fn sizing_ids(&self, text: &str) -> Option<Vec<u32>> {
        let mut ids = Vec::with_capacity(text.len() / 3);
        if let Some(f) = &self.fast {
            let mut long = Vec::new();
            if f.encode(text, &mut ids, None, Some(&mut long)) {
                return long.is_empty().then_some(ids);
            }
        }
        let ids = self.hf.encode_fast(text, false).ok()?.get_ids().to_vec();
        match self.unk {
            Some(unk) if text.len() > self.long_chars && ids.contains(&unk) => {
                self.hf_long_tokens(text)?.1.is_empty().then_some(ids)
            }
            _ => Some(ids),
        }
    }

    /// The HF pipeline's token count of `text` and its over-long unknown tokens.
    fn hf_long_tokens(&self, text: &str) -> Option<(usize, Vec<LongToken>)> {
        let enc = self.hf.encode(text, false).ok()?;
        Some((enc.len(), self.long_in(text, enc.get_ids(), enc.get_offsets())))
    }

    /// Unknown tokens among `ids` whose text (by `offsets`, bytes into `text`) is over
    /// [`Self::long_token_chars`] characters.
    fn long_in(&self, text: &str, ids: &[u32], offsets: &[(usize, usize)]) -> Vec<LongToken> {
        let Some(unk) = self.unk else { return Vec::new() };
        let mut out = Vec::new();
        for (index, (&id, &(s, e))) in ids.iter().zip(offsets).enumerate() {
            if id != unk || e.saturating_sub(s) <= self.long_chars {
                continue;
            }
            let (s, e) = (floor_char(text, s), floor_char(text, e));
            if s < e && text[s..e].chars().count() > self.long_chars {
                out.push(LongToken { index, start: s, end: e });
            }
        }
        out
    }

    /// Pieces an over-long token counts as: one per started `long_chars` characters.
    fn piece_count(&self, text: &str, l: &LongToken) -> usize {
        text[l.start..l.end].chars().count().div_ceil(self.long_chars)
    }

    /// Byte offsets where the pieces of an over-long token start.
    fn pieces<'a>(&self, text: &'a str, l: &LongToken) -> impl Iterator<Item = usize> + 'a {
        let start = l.start;
        text[l.start..l.end].char_indices().step_by(self.long_chars).map(move |(o, _)| start + o)
    }
}

/// Token start offsets from HF's (bytes into `text` for the Rust API), kept monotone and on
/// char boundaries (several tokens may share a start, e.g. byte-level BPE of one emoji); the
/// cutter only needs places where a cut is allowed.
fn monotone_starts(text: &str, offsets: &[(usize, usize)]) -> Vec<usize> {
    let mut last = 0;
    offsets
        .iter()
        .map(|&(s, _)| {
            let x = floor_char(text, s.max(last));
            last = x.max(last);
            last
        })
        .collect()
}

fn floor_char(text: &str, i: usize) -> usize {
    let mut x = i.min(text.len());
    while !text.is_char_boundary(x) {
        x -= 1;
    }
    x
}

/// The model's unknown token id and how many characters it may stand for in sizing (the
/// module doc).
fn unknown_token(t: &Tokenizer) -> (Option<u32>, usize) {
    use tokenizers::ModelWrapper;
    match t.get_model() {
        ModelWrapper::WordPiece(m) => (t.token_to_id(&m.unk_token), m.max_input_chars_per_word.max(1)),
        ModelWrapper::BPE(m) => (m.unk_token.as_ref().and_then(|u| t.token_to_id(u)), DEFAULT_LONG_CHARS),
        ModelWrapper::WordLevel(m) => (t.token_to_id(&m.unk_token), DEFAULT_LONG_CHARS),
        ModelWrapper::Unigram(m) => (unigram_unk_id(m), DEFAULT_LONG_CHARS),
    }
}

/// The Unigram model's unknown token id, which the crate keeps private. Its serialisation
/// writes `unk_id` before the vocabulary, so it is serialised into a writer that refuses
/// more after the first bytes, rather than copying a 250k-piece vocabulary.
fn unigram_unk_id(m: &tokenizers::models::unigram::Unigram) -> Option<u32> {
    struct Head(Vec<u8>);
    impl std::io::Write for Head {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0.len() > 256 {
                return Err(std::io::Error::other("enough"));
            }
            self.0.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut head = Head(Vec::new());
    let _ = serde_json::to_writer(&mut head, m);
    let head = String::from_utf8_lossy(&head.0);
    let rest = &head[head.find("\"unk_id\":")? + "\"unk_id\":".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer(model: &str) -> TextTokenizer {
        let json = format!(
            r#"{{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,
                "pre_tokenizer":{{"type":"Whitespace"}},"post_processor":null,"decoder":null,"model":{model}}}"#
        );
        TextTokenizer::new(json.parse().unwrap())
    }

    #[test]
    fn other_models_unknown_tokens_are_split_at_100_characters() {
        // WordLevel: any word not in the vocabulary is one unknown token.
        let wl = tokenizer(r#"{"type":"WordLevel","vocab":{"[UNK]":0,"a":1},"unk_token":"[UNK]"}"#);
        // Unigram fuses a run of unknown characters into one unknown token; its id is private
        // to the crate and read from its serialisation.
        let ug = tokenizer(
            r#"{"type":"Unigram","unk_id":2,"vocab":[["a",-1.0],["b",-2.0],["<unk>",0.0]],"byte_fallback":false}"#,
        );
        assert_eq!(ug.unk, Some(2));
        assert_eq!(wl.unk, Some(0));
        let word = "z".repeat(250);
        for t in [&wl, &ug] {
            assert!(!t.has_fast_path());
            assert_eq!(t.long_token_chars(), DEFAULT_LONG_CHARS);
            assert_eq!(t.count(&word), 1);
            assert_eq!(t.sizing_count(&word), 3);
            assert_eq!(t.sizing_token_starts(&word), vec![0, 100, 200]);
            assert_eq!(t.sizing_ids(&word), None);
            let text = format!("a {word} a");
            assert_eq!(t.sizing_count(&text), 5);
            assert_eq!(t.sizing_token_starts(&text), vec![0, 2, 102, 202, 253]);
            assert_eq!(t.sizing_ids("a a").map(|i| i.len()), Some(2));
        }
    }
}
