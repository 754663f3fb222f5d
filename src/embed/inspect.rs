//! What a model shows of a text besides its vector, for the server's text-embeddings-inference
//! routes: the tokens it reads, with their byte spans (`/tokenize`, which clients call to count
//! tokens for their own chunking), and every token's final state (`/embed_all`, which a
//! late-chunking client pools itself).

use super::{Embedder, FlatBatch};
use crate::{Error, Result};

/// One token of a text as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Token {
    pub id: u32,
    /// The text's bytes it stands for (`text[start..stop]`), or the special token's own
    /// string (`[CLS]`).
    pub text: String,
    /// One of the model's special tokens, added around the text (no span of its own).
    pub special: bool,
    /// Byte offsets into the text tokenized; `None` for a special token.
    pub start: Option<usize>,
    pub stop: Option<usize>,
}

/// The tokens of `text` as `model` reads it: the tokenizer's content tokens with their byte
/// spans, wrapped in the model's special tokens ([`Embedder::special_ids`]) where `special`.
/// Not cut at the window: a client counts what it would send.
///
/// # Errors
/// The tokenizer failed on the text.
pub fn tokens(model: &dyn Embedder, text: &str, special: bool) -> Result<Vec<Token>> {
    let hf = model.tokenizer().hf();
    let enc = hf.encode(text, false).map_err(|e| Error::Config(format!("cannot tokenize the text: {e}")))?;
    let named = |id: u32| Token {
        id,
        text: hf.id_to_token(id).unwrap_or_default(),
        special: true,
        start: None,
        stop: None,
    };
    let (pre, post) = if special { model.special_ids() } else { (&[][..], &[][..]) };
    let mut out: Vec<Token> = pre.iter().map(|&id| named(id)).collect();
    for (&id, &(start, stop)) in enc.get_ids().iter().zip(enc.get_offsets()) {
        // The tokenizer's offsets are byte offsets of `text` (tokenizers' `encode`); a token
        // inside a character (byte-level BPE) keeps the offsets it was given, with no text.
        let piece = text.get(start..stop).unwrap_or_default().to_string();
        out.push(Token { id, text: piece, special: false, start: Some(start), stop: Some(stop) });
    }
    out.extend(post.iter().map(|&id| named(id)));
    Ok(out)
}

/// The final hidden state of every token of each sequence (`contents`: content ids, cut to the
/// window by the caller), special tokens included, in passes of at most `batch_tokens` tokens:
/// one `tokens × width` row-major block per sequence (the encoder's width), f32, not
/// normalised.
///
/// # Errors
/// A model that cannot give token states (a one-line [`Error::Config`]), or a device failure.
pub fn token_states(
    model: &dyn Embedder,
    contents: &[Vec<u32>],
    batch_tokens: usize,
) -> Result<Vec<Vec<f32>>> {
    let (pre, post) = model.special_ids();
    let seqs: Vec<Vec<u32>> = contents.iter().map(|c| [pre, c.as_slice(), post].concat()).collect();
    let mut out = Vec::with_capacity(seqs.len());
    let mut at = 0;
    while at < seqs.len() {
        // As many sequences as fit the budget, at least one.
        let mut batch = FlatBatch::default();
        while at < seqs.len() && (batch.is_empty() || batch.ids.len() + seqs[at].len() <= batch_tokens) {
            batch.push(&seqs[at]);
            at += 1;
        }
        let states = model.token_states(&batch)?;
        // The encoder's width, which a Dense head may change after pooling.
        let (_, dim) = states.dims2()?;
        let states = states
            .to_dtype(candle_core::DType::F32)?
            .to_device(&candle_core::Device::Cpu)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        out.extend(batch.cu_seqlens.windows(2).map(|w| states[w[0] * dim..w[1] * dim].to_vec()));
    }
    Ok(out)
}
