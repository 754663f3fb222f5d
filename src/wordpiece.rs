//! A fast path for BERT WordPiece tokenizers on ASCII text.
//!
//! The HF `tokenizers` pipeline builds a full `Encoding` (token strings, offsets, masks)
//! for every call, which made token counting the bottleneck of chunking jobs (3.5 MB/s on
//! two cores). For the common case, a tokenizer made of `BertNormalizer` (lower-casing),
//! `BertPreTokenizer` and `WordPiece` (all-MiniLM's, BGE's) on ASCII text without control
//! characters (typographic quotes and dashes allowed), the pipeline reduces to: lower-case,
//! split on whitespace, isolate each punctuation character, and greedy longest-match
//! WordPiece. That is what this file does, with no allocation per token. Any other input
//! takes the HF path, so results are always identical to HF's; `tests/wordpiece.rs` checks
//! that on prose and on random strings.

use rustc_hash::FxHashMap;
use serde_json::Value;
use tokenizers::Tokenizer;

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
}

impl FastWordPiece {
    /// Build the fast path if `t` is a BERT WordPiece tokenizer it reproduces exactly.
    #[must_use]
    pub fn from_tokenizer(t: &Tokenizer) -> Option<Self> {
        let json = serde_json::to_value(t).ok()?;
        let norm = json.get("normalizer")?;
        if norm.get("type")?.as_str()? != "BertNormalizer" || norm.get("clean_text")? != &Value::Bool(true) {
            return None;
        }
        let lowercase = norm.get("lowercase")?.as_bool()?;
        if json.get("pre_tokenizer")?.get("type")?.as_str()? != "BertPreTokenizer" {
            return None;
        }
        let model = json.get("model")?;
        if model.get("type")?.as_str()? != "WordPiece" {
            return None;
        }
        let prefix = model.get("continuing_subword_prefix")?.as_str()?.to_string();
        let max_chars = usize::try_from(model.get("max_input_chars_per_word")?.as_u64()?).ok()?;
        let unk = t.token_to_id(model.get("unk_token")?.as_str()?)?;
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
        Some(Self { head, tail, unk, max_chars, longest, lowercase })
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
    hf: Tokenizer,
    fast: Option<FastWordPiece>,
}

impl TextTokenizer {
    /// Wrap an HF tokenizer; truncation and padding are switched off.
    #[must_use]
    pub fn new(mut hf: Tokenizer) -> Self {
        let _ = hf.with_truncation(None);
        hf.with_padding(None);
        let fast = FastWordPiece::from_tokenizer(&hf);
        Self { hf, fast }
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
