"""The calls that stamp the clock, chance or a file's name into a generated file, found statically.

``tests/test_fixtures_deterministic.py`` runs :func:`stamping_calls` over every test module and
sample writer: a fixture written by one of these calls is not the same bytes on the next run, so
a property test's ``@example`` that pins a byte position in it pins nothing (issue 34). Each rule
names the deterministic way (``tests/fixed.py``) in its message.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

WRITE_MODES = ("w", "a", "x")


def _dotted(node: ast.AST) -> str:
    """``gzip.compress`` for the call target ``gzip.compress`` (attribute chains only)."""
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _mode(call: ast.Call, position: int) -> str:
    """The call's mode argument when it is a string constant (positional ``position`` or ``mode=``)."""
    node = _keyword(call, "mode") or (call.args[position] if len(call.args) > position else None)
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _writes(mode: str) -> bool:
    return any(flag in mode for flag in WRITE_MODES)


def _last_name(call: ast.expr) -> str:
    """``ZipInfo`` for a call of ``zipfile.ZipInfo(...)``; empty for anything not a call."""
    return _dotted(call.func).rsplit(".", 1)[-1] if isinstance(call, ast.Call) else ""


def _zip_info_names(tree: ast.AST) -> set[str]:
    """Names bound to a zip member header: ``ZipInfo(...)``/``zip_info(...)``/``getinfo(...)`` results,
    and loop variables over ``infolist()`` (a header copied from a fixed archive keeps its date)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _last_name(node.value) in ("ZipInfo", "zip_info", "getinfo"):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        loop = isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name)
        if loop and _last_name(node.iter) == "infolist":
            names.add(node.target.id)
    return names


def _zip_member_fixed(node: ast.expr, fixed_names: set[str]) -> bool:
    if isinstance(node, ast.Call):
        return _last_name(node) in ("ZipInfo", "zip_info")
    return isinstance(node, ast.Name) and node.id in fixed_names


def _bound_names(tree: ast.AST, makers: tuple[str, ...]) -> set[str]:
    """Names bound by ``with maker(...) as name`` or ``name = maker(...)``, for the call names in ``makers``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
            if _dotted(getattr(node.context_expr, "func", node.context_expr)).endswith(makers):
                names.add(node.optional_vars.id)
        elif isinstance(node, ast.Assign) and _dotted(getattr(node.value, "func", node.value)).endswith(makers):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _rule(call: ast.Call, fixed_zip_names: set[str], tar_names: set[str], pdf_names: set[str]) -> str | None:
    """Why ``call`` writes bytes that change from run to run, or None."""
    name = _dotted(call.func)
    method = name.rsplit(".", 1)[-1]
    if name == "gzip.compress" and _keyword(call, "mtime") is None:
        return "gzip.compress stamps the current time: pass mtime=0 (tests.fixed.gzip_bytes)"
    if name == "gzip.open" and _writes(_mode(call, 1)):
        return "gzip.open stores the time and the file's name: use tests.fixed.gzip_writer/gzip_text"
    if name == "gzip.GzipFile" and _writes(_mode(call, 1)) and _keyword(call, "mtime") is None:
        return "GzipFile stamps the current time: pass mtime=0 (tests.fixed.gzip_writer)"
    if name == "tarfile.open" and _writes(_mode(call, 1)) and "gz" in _mode(call, 1):
        return "tarfile's gzip layer stamps the time and the name: gzip a tar_bytes() with mtime=0"
    if method in ("gettarinfo", "add") and name.rsplit(".", 1)[0] in tar_names:
        return "a tar member from a real file carries its mtime and owner: addfile(tests.fixed.tar_info(...))"
    if method == "writestr" and call.args and not _zip_member_fixed(call.args[0], fixed_zip_names):
        return "ZipFile.writestr with a bare name dates the member now: writestr(tests.fixed.zip_info(name), ...)"
    if name.endswith("SevenZipFile") and _writes(_mode(call, 1)):
        return "py7zr stamps each member with the current time: use tests.fixed.write_7z"
    if method == "save" and name.rsplit(".", 1)[0] in pdf_names:
        return "PDFium stamps the save time and a time-based /ID: use tests.fixed.save_pdf"
    if method == "WARCWriter":
        return "warcio stamps a random record id and the current date: use tests.fixed.FixedWARCWriter"
    return None


def _allowed_lines(tree: ast.AST, functions: frozenset[str]) -> set[int]:
    """The lines of the functions named in ``functions`` (writers that fix the stamped fields themselves)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in functions:
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def stamping_calls(path: Path, allowed: frozenset[str] = frozenset()) -> Iterator[tuple[int, str]]:
    """(line, why) of each call in ``path`` that writes run-dependent bytes (see :func:`_rule`),
    outside the functions or classes named in ``allowed``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    fixed_zip_names, tar_names = _zip_info_names(tree), _bound_names(tree, ("tarfile.open",))
    pdf_names = _bound_names(tree, ("PdfDocument.new", "PdfDocument"))
    skip = _allowed_lines(tree, allowed)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if getattr(node, "lineno", 0) in skip:
            continue
        if isinstance(node, ast.Call) and (why := _rule(node, fixed_zip_names, tar_names, pdf_names)):
            yield node.lineno, why
        elif isinstance(node, ast.Attribute) and id(node) not in called and _dotted(node) == "gzip.compress":
            yield node.lineno, "gzip.compress passed as a function stamps the current time: use tests.fixed.gzip_bytes"
