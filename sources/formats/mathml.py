"""Presentation MathML as linear text, and when a formula's ``alttext`` can stand in for it.

One reading shared by the EPUB reader (:mod:`sources.formats.epub`) and the PMC/JATS renderer
(:mod:`sources.formats.pubmed_jats`), so both write a formula the same way:

* ``msub``/``msup``/``msubsup`` -> ``x_2``, ``x^3``, ``x_2^3`` (a script of more than one token is
  bracketed: ``x_(i+1)``); ``munder``/``mover``/``munderover`` likewise (``∑_(i = 1)^n``), except
  accents (``mover`` with a bar, hat, tilde, dot or arrow: ``bar(x)``);
* ``mfrac`` -> ``(a)/(b)`` (a single character or a number is not bracketed: ``1/2``, ``(kt)/(h^2)``);
* ``msqrt`` -> ``sqrt(x)``, ``mroot`` -> ``root(x, n)``, ``mfenced`` -> its fences and separators;
* ``mtable`` -> rows joined by ``; ``, cells by `` & `` (an aligned relation, a cell that starts
  with ``=``, joins its row with a space: ``x^2 + y^2 = 1; −x + sqrt(3)y = 0``);
* relations and binary operators spaced (``4x_1 + 5x_2``), a leading sign not (``−7``);
* a TeX ``annotation`` inside ``semantics`` wins (it is the author's own source).

Publishers' ``alttext`` is often boilerplate (``alttext="Alternative text not available"`` on all
10,281 formulas of the IDPF EPUB 3 linear-algebra sample): :func:`useful_alttext` accepts it only
when it is not a known placeholder phrase and shares a symbol with the formula.
"""

from __future__ import annotations

import re
from typing import Any

#: MathML operators written with spaces around them in linear text (relations and binary operators).
SPACED_OPERATORS = frozenset("=<>+−-×·÷≤≥≠≈∼≡→←↔⇒⇔∈∉⊂⊆∪∩±∓∝")
#: Operators that are signs when nothing precedes them (``−7``, ``x = −y``): written without spaces there.
SIGNS = frozenset("+−-±∓")
#: Relations: a table cell starting with one continues the row's equation (an ``align`` environment).
RELATIONS = frozenset("=<>≤≥≠≈∼≡→←↔⇒⇔∈∉⊂⊆∝")
#: Invisible operators: function application reads as a space, invisible times/separator/plus as nothing.
INVISIBLE = {"\u2061": " ", "\u2062": "", "\u2063": "", "\u2064": ""}
#: Operators whose scripts are limits, followed by an operand (``∑_(i = 1)^n a_i``).
LARGE_OPERATORS = frozenset({"∑", "∏", "∐", "∫", "∬", "∭", "∮", "⋃", "⋂", "⋁", "⋀", "⨁", "⨂", "lim", "max", "min",
                             "sup", "inf", "liminf", "limsup", "det", "arg max", "arg min"})
#: ``mover`` accents written as a function of the base.
ACCENTS = {"¯": "bar", "‾": "bar", "_": "bar", "^": "hat", "ˆ": "hat", "~": "tilde", "˜": "tilde",
           "→": "vec", "⃗": "vec", "˙": "dot", "¨": "ddot", "\u0307": "dot", "\u0308": "ddot"}
#: Containers whose children are read in a row (operators spaced by position).
_ROWS = frozenset({"math", "mrow", "mstyle", "mpadded", "menclose", "merror", "mtd", "maction", "mlabeledtr"})
_SKIPPED = frozenset({"annotation", "annotation-xml", "mphantom", "none", "mprescripts", "maligngroup",
                      "malignmark"})
_WS = re.compile(r"\s+")
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")
_WORD = re.compile(r"^[\w.′']+$")
_CALL = re.compile(r"^\w+(?=\()")
_TEX_BODY = re.compile(r"\\begin\{document\}(.*?)\\end\{document\}", re.DOTALL)
_TEX_DELIMS = re.compile(r"^(?:\$\$(.*)\$\$|\$(.*)\$|\\\[(.*)\\\]|\\\((.*)\\\))$", re.DOTALL)
_CLOSERS = frozenset(")]}|⟩!′″")
_PAIRS = {"(": ")", "[": "]", "{": "}", "⟨": "⟩", "|": "|"}

#: ``alttext`` values that say nothing about the formula (compared lower-case, spaces collapsed).
PLACEHOLDER_PHRASES = frozenset({
    "alternative text not available", "alt text not available", "alttext not available", "no alternative text",
    "no alt text", "alternative text", "alt text", "alttext", "not available", "unavailable", "n/a", "na", "none",
    "math", "mathml", "equation", "formula", "inline equation", "display equation", "inline formula",
    "display formula", "math equation", "mathematical expression", "expression", "image", "missing alt text",
    "description not available", "no description", "todo", "null", "undefined",
})
_PLACEHOLDER_PATTERN = re.compile(r"\b(?:alt(?:ernative)?[ -]?text|description)\b.*\b(?:not available|unavailable|"
                                  r"missing|none)\b|^\W*$", re.I)


def local(tag: Any) -> str:
    """Tag name without namespace; '' for comments, PIs and entity references."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def tex_formula(raw: str) -> str:
    """The formula inside TeX source (PMC's ``\\documentclass`` wrapper and ``$``/``\\[`` delimiters removed)."""
    match = _TEX_BODY.search(raw)
    body = (match.group(1) if match else raw).strip()
    delims = _TEX_DELIMS.match(body)
    if delims:
        body = next(g for g in delims.groups() if g is not None).strip()
    return _WS.sub(" ", body)


def _closes_at_end(text: str) -> bool:
    """True when the bracket that opens ``text`` is the one that closes it (``(a)(b)`` is two groups)."""
    close = _PAIRS.get(text[:1])
    if close is None or not text.endswith(close) or len(text) < 2:
        return False
    depth = 0
    for position, char in enumerate(text):
        if char == text[0] and (close != char or depth == 0):
            depth += 1
        elif char == close:
            depth -= 1
            if depth == 0:
                return position == len(text) - 1
    return False


def _is_atom(text: str) -> bool:
    """One token: a word or number, a bracketed group, or a call such as ``sqrt(3)``."""
    if len(text) <= 1 or _WORD.match(text) or _closes_at_end(text):
        return True
    call = _CALL.match(text)
    return call is not None and _closes_at_end(text[call.end():])


def group(text: str) -> str:
    """Bracket a sub-expression that is more than one token (scripts: ``x_(i+1)``, ``e^(−x)``)."""
    text = text.strip()
    return text if _is_atom(text) else f"({text})"


def _fraction_part(text: str) -> str:
    """A numerator or denominator: bracketed unless a single character or a number (``1/2``, ``(kt)/(h^2)``)."""
    text = text.strip()
    return text if len(text) <= 1 or _NUMBER.match(text) or _closes_at_end(text) else f"({text})"


def _base(text: str) -> str:
    """The base of a script: bracketed only when it holds an operator or a space (``(a + b)^2``, ``x_1^2``)."""
    text = text.strip()
    return text if _is_atom(text) or not re.search(r"[\s+\-−=/,]", text) else f"({text})"


def _operator(node: Any) -> str:
    text = _WS.sub(" ", "".join(node.itertext())).strip()
    return INVISIBLE.get(text, text)


def _row(kids: list[Any]) -> str:
    """Children read in a row: a sign is spaced when it follows an operand (``a + b``), not when it leads (``−7``)."""
    out: list[str] = []
    after_operand = False
    for kid in kids:
        if local(kid.tag) != "mo":
            text = linear_text(kid)
            out.append(text)
            after_operand = after_operand or bool(text.strip())
            continue
        op = _operator(kid)
        out.append(f" {op} " if op in SPACED_OPERATORS and (after_operand or op not in SIGNS) else op)
        if op.isalpha() and len(op) > 1:  # a function name given as an operator: "sin x", "lim x"
            out.append(" ")
        if op in (",", ";"):
            out.append(" ")
        after_operand = op in _CLOSERS or op.isalnum()
    return "".join(out)


def _fenced(node: Any, parts: list[str]) -> str:
    open_, close = node.get("open", "("), node.get("close", ")")
    separators = "".join((node.get("separators") if node.get("separators") is not None else ",").split())
    out = ""
    for index, part in enumerate(parts):
        if index and separators:
            out += separators[min(index - 1, len(separators) - 1)] + " "
        out += part.strip()
    return open_ + out + close


def _table_row(parts: list[str]) -> str:
    """Cells of a table row: `` & `` between them, a space before a cell that continues an equation."""
    row = ""
    for cell in (p.strip() for p in parts):
        if not cell:
            continue
        if row and cell[0] not in RELATIONS:
            row += " & "
        elif row:
            row += " "
        row += cell
    return row


def _scripts(name: str, parts: list[str], node: Any) -> str | None:
    """``msub``, ``msup``, ``msubsup`` and the under/over forms; None when the arity is wrong."""
    if name == "mover" and len(parts) == 2 and (node.get("accent") == "true" or parts[1].strip() in ACCENTS):
        accent = ACCENTS.get(parts[1].strip())
        if accent:
            return f"{accent}({parts[0].strip()})"
    # a big operator (sum, integral, limit) is followed by its operand: keep a space after its scripts
    after = " " if parts and (parts[0].strip() in LARGE_OPERATORS) else ""
    if name in ("msub", "munder") and len(parts) == 2:
        return f"{_base(parts[0])}_{group(parts[1])}{after}"
    if name in ("msup", "mover") and len(parts) == 2:
        return f"{_base(parts[0])}^{group(parts[1])}{after}"
    if name in ("msubsup", "munderover") and len(parts) == 3:
        return f"{_base(parts[0])}_{group(parts[1])}^{group(parts[2])}{after}"
    return None


def _multiscripts(kids: list[Any]) -> str:
    """``mmultiscripts``: base, then (sub, sup) pairs; pairs after ``mprescripts`` go before the base."""
    names = [local(k.tag) for k in kids]
    split = names.index("mprescripts") if "mprescripts" in names else len(kids)
    base = _base(linear_text(kids[0])) if kids else ""

    def pairs(items: list[Any]) -> str:
        out = ""
        for sub, sup in zip(items[0::2], items[1::2], strict=False):
            if local(sub.tag) != "none" and linear_text(sub).strip():
                out += "_" + group(linear_text(sub))
            if local(sup.tag) != "none" and linear_text(sup).strip():
                out += "^" + group(linear_text(sup))
        return out

    return pairs(kids[split + 1:]) + base + pairs(kids[1:split])


def linear_text(node: Any) -> str:
    """Presentation MathML (any element of it) as linear text; whitespace is not yet collapsed."""
    name = local(node.tag)
    kids = [k for k in node if local(k.tag)]
    if name == "semantics":
        for annotation in kids[1:]:
            if local(annotation.tag) == "annotation" and "tex" in (annotation.get("encoding") or "").lower():
                return tex_formula(annotation.text or "")
        return linear_text(kids[0]) if kids else ""
    if name in _SKIPPED:
        return ""
    if name in ("mi", "mn", "mtext", "ms"):
        text = _WS.sub(" ", "".join(node.itertext())).strip()
        return f'"{text}"' if name == "ms" else text
    if name == "mo":
        op = _operator(node)
        return f" {op} " if op in SPACED_OPERATORS else op
    if name == "mspace":
        return " "
    if name in _ROWS:
        return _row(kids[1:] if name == "mlabeledtr" else kids)
    if name == "mmultiscripts":
        return _multiscripts(kids)
    parts = [linear_text(k) for k in kids]
    scripted = _scripts(name, parts, node)
    if scripted is not None:
        return scripted
    if name == "mfrac" and len(parts) == 2:
        return f"{_fraction_part(parts[0])}/{_fraction_part(parts[1])}"
    if name == "msqrt":
        return f"sqrt({''.join(parts).strip()})"
    if name == "mroot" and len(parts) == 2:
        return f"root({parts[0].strip()}, {parts[1].strip()})"
    if name == "mfenced":
        return _fenced(node, parts)
    if name == "mtable":
        return "; ".join(row for row in (p.strip() for p in parts) if row)
    if name == "mtr":
        return _table_row(parts)
    return "".join(parts)


def reading(node: Any) -> str:
    """:func:`linear_text` with whitespace collapsed: the formula as it goes into a document."""
    return _WS.sub(" ", linear_text(node)).strip()


def formula_symbols(node: Any) -> set[str]:
    """The identifiers and numbers a formula shows (``mi``/``mn``), for checking an ``alttext`` against it."""
    return {s for e in node.iter() if local(e.tag) in ("mi", "mn")
            for s in ("".join(e.itertext()).strip(),) if s}


def is_placeholder_phrase(alt: str) -> bool:
    """A boilerplate ``alttext``: a known phrase, or one saying that alternative text is missing."""
    normal = _WS.sub(" ", alt).strip().lower().rstrip(".")
    return normal in PLACEHOLDER_PHRASES or bool(_PLACEHOLDER_PATTERN.search(normal))


def useful_alttext(node: Any, placeholders: frozenset[str] | set[str] = frozenset()) -> str | None:
    """The formula's ``alttext`` when it can stand for the formula, else None.

    Not when it is empty, one of ``placeholders`` (alttexts the caller saw on formulas that read
    differently: real alternative text differs with the formula), a known placeholder phrase, or
    when the formula shows identifiers or numbers and the alttext contains none of them.
    """
    alt = node.get("alttext")
    if not alt or not alt.strip():
        return None
    alt = _WS.sub(" ", alt).strip()
    if alt in placeholders or is_placeholder_phrase(alt):
        return None
    symbols = formula_symbols(node)
    if symbols and not any(_mentions(alt, symbol) for symbol in symbols):
        return None
    return alt


def _mentions(alt: str, symbol: str) -> bool:
    """``symbol`` occurs in ``alt`` as itself: ``x`` in ``4x_1`` or ``x squared``, not the ``n`` of ``Equation``."""
    guard = r"\d" if symbol[:1].isdigit() else r"[^\W\d_]"
    return re.search(rf"(?<!{guard}){re.escape(symbol)}(?!{guard})", alt) is not None


def repeated_alttexts(maths: list[Any]) -> set[str]:
    """Alttexts carried by two or more formulas that read differently: boilerplate, whatever it says."""
    readings: dict[str, set[str]] = {}
    for node in maths:
        alt = node.get("alttext")
        if alt and alt.strip():
            readings.setdefault(_WS.sub(" ", alt).strip(), set()).add(reading(node))
    return {alt for alt, seen in readings.items() if len(seen) > 1}
