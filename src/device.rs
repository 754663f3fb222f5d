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
}

impl Precision {
    /// Parse `f32`, `f16`, `bf16`.
    ///
    /// # Errors
    /// On anything else.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "f32" => Ok(Self::F32),
            "f16" => Ok(Self::F16),
            "bf16" => Ok(Self::Bf16),
            _ => Err(Error::setting("dtype", format!("unknown dtype {s:?} (f32, f16, bf16)"))),
        }
    }

    #[must_use]
    pub fn dtype(self) -> DType {
        match self {
            Self::F32 => DType::F32,
            Self::F16 => DType::F16,
            Self::Bf16 => DType::BF16,
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
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

/// A resolved device and dtype, shared by every stage that computes.
#[derive(Debug, Clone)]
pub struct Compute {
    pub device: Device,
    pub dtype: DType,
    /// `--dtype bf16` on the CPU: tensors stay f32 (`dtype`), the encoder's linear products
    /// run in bf16 on AMX tiles ([`crate::embed::amx`]).
    pub bf16_products: bool,
}

impl Compute {
    /// The CPU in f32: what tests and tools without a choice use.
    #[must_use]
    pub fn cpu() -> Self {
        Self { device: Device::Cpu, dtype: DType::F32, bf16_products: false }
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
        if device.is_cpu() && dtype == DType::BF16 {
            // candle's CPU matmul has no bf16 kernel worth using; seamcut's AMX products are.
            if !crate::embed::amx::available() {
                return Err(Error::setting(
                    "dtype",
                    "bf16 on the CPU needs AMX (Intel Sapphire Rapids or later); use f32 or f16",
                ));
            }
            return Ok(Self { device, dtype: DType::F32, bf16_products: true });
        }
        Ok(Self { device, dtype, bf16_products: false })
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
        if self.bf16_products {
            return format!("{d}/bf16 (amx products)");
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
