"""Write small offline DeepMind Mathematics inputs in the released layouts, deterministically.

The released files are plain text, question line then answer line, under ``<split>/<module>.txt``
with no final header; the Pile stores the subset as ``{"text", "meta": {"pile_set_name"}}`` lines
in zstd-compressed jsonl shards. DeepMind's generator needs pinned old sympy/numpy, so the
questions here are computed with the standard library in the generator's own phrasing (the
answers are correct), which is all a reader sees. ``train-easy`` files are long enough to make
several 8,192-character documents; an ``interpolate`` file (a test split, skipped by default)
and a Pile shard mixing ``DM Mathematics`` with another subset complete the sample.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import zstandard


def gcd_pairs(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """``numbers__gcd``: greatest common divisor questions."""
    phrasings = ("Calculate the greatest common divisor of {a} and {b}.", "What is the highest common factor of {a} and {b}?",
                 "Calculate the highest common divisor of {a} and {b}.")
    pairs = []
    for _ in range(count):
        factor = rng.randint(2, 60)
        a, b = factor * rng.randint(2, 400), factor * rng.randint(2, 40)
        pairs.append((rng.choice(phrasings).format(a=a, b=b), str(math.gcd(a, b))))
    return pairs


def linear_pairs(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """``algebra__linear_1d``: ``Solve a*x + b = c for x.`` with an integer solution."""
    pairs = []
    for _ in range(count):
        var = rng.choice("abcdfghjklmnpqrstuvwxyz")
        x, a, b = rng.randint(-12, 12), rng.choice([n for n in range(-9, 10) if n]), rng.randint(-60, 60)
        pairs.append((f"Solve {a}*{var} + {b} = {a * x + b} for {var}.".replace("+ -", "- "), str(x)))
    return pairs


def differentiate_pairs(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """``calculus__differentiate``: the derivative of a cubic."""
    pairs = []
    for _ in range(count):
        var = rng.choice("fgjkmnqrstwxyz")
        a, b, c = rng.randint(2, 900), rng.randint(2, 900), rng.randint(2, 900)
        question = f"Differentiate {a}*{var}**3 + {b}*{var}**2 - {c} wrt {var}."
        pairs.append((question, f"{3 * a}*{var}**2 + {2 * b}*{var}"))
    return pairs


def _write_module(path: Path, pairs: list[tuple[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{q}\n{a}\n" for q, a in pairs), encoding="utf-8")
    return path


def write_pile_shard(path: Path, texts: list[tuple[str, str]]) -> Path:
    """A Pile-format shard (``.jsonl.zst``) of ``(pile_set_name, text)`` lines."""
    payload = "".join(json.dumps({"text": text, "meta": {"pile_set_name": name}}) + "\n" for name, text in texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(payload.encode("utf-8")))
    return path


def write_sample_inputs(directory: Path) -> list[str]:
    """Write the sample under ``directory``; return the input paths."""
    rng = random.Random(20240101)
    root = directory / "mathematics_dataset-v1.0"
    paths = [
        _write_module(root / "train-easy" / "numbers__gcd.txt", gcd_pairs(rng, 400)),
        _write_module(root / "train-medium" / "algebra__linear_1d.txt", linear_pairs(rng, 300)),
        _write_module(root / "train-hard" / "calculus__differentiate.txt", differentiate_pairs(rng, 150)),
        _write_module(root / "interpolate" / "numbers__gcd.txt", gcd_pairs(rng, 50)),
    ]
    chunk = "".join(f"{q}\n{a}\n" for q, a in linear_pairs(rng, 40))
    shard = write_pile_shard(directory / "pile" / "00.jsonl.zst", [
        ("DM Mathematics", chunk),
        ("Pile-CC", "A web page about gardening, which belongs to another subset of the Pile."),
        ("DM Mathematics", "".join(f"{q}\n{a}\n" for q, a in gcd_pairs(rng, 30))),
    ])
    return [str(p) for p in paths] + [str(shard)]
