//! The command line, end to end: outputs, exit codes and bad input.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn seamcut(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_seamcut"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(data) = stdin {
        // The process may exit (on a usage error) before reading: a broken pipe is fine.
        let _ = input.write_all(data);
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn records(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8(out.stdout.clone()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const PROSE: &str = "Dr. Watson looked up. \"What is it?\" he asked.\n\nHolmes did not answer. The fire \
crackled, e.g. loudly, and the clock struck 10.30 p.m. exactly.\n\n这是第一句。这是第二句！\n";

#[test]
fn chunk_writes_exact_offsets_that_cover_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("doc.txt");
    std::fs::write(&f, PROSE).unwrap();
    for chunker in ["sentence", "recursive", "paragraph", "fixed"] {
        let out =
            seamcut(&["chunk", f.to_str().unwrap(), "--chunker", chunker, "--max-tokens", "12", "-q"], None);
        assert!(out.status.success(), "{chunker}: {}", stderr(&out));
        let recs = records(&out);
        assert!(recs.len() > 1, "{chunker}");
        let mut joined = String::new();
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r["doc_id"], f.to_str().unwrap());
            assert_eq!(r["index"], i);
            let (s, e) = (r["start"].as_u64().unwrap() as usize, r["end"].as_u64().unwrap() as usize);
            assert_eq!(r["text"].as_str().unwrap(), &PROSE[s..e]);
            assert!(r["tokens"].as_u64().unwrap() <= 12);
            assert!(r["sentences"].is_u64());
            joined.push_str(r["text"].as_str().unwrap());
        }
        assert_eq!(joined, PROSE, "{chunker}");
    }
}

#[test]
fn segment_prints_sentences() {
    let out = seamcut(&["segment", "-", "-q"], Some(PROSE.as_bytes()));
    assert!(out.status.success());
    let texts: Vec<String> = records(&out).iter().map(|r| r["text"].as_str().unwrap().to_string()).collect();
    assert_eq!(
        texts,
        [
            "Dr. Watson looked up.",
            "\"What is it?\" he asked.",
            "Holmes did not answer.",
            "The fire crackled, e.g. loudly, and the clock struck 10.30 p.m. exactly.",
            "这是第一句。",
            "这是第二句！"
        ]
    );
}

#[test]
fn stdin_and_summary_line() {
    let out = seamcut(&["chunk", "--max-tokens", "64"], Some(PROSE.as_bytes()));
    assert!(out.status.success());
    assert_eq!(records(&out)[0]["doc_id"], "stdin");
    // One of each: no "1 documents".
    let err = stderr(&out);
    assert!(err.contains("seamcut: 1 document, "), "{err}");
    let n = records(&out).len();
    let chunks = if n == 1 { " 1 chunk, ".to_string() } else { format!(" {n} chunks, ") };
    assert!(err.contains(&chunks), "{err}");
    let out = seamcut(&["chunk", "--max-tokens", "16"], Some(PROSE.as_bytes()));
    let n = records(&out).len();
    assert!(n > 1 && stderr(&out).contains(&format!(" {n} chunks, ")), "{}", stderr(&out));
}

#[test]
fn invalid_utf8_names_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.txt");
    std::fs::write(&f, b"Hello there. \xff\xfe broken.").unwrap();
    let out = seamcut(&["chunk", f.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("bad.txt") && err.contains("byte 13") && err.contains("--lossy"), "{err}");
    assert!(!err.contains("panicked"));

    let out = seamcut(&["chunk", f.to_str().unwrap(), "--lossy", "-q"], None);
    assert!(out.status.success());
    let text: String = records(&out).iter().map(|r| r["text"].as_str().unwrap().to_string()).collect();
    assert_eq!(text, "Hello there. \u{FFFD}\u{FFFD} broken.");
}

#[test]
fn directory_walk_skips_binaries_and_empty_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a.txt"), "Alpha text. More alpha.").unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::fs::write(d.join("sub/b.md"), "# Beta\n\nBeta text.").unwrap();
    std::fs::write(d.join("c.txt"), b"\x00\x01\x02binary").unwrap();
    std::fs::write(d.join("empty.txt"), "").unwrap();
    std::fs::write(d.join("ignored.bin"), "not walked").unwrap();
    let out = seamcut(&["chunk", d.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let ids: Vec<String> = records(&out).iter().map(|r| r["doc_id"].as_str().unwrap().to_string()).collect();
    assert!(ids.iter().all(|i| i.ends_with("a.txt") || i.ends_with("b.md")), "{ids:?}");
    assert!(ids.iter().any(|i| i.ends_with("b.md")));
    let err = stderr(&out);
    assert!(err.contains("skipped 1 document (1 binary)") && err.contains("c.txt"), "{err}");
    assert!(err.contains("3 documents"), "{err}");
    // With -o, the skipped file is listed beside the output; --on-error stop stops on it.
    let out_path = d.join("out/chunks.jsonl");
    std::fs::create_dir(d.join("out")).unwrap();
    let out = seamcut(&["chunk", d.to_str().unwrap(), "-o", out_path.to_str().unwrap(), "-q"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let errors = std::fs::read_to_string(d.join("out/chunks.jsonl.errors.jsonl")).unwrap();
    let e: serde_json::Value = serde_json::from_str(errors.lines().next().unwrap()).unwrap();
    assert_eq!((e["kind"].as_str(), e["action"].as_str()), (Some("binary"), Some("skipped")), "{e}");
    assert!(e["error"].as_str().unwrap().contains("c.txt"), "{e}");
    let out = seamcut(&["chunk", d.to_str().unwrap(), "--on-error", "stop"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("c.txt") && stderr(&out).contains("binary"), "{}", stderr(&out));

    // A binary file named explicitly is an error, not a silent skip.
    let out = seamcut(&["chunk", d.join("c.txt").to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("binary"));
}

#[test]
fn jsonl_corpora() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.jsonl");
    std::fs::write(
        &f,
        "{\"doc\": \"d1\", \"body\": \"First doc. Two sentences.\"}\n\n{\"doc\": 7, \"body\": \"Second.\"}\n{\"body\": \"No id.\"}\n",
    )
    .unwrap();
    let args = [
        "chunk",
        f.to_str().unwrap(),
        "--input-format",
        "jsonl",
        "--id-field",
        "doc",
        "--text-field",
        "body",
        "-q",
    ];
    let out = seamcut(&args, None);
    assert!(out.status.success(), "{}", stderr(&out));
    let ids: Vec<String> = records(&out).iter().map(|r| r["doc_id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids[0], "d1");
    assert!(ids.contains(&"7".to_string()));
    assert!(ids.last().unwrap().ends_with("c.jsonl:4"), "{ids:?}");

    // A bad line is skipped and reported by default, and the lines after it are read.
    std::fs::write(&f, "{\"text\": \"ok\"}\n{\"text\": 5}\n{\"text\": \"after\"}\n").unwrap();
    let out = seamcut(&["chunk", f.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(records(&out).len(), 2);
    assert!(stderr(&out).contains("c.jsonl:2") && stderr(&out).contains("skipped"), "{}", stderr(&out));
    let out = seamcut(&["chunk", f.to_str().unwrap(), "--input-format", "jsonl", "--on-error", "stop"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("c.jsonl:2"), "{}", stderr(&out));

    std::fs::write(&f, "{\"text\": \"ok\"\n").unwrap();
    let out = seamcut(&["chunk", f.to_str().unwrap(), "--on-error", "stop"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("c.jsonl:1: invalid JSON"), "{}", stderr(&out));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(seamcut(&["chunk", "--no-such-flag"], None).status.code(), Some(2));
    assert_eq!(seamcut(&["chunk", "--chunker", "nope"], None).status.code(), Some(2));
    let out = seamcut(&["chunk", "--overlap", "four"], Some(b"x"));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("overlap"));
    let out = seamcut(&["chunk", "--min-tokens", "600"], Some(b"x"));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn missing_input_and_tokenizer_are_clear_errors() {
    let out = seamcut(&["chunk", "/no/such/file.txt"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("/no/such/file.txt"));
    let out = seamcut(&["chunk", "--sizer", "/no/such/tokenizer.json"], Some(b"x"));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("tokenizer"), "{}", stderr(&out));
}

#[test]
fn long_unpunctuated_line_respects_cap() {
    let text = "lorem ipsum dolor sit amet ".repeat(40_000); // ~1 MB, no sentence end
    let out = seamcut(&["chunk", "-", "--max-tokens", "100", "-q", "--check"], Some(text.as_bytes()));
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = records(&out);
    assert!(recs.len() > 1000);
    assert!(recs.iter().all(|r| r["tokens"].as_u64().unwrap() <= 100));
    let joined: String = recs.iter().map(|r| r["text"].as_str().unwrap()).collect();
    assert_eq!(joined, text);
}

#[test]
fn help_shows_examples() {
    let out = seamcut(&["chunk", "--help"], None);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Examples:"));
    assert!(Path::new(env!("CARGO_BIN_EXE_seamcut")).exists());
}

#[test]
fn embed_writes_normalised_npy() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("l.txt");
    std::fs::write(&lines, "Hello world.\nThe cat sat on the mat.\n这是中文。\n").unwrap();
    let out = dir.path().join("v.npy");
    let o = seamcut(&["embed", "--lines", lines.to_str().unwrap(), "-o", out.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let (data, rows, cols) = seamcut::npy::read_f32(&out).unwrap();
    assert_eq!((rows, cols), (3, 240), "the default static model: one row per line");
    for r in 0..rows {
        let n: f32 = data[r * cols..(r + 1) * cols].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((n - 1.0).abs() < 1e-5);
    }
    assert!(stderr(&o).contains("3 texts"), "{}", stderr(&o));
}

#[test]
fn bad_models_and_devices_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("l.txt");
    std::fs::write(&lines, "x\n").unwrap();
    let out = dir.path().join("v.npy");
    let l = lines.to_str().unwrap();
    let o = out.to_str().unwrap();
    let empty = dir.path().join("empty-model");
    std::fs::create_dir(&empty).unwrap();
    for (args, want) in [
        (
            vec!["embed", "--model", empty.to_str().unwrap(), "--lines", l, "-o", o],
            "missing model.safetensors",
        ),
        (vec!["embed", "--model", "./no/such/dir", "--lines", l, "-o", o], "no such directory"),
        (vec!["embed", "--device", "tpu", "--lines", l, "-o", o], "unknown device"),
        (vec!["embed", "--device", "cuda:0", "--lines", l, "-o", o], "not available"),
        // Chunkers that compute on no device still reject a misspelt one.
        (vec!["chunk", "--chunker", "recursive", "--device", "tpu", l], "unknown device"),
        (vec!["chunk", "--chunker", "fixed", "--dtype", "f8", l], "unknown dtype"),
        (vec!["chunk", "--chunker", "global", "--size-weight", "NaN", l], "--size-weight: must be"),
        (vec!["chunk", "--chunker", "global", "--size-weight=-1", l], "--size-weight: must be"),
        (vec!["chunk", "--chunker", "global", "--depth-weight", "inf", l], "--depth-weight: must be"),
        (vec!["chunk", "--chunker", "global", "--block", "0", l], "--block: must be at least 1"),
        (vec!["chunk", "--chunker", "global", "--heading-weight=-2", l], "--heading-weight: must be"),
    ] {
        let out = seamcut(&args, None);
        assert!(matches!(out.status.code(), Some(1 | 2)), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn offline_hub_ids_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("l.txt");
    std::fs::write(&lines, "x\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_seamcut"))
        .args(["embed", "--model", "no-such-org/no-such-model", "--lines", lines.to_str().unwrap(), "-o"])
        .arg(dir.path().join("v.npy"))
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("HF_HUB_OFFLINE") && err.contains("no-such-org/no-such-model"), "{err}");
}

#[test]
fn hub_ids_load_from_the_hf_cache() {
    // The layout hf-hub writes: $HF_HOME/hub/models--ORG--NAME/{refs/main, snapshots/REV/...}.
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("hub/models--acme--tiny-xlmr");
    let snap = repo.join("snapshots/0123abcd");
    std::fs::create_dir_all(snap.join("1_Pooling")).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "0123abcd").unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-xlmr");
    for f in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    ] {
        std::fs::copy(src.join(f), snap.join(f)).unwrap();
    }
    let lines = home.path().join("l.txt");
    std::fs::write(&lines, "one\ntwo\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_seamcut"))
        .args(["embed", "--model", "acme/tiny-xlmr", "--lines", lines.to_str().unwrap(), "-o"])
        .arg(home.path().join("v.npy"))
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, rows, cols) = seamcut::npy::read_f32(&home.path().join("v.npy")).unwrap();
    assert_eq!((rows, cols), (2, 32));
}

#[test]
fn embedding_chunkers_from_the_command_line() {
    let text = PROSE.repeat(4);
    for args in [
        vec!["chunk", "-", "--chunker", "maxmin", "-q", "--check"],
        vec!["chunk", "-", "--chunker", "maxmin", "--max-tokens", "0", "--hard-thr", "0.7", "-q"],
        vec!["chunk", "-", "--chunker", "minima", "--max-tokens", "16", "-q", "--check"],
        vec![
            "chunk",
            "-",
            "--chunker",
            "minima",
            "--splitter",
            "delimiters",
            "--window",
            "concat",
            "-q",
            "--check",
        ],
        vec!["chunk", "-", "--chunker", "breakpoint", "--breakpoint-type", "interquartile", "-q", "--check"],
        vec!["chunk", "-", "--chunker", "breakpoint", "--number-of-chunks", "3", "--min-tokens", "4", "-q"],
    ] {
        let out = seamcut(&args, Some(text.as_bytes()));
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let recs = records(&out);
        let joined: String = recs.iter().map(|r| r["text"].as_str().unwrap()).collect();
        assert_eq!(joined, text, "{args:?}");
        if args.contains(&"16") {
            assert!(recs.iter().all(|r| r["tokens"].as_u64().unwrap() <= 16), "{args:?}");
        }
    }
    // Overlap windows on an embedding chunker: each inner chunk's window reaches both ways.
    let out = seamcut(
        &["chunk", "-", "--chunker", "maxmin", "--max-tokens", "16", "--overlap", "3"],
        Some(text.as_bytes()),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = records(&out);
    let at = |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap();
    assert!(recs.len() > 2);
    for r in &recs[1..recs.len() - 1] {
        assert!(at(r, "window_start") < at(r, "start") && at(r, "window_end") > at(r, "end"), "{r}");
    }
}

#[test]
fn eval_segmentation_scores_chunks_against_a_reference() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("d.txt");
    std::fs::write(&doc, PROSE.repeat(3)).unwrap();
    let d = doc.to_str().unwrap();
    let run = |args: &[&str], out: &Path| {
        let o = seamcut(&[args, &["-o", out.to_str().unwrap(), "-q"]].concat(), None);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    run(&["chunk", d, "--chunker", "paragraph"], &a);
    run(&["chunk", d, "--chunker", "sentence", "--max-tokens", "12"], &b);
    let score = |r: &Path, h: &Path| -> serde_json::Value {
        let o = seamcut(
            &[
                "eval",
                "segmentation",
                "--reference",
                r.to_str().unwrap(),
                "--hypothesis",
                h.to_str().unwrap(),
                d,
            ],
            None,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        records(&o).last().unwrap()["mean"].clone()
    };
    let same = score(&a, &a);
    assert_eq!(same["pk"], 0.0);
    assert_eq!(same["f1"], 1.0);
    assert!((same["ami"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    let diff = score(&a, &b);
    assert!(diff["pk"].as_f64().unwrap() > 0.0);
    assert!(diff["precision"].as_f64().unwrap() < 1.0);
    assert_eq!(diff["recall"], 1.0, "every paragraph break is also a sentence-chunk break");
}

#[test]
fn eval_retrieval_scores_chunkers_and_chunk_files() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("d.txt");
    std::fs::write(&doc, PROSE).unwrap();
    let q = dir.path().join("q.jsonl");
    std::fs::write(
        &q,
        "{\"question\": \"Who looked up?\", \"must_contain\": \"Watson  LOOKED up\"}\n\
         {\"question\": \"What did the clock do?\", \"must_contain\": \"the clock struck\"}\n\
         {\"question\": \"Unanswerable?\", \"must_contain\": \"no such words here\"}\n",
    )
    .unwrap();
    let (d, qp) = (doc.to_str().unwrap(), q.to_str().unwrap());
    let out = seamcut(
        &[
            "eval",
            "retrieval",
            "--questions",
            qp,
            "--document",
            d,
            "--chunker",
            "sentence",
            "--chunker",
            "maxmin",
            "--json",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = records(&out);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        // One question can never be answered: recall tops out at 2/3.
        let r20 = r["R@20"].as_f64().unwrap();
        assert!((r20 - 200.0 / 3.0).abs() < 1e-9, "{r}");
        assert!(r["DCG@1"].as_f64().unwrap() <= r["DCG@20"].as_f64().unwrap());
        assert!(r["chunks"].as_u64().unwrap() >= 1 && r["mean_tokens"].as_f64().unwrap() > 0.0);
    }
    // A single chunk holding the whole document answers both answerable questions at rank 1.
    let chunks = dir.path().join("c.jsonl");
    std::fs::write(&chunks, serde_json::json!({"text": PROSE}).to_string() + "\n").unwrap();
    let out = seamcut(
        &["eval", "retrieval", "--questions", qp, "--chunks", chunks.to_str().unwrap(), "--json"],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &records(&out)[0];
    assert!((r["DCG@1"].as_f64().unwrap() - 200.0 / 3.0).abs() < 1e-9, "{r}");
}

#[test]
fn eval_retrieval_matches_baseline_sizes_over_several_documents() {
    // Two documents of real sentences (the embedding fixtures), each with its questions.
    let texts: Vec<String> = std::fs::read_to_string("tests/fixtures/texts.jsonl")
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["text"].as_str().unwrap().to_string())
        .filter(|t| t.len() > 40 && t.len() < 400)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> =
        "eval retrieval --json --match-size --chunker recursive --chunker maxmin --chunker sentence"
            .split(' ')
            .map(String::from)
            .collect();
    for (i, part) in texts.chunks(texts.len() / 2).take(2).enumerate() {
        let doc = dir.path().join(format!("d{i}.txt"));
        let body: Vec<String> = part.chunks(4).map(|p| p.join(" ")).collect();
        std::fs::write(&doc, body.join("\n\n")).unwrap();
        let q = dir.path().join(format!("q{i}.jsonl"));
        let qs: String = part
            .iter()
            .step_by(7)
            .map(|t| serde_json::json!({"question": t, "must_contain": t}).to_string() + "\n")
            .collect();
        std::fs::write(&q, qs).unwrap();
        args.extend([
            "--document".into(),
            doc.display().to_string(),
            "--questions".into(),
            q.display().to_string(),
        ]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = seamcut(&refs, None);
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = records(&out);
    let by =
        |name: &str| recs.iter().find(|r| r["chunker"] == name).unwrap_or_else(|| panic!("{name}: {recs:?}"));
    let target = by("maxmin")["mean_tokens"].as_f64().unwrap();
    let questions = by("maxmin")["questions"].as_u64().unwrap();
    assert!(questions >= 10, "questions of both documents are pooled: {questions}");
    for name in ["recursive", "sentence"] {
        let r = by(name);
        let (mean, cap) = (r["mean_tokens"].as_f64().unwrap(), r["cap"].as_u64().unwrap());
        assert!(cap < 512, "{name}: the cap was searched: {r}");
        assert!((mean - target).abs() / target < 0.25, "{name}: mean {mean} vs maxmin {target}");
        assert_eq!(r["questions"].as_u64().unwrap(), questions);
    }
    // A question copied from the text is found within the top 20.
    assert!(by("maxmin")["R@20"].as_f64().unwrap() > 50.0, "{:?}", by("maxmin"));
    // One questions file for two documents is a usage error naming the mismatch.
    let bad = seamcut(&refs[..refs.len() - 2], None);
    assert_eq!(bad.status.code(), Some(2));
    let err = stderr(&bad);
    assert!(err.contains("--questions: 1 file(s) for 2 document(s)"), "{err}");
}

#[test]
fn plot_renders_a_real_document_with_one_marker_per_cut() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("d.txt");
    std::fs::write(&doc, PROSE.repeat(3)).unwrap();
    let svg = dir.path().join("cuts.svg");
    let png = dir.path().join("cuts.png");
    let d = doc.to_str().unwrap();
    let out = seamcut(
        &[
            "plot",
            d,
            "--chunker",
            "maxmin",
            "--chunker",
            "recursive",
            "--max-tokens",
            "40",
            "-o",
            svg.to_str().unwrap(),
            "-o",
            png.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG beside the SVG");
    // 1200 × 1.5 pixels wide by default (IHDR width, big-endian).
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 1800);
    let bad = seamcut(&["plot", d, "--chunker", "recursive", "-o", "cuts.pdf"], None);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("cuts.pdf: the plot is written as .svg or .png"), "{}", stderr(&bad));
    let text = std::fs::read_to_string(&svg).unwrap();
    let xml = roxmltree::Document::parse(&text).expect("the plot is well-formed SVG");
    assert_eq!(xml.root_element().tag_name().name(), "svg");
    assert_eq!(xml.descendants().filter(|n| n.attribute("class") == Some("similarity")).count(), 1);
    assert_eq!(xml.descendants().filter(|n| n.attribute("class") == Some("threshold")).count(), 1);
    for name in ["maxmin", "recursive"] {
        let chunks = records(&seamcut(&["chunk", d, "--chunker", name, "--max-tokens", "40", "-q"], None));
        let markers =
            xml.descendants().filter(|n| n.attribute("class") == Some(&format!("cut cut-{name}"))).count();
        assert_eq!(markers, chunks.len() - 1, "{name}: one marker per cut");
        assert!(markers > 0, "{name}");
    }
}

#[test]
fn hard_thr_auto_uses_the_calibrated_value() {
    let text = PROSE.repeat(2);
    let auto = seamcut(&["chunk", "-", "--chunker", "maxmin", "-q"], Some(text.as_bytes()));
    let fixed =
        seamcut(&["chunk", "-", "--chunker", "maxmin", "--hard-thr", "0.7", "-q"], Some(text.as_bytes()));
    let paper =
        seamcut(&["chunk", "-", "--chunker", "maxmin", "--hard-thr", "0.6", "-q"], Some(text.as_bytes()));
    assert!(auto.status.success() && fixed.status.success() && paper.status.success());
    assert_eq!(auto.stdout, fixed.stdout, "the default model is calibrated at 0.7 (models/catalog.json)");
    let bad = seamcut(&["chunk", "-", "--chunker", "maxmin", "--hard-thr", "high"], Some(b"x"));
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn settings_the_chunker_does_not_read_are_named_in_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("a.txt");
    std::fs::write(&f, PROSE).unwrap();
    let f = f.to_str().unwrap();
    // A model for a chunker that uses none: the chunks come, with a warning naming why.
    let out = seamcut(&["chunk", f, "--model", "no-such-model", "--hard-thr", "0.4"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("warning: --model does nothing here: the sentence chunker"), "{err}");
    assert!(err.contains("warning: --hard-thr does nothing here"), "{err}");
    // ... and none when the setting is read: a baseline re-embedding its chunks reads the model.
    let o = dir.path().join("o.jsonl");
    let out = seamcut(
        &["chunk", f, "--model", "default", "--embeddings", "reembed", "-o", o.to_str().unwrap()],
        None,
    );
    assert!(out.status.success() && !stderr(&out).contains("warning"), "{}", stderr(&out));
    let out = seamcut(&["chunk", f, "--chunker", "maxmin", "--hard-thr", "0.4", "--theta", "300"], None);
    let err = stderr(&out);
    assert!(!err.contains("--hard-thr does nothing") && err.contains("--theta does nothing"), "{err}");
}

#[test]
fn a_negative_cap_is_a_one_line_usage_error() {
    for args in [&["chunk", "--max-tokens", "-5"][..], &["segment", "--max-tokens", "-1"]] {
        let out = seamcut(args, Some(PROSE.as_bytes()));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("--max-tokens") && err.contains("is negative"), "{err}");
        assert!(!err.contains("-- -5") && err.trim().lines().count() == 1, "{err}");
    }
}

#[test]
fn segment_summary_counts_tokens() {
    let out = seamcut(&["segment", "-"], Some(PROSE.as_bytes()));
    assert!(out.status.success());
    let err = stderr(&out);
    let n = records(&out).len();
    assert!(err.contains(&format!("1 document, {n} sentences")), "{err}");
    assert!(!err.contains(" 0 tokens"), "{err}");
}

#[test]
fn each_chunk_carries_the_headings_above_it_as_its_context() {
    let text = "# Field guide\n\nBirds and where to find them.\n\n## Owls\n\nOwls hunt at night. They fly without a sound.\n\n## Gulls\n\nGulls follow the fishing boats home.\n";
    let out = seamcut(&["chunk", "-", "--chunker", "paragraph", "--max-tokens", "12"], Some(text.as_bytes()));
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = records(&out);
    let ctx = |needle: &str| {
        let r = recs.iter().find(|r| r["text"].as_str().unwrap().contains(needle)).unwrap();
        r["context"].as_str().unwrap().to_string()
    };
    assert_eq!(ctx("Birds"), "Field guide");
    assert_eq!(ctx("Owls hunt"), "Field guide > Owls");
    assert_eq!(ctx("Gulls follow"), "Field guide > Gulls");
    // Without a heading the title is the document's id.
    let out = seamcut(&["chunk", "-"], Some(b"Plain words only."));
    assert_eq!(records(&out)[0]["context"], "stdin");
}

#[test]
fn a_chunk_before_a_heading_does_not_get_it_and_a_lower_case_title_counts() {
    let text = "# seamcut\n\nBody. More.\n\n## Next Part\n\nMore.";
    let out = seamcut(&["chunk", "-", "--chunker", "paragraph", "--max-tokens", "4"], Some(text.as_bytes()));
    assert!(out.status.success(), "{}", stderr(&out));
    let ctx: Vec<(String, String)> = records(&out)
        .iter()
        .map(|r| (r["text"].as_str().unwrap().trim().to_string(), r["context"].as_str().unwrap().to_string()))
        .collect();
    for (text, context) in &ctx {
        let want =
            if text.starts_with("## Next") || text == "More." { "seamcut > Next Part" } else { "seamcut" };
        assert_eq!(context, want, "{ctx:?}");
    }
}

#[test]
fn an_output_is_written_as_its_name_says() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("doc.txt");
    std::fs::write(&f, PROSE).unwrap();
    let plain = seamcut(&["chunk", f.to_str().unwrap(), "--max-tokens", "12", "-q"], None).stdout;
    let run = |name: &str| {
        let out = dir.path().join(name);
        let o = seamcut(
            &["chunk", f.to_str().unwrap(), "--max-tokens", "12", "-q", "-o", out.to_str().unwrap()],
            None,
        );
        (o, out)
    };
    let (o, zst) = run("out.jsonl.zst");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(zstd::decode_all(std::fs::File::open(&zst).unwrap()).unwrap(), plain);
    let (o, gz) = run("out.jsonl.gz");
    assert!(o.status.success(), "{}", stderr(&o));
    let mut unzipped = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::MultiGzDecoder::new(std::fs::File::open(&gz).unwrap()),
        &mut unzipped,
    )
    .unwrap();
    assert_eq!(unzipped, plain);
    // seamcut reads what it writes.
    let back = seamcut(&["chunk", zst.to_str().unwrap(), "--input-format", "jsonl", "-q"], None);
    assert!(back.status.success(), "{}", stderr(&back));
    for bad in ["x.parquet.gz", "x.parquet.zst", "x.jsonl.bz2"] {
        let (o, out) = run(bad);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(bad) && err.lines().count() == 1, "{err}");
        assert!(!out.exists(), "{bad}");
    }
}

#[test]
fn each_output_keeps_its_own_errors_list() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    std::fs::write(&corpus, "{\"id\": \"a\", \"text\": \"Fine text.\"}\nnot json\n").unwrap();
    for name in ["out.jsonl", "out.parquet"] {
        let out = dir.path().join(name);
        let o = seamcut(&["chunk", corpus.to_str().unwrap(), "-q", "-o", out.to_str().unwrap()], None);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    for name in ["out.jsonl.errors.jsonl", "out.parquet.errors.jsonl"] {
        let listed = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(listed.contains("c.jsonl:2"), "{name}: {listed}");
    }
}

#[test]
fn segment_skips_and_lists_a_bad_line_as_chunk_does() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    std::fs::write(
        &corpus,
        "{\"id\": \"a\", \"text\": \"One. Two.\"}\n{broken\n{\"id\": \"b\", \"text\": \"Three.\"}\n",
    )
    .unwrap();
    let out = seamcut(&["segment", corpus.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let texts: Vec<String> = records(&out).iter().map(|r| r["text"].as_str().unwrap().to_string()).collect();
    assert_eq!(texts, ["One.", "Two.", "Three."]);
    let err = stderr(&out);
    assert!(err.contains("skipped") && err.contains("c.jsonl:2") && err.contains("1 bad record"), "{err}");
    // With -o the line is listed beside the output; --on-error stop stops on it.
    let o = dir.path().join("s.jsonl");
    let out = seamcut(&["segment", corpus.to_str().unwrap(), "-q", "-o", o.to_str().unwrap()], None);
    assert!(out.status.success());
    assert!(std::fs::read_to_string(dir.path().join("s.jsonl.errors.jsonl")).unwrap().contains("c.jsonl:2"));
    let out = seamcut(&["segment", corpus.to_str().unwrap(), "--on-error", "stop"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--on-error"), "{}", stderr(&out));
    // segment takes no --meta-field (it writes no chunk records).
    assert_eq!(seamcut(&["segment", "--meta-field", "x", "-"], Some(b"a")).status.code(), Some(2));
}

#[test]
fn embed_refuses_empty_lines_and_names_where_a_file_is_not_text() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.npy");
    let run = |content: &[u8]| {
        let f = dir.path().join("lines.txt");
        std::fs::write(&f, content).unwrap();
        seamcut(&["embed", "--lines", f.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"], None)
    };
    let o = run(b"one text\n\nanother\n");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("lines.txt:2: an empty line"), "{}", stderr(&o));
    let o = run(b"first\nsecond \xff\xfe\n");
    assert!(stderr(&o).contains("lines.txt:2: invalid UTF-8 at byte 13"), "{}", stderr(&o));
    let o = run(b"text\n\x00\x01\x02binary");
    assert!(stderr(&o).contains("lines.txt:2") && stderr(&o).contains("binary"), "{}", stderr(&o));
    assert!(!out.exists());
    let o = run(b"one text\nanother\n");
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn errors_about_settings_name_the_flags() {
    let err = |args: &[&str]| {
        let o = seamcut(args, Some(b"Some text."));
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        e
    };
    let e = err(&["chunk", "--min-tokens", "300"]);
    assert!(e.contains("--min-tokens: 300 is larger than the cap, --max-tokens 256"), "{e}");
    let e = err(&["chunk", "--chunker", "lumber"]);
    assert!(e.contains("--llm-model") && e.contains("--llm-url") && !e.contains("llm.url"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.jsonl");
    std::fs::create_dir(dir.path().join("o.jsonl.seamcut-partial")).unwrap();
    let e = err(&["chunk", "-", "-o", out.to_str().unwrap()]);
    assert!(e.contains("--resume") && !e.contains("resume on"), "{e}");
    // A spec file's bad value is named by its field, in words.
    let spec = dir.path().join("spec.json");
    std::fs::write(&spec, r#"{"max_tokens": "x"}"#).unwrap();
    let e = err(&["chunk", "-", "--spec", spec.to_str().unwrap()]);
    assert!(e.contains(r#"max_tokens: expected a whole number (0 or more), got the string "x""#), "{e}");
    assert!(!e.contains("usize"), "{e}");
}

#[test]
fn a_spec_file_takes_flat_keys_as_requests_and_python_do() {
    let dir = tempfile::tempdir().unwrap();
    let flat = dir.path().join("flat.json");
    let nested = dir.path().join("nested.json");
    std::fs::write(&flat, r#"{"chunker": "maxmin", "hard_thr": 0.42, "max_tokens": 64}"#).unwrap();
    std::fs::write(&nested, r#"{"chunker": "maxmin", "maxmin": {"hard_thr": 0.42}, "max_tokens": 64}"#)
        .unwrap();
    let print = |p: &Path| {
        let o = seamcut(&["chunk", "--spec", p.to_str().unwrap(), "--print-spec"], None);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let s = print(&flat);
    assert_eq!(s["maxmin"]["hard_thr"], 0.42);
    assert_eq!(s, print(&nested));
}

#[test]
fn a_directory_without_known_files_says_what_it_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rst"), "Text.").unwrap();
    std::fs::write(dir.path().join("b.html"), "<p>Text.</p>").unwrap();
    let out = seamcut(&["chunk", dir.path().to_str().unwrap()], None);
    assert!(out.status.success());
    let err = stderr(&out);
    assert!(err.contains("0 documents") && err.contains("passed over 2 files in directories"), "{err}");
}

/// Links in a walked directory are followed (a hub cache's snapshot is a folder of links), and
/// one that leads nowhere or back up the tree is passed over and counted, never an abort.
#[cfg(unix)]
#[test]
fn links_in_a_directory_are_read_and_broken_ones_counted() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let (real, links) = (dir.path().join("real"), dir.path().join("links"));
    std::fs::create_dir_all(real.join("deep")).unwrap();
    std::fs::create_dir_all(&links).unwrap();
    std::fs::write(real.join("a.txt"), "Owls hunt at night.").unwrap();
    std::fs::write(real.join("deep/b.md"), "Gulls follow the boats.").unwrap();
    symlink(real.join("a.txt"), links.join("a.txt")).unwrap();
    symlink(real.join("deep"), links.join("deep")).unwrap();
    symlink(dir.path().join("missing.txt"), links.join("gone.txt")).unwrap();
    symlink(&links, links.join("loop")).unwrap();
    let out = seamcut(&["chunk", links.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Owls hunt at night.") && text.contains("Gulls follow the boats."), "{text}");
    let err = stderr(&out);
    assert!(err.contains("2 documents") && err.contains("passed over 2 files in directories"), "{err}");
}

#[test]
fn counts_take_their_plurals() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("doc.txt");
    std::fs::write(&f, "One short sentence. Another one.").unwrap();
    let out = dir.path().join("p.svg");
    let o =
        seamcut(&["plot", f.to_str().unwrap(), "--chunker", "sentence", "-o", out.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("sentence: 0 cuts"), "{}", stderr(&o));
    let corpus = dir.path().join("c.jsonl");
    std::fs::write(&corpus, "{\"id\": \"a\", \"text\": \"Fine.\"}\nbad\nworse\n").unwrap();
    let o = seamcut(&["chunk", corpus.to_str().unwrap()], None);
    let err = stderr(&o);
    assert!(err.contains("1 document,") && err.contains("2 bad records"), "{err}");
}

#[test]
fn a_negative_number_for_any_numeric_flag_is_a_one_line_usage_error() {
    for (flag, v) in [
        ("--min-tokens", "-1"),
        ("--overlap", "-3"),
        ("--threads", "-1"),
        ("--batch-bytes", "-1"),
        ("--similarity-window", "-2"),
        ("--dims", "-8"),
        ("--late-window", "-5"),
    ] {
        let out = seamcut(&["chunk", flag, v, "-"], Some(PROSE.as_bytes()));
        assert_eq!(out.status.code(), Some(2), "{flag} {v}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(flag) && err.contains("is negative"), "{flag}: {err}");
        assert!(!err.contains(&format!("-- {v}")) && err.trim().lines().count() == 1, "{flag}: {err}");
    }
}

#[test]
fn settings_out_of_their_range_are_refused_by_name_from_flags_and_spec_files() {
    let dir = tempfile::tempdir().unwrap();
    for (args, named) in [
        (&["--chunker", "maxmin", "--hard-thr", "5"][..], "--hard-thr"),
        (&["--chunker", "maxmin", "--c", "-1"], "--c"),
        (&["--chunker", "minima", "--threshold", "1.5"], "--threshold"),
        (&["--chunker", "breakpoint", "--breakpoint-amount", "120"], "--breakpoint-amount"),
        (&["--chunker", "global", "--block", "0"], "--block"),
        (&["--chunker", "maxmin", "--dims", "0"], "--dims"),
        (&["--batch-bytes", "0"], "--batch-bytes"),
        (&["--channel-depth", "0"], "--channel-depth"),
    ] {
        let out = seamcut(&[&["chunk", "-q"][..], args, &["-"]].concat(), Some(PROSE.as_bytes()));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(named) && err.trim().lines().count() == 1, "{args:?}: {err}");
    }
    // The same check reads a spec file.
    let spec = dir.path().join("spec.json");
    std::fs::write(&spec, r#"{"chunker": "maxmin", "maxmin": {"hard_thr": 5}}"#).unwrap();
    let out = seamcut(&["chunk", "-q", "--spec", spec.to_str().unwrap(), "-"], Some(PROSE.as_bytes()));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--hard-thr") && stderr(&out).contains("from -1 to 1"), "{}", stderr(&out));
}
