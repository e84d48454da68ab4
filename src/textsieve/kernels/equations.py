"""Equations as linear text: Office Math (OMML, in DOCX) and MathML (in OpenDocument).

An equation's characters sit in a tree of fractions, scripts, radicals and delimiters; read
as bare text they run together ("a2+b2=c2", "x=-b±b2-4ac2a"). Written out linearly in the
style of UnicodeMath / LaTeX ("a^2+b^2=c^2", "x=(-b±√(b^2-4ac))/(2a)") they stay readable
and searchable, and no converter or font is needed.
"""

from __future__ import annotations

from lxml import etree

from .xml import local

_MAX_DEPTH = 64  # nesting deeper than any real equation: a hostile file stops here


def _group(text: str) -> str:
    """Parenthesised unless it is one character or already one bracketed group."""
    text = text.strip()
    if len(text) <= 1 or (text[0] in "([{" and _closes_at_end(text)):
        return text
    return f"({text})"


def _closes_at_end(text: str) -> bool:
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and i < len(text) - 1:
            return False
    return depth == 0


# -- OMML -------------------------------------------------------------------------------

def omml_text(el: etree._Element) -> str:
    """An m:oMath or m:oMathPara (one equation per line) as linear text."""
    if local(el.tag) == "oMathPara":
        return "\n".join(t for t in (omml_text(m) for m in el if local(m.tag) == "oMath")
                         if t)
    return _omml(el, 0).strip()


def _parts(el: etree._Element) -> dict[str, etree._Element]:
    return {local(c.tag): c for c in el if isinstance(c.tag, str)}


def _prop(el: etree._Element, props: str, name: str, default: str) -> str:
    """A character property (m:begChr, m:chr ...) of a structure: its m:val, else the
    default; an element present without a value means "none"."""
    pr = _parts(el).get(props)
    node = _parts(pr).get(name) if pr is not None else None
    if node is None:
        return default
    return next((v for k, v in node.attrib.items() if local(k) == "val"), "")


def _omml(el: etree._Element, depth: int) -> str:
    if depth > _MAX_DEPTH:
        return ""
    name = local(el.tag)
    sub = _parts(el)

    def part(key: str) -> str:
        return _omml(sub[key], depth + 1) if key in sub else ""

    if name == "t":
        return el.text or ""
    if name == "f":
        return f"{_group(part('num'))}/{_group(part('den'))}"
    if name == "sSup":
        return f"{part('e')}^{_group(part('sup'))}"
    if name == "sSub":
        return f"{part('e')}_{_group(part('sub'))}"
    if name == "sSubSup":
        return f"{part('e')}_{_group(part('sub'))}^{_group(part('sup'))}"
    if name == "sPre":
        return f"_{_group(part('sub'))}^{_group(part('sup'))}{part('e')}"
    if name == "rad":
        deg = part("deg").strip()
        return f"{'∛' if deg == '3' else '∜' if deg == '4' else '√'}{_group(part('e'))}" \
            if deg in ("", "3", "4") else f"√({deg}&{part('e').strip()})"
    if name == "nary":
        op = _prop(el, "naryPr", "chr", "∫")
        low, high = part("sub").strip(), part("sup").strip()
        return (f"{op}{'_' + _group(low) if low else ''}{'^' + _group(high) if high else ''}"
                f" {part('e').strip()}")
    if name == "d":
        begin = _prop(el, "dPr", "begChr", "(")
        end = _prop(el, "dPr", "endChr", ")")
        sep = _prop(el, "dPr", "sepChr", "|")
        items = [_omml(c, depth + 1) for c in el if local(c.tag) == "e"]
        return f"{begin}{sep.join(items)}{end}"
    if name == "func":
        return f"{part('fName').strip()} {part('e').strip()}"
    if name == "limLow":
        return f"{part('e')}_{_group(part('lim'))}"
    if name == "limUpp":
        return f"{part('e')}^{_group(part('lim'))}"
    if name == "eqArr":
        return "\n".join(_omml(c, depth + 1).strip() for c in el if local(c.tag) == "e")
    if name == "m":
        rows = [" ".join(_omml(e, depth + 1).strip() for e in r if local(e.tag) == "e")
                for r in el if local(r.tag) == "mr"]
        return "[" + "; ".join(rows) + "]"
    if name in ("acc", "bar", "groupChr", "borderBox", "box", "phant"):
        return part("e")
    if name.endswith("Pr") or name in ("ctrlPr", "rPr"):
        return ""  # properties: no characters
    return "".join(_omml(c, depth + 1) for c in el if isinstance(c.tag, str))


# -- MathML -----------------------------------------------------------------------------

def mathml_text(math: etree._Element) -> str:
    """A MathML formula as linear text. LibreOffice keeps the formula's own source as an
    annotation ("a^2 + b^2 = c^2" in StarMath): that is the linear form its author typed,
    so it wins; otherwise the presentation tree is written out."""
    for ann in math.iter("{*}annotation"):
        if (ann.get("encoding") or "").lower().startswith(("starmath", "application/x-tex",
                                                           "tex", "latex")):
            text = " ".join((ann.text or "").split())
            if text:
                return text
    return " ".join(_mathml(math, 0).split())


def _mathml(el: etree._Element, depth: int) -> str:
    if depth > _MAX_DEPTH or not isinstance(el.tag, str):
        return ""
    name = local(el.tag)
    kids = [c for c in el if isinstance(c.tag, str)]
    args = [_mathml(c, depth + 1) for c in kids]
    if name in ("mi", "mn", "mo", "mtext", "ms"):
        return "".join(el.itertext())
    if name in ("annotation", "annotation-xml"):
        return ""
    if name == "semantics":
        return args[0] if args else ""
    if name == "mfrac" and len(args) == 2:
        return f"{_group(args[0])}/{_group(args[1])}"
    if name == "msup" and len(args) == 2:
        return f"{args[0]}^{_group(args[1])}"
    if name == "msub" and len(args) == 2:
        return f"{args[0]}_{_group(args[1])}"
    if name == "msubsup" and len(args) == 3:
        return f"{args[0]}_{_group(args[1])}^{_group(args[2])}"
    if name in ("munder", "munderover", "mover") and args:
        marks = ("_", "^") if name != "mover" else ("^",)
        pairs = zip(marks, args[1:], strict=False)  # a munder has one script, munderover two
        return args[0] + "".join(f"{m}{_group(a)}" for m, a in pairs)
    if name == "msqrt":
        return f"√{_group(''.join(args))}"
    if name == "mroot" and len(args) == 2:
        return f"√({args[1]}&{args[0]})"
    if name == "mfenced":
        sep = el.get("separators", ",")[:1] or ","
        return f"{el.get('open', '(')}{sep.join(args)}{el.get('close', ')')}"
    if name == "mtable":
        return "[" + "; ".join(args) + "]"
    if name == "mtr":
        return " ".join(args)
    return "".join(args)
