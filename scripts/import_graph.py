#!/usr/bin/env python3
"""The import graph of seamcut's library (src/), and the layering rules it must keep.

Each file under src/ is a room; an arrow A -> B means A names an item that lives in B
(`use crate::b::X`, an inline `crate::b::f(..)`, `super::b::X`). Two kinds of arrow are left out:

* a file's arrows to its own ancestors (`super::Rows` in db/postgres.rs, `crate::db::DbWriter`
  there): a submodule may stand on what its parent module defines for its children;
* `crate::Error` and the other re-exports of lib.rs resolve to the file that defines them
  (lib.rs and main.rs are not rooms: the root names everything).

A circle is a strongly connected component of more than one room. The script exits 1 when
there is one, or when a layering rule of ARCHITECTURE.md is broken:

* the rules and the segmenter import neither the embedder nor the device module;
* database writers and LLM backends import neither the pipeline nor the chunkers.

    scripts/import_graph.py            # the verdict, one line, and any circle in full
    scripts/import_graph.py --edges    # every arrow, `from -> to`, for a drawing

Why a script rather than a crate (cargo-modules): it needs no install on a clean clone, and
the rules are a few lines each. It reads paths as text, so a path built by a macro is not seen;
the code base has none that crosses modules.
"""

import argparse
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

# Rules: (rooms matched by prefix, rooms they must not reach directly, why).
FORBIDDEN = [
    (("rules/", "segment/"), ("embed/", "device.rs"), "the rules and the segmenter stand below the embedder"),
    (("db/", "llm/"), ("pipeline/", "chunkers/"), "writers and LLM backends know nothing of the job"),
]


def module_of(path: Path) -> list[str]:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "mod":
        parts = parts[:-1]
    return parts


def file_of(parts: list[str]) -> Path | None:
    if not parts:
        return None
    base = SRC.joinpath(*parts)
    for cand in (base.with_suffix(".rs"), base / "mod.rs"):
        if cand.exists():
            return cand
    return None


def resolve(parts: list[str], reexports: dict[str, list[str]]) -> Path | None:
    """The file that the deepest module prefix of `parts` names."""
    if parts and parts[0] in reexports and file_of(parts[:1]) is None:
        parts = reexports[parts[0]] + parts[1:]
    best = None
    for n in range(1, len(parts) + 1):
        f = file_of(parts[:n])
        if f is not None:
            best = f
        elif n > 1:
            break
    return best


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    # String literals can hold `crate::` in messages.
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def expand_use(tree: str) -> list[list[str]]:
    """`a::{b, c::{d, e}}` -> [[a, b], [a, c, d], [a, c, e]]."""
    tree = re.sub(r"\s+as\s+[A-Za-z_][A-Za-z0-9_]*", "", tree)
    tree = re.sub(r"\s+", "", tree)
    out: list[list[str]] = []

    def walk(prefix: list[str], s: str) -> None:
        depth, start, items = 0, 0, []
        for i, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                items.append(s[start:i])
                start = i + 1
        items.append(s[start:])
        for item in filter(None, items):
            brace = item.find("{")
            if brace >= 0:
                head = [p for p in item[:brace].split("::") if p]
                walk(prefix + head, item[brace + 1 : item.rindex("}")])
            else:
                out.append(prefix + [p for p in item.split("::") if p and p != "self"])

    walk([], tree)
    return out


def absolute(parts: list[str], here: list[str]) -> list[str] | None:
    if not parts:
        return None
    if parts[0] == "crate":
        return parts[1:]
    if parts[0] in ("super", "self"):
        base = list(here)
        while parts and parts[0] in ("super", "self"):
            if parts[0] == "super":
                base = base[:-1]
            parts = parts[1:]
        return base + parts
    return None


def lib_reexports() -> dict[str, list[str]]:
    text = strip_comments((SRC / "lib.rs").read_text())
    out = {}
    for m in re.finditer(r"pub use ([^;]+);", text):
        for path in expand_use(m.group(1)):
            out[path[-1]] = path
    return out


def graph() -> dict[str, set[str]]:
    reexports = lib_reexports()
    files = [p for p in SRC.rglob("*.rs") if p.name not in ("lib.rs", "main.rs") or p.parent != SRC]
    edges: dict[str, set[str]] = {}
    for path in sorted(files):
        here = module_of(path)
        name = str(path.relative_to(SRC))
        edges.setdefault(name, set())
        text = strip_comments(path.read_text())
        # A path may also start at one of the file's own submodules (`pub use http::HttpChat`).
        children = set(re.findall(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_0-9]+)\s*;", text, re.M))
        heads = "|".join(["crate", "super", "self", *sorted(children)])
        paths: list[list[str]] = []
        for m in re.finditer(rf"\buse\s+((?:{heads})\b[^;]*);", text):
            paths.extend(expand_use(m.group(1)))
        for m in re.finditer(rf"(?<![A-Za-z0-9_:])((?:{heads})(?:::[A-Za-z_][A-Za-z0-9_]*)+)", text):
            paths.append(m.group(1).split("::"))
        paths = [["self", *p] if p[0] in children else p for p in paths]
        for p in paths:
            # A `use super::*` inside a file's own `mod tests` names the file itself.
            absolute_parts = absolute(p, here)
            if absolute_parts is None:
                continue
            target = resolve(absolute_parts, reexports)
            if target is None or target == path:
                continue
            to_mod = module_of(target)
            if to_mod == here[: len(to_mod)]:
                continue  # an ancestor: a child stands on its parent module
            edges[name].add(str(target.relative_to(SRC)))
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one room."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def broken_rules(edges: dict[str, set[str]]) -> list[str]:
    out = []
    for froms, tos, why in FORBIDDEN:
        for a, targets in sorted(edges.items()):
            if not a.startswith(froms):
                continue
            for b in sorted(targets):
                if b.startswith(tos):
                    out.append(f"{a} -> {b} ({why})")
    return out


def main() -> int:
    global SRC
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edges", action="store_true", help="print every arrow")
    ap.add_argument("--src", type=Path, default=SRC, help="the library's source (default: src/)")
    args = ap.parse_args()
    SRC = args.src.resolve()
    edges = graph()
    if args.edges:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"{a} -> {b}")
    found = circles(edges)
    broken = broken_rules(edges)
    n_edges = sum(len(v) for v in edges.values())
    for comp in found:
        inner = [f"{a} -> {b}" for a in comp for b in sorted(edges[a]) if b in comp]
        print(f"circle of {len(comp)} files: " + "; ".join(inner))
    for line in broken:
        print(f"layering: {line}")
    verdict = "ok" if not found and not broken else "FAIL"
    print(f"{verdict}: {len(edges)} files, {n_edges} arrows, {len(found)} circles, {len(broken)} broken rules")
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
