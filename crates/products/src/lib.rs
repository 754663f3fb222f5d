//! seamcut's matrix products on the CPU, for the encoders' linear layers:
//! `x · w (+ b)` with `x` f32 activations `[n, k]` and `w` a weight `[k, m]` packed once at
//! load.
//! - [`f32`]: `--dtype f32` (the default) on CPUs with AVX2 and FMA, the same bits on each.
//! - [`int8`]: `--dtype int8` on every x86-64 CPU (AVX-512 VNNI, AVX2, or plain loops).
//! - [`bf16`]: `--dtype bf16` on CPUs with AVX-512 BF16 (AMD Zen 4 and later, Intel Cooper
//!   Lake); seamcut's AMX tiles (`seamcut::embed::amx`) serve Sapphire Rapids and later.
//! - [`attention`]: the f32 kernels of the long-context architectures' tiled attention.
//! - [`rows`]: the f32 row loops of the fused CPU ops (softmax, layer norm, GELU, gated
//!   activations).
//!
//! A crate of its own so that seamcut's debug builds compile it optimised, as they do the
//! dependencies (`[profile.dev.package.seamcut-products]`): the tests run real models through
//! these kernels, which take minutes unoptimised.

pub mod attention;
pub mod bf16;
pub mod f32;
pub mod int8;
pub mod rows;

/// The widest vector level seamcut's own kernels may use, from `SEAMCUT_SIMD` (read once):
/// `avx2` keeps them to AVX2 and FMA (no AVX-512, AVX-512 VNNI or BF16, AVX-VNNI or AMX: 1),
/// `generic` to their portable loops (0); unset or `native`, whatever the CPU has (2). So a
/// CPU with AVX-512 can measure and check the paths an AVX2-only CPU runs
/// (`benches/avx2_emulated.sh`, which also builds `gemm`, whose f32 kernels seamcut does not
/// pick, without its AVX-512 ones). A value it does not know is said on stderr and ignored.
#[must_use]
pub fn simd_cap() -> u8 {
    static CAP: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| match std::env::var("SEAMCUT_SIMD").as_deref() {
        Err(_) | Ok("" | "native") => 2,
        Ok("avx2") => 1,
        Ok("generic") => 0,
        Ok(other) => {
            eprintln!("seamcut: SEAMCUT_SIMD={other:?} is not native, avx2 or generic: ignored");
            2
        }
    })
}

fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// `src` (`rows × cols`, row-major) transposed: `cols × rows`, row-major, 32 output rows a
/// task, so that reads and writes both stay within a few cache lines; candle's strided copy, which
/// seamcut used to transpose every weight at load, goes element by element (a third of
/// loading MPNet in int8).
///
/// # Panics
/// If `src` does not hold `rows × cols` values.
#[must_use]
pub fn transpose(src: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    const T: usize = 32;
    assert_eq!(src.len(), rows * cols, "a {rows}×{cols} matrix");
    use rayon::prelude::*;
    let mut out = vec![0f32; rows * cols];
    if rows == 0 {
        return out;
    }
    // T output rows (source columns) a task, the threads writing apart.
    out.par_chunks_mut(T * rows).enumerate().for_each(|(t, out)| {
        let c0 = t * T;
        let width = out.len() / rows;
        // Each source row gives T contiguous values, one to each of the T output rows, whose
        // cache lines stay in L1 from one source row to the next.
        for r in 0..rows {
            let from = &src[r * cols + c0..r * cols + c0 + width];
            for (c, &v) in from.iter().enumerate() {
                out[c * rows + r] = v;
            }
        }
    });
    out
}

/// What both kernels do before their products: check the shapes, and give the whole answer
/// where there is nothing to multiply (no rows or columns: zeros; no inputs: the bias).
///
/// # Panics
/// If `x` does not hold `n × k` values or the bias is not `m` long.
fn trivial(x: &[f32], n: usize, k: usize, m: usize, bias: Option<&[f32]>) -> Option<Vec<f32>> {
    assert_eq!(x.len(), n * k, "an {n}×{k} input");
    assert!(bias.is_none_or(|b| b.len() == m), "a bias of {m}");
    if n == 0 || m == 0 || k == 0 {
        let mut out = vec![0f32; n * m];
        if let (Some(b), true) = (bias, m > 0) {
            out.chunks_mut(m).for_each(|row| row.copy_from_slice(b));
        }
        return Some(out);
    }
    None
}

/// A deterministic noise in `[-1, 1)` for the tests.
#[cfg(test)]
pub(crate) fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Cosine of two vectors, for the tests.
#[cfg(test)]
pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(a, b)| a * b).sum();
    let na: f32 = a.iter().map(|a| a * a).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|a| a * a).sum::<f32>().sqrt();
    dot / (na * nb)
}

#[cfg(test)]
mod tests {
    /// Every shape, whole tiles or not, comes back element for element.
    #[test]
    fn transpose_moves_every_element() {
        for (r, c) in [(0, 5), (1, 1), (3, 70), (64, 32), (33, 65), (100, 7)] {
            let src = super::noise(r * c, (r * 131 + c) as u64);
            let t = super::transpose(&src, r, c);
            assert_eq!(t.len(), r * c);
            for i in 0..r {
                for j in 0..c {
                    assert_eq!(t[j * r + i].to_bits(), src[i * c + j].to_bits(), "{r}×{c} at ({i}, {j})");
                }
            }
        }
    }
}
