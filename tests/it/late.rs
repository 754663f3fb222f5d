//! The late pass (`seamcut::embed::late`): parity with a reference late pooling written in
//! Python on sentence-transformers' token embeddings (`tests/fixtures/make_late_fixtures.py`,
//! fixtures `tests/fixtures/late*.{json,npy}`), for all-MiniLM-L6-v2, all-mpnet-base-v2 (where
//! `models/fetch-mpnet.sh` has fetched it) and the tiny MPNet and XLM-R layouts, and for windows
//! centred on the spans (`tests/fixtures/make_late_centred_fixtures.py`); determinism
//! across batch budgets, thread counts and batch company; the static model; a CLS-pooled model;
//! the options' and spans' errors.
//!
//! Needs `models/all-MiniLM-L6-v2` (run `models/fetch-minilm.sh`; CI does).

use std::path::PathBuf;

use seamcut::device::Compute;
use seamcut::embed::late::{self, LateDoc, LateOptions, LateVectors};
use seamcut::embed::{embed_texts, EmbedOptions, Embedder, FlatBatch};
use seamcut::models::load_dir;
use seamcut::span::Span;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn minilm() -> Box<dyn Embedder> {
    let dir = root().join("models/all-MiniLM-L6-v2");
    assert!(
        dir.join("model.safetensors").is_file(),
        "run models/fetch-minilm.sh first ({} is missing)",
        dir.display()
    );
    load_dir(&dir, &Compute::cpu()).unwrap()
}

struct Doc {
    name: String,
    text: String,
    units: Vec<Span>,
    /// Runs of units.
    chunks: Vec<(usize, usize)>,
}

impl Doc {
    fn chunk_spans(&self) -> Vec<Span> {
        self.chunks.iter().map(|&(a, b)| Span::new(self.units[a].start, self.units[b - 1].end)).collect()
    }
}

fn fixture() -> (Vec<Doc>, serde_json::Value) {
    let data = std::fs::read_to_string(root().join("tests/fixtures/late.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&data).unwrap();
    let pairs = |x: &serde_json::Value| -> Vec<(usize, usize)> {
        x.as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_u64().unwrap() as usize, p[1].as_u64().unwrap() as usize))
            .collect()
    };
    let docs = v["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| Doc {
            name: d["name"].as_str().unwrap().to_string(),
            text: d["text"].as_str().unwrap().to_string(),
            units: pairs(&d["units"]).into_iter().map(|(a, b)| Span::new(a, b)).collect(),
            chunks: pairs(&d["chunks"]),
        })
        .collect();
    (docs, v["models"].clone())
}

fn late_docs<'a>(docs: &'a [Doc], spans: &'a [Vec<Span>]) -> Vec<LateDoc<'a>> {
    docs.iter().zip(spans).map(|(d, s)| LateDoc { text: &d.text, spans: s }).collect()
}

/// 1 − cosine, with zero vectors equal only to zero vectors.
fn distance(a: &[f32], b: &[f32]) -> f64 {
    let za = a.iter().all(|x| *x == 0.0);
    let zb = b.iter().all(|x| *x == 0.0);
    if za || zb {
        return if za && zb { 0.0 } else { 1.0 };
    }
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    1.0 - dot / (na * nb)
}

/// seamcut's late vectors of every fixture document against the reference's, for each of the
/// model's configurations: unit vectors, chunk vectors aggregated from the units' sums, and
/// chunk vectors pooled from chunk spans directly; token counts per unit exactly.
fn check_model(model: &dyn Embedder, key: &str) {
    let (docs, models) = fixture();
    let m = &models[key];
    assert!(m.is_object(), "late.json has no {key} reference: rerun make_late_fixtures.py");
    let (want, rows, cols) =
        seamcut::npy::read_f32(&root().join("tests/fixtures").join(m["file"].as_str().unwrap())).unwrap();
    assert_eq!(cols, model.dim());
    let units: Vec<Vec<Span>> = docs.iter().map(|d| d.units.clone()).collect();
    let chunks: Vec<Vec<Span>> = docs.iter().map(Doc::chunk_spans).collect();
    let mut row = 0;
    let mut worst = (0f64, String::new());
    let mut seen_seam_crossing = false;
    for (c, cfg) in m["configs"].as_array().unwrap().iter().enumerate() {
        let (window, stride) = (cfg[0].as_u64().unwrap() as usize, cfg[1].as_u64().unwrap() as usize);
        let opts = LateOptions::for_model(model).with_window(window).with_stride(stride);
        let (by_unit, stats) = late::late_pool(model, &late_docs(&docs, &units), opts).unwrap();
        // Chunks pooled directly from chunk spans equal chunks aggregated from units; checked on
        // the first configuration (a second pass over every document).
        let by_chunk = if c == 0 {
            Some(late::late_pool(model, &late_docs(&docs, &chunks), opts).unwrap().0)
        } else {
            None
        };
        assert_eq!(stats.texts, docs.len());
        for (d, doc) in docs.iter().enumerate() {
            let counts = &m["counts"][c][d];
            let got_counts = &by_unit.counts[by_unit.doc(d)];
            let want_counts: Vec<u32> =
                counts.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
            assert_eq!(got_counts, &want_counts[..], "{key} {window}/{stride} {}: tokens per unit", doc.name);
            let base = by_unit.doc(d).start;
            let mut check = |what: String, got: &[f32]| {
                let dist = distance(got, &want[row * cols..(row + 1) * cols]);
                if dist > worst.0 {
                    worst = (dist, what.clone());
                }
                assert!(dist <= 1e-4, "{key} {window}/{stride} {what}: 1 - cos = {dist}");
                row += 1;
            };
            for u in 0..doc.units.len() {
                check(format!("{} unit {u}", doc.name), &by_unit.aggregate(base + u..base + u + 1));
            }
            for (k, &(a, b)) in doc.chunks.iter().enumerate() {
                let agg = by_unit.aggregate(base + a..base + b);
                if let Some(by_chunk) = &by_chunk {
                    let i = by_chunk.doc(d).start + k;
                    let direct = by_chunk.aggregate(i..i + 1);
                    assert!(
                        distance(&agg, &direct) < 1e-6,
                        "{} chunk {k}: aggregated and direct differ",
                        doc.name
                    );
                }
                check(format!("{} chunk {k}", doc.name), &agg);
            }
            // A span crossing a seam: a unit whose tokens straddle two windows' ownership.
            let n: usize = want_counts.iter().map(|&x| x as usize).sum();
            let owners = late::central_windows(n, &late::window_starts(n, window, stride), window, stride);
            let mut at = 0;
            for &cnt in &want_counts {
                let cnt = cnt as usize;
                if cnt > 1 && owners[at] != owners[at + cnt - 1] {
                    seen_seam_crossing = true;
                }
                at += cnt;
            }
        }
    }
    assert_eq!(row, rows, "every reference row compared");
    assert!(seen_seam_crossing, "the fixture has a unit across a window seam");
    eprintln!("late {key}: worst 1 - cos {:.2e} ({}) over {rows} vectors", worst.0, worst.1);
}

#[test]
fn minilm_matches_the_reference_late_pooling() {
    check_model(minilm().as_ref(), "minilm");
}

#[test]
fn mpnet_matches_the_reference_late_pooling() {
    // The tiny random MPNet (weights in the repo) checks the layout in CI; the real
    // all-mpnet-base-v2 (410 MB, models/fetch-mpnet.sh) where it has been fetched.
    let tiny = load_dir(&root().join("tests/fixtures/tiny-mpnet"), &Compute::cpu()).unwrap();
    check_model(tiny.as_ref(), "tiny_mpnet");
    let real = root().join("models/all-mpnet-base-v2");
    if real.join("model.safetensors").is_file() {
        check_model(load_dir(&real, &Compute::cpu()).unwrap().as_ref(), "mpnet");
    } else {
        eprintln!("all-mpnet-base-v2 not fetched (models/fetch-mpnet.sh): only the tiny MPNet checked");
    }
}

#[test]
fn xlm_roberta_layout_matches_the_reference_late_pooling() {
    let tiny = load_dir(&root().join("tests/fixtures/tiny-xlmr"), &Compute::cpu()).unwrap();
    check_model(tiny.as_ref(), "tiny_xlmr");
}

/// Windows centred on the spans (`Placement::Centred`) against the reference pooling written
/// from the rule in Python (`tests/fixtures/make_late_centred_fixtures.py`, all-MiniLM-L6-v2):
/// every document's units, then its chunks, each from their own pass, in three window sizes
/// (the default 254, and small windows where spans are grouped, own a window or fall back to
/// the grid); the windows run and the tokens pooled per span exactly, the vectors within
/// float rounding.
#[test]
fn centred_windows_match_the_reference_late_pooling() {
    let model = minilm();
    let (docs, _) = fixture();
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/late_centred.json")).unwrap(),
    )
    .unwrap();
    let (want, rows, cols) =
        seamcut::npy::read_f32(&root().join("tests/fixtures/late_centred_minilm.npy")).unwrap();
    assert_eq!(cols, model.dim());
    let mut row = 0;
    let mut worst = 0f64;
    let mut grouped = false;
    for (c, cfg) in meta["configs"].as_array().unwrap().iter().enumerate() {
        let (window, stride) = (cfg[0].as_u64().unwrap() as usize, cfg[1].as_u64().unwrap() as usize);
        let opts = LateOptions::for_model(model.as_ref())
            .with_window(window)
            .with_stride(stride)
            .with_placement(late::Placement::Centred);
        for (d, doc) in docs.iter().enumerate() {
            for (k, spans) in [doc.units.clone(), doc.chunk_spans()].into_iter().enumerate() {
                let at = 2 * d + k;
                let ld = [LateDoc { text: &doc.text, spans: &spans }];
                let prepared = late::prepare(model.as_ref(), &ld, opts).unwrap();
                let what = format!("{window}/{stride} {} {}", doc.name, ["units", "chunks"][k]);
                assert_eq!(
                    prepared.windows() as u64,
                    meta["windows"][c][at].as_u64().unwrap(),
                    "{what}: windows"
                );
                let want_counts: Vec<u32> = meta["counts"][c][at]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap() as u32)
                    .collect();
                assert_eq!(prepared.counts(), &want_counts[..], "{what}: tokens per span");
                // Fewer windows than spans with tokens: spans grouped into a shared window.
                grouped |= prepared.windows() > 1
                    && prepared.windows() < want_counts.iter().filter(|&&x| x > 0).count();
                let (vectors, _) = late::run(model.as_ref(), &prepared).unwrap();
                for i in 0..spans.len() {
                    let dist = distance(&vectors.aggregate(i..i + 1), &want[row * cols..(row + 1) * cols]);
                    worst = worst.max(dist);
                    assert!(dist <= 1e-4, "{what} span {i}: 1 - cos = {dist}");
                    row += 1;
                }
            }
        }
    }
    assert_eq!(row, rows, "every reference row compared");
    assert!(grouped, "the fixture groups spans into shared windows");
    eprintln!("late centred: worst 1 - cos {worst:.2e} over {rows} vectors");
}

/// Largest absolute difference between two passes' span sums, scaled by the sums' size.
fn max_rel_diff(a: &LateVectors, b: &LateVectors) -> f32 {
    assert_eq!(a.counts, b.counts);
    assert_eq!(a.doc_spans, b.doc_spans);
    let scale = a.sums.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-12);
    a.sums.iter().zip(&b.sums).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max) / scale
}

#[test]
fn late_vectors_do_not_depend_on_batches_threads_or_company() {
    let model = minilm();
    // Every fixture document but the long one (kept quick), in windows of 24 every 12 tokens:
    // 8 windows for the seam document.
    let (mut docs, _) = fixture();
    docs.retain(|d| d.name != "long");
    let units: Vec<Vec<Span>> = docs.iter().map(|d| d.units.clone()).collect();
    let all = late_docs(&docs, &units);
    let opts = LateOptions::for_model(model.as_ref()).with_window(24).with_stride(12);
    let pass = |docs: &[LateDoc<'_>], budget: usize, threads: usize| -> LateVectors {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| late::late_pool(model.as_ref(), docs, opts.with_batch_tokens(budget)).unwrap().0)
    };
    let base = pass(&all, 16_384, 2);
    for (budget, threads) in [(26, 1), (64, 2), (16_384, 1), (100_000, 2)] {
        let other = pass(&all, budget, threads);
        let d = max_rel_diff(&base, &other);
        assert!(d < 1e-5, "budget {budget}, {threads} threads: relative difference {d}");
    }
    // Each document alone gives what it gets in company.
    for (i, doc) in all.iter().enumerate() {
        let alone = pass(std::slice::from_ref(doc), 300, 2);
        let r = base.doc(i);
        let part = LateVectors {
            dim: base.dim,
            sums: base.sums[r.start * base.dim..r.end * base.dim].to_vec(),
            counts: base.counts[r.clone()].to_vec(),
            doc_spans: vec![0, r.len()],
        };
        let d = max_rel_diff(&part, &alone);
        assert!(d < 1e-5, "document {i} alone: relative difference {d}");
    }
}

/// The mean of the content tokens' states (special tokens left out) of `text` run as one
/// sequence.
fn content_mean(model: &dyn Embedder, text: &str) -> Vec<f32> {
    let (pre, post) = model.special_ids();
    let ids: Vec<u32> = pre.iter().chain(&model.content_ids(text)).chain(post).copied().collect();
    let mut fb = FlatBatch::default();
    fb.push(&ids);
    let states = model.token_states(&fb).unwrap().to_vec2::<f32>().unwrap();
    let mut mean = vec![0f32; model.dim()];
    for row in &states[pre.len()..ids.len() - post.len()] {
        mean.iter_mut().zip(row).for_each(|(m, x)| *m += x);
    }
    mean
}

#[test]
fn one_window_late_pooling_of_the_whole_text_is_the_mean_of_its_content_tokens() {
    // A text within one window, pooled as one span: the mean of its tokens' states, special
    // tokens left out (sentence-transformers' mean pooling counts [CLS] and [SEP] too, so the
    // model's ordinary vector is near this one, not equal).
    let model = minilm();
    let text = "Late chunking pools each chunk from the whole document. It keeps the context.";
    let spans = [Span::new(0, text.len())];
    let (v, _) = late::late_pool(
        model.as_ref(),
        &[LateDoc { text, spans: &spans }],
        LateOptions::for_model(model.as_ref()),
    )
    .unwrap();
    let d = distance(&v.aggregate(0..1), &content_mean(model.as_ref(), text));
    assert!(d < 1e-6, "1 - cos = {d}");
    assert_eq!(v.counts[0] as usize, model.content_ids(text).len());
    let (e, _) = embed_texts(model.as_ref(), &[text], EmbedOptions::default()).unwrap();
    let d = distance(&v.aggregate(0..1), e.row(0));
    assert!(d > 1e-4 && d < 1e-2, "near the ordinary vector, not equal: 1 - cos = {d}");
}

#[test]
fn token_states_mean_pool_to_the_models_vectors() {
    let model = minilm();
    let texts = ["Hello world.", "A longer sentence with a few more tokens in it, and a comma."];
    let (pre, post) = model.special_ids();
    let mut fb = FlatBatch::default();
    for t in texts {
        let ids: Vec<u32> = pre.iter().chain(&model.content_ids(t)).chain(post).copied().collect();
        fb.push(&ids);
    }
    let states = model.token_states(&fb).unwrap().to_vec2::<f32>().unwrap();
    assert_eq!(states.len(), fb.ids.len());
    let pooled = model.embed(&fb).unwrap();
    for i in 0..fb.len() {
        let mut mean = vec![0f32; model.dim()];
        for row in &states[fb.cu_seqlens[i]..fb.cu_seqlens[i + 1]] {
            mean.iter_mut().zip(row).for_each(|(m, x)| *m += x);
        }
        let d = distance(&mean, &pooled[i * model.dim()..(i + 1) * model.dim()]);
        assert!(d < 1e-6, "text {i}: 1 - cos = {d}");
    }
}

/// The late pass asks for the rows it pools alone (`Embedder::token_states_rows`), and the
/// BERT family then runs its last layer's output projection and feed-forward on those rows
/// only: each row must be the state `token_states` gives it, bit for bit, in f32 and int8,
/// for BERT (MiniLM), MPNet's relative bias and XLM-R's layout; ranges in any order, empty
/// ones, and a range past the batch a one-line error.
#[test]
fn token_states_of_some_rows_are_those_rows_of_all_states() {
    use seamcut::device::{DeviceSpec, Precision};
    let int8 = Compute::new(DeviceSpec::Cpu, Precision::Int8).unwrap();
    let dirs = [
        root().join("models/all-MiniLM-L6-v2"),
        root().join("tests/fixtures/tiny-mpnet"),
        root().join("tests/fixtures/tiny-xlmr"),
    ];
    let texts = [
        "The first text, a sentence of a dozen tokens or so.",
        "A second one. It has two sentences, and the second is a little longer than the first.",
        "Short.",
    ];
    for dir in &dirs {
        for compute in [Compute::cpu(), int8.clone()] {
            let model = load_dir(dir, &compute).unwrap();
            let (pre, post) = model.special_ids();
            let mut fb = FlatBatch::default();
            for t in texts {
                let ids: Vec<u32> = pre.iter().chain(&model.content_ids(t)).chain(post).copied().collect();
                fb.push(&ids);
            }
            let n = fb.ids.len();
            let all = model.token_states(&fb).unwrap().to_vec2::<f32>().unwrap();
            // Pieces of every sequence, out of order, with an empty range and a single row.
            let (c, last) = (&fb.cu_seqlens, fb.cu_seqlens[fb.len()]);
            let rows = vec![c[1] + 2..c[2] - 1, 1..4, c[2]..last, 5..5, 0..1];
            let some = model.token_states_rows(&fb, &rows).unwrap().to_vec2::<f32>().unwrap();
            let want: Vec<&Vec<f32>> = rows.iter().flat_map(|r| &all[r.clone()]).collect();
            assert_eq!(some.len(), want.len(), "{}", dir.display());
            for (i, (a, b)) in some.iter().zip(want).enumerate() {
                let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{} ({:?}): row {i} differs", dir.display(), compute.products);
            }
            let past = vec![0..1, n - 1..n + 1];
            let err = model.token_states_rows(&fb, &past).unwrap_err().to_string();
            assert!(err.contains("outside a batch") && !err.contains('\n'), "{err}");
        }
    }
}

#[test]
fn static_model_late_vectors_are_its_ordinary_vectors() {
    // Static token states do not see each other: a span's late vector is the model's vector of
    // the span's text, whatever the windows.
    let model = seamcut::models::load("default", &Compute::cpu()).unwrap();
    let (docs, _) = fixture();
    let units: Vec<Vec<Span>> = docs.iter().map(|d| d.units.clone()).collect();
    let defaults = LateOptions::for_model(model.as_ref());
    assert_eq!(defaults.window, defaults.stride, "no overlap for a static model");
    for opts in [defaults, defaults.with_window(7).with_stride(3)] {
        let (v, _) = late::late_pool(model.as_ref(), &late_docs(&docs, &units), opts).unwrap();
        for (d, doc) in docs.iter().enumerate() {
            let texts: Vec<&str> = doc.units.iter().map(|s| s.text(&doc.text)).collect();
            let (e, _) = embed_texts(model.as_ref(), &texts, EmbedOptions::default()).unwrap();
            for (u, i) in v.doc(d).enumerate() {
                let dist = distance(&v.aggregate(i..i + 1), e.row(u));
                assert!(dist < 1e-5, "{} unit {u} {:?}: 1 - cos = {dist}", doc.name, texts[u]);
            }
        }
    }
}

#[test]
fn a_cls_pooled_model_gets_the_mean_of_its_tokens() {
    // The tiny MPNet with its pooling switched to CLS: its late vectors are the mean-pooled
    // model's (the mean over the span's tokens), while its ordinary vectors are not.
    let src = root().join("tests/fixtures/tiny-mpnet");
    let tmp = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&src).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, tmp.path().join(p.file_name().unwrap())).unwrap();
        }
    }
    std::fs::create_dir(tmp.path().join("1_Pooling")).unwrap();
    std::fs::write(
        tmp.path().join("1_Pooling/config.json"),
        r#"{"word_embedding_dimension": 32, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .unwrap();
    let cls = load_dir(tmp.path(), &Compute::cpu()).unwrap();
    assert!(cls.describe().contains("Cls"), "{}", cls.describe());
    let mean = load_dir(&src, &Compute::cpu()).unwrap();
    let text = "One sentence here. Another sentence there, a little longer.";
    let spans = [Span::new(0, 19), Span::new(19, text.len())];
    let doc = [LateDoc { text, spans: &spans }];
    let opts = LateOptions::for_model(mean.as_ref()).with_window(8).with_stride(4);
    let (a, _) = late::late_pool(cls.as_ref(), &doc, opts).unwrap();
    let (b, _) = late::late_pool(mean.as_ref(), &doc, opts).unwrap();
    assert!(max_rel_diff(&a, &b) < 1e-6);
    // One window, one span: the late vector is the mean-pooled vector, not the CLS one.
    let whole = [Span::new(0, text.len())];
    let doc = [LateDoc { text, spans: &whole }];
    let (v, _) = late::late_pool(cls.as_ref(), &doc, LateOptions::for_model(cls.as_ref())).unwrap();
    let (e_cls, _) = embed_texts(cls.as_ref(), &[text], EmbedOptions::default()).unwrap();
    assert!(distance(&v.aggregate(0..1), &content_mean(cls.as_ref(), text)) < 1e-6);
    assert!(distance(&v.aggregate(0..1), e_cls.row(0)) > 1e-3, "CLS and mean differ on this model");
}

#[test]
fn bad_options_and_spans_are_one_line_errors() {
    let model = minilm();
    let m = model.as_ref();
    let ok = LateOptions::for_model(m);
    assert_eq!((ok.window, ok.stride), (254, 127), "MiniLM takes 256 tokens: 254 and its special tokens");
    ok.validate(m).unwrap();
    let err = |o: LateOptions| o.validate(m).unwrap_err().to_string();
    assert!(err(ok.with_window(0)).contains("at least 1"), "{}", err(ok.with_window(0)));
    assert!(err(ok.with_stride(0)).contains("between 1 and the window"));
    assert!(err(ok.with_window(10).with_stride(11)).contains("between 1 and the window"));
    let long = err(ok.with_window(255).with_stride(10));
    assert!(long.contains("longer than the model takes: 254 (256 less 2 special tokens)"), "{long}");
    assert!(err(ok.with_batch_tokens(0)).contains("batch budget"));
    for e in [err(ok.with_window(0)), long] {
        assert!(!e.contains('\n') && !e.contains("--"), "one line, no flag names: {e}");
    }
    let text = "One. Two. Three.";
    for (spans, what) in [
        (vec![Span::new(0, 5), Span::new(4, 9)], "overlaps"),
        (vec![Span::new(0, 5), Span::new(5, 99)], "past the text"),
        (vec![Span::new(5, 4)], "reversed"),
    ] {
        let e = late::prepare(m, &[LateDoc { text, spans: &spans }], ok).unwrap_err().to_string();
        assert!(e.contains("span") && e.contains(what), "{e}");
    }
    // Gaps are allowed: tokens in them are not pooled.
    let spans = [Span::new(0, 4), Span::new(10, 16)];
    let (v, _) = late::late_pool(m, &[LateDoc { text, spans: &spans }], ok).unwrap();
    assert_eq!(v.counts, vec![2, 2]);
}

/// The late pass's cost against ordinary unit embedding of the same text, with MiniLM (a
/// measurement, not a test: it prints and asserts nothing about time). Run optimised:
/// `cargo test --release --test it late::late_pass_timing -- --ignored --nocapture`.
#[test]
#[ignore = "a timing run; prints figures"]
fn late_pass_timing() {
    let model = minilm();
    let m = model.as_ref();
    let text = std::fs::read_to_string(root().join("benches/data-sentences.txt")).unwrap();
    // Units: the lines, each owning its line break (covering spans).
    let mut units = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        units.push(Span::new(at, at + line.len()));
        at += line.len();
    }
    let unit_texts: Vec<&str> = units.iter().map(|s| s.text(&text).trim_end()).collect();
    let doc = [LateDoc { text: &text, spans: &units }];
    let w = LateOptions::for_model(m).window;
    let strides =
        [("stride = window", w), ("stride = 3/4 window", w * 3 / 4), ("stride = 1/2 window", w.div_ceil(2))];
    // This process's CPU seconds (user + system) from /proc, where there is one: on a shared
    // machine it moves less with other jobs than the wall clock.
    let cpu = || -> f64 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let f: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        let ticks: f64 = f.get(11..13).map_or(0.0, |x| x.iter().filter_map(|v| v.parse::<f64>().ok()).sum());
        ticks / 100.0
    };
    // Rounds over every pass in turn (best of 3 each), so that a busy moment hits them alike.
    let mut best = vec![(f64::MAX, f64::MAX, 0usize); 1 + strides.len()];
    for _ in 0..3 {
        for (i, b) in best.iter_mut().enumerate() {
            let (t0, c0) = (std::time::Instant::now(), cpu());
            let tokens = if i == 0 {
                embed_texts(m, &unit_texts, EmbedOptions::default()).unwrap().1.tokens
            } else {
                let opts = LateOptions::for_model(m).with_stride(strides[i - 1].1);
                late::late_pool(m, &doc, opts).unwrap().1.tokens
            };
            *b = (b.0.min(t0.elapsed().as_secs_f64()), b.1.min(cpu() - c0), tokens);
        }
    }
    println!(
        "{} bytes, {} units, {} threads; best of 3 rounds",
        text.len(),
        units.len(),
        rayon::current_num_threads()
    );
    println!("| pass | wall s | CPU s | tokens run | wall × unit embedding | CPU × unit embedding |");
    println!("|---|---|---|---|---|---|");
    for (i, (wall, c, tokens)) in best.iter().enumerate() {
        let name = if i == 0 {
            "units embedded one by one".to_string()
        } else {
            format!("late, window {w}, {} ({})", strides[i - 1].0, strides[i - 1].1)
        };
        println!(
            "| {name} | {wall:.2} | {c:.2} | {tokens} | {:.2} | {:.2} |",
            wall / best[0].0,
            c / best[0].1
        );
    }
}

/// A retrieval probe for the late pass's choices (not a test: it prints and asserts nothing):
/// recursive chunks of the broad benchmark's dev texts (`benches/broad/fetch.sh DIR`; DIR from
/// `$BROAD_TEXTS`, else `target/fetch/broad-texts`), retrieved by all-MiniLM-L6-v2 question
/// vectors, with chunk vectors embedded independently or late-pooled per (window, stride), each
/// token taking its state from its most central window (the rule `late` implements) or from the
/// mean of every window that holds it (a blend). Cap from `$LATE_PROBE_CAP` (256). Run
/// optimised: `cargo test --release --test it late::late_retrieval_probe -- --ignored --nocapture`.
#[test]
#[ignore = "a retrieval probe; prints figures"]
fn late_retrieval_probe() {
    use seamcut::eval::retrieval::{hit_rank, normalize, rank, read_jsonl, scores, span_scores, Question};
    let dir = std::env::var_os("BROAD_TEXTS")
        .map_or_else(|| root().join("target/fetch/broad-texts"), PathBuf::from);
    if !dir.is_dir() {
        eprintln!("skipped: no broad texts in {} (benches/broad/fetch.sh DIR)", dir.display());
        return;
    }
    let cap: usize = std::env::var("LATE_PROBE_CAP").ok().and_then(|c| c.parse().ok()).unwrap_or(256);
    let model = minilm();
    let m = model.as_ref();
    let dim = m.dim();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("benches/broad/manifest.json")).unwrap())
            .unwrap();
    let configs = [(254usize, 254usize), (254, 127), (126, 126), (126, 63)];
    // Rows: independent, then per config central and blend.
    let names: Vec<String> = std::iter::once("independent".to_string())
        .chain(
            configs
                .iter()
                .flat_map(|(w, s)| [format!("late {w}/{s} central"), format!("late {w}/{s} blend")]),
        )
        .collect();
    let mut all_ranks = vec![Vec::new(); names.len()];
    let mut all_recall = vec![Vec::new(); names.len()];
    let mut spec = seamcut::spec::ChunkerSpec::new(seamcut::chunkers::ChunkerKind::Recursive);
    spec.max_tokens = seamcut::cap::Cap::new(cap);
    spec.sizer = seamcut::sizer::SizerSpec::Tokenizer(root().join("models/all-MiniLM-L6-v2"));
    let chunker = spec.build().unwrap();
    for t in manifest["texts"].as_array().unwrap() {
        if t["split"] != "dev" {
            continue;
        }
        let name = t["name"].as_str().unwrap();
        let text = std::fs::read_to_string(dir.join(format!("{name}.txt"))).unwrap();
        let questions: Vec<Question> =
            read_jsonl(&root().join(format!("benches/broad/questions/{name}.jsonl")), "questions").unwrap();
        let chunks = chunker.chunk(&text).unwrap();
        let spans: Vec<(usize, usize)> = chunks.iter().map(|c| (c.start, c.end)).collect();
        let chunk_texts: Vec<&str> = spans.iter().map(|&(a, b)| &text[a..b]).collect();
        let norm: Vec<String> = chunk_texts.iter().map(|c| normalize(c)).collect();
        let q_texts: Vec<&str> = questions.iter().map(|q| q.question.as_str()).collect();
        let (qv, _) = embed_texts(m, &q_texts, EmbedOptions::default()).unwrap();
        let mut sets = vec![embed_texts(m, &chunk_texts, EmbedOptions::default()).unwrap().0.data];
        // The late passes: every window run once, both rules read from the same states.
        let (ids, starts) = m.content_ids_with_starts(&text);
        let n = ids.len();
        let mut chunk_of = Vec::with_capacity(n);
        let mut c = 0;
        for &s in &starts {
            while c + 1 < spans.len() && spans[c].1 <= s {
                c += 1;
            }
            chunk_of.push(c);
        }
        let (pre, post) = m.special_ids();
        for &(w, s) in &configs {
            let wins = late::window_starts(n, w, s);
            let owner = late::central_windows(n, &wins, w, s);
            let mut holders = vec![0f32; n];
            for &a in &wins {
                holders[a..(a + w).min(n)].iter_mut().for_each(|h| *h += 1.0);
            }
            let mut central = vec![0f32; spans.len() * dim];
            let mut blend = vec![0f32; spans.len() * dim];
            for group in wins.chunks(64) {
                let mut fb = FlatBatch::default();
                for &a in group {
                    let seq: Vec<u32> =
                        pre.iter().chain(&ids[a..(a + w).min(n)]).chain(post).copied().collect();
                    fb.push(&seq);
                }
                let states = m.token_states(&fb).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
                for (j, &a) in group.iter().enumerate() {
                    let k = wins.binary_search(&a).unwrap();
                    for tok in a..(a + w).min(n) {
                        let row = fb.cu_seqlens[j] + pre.len() + tok - a;
                        let state = &states[row * dim..(row + 1) * dim];
                        let ch = chunk_of[tok];
                        if owner[tok] == k {
                            central[ch * dim..(ch + 1) * dim]
                                .iter_mut()
                                .zip(state)
                                .for_each(|(o, x)| *o += x);
                        }
                        let inv = 1.0 / holders[tok];
                        blend[ch * dim..(ch + 1) * dim]
                            .iter_mut()
                            .zip(state)
                            .for_each(|(o, x)| *o += inv * x);
                    }
                }
            }
            sets.push(central);
            sets.push(blend);
        }
        let mut line = format!("{name}: {} chunks, {} questions, {n} tokens;", spans.len(), questions.len());
        for (i, mut v) in sets.into_iter().enumerate() {
            for row in v.chunks_mut(dim) {
                seamcut::embed::normalize(row);
            }
            let mut ranks = Vec::new();
            for (qi, q) in questions.iter().enumerate() {
                let order = rank(&v, dim, qv.row(qi));
                ranks.push(hit_rank(&order, &norm, &normalize(&q.must_contain)));
                if !q.evidence.is_empty() {
                    let top: Vec<(usize, usize)> = order.iter().take(5).map(|&c| spans[c]).collect();
                    let ev: Vec<(usize, usize)> = q.evidence.iter().map(|e| (e[0], e[1])).collect();
                    all_recall[i].push(span_scores(&top, &ev).recall);
                }
            }
            let dcg10 = scores(&ranks).iter().find(|s| s.0 == 10).unwrap().1;
            line += &format!(" {}: {dcg10:.1}", names[i]);
            all_ranks[i].extend(ranks);
        }
        println!("{line}");
    }
    println!("\nrecursive, cap {cap}, all-MiniLM-L6-v2, dev texts pooled");
    println!("| chunk vectors | DCG@10 | Recall@10 | span recall@5 | questions |");
    println!("|---|---|---|---|---|");
    for (i, name) in names.iter().enumerate() {
        let s = scores(&all_ranks[i]);
        let (_, dcg, rec) = s.iter().find(|s| s.0 == 10).copied().unwrap();
        let sr = all_recall[i].iter().sum::<f64>() / all_recall[i].len().max(1) as f64;
        println!("| {name} | {dcg:.1} | {rec:.1} | {sr:.1} | {} |", all_ranks[i].len());
    }
}
