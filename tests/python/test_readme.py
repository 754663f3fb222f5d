"""The Python examples run as written, so they cannot rot: every ```python block of README.md's
"## Python" section and of docs/python.md runs verbatim in a fresh interpreter, and the install
lines above them (the page's ```sh block, whatever its `needs=` marker) install everything
those blocks import, through the extras the installed wheel declares (`seamcut[arrow]` for
pyarrow). The shell blocks themselves run in test_docs_commands.py."""
import ast
import importlib.metadata
import os
import re
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def section(markdown, title):
    """The text of the `## title` section, up to the next section of the same level."""
    start = markdown.index(f"\n{title}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start : end if end >= 0 else len(markdown)]


def blocks(markdown, lang):
    """The bodies of the ```lang blocks, whatever words follow the language (`sh needs=build`)."""
    return re.findall(r"^```" + lang + r"(?:[ \t][^\n]*)?\n(.*?)^```", markdown, re.M | re.S)


def read(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


# Each page with Python examples, and the part of it that holds them and their install lines.
PAGES = {
    "README.md": lambda: section(read("README.md"), "## Python"),
    "docs/python.md": lambda: read("docs/python.md"),
}


def python_section():
    return PAGES["README.md"]()


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_python_blocks_run_verbatim(page):
    code = blocks(PAGES[page](), "python")
    assert code, f"{page} has no python block"
    for block in code:
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, "-c", block], cwd=d, capture_output=True, text=True)
            assert r.returncode == 0, f"{page} block failed:\n{block}\n{r.stderr}"
            # What the example shows it makes: chunks, a chunk table, a spec file.
            ns = {}
            cwd = os.getcwd()
            os.chdir(d)
            try:
                exec(compile(block, page, "exec"), ns)
            finally:
                os.chdir(cwd)
            if "chunks" in ns:
                assert ns["chunks"] and all(c.text for c in ns["chunks"])
            if "table" in ns:
                table = ns["table"]
                assert table.num_rows > 0 and {"doc_id", "start", "end", "text", "tokens"} <= set(table.column_names)
            for name in re.findall(r'save_spec\("([^"]+)"\)', block):
                assert os.path.getsize(os.path.join(d, name)) > 0


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_install_lines_install_what_the_blocks_import(page):
    text = PAGES[page]()
    imports = set()
    for block in blocks(text, "python"):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.Import):
                imports |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imports.add(node.module.split(".")[0])
    installs = [line for b in blocks(text, "sh") for line in b.splitlines() if "pip install" in line]
    assert installs, f"{page}: no pip install line above the example"
    words = " ".join(line.split("#")[0] for line in installs).replace('"', " ").replace("'", " ").split()
    extras = {e.strip() for w in words for m in re.findall(r"^seamcut\[([^\]]+)\]$", w) for e in m.split(",")}
    named = {re.split(r"[\[<>=!~ ]", w)[0].lower() for w in words if not w.startswith("-")}
    # What installing the wheel with those extras brings, by the installed wheel's metadata.
    provided = {"seamcut"} | named
    declared = set()
    for req in importlib.metadata.requires("seamcut") or []:
        name = re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower()
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", req)
        if extra:
            declared.add(extra.group(1))
        if extra is None or extra.group(1) in extras:
            provided.add(name)
    assert extras <= declared, f"{page} installs extras {extras - declared} the wheel does not declare"
    missing = {m for m in imports if m not in provided and m not in sys.stdlib_module_names}
    assert not missing, f"{page}'s example imports {missing}, which its install lines do not install"
