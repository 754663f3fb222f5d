//! Bench input: English prose from The Rust Programming Language book that rustup installs
//! with every toolchain (HTML stripped, code blocks dropped), repeated to the size wanted.
//! Falls back to generated prose when the book is not installed.

use std::path::PathBuf;

fn book_dir() -> Option<PathBuf> {
    let out = std::process::Command::new("rustc").args(["--print", "sysroot"]).output().ok()?;
    let root = String::from_utf8(out.stdout).ok()?;
    let dir = PathBuf::from(root.trim()).join("share/doc/rust/html/book");
    dir.is_dir().then_some(dir)
}

fn strip_html(html: &str) -> String {
    let body = html.find("<main>").map_or(html, |i| &html[i..]);
    let body = body.find("</main>").map_or(body, |i| &body[..i]);
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if rest.starts_with("<pre") {
            rest = rest.find("</pre>").map_or("", |j| &rest[j + 6..]);
            continue;
        }
        if rest.starts_with("</p>") || rest.starts_with("</h") || rest.starts_with("</li>") {
            out.push_str("\n\n");
        }
        rest = rest.find('>').map_or("", |j| &rest[j + 1..]);
    }
    out.push_str(rest);
    out.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// About `bytes` bytes of English prose.
#[allow(dead_code)]
pub fn prose(bytes: usize) -> String {
    let mut base = String::new();
    if let Some(dir) = book_dir() {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("ch") && n.ends_with(".html"))
            })
            .collect();
        files.sort();
        for f in files {
            if let Ok(h) = std::fs::read_to_string(&f) {
                base.push_str(&strip_html(&h));
            }
        }
    }
    if base.len() < 10_000 {
        let words = [
            "the", "engine", "cuts", "text", "at", "its", "seams", "and", "Dr.", "Smith", "reads", "3.14",
            "pages",
        ];
        for i in 0..20_000 {
            base.push_str(words[i % words.len()]);
            base.push_str(if i % 17 == 16 {
                ". "
            } else if i % 97 == 96 {
                ".\n\n"
            } else {
                " "
            });
        }
    }
    let mut out = String::with_capacity(bytes + base.len());
    while out.len() < bytes {
        out.push_str(&base);
    }
    let mut cut = bytes.min(out.len());
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    out
}
