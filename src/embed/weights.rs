//! A model's weights read from `model.safetensors` one tensor at a time, into buffers the
//! tensors then own.
//!
//! candle's memory-mapped loader copies every tensor out of the mapping, and the mapped pages
//! stay resident (counted in the process's RSS) until the loader is dropped at the end of the
//! load: the peak is twice the weights. Read here with positioned reads (`pread`) straight into
//! each tensor's own `Vec`, the peak is the weights plus the tensor being converted: for
//! ModernBERT-base 0.6 GB instead of 1.2 GB, which is most of what a single long text costs
//! (benches/RESULTS.md, the long-context table). candle offers no such backend, so this is one
//! (`candle_nn::var_builder::SimpleBackend`), on the header [`super::safetensors_header`] reads.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::VarBuilder;

use crate::{Error, Result};

/// Where one tensor lies in the file.
struct Entry {
    dtype: DType,
    shape: Vec<usize>,
    /// Byte offset in the file.
    at: u64,
    len: usize,
}

/// A safetensors file opened for reading tensor by tensor.
pub struct SafetensorsFile {
    file: File,
    tensors: HashMap<String, Entry>,
}

fn dtype_of(name: &str) -> Option<DType> {
    Some(match name {
        "F32" => DType::F32,
        "F16" => DType::F16,
        "BF16" => DType::BF16,
        "F64" => DType::F64,
        "U8" => DType::U8,
        "U32" => DType::U32,
        "I64" => DType::I64,
        _ => return None,
    })
}

impl SafetensorsFile {
    /// Open `path` and read its header (a truncated or corrupt file is one error naming it).
    ///
    /// # Errors
    /// As [`super::safetensors_header`]; a tensor of a dtype candle has no type for.
    pub fn open(path: &Path) -> Result<Self> {
        let meta = super::safetensors_header(path)?;
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut n = [0u8; 8];
        file.read_exact_at(&mut n, 0).map_err(|e| Error::io(path, e))?;
        let data = 8 + u64::from_le_bytes(n);
        let dir = path.parent().map_or_else(|| path.display().to_string(), |d| d.display().to_string());
        let mut tensors = HashMap::with_capacity(meta.len());
        for (name, v) in &meta {
            if name == "__metadata__" {
                continue;
            }
            let bad =
                || Error::model(&dir, format!("model.safetensors: tensor {name} has a bad header entry"));
            let dt = v.get("dtype").and_then(|d| d.as_str()).ok_or_else(bad)?;
            let dtype = dtype_of(dt).ok_or_else(|| {
                Error::model(
                    &dir,
                    format!("model.safetensors: tensor {name} is {dt}, which seamcut cannot load"),
                )
            })?;
            let shape: Vec<usize> = v
                .get("shape")
                .and_then(|s| s.as_array())
                .ok_or_else(bad)?
                .iter()
                .map(|d| d.as_u64().map(|d| d as usize))
                .collect::<Option<_>>()
                .ok_or_else(bad)?;
            let offs = v.get("data_offsets").and_then(|o| o.as_array()).ok_or_else(bad)?;
            let (a, b) = match (offs.first().and_then(|x| x.as_u64()), offs.get(1).and_then(|x| x.as_u64())) {
                (Some(a), Some(b)) if a <= b => (a, b),
                _ => return Err(bad()),
            };
            let len = (b - a) as usize;
            if len != shape.iter().product::<usize>() * dtype.size_in_bytes() {
                return Err(Error::model(
                    &dir,
                    format!("model.safetensors: tensor {name}'s size does not match its shape"),
                ));
            }
            tensors.insert(name.clone(), Entry { dtype, shape, at: data + a, len });
        }
        Ok(Self { file, tensors })
    }

    /// The tensor `name` as stored, on `dev`.
    fn read(&self, name: &str, dev: &Device) -> candle_core::Result<Tensor> {
        let e = self
            .tensors
            .get(name)
            .ok_or_else(|| candle_core::Error::CannotFindTensor { path: name.to_string() }.bt())?;
        fn typed<T: candle_core::WithDType + Default + Clone>(
            f: &File,
            e: &Entry,
            dev: &Device,
        ) -> candle_core::Result<Tensor> {
            let mut v = vec![T::default(); e.len / std::mem::size_of::<T>()];
            // SAFETY: the bytes of `v`'s elements, exactly `e.len` of them; every bit pattern is a
            // valid value of these plain number types, and safetensors stores them little-endian,
            // as this (x86-64, aarch64) host does.
            let bytes = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), e.len) };
            f.read_exact_at(bytes, e.at)?;
            Tensor::from_vec(v, e.shape.as_slice(), dev)
        }
        let f = &self.file;
        match e.dtype {
            DType::F32 => typed::<f32>(f, e, dev),
            DType::F16 => typed::<half::f16>(f, e, dev),
            DType::BF16 => typed::<half::bf16>(f, e, dev),
            DType::F64 => typed::<f64>(f, e, dev),
            DType::U8 => typed::<u8>(f, e, dev),
            DType::U32 => typed::<u32>(f, e, dev),
            DType::I64 => typed::<i64>(f, e, dev),
            other => candle_core::bail!("tensor {name}: dtype {other:?} is not read"),
        }
    }

    /// An f32 tensor read as bf16, converted a slice at a time as it is read (rounded to the
    /// nearest, as candle's `to_dtype` rounds), so the f32 copy is never whole: reading the
    /// token table of Qwen3-Embedding-0.6B whole would hold 0.62 GB of f32 beside its 0.31 GB
    /// of bf16 ([`super::layers::TokenTable`]).
    fn read_bf16(&self, e: &Entry, dev: &Device) -> candle_core::Result<Tensor> {
        /// f32 values per read: 4 MiB.
        const SLICE: usize = 1 << 20;
        let n = e.len / 4;
        let mut out = Vec::with_capacity(n);
        let mut buf = vec![0f32; SLICE.min(n)];
        for at in (0..n).step_by(SLICE) {
            let part = &mut buf[..SLICE.min(n - at)];
            // SAFETY: the bytes of `part`'s f32s; every bit pattern is a valid f32, stored
            // little-endian as on this host (see `read`).
            let bytes =
                unsafe { std::slice::from_raw_parts_mut(part.as_mut_ptr().cast::<u8>(), part.len() * 4) };
            self.file.read_exact_at(bytes, e.at + 4 * at as u64)?;
            out.extend(part.iter().map(|&x| half::bf16::from_f32(x)));
        }
        Tensor::from_vec(out, e.shape.as_slice(), dev)
    }
}

impl SimpleBackend for SafetensorsFile {
    fn get(
        &self,
        s: Shape,
        name: &str,
        _: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        let t = self.read(name, dev)?;
        if t.shape() != &s {
            return Err(candle_core::Error::UnexpectedShape {
                msg: format!("shape mismatch for {name}"),
                expected: s,
                got: t.shape().clone(),
            }
            .bt());
        }
        t.to_dtype(dtype)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        match self.tensors.get(name) {
            Some(e) if e.dtype == DType::F32 && dtype == DType::BF16 => self.read_bf16(e, dev),
            _ => self.read(name, dev)?.to_dtype(dtype),
        }
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }
}

/// A [`VarBuilder`] over `path`'s tensors, read as they are asked for, converted to `dtype`
/// on `device`.
///
/// # Errors
/// As [`SafetensorsFile::open`].
pub fn var_builder(path: &Path, dtype: DType, device: &Device) -> Result<VarBuilder<'static>> {
    Ok(VarBuilder::from_backend(Box::new(SafetensorsFile::open(path)?), dtype, device.clone()))
}

/// Where an architecture's own tensor names start in a checkpoint: the prefixes its
/// checkpoints put before them (`bert.`, `model.`, a remote-code model's `nomic_bert.`), each
/// told by one tensor that every checkpoint of the architecture has. One table per architecture
/// (`CHECKPOINT` in each model file), read by [`Checkpoint::root`].
pub struct Checkpoint {
    pub prefixes: &'static [&'static str],
    /// A tensor's name below the prefix (`embeddings.word_embeddings.weight`).
    pub probe: &'static str,
}

impl Checkpoint {
    /// `vb` moved under the first prefix the checkpoint has, or left at the root.
    #[must_use]
    pub fn root<'a>(&self, vb: VarBuilder<'a>) -> VarBuilder<'a> {
        match self.prefixes.iter().find(|p| vb.contains_tensor(&format!("{p}.{}", self.probe))) {
            Some(p) => vb.pp(*p),
            None => vb,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_read_one_by_one_equal_candles_own_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        let a = Tensor::arange(0f32, 12.0, &Device::Cpu).unwrap().reshape((3, 4)).unwrap();
        let b = Tensor::new(&[1.5f32, -2.0], &Device::Cpu).unwrap().to_dtype(DType::BF16).unwrap();
        candle_core::safetensors::save(
            &HashMap::from([("a".to_string(), a.clone()), ("b".to_string(), b)]),
            &path,
        )
        .unwrap();
        let vb = var_builder(&path, DType::F32, &Device::Cpu).unwrap();
        assert_eq!(vb.get((3, 4), "a").unwrap().to_vec2::<f32>().unwrap(), a.to_vec2::<f32>().unwrap());
        assert_eq!(vb.get(2, "b").unwrap().to_vec1::<f32>().unwrap(), vec![1.5, -2.0]);
        assert!(vb.contains_tensor("a") && !vb.contains_tensor("c"));
        assert!(vb.get((4, 3), "a").is_err());
        assert!(vb.get(1, "c").is_err());
    }

    /// An f32 tensor asked for as bf16 is converted slice by slice as it is read, to the bits
    /// candle's own conversion gives, across a slice's edge (over 2²⁰ values).
    #[test]
    fn f32_read_as_bf16_equals_candles_conversion() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        let n = (1 << 20) + 37;
        let v: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.618_034).sin() * (1.0 + (i % 7) as f32)).collect();
        let a = Tensor::from_vec(v, n, &Device::Cpu).unwrap();
        candle_core::safetensors::save(&HashMap::from([("a".to_string(), a.clone())]), &path).unwrap();
        let vb = var_builder(&path, DType::F32, &Device::Cpu).unwrap();
        let got = vb.get_unchecked_dtype("a", DType::BF16).unwrap();
        assert_eq!(got.dtype(), DType::BF16);
        let want = a.to_dtype(DType::BF16).unwrap().to_vec1::<half::bf16>().unwrap();
        assert_eq!(got.to_vec1::<half::bf16>().unwrap(), want);
    }
}
