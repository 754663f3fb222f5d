"""The README's Python example runs as written, so it cannot rot: every ```python block of
README.md's "## Python" section runs verbatim in a fresh interpreter, and the install lines
above it (the section's ```sh block) install everything those blocks import, through the
extras the installed wheel declares (`seamcut[arrow]` for pyarrow)."""
import ast
import importlib.metadata
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def section(markdown, title):
    """The text of the `## title` section, up to the next section of the same level."""
    start = markdown.index(f"\n{title}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start : end if end >= 0 else len(markdown)]


def blocks(markdown, lang):
    return re.findall(r"^```" + lang + r"\n(.*?)^```", markdown, re.M | re.S)


def python_section():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return section(f.read(), "## Python")


def test_the_python_blocks_run_verbatim():
    code = blocks(python_section(), "python")
    assert code, "the README's Python section has no python block"
    for block in code:
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, "-c", block], cwd=d, capture_output=True, text=True)
            assert r.returncode == 0, f"README block failed:\n{block}\n{r.stderr}"
            # What the example shows it makes: chunks, a chunk table, a spec file.
            ns = {}
            cwd = os.getcwd()
            os.chdir(d)
            try:
                exec(compile(block, "README.md", "exec"), ns)
            finally:
                os.chdir(cwd)
            if "chunks" in ns:
                assert ns["chunks"] and all(c.text for c in ns["chunks"])
            if "table" in ns:
                table = ns["table"]
                assert table.num_rows > 0 and {"doc_id", "start", "end", "text", "tokens"} <= set(table.column_names)
            for name in re.findall(r'save_spec\("([^"]+)"\)', block):
                assert os.path.getsize(os.path.join(d, name)) > 0


def test_the_install_lines_install_what_the_blocks_import():
    text = python_section()
    imports = set()
    for block in blocks(text, "python"):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.Import):
                imports |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imports.add(node.module.split(".")[0])
    installs = [line for b in blocks(text, "sh") for line in b.splitlines() if "pip install" in line]
    assert installs, "no pip install line above the example"
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
    assert extras <= declared, f"the README installs extras {extras - declared} the wheel does not declare"
    missing = {m for m in imports if m not in provided and m not in sys.stdlib_module_names}
    assert not missing, f"the README's example imports {missing}, which its install lines do not install"
