//! Segmenter throughput on 10 MB of English prose, one thread, side by side with
//! unicode-segmentation's UAX #29 sentence splitter as the reference.
//! Record results in benches/RESULTS.md.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use seamcut::segment::Segmenter;
use unicode_segmentation::UnicodeSegmentation;

mod common;

fn segment(c: &mut Criterion) {
    let text = common::prose(10 << 20);
    let seg = Segmenter::default();
    let mut g = c.benchmark_group("segment_10MB");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(10);
    g.bench_function("seamcut_sentences", |b| b.iter(|| seg.sentences(std::hint::black_box(&text)).len()));
    g.bench_function("seamcut_paragraphs", |b| b.iter(|| seg.paragraphs(std::hint::black_box(&text)).len()));
    g.bench_function("unicode_segmentation_sentences", |b| {
        b.iter(|| std::hint::black_box(&text).unicode_sentences().count())
    });
    g.finish();
}

criterion_group!(benches, segment);
criterion_main!(benches);
