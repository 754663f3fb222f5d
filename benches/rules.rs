//! Boundary rules over one million sentences (synthetic band and series with topic runs of
//! 3–11 sentences), one thread: sentence-steps per second. Record in benches/RESULTS.md.
//!
//! `worst_cases` times inputs that were once quadratic (their tests check the results; the
//! time, which a test must not assert, is here): 400k one-token chunks merged under a
//! minimum (`rules::sizing`), and TextTiling depth scores on a flat run of 200k identical
//! units (`rules::global`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use seamcut::band::Band;
use seamcut::cap::Cap;
use seamcut::rules::breakpoint::{breakpoints, BreakpointParams};
use seamcut::rules::global::depth_scores;
use seamcut::rules::maxmin::{maxmin, MaxMinParams};
use seamcut::rules::minima::{minima, MinimaParams};
use seamcut::rules::sizing::size;

const N: usize = 1_000_000;
const WIDTH: usize = 32;

/// A small xorshift generator: deterministic input without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Topic id per sentence: runs of 3–11.
fn topics(rng: &mut Rng) -> Vec<u32> {
    let mut t = Vec::with_capacity(N);
    let mut id = 0;
    while t.len() < N {
        let run = 3 + (rng.next() * 9.0) as usize;
        t.extend(std::iter::repeat_n(id, run.min(N - t.len())));
        id += 1;
    }
    t
}

fn inputs() -> (Band, Vec<f64>, Vec<usize>) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let t = topics(&mut rng);
    let mut data = vec![0f32; N * WIDTH];
    for i in 0..N {
        for k in 0..WIDTH.min(i) {
            let j = i - 1 - k;
            data[i * WIDTH + k] = if t[i] == t[j] { 0.55 + 0.3 * rng.next() } else { 0.1 + 0.3 * rng.next() };
        }
    }
    let series: Vec<f64> = (0..N).map(|i| f64::from(data[i * WIDTH])).collect();
    let tokens: Vec<usize> = (0..N).map(|_| 8 + (rng.next() * 30.0) as usize).collect();
    (Band::from_parts(N, WIDTH, data), series, tokens)
}

fn rules(c: &mut Criterion) {
    let (band, series, tokens) = inputs();
    let chars: Vec<usize> = tokens.iter().map(|t| t * 5).collect();
    let mut g = c.benchmark_group("rules_1M_sentences");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    g.bench_function("maxmin", |b| {
        b.iter(|| maxmin(&band, &tokens, Cap::NONE, &MaxMinParams::default()).len())
    });
    // chonkie's default chunk_size, 2048, as the cap.
    let cap = Cap::new(2048);
    g.bench_function("minima", |b| b.iter(|| minima(&series, &tokens, cap, &MinimaParams::default()).len()));
    g.bench_function("breakpoint_percentile", |b| {
        b.iter(|| breakpoints(&series[1..], &chars, &BreakpointParams::default()).len())
    });
    g.finish();
}

fn worst_cases(c: &mut Criterion) {
    let mut g = c.benchmark_group("worst_cases");
    g.sample_size(10);
    let n = 400_000;
    let tokens = vec![1; n];
    let seam: Vec<f32> = (0..n).map(|i| (i % 7) as f32 / 7.0).collect();
    let starts: Vec<usize> = (0..n).collect();
    g.bench_function("sizing_merge_400k_one_token_chunks", |b| {
        b.iter(|| size(&starts, &tokens, &seam, Cap::new(64), 8).len());
    });
    let v: Vec<f32> = (0..200_000).flat_map(|_| [1.0f32, 0.0]).collect();
    let band = Band::from_vectors(&v, 2, 3);
    g.bench_function("depth_scores_flat_200k", |b| b.iter(|| depth_scores(&band, 2).len()));
    g.finish();
}

criterion_group!(benches, rules, worst_cases);
criterion_main!(benches);
