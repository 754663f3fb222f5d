//! The encoders' linear-layer products on the CPU at real shapes, per precision: f32
//! (seamcut's kernel on each level this CPU has, as the fused path runs it, beside `gemm`'s),
//! int8 on every path this CPU has (`seamcut::embed::int8`), and bf16 on AVX-512 BF16 and on
//! AMX tiles where the CPU has them. Throughput in multiply-adds ×2 (GFLOP/s, or GOP/s for
//! int8), the int8 figures including the activations' quantization.
//!
//! `cargo bench --bench products` (the machine's threads; `RAYON_NUM_THREADS` to pin). Record
//! in benches/RESULTS.md with the CPU. The `peak` group measures what the instructions
//! themselves allow on this CPU, at its clock while the bench runs.

use candle_core::{Device, Tensor};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use seamcut::embed::int8;

/// (name, tokens, k, m): MiniLM's QKV, feed-forward up and down, MPNet's up and
/// Qwen3-Embedding-0.6B's down, over a batch of 512 tokens.
const SHAPES: &[(&str, usize, usize, usize)] = &[
    ("minilm_qkv", 512, 384, 1152),
    ("minilm_up", 512, 384, 1536),
    ("minilm_down", 512, 1536, 384),
    ("mpnet_up", 512, 768, 3072),
    ("qwen3_down", 512, 3072, 1024),
];

fn noise(n: usize, mut s: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

fn products(c: &mut Criterion) {
    let mut g = c.benchmark_group("products");
    g.sample_size(20);
    for &(name, n, k, m) in SHAPES {
        g.throughput(Throughput::Elements((2 * n * k * m) as u64));
        let (x, wt, b) = (noise(n * k, 1), noise(k * m, 2), noise(m, 3));
        let xt = Tensor::from_slice(&x, (n, k), &Device::Cpu).unwrap();
        let wtt = Tensor::from_slice(&wt, (k, m), &Device::Cpu).unwrap();
        let bt = Tensor::from_slice(&b, m, &Device::Cpu).unwrap();
        g.bench_with_input(BenchmarkId::new("f32-gemm", name), &(), |bench, ()| {
            bench.iter(|| seamcut::embed::fused::linear(&xt, &wtt, &bt).unwrap());
        });
        let packed = seamcut_products::f32::Packed::new(&wt, k, m);
        for level in 1..=seamcut_products::attention::cpu_level() {
            let isa = if level == 2 { "avx512" } else { "avx2" };
            g.bench_with_input(BenchmarkId::new(format!("f32-{isa}"), name), &(), |bench, ()| {
                bench.iter(|| seamcut_products::f32::product(&x, n, &packed, Some(&b), level));
            });
        }
        for &isa in int8::Isa::all_here() {
            let packed = int8::Packed::with_levels(&wt, k, m, isa.weight_levels());
            g.bench_with_input(BenchmarkId::new(format!("int8-{}", isa.name()), name), &(), |bench, ()| {
                bench.iter(|| int8::product_on(isa, &x, n, &packed, Some(&b)));
            });
        }
        if seamcut::embed::bf16::available() {
            let packed = seamcut::embed::bf16::Packed::new(&wt, k, m);
            g.bench_with_input(BenchmarkId::new("bf16-avx512", name), &(), |bench, ()| {
                bench.iter(|| seamcut::embed::bf16::product(&x, n, &packed, Some(&b)));
            });
        }
        if seamcut::embed::amx::available() {
            let tiles = seamcut::embed::amx::Packed::new(&wt, k, m);
            g.bench_with_input(BenchmarkId::new("bf16-amx", name), &(), |bench, ()| {
                bench.iter(|| seamcut::embed::amx::product(&x, n, &tiles, Some(&b)));
            });
        }
    }
    g.finish();
}

/// The instructions' own peak on every thread: independent chains of the one instruction
/// each precision's products are built on (f32 FMA, `vpdpbusd`, `vdpbf16ps`, on 512-bit
/// registers), enough chains to cover its latency, nothing else in the loop. Divided into the
/// products' rates above, it says how far each path is from the machine (issue 39 §6).
/// Counted as the products are: a multiply-add is 2.
#[cfg(target_arch = "x86_64")]
mod peak {
    use std::arch::x86_64::*;

    /// Independent accumulators per thread (FMA latency 4 × 2 pipes needs 8; 12 leaves room).
    const CHAINS: usize = 12;
    /// Loop trips per call.
    pub const TRIPS: usize = 100_000;
    /// Multiply-adds ×2 per call: `CHAINS` instructions a trip, each 16 f32 lanes (FMA), 64
    /// byte pairs (`vpdpbusd`) or 32 bf16 pairs (`vdpbf16ps`); on 256-bit registers, 8 f32
    /// lanes (FMA) or 32 byte pairs (AVX2's `vpmaddubsw`, `vpmaddwd` by ones and an add, what
    /// its int8 kernel does for a `vpdpbusd`).
    pub fn ops(kind: &str) -> u64 {
        let per = match kind {
            "fma-f32" => 16,
            "vpdpbusd" => 64,
            "fma-f32-ymm" => 8,
            "maddubs-ymm" => 32,
            _ => 32,
        };
        (2 * CHAINS * TRIPS * per) as u64
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fma_ymm() -> f32 {
        let (a, b) =
            (_mm256_set1_ps(std::hint::black_box(0.999)), _mm256_set1_ps(std::hint::black_box(1e-3)));
        let mut acc = [_mm256_set1_ps(std::hint::black_box(1.0)); CHAINS];
        for _ in 0..TRIPS {
            for v in &mut acc {
                *v = _mm256_fmadd_ps(*v, a, b);
            }
        }
        acc.iter().map(|&v| std::mem::transmute::<__m256, [f32; 8]>(v).iter().sum::<f32>()).sum()
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn maddubs_ymm() -> i32 {
        // Each chain's product reads its own sum (as bytes), so nothing is loop-invariant.
        let a = _mm256_set1_epi8(std::hint::black_box(3));
        let ones = _mm256_set1_epi16(1);
        let mut acc = [_mm256_set1_epi8(std::hint::black_box(-2)); CHAINS];
        for _ in 0..TRIPS {
            for v in &mut acc {
                *v = _mm256_add_epi32(*v, _mm256_madd_epi16(_mm256_maddubs_epi16(a, *v), ones));
            }
        }
        acc.iter().map(|&v| std::mem::transmute::<__m256i, [i32; 8]>(v).iter().sum::<i32>()).sum()
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn fma() -> f32 {
        // Opaque inputs, so the compiler cannot fold the chains.
        let (a, b) =
            (_mm512_set1_ps(std::hint::black_box(0.999)), _mm512_set1_ps(std::hint::black_box(1e-3)));
        let mut acc = [_mm512_set1_ps(std::hint::black_box(1.0)); CHAINS];
        for _ in 0..TRIPS {
            for v in &mut acc {
                *v = _mm512_fmadd_ps(*v, a, b);
            }
        }
        acc.iter().map(|&v| _mm512_reduce_add_ps(v)).sum()
    }

    #[target_feature(enable = "avx512f,avx512vnni")]
    pub unsafe fn vnni() -> i32 {
        let (a, b) = (_mm512_set1_epi8(std::hint::black_box(3)), _mm512_set1_epi8(std::hint::black_box(-2)));
        let mut acc = [_mm512_setzero_si512(); CHAINS];
        for _ in 0..TRIPS {
            for v in &mut acc {
                *v = _mm512_dpbusd_epi32(*v, a, b);
            }
        }
        acc.iter().map(|&v| _mm512_reduce_add_epi32(v)).sum()
    }

    #[target_feature(enable = "avx512f,avx512bf16")]
    pub unsafe fn bf16() -> f32 {
        let a: __m512bh = std::mem::transmute(_mm512_set1_epi16(std::hint::black_box(0x3f80)));
        let b: __m512bh = std::mem::transmute(_mm512_set1_epi16(std::hint::black_box(0x3a83)));
        let mut acc = [_mm512_setzero_ps(); CHAINS];
        for _ in 0..TRIPS {
            for v in &mut acc {
                *v = _mm512_dpbf16_ps(*v, a, b);
            }
        }
        acc.iter().map(|&v| _mm512_reduce_add_ps(v)).sum()
    }
}

#[cfg(target_arch = "x86_64")]
fn peak(c: &mut Criterion) {
    use rayon::prelude::*;
    let threads = rayon::current_num_threads();
    let mut g = c.benchmark_group("peak");
    g.sample_size(20);
    let have = |f: &str| match f {
        "fma-f32" => std::arch::is_x86_feature_detected!("avx512f"),
        "vpdpbusd" => std::arch::is_x86_feature_detected!("avx512vnni"),
        "fma-f32-ymm" | "maddubs-ymm" => {
            std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        }
        _ => std::arch::is_x86_feature_detected!("avx512bf16"),
    };
    for kind in ["fma-f32", "vpdpbusd", "vdpbf16ps", "fma-f32-ymm", "maddubs-ymm"] {
        if !have(kind) {
            continue;
        }
        g.throughput(Throughput::Elements(peak::ops(kind) * threads as u64));
        g.bench_function(BenchmarkId::new(kind, format!("{threads}-threads")), |bench| {
            bench.iter(|| {
                // SAFETY: the CPU has the instruction (checked above).
                (0..threads)
                    .into_par_iter()
                    .map(|_| unsafe {
                        match kind {
                            "fma-f32" => std::hint::black_box(peak::fma()) as f64,
                            "vpdpbusd" => f64::from(std::hint::black_box(peak::vnni())),
                            "fma-f32-ymm" => std::hint::black_box(peak::fma_ymm()) as f64,
                            "maddubs-ymm" => f64::from(std::hint::black_box(peak::maddubs_ymm())),
                            _ => f64::from(std::hint::black_box(peak::bf16())),
                        }
                    })
                    .sum::<f64>()
            });
        });
    }
    g.finish();
}

#[cfg(not(target_arch = "x86_64"))]
fn peak(_: &mut Criterion) {}

criterion_group!(benches, products, peak);
criterion_main!(benches);
