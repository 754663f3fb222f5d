//! Matrix products in bfloat16 on Intel AMX tiles (Sapphire Rapids and later), for the fused
//! CPU encoder under `--dtype bf16`: weights and activations stay f32 everywhere else (layer
//! norm, softmax, GELU, attention, pooling); only the linear layers' products read their
//! inputs rounded to bf16, accumulating in f32.
//!
//! Written here rather than taken from a crate: `gemm` (what the f32 path uses) has no AMX
//! kernel, and oneDNN would bring a C++ build. Rust has no stable AMX intrinsics, so the five
//! instructions used (`ldtilecfg`, `tileloadd`, `tdpbf16ps`, `tilestored` and `tilerelease`)
//! are inline assembly. Linux hands a process the tiles' state only after
//! `arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)`, asked once in [`available`].
//!
//! The kernel: `C[n×m] = A[n×k] · B[k×m]` in blocks of 32×32 (four 16×16 f32 tiles of C, two
//! tiles of A, two of B), stepping k by 32. A is rounded to bf16 per call, rows padded to 32
//! and k to 32; B is packed once at load ([`Packed`]) in the pair-interleaved layout the tiles
//! read (`[k/2][m][2]`).

use rayon::prelude::*;

/// Whether this CPU and OS run AMX bf16 products (checked once: CPUID, then the kernel's
/// permission for the tiles' state).
#[must_use]
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| seamcut_products::simd_cap() >= 2 && detect())
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn detect() -> bool {
    // CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE.
    if std::arch::x86_64::__cpuid(0).eax < 7 {
        return false;
    }
    let edx = std::arch::x86_64::__cpuid_count(7, 0).edx;
    if edx & (1 << 22) == 0 || edx & (1 << 24) == 0 {
        return false;
    }
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: arch_prctl with these arguments only asks for a permission; it touches no memory.
    unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn detect() -> bool {
    false
}

use seamcut_products::bf16::round as bf16;

/// Up to 16 rows of `x` (`k` wide) into their A tiles in `dst`: for each k step a 16 × 32
/// tile of bf16, zero where k or the rows run out.
#[inline(always)]
fn pack_a(dst: &mut [u16], src: &[f32], k: usize) {
    for (r, row) in src.chunks(k).enumerate() {
        for (kb, piece) in row.chunks(32).enumerate() {
            for (d, &v) in dst[kb * TILE + r * 32..][..piece.len()].iter_mut().zip(piece) {
                *d = bf16(v);
            }
        }
    }
}

/// [`pack_a`] compiled for AVX-512 (every CPU with AMX has it): in baseline x86-64 code the
/// conversion took half as long as the tiles' products.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn pack_a_avx512(dst: &mut [u16], src: &[f32], k: usize) {
    pack_a(dst, src, k);
}

fn pack_a_fast(dst: &mut [u16], src: &[f32], k: usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512bw") {
        // SAFETY: the CPU has the features the function is compiled for (checked above).
        unsafe { pack_a_avx512(dst, src, k) };
        return;
    }
    pack_a(dst, src, k);
}

fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// A weight matrix `[k, m]` (row-major, as the fused ops hold `wt`) packed for the tiles:
/// bf16, k padded to 32 and m to 32, in tiles of 16 pair-rows × 16 columns (1 KB each, pairs
/// of rows interleaved, as `tdpbf16ps` reads B), the tiles of a k step next to each other.
#[derive(Debug, Clone)]
pub struct Packed {
    k: usize,
    m: usize,
    kp: usize,
    mp: usize,
    data: Vec<u16>,
}

/// u16 values in one 16 × 64-byte tile.
const TILE: usize = 512;

impl Packed {
    /// Pack `wt` (`k × m`, row-major).
    ///
    /// # Panics
    /// If `wt` does not hold `k × m` values.
    #[must_use]
    pub fn new(wt: &[f32], k: usize, m: usize) -> Self {
        assert_eq!(wt.len(), k * m, "a {k}×{m} matrix");
        let (kp, mp) = (round_up(k.max(1), 32), round_up(m.max(1), 32));
        let mut data = vec![0u16; kp * mp];
        for r in 0..k {
            let (kb, pair, odd) = (r / 32, (r % 32) / 2, r % 2);
            for (j, &v) in wt[r * m..(r + 1) * m].iter().enumerate() {
                let tile = kb * (mp / 16) + j / 16;
                data[tile * TILE + pair * 32 + (j % 16) * 2 + odd] = bf16(v);
            }
        }
        Self { k, m, kp, mp, data }
    }

    /// Rows (the products' inner dimension) and columns.
    #[must_use]
    pub fn shape(&self) -> (usize, usize) {
        (self.k, self.m)
    }

    /// The B tile of k step `kb` and columns `16·jb..16·jb + 16`.
    fn tile(&self, kb: usize, jb: usize) -> *const u16 {
        self.data[(kb * (self.mp / 16) + jb) * TILE..].as_ptr()
    }
}

/// The tile configuration: palette 1, eight tiles of 16 rows × 64 bytes.
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    colsb: [u16; 16],
    rows: [u8; 16],
}

const CONFIG: TileConfig = TileConfig {
    palette: 1,
    start_row: 0,
    reserved: [0; 14],
    colsb: [64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0],
    rows: [16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0],
};

/// `x · w` (+ `bias` on every row) for `x` `[n, k]` row-major f32, in bf16 on AMX tiles with
/// f32 accumulation. Call only where [`available`] is true.
///
/// # Panics
/// If `x` does not hold `n × k` values for `w`'s `k`, or the bias is not `m` long.
#[must_use]
pub fn product(x: &[f32], n: usize, w: &Packed, bias: Option<&[f32]>) -> Vec<f32> {
    let (k, m, kp, mp) = (w.k, w.m, w.kp, w.mp);
    assert_eq!(x.len(), n * k, "an {n}×{k} input");
    assert!(bias.is_none_or(|b| b.len() == m), "a bias of {m}");
    assert!(available(), "AMX products on a CPU without AMX");
    if n == 0 {
        return Vec::new();
    }
    let (np, ksteps) = (round_up(n, 32), kp / 32);
    // A in bf16 tiles: for each 16 rows, its k steps' 16 × 32 tiles in a row (zero padding).
    let mut a = vec![0u16; np * kp];
    a.par_chunks_mut(16 * kp).zip(x.par_chunks(16 * k)).for_each(|(dst, src)| pack_a_fast(dst, src, k));
    // C starts as the bias (each tile loaded from one bias row with stride 0), else zero.
    let mut bias_row = vec![0f32; mp];
    if let Some(b) = bias {
        bias_row[..m].copy_from_slice(b);
    }
    // The tiles store straight into the output when its rows are whole blocks of columns;
    // else into a padded buffer copied out after.
    let direct = mp == m;
    let mut c: Vec<f32> = Vec::with_capacity(np * mp);
    let spare = &mut c.spare_capacity_mut()[..np * mp];
    spare.par_chunks_mut(32 * mp).enumerate().for_each(|(rb, block)| {
        // SAFETY: each tile load reads one 1 KB tile inside `a` (row block rb, k step kb) or
        // `w.data` (k step kb, column block), or 16 × 64 bytes of `bias_row` with stride 0;
        // each store writes 16 rows of 16 f32 inside this task's 32 × mp block of `c`'s
        // capacity. The tile configuration is loaded on this thread before any tile
        // instruction and released after.
        unsafe {
            tile_config(&CONFIG);
            let a0 = a.as_ptr().add(rb * 32 * kp);
            let a1 = a0.add(16 * kp);
            let out = block.as_mut_ptr().cast::<f32>();
            for cb in 0..mp / 32 {
                let bias = bias_row.as_ptr().add(cb * 32);
                tile_init_c(bias, bias.add(16));
                for kb in 0..ksteps {
                    tile_step(
                        a0.add(kb * TILE),
                        a1.add(kb * TILE),
                        w.tile(kb, 2 * cb),
                        w.tile(kb, 2 * cb + 1),
                    );
                }
                let c0 = out.add(cb * 32);
                tile_store_c(c0, c0.add(16), c0.add(16 * mp), c0.add(16 * mp + 16), mp * 4);
            }
            tile_release();
        }
    });
    // SAFETY: every one of the np × mp values was written by a tile store above.
    unsafe { c.set_len(np * mp) };
    if direct {
        c.truncate(n * m);
        return c;
    }
    c.chunks(mp).take(n).flat_map(|row| row[..m].iter().copied()).collect()
}

#[cfg(target_arch = "x86_64")]
unsafe fn tile_config(cfg: &TileConfig) {
    std::arch::asm!("ldtilecfg [{}]", in(reg) cfg as *const TileConfig, options(nostack, readonly));
}

/// Load the four C tiles (tmm0..tmm3) with the bias: 16 rows of `b0` (columns 0..16) and of
/// `b1` (16..32), stride 0.
#[cfg(target_arch = "x86_64")]
unsafe fn tile_init_c(b0: *const f32, b1: *const f32) {
    std::arch::asm!(
        "tileloadd tmm0, [{b0} + {z}*1]",
        "tileloadd tmm1, [{b1} + {z}*1]",
        "tileloadd tmm2, [{b0} + {z}*1]",
        "tileloadd tmm3, [{b1} + {z}*1]",
        b0 = in(reg) b0,
        b1 = in(reg) b1,
        z = in(reg) 0usize,
        options(nostack, readonly),
    );
}

/// One k step: A rows 0..16 (`a0`) and 16..32 (`a1`) into tmm4/tmm5, B columns 0..16 (`b0`)
/// and 16..32 (`b1`) into tmm6/tmm7 (each a contiguous tile, 64-byte rows), and the four
/// products into tmm0..tmm3.
#[cfg(target_arch = "x86_64")]
unsafe fn tile_step(a0: *const u16, a1: *const u16, b0: *const u16, b1: *const u16) {
    std::arch::asm!(
        "tileloadd tmm4, [{a0} + {s}*1]",
        "tileloadd tmm5, [{a1} + {s}*1]",
        "tileloadd tmm6, [{b0} + {s}*1]",
        "tileloadd tmm7, [{b1} + {s}*1]",
        "tdpbf16ps tmm0, tmm4, tmm6",
        "tdpbf16ps tmm1, tmm4, tmm7",
        "tdpbf16ps tmm2, tmm5, tmm6",
        "tdpbf16ps tmm3, tmm5, tmm7",
        a0 = in(reg) a0,
        a1 = in(reg) a1,
        b0 = in(reg) b0,
        b1 = in(reg) b1,
        s = in(reg) 64usize,
        options(nostack, readonly),
    );
}

/// Store tmm0..tmm3 (rows 0..16 × columns 0..16, 0..16 × 16..32, 16..32 × 0..16,
/// 16..32 × 16..32 of the block) with a row stride of `stride` bytes.
#[cfg(target_arch = "x86_64")]
unsafe fn tile_store_c(c00: *mut f32, c01: *mut f32, c10: *mut f32, c11: *mut f32, stride: usize) {
    std::arch::asm!(
        "tilestored [{c00} + {s}*1], tmm0",
        "tilestored [{c01} + {s}*1], tmm1",
        "tilestored [{c10} + {s}*1], tmm2",
        "tilestored [{c11} + {s}*1], tmm3",
        c00 = in(reg) c00,
        c01 = in(reg) c01,
        c10 = in(reg) c10,
        c11 = in(reg) c11,
        s = in(reg) stride,
        options(nostack),
    );
}

#[cfg(target_arch = "x86_64")]
unsafe fn tile_release() {
    std::arch::asm!("tilerelease", options(nostack, nomem));
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile_config(_: &TileConfig) {}
#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile_init_c(_: *const f32, _: *const f32) {}
#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile_step(_: *const u16, _: *const u16, _: *const u16, _: *const u16) {}
#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile_store_c(_: *mut f32, _: *mut f32, _: *mut f32, _: *mut f32, _: usize) {}
#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile_release() {}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf16_value(x: f32) -> f32 {
        f32::from_bits(u32::from(bf16(x)) << 16)
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        assert_eq!(bf16(1.0), 0x3f80);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to even (1.0).
        assert_eq!(bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert!(bf16_value(f32::NAN).is_nan());
    }

    /// The tiles' product equals the product of the bf16-rounded inputs (summed in f64 here),
    /// on shapes with ragged rows, inner dimension and columns.
    #[test]
    fn amx_product_equals_the_bf16_reference() {
        if !available() {
            eprintln!("skipped: no AMX on this CPU");
            return;
        }
        for &(n, k, m) in &[(1, 1, 1), (37, 70, 45), (64, 384, 1152), (5, 1536, 384)] {
            let x: Vec<f32> = (0..n * k).map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0).collect();
            let wt: Vec<f32> = (0..k * m).map(|i| ((i * 104_729 % 997) as f32 / 498.5) - 1.0).collect();
            let bias: Vec<f32> = (0..m).map(|j| j as f32 / 100.0).collect();
            let got = product(&x, n, &Packed::new(&wt, k, m), Some(&bias));
            for i in 0..n {
                for j in 0..m {
                    let want: f64 = (0..k)
                        .map(|t| f64::from(bf16_value(x[i * k + t])) * f64::from(bf16_value(wt[t * m + j])))
                        .sum::<f64>()
                        + f64::from(bias[j]);
                    let g = f64::from(got[i * m + j]);
                    assert!(
                        (g - want).abs() <= 1e-4 * (1.0 + want.abs()),
                        "({n},{k},{m}) [{i},{j}]: {g} vs {want}"
                    );
                }
            }
        }
    }
}
