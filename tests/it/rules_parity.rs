//! Boundary parity of the rules with their reference implementations, on fixtures written
//! by `tests/fixtures/make_rule_fixtures.py` (60 documents each, defaults and a parameter
//! sweep): Max–Min against the authors' algorithm, minima against chonkie 1.7.0's
//! SemanticChunker, breakpoints against langchain-experimental 0.4.2's SemanticChunker.

use std::collections::HashMap;

use base64::Engine;
use seamcut::band::Band;
use seamcut::cap::Cap;
use seamcut::rules::breakpoint::{breakpoints, BreakpointParams, ThresholdType};
use seamcut::rules::maxmin::{maxmin, MaxMinParams};
use seamcut::rules::minima::{skip_and_merge, split_groups, split_starts, MinimaParams};
use serde_json::Value;

fn fixture() -> Value {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rules.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn f32s(b64: &str) -> Vec<f32> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect()
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

#[test]
fn maxmin_matches_the_authors_algorithm() {
    let fx = fixture();
    let dim = fx["dim"].as_u64().unwrap() as usize;
    let (mut runs, mut splits) = (0, 0);
    for (d, case) in fx["maxmin"].as_array().unwrap().iter().enumerate() {
        let n = case["n"].as_u64().unwrap() as usize;
        let vecs = f32s(case["vectors"].as_str().unwrap());
        let band = Band::from_vectors(&vecs, dim, n.max(1));
        for run in case["runs"].as_array().unwrap() {
            let p = MaxMinParams {
                hard_thr: run["params"]["hard_thr"].as_f64().unwrap(),
                c: run["params"]["c"].as_f64().unwrap(),
                init_const: run["params"]["init_const"].as_f64().unwrap(),
            };
            let want = usizes(&run["starts"]);
            assert_eq!(maxmin(&band, &vec![1; n], Cap::NONE, &p), want, "doc {d}, {p:?}");
            runs += 1;
            splits += want.len().saturating_sub(1);
        }
    }
    assert!(runs >= 300 && splits > 200, "{runs} runs, {splits} splits: the fixture must exercise the rule");
}

/// The fixture's embedding: normalised sum of per-word vectors of the lower-cased words.
struct Bow {
    words: HashMap<String, Vec<f32>>,
    dim: usize,
}

impl Bow {
    fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        let lower = text.to_lowercase();
        for w in lower.split(|c: char| !c.is_ascii_lowercase()).filter(|w| !w.is_empty()) {
            if let Some(x) = self.words.get(w) {
                for (a, b) in v.iter_mut().zip(x) {
                    *a += b;
                }
            }
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n > 0.0 {
            v.iter_mut().for_each(|x| *x /= n);
        }
        v
    }
}

fn cos32(a: &[f32], b: &[f32]) -> f64 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    f64::from(dot / (na * nb))
}

#[test]
fn minima_matches_chonkie() {
    let fx = fixture();
    let dim = fx["dim"].as_u64().unwrap() as usize;
    let words: HashMap<String, Vec<f32>> = fx["words"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), f32s(v.as_str().unwrap())))
        .collect();
    let bow = Bow { words, dim };
    let (mut runs, mut splits) = (0, 0);
    for (d, case) in fx["minima"].as_array().unwrap().iter().enumerate() {
        for run in case["runs"].as_array().unwrap() {
            let pr = &run["params"];
            let def = MinimaParams::default();
            let get = |k: &str, dv: f64| pr.get(k).and_then(Value::as_f64).unwrap_or(dv);
            let p = MinimaParams {
                threshold: get("threshold", def.threshold),
                similarity_window: get("similarity_window", def.similarity_window as f64) as usize,
                min_sentences: get("min_sentences_per_chunk", def.min_sentences as f64) as usize,
                filter_window: get("filter_window", def.filter_window as f64) as usize,
                filter_polyorder: get("filter_polyorder", def.filter_polyorder as f64) as usize,
                filter_tolerance: get("filter_tolerance", def.filter_tolerance),
                skip_window: get("skip_window", 0.0) as usize,
            };
            let sentences: Vec<String> = run["sentences"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            let tokens = usizes(&run["tokens"]);
            let sims = f64s(&run["sims"]);
            let mut starts = split_starts(tokens.len(), &sims, &p);
            if p.skip_window > 0 {
                let group_text = |g: usize, st: &[usize]| -> String {
                    let e = st.get(g + 1).copied().unwrap_or(sentences.len());
                    sentences[st[g]..e].concat()
                };
                let st = starts.clone();
                let embs: Vec<Vec<f32>> = (0..st.len()).map(|g| bow.embed(&group_text(g, &st))).collect();
                starts = skip_and_merge(&st, &p, |a, b| cos32(&embs[a], &embs[b]));
            }
            // chonkie's chunk_size (its default 2048) is the cap.
            let got = split_groups(&starts, &tokens, Cap::new(get("chunk_size", 2048.0) as usize));
            let want = usizes(&run["starts"]);
            assert_eq!(got, want, "doc {d}, params {pr}");
            runs += 1;
            splits += want.len().saturating_sub(1);
        }
    }
    assert!(runs >= 400 && splits > 200, "{runs} runs, {splits} splits");
}

#[test]
fn breakpoints_match_langchain() {
    let fx = fixture();
    let mut runs = 0;
    let mut splits = 0;
    for (d, case) in fx["breakpoint"].as_array().unwrap().iter().enumerate() {
        for run in case["runs"].as_array().unwrap() {
            let pr = &run["params"];
            let kind = match pr["breakpoint_threshold_type"].as_str().unwrap() {
                "percentile" => ThresholdType::Percentile,
                "standard_deviation" => ThresholdType::StandardDeviation,
                "interquartile" => ThresholdType::Interquartile,
                "gradient" => ThresholdType::Gradient,
                other => panic!("{other}"),
            };
            let p = BreakpointParams {
                kind,
                amount: pr
                    .get("breakpoint_threshold_amount")
                    .and_then(Value::as_f64)
                    .unwrap_or(kind.default_amount()),
                number_of_chunks: pr.get("number_of_chunks").and_then(Value::as_u64).map(|x| x as usize),
                min_chunk_size: pr.get("min_chunk_size").and_then(Value::as_u64).map(|x| x as usize),
            };
            let chars: Vec<usize> = run["sentences"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().chars().count())
                .collect();
            let got = breakpoints(&f64s(&run["distances"]), &chars, &p);
            let want = usizes(&run["starts"]);
            assert_eq!(got, want, "doc {d}, params {pr}");
            runs += 1;
            splits += want.len().saturating_sub(1);
        }
    }
    assert!(runs >= 500 && splits > 200, "{runs} runs, {splits} splits");
}

#[test]
fn delimiter_splitter_matches_chonkie() {
    use seamcut::segment::delimiters::{split, CHONKIE_DELIMITERS};
    let fx = fixture();
    let mut checked = 0;
    for case in fx["minima"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let want: Vec<&str> =
            case["runs"][0]["sentences"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        let got: Vec<&str> = split(text, &CHONKIE_DELIMITERS, 24).iter().map(|s| s.text(text)).collect();
        assert_eq!(got, want);
        checked += want.len();
    }
    assert!(checked > 500, "{checked} sentences");
}
