"""Small offline dialogue inputs in the real formats, written with the formats' own libraries.

* ``reddit/RC_2006-01.zst`` and ``reddit/RS_2006-01.zst``: Pushshift ndjson compressed by
  ``zstandard`` the way the dumps are (window log 31 with long-distance matching, no content size
  in the frame header), with the fields and quirks of ``RC_2005-12`` (``t1_``/``t3_`` prefixes on
  parents only, HTML-escaped bodies, ``[deleted]``/``[removed]``, int ``created_utc``), plus the
  bad cases the reader must count: AutoModerator and a ``...Bot``, a reply whose parent is not in
  the dump, a two-comment reply cycle and a malformed line;
* ``dailydialog/daily_dialog.zip``: the Hugging Face layout, zips nested in a zip, with
  ``dialogues_<split>.txt`` (`` __eou__ ``-ended turns) and the act/emotion label files;
* ``ubuntu/dialogues.json``: a JSON array of ``{dialogue_id, timestamp, text}``;
* ``ubuntu/ubuntu_v2.zip``: v2 ``train.csv`` (``Context,Utterance,Label``) in a zip.

:func:`write_reddit_comments` also writes month-sized comment files for the benchmark, drawn from
RC_2005-12's shape (about 70 % top-level comments, a score spread around 1, 10 % deleted
authors, bodies around 275 characters with quotes, links and entities).
"""

from __future__ import annotations

import csv
import io
import json
import random
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import zstandard

WORDS = ["the", "a", "this", "that", "it", "is", "was", "be", "not", "but", "and", "or", "if", "then", "so", "what", "why", "how", "when", "where", "I", "you", "we", "they", "think", "know", "see", "said", "just", "really", "good", "bad", "new", "old", "post", "link", "site", "news", "story", "people", "time", "article", "vote", "reddit", "comment", "reply", "read", "point", "problem", "answer", "question", "right", "wrong", "again", "because", "maybe", "never", "always", "agree", "thanks", "interesting", "funny", "true", "false"]
SUBREDDITS = ("reddit.com", "programming", "science", "politics")
BASE_TIME = 1136073600  # 2006-01-01


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(4, 16))]
    return " ".join(words).capitalize() + rng.choice(".?!")


def reddit_body(rng: random.Random) -> str:
    """A comment body in the dump's escaped markdown (``&gt;`` quotes, ``&amp;`` in links)."""
    parts = [" ".join(_sentence(rng) for _ in range(max(1, int(rng.expovariate(0.4)))))]
    roll = rng.random()
    if roll < 0.08:
        parts.insert(0, "&gt; " + _sentence(rng))
    elif roll < 0.14:
        parts.append(f"[{rng.choice(WORDS)}](http://example.com/a?x={rng.randint(1, 99)}&amp;y=2)")
    elif roll < 0.17:
        parts.append("* " + _sentence(rng) + "\r\n* " + _sentence(rng))
    return "\r\n\r\n".join(parts)


def _comment(rng: random.Random, cid: str, link: str, parent: str, subreddit: str, created: int,
             author: str | None = None, body: str | None = None) -> dict[str, object]:
    deleted = rng.random() < 0.1
    return {
        "controversiality": 0, "body": body if body is not None else ("[deleted]" if deleted and rng.random() < 0.6
                                                                       else reddit_body(rng)),
        "subreddit_id": "t5_6", "link_id": f"t3_{link}", "stickied": False, "subreddit": subreddit,
        "score": score if (score := int(rng.gauss(1.5, 2.5))) else 1, "ups": 0, "author_flair_css_class": None,
        "created_utc": created, "author_flair_text": None,
        "author": author or ("[deleted]" if deleted else f"user{rng.randint(1, 400)}"),
        "id": cid, "edited": False, "parent_id": parent, "gilded": 0, "distinguished": None,
        "retrieved_on": 1473738411,
    }


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out


def reddit_comments(count: int, seed: int = 0, threads: int | None = None) -> Iterator[dict[str, object]]:
    """``count`` comments over ``threads`` threads (default count/3), in creation order."""
    rng = random.Random(seed)
    threads = threads or max(1, count // 3)
    seen: dict[int, list[str]] = {}
    for n in range(count):
        thread = min(int(rng.paretovariate(1.2)) - 1, threads - 1) if rng.random() < 0.5 else rng.randrange(threads)
        link = _base36(20000 + thread)
        earlier = seen.setdefault(thread, [])
        parent = f"t3_{link}" if not earlier or rng.random() < 0.7 else f"t1_{rng.choice(earlier[-200:])}"
        cid = "c" + _base36(100 + n)
        earlier.append(cid)
        if len(earlier) > 400:
            del earlier[:200]
        yield _comment(rng, cid, link, parent, SUBREDDITS[thread % len(SUBREDDITS)], BASE_TIME + n)


def zstd_writer_params() -> zstandard.ZstdCompressor:
    """A compressor set up as Pushshift's: window log 31, long-distance matching, no content size."""
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=31, enable_ldm=True,
                                                            write_content_size=False)
    return zstandard.ZstdCompressor(compression_params=params)


def write_ndjson_zst(path: Path, rows: Iterable[Mapping[str, object]],
                     extra_lines: list[bytes] | None = None) -> int:
    """Write ``rows`` as ndjson into one zstd frame; returns the number of lines written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = 0
    with open(path, "wb") as handle, zstd_writer_params().stream_writer(handle) as writer:
        buffer = io.BytesIO()
        for row in rows:
            buffer.write(json.dumps(row, separators=(",", ":")).encode() + b"\n")
            lines += 1
            if buffer.tell() > 1 << 20:
                writer.write(buffer.getvalue())
                buffer = io.BytesIO()
        for line in extra_lines or []:
            buffer.write(line + b"\n")
            lines += 1
        writer.write(buffer.getvalue())
    return lines


def write_reddit_comments(path: Path, count: int, seed: int = 0) -> int:
    """A month-sized ``RC_`` file for benchmarks (``count`` comments); returns the lines written."""
    return write_ndjson_zst(path, reddit_comments(count, seed))


def sample_reddit(directory: Path, seed: int = 7) -> list[Path]:
    """``RC_2006-01.zst`` (with every bad case) and its ``RS_`` companion."""
    rng = random.Random(seed)
    rows = list(reddit_comments(240, seed, threads=40))
    t = BASE_TIME + 10_000
    rows += [
        _comment(rng, "zz1", "uw0", "t3_uw0", "programming", t, "alice", "Is &amp;nbsp; rendered as &lt;b&gt;?"),
        _comment(rng, "zz2", "uw0", "t1_zz1", "programming", t + 1, "AutoModerator", "Please read the rules."),
        _comment(rng, "zz3", "uw0", "t1_zz1", "programming", t + 2, "bob", "&gt; rendered\r\n\r\nNo, it's escaped."),
        _comment(rng, "zz4", "uw0", "t1_zz3", "programming", t + 3, "alice", "Thanks &amp; cheers!"),
        _comment(rng, "zz5", "uw0", "t1_zz3", "programming", t + 4, "LinkFixerBot", "Fixed your link."),
        _comment(rng, "zz6", "uw0", "t1_gone", "programming", t + 5, "carol", "Replying to a lost comment."),
        _comment(rng, "zz7", "uw0", "t1_zz8", "programming", t + 6, "dave", "Cycle one."),
        _comment(rng, "zz8", "uw0", "t1_zz7", "programming", t + 7, "erin", "Cycle two."),
    ]
    for row in rows[-8:]:
        row["score"] = 3
    comments = directory / "reddit" / "RC_2006-01.zst"
    write_ndjson_zst(comments, rows, extra_lines=[b'{"id": "broken", "body": "cut off'])
    links = sorted({str(r["link_id"])[3:] for r in rows})
    submissions = [{"id": link, "author": f"user{i}", "title": f"Thread {link}: {_sentence(rng)}",
                    "selftext": "" if i % 3 else "Discuss &amp; share.", "score": 5, "created_utc": BASE_TIME - 100,
                    "subreddit": "programming" if link == "uw0" else "reddit.com", "num_comments": 0}
                   for i, link in enumerate(links[: len(links) // 2])]
    write_ndjson_zst(directory / "reddit" / "RS_2006-01.zst", submissions)
    return [comments, directory / "reddit" / "RS_2006-01.zst"]


DAILY = [
    ["Hello , how are you today ?", "I'm fine , thanks . And you ?", "Not bad . Let ' s go for a walk ."],
    ["Can you help me with this box ?", "Sure . Where do you want it ?", "On the table , please .", "Done !"],
    ["Did you see the game last night ?", "No , I was working late ."],
    ["What time is it ?"],
]


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():  # a fixed timestamp: the same bytes on every run
            archive.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data,
                             compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def sample_dailydialog(directory: Path) -> Path:
    """``daily_dialog.zip`` -> ``ijcnlp_dailydialog/<split>.zip`` -> ``<split>/dialogues_<split>.txt``."""
    outer: dict[str, bytes] = {}
    for split, dialogues in (("train", DAILY[:2]), ("test", DAILY[2:])):
        text = "".join(" __eou__ ".join(d) + " __eou__\n" for d in dialogues)
        acts = "".join(" ".join("1" for _ in d) + " \n" for d in dialogues)
        outer[f"ijcnlp_dailydialog/{split}.zip"] = _zip_bytes({
            f"{split}/dialogues_{split}.txt": text.encode(),
            f"{split}/dialogues_act_{split}.txt": acts.encode(),
            f"{split}/dialogues_emotion_{split}.txt": acts.replace("1", "0").encode(),
        })
    path = directory / "dailydialog" / "daily_dialog.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_zip_bytes(outer))
    return path


def sample_ubuntu(directory: Path) -> list[Path]:
    """``dialogues.json`` (array, speakers dropped) and ``ubuntu_v2.zip`` with ``train.csv``."""
    folder = directory / "ubuntu"
    folder.mkdir(parents=True, exist_ok=True)
    items = [
        {"dialogue_id": "3/1.tsv", "timestamp": "2006-01-02T10:00:00.000Z",
         "text": "how do I mount a usb stick?\nit should mount itself, check dmesg\nthanks, dmesg says sdb1"},
        {"dialogue_id": "3/2.tsv", "timestamp": "2006-01-03T11:00:00.000Z",
         "text": "anyone around?\nyes\nmy wifi drops every hour\ntry the newer driver from the backports"},
        {"dialogue_id": "3/3.tsv", "timestamp": "2006-01-04T12:00:00.000Z", "text": "hello?"},
    ]
    json_path = folder / "dialogues.json"
    json_path.write_text(json.dumps(items, indent=4), encoding="utf-8")
    rows = io.StringIO()
    writer = csv.writer(rows)
    writer.writerow(["Context", "Utterance", "Label"])
    writer.writerow(["how do i instal vim ? __eou__ __eot__ sudo apt-get instal vim __eou__ __eot__",
                     "thank , that work __eou__", "1"])
    writer.writerow(["my sound be gone __eou__ after the upgrad __eou__ __eot__ check alsamix __eou__ __eot__",
                     "nice weather __eou__", "0"])
    zip_path = folder / "ubuntu_v2.zip"
    zip_path.write_bytes(_zip_bytes({"data/train.csv": rows.getvalue().encode()}))
    return [json_path, zip_path]


def write_sample_inputs(directory: Path) -> list[str]:
    """Write every sample input under ``directory``; return their paths (what the flow reads)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [*sample_reddit(directory), sample_dailydialog(directory), *sample_ubuntu(directory)]
    return [str(p) for p in paths]
