//! Model management: turn a `--model` value into a loaded [`Embedder`].
//!
//! A value is, in order: a catalog name (`models/catalog.json`; the folder `models/NAME` is
//! used when present, else the catalog's hub id), a local directory, or a Hugging Face hub
//! id fetched through `hf-hub` (honouring `HF_HOME` and `HF_HUB_OFFLINE`). The directory's
//! contents decide the loader: a `config.json` with a transformer `model_type` goes to
//! [`BertEmbedder`], a `model.safetensors` with an `embeddings` tensor to [`StaticEmbedder`].

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::device::{Compute, DeviceSpec, Precision};
use crate::embed::bert::BertEmbedder;
use crate::embed::late::LateOptions;
use crate::embed::st_config::model_type;
use crate::embed::static_model::{is_static_model, StaticEmbedder};
use crate::embed::tuned::{PromptChoice, Role, Tuned};
use crate::embed::Embedder;
use crate::{Error, Result};

/// One entry of the model catalog.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogEntry {
    pub name: String,
    pub hub: Option<String>,
    pub kind: String,
    #[serde(default)]
    pub pooling: Option<String>,
    pub dim: usize,
    #[serde(default)]
    pub hard_thr: Option<f32>,
    /// Max–Min's `hard_thr` for unit vectors pooled from the late pass (`--unit-vectors
    /// late`): each unit's late vector carries its neighbours, so neighbours sit closer than
    /// units embedded alone and `hard_thr` cuts too seldom. Absent: `hard_thr`.
    #[serde(default)]
    pub late_hard_thr: Option<f32>,
    /// Fingerprints ([`fingerprint`]) of the weight files this entry's calibration was
    /// measured on: a model directory with one of these gets the entry's calibration
    /// whatever it is called or wherever it lies.
    #[serde(default)]
    pub fingerprints: Vec<String>,
    /// The late pass's window and stride (content tokens) measured for this model
    /// ([`Model::late_options`]); absent: the model's own or the fallback defaults.
    #[serde(default)]
    pub late_window: Option<usize>,
    #[serde(default)]
    pub late_stride: Option<usize>,
    /// The sequence length the model was trained on, special tokens included, where shorter
    /// than what it takes (sentence-transformers' all-* models: 128): chunks capped above it
    /// get late windows of that length ([`Model::late_options`]).
    #[serde(default)]
    pub trained_tokens: Option<usize>,
    /// The tokens the model was trained to read (its published `max_seq_length`), for the
    /// long-context models; the model directory's own setting is what seamcut uses.
    #[serde(default)]
    pub window: Option<usize>,
    /// The dimensions a Matryoshka model was trained to be cut to (`--dims`).
    #[serde(default)]
    pub matryoshka: Vec<usize>,
    #[serde(default)]
    pub notes: Option<String>,
}

#[derive(Deserialize)]
struct Catalog {
    models: Vec<CatalogEntry>,
}

/// The built-in catalog.
#[must_use]
pub fn catalog() -> Vec<CatalogEntry> {
    let c: Catalog =
        serde_json::from_str(include_str!("../models/catalog.json")).expect("models/catalog.json parses");
    c.models
}

/// Where seamcut's `models/` folder is: `$SEAMCUT_MODELS`, else the repository it was built
/// from, else `models/` beside the executable or one of its parents.
#[must_use]
pub fn models_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SEAMCUT_MODELS") {
        return PathBuf::from(d);
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    if built.is_dir() {
        return built;
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(4) {
            let m = dir.join("models");
            if m.join("catalog.json").is_file() {
                return m;
            }
        }
    }
    PathBuf::from("models")
}

/// Files a model directory may need, fetched from the hub when the model is remote.
const HUB_FILES: [(&str, bool); 7] = [
    ("config.json", true),
    ("tokenizer.json", true),
    ("model.safetensors", true),
    ("modules.json", false),
    ("sentence_bert_config.json", false),
    ("1_Pooling/config.json", false),
    // The window of a model whose sentence-transformers config does not give one.
    ("tokenizer_config.json", false),
];

/// Resolve a `--model` value to a local directory, downloading from the hub if needed.
///
/// # Errors
/// When the name is neither a catalog name, a directory nor a reachable hub id.
pub fn resolve(spec: &str) -> Result<PathBuf> {
    let local = models_dir().join(spec);
    if let Some(entry) = catalog().into_iter().find(|e| e.name == spec) {
        if local.is_dir() {
            return Ok(local);
        }
        return match entry.hub {
            Some(hub) => from_hub(&hub),
            None => Err(Error::model(spec, format!("not found at {}", local.display()))),
        };
    }
    let p = Path::new(spec);
    if p.is_dir() {
        return Ok(p.to_path_buf());
    }
    if p.exists() {
        return Err(Error::model(spec, "is a file; give the model's directory"));
    }
    if spec.split('/').count() == 2 && !spec.starts_with('.') && !spec.starts_with('/') {
        return from_hub(spec);
    }
    Err(Error::model(spec, "no such directory, catalog name or hub id (org/name)"))
}

fn from_hub(id: &str) -> Result<PathBuf> {
    let offline = std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    let cache = hf_hub::Cache::from_env();
    let repo = cache.model(id.to_string());
    let mut dir: Option<PathBuf> = None;
    let mut missing = Vec::new();
    for (file, required) in HUB_FILES {
        let path = match repo.get(file) {
            Some(p) => Some(p),
            None if offline => None,
            None => fetch(id, file).ok(),
        };
        match path {
            // Every file of a snapshot lives under one folder; config.json is at its root.
            Some(p) if dir.is_none() => {
                dir = p.parent().map(|d| {
                    if file.contains('/') {
                        d.parent().unwrap_or(d).to_path_buf()
                    } else {
                        d.to_path_buf()
                    }
                });
            }
            Some(_) => {}
            None if required => missing.push(file),
            None => {}
        }
    }
    if !missing.is_empty() {
        let why = if offline {
            format!(
                "HF_HUB_OFFLINE is set and {} not in the cache ({})",
                missing.join(", "),
                cache.path().display()
            )
        } else {
            format!(
                "could not download {} from the hub (no network? set HF_HUB_OFFLINE=1 to use the cache only)",
                missing.join(", ")
            )
        };
        return Err(Error::model(id, why));
    }
    dir.ok_or_else(|| Error::model(id, "nothing found on the hub"))
}

fn fetch(id: &str, file: &str) -> std::result::Result<PathBuf, String> {
    let api =
        hf_hub::api::sync::ApiBuilder::from_env().with_progress(false).build().map_err(|e| e.to_string())?;
    api.model(id.to_string()).get(file).map_err(|e| e.to_string())
}

/// Load a model from a `--model` value. `default` is the static model compiled into the
/// binary (the same files as `models/default`).
///
/// # Errors
/// One line naming the model and what is wrong with it.
pub fn load(spec: &str, compute: &Compute) -> Result<Box<dyn Embedder>> {
    if spec == "default" {
        return Ok(Box::new(StaticEmbedder::builtin_default()?));
    }
    let dir = resolve(spec)?;
    load_dir(&dir, compute)
}

/// Which model to load and where to run it: what a chunker spec and the embedding commands
/// share, parsed once into types (a misspelt device or dtype is an error where it is read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// A catalog name, a model directory or a hub id (`default`: the built-in static model).
    pub model: String,
    pub device: DeviceSpec,
    pub dtype: Precision,
    /// The prompt in front of every text ([`crate::embed::tuned`]).
    pub prompt: PromptChoice,
    /// Keep this many of the vectors' first dimensions (Matryoshka models); `None`: all.
    pub dims: Option<usize>,
}

impl Default for ModelSpec {
    fn default() -> Self {
        Self {
            model: "default".into(),
            device: DeviceSpec::Auto,
            dtype: Precision::F32,
            prompt: PromptChoice::Auto,
            dims: None,
        }
    }
}

impl ModelSpec {
    /// The device and dtype, resolved.
    ///
    /// # Errors
    /// A device not compiled in or not present, or a dtype it cannot run.
    pub fn compute(&self) -> Result<Compute> {
        Compute::new(self.device, self.dtype)
    }

    /// The model for documents ([`Self::load_for`] with [`Role::Document`]): what chunkers and
    /// chunk vectors use.
    ///
    /// # Errors
    /// As [`Self::load_for`].
    pub fn load(&self) -> Result<std::sync::Arc<Model>> {
        self.load_for(Role::Document)
    }

    /// The model, loaded once per process ([`load_shared`]), with the prompt this spec and
    /// `role` pick and its dimension cut ([`Tuned`]).
    ///
    /// # Errors
    /// As [`Self::compute`] and [`load`]; a prompt name the model lacks, or `dims` past its
    /// dimension.
    pub fn load_for(&self, role: Role) -> Result<std::sync::Arc<Model>> {
        let base = load_shared(&self.model, &self.compute()?)?;
        let prompt = base.embedder.prompts().resolve(&self.prompt, role)?;
        let embedder = Tuned::wrap(base.embedder.clone(), prompt, self.dims)?;
        if std::sync::Arc::ptr_eq(&embedder, &base.embedder) {
            return Ok(base); // nothing to apply: the shared model itself
        }
        Ok(std::sync::Arc::new(Model {
            embedder,
            fingerprint: base.fingerprint.clone(),
            name: base.name.clone(),
        }))
    }
}

/// A loaded model with what identifies it: the embedder, shared between threads and
/// chunkers, and the fingerprint of its weights.
pub struct Model {
    pub embedder: std::sync::Arc<dyn Embedder>,
    /// [`fingerprint`] of its `model.safetensors`; `None` if it could not be read.
    pub fingerprint: Option<String>,
    /// The `--model` value it was loaded from.
    pub name: String,
}

impl Model {
    /// The catalog entry whose calibration applies to this model, and how it was matched:
    /// first by the weights' fingerprint (so a model gets its calibration whatever path or
    /// name it is given), then by catalog name or hub id as typed.
    #[must_use]
    pub fn calibration(&self) -> Option<(CatalogEntry, &'static str)> {
        let cat = catalog();
        if let Some(fp) = &self.fingerprint {
            if let Some(e) = cat.iter().find(|e| e.fingerprints.iter().any(|f| f == fp)) {
                return Some((e.clone(), "weights fingerprint"));
            }
        }
        cat.into_iter()
            .find(|e| e.name == self.name || e.hub.as_deref() == Some(self.name.as_str()))
            .map(|e| (e, "catalog name"))
    }
}

impl Model {
    /// The late pass's defaults for this model, for chunks of at most `cap` tokens (`None`: no
    /// cap): the catalog's measured window and stride where its entry has them
    /// ([`Self::calibration`]), else [`LateOptions::for_model`]. Where the entry names the
    /// length the model was trained on (`trained_tokens`, special tokens included) and `cap`
    /// is longer, the window is that length and the stride half of it: on the broad
    /// benchmark, all-MiniLM-L6-v2 (trained on 128 tokens) gave better chunk vectors with
    /// windows of 126 tokens every 63 than 254 every 127 at cap 256, and slightly worse ones
    /// with the recipe at cap 128 (benches/RESULTS.md, twenty-second session). A catalog
    /// window longer than this copy of the model takes is cut to what it takes, and the
    /// stride to the window.
    #[must_use]
    pub fn late_options(&self, cap: Option<usize>) -> LateOptions {
        let mut o = LateOptions::for_model(self.embedder.as_ref());
        if let Some((entry, _)) = self.calibration() {
            let (pre, post) = self.embedder.special_ids();
            let specials = pre.len() + post.len();
            let limit = self.embedder.max_tokens().map_or(usize::MAX, |m| m.saturating_sub(specials));
            let trained = entry.trained_tokens.filter(|&t| cap.is_none_or(|c| c > t));
            if let Some(w) = trained.map(|t| t.saturating_sub(specials)).or(entry.late_window) {
                o.window = w.min(limit).max(1);
                o.stride = o.window.div_ceil(2);
            }
            if let Some(s) = entry.late_stride {
                o.stride = s;
            }
            o.stride = o.stride.clamp(1, o.window);
        }
        o
    }
}

/// Load a model once per process: later calls with the same `--model` value, device and
/// dtype share the first load (eval sweeps, many chunkers, Python workers). Models stay
/// loaded until the process ends.
///
/// # Errors
/// As [`load`].
pub fn load_shared(spec: &str, compute: &Compute) -> Result<std::sync::Arc<Model>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Cache = Mutex<HashMap<(String, String), Arc<Model>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (spec.to_string(), compute.describe());
    let cache = CACHE.get_or_init(Default::default);
    if let Some(m) = cache.lock().map_err(|_| poisoned())?.get(&key) {
        return Ok(m.clone());
    }
    // Load outside the lock: a slow load must not block other models.
    let embedder: Arc<dyn Embedder> = load(spec, compute)?.into();
    let fingerprint = if spec == "default" {
        Some(fingerprint_bytes(StaticEmbedder::builtin_default_weights()))
    } else {
        resolve(spec).ok().and_then(|d| fingerprint_file(&d.join("model.safetensors")).ok())
    };
    let model = Arc::new(Model { embedder, fingerprint, name: spec.to_string() });
    Ok(cache.lock().map_err(|_| poisoned())?.entry(key).or_insert(model).clone())
}

fn poisoned() -> Error {
    Error::Internal("the model cache was poisoned by a panic in another thread".into())
}

/// Bytes of a weights file's data that go into its fingerprint, after the header.
const FINGERPRINT_DATA: usize = 1 << 20;

/// A model's identity: the first 16 hex digits of SHA-256 over a safetensors file's length,
/// its header (tensor names, shapes, dtypes, offsets) and the first MiB of its tensor data.
/// Cheap (reads ~1 MiB), stable across copies and paths, and different for a fine-tuned
/// model of the same shape (its data differs), which a header alone would not tell apart.
#[must_use]
pub fn fingerprint_bytes(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hlen = bytes.get(..8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or_default()) as usize);
    let end = (8 + hlen).saturating_add(FINGERPRINT_DATA).min(bytes.len());
    let mut h = Sha256::new();
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(&bytes[..end]);
    h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// [`fingerprint_bytes`] of a file, reading only what it needs.
///
/// # Errors
/// If the file cannot be read.
pub fn fingerprint_file(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut n = [0u8; 8];
    f.read_exact(&mut n).map_err(|e| Error::io(path, e))?;
    let hlen = u64::from_le_bytes(n);
    let want = (8 + hlen).saturating_add(FINGERPRINT_DATA as u64).min(len) - 8;
    let mut rest = Vec::with_capacity(want as usize);
    f.take(want).read_to_end(&mut rest).map_err(|e| Error::io(path, e))?;
    let mut h = Sha256::new();
    h.update(len.to_le_bytes());
    h.update(n);
    h.update(&rest);
    Ok(h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// Load a model directory, choosing the loader by its contents.
///
/// # Errors
/// One line naming the directory and what is wrong with it.
pub fn load_dir(dir: &Path, compute: &Compute) -> Result<Box<dyn Embedder>> {
    if !dir.is_dir() {
        return Err(Error::model(dir.display(), "no such directory"));
    }
    if is_static_model(dir) {
        return Ok(Box::new(StaticEmbedder::load(dir)?));
    }
    let has_config = dir.join("config.json").is_file();
    if has_config {
        let kind = model_type(dir)?;
        if !kind.is_empty() {
            return Ok(Box::new(BertEmbedder::load(dir, compute)?));
        }
    }
    if !dir.join("model.safetensors").is_file() {
        return Err(Error::model(dir.display(), "missing model.safetensors"));
    }
    if has_config {
        return Err(Error::model(
            dir.display(),
            "config.json names no model_type and model.safetensors has no \"embeddings\" tensor",
        ));
    }
    Err(Error::model(dir.display(), "missing config.json"))
}
