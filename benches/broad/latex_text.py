"""LaTeX (Sweave) papers to plain prose for the broad benchmark's scientific texts
(benches/broad/texts/scientific-*.sh), standard library only: each paper's title, authors,
abstract and sections; R code chunks, verbatim code, figures and tables (with their captions)
and the bibliography dropped; section, figure, table and equation references resolved to the
numbers LaTeX prints (a label the source lacks reads "??", as LaTeX prints it); citations as
their keys in brackets; \\Sexpr values as "[…]"; mathematics as plain Unicode text; the
report class's chapters (sections, figures, tables and equations numbered within them).
One copy for the three scripts, which each carried it.
"""
import re
import sys
import unicodedata

ACCENTS = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303",
           "=": "\u0304", ".": "\u0307", "c": "\u0327", "v": "\u030c", "u": "\u0306",
           "H": "\u030b", "r": "\u030a"}
SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "vartheta": "θ", "iota": "ι", "kappa": "κ",
    "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ", "varrho": "ρ",
    "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "φ", "varphi": "φ", "chi": "χ",
    "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ",
    "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω", "ell": "ℓ",
    "sum": "Σ", "prod": "Π", "int": "∫", "partial": "∂", "infty": "∞", "nabla": "∇",
    "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥", "neq": "≠", "ne": "≠", "approx": "≈",
    "equiv": "≡", "sim": "~", "propto": "∝", "times": "×", "cdot": "·", "pm": "±",
    "in": "∈", "notin": "∉", "subset": "⊂", "subseteq": "⊆", "cup": "∪", "cap": "∩",
    "bigcup": "∪", "bigcap": "∩", "to": "→", "rightarrow": "→", "longrightarrow": "→",
    "leftarrow": "←", "Rightarrow": "⇒", "mapsto": "↦", "otimes": "⊗", "wedge": "∧",
    "vee": "∨", "mid": "|", "vert": "|", "lvert": "|", "rvert": "|", "Vert": "‖",
    "lVert": "‖", "rVert": "‖", "|": "‖", "top": "ᵀ", "prime": "′", "ldots": "…",
    "dots": "…", "cdots": "…", "dotsc": "…", "dotsb": "…", "vdots": "⋮", "ddots": "⋱",
    "backslash": "\\", "textbackslash": "\\", "log": "log", "exp": "exp", "sin": "sin",
    "cos": "cos", "tan": "tan", "min": "min", "max": "max", "sup": "sup", "inf": "inf",
    "lim": "lim", "det": "det", "Pr": "Pr", "arg": "arg", "forall": "∀", "exists": "∃",
    "emptyset": "∅", "setminus": "∖", "circ": "∘", "star": "⋆", "ast": "∗", "langle": "⟨",
    "rangle": "⟩", "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉",
    "quad": " ", "qquad": " ", ",": " ", ";": " ", ":": " ", "!": "", " ": " ",
    "LaTeX": "LaTeX", "TeX": "TeX", "ss": "ß", "o": "ø", "O": "Ø", "aa": "å", "AA": "Å",
    "ae": "æ", "AE": "Æ", "l": "ł", "L": "Ł", "i": "ı", "S": "§", "copyright": "©",
    "textendash": "–", "textemdash": "—", "%": "%", "&": "&", "_": "_", "#": "#", "$": "$",
    "{": "{", "}": "}", "@": "", "/": "", "-": "", "textquotedblleft": "“",
    "textquotedblright": "”", "textasciitilde": "~", "euro": "€", "IN": "ℕ", "IR": "ℝ",
    "colon": ":", "lbrace": "{", "rbrace": "}", "bullet": "•", "dagger": "†",
    "Longrightarrow": "⇒", "Leftrightarrow": "⇔", "imath": "i", "jmath": "j",
}
# Commands whose arguments are dropped with them: name -> number of mandatory arguments.
DROP = {
    "label": 1, "vspace": 1, "hspace": 1, "setkeys": 2, "SweaveOpts": 1, "bibliographystyle": 1,
    "bibliography": 1, "includegraphics": 1, "phantom": 1, "vphantom": 1, "hphantom": 1,
    "enlargethispage": 1, "setlength": 2, "addtolength": 2, "setcounter": 2, "thanks": 1,
    "pagestyle": 1, "thispagestyle": 1, "definecolor": 3, "color": 1, "hypersetup": 1,
    "usepackage": 1, "newpage": 0, "clearpage": 0, "pagebreak": 0, "linebreak": 0,
    "nopagebreak": 0, "noindent": 0, "indent": 0, "maketitle": 0, "centering": 0,
    "raggedright": 0, "small": 0, "footnotesize": 0, "scriptsize": 0, "tiny": 0, "large": 0,
    "Large": 0, "normalsize": 0, "normalfont": 0, "bfseries": 0, "itshape": 0, "ttfamily": 0,
    "sffamily": 0, "rmfamily": 0, "bf": 0, "it": 0, "tt": 0, "sc": 0, "em": 0, "sl": 0,
    "hline": 0, "toprule": 0, "midrule": 0, "bottomrule": 0, "nonumber": 0, "notag": 0,
    "displaystyle": 0, "textstyle": 0, "left": 0, "right": 0, "big": 0, "Big": 0, "bigg": 0,
    "Bigg": 0, "bigl": 0, "bigr": 0, "Bigl": 0, "Bigr": 0, "biggl": 0, "biggr": 0, "limits": 0,
    "nolimits": 0, "relax": 0, "protect": 0, "smallskip": 0, "medskip": 0, "bigskip": 0,
    "par": 0, "appendix": 0, "selectfont": 0, "fontseries": 1, "tableofcontents": 0,
    "bibsection": 0, "bibfont": 0, "hfill": 0, "vfill": 0, "null": 0, "strut": 0, "and": 0,
    "baselineskip": 0, "parindent": 0, "textwidth": 0, "linewidth": 0, "let": 0,
    "VignetteIndexEntry": 1, "VignetteEngine": 1, "VignetteDepends": 1, "VignetteKeywords": 1,
    "VignettePackage": 1, "pageref": 1, "title": 1, "author": 1, "date": 1, "input": 1,
    "include": 1, "DefineVerbatimEnvironment": 3, "nocite": 1, "index": 1, "vbox": 0, "hbox": 0,
}
# Commands replaced by their (last) argument's text.
KEEP = {"emph", "textit", "textbf", "textsf", "texttt", "textsc", "textrm", "textnormal",
        "textup", "textmd", "mbox", "text", "mathrm", "mathbf", "mathit", "mathsf", "mathtt",
        "mathcal", "mathbb", "boldsymbol", "bm", "pkg", "proglang", "fct", "class", "CRANpkg",
        "url", "email", "operatorname", "fbox", "framebox", "mathnormal", "ensuremath",
        "uppercase", "lowercase", "samp", "file", "option", "dQuote", "sQuote", "textsl",
        "mathop", "var", "env", "command", "boxed"}
# Accents over a symbol in mathematics: the combining character (on one letter) or nothing.
MATH_ACCENTS = {"hat": "\u0302", "widehat": "\u0302", "tilde": "\u0303", "widetilde": "\u0303",
                "bar": "\u0304", "overline": "\u0304", "vec": "\u20d7", "dot": "\u0307",
                "ddot": "\u0308", "check": "\u030c", "breve": "\u0306", "mathring": "\u030a",
                "underline": "\u0332"}
DROP_ENVS = {"figure", "figure*", "table", "table*", "Schunk", "Sinput", "Soutput", "Scode",
             "verbatim", "Verbatim", "alltt", "Code", "CodeChunk", "CodeInput", "CodeOutput",
             "tabular", "tabular*", "thebibliography", "lstlisting", "knitrout", "kframe",
             "picture", "tikzpicture"}
MATH_ENVS = {"equation", "equation*", "align", "align*", "eqnarray", "eqnarray*", "gather",
             "gather*", "multline", "multline*", "displaymath", "math", "flalign", "flalign*",
             "alignat", "alignat*"}
NUMBERED = {"equation", "align", "eqnarray", "gather", "multline", "flalign", "alignat"}
SUPERS = str.maketrans("0123456789+-()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿ")


def group_end(s, i):
    """s[i] == '{': the index just past its matching '}'."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(s)


def skip_ws(s, i):
    while i < len(s) and s[i] in " \t\n":
        i += 1
    return i


def read_arg(s, i):
    """Read one mandatory argument at s[i:] (a group, a command or one character)."""
    j = skip_ws(s, i)
    if j >= len(s):
        return "", j
    if s[j] == "{":
        k = group_end(s, j)
        return s[j + 1:k - 1], k
    if s[j] == "\\":
        m = re.match(r"\\([A-Za-z]+|.)", s[j:])
        return m.group(0), j + len(m.group(0))
    return s[j], j + 1


def read_opt(s, i):
    """Read an optional [argument] at s[i:] if there is one: (text or None, new index)."""
    j = skip_ws(s, i)
    if j < len(s) and s[j] == "[":
        depth, k = 0, j
        while k < len(s):
            if s[k] == "{":
                k = group_end(s, k)
                continue
            if s[k] == "[":
                depth += 1
            elif s[k] == "]":
                depth -= 1
                if depth == 0:
                    return s[j + 1:k], k + 1
            k += 1
    return None, i


def blank_sexpr(s):
    """\\Sexpr{R code}: what R computes is not known here; the code may hold a % or $."""
    out, pos = [], 0
    for m in re.finditer(r"\\Sexpr\s*\{", s):
        if m.start() < pos:
            continue
        out.append(s[pos:m.start()] + "\\Sexpr{}")
        pos = group_end(s, m.end() - 1)
    return "".join(out) + s[pos:]


def strip_comments(s):
    out = []
    for line in s.split("\n"):
        m = re.search(r"(?<!\\)%", line)
        if m:
            if not line[:m.start()].strip():
                continue  # a comment line vanishes whole
            line = line[:m.start()]
        out.append(line)
    return "\n".join(out)


def drop_envs(s):
    for env in DROP_ENVS:
        e = re.escape(env)
        s = re.sub(r"\\begin\{" + e + r"\}.*?\\end\{" + e + r"\}", "\n\n", s, flags=re.S)
    return s


class Converter:
    def __init__(self, macros, labels):
        self.macros = macros  # name -> (nargs, body)
        self.labels = labels
        self.code = False

    def cite(self, s, i):
        _, i = read_opt(s, i)
        _, i = read_opt(s, i)
        keys, i = read_arg(s, i)
        keys = [k.strip() for k in keys.split(",") if k.strip()]
        return "[" + "; ".join(keys) + "]", i

    def conv(self, s, math=False):
        out, i = [], 0
        while i < len(s):
            c = s[i]
            if c == "\\":
                m = re.match(r"\\([A-Za-z]+\*?|.)", s[i:])
                if not m:
                    i += 1
                    continue
                name = m.group(1)
                i += len(m.group(0))
                r, i = self.command(name, s, i, math)
                out.append(r)
            elif c == "{":
                k = group_end(s, i)
                out.append(self.conv(s[i + 1:k - 1], math))
                i = k
            elif c == "}":
                i += 1
            elif c == "$" and self.code:
                out.append(c)
                i += 1
            elif c == "$":
                if s.startswith("$$", i):
                    k = s.find("$$", i + 2)
                    k = len(s) if k < 0 else k
                    out.append(" " + self.conv(s[i + 2:k], True) + " ")
                    i = k + 2
                else:
                    k = i + 1
                    while k < len(s) and not (s[k] == "$" and s[k - 1] != "\\"):
                        k += 1
                    out.append(self.conv(s[i + 1:k], True))
                    i = k + 1
            elif c == "~":
                out.append("~" if self.code else " ")
                i += 1
            elif math and c in "_^":
                arg, i = read_arg(s, i + 1)
                t = self.conv(arg, True).strip()
                if c == "^" and t == "ᵀ":
                    out.append("ᵀ")
                elif c == "^" and t == "′":
                    out.append("′")
                elif c == "^" and len(t) == 1 and t in "0123456789n+-":
                    out.append(t.translate(SUPERS))
                elif len(t) <= 1 or re.fullmatch(r"[\w.,′]+", t):
                    out.append(c + t)
                else:
                    out.append(c + "(" + t + ")")
            elif math and c == "&":
                out.append(" ")
                i += 1
            else:
                out.append(c)
                i += 1
        return "".join(out)

    def command(self, name, s, i, math):
        if name == "\\":
            _, i = read_opt(s, i)
            return ("; " if math else " "), i
        if name in ("[", "("):
            close = "\\]" if name == "[" else "\\)"
            k = s.find(close, i)
            k = len(s) if k < 0 else k
            return " " + self.conv(s[i:k], True) + " ", k + 2
        if name in (">",):
            return " ", i
        if name in ACCENTS and not (name in "=." and math):
            arg, i = read_arg(s, i)
            base = self.conv(arg, math)
            if not base:
                return "", i
            return unicodedata.normalize("NFC", base[0] + ACCENTS[name] + base[1:]), i
        if name in self.macros:
            n, body = self.macros[name]
            for k in range(1, n + 1):
                arg, i = read_arg(s, i)
                body = body.replace("#%d" % k, arg)
            return self.conv(body, math), i
        bare = name.rstrip("*")
        if bare in ("cite", "citet", "citep", "citealp", "citealt", "citeauthor", "citeyear",
                    "citeyearpar", "citetext"):
            return self.cite(s, i)
        if bare in ("ref", "eqref", "autoref"):
            key, i = read_arg(s, i)
            n = self.labels.get(key.strip(), "??")  # as LaTeX prints a missing label
            return ("(%s)" % n if bare == "eqref" else n), i
        if bare == "Sexpr":
            _, i = read_arg(s, i)
            return "[…]", i
        if bare == "verb":
            d = s[i]
            k = s.index(d, i + 1)
            return s[i + 1:k], k + 1
        if bare in ("href",):
            _, i = read_arg(s, i)
            t, i = read_arg(s, i)
            return self.conv(t, math), i
        if bare == "doi":
            t, i = read_arg(s, i)
            return "doi:" + t, i
        if bare == "tag":
            t, i = read_arg(s, i)
            return " (" + self.conv(t, math).strip() + ")", i
        if bare in ("footnote",):
            t, i = read_arg(s, i)
            return " (" + self.conv(t, math).strip() + ")", i
        if bare in ("frac", "tfrac", "dfrac", "cfrac"):
            a, i = read_arg(s, i)
            b, i = read_arg(s, i)
            a, b = self.conv(a, True).strip(), self.conv(b, True).strip()
            if not re.fullmatch(r"[\w.′]+", a):
                a = "(" + a + ")"
            if not re.fullmatch(r"[\w.′]+", b):
                b = "(" + b + ")"
            return a + "/" + b, i
        if bare == "binom":
            a, i = read_arg(s, i)
            b, i = read_arg(s, i)
            return "C(%s, %s)" % (self.conv(a, True), self.conv(b, True)), i
        if bare == "sqrt":
            _, i = read_opt(s, i)
            a, i = read_arg(s, i)
            return "√(" + self.conv(a, True) + ")", i
        if bare == "stackrel" or bare == "overset" or bare == "underset":
            _, i = read_arg(s, i)
            b, i = read_arg(s, i)
            return self.conv(b, math), i
        if bare in ("subfloat", "subcaptionbox", "caption", "subcaption"):
            _, i = read_opt(s, i)
            _, i = read_arg(s, i)
            if bare in ("subcaptionbox",):
                _, i = read_arg(s, i)
            return "", i
        if bare == "item":
            lab, i = read_opt(s, i)
            if lab is not None:
                return "\n\n" + self.conv(lab, math).strip() + " ", i
            return "\n\n– ", i
        if bare in ("begin", "end"):
            env, i = read_arg(s, i)
            if bare == "begin" and env in MATH_ENVS:
                close = "\\end{" + env + "}"
                k = s.find(close, i)
                k = len(s) if k < 0 else k
                return " " + self.conv(s[i:k], True).strip(" ;") + " ", k + len(close)
            if bare == "begin" and env in ("array", "tabular", "pmatrix", "bmatrix", "matrix",
                                           "cases", "split", "aligned", "subequations",
                                           "minipage", "alignat", "alignat*"):
                if env in ("array", "tabular", "minipage", "alignat", "alignat*"):
                    _, i = read_opt(s, i)
                    _, i = read_arg(s, i)
                return ("(" if env in ("pmatrix", "bmatrix") else " "), i
            if bare == "end" and env in ("pmatrix", "bmatrix"):
                return ")", i
            if env in ("itemize", "enumerate", "description", "abstract", "center",
                       "quote", "quotation", "flushleft", "flushright"):
                return "\n\n", i
            return " ", i
        if bare in DROP:
            if bare in ("pagebreak", "nopagebreak", "linebreak", "newpage", "clearpage"):
                _, i = read_opt(s, i)
            for _ in range(DROP[bare]):
                _, i = read_opt(s, i)
                _, i = read_arg(s, i)
            return "", i
        if bare == "code":
            a, i = read_arg(s, i)
            self.code, old = True, self.code
            r = self.conv(a, math)
            self.code = old
            return r, i
        if bare in MATH_ACCENTS:
            a, i = read_arg(s, i)
            t = self.conv(a, math).strip()
            if math and len(t) == 1:
                return unicodedata.normalize("NFC", t + MATH_ACCENTS[bare]), i
            return t, i
        if bare in KEEP:
            _, i = read_opt(s, i)
            a, i = read_arg(s, i)
            return self.conv(a, math), i
        if bare in SYMBOLS:
            r = SYMBOLS[bare]
            if math and re.fullmatch(r"[a-z]{2,}", r) and r not in ("log", "exp"):
                return r + " ", i
            return r, i
        if bare in ("DeclareMathOperator", "newcommand", "renewcommand", "providecommand"):
            return "", len(s)  # should not occur in the body
        # Unknown: a word-like command stands for its name (custom operators such as \Var).
        return bare, i


def collect_macros(pre):
    macros = {}
    define = r"\\(?:re|provide)?newcommand\*?\s*\{?\\([A-Za-z]+)\}?\s*(?:\[(\d)\])?\s*\{"
    for m in re.finditer(define, pre):
        start = m.end() - 1
        body = pre[start + 1:group_end(pre, start) - 1]
        macros[m.group(1)] = (int(m.group(2) or 0), body)
    for m in re.finditer(r"\\DeclareMathOperator\*?\s*\{\\([A-Za-z]+)\}\s*\{([^{}]*)\}", pre):
        macros[m.group(1)] = (0, r"\operatorname{" + m.group(2) + "}")
    # Macros that only typeset a package, a language or a font: their plain text.
    for name in list(macros):
        n, body = macros[name]
        if name in ("R", "rR"):
            macros[name] = (0, "R")
        if re.search(r"\\(hbox|index|fontseries|selectfont|DefineVerbatim|marginpar)", body):
            macros[name] = (n, "#1" if n else "")
    return macros


def expand_sectioning(body, macros):
    """Expand, in the source, the user macros that make headings (\\example{X})."""
    for name, (n, mb) in macros.items():
        if not re.search(r"\\(sub)*section", mb):
            continue
        pat = re.compile(r"\\" + name + r"(?![A-Za-z])")
        out, pos = [], 0
        for m in pat.finditer(body):
            if m.start() < pos:
                continue
            out.append(body[pos:m.start()])
            i, text = m.end(), mb
            for k in range(1, n + 1):
                arg, i = read_arg(body, i)
                text = text.replace("#%d" % k, arg)
            out.append(text)
            pos = i
        body = "".join(out) + body[pos:]
    return body


LEVELS = ("chapter", "section", "subsection", "subsubsection")


def sec_number(sec, lvl, top, appendix):
    """The number LaTeX prints for a heading: "2.3" (or "A.1" in an appendix); a document
    without chapters starts at the section."""
    first = chr(ord("A") + sec[top] - 1) if appendix else str(sec[top])
    return ".".join([first] + [str(x) for x in sec[top + 1:lvl + 1]])


def number_labels(body):
    """Walk the body in order and give every \\label the number LaTeX would print."""
    labels = {}
    sec = [0, 0, 0, 0]
    top = 0 if re.search(r"\\chapter\b", body) else 1
    appendix = False
    fig = tab = eq = 0
    per = ""  # a report numbers figures, tables and equations within chapters: "2.3"
    env = None
    line_num, line_labels, line_start = True, [], 0
    context = outer = ""
    tok = re.compile(r"\\(chapter|section|subsection|subsubsection)(\*?)|\\begin\{([a-zA-Z*]+)\}|"
                     r"\\end\{([a-zA-Z*]+)\}|\\\\|\\label\{([^}]*)\}|\\appendix|"
                     r"\\nonumber|\\notag")
    for m in tok.finditer(body):
        t = m.group(0)
        if m.group(1):
            if m.group(2):
                continue
            lvl = LEVELS.index(m.group(1))
            sec[lvl] += 1
            for k in range(lvl + 1, 4):
                sec[k] = 0
            context = outer = sec_number(sec, lvl, top, appendix)
            if lvl == 0:
                fig = tab = eq = 0
                per = context + "."
        elif t == "\\appendix" or m.group(3) == "appendix":
            appendix, sec = True, [0, 0, 0, 0]
        elif m.group(3):
            e = m.group(3)
            if e in ("figure", "figure*"):
                fig += 1
                env, context = "figure", per + str(fig)
            elif e in ("table", "table*"):
                tab += 1
                env, context = "table", per + str(tab)
            elif e in NUMBERED:
                env, line_num, line_labels, line_start = e, True, [], m.end()
        elif m.group(4):
            e = m.group(4)
            if e in NUMBERED and env == e:
                if line_num and body[line_start:m.start()].strip():
                    eq += 1
                    for k in line_labels:
                        labels[k] = per + str(eq)
                env = None
            elif e in ("figure", "figure*", "table", "table*"):
                env, context = None, outer
        elif t == "\\\\":
            if env in NUMBERED and env != "equation":
                if line_num:
                    eq += 1
                    for k in line_labels:
                        labels[k] = per + str(eq)
                line_num, line_labels, line_start = True, [], m.end()
        elif t in ("\\nonumber", "\\notag"):
            line_num = False
        elif m.group(5) is not None:
            if env in NUMBERED:
                line_labels.append(m.group(5))
            else:
                labels[m.group(5)] = context
    return labels


def balanced_after(s, cmd):
    m = re.search(r"\\" + cmd + r"\s*\{", s)
    if not m:
        return None
    return s[m.end():group_end(s, m.end() - 1) - 1]


def chunk_floats(m):
    """A code chunk goes, but the figures and tables it makes keep their numbers."""
    head, code = m.group(1), m.group(2)
    out = []
    if "fig.cap" in head:
        name = head.split(",")[0].strip()
        labels = "".join("\\label{fig:%s%s}" % (name, sfx) for sfx in ("", "-1", "-2", "-3"))
        out.append("\\begin{figure}" + labels + "\\end{figure}")
    labs = re.findall(r"label\s*=\s*[\"'](tab:[^\"']+)", code)
    if re.search(r"xtable|toLatex", code):
        labs = re.findall(r"label\s*=\s*[\"']([^\"']+)", code)
    for lab in labs:
        out.append("\\begin{table}\\label{%s}\\end{table}" % lab)
    return "\n" + "".join(out) + "\n"


def convert(src):
    """One Sweave/knitr vignette: a list of paragraphs (title first)."""
    src = re.sub(r"(?ms)^<<([^\n]*)>>=(.*?)^@[ \t]*$", chunk_floats, src)   # code chunks
    src = blank_sexpr(src)
    src = strip_comments(src)
    src = re.sub(r"\\iffalse\b.*?\\fi\b", "", src, flags=re.S)
    src = re.sub(r"(from |on )?page\s*~?\\pageref\{[^}]*\}", "above", src)
    pre, _, body = src.partition("\\begin{document}")
    body = body.split("\\end{document}")[0]
    macros = collect_macros(pre)
    body = expand_sectioning(body, macros)
    labels = number_labels(body)
    body = drop_envs(body)
    cv = Converter(macros, labels)
    paras = []

    title = balanced_after(pre, "title") or balanced_after(body, "title") or ""
    note = balanced_after(title, "fbox")
    if note is not None:
        m = re.search(r"\\fbox\s*\{", title)
        title = title[:m.start()] + title[group_end(title, m.end() - 1):]
        title = re.sub(r"^\s*\\\\(\[[^\]]*\])?", "", title.strip())
    title = " ".join(cv.conv(title).replace(";", " ").split())
    paras.append(title)
    author = balanced_after(pre, "author") or balanced_after(body, "author") or ""
    names = []
    for part in re.split(r"\\And\b|\\and\b|\\hspace\{[^}]*\}", author):
        first = re.split(r"\\\\", part)[0]
        first = re.sub(r"\$\^\{?\([^$]*\)\}?\$", "", first)
        names.append(" ".join(cv.conv(first).split()).strip(" ,"))
    names = [n for n in names if n]
    if names:
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        paras.append(re.sub(r" ([,.])", r"\1", "By " + who + "."))
    if note is not None:
        paras.append(clean(cv.conv(note)))
    abstract = balanced_after(pre, "Abstract")
    if abstract is None:
        m = re.search(r"\\begin\{abstract\}(.*?)\\end\{abstract\}", body, re.S)
        if m:
            abstract = m.group(1)
            body = body[:m.start()] + body[m.end():]
    if abstract:
        paras.append("Abstract")
        abstract = re.sub(r"\\noindent\s*\{\\bf Keywords:\}.*", "", abstract, flags=re.S)
        paras += split_paras(cv.conv(abstract))
    keywords = balanced_after(pre, "Keywords")
    if keywords:
        paras.append("Keywords: " + " ".join(cv.conv(keywords).split()) + ".")

    # Sections become headings of their own, numbered as LaTeX numbers them.
    sec = [0, 0, 0, 0]
    top = 0 if re.search(r"\\chapter\b", body) else 1
    appendix = False
    pieces = []
    pos = 0
    hd = re.compile(r"\\(chapter|section|subsection|subsubsection|paragraph)(\*?)\s*(\[[^\]]*\])?\s*\{|"
                    r"\\appendix|\\begin\{appendix\}")
    skip = False  # inside an appendix of R code, software versions or a reference card
    for m in hd.finditer(body):
        if not skip:
            pieces.append(("text", body[pos:m.start()]))
        if m.group(0) in ("\\appendix", "\\begin{appendix}"):
            appendix, sec = True, [0, 0, 0, 0]
            pos = m.end()
            continue
        end = group_end(body, m.end() - 1)
        head = body[m.end():end - 1]
        if m.group(3) and "\\cite" in head:  # a citation as heading: its short form
            head = m.group(3)[1:-1]
        head = " ".join(cv.conv(head).split())
        kind = m.group(1)
        num = ""
        if kind != "paragraph" and not m.group(2):
            lvl = LEVELS.index(kind)
            sec[lvl] += 1
            for k in range(lvl + 1, 4):
                sec[k] = 0
            num = sec_number(sec, lvl, top, appendix) + ". "
        if kind == "section":
            skip = head in ("R code", "Computational details", "Reference card")
        if skip:
            pass
        elif kind == "paragraph":
            pieces.append(("text", "\n\n" + head + ". "))
        else:
            pieces.append(("head", num + head))
        pos = end
    if not skip:
        pieces.append(("text", body[pos:]))
    text = []
    for kind, t in pieces:
        if kind == "head":
            text.append("\n\n\x00" + t + "\n\n")
        else:
            text.append(cv.conv(t))
    for p in split_paras("".join(text)):
        paras.append(p.lstrip("\x00"))
    return paras


def clean(p):
    p = " ".join(p.split())
    p = p.replace("---", "—").replace("--", "–").replace("``", "“").replace("''", "”")
    p = re.sub(r" ([,;:)]|\.(?!\d))", r"\1", p)
    p = re.sub(r"`([^`'\n]*)'", "‘\\1’", p)
    return re.sub(r"\( ", "(", p)


def split_paras(t):
    out = []
    for p in re.split(r"\n[ \t]*\n", t):
        p = clean(p)
        if p and re.search(r"\w", p):
            out.append(p)
    return out


def main():
    """latex_text.py NAME ROOT DST UNRESOLVED MIN_PARAGRAPHS PAPER...: the papers (paths under
    ROOT) converted in order into DST; exit with one line when LaTeX is left, when the "??" of
    unresolved references are not UNRESOLVED in number (a label the source lacks), or when
    fewer than MIN_PARAGRAPHS come out."""
    name, root, dst = sys.argv[1], sys.argv[2], sys.argv[3]
    expect_unresolved, min_paragraphs = int(sys.argv[4]), int(sys.argv[5])
    out = []
    for rel in sys.argv[6:]:
        out += convert(open(root + "/" + rel, encoding="utf-8").read())
    text = "\n\n".join(out) + "\n"
    # The conversion must leave no LaTeX behind and resolve every cross reference.
    left = re.findall(r"\\[A-Za-z]+", text)
    unresolved = re.findall(r"\?\?", text)
    if left or len(unresolved) != expect_unresolved or len(out) < min_paragraphs:
        sys.exit("%s: unexpected conversion (%d paragraphs, LaTeX left: %s, unresolved: %d)"
                 % (name, len(out), sorted(set(left))[:10], len(unresolved)))
    with open(dst, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
