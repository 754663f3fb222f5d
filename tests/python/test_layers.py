"""The library's import graph has no circle and keeps ARCHITECTURE.md's layers
(scripts/import_graph.py), and the check itself sees a circle and a broken layer."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "import_graph.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def test_the_library_has_no_import_circle_and_keeps_its_layers():
    r = run()
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("ok:"), r.stdout


def write(root, files):
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_a_circle_through_a_submodule_and_an_upward_import_are_found(tmp_path):
    write(
        tmp_path,
        {
            "lib.rs": "pub mod db;\npub mod pipeline;\npub mod totals;\npub use totals::Totals;\n",
            "totals.rs": "pub struct Totals;\n",
            # The writer names the job's module; the job names the writer through db's facade.
            "db/mod.rs": "pub mod postgres;\npub use postgres::PgWriter;\nuse crate::Totals;\n",
            "db/postgres.rs": "use super::Rows;\nuse crate::pipeline::plural;\npub struct PgWriter;\n",
            "pipeline/mod.rs": "pub fn plural() {}\nfn open() { let _ = crate::db::PgWriter; }\n",
        },
    )
    r = run("--src", str(tmp_path), "--edges")
    assert r.returncode == 1, r.stdout
    edges = set(r.stdout.splitlines())
    # A child standing on its parent (`super::Rows`) is no arrow; `crate::Totals` is the file
    # lib.rs re-exports it from.
    assert "db/postgres.rs -> db/mod.rs" not in edges
    assert "db/mod.rs -> totals.rs" in edges
    assert "circle of 3 files: " in r.stdout, r.stdout
    assert "layering: db/postgres.rs -> pipeline/mod.rs" in r.stdout, r.stdout


def test_a_tree_without_circles_passes(tmp_path):
    write(
        tmp_path,
        {
            "lib.rs": "pub mod a;\npub mod b;\n",
            "a.rs": "use crate::b::f;\n// use crate::a::x; in a comment is not an import\n",
            "b.rs": 'pub fn f() { let _ = "crate::a::g"; }\n',
        },
    )
    r = run("--src", str(tmp_path))
    assert r.returncode == 0, r.stdout
    assert "1 arrows, 0 circles" in r.stdout, r.stdout
