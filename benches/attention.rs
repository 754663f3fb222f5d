//! The long-context architectures' tiled attention (`seamcut::embed::attention::tiled`, f32 on
//! the CPU) at the published models' head shapes: NomicBERT's full attention (12 heads of 64)
//! at 8,192 tokens and at 64 texts of 128, Qwen3-Embedding-0.6B's causal grouped-query
//! attention (16 heads of 128 over 8 key/value heads) at 8,192, and ModernBERT's local window
//! (128 wide) at 8,192; and the late pass's windows (16 texts of 254 tokens) at MiniLM's
//! (12 heads of 32) and MPNet's (12 of 64) shapes, where the BERT family's own attention
//! (`fused::attention`: a `gemm` product, a softmax and a `gemm` per sequence and head) runs
//! beside the tiled one (`f32-gemm`). Throughput counts the two products' multiply-adds ×2 over the keys each
//! query sees (GFLOP/s), so it compares with the FMA peak of `cargo bench --bench products`.
//!
//! `cargo bench --bench attention` (the machine's threads; `RAYON_NUM_THREADS` to pin).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use seamcut::embed::attention::{tiled, Heads, Mask, View};

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

/// (name, texts, tokens per text, heads, kv heads, head size, mask).
const SHAPES: &[(&str, usize, usize, usize, usize, usize, Mask)] = &[
    ("nomic_8192x1", 1, 8192, 12, 12, 64, Mask::Full),
    ("nomic_128x64", 64, 128, 12, 12, 64, Mask::Full),
    ("qwen3_8192x1", 1, 8192, 16, 8, 128, Mask::Causal),
    ("modernbert_local_8192x1", 1, 8192, 12, 12, 64, Mask::Window(64)),
    ("minilm_128x64", 64, 128, 12, 12, 32, Mask::Full),
    ("minilm_254x16", 16, 254, 12, 12, 32, Mask::Full),
    ("mpnet_254x16", 16, 254, 12, 12, 64, Mask::Full),
];

fn attention(c: &mut Criterion) {
    let mut g = c.benchmark_group("attention");
    g.sample_size(10);
    for &(name, texts, len, nh, kvh, d, mask) in SHAPES {
        let n = texts * len;
        let cu: Vec<usize> = (0..=texts).map(|i| i * len).collect();
        // Keys each query sees, summed over a text's queries.
        let seen: usize = (0..len)
            .map(|i| match mask {
                Mask::Full => len,
                Mask::Causal => i + 1,
                Mask::Window(w) => (i + w + 1).min(len) - i.saturating_sub(w),
            })
            .sum();
        g.throughput(Throughput::Elements((2 * 2 * texts * seen * nh * d) as u64));
        // Q, K and V side by side in one row per token, as the fused projection leaves them.
        let stride = (nh + 2 * kvh) * d;
        let qkv = noise(n * stride, 7);
        let heads = Heads { heads: nh, kv_heads: kvh, dim: d, scale: 1.0 / (d as f32).sqrt() };
        let view = |offset| View { data: &qkv, stride, offset };
        g.bench_with_input(BenchmarkId::new("f32", name), &(), |b, ()| {
            b.iter(|| tiled(view(0), view(nh * d), view((nh + kvh) * d), &cu, heads, mask));
        });
        if nh == kvh && mask == Mask::Full {
            // The BERT-family path (`fused::attention`): two products and a softmax per
            // (sequence, head), on gemm (bf16 and int8 jobs) or on the exact kernels (f32).
            let t = candle_core::Tensor::from_slice(&qkv, (n, stride), &candle_core::Device::Cpu).unwrap();
            for (label, exact) in [("f32-gemm", false), ("f32-exact", true)] {
                g.bench_with_input(BenchmarkId::new(label, name), &(), |b, ()| {
                    b.iter(|| {
                        seamcut::embed::fused::attention(&t, &cu, nh, heads.scale, None, exact).unwrap()
                    });
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, attention);
criterion_main!(benches);
