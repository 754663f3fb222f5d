//! The SentencePiece tokenizer a GGUF file carries (`tokenizer.ggml.model = "llama"`:
//! pieces with scores, byte fallback), for in-process chat models.
//!
//! Written here because a GGUF ships no tokenizer.json for the `tokenizers` crate; this is
//! llama.cpp's algorithm (`llm_tokenizer_spm`): spaces become `▁`, user-defined pieces
//! (newline and tab runs, markup) are matched first, longest first, then adjacent symbols are
//! merged greedily, highest-scoring merge first, and a symbol left outside the vocabulary is
//! spelled in `<0xXX>` byte pieces.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use candle_core::quantized::gguf_file;

use crate::{Error, Result};

const USER_DEFINED: i32 = 4;
const BYTE: i32 = 6;

/// A SentencePiece vocabulary read from GGUF metadata.
pub struct SpmTokenizer {
    pieces: Vec<String>,
    scores: Vec<f32>,
    ids: HashMap<String, u32>,
    /// User-defined pieces, longest first.
    user: Vec<(String, u32)>,
    bytes: [u32; 256],
    unknown: u32,
}

#[derive(PartialEq)]
struct Merge {
    score: f32,
    left: usize,
    len: usize,
}

impl Eq for Merge {}

impl Ord for Merge {
    fn cmp(&self, o: &Self) -> Ordering {
        // Highest score first; on ties the leftmost.
        self.score.total_cmp(&o.score).then_with(|| o.left.cmp(&self.left))
    }
}

impl PartialOrd for Merge {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl SpmTokenizer {
    /// Read the vocabulary from a GGUF file's metadata.
    ///
    /// # Errors
    /// When the metadata lacks the pieces or is not a SentencePiece (`llama`) vocabulary.
    pub fn from_gguf(ct: &gguf_file::Content) -> Result<Self> {
        let md = |k: &str| {
            ct.metadata.get(k).ok_or_else(|| Error::model("gguf", format!("no {k} in the metadata")))
        };
        let kind = md("tokenizer.ggml.model")?.to_string().map_err(|e| Error::model("gguf", e))?;
        if kind != "llama" {
            return Err(Error::model(
                "gguf",
                format!("tokenizer {kind:?} is not supported (only SentencePiece, \"llama\")"),
            ));
        }
        let array = |k: &str| md(k)?.to_vec().map_err(|e| Error::model("gguf", e)).cloned();
        let pieces: Vec<String> = array("tokenizer.ggml.tokens")?
            .iter()
            .map(|v| v.to_string().cloned().map_err(|e| Error::model("gguf", e)))
            .collect::<Result<_>>()?;
        let scores: Vec<f32> = match array("tokenizer.ggml.scores") {
            Ok(v) => v.iter().map(|v| v.to_f32().unwrap_or(0.0)).collect(),
            Err(_) => vec![0.0; pieces.len()],
        };
        let types: Vec<i32> = match array("tokenizer.ggml.token_type") {
            Ok(v) => v.iter().map(|v| v.to_i32().unwrap_or(1)).collect(),
            Err(_) => vec![1; pieces.len()],
        };
        let unknown = md("tokenizer.ggml.unknown_token_id")
            .and_then(|v| v.to_u32().map_err(|e| Error::model("gguf", e)))
            .unwrap_or(0);
        Ok(Self::new(pieces, scores, &types, unknown))
    }

    /// A tokenizer from pieces, scores and piece types (4: user-defined, 6: byte).
    #[must_use]
    pub fn new(pieces: Vec<String>, scores: Vec<f32>, types: &[i32], unknown: u32) -> Self {
        let ids: HashMap<String, u32> =
            pieces.iter().enumerate().map(|(i, p)| (p.clone(), i as u32)).collect();
        let mut user: Vec<(String, u32)> = pieces
            .iter()
            .zip(types)
            .enumerate()
            .filter(|(_, (p, &t))| t == USER_DEFINED && !p.is_empty())
            .map(|(i, (p, _))| (p.clone(), i as u32))
            .collect();
        user.sort_by_key(|u| std::cmp::Reverse(u.0.len()));
        let mut bytes = [unknown; 256];
        for (i, (p, &t)) in pieces.iter().zip(types).enumerate() {
            if t == BYTE {
                if let Some(b) = p
                    .strip_prefix("<0x")
                    .and_then(|h| h.strip_suffix('>'))
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    bytes[b as usize] = i as u32;
                }
            }
        }
        Self { pieces, scores, ids, user, bytes, unknown }
    }

    /// The id of a piece spelled exactly `piece` (special tokens such as `<start_of_turn>`).
    #[must_use]
    pub fn piece_id(&self, piece: &str) -> Option<u32> {
        self.ids.get(piece).copied()
    }

    /// Token ids of `text` (no BOS).
    #[must_use]
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut rest = text;
        let mut plain_start = 0;
        let mut pos = 0;
        while pos < rest.len() {
            let hit = self.user.iter().find(|(p, _)| rest[pos..].starts_with(p.as_str()));
            if let Some((p, id)) = hit {
                self.encode_plain(&rest[plain_start..pos], &mut out);
                out.push(*id);
                rest = &rest[pos + p.len()..];
                pos = 0;
                plain_start = 0;
            } else {
                pos += rest[pos..].chars().next().map_or(1, char::len_utf8);
            }
        }
        self.encode_plain(&rest[plain_start..], &mut out);
        out
    }

    fn encode_plain(&self, text: &str, out: &mut Vec<u32>) {
        if text.is_empty() {
            return;
        }
        let text = text.replace(' ', "▁");
        // Symbols as (start, len) over `text`, linked left/right; len 0 once merged away.
        let mut sym: Vec<(usize, usize)> = text.char_indices().map(|(i, c)| (i, c.len_utf8())).collect();
        let n = sym.len();
        let mut prev: Vec<isize> = (0..n as isize).map(|i| i - 1).collect();
        let mut next: Vec<usize> = (1..=n).collect();
        let mut heap = BinaryHeap::new();
        let push = |heap: &mut BinaryHeap<Merge>, sym: &[(usize, usize)], l: usize, r: usize| {
            let (s, len) = (sym[l].0, sym[l].1 + sym[r].1);
            if let Some(&id) = self.ids.get(&text[s..s + len]) {
                heap.push(Merge { score: self.scores[id as usize], left: l, len });
            }
        };
        for i in 1..n {
            push(&mut heap, &sym, i - 1, i);
        }
        while let Some(m) = heap.pop() {
            let l = m.left;
            let r = next[l];
            // Stale: one side changed since this merge was proposed.
            if sym[l].1 == 0 || r >= n || sym[l].1 + sym[r].1 != m.len {
                continue;
            }
            sym[l].1 += sym[r].1;
            sym[r].1 = 0;
            next[l] = next[r];
            if next[l] < n {
                prev[next[l]] = l as isize;
            }
            if prev[l] >= 0 {
                push(&mut heap, &sym, prev[l] as usize, l);
            }
            if next[l] < n {
                push(&mut heap, &sym, l, next[l]);
            }
        }
        let mut i = 0;
        while i < n {
            let (s, len) = sym[i];
            let piece = &text[s..s + len];
            match self.ids.get(piece) {
                Some(&id) => out.push(id),
                None => out.extend(piece.bytes().map(|b| self.bytes[b as usize])),
            }
            i = next[i];
        }
    }

    /// The text of `ids` (byte pieces reassembled, `▁` back to spaces, control pieces
    /// dropped).
    #[must_use]
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            let Some(p) = self.pieces.get(id as usize) else { continue };
            if let Some(b) = self.bytes.iter().position(|&x| x == id && id != self.unknown) {
                bytes.push(b as u8);
            } else if !(p.starts_with('<') && p.ends_with('>') && p.len() > 2) {
                bytes.extend(p.replace('▁', " ").as_bytes());
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> SpmTokenizer {
        let mut pieces: Vec<String> = ["<unk>", "\n", "\n\n", "▁", "a", "b", "c", "ab", "▁ab", "abc"]
            .iter()
            .map(|s| (*s).to_string())
            .collect();
        let mut scores = vec![0.0, 0.0, 0.0, -5.0, -1.0, -1.0, -1.0, -2.0, -3.0, -2.5];
        let mut types = vec![2, 4, 4, 1, 1, 1, 1, 1, 1, 1];
        for b in 0..=255u8 {
            pieces.push(format!("<0x{b:02X}>"));
            scores.push(0.0);
            types.push(6);
        }
        SpmTokenizer::new(pieces, scores, &types, 0)
    }

    #[test]
    fn merges_by_score_matches_user_pieces_first_and_falls_back_to_bytes() {
        let t = toy();
        // "ab" (−2) merges before "▁a" is possible; then "▁ab" (−3) beats nothing else.
        assert_eq!(t.encode(" ab"), vec![8]);
        // "abc": "ab" first (−2), then "abc" (−2.5).
        assert_eq!(t.encode("abc"), vec![9]);
        // Newline runs are user pieces, longest first; "é" is not in the vocabulary.
        let ids = t.encode("a\n\n\nb é");
        assert_eq!(&ids[..4], &[4, 2, 1, 5]);
        assert_eq!(ids[4], 3);
        assert_eq!(t.decode(&ids), "a\n\n\nb é");
    }
}
