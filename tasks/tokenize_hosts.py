"""Tokenize a dataset across hosts from one machine: run each host's share, then collect.

Each host runs the ordinary single-host command with ``--host-count N --host-index i`` (its
files: :func:`sources.formats.datasets_text.host_of`) and writes tensors, ``metadata.json`` and its own
manifest to a root on its local disk. The launcher reaches a host through a command prefix
(``ssh {host}`` by default; ``sh -c`` runs the "hosts" as local processes, as the tests do), so
nothing but a shell and the repository is needed on a host. Collecting reads each host's
``metadata.json`` back through the same prefix (``cat``), checks that the shares fit together
(one tokenizer, one setting, every file on the host it hashes to, no file twice) and records
every host's tensor files in the launcher's manifest, ``tensor_root = '<host>:<root>'``.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from core.atomic import write_json_atomic
from core.manifest import InputRecord
from sources.formats.datasets_text import host_of

#: A host name as a folder name under ``<out>/hosts/``.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class HostPlan:
    """One host of a launch: its name, index, output root on that host and how to reach it."""

    name: str
    index: int
    count: int
    root: str
    remote: str

    @property
    def folder(self) -> str:
        """The host's name, safe as one path component."""
        return _UNSAFE.sub("_", self.name).strip("._") or f"host-{self.index}"

    def argv(self, command: str) -> list[str]:
        """The command line that runs ``command`` (a shell string) on this host."""
        prefix = shlex.split(self.remote.format(host=self.name, index=self.index)) if self.remote.strip() else []
        return [*prefix, command] if prefix else ["sh", "-c", command]


def host_command(plan: HostPlan, python: str, workdir: str, settings: dict[str, Any]) -> str:
    """The shell command of one host's share: the single-host CLI with every setting spelled out.

    Settings go as ``--set key=<json>`` (JSON is YAML), so a host needs no copy of the
    launcher's config file and gets exactly the launcher's values.
    """
    parts = [python, "-m", "flows.tokenization"]
    for key, value in sorted(settings.items()):
        parts += ["--set", f"{key}={json.dumps(value)}"]
    parts += ["--host-count", str(plan.count), "--host-index", str(plan.index), "--out", plan.root]
    return f"cd {shlex.quote(workdir)} && {shlex.join(parts)}"


@task(name="run-host", cache_policy=NO_CACHE, task_run_name="host {plan.name}")
def run_host_task(plan: HostPlan, command: str, log_path: Path) -> dict[str, Any]:
    """Run one host's share to the end; its output goes to ``log_path`` (the launcher keeps it)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        try:
            code = subprocess.run(plan.argv(command), stdout=log, stderr=subprocess.STDOUT, check=False).returncode
        except OSError as exc:  # no ssh, say: the host's row says so, the other hosts go on
            log.write(f"cannot start {plan.argv(command)[0]!r}: {exc}\n".encode())
            code = 127
    return {"host": plan.name, "index": plan.index, "returncode": code, "log": str(log_path)}


@task(name="fetch-host-metadata", cache_policy=NO_CACHE, task_run_name="metadata {plan.name}")
def fetch_metadata_task(plan: HostPlan, timeout_s: float = 600) -> dict[str, Any]:
    """A host's ``metadata.json`` (read with ``cat`` through the host's prefix), or why not."""
    command = f"cat {shlex.quote(plan.root.rstrip('/') + '/metadata.json')}"
    try:
        done = subprocess.run(plan.argv(command), capture_output=True, check=False, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"{plan.name}: cannot read {plan.root}/metadata.json: {exc}"}
    if done.returncode != 0:
        return {"error": f"{plan.name}: cannot read {plan.root}/metadata.json: "
                         f"{done.stderr.decode('utf-8', 'replace').strip()[:300]}"}
    try:
        metadata = json.loads(done.stdout)
    except ValueError as exc:
        return {"error": f"{plan.name}: {plan.root}/metadata.json is not JSON: {exc}"}
    return {"metadata": metadata} if isinstance(metadata, dict) else {"error": f"{plan.name}: metadata not an object"}


def check_shares(plans: list[HostPlan], metadata: dict[str, dict[str, Any]]) -> list[str]:
    """Why the hosts' outputs do not fit together (empty: they do)."""
    problems: list[str] = []
    owner: dict[str, str] = {}
    reference: tuple[Any, Any] | None = None
    for plan in plans:
        meta = metadata.get(plan.name)
        if meta is None:
            continue
        shares = meta.get("hosts", {})
        if shares.get("count") != plan.count or shares.get("index") != plan.index:
            problems.append(f"{plan.name}: its run was host {shares.get('index')} of {shares.get('count')}, "
                            f"not {plan.index} of {plan.count}")
        this = (meta.get("tokenizer", {}).get("hash"), meta.get("settings"))
        if reference is None:
            reference = this
        elif this != reference:
            problems.append(f"{plan.name}: tokenizer or settings differ from the first host's")
        for shard in meta.get("shards", []):
            rel = shard["input"]
            if host_of(rel, plan.count) != plan.index:
                problems.append(f"{plan.name}: {rel} belongs to host {host_of(rel, plan.count)}")
            if rel in owner:
                problems.append(f"{rel} is on both {owner[rel]} and {plan.name}")
            owner[rel] = plan.name
    return problems


def input_records(plan: HostPlan, meta: dict[str, Any], config_hash: str) -> list[InputRecord]:
    """The manifest's input rows of one host: every file, kept/dropped counts and drops by reason."""
    location = f"{plan.name}:{plan.root}"
    source = meta.get("dataset", {}).get("source", "dataset")
    rows = [InputRecord(input_key=f"{source}/{s['input']}", source=s["source"], location=location,
                        language=s.get("language"), config_hash=config_hash, sha256=s.get("input_sha256"),
                        records_in=int(s.get("records_in", 0)), docs_kept=int(s.get("docs_kept", 0)),
                        drops=list(s.get("drops", [])))
            for s in meta.get("shards", [])]
    rows += [InputRecord(input_key=f"{source}/{f['input']}", source=source, location=location, language=None,
                         config_hash=config_hash, status="failed", error=f["error"])
             for f in meta.get("failed", [])]
    return rows


def tensor_records(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """A host's shards as the tokenize flow's records (what :func:`loader.tensor_manifest.record_tensors` writes)."""
    token_hash = meta.get("tokenizer", {}).get("hash", "")
    return [{**s, "status": "done", "tokenizer_hash": token_hash} for s in meta.get("shards", [])]


def save_collected(out: Path, plan: HostPlan, meta: dict[str, Any]) -> Path:
    """Keep the launcher's copy of a host's metadata: ``<out>/hosts/<host>/metadata.json``."""
    path = out / "hosts" / plan.folder / "metadata.json"
    write_json_atomic(path, meta)
    return path


def host_summary(plan: HostPlan, meta: dict[str, Any] | None, error: str | None) -> dict[str, Any]:
    """One row of ``hosts.json`` and of the run's table artifact."""
    totals = (meta or {}).get("totals", {})
    return {"host": plan.name, "index": plan.index, "root": plan.root,
            "files": len((meta or {}).get("shards", [])), "failed_files": len((meta or {}).get("failed", [])),
            "train_tokens": totals.get("train", {}).get("tokens", 0),
            "holdout_tokens": totals.get("holdout", {}).get("tokens", 0),
            "train_docs": totals.get("train", {}).get("docs", 0),
            "holdout_docs": totals.get("holdout", {}).get("docs", 0), "error": error}


def host_error(plan: HostPlan, fetched: dict[str, Any], ran: dict[str, Any] | None) -> str | None:
    """Why a host's row is an error: its run's exit status when it failed, else why its metadata is missing."""
    if ran is not None and ran["returncode"] != 0:
        return f"{plan.name}: exit status {ran['returncode']} (log: {ran['log']})"
    error: str | None = fetched.get("error")
    return error


def hosts_document(rows: list[dict[str, Any]], problems: list[str]) -> dict[str, Any]:
    """``hosts.json``: every host's row, the problems of the shares, and the totals over the hosts."""
    return {"hosts": rows, "problems": problems,
            "totals": {key: sum(r[key] for r in rows) for key in
                       ("files", "failed_files", "train_tokens", "holdout_tokens", "train_docs", "holdout_docs")}}


def hosts_complete(doc: dict[str, Any]) -> bool:
    """Every host ran, its shares fit and no file failed (else the launch is ``partial``)."""
    return not doc["problems"] and all(r["error"] is None and not r["failed_files"] for r in doc["hosts"])
