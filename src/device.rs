//! The one place where the compute device and dtype are chosen.
//!
//! Everything that creates tensors asks [`Compute`] for its device and dtype; no other
//! module names `Device::Cpu` or a CUDA ordinal. `auto` picks CUDA, then Metal, then CPU,
//! depending on what the binary was built with (`--features cuda|metal`) and what is present.

use candle_core::{DType, Device};

use crate::{Error, Result};

/// Where to run, as the CLI's `--device` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceSpec {
    #[default]
    Auto,
    Cpu,
    Cuda(usize),
    Metal(usize),
}

impl DeviceSpec {
    /// Parse `auto`, `cpu`, `cuda`, `cuda:N`, `metal`, `metal:N`.
    ///
    /// # Errors
    /// On anything else.
    pub fn parse(s: &str) -> Result<Self> {
        let (kind, ordinal) = match s.split_once(':') {
            Some((k, n)) => (
                k,
                n.parse::<usize>()
                    .map_err(|_| Error::setting("device", format!("bad device ordinal in {s:?}")))?,
            ),
            None => (s, 0),
        };
        match kind {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "cuda" => Ok(Self::Cuda(ordinal)),
            "metal" => Ok(Self::Metal(ordinal)),
            _ => Err(Error::setting(
                "device",
                format!("unknown device {s:?} (auto, cpu, cuda[:N], metal[:N])"),
            )),
        }
    }
}

impl std::fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Cpu => f.write_str("cpu"),
            Self::Cuda(0) => f.write_str("cuda"),
            Self::Cuda(n) => write!(f, "cuda:{n}"),
            Self::Metal(0) => f.write_str("metal"),
            Self::Metal(n) => write!(f, "metal:{n}"),
        }
    }
}

impl std::str::FromStr for DeviceSpec {
    type Err = String;

    /// [`Self::parse`], its error's message alone (the caller names the setting).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::parse(s).map_err(|e| e.message())
    }
}

/// Floating-point precision for model weights and activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    #[default]
    F32,
    F16,
    Bf16,
    /// int8 products on the CPU ([`crate::embed::int8`]): weights per output channel,
    /// activations per token, f32 everywhere else.
    Int8,
}

impl Precision {
    /// Parse `f32`, `f16`, `bf16`, `int8`.
    ///
    /// # Errors
    /// On anything else.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "f32" => Ok(Self::F32),
            "f16" => Ok(Self::F16),
            "bf16" => Ok(Self::Bf16),
            "int8" => Ok(Self::Int8),
            _ => Err(Error::setting("dtype", format!("unknown dtype {s:?} (f32, f16, bf16, int8)"))),
        }
    }

    #[must_use]
    pub fn dtype(self) -> DType {
        match self {
            Self::F32 => DType::F32,
            Self::F16 => DType::F16,
            Self::Bf16 => DType::BF16,
            // Tensors stay f32; only the linear layers' products are integer.
            Self::Int8 => DType::F32,
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
            Self::Int8 => "int8",
        })
    }
}

impl std::str::FromStr for Precision {
    type Err = String;

    /// [`Self::parse`], its error's message alone (the caller names the setting).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::parse(s).map_err(|e| e.message())
    }
}

crate::serde_text::serde_as_text!(DeviceSpec);
crate::serde_text::serde_as_text!(Precision);

/// What the encoders' linear layers compute their products in on the CPU, where tensors
/// stay f32 (`Compute::dtype`) for every `--dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Products {
    /// f32, what the tensors hold (and every product on a GPU).
    #[default]
    Tensor,
    /// bf16 inputs, f32 sums, on AMX tiles ([`crate::embed::amx`]) or, without them, AVX-512
    /// BF16 ([`crate::embed::bf16`]).
    Bf16,
    /// int8 inputs, i32 sums ([`crate::embed::int8`]).
    Int8,
}

/// A resolved device and dtype, shared by every stage that computes.
#[derive(Debug, Clone)]
pub struct Compute {
    pub device: Device,
    pub dtype: DType,
    /// The linear layers' products on the CPU (`--dtype bf16` or `int8`).
    pub products: Products,
}

impl Compute {
    /// The CPU in f32: what tests and tools without a choice use.
    #[must_use]
    pub fn cpu() -> Self {
        Self { device: Device::Cpu, dtype: DType::F32, products: Products::Tensor }
    }

    /// Resolve a device spec and precision.
    ///
    /// # Errors
    /// When the device asked for is not compiled in or not present.
    pub fn new(spec: DeviceSpec, precision: Precision) -> Result<Self> {
        let device = match spec {
            DeviceSpec::Cpu => Device::Cpu,
            DeviceSpec::Cuda(n) => Device::new_cuda(n).map_err(|e| unavailable("cuda", n, &e))?,
            DeviceSpec::Metal(n) => Device::new_metal(n).map_err(|e| unavailable("metal", n, &e))?,
            DeviceSpec::Auto => {
                if candle_core::utils::cuda_is_available() {
                    Device::new_cuda(0).map_err(|e| unavailable("cuda", 0, &e))?
                } else if candle_core::utils::metal_is_available() {
                    Device::new_metal(0).map_err(|e| unavailable("metal", 0, &e))?
                } else {
                    Device::Cpu
                }
            }
        };
        let dtype = precision.dtype();
        if precision == Precision::Int8 {
            if !device.is_cpu() {
                return Err(Error::setting("dtype", "int8 runs on the CPU only; on a GPU use f16 or bf16"));
            }
            return Ok(Self { device, dtype, products: Products::Int8 });
        }
        if device.is_cpu() && dtype == DType::BF16 {
            // candle's CPU matmul has no bf16 kernel worth using; seamcut's AMX tiles and
            // AVX-512 BF16 products are.
            if !crate::embed::amx::available() && !crate::embed::bf16::available() {
                return Err(Error::setting(
                    "dtype",
                    "bf16 on the CPU needs AMX or AVX-512 BF16 (Intel Sapphire Rapids or Cooper Lake and later, AMD Zen 4 and later); use f32 or int8",
                ));
            }
            return Ok(Self { device, dtype: DType::F32, products: Products::Bf16 });
        }
        Ok(Self { device, dtype, products: Products::Tensor })
    }

    /// Whether bands are best computed where the unit vectors are (seamcut's CUDA kernels; on
    /// the CPU and Metal the host code is faster): the default of
    /// [`crate::chunkers::semantic::SemanticChunker::with_device_bands`].
    #[must_use]
    pub fn bands_on_device(&self) -> bool {
        self.device.is_cuda()
    }

    /// One word for reports: `cpu`, `cuda:0`, `metal:0`.
    #[must_use]
    pub fn describe(&self) -> String {
        let d = match &self.device {
            Device::Cpu => "cpu".to_string(),
            Device::Cuda(_) => "cuda".to_string(),
            Device::Metal(_) => "metal".to_string(),
        };
        match self.products {
            Products::Bf16 if crate::embed::amx::available() => return format!("{d}/bf16 (amx products)"),
            Products::Bf16 => return format!("{d}/bf16 (avx512-bf16 products)"),
            Products::Int8 => {
                return format!("{d}/int8 ({} products)", crate::embed::int8::Isa::best().name())
            }
            Products::Tensor => {}
        }
        format!("{d}/{:?}", self.dtype).to_lowercase()
    }
}

fn unavailable(kind: &str, n: usize, e: &candle_core::Error) -> Error {
    let first = e.to_string().lines().next().unwrap_or_default().to_string();
    Error::Config(format!(
        "{kind}:{n} is not available ({first}); this build supports: cpu{}{}",
        if cfg!(feature = "cuda") { ", cuda" } else { "" },
        if cfg!(feature = "metal") { ", metal" } else { "" }
    ))
}
