"""PII: which e-mail and IP addresses count and are replaced, and the false positives users expect handled."""

from __future__ import annotations

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
