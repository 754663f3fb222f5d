//! The encoders' linear-layer products on the CPU at real shapes, per precision: f32 (`gemm`,
//! as the fused path runs it), int8 on every path this CPU has (`seamcut::embed::int8`), and
//! bf16 on AMX tiles where the CPU has them. Throughput in multiply-adds ×2 (GFLOP/s, or
//! GOP/s for int8), the int8 figures including the activations' quantization.
//!
//! `cargo bench --bench products` (the machine's threads; `RAYON_NUM_THREADS` to pin). Record
//! in benches/RESULTS.md with the CPU.

use candle_core::{Device, Tensor};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use seamcut::embed::int8;

/// (name, tokens, k, m): MiniLM's QKV, feed-forward up and down, and MPNet's up, over a batch
/// of 512 tokens.
const SHAPES: &[(&str, usize, usize, usize)] = &[
    ("minilm_qkv", 512, 384, 1152),
    ("minilm_up", 512, 384, 1536),
    ("minilm_down", 512, 1536, 384),
    ("mpnet_up", 512, 768, 3072),
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
        g.bench_with_input(BenchmarkId::new("f32", name), &(), |bench, ()| {
            bench.iter(|| seamcut::embed::fused::linear(&xt, &wtt, &bt).unwrap());
        });
        let packed = int8::Packed::new(&wt, k, m);
        for &isa in int8::Isa::all_here() {
            g.bench_with_input(BenchmarkId::new(format!("int8-{}", isa.name()), name), &(), |bench, ()| {
                bench.iter(|| int8::product_on(isa, &x, n, &packed, Some(&b)));
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

criterion_group!(benches, products);
criterion_main!(benches);
