//! Loading a `tokenizer.json` quickly.
//!
//! `Tokenizer::from_bytes` deserialises the `model` section through `ModelWrapper`, an
//! untagged enum: serde buffers the whole section (a 30k-token vocabulary) as generic content
//! and tries each model type against it in turn, which took about 70% of a short `seamcut
//! chunk` run (some 30 ms of start-up on this machine, `benches/RESULTS.md`). WordPiece
//! vocabularies (BERT, MiniLM, MPNet, BGE, E5: most embedding models) are read here straight
//! into `WordPiece`, whose own deserialiser is a plain map visitor, and the tokenizer is
//! assembled as `tokenizers` itself does after parsing (same builder, same order of added
//! tokens). Anything else, or anything this reader does not recognise, goes through
//! `Tokenizer::from_bytes`. A test checks that both give the same tokenizer (serialised back
//! to JSON) for every `tokenizer.json` at hand.

use serde::Deserialize;
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::{
    AddedToken, DecoderWrapper, ModelWrapper, NormalizerWrapper, PaddingParams, PostProcessorWrapper,
    PreTokenizerWrapper, Tokenizer, TokenizerBuilder, TruncationParams,
};

/// The sections of a `tokenizer.json` with a WordPiece model.
#[derive(Deserialize)]
struct WordPieceFile {
    version: String,
    #[serde(default)]
    truncation: Option<TruncationParams>,
    #[serde(default)]
    padding: Option<PaddingParams>,
    #[serde(default)]
    added_tokens: Vec<AddedTokenWithId>,
    #[serde(default)]
    normalizer: Option<NormalizerWrapper>,
    #[serde(default)]
    pre_tokenizer: Option<PreTokenizerWrapper>,
    #[serde(default)]
    post_processor: Option<PostProcessorWrapper>,
    #[serde(default)]
    decoder: Option<DecoderWrapper>,
    /// Fails (and the file takes the general path) unless the model is a WordPiece.
    model: WordPiece,
}

#[derive(Deserialize)]
struct AddedTokenWithId {
    #[allow(dead_code)] // `tokenizers` only warns when it differs from the id given
    id: u32,
    #[serde(flatten)]
    token: AddedToken,
}

/// A tokenizer from the bytes of a `tokenizer.json`: the fast path for WordPiece models, else
/// `Tokenizer::from_bytes`.
///
/// # Errors
/// The error `Tokenizer::from_bytes` gives for a file that is not a valid tokenizer.
pub fn from_bytes(bytes: &[u8]) -> tokenizers::Result<Tokenizer> {
    if let Some(t) = wordpiece(bytes) {
        return Ok(t);
    }
    Tokenizer::from_bytes(bytes)
}

/// [`from_bytes`] of a file.
///
/// # Errors
/// If the file cannot be read or is not a valid tokenizer.
pub fn from_file(path: &std::path::Path) -> tokenizers::Result<Tokenizer> {
    from_bytes(&std::fs::read(path)?)
}

/// `t.get_vocab_size(true)` (the model's tokens and the added ones, counted once each)
/// without building the merged vocabulary map, which `tokenizers` does to count it.
#[must_use]
pub fn vocab_size_with_added(t: &Tokenizer) -> usize {
    use tokenizers::Model;
    let model = t.get_model();
    let added = t.get_added_tokens_decoder();
    let extra: std::collections::HashSet<&str> =
        added.values().map(|a| a.content.as_str()).filter(|c| model.token_to_id(c).is_none()).collect();
    model.get_vocab_size() + extra.len()
}

fn wordpiece(bytes: &[u8]) -> Option<Tokenizer> {
    let f: WordPieceFile = serde_json::from_slice(bytes).ok()?;
    if f.version != "1.0" {
        return None;
    }
    let built = TokenizerBuilder::<
        ModelWrapper,
        NormalizerWrapper,
        PreTokenizerWrapper,
        PostProcessorWrapper,
        DecoderWrapper,
    >::new()
    .with_model(ModelWrapper::WordPiece(f.model))
    .with_normalizer(f.normalizer)
    .with_pre_tokenizer(f.pre_tokenizer)
    .with_post_processor(f.post_processor)
    .with_decoder(f.decoder)
    .with_truncation(f.truncation)
    .with_padding(f.padding)
    .build()
    .ok()?;
    let mut t = Tokenizer::from(built);
    let added: Vec<AddedToken> = f.added_tokens.into_iter().map(|a| a.token).collect();
    t.add_tokens(&added);
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(bytes: &[u8]) {
        let fast = wordpiece(bytes).expect("a WordPiece tokenizer.json takes the fast path");
        let slow = Tokenizer::from_bytes(bytes).unwrap();
        assert_eq!(vocab_size_with_added(&fast), slow.get_vocab_size(true));
        let (a, b): (serde_json::Value, serde_json::Value) = (
            serde_json::from_str(&fast.to_string(false).unwrap()).unwrap(),
            serde_json::from_str(&slow.to_string(false).unwrap()).unwrap(),
        );
        assert_eq!(a, b);
        for text in ["Hello, World! [CLS] naïve café 这是 \u{10FFFF} x##y", "", "  \t\n"] {
            assert_eq!(
                fast.encode(text, true).unwrap().get_ids(),
                slow.encode(text, true).unwrap().get_ids(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn the_fast_path_gives_the_tokenizer_from_bytes_gives() {
        same(include_bytes!("../models/default/tokenizer.json"));
        // The fetched models where present (MiniLM in CI, MPNet where fetched).
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
        for m in ["all-MiniLM-L6-v2", "all-mpnet-base-v2"] {
            if let Ok(bytes) = std::fs::read(root.join(m).join("tokenizer.json")) {
                same(&bytes);
            }
        }
    }

    #[test]
    fn other_models_and_bad_files_take_the_general_path() {
        let bpe = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":null,"post_processor":null,"decoder":null,
            "model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,
            "end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":false,
            "vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]}}"#;
        assert!(wordpiece(bpe.as_bytes()).is_none());
        let t = from_bytes(bpe.as_bytes()).unwrap();
        assert_eq!(t.encode("ab", false).unwrap().get_ids(), &[2]);
        // Added tokens: one new, one already in the vocabulary, one added twice.
        let mut t = t;
        t.add_tokens(&[
            AddedToken::from("zz", false),
            AddedToken::from("ab", false),
            AddedToken::from("zz", true),
        ]);
        assert_eq!(vocab_size_with_added(&t), t.get_vocab_size(true));
        assert_eq!(vocab_size_with_added(&t), 4);
        assert!(from_bytes(b"{not json").is_err());
    }
}
