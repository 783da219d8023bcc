"""E-mail and IP addresses: counted in every document's signals, replaced by placeholders where a dataset asks.

LLaMA did not redact PII, so G.1 keeps the text as it is; the counts are signals (``emails``,
``ips``) in every case, and a source's ``pii_redact: true`` turns redaction on (:class:`RedactPII`;
G.2's dataset file sets it for every source). The placeholders are dolma's (``|||EMAIL_ADDRESS|||``, ``|||IP_ADDRESS|||``), so a model
trained on both sees one token sequence for a removed address.

What is not PII, and so neither counted nor replaced (the false positives users of other
pipelines report):

* addresses at documentation and reserved domains (``example.com``, ``.test``, ``.invalid``,
  ``.localhost``, RFC 2606/6761) and no-reply senders;
* ``git@github.com``-style SSH remotes (a host's service account, not a person);
* IP addresses that are not globally routable (private, loopback, link-local, documentation
  ranges such as ``192.0.2.0/24``, multicast): ``ipaddress``'s ``is_global`` decides;
* version numbers that look like IPv4 addresses: a dotted quad after ``v``, ``version``,
  ``release`` or ``build``, one with a leading zero, or one that is part of a longer dotted run
  (``1.2.3.4.5``);
* ``user@host`` without a dotted domain (shell prompts, ``ssh root@server``) never matches.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace

from core.document import Document
from core.steps import Record, Step

EMAIL_PLACEHOLDER = "|||EMAIL_ADDRESS|||"
IP_PLACEHOLDER = "|||IP_ADDRESS|||"

EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"[A-Za-z]{2,24}(?![\w-])"
)
#: A dotted quad; what may stand around it is checked in Python (:func:`_standalone`): a lookbehind
#: at every position of the text cost 40% of the scan.
IPV4 = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}")
#: What every dotted quad holds from its first full stop on. It starts with a literal, which ``re``
#: finds by a fast scan: IPV4 alone tries its ``\d`` at every character (15 MB/s on Wikipedia text).
#: No quad starts more than three characters before the first of these, so IPV4's scan starts there.
_IPV4_HINT = re.compile(r"\.\d{1,3}\.\d{1,3}\.\d")


#: Two colons with at most four hex digits between them, which every IPv6 address has (``::`` or
#: ``x:y:``): found by a scan that starts at a literal colon, so the full pattern, whose lookbehind
#: at every position is slow, runs on few texts.
_IPV6_HINT = re.compile(r":[0-9A-Fa-f]{0,4}:")
IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{1,4}:){2,7}[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{1,4})*(?![\w:])"
)
#: RFC 2606/6761 names for examples and tests: addresses there belong to nobody.
_RESERVED_DOMAINS = frozenset({"example.com", "example.org", "example.net"})
_RESERVED_TLDS = frozenset({"test", "invalid", "localhost", "example"})
_SERVICE_LOCALS = ("git", "noreply", "no-reply", "donotreply", "do-not-reply")
_VERSION_BEFORE = re.compile(r"(?:\bv|\bversion|\brelease|\bbuild|\bver\.?)\s*$", re.I)


def _is_personal_email(match: re.Match[str]) -> bool:
    local, _, domain = match.group(0).lower().partition("@")
    if local in _SERVICE_LOCALS or domain.rsplit(".", 1)[-1] in _RESERVED_TLDS:
        return False
    return not any(domain == reserved or domain.endswith("." + reserved) for reserved in _RESERVED_DOMAINS)


def _standalone(text: str, start: int, end: int) -> bool:
    """A dotted quad not inside a longer word or dotted run (``a1.2.3.4``, ``1.2.3.4.5``, ``1.2.3.45x``)."""
    before = text[start - 1] if start else " "
    after = text[end:end + 2]
    if before == "." or before.isalnum() or before == "_":
        return False
    return not (after[:1].isalnum() or after[:1] == "_" or (after[:1] == "." and after[1:2].isdigit()))


def _is_public_ip(text: str, match: re.Match[str]) -> bool:
    candidate = match.group(0)
    if "." in candidate and ":" not in candidate:
        if not _standalone(text, *match.span()):
            return False
        if any(len(part) > 1 and part.startswith("0") for part in candidate.split(".")):
            return False
        if _VERSION_BEFORE.search(text, max(0, match.start() - 12), match.start()):
            return False
    try:
        address = ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return address.is_global


def email_spans(text: str) -> list[tuple[int, int]]:
    """Where the personal e-mail addresses of ``text`` are."""
    if "@" not in text:
        return []
    return [m.span() for m in EMAIL.finditer(text) if _is_personal_email(m)]


def ip_spans(text: str) -> list[tuple[int, int]]:
    """Where the public IPv4 and IPv6 addresses of ``text`` are (see the module's exclusions)."""
    hint = _IPV4_HINT.search(text)
    spans = [m.span() for m in IPV4.finditer(text, max(0, hint.start() - 3)) if _is_public_ip(text, m)] if hint else []
    if _IPV6_HINT.search(text):
        spans += [m.span() for m in IPV6.finditer(text) if _is_public_ip(text, m)]
    return sorted(spans)


def count_emails(text: str) -> int:
    """Personal e-mail addresses in ``text``, the ones already replaced by the placeholder included
    (signals are computed after redaction: they still say how many addresses the document had)."""
    return len(email_spans(text)) + text.count(EMAIL_PLACEHOLDER)


def count_ips(text: str) -> int:
    """Public IP addresses in ``text``, the replaced ones included."""
    return len(ip_spans(text)) + text.count(IP_PLACEHOLDER)


def redact(text: str) -> str:
    """``text`` with each personal e-mail and public IP address replaced by its placeholder."""
    spans = [(start, end, EMAIL_PLACEHOLDER) for start, end in email_spans(text)]
    spans += [(start, end, IP_PLACEHOLDER) for start, end in ip_spans(text)]
    if not spans:
        return text
    pieces: list[str] = []
    position = 0
    for start, end, placeholder in sorted(spans):
        if start < position:
            continue
        pieces += [text[position:start], placeholder]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


class RedactPII(Step):
    """Replaces personal e-mail and public IP addresses by placeholders (a source run with ``pii_redact``).

    The last step of a source's stage, so filters and language ID see the page as it was; the
    signals, computed after it, still count the replaced addresses. Adds ``pii_redacted`` (the
    number of replacements) to the meta of a document it changed, so a user can find them.
    """

    name = "pii_redact"

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        for doc in docs:
            text = redact(doc.text)
            if text == doc.text:
                yield doc
                continue
            replaced = text.count(EMAIL_PLACEHOLDER) + text.count(IP_PLACEHOLDER) - (
                doc.text.count(EMAIL_PLACEHOLDER) + doc.text.count(IP_PLACEHOLDER))
            yield replace(doc, text=text, meta={**doc.meta, "pii_redacted": replaced})
