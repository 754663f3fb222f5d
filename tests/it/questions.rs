//! The hand-written retrieval questions in benches/questions/ hold up against the texts
//! benches/fetch-texts.sh extracts from the installed Rust documentation: every
//! `must_contain` string is in its document (compared as `seamcut eval retrieval` compares),
//! and there are at least 60 questions over at least two documents.

use seamcut::eval::retrieval::{normalize, Question};
use std::process::Command;

#[test]
fn every_question_has_its_answer_in_its_document() {
    let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output().unwrap();
    let docs = std::path::PathBuf::from(String::from_utf8(sysroot.stdout).unwrap().trim())
        .join("share/doc/rust/html/book");
    if !docs.is_dir() {
        eprintln!("skipped: the rust-docs component is not installed ({})", docs.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("benches/fetch-texts.sh").arg("--books").arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut total = 0;
    let mut seen = std::collections::HashSet::new();
    for name in ["rust-book", "nomicon"] {
        let text = std::fs::read_to_string(dir.path().join(format!("{name}.txt"))).unwrap();
        assert!(text.split_whitespace().count() > 30_000, "{name} is a long text");
        let text = normalize(&text);
        let qs: Vec<Question> = std::fs::read_to_string(format!("benches/questions/{name}.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for q in &qs {
            let needle = normalize(&q.must_contain);
            assert!(needle.split(' ').count() >= 5, "{name}: {:?} is too short to locate", q.must_contain);
            assert!(text.contains(&needle), "{name}: {:?} is not in the text", q.must_contain);
            assert!(seen.insert(q.question.clone()), "duplicate question {:?}", q.question);
        }
        total += qs.len();
    }
    assert!(total >= 60, "{total} questions");
}
