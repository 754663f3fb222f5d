//! One value that says everything needed to build a chunker: [`ChunkerSpec`].
//!
//! The CLI maps its flags onto a spec, `--spec FILE.json` loads one, `--print-spec` prints
//! one, and the eval and plot commands, the corpus pipeline and the Python bindings all build
//! their chunkers from it, so a policy (the `auto` minimum, the per-model Max–Min
//! calibration, which tokenizer counts) lives here once. A spec is plain data (serde; JSON
//! with kebab-case values), validates itself in [`ChunkerSpec::build`], and every field has
//! the default `seamcut chunk` uses, so `{}` is a valid spec and `{"chunker": "maxmin"}` the
//! main job.
//!
//! ```
//! use seamcut::spec::ChunkerSpec;
//! let spec: ChunkerSpec = serde_json::from_str(r#"{"chunker": "recursive", "max_tokens": 64}"#).unwrap();
//! let chunker = spec.build().unwrap();
//! let chunks = chunker.chunk("One sentence. Another one.\n\nA new paragraph.").unwrap();
//! assert!(chunks.iter().all(|c| c.tokens <= 64));
//! ```

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::cap::Cap;
use crate::chunkers::lumber::{Guide, LumberChunker, LumberParams};
use crate::chunkers::semantic::{ModelErrorPolicy, Rule, SemanticChunker, Splitter, WindowMode};
use crate::chunkers::windows::windowed;
use crate::chunkers::{build as build_baseline, ChunkOptions, Chunker, ChunkerKind};
use crate::device::{Compute, DeviceSpec, Precision};
use crate::embed::late::LateOptions;
use crate::embed::tuned::PromptChoice;
use crate::llm::LlmSpec;
use crate::models::{CatalogEntry, ModelSpec};
use crate::rules::breakpoint::{BreakpointParams, ThresholdType};
use crate::rules::global::GlobalParams;
use crate::rules::maxmin::MaxMinParams;
use crate::rules::minima::MinimaParams;
use crate::sizer::{HfSizer, Sizer, SizerSpec};
use crate::{Error, Result};

/// The default `max_tokens`: the window of common retrievers (all-MiniLM-L6-v2 reads 256
/// word pieces; longer chunks are cut when they are embedded, so their tails cannot be
/// found). On the retrieval benchmark Max–Min and recursive splitting both scored lower at
/// a 512 cap than at 256 (benches/RESULTS.md).
pub const DEFAULT_MAX_TOKENS: usize = 256;

/// The spec fields that name things on the machine that runs the chunker: files (`model`,
/// `sizer`, the LLM's GGUF and answer cache), hosts and credentials (the LLM's URL and key
/// variable) and hardware (`device`, `dtype`, `device_bands`). A service takes them from its
/// own configuration, never from a request.
pub const MACHINE_FIELDS: [&str; 6] = ["model", "sizer", "device", "dtype", "device_bands", "llm"];

/// Everything that decides what chunks a document gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChunkerSpec {
    /// The chunking method.
    pub chunker: ChunkerKind,
    /// Hard cap on tokens per chunk (and per unit); 0 means no cap.
    pub max_tokens: Cap,
    /// Chunks under this many tokens are merged into a neighbour when the cap allows.
    pub min_tokens: MinTokens,
    /// Tokens shared by consecutive chunks (fixed chunker only).
    pub overlap: usize,
    /// What a token is: `default` (for embedding chunkers the model's own tokenizer, for
    /// baselines the default model's), `chars`, `words`, or a path to a tokenizer.json or
    /// a model directory holding one.
    pub sizer: SizerSpec,
    /// Embedding chunkers' model: a catalog name, a model directory or a hub id.
    pub model: String,
    /// `auto`, `cpu`, `cuda[:N]`, `metal[:N]`.
    pub device: DeviceSpec,
    /// `f32`, `f16`, `bf16`.
    pub dtype: Precision,
    /// The model's prompt for the documents' texts, by name (`config_sentence_transformers.json`'s
    /// `prompts`). Neither this nor `prompt`: the model's document prompt where it has one
    /// (`document`, `passage`, …), else its default prompt, else none.
    pub prompt_name: Option<String>,
    /// A prompt text in front of every text embedded (`""`: none).
    pub prompt: Option<String>,
    /// Keep the first this many dimensions of every vector, then normalise (Matryoshka
    /// models, sentence-transformers' `truncate_dim`); `null`: all of them.
    pub dims: Option<usize>,
    /// Whether Max–Min and the global rule take their bands from the device (unit vectors
    /// stay there; one kernel launch per batch; only the bands come back): `null` (the
    /// default) on a CUDA GPU and not elsewhere (CPU, Metal); `true` on the CPU runs that
    /// path's plumbing with the host's band code, to test it without a GPU.
    pub device_bands: Option<bool>,
    /// The units the rules group.
    pub units: UnitKind,
    /// With `units: delimiters`: merge segments shorter than this many bytes (chonkie: 24).
    pub min_characters_per_sentence: usize,
    /// Minima and breakpoints: how a window of units is embedded.
    pub window: WindowMode,
    /// Where the embedding chunkers' unit vectors come from: each unit embedded on its own,
    /// or pooled from token states of the whole document (the late pass, which then also gives
    /// chunk vectors with no second pass).
    pub unit_vectors: UnitVectors,
    /// The late pass's window, in content tokens: `auto` (the model's measured default, which
    /// may depend on `max_tokens`: all-MiniLM-L6-v2 reads 126 tokens every 63 above a cap of
    /// 128, 254 every 127 at or below it) or a number (at most the model's window less its
    /// special tokens).
    pub late_window: LateTokens,
    /// Tokens from one late window's start to the next: `auto` (half the window, or the
    /// model's measured default) or a number (1 to the window).
    pub late_stride: LateTokens,
    /// Where the late pass's windows are placed: `grid` (every `late_stride` tokens) or
    /// `centred` (around each span: the chunk, or a run of units, in the middle).
    pub late_placement: LatePlacement,
    pub maxmin: MaxMinSpec,
    pub minima: MinimaSpec,
    pub breakpoint: BreakpointSpec,
    pub global: GlobalSpec,
    /// The LLM chunkers' settings (θ, attempts, the guided mode's candidates).
    pub lumber: LumberParams,
    /// The LLM the LLM chunkers ask.
    pub llm: LlmSpec,
    /// What a document whose model pass fails gets (for the LLM chunkers: whose requests
    /// fail after their retries).
    pub on_model_error: ModelErrorPolicy,
}

impl Default for ChunkerSpec {
    fn default() -> Self {
        Self {
            chunker: ChunkerKind::default(),
            max_tokens: Cap::new(DEFAULT_MAX_TOKENS),
            min_tokens: MinTokens::Auto,
            overlap: 0,
            sizer: SizerSpec::Default,
            model: "default".into(),
            device: DeviceSpec::Auto,
            dtype: Precision::F32,
            prompt_name: None,
            prompt: None,
            dims: None,
            device_bands: None,
            units: UnitKind::default(),
            min_characters_per_sentence: 24,
            window: WindowMode::default(),
            unit_vectors: UnitVectors::default(),
            late_window: LateTokens::Auto,
            late_stride: LateTokens::Auto,
            late_placement: LatePlacement::default(),
            maxmin: MaxMinSpec::default(),
            minima: MinimaSpec::default(),
            breakpoint: BreakpointSpec::default(),
            global: GlobalSpec::default(),
            lumber: LumberParams::default(),
            llm: LlmSpec::default(),
            on_model_error: ModelErrorPolicy::default(),
        }
    }
}

/// The units embedding chunkers group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum UnitKind {
    /// Whole paragraphs; a paragraph over the cap or the model's window falls back to its
    /// sentences (the default: a cut never falls inside a paragraph that fits).
    #[default]
    Paragraphs,
    /// seamcut's sentence segmenter.
    Segmenter,
    /// chonkie's delimiter splitter (for parity with chonkie).
    Delimiters,
}

/// Where unit vectors come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum UnitVectors {
    /// Each unit embedded on its own, its text alone in the model's window.
    #[default]
    Independent,
    /// Each unit pooled from the token states of its document's late pass: one encoder pass
    /// gives the rules' unit vectors and the index's chunk vectors.
    Late,
}

/// Where the late pass's windows go ([`crate::embed::late::Placement`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum LatePlacement {
    /// Windows every `late_stride` tokens from the document's start; each token pooled from
    /// the window where it sits most centrally.
    #[default]
    Grid,
    /// Windows placed around the spans pooled: each chunk (or a run of small ones together)
    /// in the middle of its window, context on both sides where the document has it.
    Centred,
}

impl From<LatePlacement> for crate::embed::late::Placement {
    fn from(p: LatePlacement) -> Self {
        match p {
            LatePlacement::Grid => Self::Grid,
            LatePlacement::Centred => Self::Centred,
        }
    }
}

/// A late window or stride: `auto`, or a number of tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LateTokens {
    #[default]
    Auto,
    Fixed(usize),
}

/// Max–Min's parameters (Kiss, Nagy, Szilágyi 2025).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MaxMinSpec {
    /// A number, or `auto`: the value calibrated for the model (see [`ChunkerSpec::build`]).
    pub hard_thr: HardThr,
    /// The factor on the chunk's minimum pairwise similarity (paper: 0.9).
    pub c: f64,
    /// The factor on a one-unit chunk's similarity (paper: 1.5).
    pub init_const: f64,
}

impl Default for MaxMinSpec {
    fn default() -> Self {
        let p = MaxMinParams::default();
        Self { hard_thr: HardThr::Auto, c: p.c, init_const: p.init_const }
    }
}

/// The minima rule's parameters (chonkie's SemanticChunker; its defaults).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MinimaSpec {
    pub threshold: f64,
    pub similarity_window: usize,
    pub min_sentences: usize,
    pub filter_window: usize,
    pub filter_polyorder: usize,
    pub filter_tolerance: f64,
    pub skip_window: usize,
}

impl Default for MinimaSpec {
    fn default() -> Self {
        let p = MinimaParams::default();
        Self {
            threshold: p.threshold,
            similarity_window: p.similarity_window,
            min_sentences: p.min_sentences,
            filter_window: p.filter_window,
            filter_polyorder: p.filter_polyorder,
            filter_tolerance: p.filter_tolerance,
            skip_window: p.skip_window,
        }
    }
}

/// The breakpoint rule's parameters (LangChain's SemanticChunker; its defaults).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BreakpointSpec {
    #[serde(rename = "type")]
    pub kind: ThresholdType,
    /// `None`: LangChain's default for the type (95 percentile, 3 std, 1.5 IQR, 95 gradient).
    pub amount: Option<f64>,
    pub number_of_chunks: Option<usize>,
    /// Neighbours on each side combined with a unit (LangChain: 1).
    pub buffer_size: usize,
    /// Skip breakpoints closing a chunk shorter than this many characters.
    pub min_chunk_chars: Option<usize>,
}

impl Default for BreakpointSpec {
    fn default() -> Self {
        Self {
            kind: ThresholdType::Percentile,
            amount: None,
            number_of_chunks: None,
            buffer_size: 1,
            min_chunk_chars: None,
        }
    }
}

/// The global rule's parameters ([`crate::rules::global`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GlobalSpec {
    /// The mean chunk size to aim for: a number of tokens, or `auto` (three quarters of the
    /// cap; 192 without one).
    pub target_tokens: TargetTokens,
    /// The size prior's weight μ: each chunk pays `μ · ((t − T) / T)²` for `t` tokens
    /// against the target `T` (0: none).
    pub size_weight: f64,
    /// β, the weight of each cut's TextTiling depth score (0: none).
    pub depth_weight: f64,
    /// Units per block on each side of a seam for its depth score (at least 1).
    pub block: usize,
    /// γ, the structure prior's weight: a cut before a heading gains γ, a cut right after
    /// one loses γ ([`crate::segment::structure`]; 0: none).
    pub heading_weight: f64,
}

impl Default for GlobalSpec {
    fn default() -> Self {
        let p = GlobalParams::default();
        Self {
            target_tokens: TargetTokens::Auto,
            size_weight: p.size_weight,
            depth_weight: p.depth_weight,
            block: p.block,
            heading_weight: p.heading_weight,
        }
    }
}

/// `target_tokens`: a number, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TargetTokens {
    #[default]
    Auto,
    Fixed(usize),
}

impl TargetTokens {
    /// The target under `cap`.
    #[must_use]
    pub fn resolve(self, cap: Cap) -> usize {
        match (self, cap.get()) {
            (Self::Fixed(n), _) => n,
            (Self::Auto, None) => 192,
            (Self::Auto, Some(max_tokens)) => (max_tokens * 3 / 4).max(1),
        }
    }
}

/// `min_tokens`: a number, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MinTokens {
    /// A quarter of the cap for the embedding chunkers, 0 for the baselines and the LLM
    /// chunkers (an LLM's cut is kept as it is): embedding rules
    /// leave one-unit chunks (headings, asides) that rank well on a word or two and crowd
    /// out the real answer; on the retrieval benchmark Max–Min without a minimum stayed well
    /// below size-matched recursive splitting (benches/RESULTS.md). Baselines keep what
    /// their packing gives.
    #[default]
    Auto,
    Fixed(usize),
}

impl MinTokens {
    /// The minimum for `chunker` under `cap`.
    #[must_use]
    pub fn resolve(self, chunker: ChunkerKind, cap: Cap) -> usize {
        match self {
            Self::Fixed(n) => n,
            Self::Auto if !chunker.is_baseline() && !chunker.is_llm() => cap.max_tokens() / 4,
            Self::Auto => 0,
        }
    }
}

/// Max–Min's `hard_thr`: a number, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum HardThr {
    /// The value calibrated for the model on the topic-shift benchmark
    /// (`models/catalog.json`), found by the weights' fingerprint or the catalog name, for
    /// units embedded alone or, with `unit_vectors: late`, for late units where the entry
    /// has such a value; else the paper's 0.6 (tuned for bge-base).
    #[default]
    Auto,
    Fixed(f64),
}

/// `"auto"` or a number: parsed from flags, and in JSON.
macro_rules! auto_or_number {
    ($t:ty, $n:ty) => {
        impl std::str::FromStr for $t {
            type Err = String;

            fn from_str(s: &str) -> std::result::Result<Self, String> {
                if s == "auto" {
                    Ok(Self::Auto)
                } else {
                    s.parse().map(Self::Fixed).map_err(|_| format!("expected a number or auto, got {s:?}"))
                }
            }
        }

        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                match self {
                    Self::Auto => s.serialize_str("auto"),
                    Self::Fixed(n) => n.serialize(s),
                }
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                #[derive(Deserialize)]
                #[serde(untagged)]
                enum Raw {
                    N($n),
                    S(String),
                }
                match Raw::deserialize(d)? {
                    Raw::N(n) => Ok(Self::Fixed(n)),
                    Raw::S(s) => s.parse().map_err(serde::de::Error::custom),
                }
            }
        }
    };
}
auto_or_number!(MinTokens, usize);
auto_or_number!(HardThr, f64);
auto_or_number!(TargetTokens, usize);
auto_or_number!(LateTokens, usize);

/// A spec from JSON, a bad value named by its field and said in words:
/// `max_tokens: expected a whole number (0 or more), got the string "x"`, not serde's
/// `invalid type: string "x", expected usize`.
///
/// # Errors
/// The message, as above.
pub fn from_value(v: serde_json::Value) -> std::result::Result<ChunkerSpec, String> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let message = in_words(&e.inner().to_string());
        if path.is_empty() || path == "." {
            message
        } else {
            format!("{path}: {message}")
        }
    })
}

/// serde's message with Rust's type names said as a user would.
pub(crate) fn in_words(m: &str) -> String {
    let rest = m.strip_prefix("invalid type: ").or_else(|| m.strip_prefix("invalid value: "));
    if let Some((got, expected)) = rest.and_then(|r| r.rsplit_once(", expected ")) {
        let expected = match expected {
            "usize" | "u64" | "u32" | "u16" | "u8" => "a whole number (0 or more)",
            "isize" | "i64" | "i32" => "a whole number",
            "f64" | "f32" => "a number",
            e => e,
        };
        let got = got.replace('`', "");
        let got = match got.as_str() {
            "map" => "an object".to_string(),
            "sequence" => "a list".to_string(),
            g if ["string ", "integer ", "floating point ", "boolean "].iter().any(|p| g.starts_with(p)) => {
                format!("the {g}")
            }
            g => g.to_string(),
        };
        return format!("expected {expected}, got {got}");
    }
    if m.starts_with("data did not match any variant of untagged enum") {
        return "expected a number or \"auto\"".into();
    }
    m.to_string()
}

impl ChunkerSpec {
    /// A spec for `chunker` with every other field at its default.
    #[must_use]
    pub fn new(chunker: ChunkerKind) -> Self {
        Self { chunker, ..Self::default() }
    }

    /// Read a spec from a JSON file (unknown fields are an error naming them).
    ///
    /// # Errors
    /// If the file cannot be read or is not a valid spec.
    pub fn from_file(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let bad = |e: &dyn std::fmt::Display| {
            Error::Config(format!("{}: not a valid chunker spec: {e}", path.display()))
        };
        // The same forms a request's or Python's parameters take: nested sections, or a
        // chunker's own settings flat (`"hard_thr": 0.5`).
        let params: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| bad(&e))?;
        Self::from_params(params).map_err(|e| match e {
            Error::Config(m) => bad(&m.trim_start_matches("invalid chunker parameters: ")),
            e => e,
        })
    }

    /// A spec from flat keyword parameters, as the Python bindings take them
    /// (`Chunker(chunker="maxmin", max_tokens=128, hard_thr=0.4)`): a spec field keeps its
    /// name, and a field of the chosen chunker's own settings (`hard_thr`, `threshold`,
    /// `similarity_window`, `target_tokens`, …) may be given at the top level instead of
    /// nested under `maxmin`/`minima`/`breakpoint`/`global`. The defaults with
    /// [`Self::with_params`].
    ///
    /// # Errors
    /// A [`Error::Config`] naming an unknown parameter and the ones this chunker takes, or a
    /// bad value.
    pub fn from_params(params: serde_json::Map<String, serde_json::Value>) -> Result<Self> {
        Self::default().with_params(params)
    }

    /// This spec with flat keyword parameters applied over it, as [`Self::from_params`] reads
    /// them (a service's per-request overrides over its own spec). A nested object given
    /// (`"maxmin": {"c": 0.8}`) changes only the settings it names.
    ///
    /// # Errors
    /// As [`Self::from_params`].
    pub fn with_params(&self, params: serde_json::Map<String, serde_json::Value>) -> Result<Self> {
        self.with_params_but(params, &[])
    }

    /// [`Self::with_params`] for a request to a server: the fields that name the machine
    /// ([`MACHINE_FIELDS`], which the server refuses) are not offered as known parameters.
    ///
    /// # Errors
    /// As [`Self::from_params`].
    pub fn with_request_params(&self, params: serde_json::Map<String, serde_json::Value>) -> Result<Self> {
        self.with_params_but(params, &MACHINE_FIELDS)
    }

    fn with_params_but(
        &self,
        params: serde_json::Map<String, serde_json::Value>,
        unoffered: &[&str],
    ) -> Result<Self> {
        use serde_json::Value;
        let bad = |e: serde_json::Error| Error::Config(format!("invalid chunker parameters: {e}"));
        let chunker: ChunkerKind = match params.get("chunker") {
            Some(v) => serde_json::from_value(v.clone()).map_err(|_| {
                Error::Config(format!(
                    "unknown chunker {v} (known: {})",
                    ChunkerKind::ALL.map(ChunkerKind::name).join(", ")
                ))
            })?,
            None => self.chunker,
        };
        let Value::Object(mut spec) = serde_json::to_value(Self { chunker, ..self.clone() }).map_err(bad)?
        else {
            return Err(Error::Internal("a spec is an object".into()));
        };
        let own = match chunker {
            ChunkerKind::Maxmin => Some("maxmin"),
            ChunkerKind::Minima => Some("minima"),
            ChunkerKind::Breakpoint => Some("breakpoint"),
            ChunkerKind::Global => Some("global"),
            ChunkerKind::Lumber | ChunkerKind::LumberGuided => Some("lumber"),
            _ => None,
        };
        let own_fields: Vec<String> = own
            .and_then(|k| spec.get(k))
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        // Settings of the chunker's own section given in its object, and given flat.
        let mut in_object: Vec<String> = Vec::new();
        let mut flat = serde_json::Map::new();
        for (k, v) in params {
            if let Some(slot) = spec.get_mut(&k) {
                match (slot, v) {
                    (Value::Object(o), Value::Object(given)) => {
                        for (f, x) in given {
                            if own == Some(k.as_str()) {
                                in_object.push(f.clone());
                            }
                            o.insert(f, x);
                        }
                    }
                    (slot, v) => *slot = v,
                }
            } else if own_fields.contains(&k) {
                flat.insert(k, v);
            } else {
                let mut known: Vec<&str> =
                    spec.keys().map(String::as_str).filter(|k| !unoffered.contains(k)).collect();
                known.extend(own_fields.iter().map(String::as_str));
                return Err(Error::Config(format!(
                    "unknown parameter {k:?} for the {chunker} chunker (known: {})",
                    known.join(", ")
                )));
            }
        }
        if let (Some(k), false) = (own, flat.is_empty()) {
            let Some(Value::Object(o)) = spec.get_mut(k) else {
                return Err(Error::Config(format!("{k}: expected an object of {k} settings")));
            };
            for (f, v) in flat {
                if in_object.contains(&f) {
                    return Err(Error::Config(format!("{f} is given twice (at the top level and in {k})")));
                }
                o.insert(f, v);
            }
        }
        from_value(Value::Object(spec)).map_err(|e| Error::Config(format!("invalid chunker parameters: {e}")))
    }

    /// The spec as pretty JSON (what `--print-spec` prints and `--spec` reads).
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The sizes every chunker honours, with `auto` resolved.
    #[must_use]
    pub fn options(&self) -> ChunkOptions {
        ChunkOptions {
            cap: self.max_tokens,
            min_tokens: self.min_tokens.resolve(self.chunker, self.max_tokens),
            overlap: self.overlap,
        }
    }

    /// The model, device, dtype, prompt and dimensions.
    ///
    /// # Errors
    /// Both `prompt_name` and `prompt` given.
    pub fn model_spec(&self) -> Result<ModelSpec> {
        Ok(ModelSpec {
            model: self.model.clone(),
            device: self.device,
            dtype: self.dtype,
            prompt: PromptChoice::from_settings(self.prompt_name.as_deref(), self.prompt.as_deref())?,
            dims: self.dims,
        })
    }

    /// The device and dtype, resolved.
    ///
    /// # Errors
    /// A device not compiled in or not present, or a dtype it cannot run.
    pub fn compute(&self) -> Result<Compute> {
        Compute::new(self.device, self.dtype)
    }

    /// The model, loaded once per process ([`crate::models::load_shared`]).
    ///
    /// # Errors
    /// As [`crate::models::load`].
    pub fn load_model(&self) -> Result<Arc<crate::models::Model>> {
        self.model_spec()?.load()
    }

    /// Build the chunker this spec describes.
    ///
    /// Embedding chunkers load the model (once per process), count tokens with the model's
    /// tokenizer unless `sizer` says otherwise, and resolve `hard_thr: auto` to the value
    /// calibrated for the model, which [`Chunker::describe`] reports with how it was found.
    ///
    /// # Errors
    /// An [`Error::Setting`] for settings that do not fit together (overlap on an embedding
    /// chunker, a minimum above the cap, a bad window), or the model's or tokenizer's load
    /// error.
    pub fn build(&self) -> Result<Box<dyn Chunker>> {
        self.check_ranges()?;
        let opts = self.options();
        if self.chunker.is_baseline() {
            return build_baseline(self.chunker, self.sizer.build()?, opts);
        }
        opts.validate(self.chunker)?;
        let (chunker, sizer) =
            if self.chunker.is_llm() { self.build_llm(opts)? } else { self.build_semantic(opts)? };
        Ok(windowed(chunker, &sizer, self.overlap))
    }

    /// Every numeric setting within its range, checked where the spec is built so that the
    /// CLI, a spec file, Python and the server refuse a value the same way (each front end
    /// names the setting its own way, [`Error::render`]).
    ///
    /// # Errors
    /// The first setting out of its range, by its spec name.
    pub fn check_ranges(&self) -> Result<()> {
        let within = |name: &'static str, v: f64, lo: f64, hi: f64, what: &str| -> Result<()> {
            if v.is_finite() && (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(Error::setting(name, format!("{what} (got {v})")))
            }
        };
        let at_least = |name: &'static str, v: usize, lo: usize, what: &str| -> Result<()> {
            if v >= lo {
                Ok(())
            } else {
                Err(Error::setting(name, format!("{what} (got {v})")))
            }
        };
        const ANY: f64 = f64::MAX;
        if let HardThr::Fixed(t) = self.maxmin.hard_thr {
            within(
                "maxmin.hard_thr",
                t,
                -1.0,
                1.0,
                "is a cosine similarity: give a number from -1 to 1, or auto",
            )?;
        }
        within("maxmin.c", self.maxmin.c, 0.0, ANY, "must be a number >= 0")?;
        within("maxmin.init_const", self.maxmin.init_const, 0.0, ANY, "must be a number >= 0")?;
        within(
            "minima.threshold",
            self.minima.threshold,
            0.0,
            1.0,
            "is a percentile: give a number from 0 to 1",
        )?;
        within("minima.filter_tolerance", self.minima.filter_tolerance, 0.0, ANY, "must be a number >= 0")?;
        at_least("minima.similarity_window", self.minima.similarity_window, 1, "must be at least 1 unit")?;
        if let Some(a) = self.breakpoint.amount {
            let hi = match self.breakpoint.kind {
                ThresholdType::Percentile | ThresholdType::Gradient => 100.0,
                ThresholdType::StandardDeviation | ThresholdType::Interquartile => ANY,
            };
            within("breakpoint.amount", a, 0.0, hi, &format!("must be a number from 0 to {hi}"))?;
        }
        if let Some(n) = self.breakpoint.number_of_chunks {
            at_least("breakpoint.number_of_chunks", n, 1, "must be at least 1")?;
        }
        for (name, w) in [
            ("global.size_weight", self.global.size_weight),
            ("global.depth_weight", self.global.depth_weight),
            ("global.heading_weight", self.global.heading_weight),
        ] {
            within(name, w, 0.0, ANY, "must be a finite number >= 0")?;
        }
        at_least("global.block", self.global.block, 1, "must be at least 1 unit")?;
        if let Some(d) = self.dims {
            at_least("dims", d, 1, "must keep at least 1 dimension")?;
        }
        within("llm.temperature", self.llm.temperature, 0.0, 2.0, "must be a number from 0 to 2")?;
        if !(self.llm.timeout_s.is_finite() && self.llm.timeout_s > 0.0) {
            return Err(Error::setting(
                "llm.timeout_s",
                format!("must be a number of seconds > 0 (got {})", self.llm.timeout_s),
            ));
        }
        at_least("llm.concurrency", self.llm.concurrency, 1, "must be at least 1 request")?;
        let l = &self.lumber;
        if l.theta == 0 || l.attempts == 0 || l.candidates == 0 || l.groups == 0 {
            return Err(Error::setting("lumber", "theta, attempts, candidates and groups must be > 0"));
        }
        Ok(())
    }

    /// An embedding chunker, and the sizer it counts with.
    fn build_semantic(&self, opts: ChunkOptions) -> Result<(Box<dyn Chunker>, Arc<dyn Sizer>)> {
        let model = self.load_model()?;
        let sizer = self.model_sizer(&model)?;
        let (rule, calibration) = self.rule(&model)?;
        let splitter = match self.units {
            UnitKind::Segmenter => Splitter::Segmenter,
            UnitKind::Paragraphs => Splitter::Paragraphs,
            UnitKind::Delimiters => Splitter::Delimiters { min_bytes: self.min_characters_per_sentence },
        };
        let compute = self.compute()?;
        // `sizer: default` counts with the model's own tokenizer (`model_sizer`): the ids that
        // counted a unit are the ones it embeds.
        let mut chunker = SemanticChunker::new(model.embedder.clone(), sizer.clone(), compute, rule, opts)
            .with_shared_tokenizer(self.sizer == SizerSpec::Default);
        if let Some(on) = self.device_bands {
            chunker = chunker.with_device_bands(on); // else SemanticChunker's default: on CUDA
        }
        let late = match self.unit_vectors {
            UnitVectors::Late => Some(self.late_options(&model)?),
            UnitVectors::Independent => None,
        };
        let late_note = late.map_or_else(String::new, |o| format!("; unit vectors late (windows of {o})"));
        let chunker = chunker
            .with_late_units(late)
            .with_splitter(splitter)
            .with_model_error_policy(self.on_model_error)
            .with_description(format!(
                "{} on {}{calibration}{late_note}",
                self.chunker,
                model.embedder.describe()
            ));
        Ok((Box::new(chunker), sizer))
    }

    /// What counts tokens for a chunker with `model`: the model's tokenizer unless `sizer`
    /// names another.
    fn model_sizer(&self, model: &crate::models::Model) -> Result<Arc<dyn Sizer>> {
        if self.sizer == SizerSpec::Default {
            Ok(Arc::new(HfSizer::from_text_tokenizer(model.embedder.tokenizer().clone(), "model")))
        } else {
            self.sizer.build()
        }
    }

    /// An LLM chunker, and the sizer it counts with.
    fn build_llm(&self, opts: ChunkOptions) -> Result<(Box<dyn Chunker>, Arc<dyn Sizer>)> {
        let l = &self.lumber;
        let compute = self.compute()?;
        let llm = self.llm.build(&compute)?;
        let (sizer, guide): (Arc<dyn Sizer>, _) = if self.chunker == ChunkerKind::LumberGuided {
            let model = self.load_model()?;
            let sizer = self.model_sizer(&model)?;
            let guide = Guide { embedder: model.embedder.clone(), compute, embed_opts: Default::default() };
            (sizer, Some(guide))
        } else {
            (self.sizer.build()?, None)
        };
        let chunker = LumberChunker::new(llm, sizer.clone(), opts, *l, guide)
            .with_model_error_policy(self.on_model_error);
        Ok((Box::new(chunker), sizer))
    }

    /// The rule with its parameters, and a note on the calibration used (empty if none).
    fn rule(&self, model: &crate::models::Model) -> Result<(Rule, String)> {
        let m = &self.minima;
        if m.filter_window.is_multiple_of(2) || m.filter_polyorder >= m.filter_window {
            return Err(Error::setting(
                "minima.filter_window",
                format!(
                    "must be odd and above filter_polyorder (got {} and {})",
                    m.filter_window, m.filter_polyorder
                ),
            ));
        }
        Ok(match self.chunker {
            ChunkerKind::Maxmin => {
                let (hard_thr, note) = match self.maxmin.hard_thr {
                    HardThr::Fixed(t) => (t, String::new()),
                    HardThr::Auto => match model.calibration().and_then(|(e, how)| self.auto_hard_thr(&e, how)) {
                        Some((t, note)) => (f64::from(t), note),
                        None => (
                            MaxMinParams::default().hard_thr,
                            format!(
                                "; hard_thr 0.6, the paper's (no calibration known for {}; calibrate with seamcut eval topics)",
                                self.model
                            ),
                        ),
                    },
                };
                let p = MaxMinParams { c: self.maxmin.c, hard_thr, init_const: self.maxmin.init_const };
                (Rule::MaxMin(p), note)
            }
            ChunkerKind::Global => (
                Rule::Global(GlobalParams {
                    target_tokens: self.global.target_tokens.resolve(self.max_tokens),
                    penalty: 0.0,
                    size_weight: self.global.size_weight,
                    depth_weight: self.global.depth_weight,
                    block: self.global.block,
                    heading_weight: self.global.heading_weight,
                }),
                String::new(),
            ),
            ChunkerKind::Minima => (
                Rule::Minima(
                    MinimaParams {
                        threshold: m.threshold,
                        similarity_window: m.similarity_window,
                        min_sentences: m.min_sentences,
                        filter_window: m.filter_window,
                        filter_polyorder: m.filter_polyorder,
                        filter_tolerance: m.filter_tolerance,
                        skip_window: m.skip_window,
                    },
                    self.window,
                ),
                String::new(),
            ),
            ChunkerKind::Breakpoint => {
                let b = &self.breakpoint;
                (
                    Rule::Breakpoint {
                        params: BreakpointParams {
                            kind: b.kind,
                            amount: b.amount.unwrap_or(b.kind.default_amount()),
                            number_of_chunks: b.number_of_chunks,
                            min_chunk_size: b.min_chunk_chars,
                        },
                        buffer: b.buffer_size,
                        window: self.window,
                    },
                    String::new(),
                )
            }
            k => return Err(Error::Internal(format!("{k} has no rule"))),
        })
    }

    /// The late pass's options for `model`: the model's defaults for this spec's
    /// `max_tokens` ([`crate::models::Model::late_options`]) under `late_window` and
    /// `late_stride` (a window given alone gets half of it as its stride).
    ///
    /// # Errors
    /// A window or stride the model cannot take ([`LateOptions::validate`]).
    pub fn late_options(&self, model: &crate::models::Model) -> Result<LateOptions> {
        let mut o = model.late_options(self.max_tokens.get());
        if let LateTokens::Fixed(w) = self.late_window {
            o.window = w;
            o.stride = w.div_ceil(2);
        }
        if let LateTokens::Fixed(s) = self.late_stride {
            o.stride = s;
        }
        o.placement = self.late_placement.into();
        o.validate(model.embedder.as_ref())?;
        Ok(o)
    }

    /// Whether this spec's chunker reads `setting` (a field's path: `model`,
    /// `maxmin.hard_thr`, `lumber.candidates`), so that a front end can say when a setting
    /// given does nothing. With `embeds` (chunk vectors asked for), a chunker without a model
    /// of its own reads the model too: it embeds the chunks.
    #[must_use]
    pub fn reads(&self, setting: &str, embeds: bool) -> bool {
        use ChunkerKind as K;
        let k = self.chunker;
        let (group, field) = setting.split_once('.').unwrap_or((setting, ""));
        let embedding = !k.is_baseline() && !k.is_llm();
        match group {
            "model" | "prompt_name" | "prompt" | "dims" => (embedding || k == K::LumberGuided) || embeds,
            // An in-process LLM runs on the device too.
            "device" | "dtype" => !k.is_baseline() || embeds,
            "device_bands" => matches!(k, K::Maxmin | K::Global),
            "units" | "min_characters_per_sentence" => embedding,
            "window" => matches!(k, K::Minima | K::Breakpoint),
            "unit_vectors" => embedding,
            "late_window" | "late_stride" | "late_placement" => {
                embeds || (embedding && self.unit_vectors == UnitVectors::Late)
            }
            "maxmin" => k == K::Maxmin,
            "minima" => k == K::Minima,
            "breakpoint" => k == K::Breakpoint,
            "global" => k == K::Global,
            "lumber" => match field {
                "candidates" | "groups" | "context_words" => k == K::LumberGuided,
                _ => k.is_llm(),
            },
            "llm" => k.is_llm(),
            "on_model_error" => !k.is_baseline(),
            _ => true,
        }
    }

    /// `hard_thr: auto` from a catalog entry, for these unit vectors, with the summary's note:
    /// late unit vectors take the entry's `late_hard_thr` where it has one (calibrated on the
    /// topic-shift benchmark with late units, as `hard_thr` is with units embedded alone).
    fn auto_hard_thr(&self, e: &CatalogEntry, how: &str) -> Option<(f32, String)> {
        let name = &e.name;
        let late = self.unit_vectors == UnitVectors::Late;
        match e.late_hard_thr.filter(|_| late) {
            Some(t) => Some((
                t,
                format!("; hard_thr {t} calibrated for {name}'s late unit vectors (matched by {how})"),
            )),
            None => e.hard_thr.map(|t| {
                let alone = if late { " on units embedded alone, not on late ones" } else { "" };
                (t, format!("; hard_thr {t} calibrated for {name} (matched by {how}){alone}"))
            }),
        }
    }

    /// Max–Min's `hard_thr` as [`Self::build`] resolves it (for plots and reports).
    ///
    /// # Errors
    /// If the model cannot be loaded.
    pub fn resolved_hard_thr(&self) -> Result<f64> {
        let spec = Self { chunker: ChunkerKind::Maxmin, ..self.clone() };
        match spec.rule(&*spec.load_model()?)?.0 {
            Rule::MaxMin(p) => Ok(p.hard_thr),
            _ => Err(Error::Internal("maxmin has a Max–Min rule".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_spec_is_the_default_and_round_trips() {
        let s: ChunkerSpec = serde_json::from_str("{}").unwrap();
        assert_eq!(s, ChunkerSpec::default());
        let mut s = ChunkerSpec::new(ChunkerKind::Maxmin);
        s.maxmin.hard_thr = HardThr::Fixed(0.45);
        s.min_tokens = MinTokens::Fixed(12);
        s.breakpoint.kind = ThresholdType::Interquartile;
        let json = s.to_json();
        assert!(json.contains("\"hard_thr\": 0.45") && json.contains("\"interquartile\""), "{json}");
        assert_eq!(serde_json::from_str::<ChunkerSpec>(&json).unwrap(), s);
        assert!(ChunkerSpec::default().to_json().contains("\"min_tokens\": \"auto\""));
    }

    #[test]
    fn unknown_fields_and_bad_values_are_errors() {
        let e = serde_json::from_str::<ChunkerSpec>(r#"{"max_tokenz": 3}"#).unwrap_err().to_string();
        assert!(e.contains("max_tokenz"), "{e}");
        assert!(serde_json::from_str::<ChunkerSpec>(r#"{"chunker": "nope"}"#).is_err());
        assert!(serde_json::from_str::<ChunkerSpec>(r#"{"min_tokens": "some"}"#).is_err());
    }

    #[test]
    fn flat_parameters_land_in_the_chunkers_own_settings() {
        let params = |j: &str| serde_json::from_str::<serde_json::Map<_, _>>(j).unwrap();
        let s =
            ChunkerSpec::from_params(params(r#"{"chunker": "maxmin", "hard_thr": 0.4, "max_tokens": 128}"#))
                .unwrap();
        assert_eq!((s.maxmin.hard_thr, s.max_tokens), (HardThr::Fixed(0.4), Cap::new(128)));
        let s = ChunkerSpec::from_params(params(r#"{"chunker": "minima", "similarity_window": 5}"#)).unwrap();
        assert_eq!(s.minima.similarity_window, 5);
        let s = ChunkerSpec::from_params(params(r#"{"chunker": "breakpoint", "type": "interquartile"}"#))
            .unwrap();
        assert_eq!(s.breakpoint.kind, ThresholdType::Interquartile);
        assert_eq!(ChunkerSpec::from_params(params("{}")).unwrap(), ChunkerSpec::default());
        // Another chunker's setting, an unknown name, a bad value, a setting given twice.
        let e = ChunkerSpec::from_params(params(r#"{"chunker": "minima", "hard_thr": 0.4}"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"hard_thr\"") && e.contains("similarity_window"), "{e}");
        assert!(ChunkerSpec::from_params(params(r#"{"chunker": "maxmin", "max_tokenz": 3}"#)).is_err());
        assert!(ChunkerSpec::from_params(params(r#"{"chunker": "nope"}"#))
            .unwrap_err()
            .to_string()
            .contains("known: fixed"));
        assert!(ChunkerSpec::from_params(params(r#"{"max_tokens": "many"}"#)).is_err());
        let twice = r#"{"chunker": "maxmin", "c": 0.8, "maxmin": {"c": 0.7}}"#;
        assert!(ChunkerSpec::from_params(params(twice)).unwrap_err().to_string().contains("twice"));
    }

    #[test]
    fn parameters_over_a_spec_change_only_what_they_name() {
        let params = |j: &str| serde_json::from_str::<serde_json::Map<_, _>>(j).unwrap();
        let mut base = ChunkerSpec::new(ChunkerKind::Maxmin);
        base.maxmin.c = 0.8;
        base.max_tokens = Cap::new(128);
        base.model = "all-MiniLM-L6-v2".into();
        let s = base.with_params(params(r#"{"hard_thr": 0.4}"#)).unwrap();
        assert_eq!((s.maxmin.hard_thr, s.maxmin.c, s.max_tokens), (HardThr::Fixed(0.4), 0.8, Cap::new(128)));
        assert_eq!(s.model, "all-MiniLM-L6-v2");
        // A nested object keeps the base's other settings; a setting already in the base is
        // not "given twice".
        let s = base.with_params(params(r#"{"maxmin": {"init_const": 2.0}, "c": 0.7}"#)).unwrap();
        assert_eq!((s.maxmin.init_const, s.maxmin.c), (2.0, 0.7));
        // Another chunker: its own settings are the ones taken flat.
        let s = base.with_params(params(r#"{"chunker": "minima", "threshold": 0.5}"#)).unwrap();
        assert_eq!((s.chunker, s.minima.threshold, s.max_tokens), (ChunkerKind::Minima, 0.5, Cap::new(128)));
        assert!(base.with_params(params(r#"{"threshold": 0.5}"#)).is_err());
        assert_eq!(base.with_params(params("{}")).unwrap(), base);
    }

    #[test]
    fn auto_minimum_is_a_quarter_of_the_cap_for_embedding_chunkers_only() {
        assert_eq!(ChunkerSpec::new(ChunkerKind::Maxmin).options().min_tokens, 64);
        assert_eq!(ChunkerSpec::new(ChunkerKind::Recursive).options().min_tokens, 0);
    }
}
