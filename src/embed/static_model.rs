//! Static embedding models in the model2vec format: `model.safetensors` holding an
//! `embeddings` matrix `[vocab, dim]` (f32, f16 or bf16), optionally `weights` `[vocab]`
//! (per-token scale) and `mapping` `[vocab]` (token id → row), plus `tokenizer.json` and
//! `config.json` (`normalize`, `max_length`). Published potion models load as they are.
//!
//! A text's vector is the mean of its tokens' rows (tokens without special tokens, unknown
//! tokens dropped, as model2vec does), L2-normalised.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;
use tokenizers::Tokenizer;

use super::st_config::{load_tokenizer, read_json};
use super::{normalize, Embedder, FlatBatch};
use crate::wordpiece::TextTokenizer;
use crate::{Error, Result};

/// The embedding matrix, `vocab × dim`.
enum Matrix {
    F32(Vec<f32>),
    /// The built-in model's float16 rows, read in place from the binary: no 29 MB float32
    /// copy to allocate and convert at start-up (most of a small job's start-up time).
    F16(&'static [half::f16]),
}

/// The bytes of the built-in model, aligned so that its float16 tensor can be read in place
/// (safetensors pads its header to 8 bytes).
#[repr(C, align(64))]
struct Aligned<T: ?Sized>(T);
static BUILTIN: &Aligned<[u8]> = &Aligned(*include_bytes!("../../models/default/model.safetensors"));

pub struct StaticEmbedder {
    matrix: Matrix,
    rows: usize,
    dim: usize,
    weights: Option<Vec<f32>>,
    mapping: Option<Vec<usize>>,
    tokenizer: TextTokenizer,
    unk_id: Option<u32>,
    max_length: Option<usize>,
    name: String,
    /// The f16 matrix as f32, made once this model has embedded as many tokens as it has
    /// rows: per token, converting its row cost 11% of a 3.7 MB job; converting the matrix
    /// once costs a few milliseconds and 29 MB, which a small job never pays. Exact either way.
    wide: std::sync::OnceLock<Vec<f32>>,
    /// Tokens embedded so far (for `wide`).
    seen: std::sync::atomic::AtomicUsize,
}

#[derive(Deserialize, Default)]
struct StaticConfig {
    #[serde(default)]
    max_length: Option<usize>,
}

fn to_f32(dir: &str, name: &str, view: &safetensors::tensor::TensorView<'_>) -> Result<Vec<f32>> {
    let b = view.data();
    Ok(match view.dtype() {
        Dtype::F32 => b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        Dtype::F16 => b.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
        Dtype::BF16 => b.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
        Dtype::F64 => b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap()) as f32).collect(),
        Dtype::I8 => b.iter().map(|&x| f32::from(x as i8)).collect(),
        other => return Err(Error::model(dir, format!("tensor {name:?} has unsupported dtype {other:?}"))),
    })
}

fn to_index(dir: &str, view: &safetensors::tensor::TensorView<'_>) -> Result<Vec<usize>> {
    let b = view.data();
    Ok(match view.dtype() {
        Dtype::I64 => b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as usize).collect(),
        Dtype::I32 => b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as usize).collect(),
        Dtype::U32 => b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as usize).collect(),
        other => {
            return Err(Error::model(dir, format!("tensor \"mapping\" has unsupported dtype {other:?}")))
        }
    })
}

/// Does `dir` hold a model2vec static model (a safetensors file with an `embeddings` tensor)?
pub(crate) fn is_static_model(dir: &Path) -> bool {
    super::tensor_names(&dir.join("model.safetensors"))
        .is_ok_and(|names| names.iter().any(|n| n == "embeddings"))
}

impl StaticEmbedder {
    /// Load a model2vec directory.
    ///
    /// # Errors
    /// One line naming the directory and the problem (missing file, corrupt safetensors,
    /// shapes that do not agree with the tokenizer).
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join("model.safetensors");
        let bytes = std::fs::read(&path)
            .map_err(|e| Error::model(dir.display(), format!("cannot read model.safetensors: {e}")))?;
        let tokenizer = load_tokenizer(dir)?;
        let cfg: StaticConfig = if dir.join("config.json").is_file() {
            read_json(dir, "config.json")?
        } else {
            StaticConfig::default()
        };
        Self::from_parts(&dir.display().to_string(), &bytes, tokenizer, cfg.max_length, true)
    }

    /// The default model, compiled into the binary (`models/default`), so that a binary
    /// copied elsewhere or installed with `cargo install` needs no model files.
    ///
    /// # Errors
    /// Never for the shipped model (a test loads it); kept fallible like every loader.
    pub fn builtin_default() -> Result<Self> {
        let model: &'static [u8] = &BUILTIN.0;
        static TOKENIZER: &[u8] = include_bytes!("../../models/default/tokenizer.json");
        static CONFIG: &str = include_str!("../../models/default/config.json");
        let label = "default (built in)";
        let mut t = crate::tokenizer_json::from_bytes(TOKENIZER)
            .map_err(|e| Error::model(label, format!("tokenizer.json is not valid: {e}")))?;
        let _ = t.with_truncation(None);
        t.with_padding(None);
        let cfg: StaticConfig = serde_json::from_str(CONFIG)
            .map_err(|e| Error::model(label, format!("config.json is not valid: {e}")))?;
        let mut e = Self::from_parts(label, model, t, cfg.max_length, false)?;
        let st = SafeTensors::deserialize(model).map_err(|err| Error::model(label, err.to_string()))?;
        let emb = st.tensor("embeddings").map_err(|err| Error::model(label, err.to_string()))?;
        let data: &'static [u8] = emb.data();
        e.matrix = match (emb.dtype(), data.as_ptr().align_offset(2), cfg!(target_endian = "little")) {
            // SAFETY: f16 is a transparent u16; the bytes are 2-aligned (checked), live for
            // the program, and are little-endian f16 values on a little-endian host.
            (Dtype::F16, 0, true) => Matrix::F16(unsafe {
                std::slice::from_raw_parts(data.as_ptr().cast::<half::f16>(), data.len() / 2)
            }),
            _ => Matrix::F32(to_f32(label, "embeddings", &emb)?),
        };
        Ok(e)
    }

    /// The bytes of the built-in default model's `model.safetensors` (for its fingerprint).
    #[must_use]
    pub fn builtin_default_weights() -> &'static [u8] {
        &BUILTIN.0
    }

    /// The model from its safetensors bytes; `convert`: copy the matrix as float32 (else the
    /// caller sets it).
    fn from_parts(
        label: &str,
        bytes: &[u8],
        tokenizer: Tokenizer,
        max_length: Option<usize>,
        convert: bool,
    ) -> Result<Self> {
        let dir = label;
        let st = SafeTensors::deserialize(bytes)
            .map_err(|e| Error::model(dir, format!("model.safetensors is corrupt: {e}")))?;
        let emb = st
            .tensor("embeddings")
            .map_err(|_| Error::model(dir, "model.safetensors has no \"embeddings\" tensor"))?;
        let shape = emb.shape().to_vec();
        if shape.len() != 2 || shape[0] == 0 || shape[1] == 0 {
            return Err(Error::model(
                dir,
                format!("\"embeddings\" must be a 2-D matrix, has shape {shape:?}"),
            ));
        }
        let (rows, dim) = (shape[0], shape[1]);
        let matrix = Matrix::F32(if convert { to_f32(dir, "embeddings", &emb)? } else { Vec::new() });
        let vocab = crate::tokenizer_json::vocab_size_with_added(&tokenizer);
        let weights = match st.tensor("weights") {
            Ok(w) => Some(to_f32(dir, "weights", &w)?),
            Err(_) => None,
        };
        let mapping = match st.tensor("mapping") {
            Ok(m) => Some(to_index(dir, &m)?),
            Err(_) => None,
        };
        if mapping.is_none() && rows != vocab {
            return Err(Error::model(
                dir,
                format!("\"embeddings\" has {rows} rows but the tokenizer has {vocab} tokens (and there is no \"mapping\")"),
            ));
        }
        if let Some(m) = &mapping {
            if m.len() < vocab || m.iter().any(|&r| r >= rows) {
                return Err(Error::model(dir, "\"mapping\" does not fit the tokenizer and the embeddings"));
            }
        }
        if weights.as_ref().is_some_and(|w| w.len() < vocab) {
            return Err(Error::model(dir, "\"weights\" is shorter than the vocabulary"));
        }
        let unk_id = unk_token_id(&tokenizer);
        Ok(Self {
            matrix,
            rows,
            dim,
            weights,
            mapping,
            tokenizer: TextTokenizer::new(tokenizer),
            unk_id,
            max_length,
            name: format!("{label} (model2vec static, {rows}×{dim})"),
            wide: std::sync::OnceLock::new(),
            seen: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Rows in the embedding matrix.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.rows
    }
}

/// The unknown token's id, read from the tokenizer model (model2vec's `_get_unk_token_id`).
fn unk_token_id(t: &Tokenizer) -> Option<u32> {
    if let tokenizers::ModelWrapper::WordPiece(m) = t.get_model() {
        // The common case without serialising the vocabulary.
        return t.token_to_id(&m.unk_token);
    }
    let json = serde_json::to_value(t.get_model()).ok()?;
    let unk = json.get("unk_token")?.as_str()?;
    t.token_to_id(unk)
}

impl Embedder for StaticEmbedder {
    fn dim(&self) -> usize {
        self.dim
    }

    fn max_tokens(&self) -> Option<usize> {
        self.max_length
    }

    fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    fn special_ids(&self) -> (&[u32], &[u32]) {
        (&[], &[])
    }

    fn content_ids_from(&self, mut ids: Vec<u32>) -> Vec<u32> {
        if let Some(u) = self.unk_id {
            ids.retain(|&i| i != u);
        }
        ids
    }

    fn embed(&self, batch: &FlatBatch) -> Result<Vec<f32>> {
        use rayon::prelude::*;
        let d = self.dim;
        let mut out = vec![0f32; batch.len() * d];
        let seen =
            self.seen.fetch_add(batch.ids.len(), std::sync::atomic::Ordering::Relaxed) + batch.ids.len();
        // On CPUs that convert float16 in their vector units (AVX-512, or AVX2 with F16C), the
        // built-in matrix is summed straight from its f16 rows: half the memory read per token
        // and no f32 copy (29 MB to fault in and convert). Exact: the same products and sums.
        if let Matrix::F16(m) = &self.matrix {
            if let Some(sum) = f16_rows::summer() {
                let table = Table {
                    m,
                    d,
                    rows: self.rows,
                    mapping: self.mapping.as_deref(),
                    weights: self.weights.as_deref(),
                };
                out.par_chunks_mut(d).enumerate().with_min_len(64).for_each(|(i, row)| {
                    sum(row, batch.seq(i), &table);
                    normalize(row);
                });
                return Ok(out);
            }
        }
        let wide: Option<&[f32]> = match &self.matrix {
            // Converted in parallel outside the `OnceLock` (rayon inside `get_or_init` could run
            // another document's `embed` on the same worker and re-enter the initialisation);
            // two threads converting at once is wasted work, not a wrong result.
            Matrix::F16(m) if seen >= self.rows || self.wide.get().is_some() => {
                if self.wide.get().is_none() {
                    use half::slice::HalfFloatSliceExt;
                    let mut v = vec![0f32; m.len()];
                    v.par_chunks_mut(1 << 16)
                        .zip(m.par_chunks(1 << 16))
                        .for_each(|(o, h)| h.convert_to_f32_slice(o));
                    let _ = self.wide.set(v);
                }
                self.wide.get().map(Vec::as_slice)
            }
            _ => None,
        };
        // Sequences in parallel: a static model is all memory reads, no BLAS to spread them.
        out.par_chunks_mut(d).enumerate().with_min_len(64).for_each_init(
            || vec![0f32; d],
            |tmp, (i, row)| {
                let seq = batch.seq(i);
                let f32_matrix = match (&self.matrix, wide) {
                    (Matrix::F32(m), _) => Some(m.as_slice()),
                    (Matrix::F16(_), Some(m)) => Some(m),
                    (Matrix::F16(_), None) => None,
                };
                if let Some(m) = f32_matrix {
                    let table = Table {
                        m,
                        d,
                        rows: self.rows,
                        mapping: self.mapping.as_deref(),
                        weights: self.weights.as_deref(),
                    };
                    sum_rows(super::fused::simd_level(), row, seq, &table);
                    normalize(row);
                    return;
                }
                for &id in seq {
                    let id = id as usize;
                    let r = self.mapping.as_ref().map_or(id, |m| m.get(id).copied().unwrap_or(usize::MAX));
                    if r >= self.rows {
                        continue; // an id outside the matrix (a tokenizer with added tokens)
                    }
                    let w = self.weights.as_ref().map_or(1.0, |w| w.get(id).copied().unwrap_or(1.0));
                    let src: &[f32] = match (&self.matrix, wide) {
                        (Matrix::F32(m), _) => &m[r * d..(r + 1) * d],
                        (Matrix::F16(_), Some(m)) => &m[r * d..(r + 1) * d],
                        (Matrix::F16(m), None) => {
                            // F16C converts eight values an instruction.
                            use half::slice::HalfFloatSliceExt;
                            m[r * d..(r + 1) * d].convert_to_f32_slice(tmp);
                            tmp
                        }
                    };
                    for (o, v) in row.iter_mut().zip(src) {
                        *o += w * v;
                    }
                }
                // The mean's scale does not survive normalisation; only its direction matters.
                normalize(row);
            },
        );
        Ok(out)
    }

    fn content_ids_with_starts(&self, text: &str) -> (Vec<u32>, Vec<usize>) {
        // Unknown tokens dropped with their starts, as `content_ids_from` drops them.
        let (ids, starts) = self.tokenizer.ids_and_starts(text);
        ids.into_iter().zip(starts).filter(|&(i, _)| Some(i) != self.unk_id).unzip()
    }

    fn late_window(&self) -> Option<(usize, usize)> {
        // Tokens do not see each other: windows without overlap, as long as the model allows.
        let w = self.max_length.unwrap_or(512).max(1);
        Some((w, w))
    }

    fn token_states(&self, batch: &FlatBatch) -> Result<candle_core::Tensor> {
        use rayon::prelude::*;
        let d = self.dim;
        let mut out = vec![0f32; batch.ids.len() * d];
        // Each token's row times its weight: the terms `embed` sums (a zero row for an id
        // outside the matrix, which `embed` skips), so a span's mean has `embed`'s direction.
        out.par_chunks_mut(d).zip(batch.ids.par_iter()).with_min_len(256).for_each(|(row, &id)| {
            let id_u = id as usize;
            let r = self.mapping.as_ref().map_or(id_u, |m| m.get(id_u).copied().unwrap_or(usize::MAX));
            if r >= self.rows {
                return;
            }
            let w = self.weights.as_ref().map_or(1.0, |w| w.get(id_u).copied().unwrap_or(1.0));
            match &self.matrix {
                Matrix::F32(m) => {
                    for (o, v) in row.iter_mut().zip(&m[r * d..(r + 1) * d]) {
                        *o = w * v;
                    }
                }
                Matrix::F16(m) => {
                    for (o, v) in row.iter_mut().zip(&m[r * d..(r + 1) * d]) {
                        *o = w * v.to_f32();
                    }
                }
            }
        });
        Ok(candle_core::Tensor::from_vec(out, (batch.ids.len(), d), &candle_core::Device::Cpu)?)
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}

/// An embedding matrix (f32 or f16 rows) with its optional id → row mapping and per-token
/// weights.
struct Table<'a, T = f32> {
    m: &'a [T],
    d: usize,
    rows: usize,
    mapping: Option<&'a [usize]>,
    weights: Option<&'a [f32]>,
}

impl<T> Table<'_, T> {
    /// The row and weight of token `id`; `None` for an id outside the matrix.
    #[inline(always)]
    fn row_of(&self, id: u32) -> Option<(usize, f32)> {
        let id = id as usize;
        let r = match self.mapping {
            Some(m) => m.get(id).copied().unwrap_or(usize::MAX),
            None => id,
        };
        if r >= self.rows {
            return None;
        }
        let w = match self.weights {
            Some(w) => w.get(id).copied().unwrap_or(1.0),
            None => 1.0,
        };
        Some((r, w))
    }
}

/// Row sums straight from float16 rows, converted in the vector units (`vcvtph2ps`): written
/// with intrinsics because the compiler does not turn `half`'s per-value conversion into the
/// vector instruction. Products and sums are `row += w · v` in f32, as in [`sum_rows`].
mod f16_rows {
    use super::Table;

    pub type Summer = fn(&mut [f32], &[u32], &Table<'_, half::f16>);

    /// The widest f16 row summer this CPU runs, if any.
    pub fn summer() -> Option<Summer> {
        #[cfg(target_arch = "x86_64")]
        {
            let level = crate::embed::fused::simd_level();
            if level >= 2 {
                // SAFETY (of the call inside): AVX-512F was detected.
                return Some(|row, seq, t| unsafe { x86::sum_avx512(row, seq, t) });
            }
            if level >= 1 && std::arch::is_x86_feature_detected!("f16c") {
                // SAFETY: AVX2 and F16C were detected.
                return Some(|row, seq, t| unsafe { x86::sum_f16c(row, seq, t) });
            }
        }
        None
    }

    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use std::arch::x86_64::*;

        use super::Table;

        /// One token's row: 16 values a step, the tail one value at a time.
        #[target_feature(enable = "avx512f")]
        pub unsafe fn sum_avx512(row: &mut [f32], seq: &[u32], t: &Table<'_, half::f16>) {
            let d = t.d.min(row.len());
            for &id in seq {
                let Some((r, w)) = t.row_of(id) else { continue };
                let src = &t.m[r * t.d..r * t.d + d];
                let wv = _mm512_set1_ps(w);
                let mut c = 0;
                while c + 16 <= d {
                    // SAFETY: c + 16 ≤ d ≤ both lengths; unaligned loads and stores.
                    unsafe {
                        let h = _mm256_loadu_si256(src.as_ptr().add(c).cast());
                        let o = row.as_mut_ptr().add(c);
                        _mm512_storeu_ps(
                            o,
                            _mm512_add_ps(_mm512_loadu_ps(o), _mm512_mul_ps(wv, _mm512_cvtph_ps(h))),
                        );
                    }
                    c += 16;
                }
                for (o, v) in row[c..d].iter_mut().zip(&src[c..]) {
                    *o += w * v.to_f32();
                }
            }
        }

        /// As [`sum_avx512`], 8 values a step.
        #[target_feature(enable = "avx2,f16c")]
        pub unsafe fn sum_f16c(row: &mut [f32], seq: &[u32], t: &Table<'_, half::f16>) {
            let d = t.d.min(row.len());
            for &id in seq {
                let Some((r, w)) = t.row_of(id) else { continue };
                let src = &t.m[r * t.d..r * t.d + d];
                let wv = _mm256_set1_ps(w);
                let mut c = 0;
                while c + 8 <= d {
                    // SAFETY: c + 8 ≤ d ≤ both lengths; unaligned loads and stores.
                    unsafe {
                        let h = _mm_loadu_si128(src.as_ptr().add(c).cast());
                        let o = row.as_mut_ptr().add(c);
                        _mm256_storeu_ps(
                            o,
                            _mm256_add_ps(_mm256_loadu_ps(o), _mm256_mul_ps(wv, _mm256_cvtph_ps(h))),
                        );
                    }
                    c += 8;
                }
                for (o, v) in row[c..d].iter_mut().zip(&src[c..]) {
                    *o += w * v.to_f32();
                }
            }
        }
    }
}

seamcut_products::level_fn! {
    /// `row += weight(id) · matrix[row(id)]` for every id of `seq` (ids outside the matrix, a
    /// tokenizer's added tokens, are skipped), compiled for the CPU's widest vectors.
    fn sum_rows(row: &mut [f32], seq: &[u32], t: &Table<'_>) {
        for &id in seq {
            let Some((r, w)) = t.row_of(id) else { continue };
            for (o, v) in row.iter_mut().zip(&t.m[r * t.d..(r + 1) * t.d]) {
                *o += w * v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The f16 row summer (vector conversion) gives exactly the f32 path's sums over the same
    /// rows widened, with a mapping, weights, ids outside the matrix and a dimension that is
    /// not a multiple of the vector width.
    #[test]
    fn f16_rows_sum_exactly_as_f32_rows() {
        // Both vector summers where the CPU has them (AVX-512, then AVX2 + F16C).
        for level in [u8::MAX, 1] {
            crate::embed::fused::cap_simd(level);
            let sum = f16_rows::summer();
            crate::embed::fused::cap_simd(u8::MAX);
            match sum {
                Some(sum) => f16_rows_sum_with(sum),
                None => eprintln!("no f16 vector summer at level {level} on this CPU: not compared"),
            }
        }
    }

    fn f16_rows_sum_with(sum: f16_rows::Summer) {
        let (rows, d) = (40usize, 37usize);
        let m16: Vec<half::f16> =
            (0..rows * d).map(|i| half::f16::from_f32(((i * 7919) % 1000) as f32 / 250.0 - 2.0)).collect();
        let m32: Vec<f32> = m16.iter().map(|h| h.to_f32()).collect();
        let mapping: Vec<usize> = (0..50).map(|i| (i * 3) % 45).collect(); // some rows ≥ 40: skipped
        let weights: Vec<f32> = (0..50).map(|i| 0.5 + i as f32 / 17.0).collect();
        let seq: Vec<u32> = (0..120).map(|i| (i * 13) % 53).collect(); // some ids past the mapping
        for (map, wts) in [(None, None), (Some(&mapping[..]), Some(&weights[..]))] {
            let t16 = Table { m: &m16[..], d, rows, mapping: map, weights: wts };
            let t32 = Table { m: &m32[..], d, rows, mapping: map, weights: wts };
            let (mut a, mut b) = (vec![0f32; d], vec![0f32; d]);
            sum(&mut a, &seq, &t16);
            sum_rows(crate::embed::fused::simd_level(), &mut b, &seq, &t32);
            assert_eq!(a, b);
            assert!(a.iter().any(|&x| x != 0.0));
        }
    }
}
