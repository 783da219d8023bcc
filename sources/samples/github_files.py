"""The files of the GitHub sample's repositories (:mod:`sources.samples.github`), by repository.

Small but real-looking code in several languages (Python, C, Go, Rust, JavaScript, shell,
Dockerfile, Makefile, Markdown), licence files as projects ship them, and the files the GitHub
recipe must drop: a vendored minified library, a generated protobuf module, data and config files
outside the extension whitelist, and a copy of one repository's module vendored into another.
"""

from __future__ import annotations

MIT = """MIT License

Copyright (c) 2021 Sample Owner

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT.
"""

BSD3 = """BSD 3-Clause License

Copyright (c) 2020, River Gauge Contributors
All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.

3. Neither the name of the copyright holder nor the names of its
   contributors may be used to endorse or promote products derived from
   this software without specific prior written permission.
"""

APACHE = """
                                 Apache License
                           Version 2.0, January 2004
                        http://www.apache.org/licenses/

   TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION

   1. Definitions.

      "License" shall mean the terms and conditions for use, reproduction,
      and distribution as defined by Sections 1 through 9 of this document.
"""

GPL3 = """                    GNU GENERAL PUBLIC LICENSE
                       Version 3, 29 June 2007

 Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>
 Everyone is permitted to copy and distribute verbatim copies
 of this license document, but changing it is not allowed.

                            Preamble

  The GNU General Public License is a free, copyleft license for
software and other kinds of works.
"""

TOKENIZE_PY = '''"""Split text into words and sentences, the way the rest of textkit expects."""

from __future__ import annotations

import re
from collections.abc import Iterator

WORD = re.compile(r"[^\\W\\d_]+(?:['\\u2019][^\\W\\d_]+)*")
SENTENCE_END = re.compile(r"(?<=[.!?])\\s+(?=[A-Z\\"'])")


def words(text: str) -> list[str]:
    """Lower-cased words of ``text``; digits and punctuation are not words."""
    return [match.group(0).lower() for match in WORD.finditer(text)]


def sentences(text: str) -> Iterator[str]:
    """Sentences of ``text``, split after terminal punctuation followed by a capital."""
    for sentence in SENTENCE_END.split(text.strip()):
        if sentence:
            yield sentence.strip()
'''

TOKENIZE_HEADER = """# Copyright (c) 2021 Sample Owner
# SPDX-License-Identifier: MIT
#
# Part of textkit: https://github.com/sample-owner/textkit

"""

STATS_PY = '''"""Word statistics over a text: frequencies, type/token ratio and the longest words."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from textkit.tokenize import sentences, words


@dataclass(frozen=True)
class TextStats:
    """What :func:`describe` reports about a text."""

    sentences: int
    tokens: int
    types: int
    top: list[tuple[str, int]]

    @property
    def type_token_ratio(self) -> float:
        """Distinct words per word; 0.0 for an empty text."""
        return self.types / self.tokens if self.tokens else 0.0


def describe(text: str, top: int = 10) -> TextStats:
    """Count the sentences, words and distinct words of ``text``."""
    counts = Counter(words(text))
    return TextStats(
        sentences=sum(1 for _ in sentences(text)),
        tokens=sum(counts.values()),
        types=len(counts),
        top=counts.most_common(top),
    )


def longest_words(text: str, n: int = 5) -> list[str]:
    """The ``n`` longest distinct words, longest first, ties in alphabetical order."""
    unique = sorted(set(words(text)))
    return sorted(unique, key=len, reverse=True)[:n]
'''

INIT_PY = '''"""textkit: small, dependable text statistics for scripts and notebooks."""

from textkit.stats import TextStats, describe, longest_words
from textkit.tokenize import sentences, words

__all__ = ["TextStats", "describe", "longest_words", "sentences", "words"]
__version__ = "0.4.1"
'''

WORDFREQ_H = """#ifndef TEXTKIT_WORDFREQ_H
#define TEXTKIT_WORDFREQ_H

#include <stddef.h>

/* One counted word: the word itself (owned by the table) and how often it was seen. */
typedef struct {
    char *word;
    size_t count;
} word_count;

/* Count the words read from a stream; returns the number of distinct words, or -1 on error. */
long count_words(FILE *input, word_count **table);

void free_counts(word_count *table, size_t length);

#endif
"""

WORDFREQ_C = """#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wordfreq.h"

#define MAX_WORD 128

static long find_word(word_count *table, size_t length, const char *word) {
    for (size_t i = 0; i < length; i++) {
        if (strcmp(table[i].word, word) == 0) {
            return (long)i;
        }
    }
    return -1;
}

long count_words(FILE *input, word_count **table) {
    size_t length = 0, capacity = 64;
    char word[MAX_WORD];
    int c, n = 0;
    *table = malloc(capacity * sizeof(word_count));
    if (*table == NULL) {
        return -1;
    }
    while ((c = fgetc(input)) != EOF) {
        if (isalpha(c) && n < MAX_WORD - 1) {
            word[n++] = (char)tolower(c);
            continue;
        }
        if (n == 0) {
            continue;
        }
        word[n] = '\\0';
        n = 0;
        long found = find_word(*table, length, word);
        if (found >= 0) {
            (*table)[found].count++;
            continue;
        }
        if (length == capacity) {
            capacity *= 2;
            word_count *grown = realloc(*table, capacity * sizeof(word_count));
            if (grown == NULL) {
                return -1;
            }
            *table = grown;
        }
        (*table)[length].word = strdup(word);
        (*table)[length].count = 1;
        length++;
    }
    return (long)length;
}

void free_counts(word_count *table, size_t length) {
    for (size_t i = 0; i < length; i++) {
        free(table[i].word);
    }
    free(table);
}
"""

RELEASE_SH = """#!/usr/bin/env bash
# Build the sdist and wheel, check them, and tag the release.
set -euo pipefail

version="$(python -c 'import textkit; print(textkit.__version__)')"
rm -rf dist/
python -m build
python -m twine check dist/*
git tag -a "v${version}" -m "textkit ${version}"
echo "built textkit ${version}; push the tag to publish"
"""

TEXTKIT_README = """# textkit

Small, dependable text statistics for scripts and notebooks: words, sentences, frequencies
and the type/token ratio, with no dependencies beyond the standard library.

## Install

    pip install textkit

## Use

    from textkit import describe
    stats = describe(open("book.txt").read())
    print(stats.tokens, stats.types, stats.type_token_ratio)

A C version of the word counter lives in `src/` for very large files.
"""

#: A vendored, minified library: one line of thousands of characters (the line-length filter).
JQUERY_MIN = ("/*! jQuery v3.6.0 | (c) OpenJS Foundation and other contributors | jquery.org/license */\n"
              "!function(e,t){\"use strict\";\"object\"==typeof module&&\"object\"==typeof module.exports?"
              "module.exports=e.document?t(e,!0):function(e){if(!e.document)throw new Error(\"jQuery requires "
              "a window with a document\");return t(e)}:t(e)}(\"undefined\"!=typeof window?window:this,"
              "function(C,e){\"use strict\";var t=[],r=Object.getPrototypeOf,s=t.slice,g=t.flat?function(e){"
              "return t.flat.call(e)}:function(e){return t.concat.apply([],e)},u=t.push,i=t.indexOf,n={},"
              "o=n.toString,v=n.hasOwnProperty,a=v.toString,l=a.call(Object),y={},m=function(e){return\"function"
              "\"==typeof e&&\"number\"!=typeof e.nodeType&&\"function\"!=typeof e.item},x=function(e){return "
              "null!=e&&e===e.window},E=C.document,c={type:!0,src:!0,nonce:!0,noModule:!0};"
              + "".join(f"function b{i}(e,t,n){{var r,i,o=(n=n||E).createElement(\"script\");if(o.text=e,t)"
                        f"for(r in c)(i=t[r]||t.getAttribute&&t.getAttribute(r))&&o.setAttribute(r,i);"
                        f"n.head.appendChild(o).parentNode.removeChild(o)}}" for i in range(12))
              + "return C});\n")

#: A generated protobuf module: its serialized descriptor is one very long line.
PB2_PY = ('# -*- coding: utf-8 -*-\n# Generated by the protocol buffer compiler.  DO NOT EDIT!\n'
          '# source: textkit.proto\n"""Generated protocol buffer code."""\n'
          'from google.protobuf import descriptor as _descriptor\n'
          'from google.protobuf import descriptor_pool as _descriptor_pool\n'
          'from google.protobuf.internal import builder as _builder\n\n'
          "DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile(b'"
          + "".join(f"\\n\\x0ctextkit.proto\\x12\\x07textkit\\\"{i:02x}\\n\\tTextStats\\x12\\x11\\n\\tsentences"
                    f"\\x18\\x01 \\x01(\\x03\\x12\\x0e\\n\\x06tokens\\x18\\x02 \\x01(\\x03" for i in range(24))
          + "')\n\n_builder.BuildMessageAndEnumDescriptors(DESCRIPTOR, globals())\n")

STOPWORDS_CSV = "word,language\nthe,en\nand,en\nder,de\nund,de\nle,fr\net,fr\n"
GITIGNORE = "__pycache__/\n*.egg-info/\ndist/\nbuild/\n"
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4"
       b"\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7V\xbd\xfa\x00\x00\x00\x00IEND\xaeB`\x82")

MAIN_GO = """package main

import (
\t"flag"
\t"fmt"
\t"log"
\t"os"

\t"github.com/sample-owner/rivergauge/gauge"
)

func main() {
\tstation := flag.String("station", "", "gauge station id, e.g. 39001")
\tdays := flag.Int("days", 7, "how many days of readings to summarise")
\tflag.Parse()
\tif *station == "" {
\t\tfmt.Fprintln(os.Stderr, "usage: rivergauge -station ID [-days N]")
\t\tos.Exit(2)
\t}
\treadings, err := gauge.Fetch(*station, *days)
\tif err != nil {
\t\tlog.Fatalf("fetching station %s: %v", *station, err)
\t}
\tsummary := gauge.Summarise(readings)
\tfmt.Printf("station %s: %d readings, mean level %.2f m, peak %.2f m at %s\\n",
\t\t*station, summary.Count, summary.Mean, summary.Peak.Level, summary.Peak.Time.Format("2006-01-02 15:04"))
}
"""

READING_GO = """// Package gauge reads river level readings and summarises them.
package gauge

import (
\t"encoding/json"
\t"fmt"
\t"net/http"
\t"time"
)

// Reading is one level measurement of a station, in metres above the gauge datum.
type Reading struct {
\tTime  time.Time `json:"dateTime"`
\tLevel float64   `json:"value"`
}

// Summary is what Summarise reports about a series of readings.
type Summary struct {
\tCount int
\tMean  float64
\tPeak  Reading
}

// Fetch downloads the last days of readings of a station.
func Fetch(station string, days int) ([]Reading, error) {
\tsince := time.Now().AddDate(0, 0, -days).Format(time.RFC3339)
\turl := fmt.Sprintf("https://environment.example.org/flood-monitoring/id/stations/%s/readings?since=%s", station, since)
\tresponse, err := http.Get(url)
\tif err != nil {
\t\treturn nil, err
\t}
\tdefer response.Body.Close()
\tvar body struct {
\t\tItems []Reading `json:"items"`
\t}
\tif err := json.NewDecoder(response.Body).Decode(&body); err != nil {
\t\treturn nil, fmt.Errorf("decoding readings: %w", err)
\t}
\treturn body.Items, nil
}

// Summarise returns the count, mean level and highest reading.
func Summarise(readings []Reading) Summary {
\tsummary := Summary{Count: len(readings)}
\tif len(readings) == 0 {
\t\treturn summary
\t}
\ttotal := 0.0
\tfor _, reading := range readings {
\t\ttotal += reading.Level
\t\tif reading.Level > summary.Peak.Level {
\t\t\tsummary.Peak = reading
\t\t}
\t}
\tsummary.Mean = total / float64(len(readings))
\treturn summary
}
"""

CHART_JS = """// Draw the last week of river levels as a line chart on a <canvas>.
export function drawLevels(canvas, readings) {
  const context = canvas.getContext("2d");
  const levels = readings.map((reading) => reading.level);
  const low = Math.min(...levels);
  const high = Math.max(...levels);
  const scaleX = canvas.width / Math.max(1, readings.length - 1);
  const scaleY = canvas.height / Math.max(0.01, high - low);

  context.clearRect(0, 0, canvas.width, canvas.height);
  context.beginPath();
  readings.forEach((reading, index) => {
    const x = index * scaleX;
    const y = canvas.height - (reading.level - low) * scaleY;
    if (index === 0) {
      context.moveTo(x, y);
    } else {
      context.lineTo(x, y);
    }
  });
  context.strokeStyle = "#1f6feb";
  context.lineWidth = 2;
  context.stroke();
}
"""

DOCKERFILE = """FROM golang:1.21-alpine AS build
WORKDIR /src
COPY go.mod ./
RUN go mod download
COPY . .
RUN go build -o /out/rivergauge ./cmd/rivergauge

FROM alpine:3.19
COPY --from=build /out/rivergauge /usr/local/bin/rivergauge
ENTRYPOINT ["rivergauge"]
"""

MAKEFILE = """BINARY := rivergauge

.PHONY: build test lint clean

build:
\tgo build -o bin/$(BINARY) ./cmd/rivergauge

test:
\tgo test ./...

lint:
\tgo vet ./...

clean:
\trm -rf bin/
"""

GO_MOD = "module github.com/sample-owner/rivergauge\n\ngo 1.21\n"

LIB_RS = """//! Tide tables: predicted high and low water from harmonic constituents.

pub mod tide;

pub use tide::{Constituent, Prediction, predict};
"""

TIDE_RS = """use std::f64::consts::PI;

/// One harmonic constituent of the tide: amplitude (m), speed (degrees per hour), phase (degrees).
#[derive(Debug, Clone, Copy)]
pub struct Constituent {
    pub amplitude: f64,
    pub speed: f64,
    pub phase: f64,
}

/// The predicted height of the water at one hour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub hour: u32,
    pub height: f64,
}

/// Predict the water height for each hour from `mean_level` and the constituents.
pub fn predict(mean_level: f64, constituents: &[Constituent], hours: u32) -> Vec<Prediction> {
    (0..hours)
        .map(|hour| {
            let t = f64::from(hour);
            let height = constituents.iter().fold(mean_level, |sum, c| {
                sum + c.amplitude * ((c.speed * t - c.phase) * PI / 180.0).cos()
            });
            Prediction { hour, height }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_level_without_constituents() {
        let predictions = predict(2.5, &[], 3);
        assert!(predictions.iter().all(|p| (p.height - 2.5).abs() < 1e-9));
    }
}
"""

CARGO_TOML = '[package]\nname = "tidewatch"\nversion = "0.2.0"\nedition = "2021"\nlicense = "Apache-2.0"\n'

TIDE_README = """# tidewatch

Predicted high and low water from harmonic constituents, for harbours without a published table.
Give it the mean level and the constituents of your harbour and it prints the next day's tides.
"""

GPL_MAIN_C = """#include <stdio.h>

/* Print the lines of standard input in reverse order (a tiny tac). */
int main(void) {
    char lines[1024][256];
    int n = 0;
    while (n < 1024 && fgets(lines[n], sizeof lines[n], stdin) != NULL) {
        n++;
    }
    while (n-- > 0) {
        fputs(lines[n], stdout);
    }
    return 0;
}
"""

SCRAPER_PY = '''"""Fetch the day's river levels and save them as CSV (no licence: all rights reserved)."""

import csv
import sys
import urllib.request


def main(url: str, target: str) -> None:
    with urllib.request.urlopen(url) as response:
        rows = [line.decode("utf-8").split(",") for line in response]
    with open(target, "w", newline="") as handle:
        csv.writer(handle).writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
'''
