"""An equation in words: what a screen reader says for the TeX the app draws (ui/drawing/equation.py
puts the words next to the equation; docs/accessibility.md, "Equations"). No Streamlit here.

KaTeX hands Chromium MathML, and Orca 43 read it one symbol at a time ("𝑄 | 𝐾 | ⊤ | 32" for
QK⊤/√32: the fraction bar and the root were lost). `spoken` reads the TeX subset the app's
equations use, as one reads an equation aloud: "A equals softmax of (the fraction Q K transpose
over the square root of 32, end fraction, plus M) in the real 50 by 50 matrices". A superscript
is a power only on a plain base (σ² "squared", 10⁻⁶ "to the power minus 6"); after a subscript
or when it is a name it is an index ("x sub p superscript 1"). A command it does not know is
said by its name, without the backslash.
"""

from __future__ import annotations

import re

# a command (\frac, \, \\), a number (1{,}024 with TeX's thousands separator, 0.25), TeX's
# "{,}" and "{:}" (a comma and a colon without math spacing), a run of spaces, any one character
TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\d+(?:\{,\}\d{3})*(?:\.\d+)?|\{[,:]\}|\s+|.", re.S)

GREEK = {g: g for g in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
                        "iota", "kappa", "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau",
                        "upsilon", "phi", "chi", "psi", "omega")}
GREEK |= {"var" + g: g for g in ("epsilon", "theta", "phi", "pi", "rho", "sigma")}
GREEK |= {g.capitalize(): "capital " + g for g in ("gamma", "delta", "theta", "lambda", "xi",
                                                   "pi", "sigma", "phi", "psi", "omega")}
SYMBOLS = {  # a command said as a word (or a pause)
    "cdot": "times", "odot": "element-wise times", "otimes": "tensor times", "in": "in",
    "to": "to", "rightarrow": "to", "mapsto": "maps to", "mid": "given", "infty": "infinity",
    "dots": "and so on", "ldots": "and so on", "cdots": "and so on", "downarrow": "then",
    "top": "transpose", "pm": "plus or minus", "le": "less than or equal to",
    "leq": "less than or equal to", "ge": "greater than or equal to",
    "geq": "greater than or equal to", "ne": "not equal to", "neq": "not equal to",
    "approx": "approximately", "propto": "proportional to", "prime": "prime",
    "partial": "partial", "nabla": "nabla", "quad": ",", "qquad": ",", ",": "", ";": "",
    ":": "", "!": "", " ": "", "{": "the set of", "}": ",", "%": "percent", "&": "and",
    "_": "underscore", "#": "number", "$": "dollar", "|": "double bar", "\\": ",",
}
CHARS = {"=": "equals", "+": "plus", "-": "minus", "<": "less than", ">": "greater than",
         "'": "prime", "/": "over", "*": "times", "~": "", "{,}": ",", "^": "", "_": "",
         "{": "", "}": ""}
TEXT_CHARS = {"{": "", "}": "", "{:}": ":", "^": "", "_": ""}  # inside \text{…}
FUNCTIONS = {"cos", "sin", "tan", "exp", "log", "ln", "det", "arg", "tanh", "sinh", "cosh"}
BIG = {"sum": "the sum", "prod": "the product", "max": "the max", "min": "the min",
       "int": "the integral", "lim": "the limit", "argmax": "the arg max",
       "argmin": "the arg min", "sup": "the supremum", "inf": "the infimum"}
ACCENTS = {"hat": "hat", "widehat": "hat", "tilde": "tilde", "widetilde": "tilde", "bar": "bar",
           "overline": "bar", "vec": "vector", "dot": "dot", "ddot": "double dot"}
WORDS = {"mathrm", "operatorname", "mathit", "mathbf", "mathsf", "boldsymbol", "bm", "mathcal",
         "mathscr", "mathfrak", "mathbb"}  # its argument said as a word: \mathrm{softmax}
TEXTS = {"text", "textrm", "textit", "textbf", "textsf", "mbox"}  # its argument as it is written
SIZES = {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr",
         "biggl", "biggr", "middle", "displaystyle", "textstyle", "limits", "nolimits"}
PAIRS = {"lVert": ("rVert", "the norm of"), "lfloor": ("rfloor", "the floor of"),
         "lceil": ("rceil", "the ceiling of"), "lvert": ("rvert", "the absolute value of"),
         "langle": ("rangle", "the angle brackets of")}
SPACING = {"\\,", "\\;", "\\:", "\\!", "\\ ", "\\quad", "\\qquad"}
NUMERIC = re.compile(r"-?[\d.,]+")


class _Reader:
    """The tokens of one equation and where the reading is; each method reads one piece and
    returns its words."""

    def __init__(self, tex: str) -> None:
        self.toks = TOKEN.findall(tex)
        self.pos = 0
        self.env: list[str] = []  # the environments the reading is inside (cases, gathered)

    def peek(self, skip: set[str] | frozenset = frozenset()) -> str | None:
        """The next token that is not a space (nor one of `skip`), None at the end."""
        i = self.pos
        while i < len(self.toks) and (self.toks[i].isspace() or self.toks[i] in skip):
            i += 1
        return self.toks[i] if i < len(self.toks) else None

    def take(self) -> str:
        """The next token that is not a space, taken."""
        while self.toks[self.pos].isspace():
            self.pos += 1
        self.pos += 1
        return self.toks[self.pos - 1]

    def seq(self, stop: frozenset = frozenset()) -> list[str]:
        """Atoms until `}`, a token of `stop` or the end (not taken)."""
        words: list[str] = []
        while (t := self.peek()) is not None and t != "}" and t not in stop:
            words += self.atom(first=not words)
        return words

    def group(self) -> tuple[str, str]:
        """One argument, `{…}` or a single token: (its words, its TeX)."""
        start = self.pos
        if self.peek() == "{":
            self.take()
            words = self.seq()
            if self.peek() == "}":
                self.take()
        elif (t := self.peek()) is not None and t[0].isdigit() and len(t) > 1:
            self.take()  # \tfrac12: an argument is one digit, the rest stays for the next
            self.pos -= 1
            self.toks[self.pos:self.pos + 1] = [t[0], t[1:]]
            self.pos += 1
            words = [t[0]]
        else:
            words = self.atom(first=True, scripts=False) if t is not None else []
        raw = "".join(self.toks[start:self.pos]).strip()
        return " ".join(words), raw.removeprefix("{").removesuffix("}").strip()

    def text(self) -> str:
        """A `{…}` of words as they are written (\\text{…}, \\mathrm{…}): spaces kept."""
        if self.peek() != "{":
            return self.group()[0]
        self.take()
        out, depth = "", 1
        while self.pos < len(self.toks):
            t = self.toks[self.pos]
            depth += (t == "{") - (t == "}")
            if depth == 0:
                self.pos += 1
                break
            self.pos += 1
            out += f" {_word(t[1:])} " if t.startswith("\\") else \
                TEXT_CHARS.get(t, t.replace("{,}", ","))
        return out.strip()

    def atom(self, first: bool = False, scripts: bool = True) -> list[str]:
        """One piece of the equation and its sub- and superscripts."""
        t = self.take()
        if t in ("&", "\\\\"):
            return [self._cell(t)]
        kind, word = (self._named(t[1:], first) if t.startswith("\\") and len(t) > 2 else
                      ("plain", self._symbol(t)))
        if not scripts or kind == "none":
            return [word] if word else []
        words = self._scripts(word or "", kind)
        return words + (["of"] if kind == "function" and self._opens() else [])

    def _symbol(self, t: str) -> str:
        """A character, a `{…}` in the flow, |…|, or a command without letters (\\, \\{)."""
        if t == "{":
            word = " ".join(self.seq())
            if self.peek() == "}":
                self.take()
            return word
        if t == "|":
            return self._bars()
        if t == "{:}":
            return "onward" if self.peek() == "]" else "to"
        return _word(t[1:]) if t.startswith("\\") else CHARS.get(t, t.replace("{,}", ","))

    def _cell(self, t: str) -> str:
        """`&` (a column) and `\\\\` (a row) of an environment: in cases "when" and "or"."""
        cases = bool(self.env) and self.env[-1] == "cases"
        if t == "&":
            return ", when" if cases else ""
        return "; or" if cases else ","

    def _bars(self) -> str:
        """|M| (a set: its size) or |a_j| (an absolute value)."""
        inner = " ".join(self.seq(frozenset({"|"})))
        if self.peek() == "|":
            self.take()
        what = "the size of" if re.fullmatch(r"[A-Z]", inner) else "the absolute value of"
        return f"{what} {inner}" + ("," if " " in inner else "")

    def _named(self, name: str, first: bool) -> tuple[str, str | None]:
        """A command with letters: (the kind of base it is, its words)."""
        if name in ("frac", "tfrac", "dfrac", "cfrac"):
            top, bottom = self.group()[0], self.group()[0]
            return "plain", f"the fraction {top} over {bottom}, end fraction,"
        if name == "sqrt":
            inner = self.group()[0]
            return "plain", f"the square root of {inner}" + ("," if " " in inner else "")
        if name in PAIRS:
            return "plain", self._pair(*PAIRS[name])
        if name in ACCENTS:
            return "plain", f"{self.group()[0]} {ACCENTS[name]}"
        if name in ("begin", "end"):
            return "none", self._environment(name)
        if name == "xrightarrow":
            if self.peek() == "[":  # a label under the arrow: not said
                self.take()
                self.seq(frozenset({"]"}))
                if self.peek() == "]":
                    self.take()
            return "none", f", then {self.group()[0]}, to"
        return self._word_command(name, first)

    def _word_command(self, name: str, first: bool) -> tuple[str, str | None]:
        """A command said as a word: a font's argument, a big operator, a function, a symbol."""
        if name == "mathbb":
            letter = self.text()
            return ("real", "R") if letter == "R" else ("plain", letter)
        if name in WORDS or name in TEXTS:
            return ("function" if name in WORDS else "plain"), self.text()
        if name in SIZES:
            if self.peek() == ".":
                self.take()
            return "none", None
        if name in BIG:
            return "big", BIG[name]
        if name in FUNCTIONS:
            return "function", name
        if name == "times":
            return "none", "times" if first else "by"
        return "plain", _word(name)

    def _pair(self, close: str, what: str) -> str:
        """\\lVert x \\rVert and the like: "the norm of x"."""
        inner = " ".join(self.seq(frozenset({"\\" + close})))
        if self.peek() == "\\" + close:
            self.take()
        return f"{what} {inner}" + ("," if " " in inner else "")

    def _opens(self) -> bool:
        """Whether a bracket follows (past spacing and size commands): a function's argument."""
        return self.peek(SPACING | {"\\" + s for s in SIZES}) == "("

    def _environment(self, name: str) -> str | None:
        """\\begin{cases}…\\end{cases}: read here, up to its \\end; other \\end's name skipped."""
        env = self.text()
        if name == "end":
            return None
        self.env.append(env)
        words = " ".join(self.seq(frozenset({"\\end"})))
        self.env.pop()
        if self.peek() == "\\end":
            self.take()
            self.text()
        return f"either {words}" if env == "cases" else words

    def _scripts(self, base: str, kind: str) -> list[str]:
        """The base with its `_x` and `^x` (either order)."""
        sub = sup = raw = None
        while self.peek() in ("^", "_"):
            if self.take() == "_":
                sub = self.group()[0]
            else:
                sup, raw = self.group()
        if kind == "real":
            return [_space(sup)]
        if kind == "big":
            limits = (f"from {sub} to {sup}" if sub and sup else f"over {sub}" if sub else "")
            return [base, limits, "of"]
        words = [base] + ([f"sub {sub}"] if sub else [])
        if sup is not None:
            words.append(_power(sup, raw or "", sub is not None))
        return [w for w in words if w]


def _word(name: str) -> str:
    """A command said as a word: a Greek letter's name, a symbol's word, or its own name."""
    if name in SYMBOLS:
        return SYMBOLS[name]
    return GREEK.get(name) or re.sub(r"[\\{}^_]", " ", name)


def _power(sup: str, raw: str, indexed: bool) -> str:
    """A superscript's words: transpose, squared, a power, or an index."""
    if raw in ("\\top", "T") and not indexed:
        return "transpose"
    if raw in ("'", "\\prime"):
        return "prime"
    if indexed or not NUMERIC.fullmatch(raw):
        return f"superscript {sup}"
    return {"2": "squared", "3": "cubed"}.get(raw, f"to the power {sup}")


def _space(dims: str | None) -> str:
    """ℝ with its superscript: the real numbers, vectors, matrices or arrays of that size."""
    if not dims:
        return "the real numbers"
    n = dims.count(" by ") + 1
    return (f"the real vectors of length {dims}" if n == 1 else
            f"the real {dims} matrices" if n == 2 else f"the real {dims} arrays")


def _tidy(words: str) -> str:
    """One space between words, none before a comma or a closing bracket, one pause at most."""
    text = re.sub(r"\s+", " ", words)
    text = re.sub(r"\s+([,;:)\]'])", r"\1", text)
    text = re.sub(r"([(\[])\s+", r"\1", text)
    text = re.sub(r"[,;](?:\s*[,;])+", lambda m: ";" if ";" in m[0] else ",", text)
    text = re.sub(r"([(\[])[,;]\s*", r"\1", text)
    text = re.sub(r"[,;]([)\]])", r"\1", text)
    return text.strip(" ,;")


def spoken(tex: str) -> str:
    """The equation `tex` as words a screen reader can say (no backslash, brace, caret or
    underscore left); never fails on TeX it does not know."""
    reader = _Reader(tex)
    words: list[str] = []
    while reader.peek() is not None:
        words += reader.seq()
        if reader.peek() is not None:
            reader.take()  # a closing brace with no opening one
    return _tidy(" ".join(words))
