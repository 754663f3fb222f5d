//! A model as a caller asks for it: with a prompt in front of every text and its vectors cut to
//! fewer dimensions, as sentence-transformers' `encode(prompt_name=…)` and `truncate_dim` do.
//!
//! - [`Prompts`]: a model directory's `config_sentence_transformers.json` `prompts` and
//!   `default_prompt_name`, which [`Embedder::prompts`] gives.
//! - [`PromptChoice`] and [`Role`]: what the caller asked for (a prompt by name, a text, or
//!   nothing said) and what the texts are (documents, queries, or plain texts); [`Prompts::
//!   resolve`] turns them into the one prompt text, or none. Asymmetric models get their document
//!   prompt for chunks and their query prompt for questions without being told.
//! - [`Tuned`]: the wrapper every front end gets from [`crate::models::ModelSpec::load_for`].
//!   A prompt is put in front of the text before it is tokenized (sentence-transformers joins
//!   the strings, so a byte-level BPE sees the same pre-tokens), its tokens count against the
//!   window, and the late pass pools none of them ([`Embedder::prompt`]). `dims` keeps the first
//!   `dims` components of each vector, then L2-normalises ([`truncate_rows`]); for the late pass
//!   the token states are cut the same way, which pools to the same vectors.

use std::collections::BTreeMap;
use std::sync::Arc;

use candle_core::{Tensor, D};
use serde::Deserialize;

use super::{normalize, Embedder, FlatBatch};
use crate::wordpiece::TextTokenizer;
use crate::{Error, Result};

/// A model's named prompts (`config_sentence_transformers.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Prompts {
    /// Prompt texts by name (`query`, `document`, …).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub prompts: BTreeMap<String, String>,
    /// The prompt sentence-transformers uses when none is named.
    #[serde(default)]
    pub default_prompt_name: Option<String>,
}

/// `"prompts": null`, as some configurations write it, is no prompts.
fn null_as_empty<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<BTreeMap<String, String>, D::Error> {
    Ok(Option::<BTreeMap<String, String>>::deserialize(d)?.unwrap_or_default())
}

/// What the texts being embedded are: what picks an asymmetric model's prompt when the caller
/// names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Texts with no role (`seamcut embed`, the server's embedding routes): the model's
    /// `default_prompt_name`, as sentence-transformers' `encode` does.
    Plain,
    /// Documents, their units and chunks: the prompt named `document` (or `passage`,
    /// `search_document`, `doc`, `corpus`), else the default.
    Document,
    /// Questions: the prompt named `query` (or `search_query`, `queries`), else the default.
    Query,
}

impl Role {
    fn names(self) -> &'static [&'static str] {
        match self {
            Self::Plain => &[],
            Self::Document => &["document", "passage", "search_document", "doc", "corpus"],
            Self::Query => &["query", "search_query", "queries"],
        }
    }
}

/// The prompt a caller asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PromptChoice {
    /// Nothing said: the one the texts' [`Role`] picks.
    #[default]
    Auto,
    /// One of the model's prompts, by name.
    Name(String),
    /// This text (the empty text: no prompt).
    Text(String),
}

impl PromptChoice {
    /// From the two settings a front end takes (`prompt_name`, `prompt`), which exclude each
    /// other.
    ///
    /// # Errors
    /// A [`Error::Setting`] when both are given.
    pub fn from_settings(name: Option<&str>, text: Option<&str>) -> Result<Self> {
        match (name, text) {
            (Some(_), Some(_)) => Err(Error::setting(
                "prompt_name",
                format!("give a prompt by name or as {}, not both", crate::error::named("prompt")),
            )),
            (Some(n), None) => Ok(Self::Name(n.to_string())),
            (None, Some(t)) => Ok(Self::Text(t.to_string())),
            (None, None) => Ok(Self::Auto),
        }
    }
}

impl Prompts {
    /// The prompt text for `choice` and `role` (`None`: no prompt).
    ///
    /// # Errors
    /// A [`Error::Setting`] naming `prompt_name` for a name the model does not have, with the
    /// names it has.
    pub fn resolve(&self, choice: &PromptChoice, role: Role) -> Result<Option<String>> {
        let text = match choice {
            PromptChoice::Text(t) => Some(t.clone()),
            PromptChoice::Name(n) => Some(self.prompts.get(n).cloned().ok_or_else(|| {
                let known = if self.prompts.is_empty() {
                    "the model has none".to_string()
                } else {
                    format!(
                        "the model has {}",
                        self.prompts.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
                    )
                };
                Error::setting("prompt_name", format!("no prompt named {n:?} ({known})"))
            })?),
            PromptChoice::Auto => role
                .names()
                .iter()
                .find_map(|n| self.prompts.get(*n))
                .or_else(|| self.default_prompt_name.as_ref().and_then(|n| self.prompts.get(n)))
                .cloned(),
        };
        Ok(text.filter(|t| !t.is_empty()))
    }
}

/// Keep the first `dims` of each `dim`-float row of `data`, each then L2-normalised
/// (sentence-transformers' `truncate_dim` with `normalize_embeddings`).
#[must_use]
pub fn truncate_rows(data: &[f32], dim: usize, dims: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(data.len() / dim.max(1) * dims);
    for row in data.chunks_exact(dim) {
        let at = out.len();
        out.extend_from_slice(&row[..dims.min(dim)]);
        normalize(&mut out[at..]);
    }
    out
}

/// `text` with `prompt` in front, as sentence-transformers joins them (the strings, before
/// tokenizing): what [`Tuned`] embeds, and what the server queues for a request's prompt.
#[must_use]
pub fn prompted<'t>(prompt: Option<&str>, text: &'t str) -> std::borrow::Cow<'t, str> {
    match prompt {
        Some(p) => format!("{p}{text}").into(),
        None => text.into(),
    }
}

/// A model with a prompt and a dimension cut ([the module's rules](self)).
pub struct Tuned {
    inner: Arc<dyn Embedder>,
    prompt: Option<String>,
    dims: Option<usize>,
}

impl Tuned {
    /// `inner` with `prompt` in front of every text and its vectors cut to `dims`; `inner`
    /// itself when neither is asked for.
    ///
    /// # Errors
    /// A [`Error::Setting`] naming `dims` for 0 or more than the model has.
    pub fn wrap(
        inner: Arc<dyn Embedder>,
        prompt: Option<String>,
        dims: Option<usize>,
    ) -> Result<Arc<dyn Embedder>> {
        let dims = dims.filter(|&d| d != inner.dim());
        if let Some(d) = dims {
            if d == 0 || d > inner.dim() {
                return Err(Error::setting(
                    "dims",
                    format!("{d} is not between 1 and the model's {} dimensions", inner.dim()),
                ));
            }
        }
        if prompt.is_none() && dims.is_none() {
            return Ok(inner);
        }
        Ok(Arc::new(Self { inner, prompt, dims }))
    }

    fn prompted<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        prompted(self.prompt.as_deref(), text)
    }

    fn cut(&self, t: Tensor) -> Result<Tensor> {
        Ok(match self.dims {
            Some(d) => t.narrow(D::Minus1, 0, d)?,
            None => t,
        })
    }
}

impl Embedder for Tuned {
    fn dim(&self) -> usize {
        self.dims.unwrap_or_else(|| self.inner.dim())
    }

    fn max_tokens(&self) -> Option<usize> {
        self.inner.max_tokens()
    }

    fn tokenizer(&self) -> &TextTokenizer {
        self.inner.tokenizer()
    }

    fn special_ids(&self) -> (&[u32], &[u32]) {
        self.inner.special_ids()
    }

    fn content_ids(&self, text: &str) -> Vec<u32> {
        self.inner.content_ids(&self.prompted(text))
    }

    fn content_ids_from(&self, ids: Vec<u32>) -> Vec<u32> {
        // Only called without a prompt: `prepare_known` tokenizes prompted texts again.
        self.inner.content_ids_from(ids)
    }

    fn content_ids_with_starts(&self, text: &str) -> (Vec<u32>, Vec<usize>) {
        self.inner.content_ids_with_starts(&self.prompted(text))
    }

    fn prompt(&self) -> Option<&str> {
        self.prompt.as_deref()
    }

    fn prompts(&self) -> &Prompts {
        self.inner.prompts()
    }

    fn token_states(&self, batch: &FlatBatch) -> Result<Tensor> {
        self.cut(self.inner.token_states(batch)?)
    }

    fn token_states_rows(&self, batch: &FlatBatch, rows: &[std::ops::Range<usize>]) -> Result<Tensor> {
        self.cut(self.inner.token_states_rows(batch, rows)?)
    }

    fn embed(&self, batch: &FlatBatch) -> Result<Vec<f32>> {
        let v = self.inner.embed(batch)?;
        Ok(match self.dims {
            Some(d) => truncate_rows(&v, self.inner.dim(), d),
            None => v,
        })
    }

    fn embed_tensor(&self, batch: &FlatBatch) -> Result<Tensor> {
        let t = self.inner.embed_tensor(batch)?;
        if self.dims.is_none() {
            return Ok(t);
        }
        let t = self.cut(t)?.contiguous()?;
        let norms = t.sqr()?.sum_keepdim(D::Minus1)?.sqrt()?.clamp(1e-12f32, f32::MAX)?;
        Ok(t.broadcast_div(&norms)?)
    }

    fn late_window(&self) -> Option<(usize, usize)> {
        self.inner.late_window()
    }

    fn describe(&self) -> String {
        let mut s = self.inner.describe();
        if let Some(p) = &self.prompt {
            s.push_str(&format!(", prompt {p:?}"));
        }
        if let Some(d) = self.dims {
            s.push_str(&format!(", first {d} dimensions"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompts(default: Option<&str>) -> Prompts {
        Prompts {
            prompts: [("query", "search_query: "), ("document", "search_document: "), ("none", "")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            default_prompt_name: default.map(str::to_string),
        }
    }

    #[test]
    fn roles_pick_the_asymmetric_prompts_and_plain_texts_the_default() {
        let p = prompts(None);
        assert_eq!(
            p.resolve(&PromptChoice::Auto, Role::Document).unwrap().as_deref(),
            Some("search_document: ")
        );
        assert_eq!(p.resolve(&PromptChoice::Auto, Role::Query).unwrap().as_deref(), Some("search_query: "));
        assert_eq!(p.resolve(&PromptChoice::Auto, Role::Plain).unwrap(), None);
        let p = prompts(Some("query"));
        assert_eq!(p.resolve(&PromptChoice::Auto, Role::Plain).unwrap().as_deref(), Some("search_query: "));
        // A name or a text given wins over the role; an empty prompt is none.
        let name = PromptChoice::Name("query".into());
        assert_eq!(p.resolve(&name, Role::Document).unwrap().as_deref(), Some("search_query: "));
        assert_eq!(p.resolve(&PromptChoice::Name("none".into()), Role::Query).unwrap(), None);
        assert_eq!(p.resolve(&PromptChoice::Text(String::new()), Role::Query).unwrap(), None);
        let e = p.resolve(&PromptChoice::Name("qeury".into()), Role::Plain).unwrap_err().to_string();
        assert!(e.contains("\"qeury\"") && e.contains("document, none, query"), "{e}");
        assert!(PromptChoice::from_settings(Some("a"), Some("b")).is_err());
    }

    #[test]
    fn truncated_rows_are_the_first_components_normalised() {
        let v = truncate_rows(&[3.0, 4.0, 12.0, 0.0, 0.0, 1.0], 3, 2);
        assert_eq!(v, vec![0.6, 0.8, 0.0, 0.0]);
    }
}
