//! The broad retrieval benchmark (benches/broad/) holds up: its fetch script builds every
//! text from pinned packages, every question's `must_contain` occurs exactly once in its
//! text and lies inside its byte `evidence` spans (benches/broad/check.py), and there are at
//! least 300 questions over at least five kinds of text, with a held-out split by document.

use std::process::Command;

#[test]
fn the_broad_benchmark_fetches_and_every_question_checks() {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("benches/broad/manifest.json").unwrap()).unwrap();
    let texts = manifest["texts"].as_array().unwrap();
    let kinds: std::collections::BTreeSet<&str> = texts.iter().map(|t| t["kind"].as_str().unwrap()).collect();
    assert!(kinds.len() >= 5, "{kinds:?}");
    let mut questions = 0;
    let mut heldout = 0;
    for t in texts {
        let name = t["name"].as_str().unwrap();
        let n =
            std::fs::read_to_string(format!("benches/broad/questions/{name}.jsonl")).unwrap().lines().count();
        questions += n;
        if t["split"] == "heldout" {
            heldout += n;
        }
        assert!(std::path::Path::new(&format!("benches/broad/texts/{name}.sh")).is_file(), "{name}");
    }
    assert!(questions >= 300, "{questions} questions");
    assert!(heldout * 8 >= questions && heldout * 3 <= questions, "held out {heldout} of {questions}");

    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("benches/broad/fetch.sh").arg(dir.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains(&format!("{questions} questions over {} texts, 0 problems", texts.len())),
        "{stdout}"
    );
    for t in texts {
        let words = std::fs::read_to_string(dir.path().join(format!("{}.txt", t["name"].as_str().unwrap())))
            .unwrap()
            .split_whitespace()
            .count();
        assert!(words > 25_000, "{}: a long text ({words} words)", t["name"]);
    }
}
