"""docs/cost.md from ``corpus_cost.py``'s measurements: the tables and the LLaMA-1 projection.

Kept apart from the measuring script so the projection's arithmetic and its stated sizes can be
read (and tested) without running anything. Every input size below names where it comes from;
"assumed" marks a figure no source publishes.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

GB, TB = 1e9, 1e12
#: LLaMA-1 table 1 (Touvron et al. 2023): disk size of each source as used for training (processed text).
LLAMA_DISK = {"commoncrawl": 3.3 * TB, "c4": 783 * GB, "github": 328 * GB, "wikipedia": 83 * GB,
              "books": 85 * GB, "arxiv": 92 * GB, "stackexchange": 78 * GB}
#: Raw input each source flow reads to make it (bytes as distributed), and where the figure comes from.
INPUTS: dict[str, tuple[float, str]] = {
    "commoncrawl": (5 * 8 * TB, "five crawls of WET, ~8 TB of gzip each: cc_net (Wenzek et al. 2019, section 3) gives "
                                "20-30 TB of plain text per snapshot, WET gzip packs text ~3x (assumed)"),
    "c4": (305 * GB, "allenai/c4 `en` as released, 305 GB of json.gz (Hugging Face dataset card)"),
    "github": (1.0 * TB, "BigQuery github_repos contents exported as json.gz (assumed: no published size; LLaMA "
                         "kept 328 GB of it)"),
    "wikipedia": (60 * GB, "20 languages' pages-articles-multistream dumps of 2022-06/08, ~60 GB of bz2 "
                           "(assumed from dumps.wikimedia.org listings: enwiki alone ~20 GB)"),
    "books": (113 * GB, "Gutenberg (PG-19: 11.7 GB, Rae et al. 2019) + Books3 (101 GB, Gao et al. 2020, the Pile "
                        "paper, table 1) as .txt"),
    "arxiv": (2.8 * TB, "arXiv bulk source tars on S3: the PDF and source sets together are ~5.6 TB (arXiv bulk-data "
                        "help page, 2023-03); the source half assumed"),
    "stackexchange": (92 * GB, "the Internet Archive `stackexchange` collection's site .7z files (assumed ~92 GB, "
                               "2023)"),
}
PILE_ZST = (460 * GB, "the Pile v1 train shards (30 jsonl.zst of ~15 GB; 825 GiB of text, Gao et al. 2020)")
CLUSTER_CORES = 64 * 32
MACHINE_CORES = 2


def _fmt_bytes(n: float) -> str:
    for unit, size in (("TB", TB), ("GB", GB), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n / 1e3:.0f} KB"


def _by(results: dict[str, Any], size: str) -> dict[str, dict[str, Any]]:
    return {s["stage"]: s for s in results["stages"] if s["size"] == size}


def marginal(results: dict[str, Any]) -> dict[str, float]:
    """Per stage: CPU seconds per input GB between the 1/4 and the full size (the run's fixed cost, Prefect's
    flow run, the pool's start, imports, left out), the figure a dump of any size adds per GB."""
    quarter, full = _by(results, "quarter"), _by(results, "full")
    found = {}
    for name, f in full.items():
        q = quarter.get(name)
        if q is not None and f["input_bytes"] > q["input_bytes"]:
            found[name] = max(0.0, (f["cpu_s"] - q["cpu_s"]) / ((f["input_bytes"] - q["input_bytes"]) / GB))
    return found


def per_gb(results: dict[str, Any]) -> dict[str, float]:
    """The CPU per input GB projected: the full size's, its run's fixed cost included. An upper bound: the
    marginal figure leaves that cost out, but below ~100 MB a shared machine's noise swamps the difference
    it is computed from (it is shown beside, in the linearity table)."""
    return {name: s["cpu_per_in_gb"] for name, s in (_by(results, "full") or _by(results, "quarter")).items()}


def measurement_table(results: dict[str, Any]) -> list[str]:
    """One row per stage and size."""
    lines = ["| stage | size | input | output | CPU s | wall s | CPU s / input GB | CPU s / output GB | "
             "peak RSS (process) | Prefect server RSS | scratch high-water |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in results["stages"]:
        lines.append(f"| {s['stage']} | {s['size']} | {_fmt_bytes(s['input_bytes'])} | {_fmt_bytes(s['output_bytes'])} | "
                     f"{s['cpu_s']:.1f} | {s['wall_s']:.1f} | {s['cpu_per_in_gb']:.0f} | {s['cpu_per_out_gb']:.0f} | "
                     f"{s['peak_rss'] / 1e6:.0f} MB ({s['peak_rss_role']}) | {s['server_rss'] / 1e6:.0f} MB | "
                     f"{_fmt_bytes(s['scratch_bytes'])} |")
    return lines


def linearity_table(results: dict[str, Any]) -> list[str]:
    quarter, full = _by(results, "quarter"), _by(results, "full")
    margins = marginal(results)
    lines = ["| stage | CPU s / input GB at 1/4 | at full | full / quarter | within 10% | marginal CPU s / GB "
             "| fixed CPU s implied |", "|---|---|---|---|---|---|---|"]
    for name, f in full.items():
        q = quarter.get(name)
        if q is None or not q["cpu_per_in_gb"]:
            continue
        ratio = f["cpu_per_in_gb"] / q["cpu_per_in_gb"]
        fixed = q["cpu_s"] - q["input_bytes"] / GB * margins.get(name, 0)  # cost = fixed + marginal x size
        lines.append(f"| {name} | {q['cpu_per_in_gb']:.0f} | {f['cpu_per_in_gb']:.0f} | {ratio:.2f} | "
                     f"{'yes' if abs(ratio - 1) <= 0.10 else 'no'} | {margins.get(name, 0):.0f} | {fixed:.1f} |")
    return lines


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def linearity_verdicts(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per source of ``corpus_linearity``'s interleaved rounds: the medians' CPU per GB at 1/4 and full, their
    raw ratio (the issue's figure), the marginal rate between them, the fixed cost and the ratio net of it (1.00
    for a cost that is fixed plus proportional to the input).

    The fixed cost is ``2 x one - two`` (``two``: twice ``one``'s input, grown as the source's input grows),
    less the marginal rate times the bytes by which ``two`` is not exactly twice ``one``: what a run costs with
    no input at all, whatever each input file costs on its own."""
    found: dict[str, dict[str, float]] = {}
    for source in dict.fromkeys(row["stage"] for row in rows):
        runs = {size: [r for r in rows if r["stage"] == source and r["size"] == size]
                for size in ("one", "two", "quarter", "full")}
        if not all(runs.values()):
            continue
        cpu = {size: _median([r["cpu_s"] for r in found_runs]) for size, found_runs in runs.items()}
        size_gb = {size: found_runs[0]["input_bytes"] / GB for size, found_runs in runs.items()}
        quarter, full = cpu["quarter"] / size_gb["quarter"], cpu["full"] / size_gb["full"]
        rate = (cpu["full"] - cpu["quarter"]) / (size_gb["full"] - size_gb["quarter"])
        fixed = 2 * cpu["one"] - cpu["two"] + rate * (size_gb["two"] - 2 * size_gb["one"])
        net_quarter = (cpu["quarter"] - fixed) / size_gb["quarter"]
        spread = max(_spread([r["cpu_s"] for r in runs[size]]) for size in ("quarter", "full"))
        found[source] = {"quarter": quarter, "full": full, "ratio": full / quarter, "marginal": rate,
                         "fixed": fixed, "net_ratio": (cpu["full"] - fixed) / size_gb["full"] / net_quarter
                         if net_quarter > 0 else float("inf"),
                         "rounds": float(len(runs["full"])), "spread": spread,
                         "quarter_bytes": float(runs["quarter"][0]["input_bytes"]),
                         "full_bytes": float(runs["full"][0]["input_bytes"]),
                         "probe_quarter": _median([r.get("calibration_ms", 0.0) for r in runs["quarter"]]),
                         "probe_full": _median([r.get("calibration_ms", 0.0) for r in runs["full"]])}
    return found


def _spread(values: list[float]) -> float:
    """The largest run over the smallest, less one: how far the same work moved between its runs."""
    return max(values) / min(values) - 1 if min(values) > 0 else 0.0


def linear(verdict: dict[str, float], tolerance: float = 0.10) -> bool:
    """The goal's verdict on one source: its cost per GB, net of the fixed cost, within ``tolerance``."""
    return abs(verdict["net_ratio"] - 1) <= tolerance


def interleaved_table(rows: list[dict[str, Any]]) -> list[str]:
    """The linearity table of the interleaved rounds: one row per source."""
    lines = ["| source | rounds | input at 1/4 / full | CPU s / GB at 1/4 (median) | at full (median) | full / 1/4 | fixed CPU s (2 x one - two) "
             "| marginal CPU s / GB | full / 1/4 net of the fixed cost | linear (within 10%) | largest move between "
             "runs of one size | speed probe CPU ms, 1/4 / full |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for source, v in linearity_verdicts(rows).items():
        lines.append(f"| {source} | {v['rounds']:.0f} | {_fmt_bytes(v['quarter_bytes'])} / {_fmt_bytes(v['full_bytes'])} "
                     f"| {v['quarter']:.0f} | {v['full']:.0f} | {v['ratio']:.2f} | "
                     f"{v['fixed']:.1f} | {v['marginal']:.0f} | {v['net_ratio']:.2f} | "
                     f"{'yes' if linear(v) else 'no'} | {v['spread']:.0%} | {v['probe_quarter']:.1f} / "
                     f"{v['probe_full']:.1f} |")
    return lines


def projection(results: dict[str, Any]) -> tuple[list[str], dict[str, float]]:
    """Core-hours per stage for the LLaMA-1 corpus, from the full size's CPU per GB (:func:`per_gb`)."""
    rates = per_gb(results)
    corpus = sum(LLAMA_DISK.values())
    rows, hours = [], {}
    for name, (size, basis) in INPUTS.items():
        if name not in rates:
            rows.append(f"| {name} | {_fmt_bytes(size)} | {basis} | not measured | - |")
            continue
        hours[name] = rates[name] * size / GB / 3600
        rows.append(f"| {name} | {_fmt_bytes(size)} | {basis} | {rates[name]:.0f} CPU-s per input GB | "
                    f"{hours[name]:,.0f} |")
    if "pile_index" in rates:
        hours["pile_index"] = rates["pile_index"] * PILE_ZST[0] / GB / 3600
        rows.append(f"| pile_index | {_fmt_bytes(PILE_ZST[0])} | {PILE_ZST[1]} | "
                    f"{rates['pile_index']:.0f} CPU-s per input GB | {hours['pile_index']:,.0f} |")
    for name in ("dedup", "labels", "tokenize"):
        if name in rates:
            hours[name] = rates[name] * corpus / GB / 3600
            rows.append(f"| {name} | {_fmt_bytes(corpus)} | the corpus of LLaMA table 1 (sum of its disk sizes) | "
                        f"{rates[name]:.0f} CPU-s per text GB | {hours[name]:,.0f} |")
    head = ["| stage | input | input size: source | measured | core-hours |", "|---|---|---|---|---|"]
    return head + rows, hours


def scratch_and_memory(results: dict[str, Any]) -> list[str]:
    full = _by(results, "full") or _by(results, "quarter")
    worker = max((s["rss_by_role"].get("worker", 0) for s in full.values()), default=0)
    flow = max((s["rss_by_role"].get("flow", 0) for s in full.values()), default=0)
    server = max((s["server_rss"] for s in full.values()), default=0)
    forkserver = max((s["rss_by_role"].get("forkserver", 0) for s in full.values()), default=0)
    preload = f"; the fork server the workers start from (it preloads their modules) {forkserver / 1e6:.0f} MB" \
        if forkserver else ""
    out_ratio = {n: s["scratch_bytes"] / s["output_bytes"] for n, s in full.items() if s["output_bytes"]}
    in_ratio = {n: s["scratch_bytes"] / s["input_bytes"] for n, s in full.items() if s["input_bytes"]}
    worst_out = max(out_ratio, key=lambda n: out_ratio[n], default="-")
    worst_in = max(in_ratio, key=lambda n: in_ratio[n], default="-")
    sizes = {n: v for n, (v, _) in INPUTS.items()} | {n: sum(LLAMA_DISK.values()) for n in ("dedup", "labels", "tokenize")}
    need = max((in_ratio[n] * sizes[n] for n in in_ratio if n in sizes), default=0.0)
    return [f"- peak RSS per worker process: {worker / 1e6:.0f} MB; the flow process (it plans, joins, writes the "
            f"manifest) {flow / 1e6:.0f} MB; the Prefect API server {server / 1e6:.0f} MB (one per run, not per worker)"
            f"{preload}.",
            f"- scratch (the disk's high-water mark above what it held when the stage began): at most "
            f"{out_ratio.get(worst_out, 0):.2f}x a stage's output ({worst_out}), at most {in_ratio.get(worst_in, 0):.2f}x "
            f"its input ({worst_in}); the output written is part of it. Projected on the LLaMA-1 inputs, the largest "
            f"stage needs {_fmt_bytes(need)} free while it runs (its output included)."]


def largest_process(stage: dict[str, Any]) -> tuple[str, int]:
    """The role and peak RSS of a stage row's largest process, the Prefect API server included."""
    found = [*stage.get("rss_by_role", {}).items(), (stage.get("peak_rss_role") or "process", stage["peak_rss"]),
             ("prefect-server", stage["server_rss"])]
    return max(found, key=lambda item: item[1])


def linearity_section(results: dict[str, Any]) -> list[str]:
    """The linearity tables: the interleaved rounds' (the verdict) when measured, then the single pass's."""
    rows = results.get("linearity") or []
    lines = ["## Linearity (CPU per input GB, full size over 1/4)", ""]
    if rows:
        lines += ["Each source flow on its 1/4 and full input interleaved, each full run between two 1/4 runs "
                  "(quarter, full, quarter: a drift of the machine moves both sizes alike), medians; then on a tiny "
                  "input (`one`) and on twice it (`two`: twice the files, or for Wikipedia its three dumps twice as "
                  "large, as the source's input grows) for the run's fixed cost, `2 x one - two` (Prefect's flow run, "
                  "the pool's start, the model loads; a file's own cost is not in it), taken from "
                  "both sizes for the net ratio: 1.00 for a cost that is a fixed part plus a part proportional to the "
                  "input, 4 for one quadratic in it. The speed probe (benchmarks/calibration.py, sampled every "
                  "2 s while a run goes) shows how fast the machine was during each size's runs. arXiv's rounds run "
                  "at 4x the pass's sizes (`ROUNDS_SCALE` in benchmarks/corpus_cost.py): at 64 MB, one tar, its 1/4 "
                  "run is 60% fixed cost and its runs move +-13%, too little work to resolve 10%. "
                  "`corpus_cost.py --linearity` (benchmarks/corpus_linearity.py).", "",
                  *interleaved_table(rows), "",
                  "The single pass below measured the full sizes and the 1/4 sizes at different times (half an hour "
                  "to hours apart); its ratios carry the machine's drift between them and, for the small sources, "
                  "the fixed cost.", ""]
    return [*lines, *linearity_table(results), ""]


def recorded_quarter(recorded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per stage, the doc's figure at 1/4 size: the median of every 1/4 run it holds on the 1/4 input (the single
    pass's, a source's interleaved linearity rounds' and the passes of the checks kept under ``--work`` when it
    was rendered), CPU per GB and speed probe alike. One run of a
    stage on this VM is +-20% (the machine's speed moves within a minute); the rounds' median is not."""
    runs = [s for s in recorded["stages"] if s["size"] == "quarter"]
    byte_of = {s["stage"]: s["input_bytes"] for s in runs}
    more = [*(recorded.get("linearity") or []), *(recorded.get("check_runs") or [])]
    runs += [r for r in more if r["size"] == "quarter" and r["input_bytes"] == byte_of.get(r["stage"])]
    found: dict[str, dict[str, Any]] = {}
    for name in byte_of:
        mine = [r for r in runs if r["stage"] == name]
        probes = [r.get("calibration_ms") or 0.0 for r in mine]
        per_gb = [r["cpu_s"] / (r["input_bytes"] / GB) for r in mine]
        found[name] = {"stage": name, "runs": len(mine), "probes": probes, "cpu_per_in_gb": statistics.median(per_gb),
                       "lowest": min(per_gb), "highest": max(per_gb),
                       "calibration_ms": statistics.median(probes) if all(probes) else 0.0}
    return found


def check_reference_section(results: dict[str, Any]) -> list[str]:
    """What ``--check`` compares with, per stage: the median of every 1/4 run on the 1/4 input, how many runs and
    their spread, so that a reader sees the figure a re-run is held to and how much one run of it moves."""
    reference = recorded_quarter(results)
    if not reference:
        return []
    lines = ["## What `--check` compares with", "",
             "Per stage, every 1/4 run on the 1/4 input: the single pass's, a source's interleaved linearity rounds' "
             f"and {_check_passes(results)} `--check` pass(es) kept under the run's `--work`. A check's median of its "
             "passes is held to this median within 15%, both at one machine speed (the median speed probe of the "
             "runs here, and of the check's).", "",
             "| stage | 1/4 runs | CPU s / input GB (median) | lowest - highest | speed probe (median ms) |",
             "|---|---|---|---|---|"]
    for name, ref in reference.items():
        probe = f"{ref['calibration_ms']:.1f}" if ref["calibration_ms"] else "-"
        lines.append(f"| {name} | {ref['runs']} | {ref['cpu_per_in_gb']:.0f} | {ref['lowest']:.0f} - "
                     f"{ref['highest']:.0f} | {probe} |")
    return [*lines, ""]


def _sizes_run(results: dict[str, Any]) -> str:
    """Which sizes the figures come from: both, or only the 1/4 size where a run was cut short (``--render``)."""
    sizes = results["sizes"]

    def listed(size: str) -> str:
        return ", ".join(f"{k} {_fmt_bytes(v)}" for k, v in sizes[size].items())

    if _by(results, "full") or not _by(results, "quarter"):
        return f"Sizes run (bytes of input as stored): {listed('full')} at full, a quarter of each at 1/4."
    return (f"Sizes run (bytes of input as stored): {listed('quarter')} (the 1/4 size; the full size, {listed('full')}, "
            "is not measured yet: this file was rendered from a run cut short, and every figure below, the projection "
            "included, is the 1/4 size's; `corpus_cost.py --resume` goes on with the full size).")


def _check_passes(results: dict[str, Any]) -> int:
    """How many ``--check`` passes the doc's 1/4 figures take in (benchmarks/corpus_cost.py ``keep_check_pass``)."""
    return len({(r.get("date"), r.get("check_pass")) for r in results.get("check_runs") or []})


def render(results: dict[str, Any]) -> str:
    """docs/cost.md: what was measured, the projection, the assumptions, and the figures for ``--check``."""
    table, hours = projection(results)
    total = sum(hours.values())
    eff = results.get("efficiency") or {}
    efficiency = float(eff.get("efficiency") or 0.90)
    machine_days = total / (MACHINE_CORES * efficiency) / 24
    cluster_hours = total / (CLUSTER_CORES * efficiency)
    dominant = max(hours, key=lambda k: hours[k]) if hours else "-"
    lines = [
        "# What the LLaMA-1 corpus costs (written by `benchmarks/corpus_cost.py`)",
        "",
        f"Measured {results['date']} on this {results['cpus']}-core machine (shared: load average "
        f"{results['load'][0]:.1f} {results.get('load_at', 'at the end')}), {results['workers']} workers per flow, default process runner. Inputs: "
        "`benchmarks/corpus_inputs/` (each module states its format, length law and duplicate rates, and their "
        "sources). " + _sizes_run(results) + " "
        "Re-measure with `python benchmarks/corpus_cost.py --check --check-rounds 3 --work DIR` (1/4 size, three "
        "passes, the sources' order reversed in the second; exits 1 when a stage's median CPU per GB is more than "
        "15% off this file's median 1/4 run (the single pass's, the interleaved rounds' and "
        f"{_check_passes(results)} check pass(es) kept under its `--work`) once both are put at one "
        "machine speed by `benchmarks/calibration.py`'s probe, sampled while every stage runs).",
        "",
        "## Headline",
        "",
        "| | LLaMA-1 corpus (4.7 TB of text from ~" + _fmt_bytes(sum(v for v, _ in INPUTS.values())) + " of dumps) |",
        "|---|---|",
        f"| CPU | {total:,.0f} core-hours; dominant stage: {dominant} ({hours.get(dominant, 0) / max(total, 1e-9):.0%}) |",
        f"| one 2-core machine | {machine_days:,.0f} days |",
        f"| 64 nodes x 32 cores (Dask/Ray/SLURM) | {cluster_hours:,.1f} hours at {efficiency:.2f} per-worker "
        f"efficiency ({'measured here' if eff else 'benchmarks/scaling.py'}) |",
        f"| peak RSS of any process | {max((largest_process(s)[1] for s in results['stages']), default=0) / 1e6:,.0f} MB |",
        "",
        "## Projection: core-hours per stage",
        "",
        *table,
        "",
        f"Total {total:,.0f} core-hours. One 2-core machine: {machine_days:,.0f} days. A 64-node x 32-core cluster "
        f"(2,048 cores) through the Dask, Ray or SLURM paths (`--runner dask|ray`, `kinda slurm`): "
        f"{cluster_hours:,.1f} hours, at a per-worker efficiency of {efficiency:.2f}"
        + (f" (measured: {eff['speedup']:.2f}x on 2 workers vs 1, {results['sizes']['quarter'].get('c4', 0) / 1e6:.0f} "
           f"MB of C4 in {eff.get('files', '?')} files, best of 2 interleaved rounds, load {eff['load']:.1f})" if eff
           else " (benchmarks/scaling.py's measured 1.80x on 2 Dask workers vs 1, idle machine, README benchmarks "
                "table; this run did not measure it)")
        + ".",
        "",
        "## Memory and scratch",
        "",
        *scratch_and_memory(results),
        "",
        *linearity_section(results),
        *check_reference_section(results),
        "## Every stage measured",
        "",
        *measurement_table(results),
        "",
        "## Assumptions",
        "",
        "- A stage's CPU per input GB is the full size's, its run's fixed cost (Prefect's flow run, the worker pool's "
        "start, the numba and fastText loads) included: an upper bound, far above the figure of a multi-GB run "
        "when the full size is only megabytes. The marginal figure (full minus 1/4 over the bytes between them) "
        "leaves that cost out, and the fixed cost it implies (the 1/4 run's CPU less its bytes at the marginal "
        "rate) is in the linearity table; both are unreliable below ~100 MB on a shared machine. A fixed cost "
        "weighs more on the 1/4 figure, so a full/quarter ratio below 1 is that cost, not a gain with size; "
        "super-linear growth would show as a ratio above 1 and a negative fixed cost.",
        "- Input sizes: the sources named in the projection table; \"assumed\" marks a figure no source publishes.",
        "- The stages after the sources read the corpus of LLaMA table 1 (its disk sizes, 4.7 TB), i.e. the "
        "sources' kept text; the Pile index reads the Pile's compressed shards.",
        "- The generated inputs carry the duplicate rates and length laws their modules state; real dumps with "
        "other rates change dedup's output, not (much) its CPU per GB.",
        "- A cluster keeps the measured 1-vs-2-worker efficiency per worker (tasks are per input file, page range or "
        "shard, with no shared state but the output root); the serial steps (exact dedup, finalize, the "
        "manifest) are in the measured CPU but not spread over the cluster (`benchmarks/scaling.py`: 11% of wall "
        "on 2 workers).",
        "- The machine was shared with other work while measuring; CPU time (not wall) is the figure projected.",
        "",
        f"<!-- {MARKER}",
        json.dumps(results, indent=None, sort_keys=True),
        "-->",
        "",
    ]
    return "\n".join(lines)


MARKER = "corpus_cost-results"
