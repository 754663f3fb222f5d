//! Segmentation metrics against their Python references on 300 random segmentations
//! (`tests/fixtures/make_metric_fixtures.py`): nltk's `pk` and `windowdiff`, scikit-learn's
//! `adjusted_mutual_info_score`.

use seamcut::eval::segmentation::{ami, boundary_mask, labels, pk, window_diff};
use serde_json::Value;

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect()
}

#[test]
fn metrics_match_nltk_and_sklearn() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/metrics.json")).unwrap();
    let cases: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert!(cases.len() >= 300);
    for (i, c) in cases.iter().enumerate() {
        let n = c["n"].as_u64().unwrap() as usize;
        let (r, h) = (usizes(&c["reference"]), usizes(&c["hypothesis"]));
        let (rm, hm) = (boundary_mask(&r, n), boundary_mask(&h, n));
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(pk(&rm, &hm, None), c["pk"].as_f64().unwrap()), "case {i}: pk");
        let k = c["pk_k"].as_u64().unwrap() as usize;
        assert!(close(pk(&rm, &hm, Some(k)), c["pk_at_k"].as_f64().unwrap()), "case {i}: pk at k");
        let k = c["windowdiff_k"].as_u64().unwrap() as usize;
        assert!(close(window_diff(&rm, &hm, k), c["windowdiff"].as_f64().unwrap()), "case {i}: windowdiff");
        let got = ami(&labels(&r, n), &labels(&h, n));
        let want = c["ami"].as_f64().unwrap();
        assert!((got - want).abs() < 1e-7, "case {i}: ami {got} vs {want}");
    }
}
