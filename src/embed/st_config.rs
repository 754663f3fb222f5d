//! A sentence-transformers model directory's configuration, read once for every encoder that
//! loads one: `modules.json` (which modules run, in order: the Pooling, Dense heads after it),
//! the Pooling module's mode, the window (`sentence_bert_config.json`'s `max_seq_length`, or
//! `tokenizer_config.json`'s `model_max_length`), the prompts
//! (`config_sentence_transformers.json`), and the `tokenizer.json` they share.
//!
//! It stands below the encoders ([`super::bert`], [`super::dense`], [`super::static_model`]):
//! they read their directories through it and it knows none of them.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use tokenizers::Tokenizer;

use super::tuned::Prompts;
use crate::{Error, Result};

/// How token vectors become one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    Mean,
    Cls,
    /// The last token's state (a decoder's: Qwen3-Embedding); each sequence ends with the EOS
    /// its tokenizer appends.
    LastToken,
}

/// What a sentence-transformers directory says about how its vectors are made.
pub(crate) struct StConfig {
    pub pooling: Pooling,
    /// The Dense heads' directories, in `modules.json`'s order ([`super::dense`]).
    pub dense: Vec<PathBuf>,
    /// sentence-transformers' `max_seq_length` (older versions keep it in
    /// `sentence_bert_config.json`, newer in `tokenizer_config.json`'s `model_max_length`).
    pub max_seq_length: Option<usize>,
    pub prompts: Prompts,
}

impl StConfig {
    /// Read `dir`'s configuration; a file that is absent takes sentence-transformers' default.
    ///
    /// # Errors
    /// A file that is present but not valid, or a module, pooling mode or head that seamcut
    /// does not run.
    pub fn read(dir: &Path) -> Result<Self> {
        let (pooling, dense) = modules_of(dir)?;
        let sbert: Option<SbertConfig> = if dir.join("sentence_bert_config.json").is_file() {
            Some(read_json(dir, "sentence_bert_config.json")?)
        } else {
            None
        };
        let prompts: Prompts = if dir.join("config_sentence_transformers.json").is_file() {
            read_json(dir, "config_sentence_transformers.json")?
        } else {
            Prompts::default()
        };
        let from_tokenizer_config = || -> Option<usize> {
            #[derive(Deserialize)]
            struct Tc {
                model_max_length: Option<f64>,
            }
            let tc: Tc = read_json(dir, "tokenizer_config.json").ok()?;
            tc.model_max_length.filter(|m| *m >= 1.0 && *m < 1e6).map(|m| m as usize)
        };
        let max_seq_length = sbert.and_then(|s| s.max_seq_length).or_else(from_tokenizer_config);
        Ok(Self { pooling, dense, max_seq_length, prompts })
    }
}

#[derive(Deserialize)]
struct StModule {
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
    /// sentence-transformers 6: one mode (`"mean"`, `"cls"`, `"lasttoken"`, ...) or a list of
    /// them (concatenated), in place of the `pooling_mode_*` flags.
    #[serde(default)]
    pooling_mode: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct SbertConfig {
    max_seq_length: Option<usize>,
}

pub(crate) fn read_json<T: serde::de::DeserializeOwned>(dir: &Path, file: &str) -> Result<T> {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::model(dir.display(), format!("cannot read {file}: {e}")))?;
    serde_json::from_str(&text).map_err(|e| Error::model(dir.display(), format!("{file} is not valid: {e}")))
}

pub(crate) fn load_tokenizer(dir: &Path) -> Result<Tokenizer> {
    let path = dir.join("tokenizer.json");
    if !path.is_file() {
        return Err(Error::model(dir.display(), "missing tokenizer.json"));
    }
    let mut t = crate::tokenizer_json::from_file(&path)
        .map_err(|e| Error::model(dir.display(), format!("tokenizer.json is not valid: {e}")))?;
    let _ = t.with_truncation(None);
    t.with_padding(None);
    Ok(t)
}

/// Is this a transformer encoder directory we can load (by `config.json`)?
pub(crate) fn model_type(dir: &Path) -> Result<String> {
    #[derive(Deserialize)]
    struct T {
        model_type: Option<String>,
    }
    let t: T = read_json(dir, "config.json")?;
    Ok(t.model_type.unwrap_or_default())
}

/// The pooling, and the Dense heads' directories in order ([`super::dense`]), from
/// `modules.json`.
fn modules_of(dir: &Path) -> Result<(Pooling, Vec<PathBuf>)> {
    let mut pool_dir: Option<PathBuf> = None;
    let mut dense = Vec::new();
    if dir.join("modules.json").is_file() {
        let modules: Vec<StModule> = read_json(dir, "modules.json")?;
        // A module seamcut does not run would change every vector: refused, rather than
        // skipped. Normalize is what seamcut always does.
        let name = |m: &StModule| m.kind.rsplit('.').next().unwrap_or_default().to_string();
        let mut pooled = false;
        for m in &modules {
            match name(m).as_str() {
                "Transformer" | "Normalize" => {}
                "Pooling" => pooled = true,
                "Dense" if pooled => dense.push(dir.join(&m.path)),
                other => {
                    let what = if other == "Dense" { "a Dense module before the Pooling" } else { other };
                    return Err(Error::model(
                        dir.display(),
                        format!(
                            "modules.json names {what} ({}), which seamcut does not run (supported: Transformer, Pooling, Dense heads after it, Normalize)",
                            m.kind
                        ),
                    ));
                }
            }
        }
        if let Some(m) = modules.iter().find(|m| m.kind.ends_with("Pooling")) {
            pool_dir = Some(dir.join(&m.path));
        }
    } else if dir.join("1_Pooling/config.json").is_file() {
        pool_dir = Some(dir.join("1_Pooling"));
    }
    Ok((pooling_of(dir, pool_dir)?, dense))
}

fn pooling_of(dir: &Path, pool_dir: Option<PathBuf>) -> Result<Pooling> {
    let Some(pd) = pool_dir else {
        return Ok(Pooling::Mean); // no sentence-transformers metadata: mean, the common default
    };
    let cfg: PoolingConfig = read_json(&pd, "config.json")?;
    let unsupported = |m: &str| {
        Error::model(dir.display(), format!("unsupported pooling ({m}); supported: mean, cls, lasttoken"))
    };
    if let Some(mode) = &cfg.pooling_mode {
        let modes: Vec<&str> = match mode {
            serde_json::Value::String(m) => vec![m.as_str()],
            serde_json::Value::Array(a) => a.iter().filter_map(serde_json::Value::as_str).collect(),
            _ => vec![],
        };
        return match modes.as_slice() {
            ["mean"] => Ok(Pooling::Mean),
            ["cls"] => Ok(Pooling::Cls),
            ["lasttoken"] => Ok(Pooling::LastToken),
            _ => Err(unsupported(&mode.to_string())),
        };
    }
    if cfg.pooling_mode_max_tokens
        || cfg.pooling_mode_mean_sqrt_len_tokens
        || cfg.pooling_mode_weightedmean_tokens
    {
        return Err(unsupported("max, mean-sqrt-len or weighted mean"));
    }
    if cfg.pooling_mode_lasttoken && !cfg.pooling_mode_cls_token && !cfg.pooling_mode_mean_tokens {
        return Ok(Pooling::LastToken);
    }
    Ok(if cfg.pooling_mode_cls_token && !cfg.pooling_mode_mean_tokens { Pooling::Cls } else { Pooling::Mean })
}
