//! A linear layer's weight packed for the products `--dtype` asks of the CPU
//! ([`crate::device::Products`]): f32 groups ([`super::f32`], the default on CPUs with AVX2
//! and FMA: the same bits on each), bf16 tiles for AMX ([`super::amx`]), bf16 blocks for
//! AVX-512 BF16 where there are no tiles ([`super::bf16`]), or int8 blocks ([`super::int8`]). The one place that maps a choice of products to its kernel, for every
//! encoder's linear layers ([`super::encoder`], [`super::layers`]).

use crate::device::Products;

/// A weight `[k, m]` in the layout of its products' kernel.
#[derive(Debug, Clone)]
pub enum Weight {
    F32(super::f32::Packed),
    Amx(super::amx::Packed),
    Bf16(super::bf16::Packed),
    Int8(super::int8::Packed),
}

impl Weight {
    /// Pack `wt` (`k × m`, row-major) for `products`; `None` for f32 products on a CPU
    /// without AVX2 and FMA (the weight stays a tensor, for `gemm`).
    #[must_use]
    pub fn new(products: Products, wt: &[f32], k: usize, m: usize) -> Option<Self> {
        match products {
            Products::Tensor if super::f32::fast_here() => Some(Self::F32(super::f32::Packed::new(wt, k, m))),
            Products::Tensor => None,
            Products::Bf16 if super::amx::available() => Some(Self::Amx(super::amx::Packed::new(wt, k, m))),
            Products::Bf16 => Some(Self::Bf16(super::bf16::Packed::new(wt, k, m))),
            Products::Int8 => Some(Self::Int8(super::int8::Packed::new(wt, k, m))),
        }
    }

    /// Rows (the products' inner dimension) and columns.
    #[must_use]
    pub fn shape(&self) -> (usize, usize) {
        match self {
            Self::F32(w) => w.shape(),
            Self::Amx(w) => w.shape(),
            Self::Bf16(w) => w.shape(),
            Self::Int8(w) => w.shape(),
        }
    }

    /// Whether this CPU runs the kernel.
    #[must_use]
    pub fn runs_here(&self) -> bool {
        match self {
            Self::Amx(_) => super::amx::available(),
            Self::Bf16(_) => super::bf16::available(),
            Self::F32(_) | Self::Int8(_) => true,
        }
    }

    /// `x · w` (+ `bias` on every row), `x` `[n, k]` row-major; call where [`Self::runs_here`].
    ///
    /// # Panics
    /// If the shapes do not fit.
    #[must_use]
    pub fn product(&self, x: &[f32], n: usize, bias: Option<&[f32]>) -> Vec<f32> {
        match self {
            // The best level this CPU has (within `SEAMCUT_SIMD`); every level gives the same bits.
            Self::F32(w) => super::f32::product(x, n, w, bias, u8::MAX),
            Self::Amx(w) => super::amx::product(x, n, w, bias),
            Self::Bf16(w) => super::bf16::product(x, n, w, bias),
            Self::Int8(w) => super::int8::product(x, n, w, bias),
        }
    }

    /// The kernel's name, for errors.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::F32(_) => "f32",
            Self::Amx(_) => "bf16 (amx)",
            Self::Bf16(_) => "bf16 (avx512-bf16)",
            Self::Int8(_) => "int8",
        }
    }
}
