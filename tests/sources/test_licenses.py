"""Tests for licence detection from licence texts, names and SPDX expressions."""

from __future__ import annotations

from pathlib import Path

import pytest

from sources.formats.licenses import (
    detect_license_text,
    detect_repo_license,
    expression_verdict,
    normalize_license,
    row_license,
)

MIT = """MIT License

Copyright (c) 2024 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction...

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
"""
BSD3 = """Copyright (c) 2024, Someone
Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:
3. Neither the name of the copyright holder nor the names of its contributors may be used to
   endorse or promote products derived from this software without specific prior written permission.
"""
BSD2 = BSD3.split("3. Neither")[0]
APACHE = "                                 Apache License\n                           Version 2.0, January 2004\n"
COMMON = Path("/usr/share/common-licenses")


@pytest.mark.parametrize(
    ("text", "expected"),
    [(MIT, "mit"), (BSD3, "bsd-3-clause"), (BSD2, "bsd-2-clause"), (APACHE, "apache-2.0"),
     ("## MIT License\n\n**Permission is hereby granted, free of charge, to any person obtaining a copy** ... "
      "The above copyright notice and this permission notice shall be included", "mit"),
     ("All rights reserved. Do not copy.", "unknown")],
)
def test_detect_license_text(text: str, expected: str) -> None:
    assert detect_license_text(text) == expected


@pytest.mark.skipif(not COMMON.is_dir(), reason="Debian's common-licenses not installed")
@pytest.mark.parametrize(
    ("name", "expected"),
    [("GPL-2", "gpl-2.0"), ("GPL-3", "gpl-3.0"), ("LGPL-2.1", "lgpl-2.1"), ("LGPL-3", "lgpl-3.0"),
     ("MPL-2.0", "mpl-2.0"), ("Apache-2.0", "apache-2.0"), ("BSD", "bsd-3-clause"), ("CC0-1.0", "cc0-1.0")],
)
def test_real_licence_texts_that_quote_each_other(name: str, expected: str) -> None:
    # GPL-3 names the AGPL, MPL-2.0 names the GPLs: the licence stated first must win.
    assert detect_license_text((COMMON / name).read_text(encoding="utf-8", errors="replace")) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [("MIT", "mit"), ("Apache-2.0", "apache-2.0"), ("apache 2.0", "apache-2.0"), ("GPL-3.0-or-later", "gpl-3.0"),
     ("BSD-3-Clause", "bsd-3-clause"), ("", "none"), (None, "none"), ("Simplified BSD", "bsd-2-clause")],
)
def test_normalize_license(name: str | None, expected: str) -> None:
    assert normalize_license(name) == expected


def test_expressions() -> None:
    assert expression_verdict("MIT OR GPL-3.0") == (True, "mit")
    assert expression_verdict("GPL-2.0 AND MIT") == (False, "gpl-2.0")
    assert expression_verdict("(Apache-2.0 AND MIT)") == (True, "apache-2.0 AND mit")
    assert row_license("gpl-3.0").drop_reason == "license_gpl-3.0"
    assert row_license(None).drop_reason == "license_none"
    assert row_license("bsd-2-clause").allowed


def test_repo_with_dual_licence_files_and_pointer(tmp_path: Path) -> None:
    (tmp_path / "LICENSE-MIT").write_text(MIT)
    (tmp_path / "LICENSE-APACHE").write_text(APACHE)
    (tmp_path / "LICENSE").write_text("Licensed under either of LICENSE-MIT or LICENSE-APACHE at your option.")
    verdict = detect_repo_license(tmp_path)
    assert verdict.allowed and verdict.licenses == ("apache-2.0", "mit")


def test_repo_with_gpl_beside_mit_is_dropped(tmp_path: Path) -> None:
    (tmp_path / "LICENSE").write_text(MIT)
    (tmp_path / "COPYING").write_text("GNU GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007\n")
    assert detect_repo_license(tmp_path).drop_reason == "license_gpl-3.0"


def test_repo_without_licence_file(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("MIT licensed, trust me")
    assert detect_repo_license(tmp_path).drop_reason == "license_none"


def test_licence_symlink_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(MIT)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "LICENSE").symlink_to(outside)
    assert detect_repo_license(repo).drop_reason == "license_none"
