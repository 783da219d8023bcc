"""PII: which e-mail and IP addresses count and are replaced, and the false positives users expect handled."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.filters.pii import EMAIL_PLACEHOLDER, IP_PLACEHOLDER, count_emails, count_ips, redact

PERSONAL = [
    ("Write to jane.doe@gmail.com today.", f"Write to {EMAIL_PLACEHOLDER} today."),
    ("<a.b+tag@mail.uni-example.de>", f"<{EMAIL_PLACEHOLDER}>"),
    ("server at 8.8.8.8, port 53", f"server at {IP_PLACEHOLDER}, port 53"),
    ("(203.0.114.7)", f"({IP_PLACEHOLDER})"),
    ("ping 2001:4860:4860::8888 now", f"ping {IP_PLACEHOLDER} now"),
]
NOT_PII = [
    "Clone git@github.com:owner/repo.git",          # an SSH remote, a service account
    "ssh root@server and user@localhost",            # no dotted domain / reserved name
    "Contact info@example.com or a@b.test",          # documentation domains (RFC 2606/6761)
    "home router 192.168.1.1 and 10.0.0.7, lo 127.0.0.1",  # private and loopback ranges
    "docs use 192.0.2.10 and 2001:db8::1",           # documentation ranges
    "upgrade to v1.2.3.4 or version 2.0.0.1",        # version numbers
    "release 4.3.2.1 is out; build 10.0.19041.1",    # a version word before it; a longer dotted run
    "coordinates 01.02.03.04",                       # leading zeros are not how addresses are written
    "matrix a@b.T and x @ self.weights",             # no two-letter top-level domain / spaces
    "at 10:30:00 on 2024-01-02",                     # times and dates
    "The ratio 3.14159 and 1.2.3",                   # not four parts
]


@pytest.mark.parametrize(("text", "expected"), PERSONAL)
def test_personal_addresses_are_counted_and_replaced(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert count_emails(text) + count_ips(text) == 1


@pytest.mark.parametrize("text", NOT_PII)
def test_false_positives_are_left_alone(text: str) -> None:
    assert redact(text) == text
    assert count_emails(text) == 0
    assert count_ips(text) == 0


@given(st.text(alphabet=st.sampled_from(list("abcxyz019. :\n-")), max_size=200))
def test_text_without_at_or_address_shape_is_never_changed(text: str) -> None:
    if count_emails(text) == 0 and count_ips(text) == 0:
        assert redact(text) == text
    else:
        assert redact(text) != text


def test_stage_redacts_only_when_the_run_asks(tmp_path: Path) -> None:
    """A real C4 json.gz through the stage: redacted text, the count in meta, signals still counting."""
    import gzip
    import json

    import pyarrow.parquet as pq

    from core import pipeline
    from core.document import InputSpec
    from core.layout import signals_attribute_path
    from core.shards import ShardLimits, read_documents
    from sources.c4 import C4Recipe

    rows = [{"text": "Mail jane.doe@gmail.com or call the host 8.8.8.8 today.", "timestamp": "2019-04-25T12:57:54Z",
             "url": "https://a.example.org/1"},
            {"text": "No address here, v1.2.3.4 is a version.", "timestamp": "2019-04-25T12:57:55Z",
             "url": "https://a.example.org/2"}]
    path = tmp_path / "c4-train.00000-of-01024.json.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode(), mtime=0))
    spec = InputSpec(str(path), path, path.name)
    texts = {}
    for redact_on in (False, True):
        out = tmp_path / f"out-{redact_on}"
        ctx = pipeline.RunContext(out, "c4", "cfg", ShardLimits(), "c4", redact_pii=redact_on)
        pipeline.stage_input(C4Recipe(), spec, ctx)
        docs = [d for shard in sorted(out.rglob("part-*.parquet")) for d in read_documents(shard)]
        texts[redact_on] = [d.text for d in docs]
        signals = pq.read_table(signals_attribute_path(out, "c4", spec.key)).to_pylist()
        assert [(s["emails"], s["ips"]) for s in signals] == [(1, 1), (0, 0)]
        if redact_on:
            assert docs[0].meta["pii_redacted"] == 2
            assert "pii_redacted" not in docs[1].meta
    assert texts[False] == [rows[0]["text"], rows[1]["text"]]
    assert texts[True] == [f"Mail {EMAIL_PLACEHOLDER} or call the host {IP_PLACEHOLDER} today.", rows[1]["text"]]


def test_redaction_switch_leaves_existing_config_hashes_alone() -> None:
    from flows.c4 import C4Config

    assert "pii_redact" not in C4Config().output_fields()
    assert C4Config().config_hash() != C4Config(pii_redact=True).config_hash()
