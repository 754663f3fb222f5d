"""Text blocks of DocBook-made HTML pages (the Debian manuals of the broad benchmark's
non-English texts, benches/broad/texts/{de,es}-*.sh): paragraphs, listings, and data tables
one line per row; tables of contents, navigation and admonition layout dropped. Standard
library only; one copy for the scripts, which each carried it.
"""
import html.parser


BLOCK = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "div", "ul", "ol", "dl",
         "blockquote", "table", "tr", "td", "th"}
VOID = {"img", "col", "meta", "link", "br", "hr"}
SKIP_DIVS = {"toc", "list-of-tables", "navheader", "navfooter"}
LAYOUT = {"Note", "Tip", "Caution", "Warning", "Important"}


class Extract(html.parser.HTMLParser):
    """Collects blocks of text: paragraphs, listings, and data tables (one line per row)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks, self.buf = [], []
        self.stack = []      # open elements: (tag, starts a skipped subtree)
        self.skip = 0        # depth inside skipped subtrees
        self.tables = []     # open tables: None for a layout table, else a list of row lines
        self.row = None      # cells of the current data-table row
        self.cell = None     # text of the current data-table cell

    def flush(self):
        text = " ".join("".join(self.buf).split())
        self.buf = []
        if text:
            self.blocks.append(text)

    def in_data_table(self):
        return bool(self.tables) and self.tables[-1] is not None

    def handle_startendtag(self, tag, attrs):
        if tag == "br" and not self.skip:
            (self.cell if self.cell is not None else self.buf).append(" ")

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            self.handle_startendtag(tag, attrs)
            return
        a = dict(attrs)
        skipping = not self.skip and (
            tag in ("head", "script", "style")
            or (tag == "div" and a.get("class") in SKIP_DIVS)
            or (tag == "table" and a.get("summary", "").startswith("Navigation")))
        self.stack.append((tag, skipping))
        if skipping:
            self.skip += 1
        if self.skip:
            return
        if self.cell is not None:
            if tag in BLOCK:
                self.cell.append(" ")
        elif tag == "pre":
            self.flush()
        elif tag == "table":
            self.flush()
            self.tables.append(None if a.get("summary", "") in LAYOUT else [])
        elif tag == "tr" and self.in_data_table():
            self.row = []
        elif tag in ("td", "th") and self.in_data_table():
            self.cell = []
        elif tag in BLOCK:
            self.flush()

    def handle_endtag(self, tag):
        if tag in VOID or not any(t == tag for t, _ in self.stack):
            return
        while True:
            t, skipping = self.stack.pop()
            was_skipping = self.skip > 0
            if skipping:
                self.skip -= 1
            if t == tag:
                break
        if was_skipping:
            return
        if self.cell is not None and tag in ("td", "th"):
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif self.cell is not None:
            if tag in BLOCK:
                self.cell.append(" ")
        elif tag == "pre":
            lines = [l.rstrip() for l in "".join(self.buf).split("\n")]
            self.buf = []
            text = "\n".join(lines).strip("\n")
            if text.strip():
                self.blocks.append(text)
        elif tag == "tr" and self.in_data_table():
            if self.row and any(self.row):
                self.tables[-1].append(" | ".join(self.row))
            self.row = None
        elif tag == "table" and self.tables:
            rows = self.tables.pop()
            if rows:
                self.blocks.append("\n".join(rows))
        elif tag in BLOCK:
            self.flush()

    def handle_data(self, data):
        if not self.skip:
            (self.cell if self.cell is not None else self.buf).append(data)


def blocks_of(paths):
    """The text blocks of the pages at `paths`, in order."""
    blocks = []
    for path in paths:
        p = Extract()
        with open(path, encoding="utf-8") as f:
            p.feed(f.read())
        p.close()
        p.flush()
        blocks.extend(p.blocks)
    return blocks
