//! The Choi-style topic-shift benchmark, generated at test time in English (the Rust book's
//! chapters, from the installed documentation) and in Chinese (the Debian Reference and FAQ,
//! from two pinned Debian packages that benches/fetch-texts.sh downloads and caches): the
//! default embedding chunker finds topic shifts clearly better than fixed-size chunking.

use std::process::Command;

fn fetch(flag: Option<&str>, dir: &std::path::Path) {
    let mut c = Command::new("benches/fetch-texts.sh");
    if let Some(f) = flag {
        c.arg(f);
    }
    let out = c.arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "fetch-texts.sh {flag:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Pk per chunker label from `seamcut eval topics`' table.
fn pk(dir: &std::path::Path) -> std::collections::HashMap<String, f64> {
    let out = Command::new(env!("CARGO_BIN_EXE_seamcut"))
        .args(["eval", "topics"])
        .arg(dir)
        .args(["--chunker", "maxmin", "--chunker", "fixed", "--match-size", "--docs", "40"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.starts_with("40 documents"), "{table}");
    table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| chunker"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[5].parse().unwrap())
        })
        .collect()
}

#[test]
fn maxmin_beats_fixed_size_chunks_on_english_and_chinese_topic_shifts() {
    let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output().unwrap();
    let book = std::path::PathBuf::from(String::from_utf8(sysroot.stdout).unwrap().trim())
        .join("share/doc/rust/html/book");
    let root = tempfile::tempdir().unwrap();
    let (en, zh) = (root.path().join("en"), root.path().join("zh"));
    fetch(Some("--zh"), &zh);
    let mut sets = vec![("zh", zh, 0.03)];
    if book.is_dir() {
        fetch(None, &en);
        sets.push(("en", en, 0.04));
    } else {
        eprintln!("English set skipped: the rust-docs component is not installed");
    }
    for (lang, dir, margin) in sets {
        let pk = pk(&dir);
        let (m, f) = (pk["maxmin"], pk["fixed"]);
        assert!((0.0..=1.0).contains(&m) && (0.0..=1.0).contains(&f), "{lang}: {pk:?}");
        assert!(m < f - margin, "{lang}: Max–Min Pk {m} should beat fixed {f} by {margin}");
    }
}
