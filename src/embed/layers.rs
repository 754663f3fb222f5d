//! The layers the long-context architectures share ([`super::modernbert`], [`super::qwen3`]):
//! a linear layer whose bias is optional, layer norm (bias optional) and RMS norm, each taking
//! the fused CPU product ([`super::fused`]) for f32 on the CPU and candle's ops elsewhere; and
//! the token embedding table every architecture ([`super::encoder`] too) holds.

use candle_core::{DType, Module, Tensor};
use candle_nn::VarBuilder;

/// Whether `x` can take the fused CPU ops: f32, contiguous, on the CPU.
pub(crate) fn fused_cpu(x: &Tensor) -> bool {
    x.device().is_cpu() && x.dtype() == DType::F32 && x.is_contiguous()
}

/// `f` of `t`'s values: borrowed where `t` is a contiguous f32 tensor on the CPU (a weight at
/// load: no copy of it), copied out as f32 otherwise.
///
/// # Errors
/// When the values cannot be read back.
pub(crate) fn with_host_f32<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> candle_core::Result<R> {
    if fused_cpu(t) {
        let (storage, layout) = t.storage_and_layout();
        if let (candle_core::Storage::Cpu(candle_core::CpuStorage::F32(v)), Some((a, b))) =
            (&*storage, layout.contiguous_offsets())
        {
            return Ok(f(&v[a..b]));
        }
    }
    Ok(f(&t.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?))
}

/// `w` `[out, in]` as the contiguous `[in, out]` the products read: on the CPU in f32 through
/// [`seamcut_products::transpose`] (candle's strided copy went element by element: a third of
/// loading MPNet in int8), elsewhere through candle. The same values either way.
///
/// # Errors
/// When `w` is not a matrix, or on a device failure.
pub(crate) fn transposed(w: &Tensor) -> candle_core::Result<Tensor> {
    let (rows, cols) = w.dims2()?;
    if !fused_cpu(w) {
        return w.t()?.contiguous();
    }
    let host = with_host_f32(w, |v| seamcut_products::transpose(v, rows, cols))?;
    Tensor::from_vec(host, (cols, rows), w.device())
}

/// A token embedding table (`word_embeddings`, `tok_embeddings`, `embed_tokens`), its rows held
/// at the width the products ask for: as the model computes (f32 on the CPU) for
/// [`Products::Tensor`](crate::device::Products::Tensor), bf16 for `--dtype bf16`, int8 for
/// `--dtype int8` (one scale per row and block of 64 values, as the products quantize their
/// activations: [`seamcut_products::int8::Rows`]). Once the linear layers are packed the table
/// is the largest tensor left: Qwen3-Embedding-0.6B's is 151,669 × 1,024, 0.62 GB in f32,
/// 0.31 GB in bf16, 0.16 GB in int8. Looked-up rows are widened to the model's dtype, so the
/// layers after see the same dtype either way.
pub struct TokenTable {
    rows: Rows,
    dtype: DType,
}

enum Rows {
    Tensor(candle_nn::Embedding),
    Int8 { rows: seamcut_products::int8::Rows, hidden: usize, device: candle_core::Device },
}

impl TokenTable {
    /// `{name}` `[vocab, hidden]` (the rows come from the file: `config.json`'s `vocab_size` is
    /// sometimes stale), read at the width `products` asks for (converted as it is read:
    /// [`super::weights`], so the f32 copy is never whole; int8 is quantized from the bf16
    /// rows, a slice at a time).
    ///
    /// # Errors
    /// When the tensor is missing or is not `[_, hidden]`.
    pub fn load(
        vb: &VarBuilder,
        name: &str,
        hidden: usize,
        products: crate::device::Products,
    ) -> candle_core::Result<Self> {
        use crate::device::Products;
        let held = if products == Products::Tensor { vb.dtype() } else { DType::BF16 };
        let t = vb.get_unchecked_dtype(name, held)?;
        if t.rank() != 2 || t.dim(1)? != hidden {
            candle_core::bail!("{name} has shape {:?}, expected [_, {hidden}]", t.dims());
        }
        let rows = if products == Products::Int8 && t.device().is_cpu() {
            // 4 Mi values at a time: the table's f32 copy is never whole.
            let (vocab, step) = (t.dim(0)?, ((4 << 20) / hidden.max(1)).max(1));
            let mut q = seamcut_products::int8::Rows::new(hidden);
            for r0 in (0..vocab).step_by(step) {
                let part = t.narrow(0, r0, step.min(vocab - r0))?.to_dtype(DType::F32)?;
                q.extend(&part.flatten_all()?.to_vec1::<f32>()?);
            }
            Rows::Int8 { rows: q, hidden, device: t.device().clone() }
        } else {
            Rows::Tensor(candle_nn::Embedding::new(t, hidden))
        };
        Ok(Self { rows, dtype: vb.dtype() })
    }

    /// The rows of `ids`, `[ids, hidden]`, in the model's dtype.
    ///
    /// # Errors
    /// On an id past the table, or a device failure.
    pub fn forward(&self, ids: &Tensor) -> candle_core::Result<Tensor> {
        match &self.rows {
            Rows::Tensor(e) => e.forward(ids)?.to_dtype(self.dtype),
            Rows::Int8 { rows, hidden, device } => {
                let mut shape = ids.dims().to_vec();
                shape.push(*hidden);
                let ids = ids.flatten_all()?.to_dtype(DType::U32)?.to_vec1::<u32>()?;
                let mut out = vec![0f32; ids.len() * hidden];
                for (&id, o) in ids.iter().zip(out.chunks_exact_mut((*hidden).max(1))) {
                    if id as usize >= rows.len() {
                        candle_core::bail!("token id {id} is past the embedding table's {} rows", rows.len());
                    }
                    rows.row_into(id as usize, o);
                }
                Tensor::from_vec(out, shape, device)?.to_dtype(self.dtype)
            }
        }
    }

    /// Whether the layers after run on the CPU in f32 (the fused and tiled paths).
    pub fn f32_cpu(&self) -> bool {
        let cpu = match &self.rows {
            Rows::Tensor(e) => e.embeddings().device().is_cpu(),
            Rows::Int8 { device, .. } => device.is_cpu(),
        };
        cpu && self.dtype == DType::F32
    }
}

/// `x · Wᵀ (+ b)`, the weight transposed once at load.
pub struct Linear {
    /// `[in, out]`, contiguous; emptied once packed.
    wt: Tensor,
    b: Option<Tensor>,
    /// The weight packed for `--dtype bf16` or `int8` ([`Self::pack`]), with the bias on the
    /// host.
    packed: Option<(super::packed::Weight, Option<Vec<f32>>)>,
}

impl Linear {
    /// `{name}.weight` `[out, in]`, and `{name}.bias` when `bias` is set.
    ///
    /// # Errors
    /// When a tensor is missing or has another shape.
    pub fn load(
        vb: &VarBuilder,
        name: &str,
        inp: usize,
        out: usize,
        bias: bool,
    ) -> candle_core::Result<Self> {
        let w = vb.get((out, inp), &format!("{name}.weight"))?;
        let b = if bias { Some(vb.get(out, &format!("{name}.bias"))?) } else { None };
        Ok(Self { wt: transposed(&w)?, b, packed: None })
    }

    /// Pack the weight for `products` (f32 on the CPU only), and let go of its f32 copy.
    ///
    /// # Errors
    /// When the weight cannot be read back from its tensor.
    pub fn pack(&mut self, products: crate::device::Products) -> candle_core::Result<()> {
        if !fused_cpu(&self.wt) {
            return Ok(());
        }
        let (k, m) = self.wt.dims2()?;
        if let Some(w) = with_host_f32(&self.wt, |wt| super::packed::Weight::new(products, wt, k, m))? {
            let b = self.b.as_ref().map(Tensor::to_vec1).transpose()?;
            self.packed = Some((w, b));
            self.wt = Tensor::zeros((0, 0), DType::F32, &candle_core::Device::Cpu)?;
        }
        Ok(())
    }

    /// Several layers with the same input (Q, K, V) as one: their outputs side by side.
    ///
    /// # Errors
    /// When their shapes or biases do not fit together.
    pub fn concat(parts: &[Self]) -> candle_core::Result<Self> {
        let wts: Vec<&Tensor> = parts.iter().map(|p| &p.wt).collect();
        let b = if parts.iter().all(|p| p.b.is_some()) {
            let bs: Vec<&Tensor> = parts.iter().filter_map(|p| p.b.as_ref()).collect();
            Some(Tensor::cat(&bs, 0)?)
        } else if parts.iter().any(|p| p.b.is_some()) {
            candle_core::bail!("cannot join linear layers with and without biases")
        } else {
            None
        };
        Ok(Self { wt: Tensor::cat(&wts, 1)?.contiguous()?, b, packed: None })
    }

    /// [`Self::forward`] as a host vector `[tokens, out]`, for `x` that takes the fused CPU
    /// ops ([`fused_cpu`]): [`super::fused::linear_host`].
    ///
    /// # Errors
    /// On a shape or device failure, or `x` not on the CPU in f32.
    pub fn forward_host(&self, x: &Tensor) -> candle_core::Result<Vec<f32>> {
        if let Some((w, b)) = &self.packed {
            return super::fused::linear_packed_host(&x.contiguous()?, w, b.as_deref());
        }
        super::fused::linear_host(x, &self.wt, self.b.as_ref())
    }

    /// Apply to `x` `[tokens, in]`.
    ///
    /// # Errors
    /// On a shape or device failure.
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        if let Some((w, b)) = &self.packed {
            return super::fused::linear_packed(&x.contiguous()?, w, b.as_deref());
        }
        if fused_cpu(x) {
            return match &self.b {
                Some(b) => super::fused::linear(x, &self.wt, b),
                None => super::fused::matmul(x, &self.wt),
            };
        }
        let y = x.matmul(&self.wt)?;
        match &self.b {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }
}

/// Layer normalisation over the last dimension; a zero bias where the model has none.
pub struct LayerNorm {
    w: Tensor,
    b: Tensor,
    eps: f32,
}

impl LayerNorm {
    /// `{name}.weight`, and `{name}.bias` when `bias` is set.
    ///
    /// # Errors
    /// When a tensor is missing or has another shape.
    pub fn load(vb: &VarBuilder, name: &str, h: usize, eps: f64, bias: bool) -> candle_core::Result<Self> {
        let w = vb.get(h, &format!("{name}.weight"))?;
        let b = if bias { vb.get(h, &format!("{name}.bias"))? } else { w.zeros_like()? };
        Ok(Self { w, b, eps: eps as f32 })
    }
}

impl Module for LayerNorm {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        candle_nn::ops::layer_norm(x, &self.w, &self.b, self.eps)
    }
}

/// RMS normalisation over the last dimension (Llama's and Qwen's `RMSNorm`: in f32, then
/// scaled by the weight).
pub struct RmsNorm {
    w: Tensor,
    eps: f32,
}

impl RmsNorm {
    /// `{name}.weight` of `h` values.
    ///
    /// # Errors
    /// When the tensor is missing or has another shape.
    pub fn load(vb: &VarBuilder, name: &str, h: usize, eps: f64) -> candle_core::Result<Self> {
        Ok(Self { w: vb.get(h, &format!("{name}.weight"))?, eps: eps as f32 })
    }

    /// Normalise, in place, the heads of a host matrix of rows `stride` apart: row `t` holds
    /// `heads` heads of this norm's width starting at column `offset` (the q or k part of a
    /// fused QKV matrix, say). The arithmetic of candle's `rms_norm`, which [`Module::forward`]
    /// runs: the same bits.
    ///
    /// # Errors
    /// When the weight cannot be read back.
    pub fn apply_host(
        &self,
        data: &mut [f32],
        stride: usize,
        offset: usize,
        heads: usize,
    ) -> candle_core::Result<()> {
        use rayon::prelude::*;
        let w: Vec<f32> = self.w.to_dtype(DType::F32)?.to_vec1()?;
        let d = w.len();
        let eps = self.eps;
        data.par_chunks_mut(stride).with_min_len(16).for_each(|row| {
            for head in row[offset..offset + heads * d].chunks_mut(d) {
                let sum2 = head.iter().map(|&v| v * v).sum::<f32>();
                let m = (sum2 / d as f32 + eps).sqrt();
                for (v, &a) in head.iter_mut().zip(&w) {
                    *v = *v / m * a;
                }
            }
        });
        Ok(())
    }
}

impl Module for RmsNorm {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        if x.dtype() == DType::F32 {
            return candle_nn::ops::rms_norm(&x.contiguous()?, &self.w, self.eps);
        }
        let y = candle_nn::ops::rms_norm(
            &x.to_dtype(DType::F32)?.contiguous()?,
            &self.w.to_dtype(DType::F32)?,
            self.eps,
        )?;
        y.to_dtype(x.dtype())
    }
}

/// A gated feed-forward's activation (GeGLU, SwiGLU, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// GELU, erf form.
    GeluErf,
    /// GELU, tanh approximation.
    GeluTanh,
    Silu,
    Relu,
}

impl Act {
    /// From a config's activation name (`gelu`, `gelu_new`, `silu`, …).
    ///
    /// # Errors
    /// For a name this does not know.
    pub fn parse(name: &str) -> candle_core::Result<Self> {
        Ok(match name {
            "gelu" | "gelu_python" | "geglu" => Self::GeluErf,
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Self::GeluTanh,
            "silu" | "swish" | "swiglu" => Self::Silu,
            "relu" => Self::Relu,
            other => candle_core::bail!("unsupported hidden activation {other:?}"),
        })
    }

    fn forward(self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Self::GeluErf => super::gelu::gelu_erf(x),
            Self::GeluTanh => x.gelu(),
            Self::Silu => candle_nn::ops::silu(x),
            Self::Relu => x.relu(),
        }
    }
}

/// A GLU: `act(x[:, act_at..act_at + inter]) · x[:, up_at..up_at + inter]` for `x`
/// `[tokens, 2·inter]`, the two halves of a fused up/gate product side by side. On the CPU in
/// f32 one pass writes the `[tokens, inter]` result straight from `x` ([`Glu`]): no copy of
/// either half and no intermediate activation, which at 8,192 tokens held three more
/// `[tokens, inter]` buffers at the layer's peak.
///
/// # Errors
/// On a shape or device failure.
pub fn glu(x: &Tensor, g: Glu) -> candle_core::Result<Tensor> {
    if fused_cpu(x) {
        return x.apply_op1_no_bwd(&g);
    }
    let a = g.act.forward(&x.narrow(1, g.act_at, g.inter)?.contiguous()?)?;
    a * x.narrow(1, g.up_at, g.inter)?
}

/// Rows of a gated feed-forward's input projected at a time by [`glu_ffn`] on the CPU.
const FFN_ROWS: usize = 1024;

/// A gated feed-forward: `down(glu(up_gate(x)))`, `[tokens, out]`. On the CPU in f32 it runs
/// [`FFN_ROWS`] rows at a time, each block's `[rows, 2·inter]` projection turned into its
/// `[rows, inter]` activation and that into its rows of the result at once, so neither the
/// whole projection nor the whole activation is ever held: at 8,192 tokens they were the
/// layer's largest buffers (Qwen3-0.6B's shape: 201 and 101 MB). Elsewhere, [`glu`] of the
/// whole projection.
///
/// # Errors
/// On a shape or device failure.
pub fn glu_ffn(x: &Tensor, up_gate: &Linear, down: &Linear, g: Glu) -> candle_core::Result<Tensor> {
    let n = x.dim(0)?;
    if !fused_cpu(x) || n <= FFN_ROWS {
        return down.forward(&glu(&up_gate.forward(x)?, g)?);
    }
    let mut out: Vec<f32> = Vec::new();
    glu_ffn_blocks(x, None, up_gate, down, g, |_, y| {
        if out.is_empty() {
            out.reserve_exact(n * (y.len() / FFN_ROWS.min(n)));
        }
        out.extend_from_slice(y);
        Ok(())
    })?;
    let width = out.len() / n;
    Tensor::from_vec(out, (n, width), x.device())
}

/// `x + glu_ffn(norm(x), …)`: a pre-norm layer's feed-forward and its residual connection.
/// On the CPU in f32 each block of [`FFN_ROWS`] rows is normed, run through the feed-forward
/// and added back into `x`'s own storage ([`add_rows`]) in turn, so neither the normed input,
/// nor the feed-forward's output, nor their sum is ever a whole buffer: three `[tokens,
/// hidden]` buffers a layer (34 MB each at 8,192 tokens in Qwen3-0.6B's shape) that every layer
/// allocated and freed. A block's rows are read before they are written, and the rows are
/// independent. `x` must be the only tensor that holds its storage, as the encoders' running
/// states are.
///
/// # Errors
/// On a shape or device failure.
pub fn residual_glu_ffn(
    x: Tensor,
    norm: &dyn Module,
    up_gate: &Linear,
    down: &Linear,
    g: Glu,
) -> candle_core::Result<Tensor> {
    if !fused_cpu(&x) || x.dim(0)? <= FFN_ROWS {
        let y = glu_ffn(&norm.forward(&x)?, up_gate, down, g)?;
        return add_residual(x, &y);
    }
    glu_ffn_blocks(&x, Some(norm), up_gate, down, g, |at, y| add_rows(&x, at, y))?;
    Ok(x)
}

/// `norm(x)` through each of `linears`, as host vectors `[tokens, out]` (for `x` that takes the
/// fused CPU ops), made [`FFN_ROWS`] rows at a time so that the normed input is never whole:
/// at 8,192 tokens in Qwen3-0.6B's shape it was 34 MB live beside the projections at the
/// layer's peak.
///
/// # Errors
/// On a shape or device failure.
pub fn normed_projections_host<const N: usize>(
    x: &Tensor,
    norm: &dyn Module,
    linears: [&Linear; N],
) -> candle_core::Result<[Vec<f32>; N]> {
    let n = x.dim(0)?;
    let mut outs: [Vec<f32>; N] = std::array::from_fn(|_| Vec::new());
    for at in (0..n).step_by(FFN_ROWS) {
        let rows = FFN_ROWS.min(n - at);
        let normed = norm.forward(&x.narrow(0, at, rows)?)?;
        for (out, linear) in outs.iter_mut().zip(linears) {
            let y = linear.forward_host(&normed)?;
            if out.is_empty() {
                out.reserve_exact(n * (y.len() / rows));
            }
            out.extend_from_slice(&y);
        }
    }
    Ok(outs)
}

/// [`glu_ffn`]'s blocks on the CPU: each [`FFN_ROWS`] rows of `x` normed (when `norm` is
/// given), projected, activated and projected down, then handed to `sink` with the index of
/// their first row.
fn glu_ffn_blocks(
    x: &Tensor,
    norm: Option<&dyn Module>,
    up_gate: &Linear,
    down: &Linear,
    g: Glu,
    mut sink: impl FnMut(usize, &[f32]) -> candle_core::Result<()>,
) -> candle_core::Result<()> {
    let n = x.dim(0)?;
    for at in (0..n).step_by(FFN_ROWS) {
        let rows = FFN_ROWS.min(n - at);
        let block = x.narrow(0, at, rows)?;
        let part = match norm {
            Some(norm) => up_gate.forward_host(&norm.forward(&block)?)?,
            None => up_gate.forward_host(&block)?,
        };
        drop(block);
        let mut y = vec![0f32; rows * g.inter];
        g.rows(&part, part.len() / rows, &mut y)?;
        drop(part);
        let y = down.forward_host(&Tensor::from_vec(y, (rows, g.inter), x.device())?)?;
        sink(at, &y)?;
    }
    Ok(())
}

/// `x + y`, a residual connection: on the CPU in f32 added into `x`'s own storage
/// ([`add_rows`]) rather than into a new buffer; elsewhere candle's sum. `x` must be the only
/// tensor that holds its storage, as the encoders' running states are.
///
/// # Errors
/// On a shape or device failure.
pub fn add_residual(x: Tensor, y: &Tensor) -> candle_core::Result<Tensor> {
    if !fused_cpu(&x) || !fused_cpu(y) || x.shape() != y.shape() {
        return x + y;
    }
    with_host_f32(y, |y| add_rows(&x, 0, y))??;
    Ok(x)
}

/// Add `y`, whole rows, into `x` `[tokens, width]` (f32, contiguous, on the CPU) from row `at`
/// on, in `x`'s storage.
///
/// # Errors
/// When `x` is not such a tensor, or `y` is not whole rows that fit from `at`.
pub fn add_rows(x: &Tensor, at: usize, y: &[f32]) -> candle_core::Result<()> {
    x.inplace_op1(&AddRows { at, y })
}

/// [`add_rows`]'s op.
struct AddRows<'a> {
    at: usize,
    y: &'a [f32],
}

impl candle_core::InplaceOp1 for AddRows<'_> {
    fn name(&self) -> &'static str {
        "seamcut-add-rows"
    }

    fn cpu_fwd(
        &self,
        storage: &mut candle_core::CpuStorage,
        layout: &candle_core::Layout,
    ) -> candle_core::Result<()> {
        use rayon::prelude::*;
        let candle_core::CpuStorage::F32(data) = storage else {
            candle_core::bail!("seamcut-add-rows: f32 only")
        };
        let (Some((a, b)), Some(&w)) = (layout.contiguous_offsets(), layout.dims().last()) else {
            candle_core::bail!("seamcut-add-rows: contiguous input only")
        };
        let from = a + self.at * w;
        if w == 0 || !self.y.len().is_multiple_of(w) || from + self.y.len() > b {
            candle_core::bail!(
                "seamcut-add-rows: {} values at row {} of {:?}",
                self.y.len(),
                self.at,
                layout.dims()
            );
        }
        let level = super::fused::simd_level();
        data[from..from + self.y.len()]
            .par_chunks_mut(w * 64)
            .zip(self.y.par_chunks(w * 64))
            .for_each(|(o, y)| seamcut_products::rows::add_slice(level, o, y));
        Ok(())
    }
}

/// A gated feed-forward's gate: `act(x[:, act_at..act_at + inter]) · x[:, up_at..up_at +
/// inter]` of its `[tokens, 2·inter]` up/gate projection (what [`glu`] computes; also its
/// fused CPU pass).
#[derive(Debug, Clone, Copy)]
pub struct Glu {
    /// The width of each half.
    pub inter: usize,
    /// Where the half the activation is applied to starts.
    pub act_at: usize,
    /// Where the other half starts.
    pub up_at: usize,
    /// The activation.
    pub act: Act,
}

impl candle_core::CustomOp1 for Glu {
    fn name(&self) -> &'static str {
        "seamcut-glu"
    }

    fn cpu_fwd(
        &self,
        storage: &candle_core::CpuStorage,
        layout: &candle_core::Layout,
    ) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
        let candle_core::CpuStorage::F32(data) = storage else { candle_core::bail!("seamcut-glu: f32 only") };
        let Some((a, b)) = layout.contiguous_offsets() else {
            candle_core::bail!("seamcut-glu: contiguous input only")
        };
        let (n, w) = layout.shape().dims2()?;
        let mut out = vec![0f32; n * self.inter];
        self.rows(&data[a..b], w, &mut out)?;
        Ok((candle_core::CpuStorage::F32(out), candle_core::Shape::from((n, self.inter))))
    }
}

impl Glu {
    /// Rows of `w` floats of `x` into `out`'s rows of `inter`.
    fn rows(&self, x: &[f32], w: usize, out: &mut [f32]) -> candle_core::Result<()> {
        use rayon::prelude::*;
        let i = self.inter;
        if self.act_at.max(self.up_at) + i > w {
            candle_core::bail!("seamcut-glu: {w} columns do not hold two halves of {i}");
        }
        let level = super::fused::simd_level();
        let code = match self.act {
            Act::GeluErf => 0,
            Act::GeluTanh => 1,
            Act::Silu => 2,
            Act::Relu => 3,
        };
        out.par_chunks_mut(i).zip(x.par_chunks(w)).with_min_len(16).for_each(|(o, row)| {
            seamcut_products::rows::glu_row(
                level,
                o,
                &row[self.act_at..self.act_at + i],
                &row[self.up_at..self.up_at + i],
                code,
            );
        });
        Ok(())
    }
}

/// What the architectures' tests share: a random-weight fixture (`tests/fixtures/models/ARCH`,
/// `tests/fixtures/gen_long_models.py`) and the check that the tiled CPU attention and
/// candle's padded path give the same token states.
#[cfg(test)]
pub(crate) mod testing {
    use candle_core::{DType, Device, Tensor};
    use candle_nn::VarBuilder;

    use crate::embed::FlatBatch;

    /// The fixture's config (parsed as `C`) and weights.
    pub(crate) fn fixture<C: serde::de::DeserializeOwned>(arch: &str) -> (C, VarBuilder<'static>) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models").join(arch);
        let cfg = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
        // SAFETY: a test fixture, mapped read-only.
        let vb = unsafe {
            VarBuilder::from_mmaped_safetensors(&[dir.join("model.safetensors")], DType::F32, &Device::Cpu)
        }
        .unwrap();
        (cfg, vb)
    }

    /// `forward(batch, tiled)` of a batch of mixed lengths (ids below `vocab`) through both
    /// paths agree within 1e-4.
    pub(crate) fn tiled_equals_padded(
        arch: &str,
        vocab: usize,
        forward: impl Fn(&FlatBatch, bool) -> crate::Result<Tensor>,
    ) {
        let mut batch = FlatBatch::default();
        for len in [1usize, 200, 7, 65] {
            let seq: Vec<u32> = (0..len).map(|j| ((j * 37 + len) % vocab) as u32).collect();
            batch.push(&seq);
        }
        let host = |t: Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let a = host(forward(&batch, true).unwrap());
        let b = host(forward(&batch, false).unwrap());
        let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
        assert!(worst < 1e-4, "{arch}: max difference {worst}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each `--dtype`'s table gives the f32 rows for any shape of ids (bf16's within its
    /// rounding, int8's within that and half a step of its block's scale; tables longer than a load
    /// slice, widths not a whole block), and an id past the table is an error, not a panic.
    #[test]
    fn every_width_of_table_gives_the_rows() {
        use crate::device::Products;
        let dev = candle_core::Device::Cpu;
        let (vocab, hidden) = (50_000usize, 100usize);
        let table: Vec<f32> =
            (0..vocab * hidden).map(|i| ((i * 7919 % 2003) as f32 - 1001.0) / 997.0).collect();
        let t = Tensor::from_vec(table.clone(), (vocab, hidden), &dev).unwrap();
        let vb = VarBuilder::from_tensors([("emb".to_string(), t)].into(), DType::F32, &dev);
        let ids = Tensor::new(&[[0u32, 49_999, 7], [31_234, 0, 2]], &dev).unwrap();
        for (products, tol) in [
            (Products::Tensor, 0.0),
            (Products::Bf16, 1.01 / 256.0),
            (Products::Int8, 1.01 / 254.0 + 1.01 / 512.0),
        ] {
            let tt = TokenTable::load(&vb, "emb", hidden, products).unwrap();
            let got = tt.forward(&ids).unwrap();
            assert_eq!(got.dims(), &[2, 3, hidden], "{products:?}");
            let got = got.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            for (row, &id) in got.chunks(hidden).zip(&[0usize, 49_999, 7, 31_234, 0, 2]) {
                for (a, b) in row.iter().zip(&table[id * hidden..(id + 1) * hidden]) {
                    assert!((a - b).abs() <= tol, "{products:?} id {id}: {a} for {b}");
                }
            }
            let past = tt.forward(&Tensor::new(&[3u32, 50_000], &dev).unwrap());
            assert!(past.is_err(), "{products:?}");
        }
    }

    /// The feed-forward normed and added into its residual in place, a block at a time, gives
    /// the same bits as the residual plus the feed-forward of the normed input (2,500 rows: two
    /// whole blocks and a tail; and 9 rows, one block); so does a residual add; projections of
    /// the input normed a block at a time equal those of the whole normed input; and rows past
    /// the end are an error, not a panic.
    #[test]
    fn residuals_added_in_place_equal_the_sums() {
        let dev = candle_core::Device::Cpu;
        let (h, inter) = (16usize, 24usize);
        let val = |n: usize, k: usize| -> Vec<f32> {
            (0..n).map(|i| ((i * k % 101) as f32 - 50.0) / 61.0).collect()
        };
        let vb = VarBuilder::from_tensors(
            [
                (
                    "up.weight".to_string(),
                    Tensor::from_vec(val(2 * inter * h, 7), (2 * inter, h), &dev).unwrap(),
                ),
                ("down.weight".to_string(), Tensor::from_vec(val(h * inter, 13), (h, inter), &dev).unwrap()),
                ("down.bias".to_string(), Tensor::from_vec(val(h, 3), h, &dev).unwrap()),
                ("norm.weight".to_string(), Tensor::from_vec(val(h, 11), h, &dev).unwrap()),
                ("q.weight".to_string(), Tensor::from_vec(val(8 * h, 19), (8, h), &dev).unwrap()),
            ]
            .into(),
            DType::F32,
            &dev,
        );
        let up = Linear::load(&vb, "up", h, 2 * inter, false).unwrap();
        let down = Linear::load(&vb, "down", inter, h, true).unwrap();
        let q = Linear::load(&vb, "q", h, 8, false).unwrap();
        let norm = RmsNorm::load(&vb, "norm", h, 1e-6).unwrap();
        let host = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        for n in [2_500usize, 9] {
            let x = || Tensor::from_vec(val(n * h, 17), (n, h), &dev).unwrap();
            let normed = norm.forward(&x()).unwrap();
            let g = Glu { inter, act_at: 0, up_at: inter, act: Act::Silu };
            let want = (x() + glu_ffn(&normed, &up, &down, g).unwrap()).unwrap();
            let got = residual_glu_ffn(x(), &norm, &up, &down, g).unwrap();
            assert_eq!(host(&got), host(&want), "{n} rows");
            let sum = add_residual(x(), &normed).unwrap();
            assert_eq!(host(&sum), host(&(x() + &normed).unwrap()), "{n} rows");
            let [a, b] = normed_projections_host(&x(), &norm, [&up, &q]).unwrap();
            for (got, linear) in [(a, &up), (b, &q)] {
                let whole = host(&linear.forward(&normed).unwrap());
                assert_eq!(got.len(), whole.len(), "{n} rows");
                let worst = got.iter().zip(&whole).map(|(p, q)| (p - q).abs()).fold(0f32, f32::max);
                assert!(worst < 1e-5, "{n} rows: {worst}");
            }
        }
        let x = Tensor::from_vec(val(4 * h, 5), (4, h), &dev).unwrap();
        assert!(add_rows(&x, 3, &val(2 * h, 3)).is_err());
        assert!(add_rows(&x, 0, &val(h + 1, 3)).is_err());
    }

    /// The fused GLU pass equals candle's ops (narrow, activation, product) for every
    /// activation, with the halves either way round.
    #[test]
    fn the_fused_glu_equals_candles_ops() {
        let x: Vec<f32> = (0..7 * 12).map(|i| ((i * 37 % 23) as f32 - 11.0) / 3.0).collect();
        let x = Tensor::from_vec(x, (7, 12), &candle_core::Device::Cpu).unwrap();
        for act in [Act::GeluErf, Act::GeluTanh, Act::Silu, Act::Relu] {
            for (a, u) in [(0, 6), (6, 0)] {
                let fused = glu(&x, Glu { inter: 6, act_at: a, up_at: u, act })
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap();
                let want = (act.forward(&x.narrow(1, a, 6).unwrap().contiguous().unwrap()).unwrap()
                    * x.narrow(1, u, 6).unwrap())
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap();
                let worst = fused.iter().zip(&want).map(|(p, q)| (p - q).abs()).fold(0f32, f32::max);
                assert!(worst < 1e-5, "{act:?}: {worst}");
            }
        }
    }
}
