//! Corpus jobs end to end: resume after `kill -9`, identical output whatever the threads,
//! batches and channel depth, shards, Parquet and embeddings, compressed and Parquet
//! inputs, bad documents, model failures, and the chunker spec on the command line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use arrow_array::RecordBatch;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_seamcut")
}

fn seamcut(args: &[&str]) -> Output {
    Command::new(bin()).args(args).stdin(Stdio::null()).output().unwrap()
}

fn ok(args: &[&str]) -> Output {
    let out = seamcut(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// A JSONL corpus of `n` documents built from the repository's sample sentences (several
/// paragraphs each, ids and a `lang` field), with one bad line in the middle.
fn corpus(dir: &Path, n: usize) -> PathBuf {
    let sentences: Vec<&str> = include_str!("../../benches/data-sentences.txt").lines().collect();
    let path = dir.join("corpus.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut k = 0;
    for d in 0..n {
        let mut text = String::new();
        for p in 0..3 + d % 5 {
            for _ in 0..2 + (d + p) % 4 {
                text.push_str(sentences[k % sentences.len()]);
                text.push(' ');
                k += 1;
            }
            text.push_str("\n\n");
        }
        writeln!(f, "{}", serde_json::json!({"id": format!("doc-{d:04}"), "text": text, "lang": if d % 2 == 0 { "en" } else { "xx" }}))
            .unwrap();
        if d == n / 2 {
            writeln!(f, "{{\"id\": \"broken\", \"text\": 42}}").unwrap();
        }
    }
    path
}

fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    let f = std::fs::File::open(path).unwrap();
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn threads_batches_and_channel_depth_do_not_change_output_and_shards_partition_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 120);
    let input = input.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut a = vec!["chunk", input, "--chunker", "maxmin", "-q"];
        a.extend(extra);
        ok(&a).stdout
    };
    let base = run(&["-j", "1"]);
    assert!(base.len() > 10_000);
    assert_eq!(run(&["-j", "2"]), base, "2 threads");
    assert_eq!(run(&["-j", "2", "--batch-bytes", "3000", "--channel-depth", "1"]), base, "small batches");
    assert_eq!(run(&["--batch-bytes", "100000000", "--channel-depth", "4"]), base, "one batch");

    let lines = |b: &[u8]| -> Vec<String> {
        String::from_utf8(b.to_vec()).unwrap().lines().map(str::to_string).collect()
    };
    let whole = lines(&base);
    let mut union = Vec::new();
    for i in 0..3 {
        let part = lines(&run(&["--shard", &format!("{i}/3")]));
        assert!(!part.is_empty() && part.len() < whole.len(), "shard {i}");
        // Within a shard, records keep the corpus order.
        let order: Vec<usize> = part.iter().map(|l| whole.iter().position(|w| w == l).unwrap()).collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "shard {i} is in input order");
        union.extend(part);
    }
    union.sort();
    let mut sorted = whole.clone();
    sorted.sort();
    assert_eq!(union, sorted, "the shards' union is the whole output");
}

#[test]
fn parquet_output_carries_metadata_and_embeddings() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 30);
    let input_s = input.to_str().unwrap();
    let pq = dir.path().join("mean.parquet");
    ok(&[
        "chunk",
        input_s,
        "--chunker",
        "maxmin",
        "--meta-field",
        "lang",
        "--embeddings",
        "mean",
        "-o",
        pq.to_str().unwrap(),
        "-q",
    ]);
    let jl = dir.path().join("plain.jsonl");
    ok(&["chunk", input_s, "--chunker", "maxmin", "--meta-field", "lang", "-o", jl.to_str().unwrap(), "-q"]);
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(&jl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let batches = read_parquet(&pq);
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(rows, records.len(), "the same chunks in both formats");

    // The mean embedding of each chunk is the re-normalised mean of its unit vectors.
    let spec: seamcut::spec::ChunkerSpec = serde_json::from_str(r#"{"chunker": "maxmin"}"#).unwrap();
    let chunker = spec.build().unwrap();
    let sc = chunker.semantic().unwrap();
    let docs: Vec<serde_json::Value> = std::fs::read_to_string(&input)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["text"].is_string())
        .collect();
    let mut expected: Vec<Vec<f32>> = Vec::new();
    for d in &docs {
        let text = d["text"].as_str().unwrap();
        let units = sc.units(text);
        let texts = seamcut::chunkers::semantic::unit_texts(text, &units);
        let (v, _) = seamcut::embed::embed_texts(sc.embedder().as_ref(), &texts, sc.embed_options()).unwrap();
        let chunks = sc.chunk_with_vectors(text, &units, &v.data).unwrap();
        for r in chunks.unit_ranges {
            let mut m = vec![0f32; v.dim];
            for u in r {
                for (a, b) in m.iter_mut().zip(v.row(u)) {
                    *a += b;
                }
            }
            seamcut::embed::normalize(&mut m);
            expected.push(m);
        }
    }
    assert_eq!(expected.len(), rows);
    let mut i = 0;
    for b in &batches {
        let lang = b.column_by_name("lang").unwrap().as_string::<i32>();
        let start = b.column_by_name("start").unwrap().as_primitive::<Int64Type>();
        let emb = b.column_by_name("embedding").unwrap().as_fixed_size_list();
        for r in 0..b.num_rows() {
            assert_eq!(lang.value(r), records[i]["lang"].as_str().unwrap());
            assert_eq!(start.value(r) as u64, records[i]["start"].as_u64().unwrap());
            let v = emb.value(r);
            let v = v.as_primitive::<Float32Type>().values();
            let max = v.iter().zip(&expected[i]).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(max < 1e-6, "chunk {i}: mean embedding off by {max}");
            i += 1;
        }
    }

    // reembed: each chunk's text embedded again, as `seamcut embed` does.
    let pq2 = dir.path().join("re.parquet");
    ok(&[
        "chunk",
        input_s,
        "--chunker",
        "recursive",
        "--embeddings",
        "reembed",
        "-o",
        pq2.to_str().unwrap(),
        "-q",
    ]);
    let batches = read_parquet(&pq2);
    let texts: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let t = b.column_by_name("text").unwrap().as_string::<i32>();
            (0..b.num_rows()).map(|r| t.value(r).to_string()).collect::<Vec<_>>()
        })
        .collect();
    let model = seamcut::models::load("default", &seamcut::device::Compute::cpu()).unwrap();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (want, _) = seamcut::embed::embed_texts(model.as_ref(), &refs, Default::default()).unwrap();
    let mut i = 0;
    for b in &batches {
        let emb = b.column_by_name("embedding").unwrap().as_fixed_size_list();
        for r in 0..b.num_rows() {
            let v = emb.value(r);
            let v = v.as_primitive::<Float32Type>().values();
            let cos: f32 = v.iter().zip(want.row(i)).map(|(a, b)| a * b).sum();
            assert!(cos > 1.0 - 1e-5, "chunk {i}: cosine {cos}");
            i += 1;
        }
    }

    // mean needs unit vectors; embeddings need a file.
    let out =
        seamcut(&["chunk", input_s, "--chunker", "recursive", "--embeddings", "mean", "-o", "x.parquet"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let out = seamcut(&["chunk", input_s, "--chunker", "maxmin", "--embeddings", "mean"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn compressed_and_parquet_inputs_read_like_plain_ones() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 12);
    let plain = ok(&["chunk", input.to_str().unwrap(), "-q"]).stdout;
    let bytes = std::fs::read(&input).unwrap();
    let gz = dir.path().join("c.jsonl.gz");
    let mut e =
        flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::default());
    e.write_all(&bytes).unwrap();
    e.finish().unwrap();
    let zst = dir.path().join("c.jsonl.zst");
    std::fs::write(&zst, zstd::encode_all(&bytes[..], 3).unwrap()).unwrap();
    // Parquet input: id and text columns, from a JSONL chunk run of seamcut itself.
    let pq = dir.path().join("docs.parquet");
    {
        let docs: Vec<serde_json::Value> = bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect();
        let docs: Vec<&serde_json::Value> = docs.iter().filter(|d| d["text"].is_string()).collect();
        let schema = Arc::new(arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("id", arrow_schema::DataType::Utf8, false),
            arrow_schema::Field::new("text", arrow_schema::DataType::Utf8, true),
        ]));
        let ids = arrow_array::StringArray::from_iter_values(
            docs.iter().map(|d| d["id"].as_str().unwrap()).chain(["null-text"]),
        );
        let texts =
            arrow_array::StringArray::from_iter(docs.iter().map(|d| d["text"].as_str()).chain([None]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(texts)]).unwrap();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&pq).unwrap(), schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }
    let strip_ids = |b: &[u8]| -> Vec<serde_json::Value> {
        String::from_utf8(b.to_vec()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let want = strip_ids(&plain);
    for p in [&gz, &zst, &pq] {
        let out = seamcut(&["chunk", p.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(strip_ids(&out.stdout), want, "{}", p.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("skipped 1 document ("), "{}: the bad record is reported: {err}", p.display());
    }
}

#[test]
fn the_default_model_travels_with_the_binary_and_calibration_follows_the_weights() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("seamcut");
    std::fs::copy(bin(), &exe).unwrap();
    let doc = dir.path().join("d.txt");
    // Enough sentences for a few chunks: what is checked is the summary line, not the chunks.
    let sentences: String =
        include_str!("../../benches/data-sentences.txt").lines().take(60).collect::<Vec<_>>().join("\n");
    std::fs::write(&doc, sentences).unwrap();
    let out = Command::new(&exe)
        .args(["chunk", doc.to_str().unwrap(), "--chunker", "maxmin"])
        .env("SEAMCUT_MODELS", dir.path().join("nowhere"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("built in") && err.contains("hard_thr 0.7 calibrated for default"), "{err}");

    // all-MiniLM-L6-v2 under another name and path still gets its calibration.
    let Some(minilm) = fetched_minilm() else { return };
    let copy = dir.path().join("my-encoder");
    std::fs::create_dir_all(copy.join("1_Pooling")).unwrap();
    for f in [
        "model.safetensors",
        "tokenizer.json",
        "config.json",
        "modules.json",
        "1_Pooling/config.json",
        "sentence_bert_config.json",
    ] {
        if minilm.join(f).is_file() {
            std::fs::copy(minilm.join(f), copy.join(f)).unwrap();
        }
    }
    let out = ok(&["chunk", doc.to_str().unwrap(), "--chunker", "maxmin", "--model", copy.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hard_thr 0.3 calibrated for all-MiniLM-L6-v2 (matched by weights fingerprint)"),
        "{err}"
    );
}

/// models/all-MiniLM-L6-v2, where it is fetched; else `None`, and the test says it skipped.
fn fetched_minilm() -> Option<PathBuf> {
    let minilm = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/all-MiniLM-L6-v2");
    if minilm.join("model.safetensors").is_file() {
        return Some(minilm);
    }
    eprintln!("skipped: models/all-MiniLM-L6-v2 is not fetched (models/fetch-minilm.sh)");
    None
}

#[test]
fn catalog_fingerprints_are_those_of_the_shipped_weights() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    for e in seamcut::models::catalog() {
        let f = root.join(&e.name).join("model.safetensors");
        if e.fingerprints.is_empty() || !f.is_file() {
            continue;
        }
        let fp = seamcut::models::fingerprint_file(&f).unwrap();
        assert!(e.fingerprints.contains(&fp), "{}: {fp} not in {:?}", e.name, e.fingerprints);
        assert_eq!(fp, seamcut::models::fingerprint_bytes(&std::fs::read(&f).unwrap()));
    }
}

#[test]
fn spec_files_and_flags_build_the_same_chunker() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("d.txt");
    std::fs::write(&doc, include_str!("../../benches/data-sentences.txt")).unwrap();
    let d = doc.to_str().unwrap();
    let flags =
        ["--chunker", "minima", "--max-tokens", "128", "--threshold", "0.7", "--splitter", "segmenter"];
    let mut a = vec!["chunk", d, "--print-spec"];
    a.extend(flags);
    let spec = ok(&a).stdout;
    let v: serde_json::Value = serde_json::from_slice(&spec).unwrap();
    assert_eq!(
        (v["chunker"].as_str(), v["max_tokens"].as_u64(), v["units"].as_str()),
        (Some("minima"), Some(128), Some("segmenter"))
    );
    assert_eq!(v["minima"]["threshold"].as_f64(), Some(0.7));
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, &spec).unwrap();
    let mut a = vec!["chunk", d, "-q"];
    a.extend(flags);
    let by_flags = ok(&a).stdout;
    let by_spec = ok(&["chunk", d, "--spec", spec_path.to_str().unwrap(), "-q"]).stdout;
    assert_eq!(by_flags, by_spec);
    // A flag overrides the file.
    let capped = ok(&["chunk", d, "--spec", spec_path.to_str().unwrap(), "--max-tokens", "40", "-q"]).stdout;
    for l in String::from_utf8(capped).unwrap().lines() {
        let r: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(r["tokens"].as_u64().unwrap() <= 40);
    }
    std::fs::write(&spec_path, r#"{"chunker": "maxmin", "max_tokenz": 5}"#).unwrap();
    let out = seamcut(&["chunk", d, "--spec", spec_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_tokenz"));
}

/// A model that fails on any batch holding the word "FAIL": a stand-in for a device error
/// on one document.
struct Flaky(Arc<dyn seamcut::embed::Embedder>, u32);

impl seamcut::embed::Embedder for Flaky {
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn max_tokens(&self) -> Option<usize> {
        self.0.max_tokens()
    }
    fn tokenizer(&self) -> &seamcut::wordpiece::TextTokenizer {
        self.0.tokenizer()
    }
    fn special_ids(&self) -> (&[u32], &[u32]) {
        self.0.special_ids()
    }
    fn content_ids(&self, text: &str) -> Vec<u32> {
        self.0.content_ids(text)
    }
    fn content_ids_from(&self, ids: Vec<u32>) -> Vec<u32> {
        self.0.content_ids_from(ids)
    }
    fn embed(&self, batch: &seamcut::embed::FlatBatch) -> seamcut::Result<Vec<f32>> {
        if batch.ids.contains(&self.1) {
            return Err(seamcut::Error::Compute("the device is on fire".into()));
        }
        self.0.embed(batch)
    }
    fn describe(&self) -> String {
        "flaky".into()
    }
}

#[test]
fn a_model_failure_costs_one_document_and_is_counted() {
    use seamcut::chunkers::semantic::{ModelErrorPolicy, Rule, SemanticChunker};
    use seamcut::corpus::Document;
    use seamcut::pipeline::{chunk_corpus, Job, JobOptions, Target};
    let inner: Arc<dyn seamcut::embed::Embedder> =
        seamcut::models::load("default", &seamcut::device::Compute::cpu()).unwrap().into();
    let fail_id = inner.content_ids("fail")[0];
    let model: Arc<dyn seamcut::embed::Embedder> = Arc::new(Flaky(inner, fail_id));
    let sizer: Arc<dyn seamcut::sizer::Sizer> =
        Arc::new(seamcut::sizer::HfSizer::new(model.tokenizer().hf().clone(), "m"));
    let docs = || {
        ["One calm sentence. Another calm one.", "This one will FAIL. Badly.", "A third document. Fine."]
            .iter()
            .enumerate()
            .map(|(i, t)| Ok(Document::new(format!("d{i}"), *t)))
            .collect::<Vec<_>>()
            .into_iter()
    };
    let dir = tempfile::tempdir().unwrap();
    for (policy, fallbacks, skipped) in [(ModelErrorPolicy::Sentence, 1, 0), (ModelErrorPolicy::Fail, 0, 1)] {
        let c = SemanticChunker::new(
            model.clone(),
            sizer.clone(),
            seamcut::device::Compute::cpu(),
            Rule::MaxMin(Default::default()),
            seamcut::chunkers::ChunkOptions::new(64),
        )
        .with_model_error_policy(policy);
        let job = Job { chunker: &c, embedder: None, fingerprint: "t".into(), opts: JobOptions::default() };
        let out = dir.path().join(format!("{policy:?}.jsonl"));
        let stats = chunk_corpus(
            docs(),
            &job,
            &Target::File { path: out.clone(), format: Default::default(), resume: false },
        )
        .unwrap();
        assert_eq!(stats.totals.fallbacks, fallbacks, "{policy:?}");
        assert_eq!(stats.totals.skipped_total(), skipped, "{policy:?}");
        assert_eq!(stats.totals.documents, 3 - skipped, "{policy:?}");
        let written = std::fs::read_to_string(&out).unwrap();
        assert_eq!(written.contains("\"doc_id\":\"d1\""), policy == ModelErrorPolicy::Sentence);
        assert!(
            written.contains("\"doc_id\":\"d0\"") && written.contains("\"doc_id\":\"d2\""),
            "the others are chunked: {written}"
        );
        let errors = std::fs::read_to_string(seamcut::pipeline::commit::errors_path(&out)).unwrap();
        assert!(errors.contains("on fire") && errors.contains("\"d1\""), "{errors}");
    }
}

#[test]
fn bench_chunk_reports_throughput_on_a_generated_corpus() {
    let out = ok(&["bench", "chunk", "--generate", "1", "--chunker", "maxmin", "--json"]);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["megabytes"].as_f64().unwrap() >= 1.0, "{r}");
    assert!(r["documents"].as_u64().unwrap() >= 40, "{r}");
    assert!(r["chunks"].as_u64().unwrap() > 100, "{r}");
    for k in ["mb_per_s", "documents_per_s", "units_per_s", "tokens_per_s", "peak_rss_mb"] {
        assert!(r[k].as_f64().unwrap() > 0.0, "{k}: {r}");
    }
    assert!(r["stages"]["device"].as_f64().unwrap() > 0.0, "{r}");
    let table =
        String::from_utf8(ok(&["bench", "chunk", "--generate", "1", "--chunker", "recursive"]).stdout)
            .unwrap();
    assert!(table.contains("| MB/s |") && table.contains("recursive"), "{table}");
}

/// The GPU data path (unit vectors left on the device, every document's band from one kernel
/// launch, only the bands copied back), run on the CPU (the same plumbing, host band code):
/// a corpus job and `chunk_batch` give the host path's chunks, for both band-only rules and a
/// static and a transformer model, and `--embeddings mean` (which needs the unit vectors on
/// the host) still works with it.
#[test]
fn the_device_band_path_gives_the_host_paths_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 16);
    let i = input.to_str().unwrap();
    // A smaller corpus for the encoder (its debug build is slow); the static model takes all.
    std::fs::create_dir_all(dir.path().join("small")).unwrap();
    let small = corpus(&dir.path().join("small"), 5);
    for (chunker, model) in [("maxmin", "default"), ("global", "default"), ("maxmin", "all-MiniLM-L6-v2")] {
        let input = if model == "default" { input.clone() } else { small.clone() };
        let i = input.to_str().unwrap();
        {
            let host =
                ok(&["chunk", i, "--chunker", chunker, "--model", model, "-q", "--batch-bytes", "2000"])
                    .stdout;
            let spec = dir.path().join("spec.json");
            let json = serde_json::json!({"chunker": chunker, "model": model, "device_bands": true});
            std::fs::write(&spec, json.to_string()).unwrap();
            let s = spec.to_str().unwrap();
            let device = ok(&["chunk", i, "--spec", s, "-q", "--batch-bytes", "2000"]).stdout;
            assert!(!host.is_empty());
            assert_eq!(
                String::from_utf8_lossy(&host),
                String::from_utf8_lossy(&device),
                "{chunker} on {model}"
            );

            let spec: seamcut::spec::ChunkerSpec = serde_json::from_value(json).unwrap();
            let on = spec.build().unwrap();
            assert!(on.semantic().unwrap().uses_device_bands());
            let off = seamcut::spec::ChunkerSpec { device_bands: Some(false), ..spec }.build().unwrap();
            let texts: Vec<String> = std::fs::read_to_string(&input)
                .unwrap()
                .lines()
                .filter_map(|l| {
                    serde_json::from_str::<serde_json::Value>(l).ok()?["text"].as_str().map(String::from)
                })
                .collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let a: Vec<_> = on.chunk_batch(&refs).into_iter().map(Result::unwrap).collect();
            let b: Vec<_> = off.chunk_batch(&refs).into_iter().map(Result::unwrap).collect();
            assert_eq!(a, b, "chunk_batch, {chunker} on {model}");
        }
    }
    let spec = dir.path().join("spec.json");
    std::fs::write(&spec, r#"{"chunker": "maxmin", "device_bands": true}"#).unwrap();
    let out = dir.path().join("out.jsonl");
    ok(&[
        "chunk",
        i,
        "--spec",
        spec.to_str().unwrap(),
        "-q",
        "--embeddings",
        "mean",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(dir.path().join("out.npy").is_file());
}

/// Rows of a float32 `.npy` written by a job (`n × dim`).
fn npy_rows(path: &Path) -> (Vec<f32>, usize) {
    let (data, _, cols) = seamcut::npy::read_f32(path).unwrap();
    (data, cols)
}

/// The summary says which late windows a job read: all-MiniLM-L6-v2's depend on the cap
/// (`Model::late_options`), and a flag overrides them.
#[test]
fn the_summary_names_the_late_windows_the_cap_gives() {
    let Some(minilm) = fetched_minilm() else { return };
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("d.txt");
    std::fs::write(&doc, "Owls hunt at night. They fly without a sound.\n\nGulls follow the boats.\n")
        .unwrap();
    let o = dir.path().join("o.jsonl");
    let (d, m, o) = (doc.to_str().unwrap(), minilm.to_str().unwrap(), o.to_str().unwrap());
    for (extra, want) in [
        (&[][..], "late windows 126 tokens every 63"),
        (&["--max-tokens", "128"][..], "late windows 254 tokens every 127"),
        (&["--late-stride", "126"][..], "late windows 126 tokens every 126"),
        (
            &["--late-placement", "centred"][..],
            "late windows 126 tokens centred on the spans (every 63 across longer ones)",
        ),
    ] {
        let mut args =
            vec!["chunk", d, "--chunker", "recursive", "--model", m, "--embeddings", "blend", "-o", o];
        args.extend_from_slice(extra);
        let err = String::from_utf8_lossy(&ok(&args).stderr).to_string();
        assert!(err.contains(want), "{extra:?}: {err}");
    }
}

/// Late unit vectors carry their neighbours, so Max–Min's `hard_thr: auto` takes the value
/// calibrated for them (`late_hard_thr`), not the one for units embedded alone; a number given
/// still wins.
#[test]
fn maxmin_with_late_units_takes_the_threshold_calibrated_for_them() {
    let Some(minilm) = fetched_minilm() else { return };
    let late = seamcut::models::catalog()
        .into_iter()
        .find(|e| e.name == "all-MiniLM-L6-v2")
        .and_then(|e| e.late_hard_thr)
        .expect("all-MiniLM-L6-v2 has a late_hard_thr");
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("d.txt");
    let sentences: String =
        include_str!("../../benches/data-sentences.txt").lines().take(80).collect::<Vec<_>>().join("\n");
    std::fs::write(&doc, sentences).unwrap();
    let (d, m) = (doc.to_str().unwrap(), minilm.to_str().unwrap());
    let run = |extra: &[&str]| {
        let o = dir.path().join("o.jsonl");
        let mut args = vec!["chunk", d, "--chunker", "maxmin", "--model", m, "-o", o.to_str().unwrap()];
        args.extend_from_slice(extra);
        let err = String::from_utf8_lossy(&ok(&args).stderr).to_string();
        (std::fs::read_to_string(&o).unwrap(), err)
    };
    let (auto, err) = run(&["--unit-vectors", "late"]);
    assert!(
        err.contains(&format!("hard_thr {late} calibrated for all-MiniLM-L6-v2's late unit vectors")),
        "{err}"
    );
    let late_s = late.to_string();
    assert_eq!(auto, run(&["--unit-vectors", "late", "--hard-thr", &late_s]).0);
    let (independent_thr, _) = run(&["--unit-vectors", "late", "--hard-thr", "0.3"]);
    assert_ne!(auto, independent_thr, "the two thresholds cut these sentences differently");
    // Units embedded alone keep their own calibration.
    let (_, err) = run(&[]);
    assert!(err.contains("hard_thr 0.3 calibrated for all-MiniLM-L6-v2 (matched by"), "{err}");
}

#[test]
fn late_chunk_vectors_come_from_one_pass_and_equal_late_pooling_of_the_chunks() {
    let Some(minilm) = fetched_minilm() else { return };
    let m = minilm.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), 5);
    let i = input.to_str().unwrap();
    // A window of 48 tokens every 24: every document spans several windows, chunks cross seams.
    let late = ["--late-window", "48", "--late-stride", "24"];
    let run = |chunker: &str, extra: &[&str], out: &str| {
        let o = dir.path().join(out);
        let mut args = vec!["chunk", i, "--chunker", chunker, "--model", m, "--embeddings", "late", "-q"];
        args.extend_from_slice(&late);
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-o", o.to_str().unwrap()]);
        ok(&args);
        let recs: Vec<serde_json::Value> =
            std::fs::read_to_string(&o).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let (v, dim) = npy_rows(&o.with_extension("npy"));
        (recs, v, dim)
    };
    // Max–Min whose unit vectors come from the late pass: seams and index vectors, one pass.
    let (recs, v, dim) = run("maxmin", &["--unit-vectors", "late", "--batch-bytes", "3000"], "one.jsonl");
    assert_eq!(v.len(), recs.len() * dim);
    // The same chunks' late pooling computed on its own, document by document.
    let model = seamcut::models::ModelSpec { model: m.to_string(), ..Default::default() }.load().unwrap();
    let opts =
        seamcut::embed::late::LateOptions::for_model(model.embedder.as_ref()).with_window(48).with_stride(24);
    let texts: std::collections::HashMap<String, String> = std::fs::read_to_string(&input)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| Some((r["id"].as_str()?.to_string(), r["text"].as_str()?.to_string())))
        .collect();
    let mut row = 0;
    for (id, text) in &texts {
        let spans: Vec<seamcut::span::Span> = recs
            .iter()
            .filter(|r| r["doc_id"] == id.as_str())
            .map(|r| {
                seamcut::span::Span::new(
                    r["start"].as_u64().unwrap() as usize,
                    r["end"].as_u64().unwrap() as usize,
                )
            })
            .collect();
        let (want, _) = seamcut::embed::late::late_pool(
            model.embedder.as_ref(),
            &[seamcut::embed::late::LateDoc { text, spans: &spans }],
            opts,
        )
        .unwrap();
        let first = recs.iter().position(|r| r["doc_id"] == id.as_str()).unwrap();
        for k in 0..spans.len() {
            let got = &v[(first + k) * dim..(first + k + 1) * dim];
            let cos: f32 = got.iter().zip(want.aggregate(k..k + 1)).map(|(a, b)| a * b).sum();
            assert!(cos > 0.9999, "{id} chunk {k}: cosine {cos}");
            row += 1;
        }
    }
    assert_eq!(row, recs.len());
    // Batches do not change a thing: the same chunks and vectors in one batch.
    let (recs2, v2, _) =
        run("maxmin", &["--unit-vectors", "late", "--batch-bytes", "100000000"], "two.jsonl");
    assert_eq!(recs, recs2);
    assert!(v.iter().zip(&v2).all(|(a, b)| (a - b).abs() < 1e-5));
    // A baseline gets late vectors too (pooled in the finish stage), unit length each.
    let (recs, v, dim) = run("recursive", &[], "rec.jsonl");
    assert!(!recs.is_empty() && v.len() == recs.len() * dim);
    for r in v.chunks(dim) {
        let n: f32 = r.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((n - 1.0).abs() < 1e-4, "{n}");
    }
}

/// A short Markdown document with a title and two headings (the context tests' input).
const FIELD_GUIDE: &str = "# Field guide\n\nBirds and where to find them.\n\n## Owls\n\nOwls hunt at night. They fly without a sound.\n\n## Gulls\n\nGulls follow the fishing boats home.\n";

#[test]
fn context_prefix_embeds_each_chunk_with_its_headings_in_front() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("guide.md");
    std::fs::write(&doc, FIELD_GUIDE).unwrap();
    let out = dir.path().join("o.jsonl");
    let (d, o) = (doc.to_str().unwrap(), out.to_str().unwrap());
    ok(&[
        "chunk",
        d,
        "--chunker",
        "paragraph",
        "--max-tokens",
        "12",
        "--embeddings",
        "reembed",
        "--context-prefix",
        "-o",
        o,
    ]);
    let recs: Vec<serde_json::Value> =
        std::fs::read_to_string(&out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (v, dim) = npy_rows(&out.with_extension("npy"));
    // What was embedded: the context (no id as a title), a line break, the text.
    let texts: Vec<String> = recs
        .iter()
        .map(|r| format!("{}\n{}", r["context"].as_str().unwrap(), r["text"].as_str().unwrap()))
        .collect();
    assert!(texts.iter().any(|t| t.starts_with("Field guide > Owls\nOwls hunt")), "{texts:?}");
    let model = seamcut::models::ModelSpec::default().load().unwrap();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (want, _) = seamcut::embed::embed_texts(model.embedder.as_ref(), &refs, Default::default()).unwrap();
    assert_eq!(want.data.len(), v.len());
    assert!(want.data.iter().zip(&v).all(|(a, b)| (a - b).abs() < 1e-5));
    // Without the prefix the vectors are the texts' alone, which differ.
    ok(&["chunk", d, "--chunker", "paragraph", "--max-tokens", "12", "--embeddings", "reembed", "-o", o]);
    let (plain, _) = npy_rows(&out.with_extension("npy"));
    assert!(plain.iter().zip(&v).any(|(a, b)| (a - b).abs() > 1e-3));
    assert_eq!(dim, model.embedder.dim());
}

#[test]
fn blend_vectors_are_the_normalised_sum_of_late_and_text_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("guide.md");
    std::fs::write(&doc, FIELD_GUIDE).unwrap();
    let d = doc.to_str().unwrap();
    let run = |mode: &str, prefix: bool| {
        let out = dir.path().join(format!("{mode}-{prefix}.jsonl"));
        let o = out.to_str().unwrap();
        let mut args =
            vec!["chunk", d, "--chunker", "maxmin", "--max-tokens", "16", "--embeddings", mode, "-o", o];
        if prefix {
            args.push("--context-prefix");
        }
        ok(&args);
        npy_rows(&out.with_extension("npy"))
    };
    let (late, dim) = run("late", false);
    let (alone, _) = run("reembed", false);
    let (with_context, _) = run("reembed", true);
    // Every chunk of the guide has a context, so the two text vectors differ.
    assert!(alone.iter().zip(&with_context).any(|(a, b)| (a - b).abs() > 1e-3));
    let check = |blend: &[f32], text: &[&[f32]]| {
        assert_eq!(blend.len(), late.len());
        for (k, (b, l)) in blend.chunks(dim).zip(late.chunks(dim)).enumerate() {
            let mut want: Vec<f32> = l.to_vec();
            for t in text {
                want.iter_mut()
                    .zip(&t[k * dim..(k + 1) * dim])
                    .for_each(|(a, b)| *a += b / text.len() as f32);
            }
            seamcut::embed::normalize(&mut want);
            assert!(b.iter().zip(&want).all(|(x, y)| (x - y).abs() < 1e-5), "chunk {k}");
        }
    };
    // Without the prefix: late + the text alone; with it, the text half is the mean of the
    // text alone and with its context in front.
    check(&run("blend", false).0, &[&alone]);
    check(&run("blend", true).0, &[&alone, &with_context]);
}

#[test]
fn overlap_windows_reach_into_neighbours_and_are_what_reembed_embeds() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("guide.md");
    std::fs::write(&doc, FIELD_GUIDE).unwrap();
    let (d, jsonl, parquet) =
        (doc.to_str().unwrap(), dir.path().join("o.jsonl"), dir.path().join("o.parquet"));
    let args = |out: &Path| {
        let o = out.to_str().unwrap().to_string();
        [
            "chunk",
            d,
            "--chunker",
            "sentence",
            "--max-tokens",
            "8",
            "--overlap",
            "3",
            "--embeddings",
            "reembed",
            "-o",
        ]
        .into_iter()
        .map(String::from)
        .chain([o])
        .collect::<Vec<String>>()
    };
    ok(&args(&jsonl).iter().map(String::as_str).collect::<Vec<_>>());
    let recs: Vec<serde_json::Value> =
        std::fs::read_to_string(&jsonl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let at = |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap() as usize;
    // The chunks tile the document; each window holds its chunk and its own text.
    let mut end = 0;
    for r in &recs {
        assert_eq!(at(r, "start"), end);
        end = at(r, "end");
        assert!(at(r, "window_start") <= at(r, "start") && at(r, "end") <= at(r, "window_end"));
        assert_eq!(
            r["window_text"].as_str().unwrap(),
            &FIELD_GUIDE[at(r, "window_start")..at(r, "window_end")]
        );
    }
    assert_eq!(end, FIELD_GUIDE.len());
    // Whole sentences where they fit: "Owls hunt at night." (4 words) does not fit in 3
    // tokens, "They fly without a sound." neither; the window after "## Owls" takes tokens.
    assert!(recs.iter().skip(1).any(|r| at(r, "window_start") < at(r, "start")));
    assert!(recs.iter().rev().skip(1).any(|r| at(r, "window_end") > at(r, "end")));
    // What reembed embedded: each window's text.
    let (v, _) = npy_rows(&jsonl.with_extension("npy"));
    let model = seamcut::models::ModelSpec::default().load().unwrap();
    let windows: Vec<&str> = recs.iter().map(|r| r["window_text"].as_str().unwrap()).collect();
    let (want, _) =
        seamcut::embed::embed_texts(model.embedder.as_ref(), &windows, Default::default()).unwrap();
    assert!(want.data.iter().zip(&v).all(|(a, b)| (a - b).abs() < 1e-5));
    // Parquet carries the same windows as columns.
    ok(&args(&parquet).iter().map(String::as_str).collect::<Vec<_>>());
    let batches = read_parquet(&parquet);
    let col = |name: &str| -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                b.column_by_name(name)
                    .unwrap()
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .unwrap()
                    .values()
                    .to_vec()
            })
            .collect()
    };
    let want: Vec<i64> = recs.iter().map(|r| at(r, "window_start") as i64).collect();
    assert_eq!(col("window_start"), want);
    assert_eq!(col("window_end").len(), recs.len());
}
