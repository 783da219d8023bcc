"""Membership classes and labels: split each final document shard into its classes, store each document once.

=================  =====================================================  ============
class              documents                                              labels
=================  =====================================================  ============
``llama``          LLaMA-source documents without a reference match       G1 G2 G3
``llama-in-ref``   LLaMA-source documents with an exact/near Pile match   G1 G2
``extension``      documents of an extension source                       G2
=================  =====================================================  ============

Duplicates found by ``flows.dedup`` (``duplicate_of`` set in the dedup attributes) belong to no
set; documents of a source listed in neither list are left out and counted.

Extension sources never reach G3, whatever their reference matches: G3 is "LLaMA minus the Pile"
and several extensions *are* Pile subsets (``pubmed_central`` = PubMed Central,
``pubmed_abstracts`` = PubMed Abstracts, ``dm_math`` = DM Mathematics; ``stack_code`` overlaps the
Pile's Github). Those three may not be listed as LLaMA sources (:func:`check_rules`), so an
unmatched PubMed article cannot slip into G3 through a missed reference match. Their reference
matches are recorded (``flows.dedup``'s ``dedup-sources`` counts) and they stay in G2: the
extensions exist to add science to G.1, and matching the Pile is no reason to leave them out.
``reference_excludes`` is the one exception, for an extension that should add only what the Pile
lacks: ``{stack_code: [Github]}`` leaves a code file found in the Pile's GitHub subset out of every
set (class ``reference_excluded``, counted like a duplicate), as issue 13 asks ("dedup ... against
the Pile's GitHub subset"). G2 = G1 + the kept extension documents, each stored once.

One copy of each document: the class shards under ``labeled/<class>/<source>/<part>/`` are the
documents' final form, so once a ``docs/`` shard's documents are all in class shards (or
dropped as duplicates) it is *released* (:mod:`core.released`): deleted, with a record of where
its documents went. A shard holding documents of an unlisted source stays in ``docs/`` (it is
their only copy). The labels go into each class shard's Parquet metadata (``kinda.labels``) and
the manifest's ``shards.labels``.

Two more classes hold documents that belong to no set but stay stored, so that a changed setting
can bring them back without re-running a source: ``filtered`` (a document failing a threshold
over its signals, :mod:`dedupe.signal_filters`; counted per rule) and ``contaminated`` (a document
sharing an n-gram with an evaluation set, :mod:`dedupe.decontaminate`; left out by default).
Both are decided after the classes above: a duplicate stays a duplicate.

Re-labeling a released shard (a new threshold): its documents are read back, in their original
order, from the class shards its release record names (the record's ``order`` says which class
held each position, :func:`core.released.released_documents`); the new class shards are written
under ``_state/relabel/`` and moved into place by a roll-forward journal (``pending.json``), so a
crash at any point leaves either the old or the new copy of every document, never neither.
Only documents dropped unstored (duplicates, ``reference_excluded``) cannot come back: a setting
that would keep one of them asks for its source flow to run again.

This module is pure (no Prefect): :mod:`flows.label` runs :func:`label_shard` once per shard.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pyarrow.parquet as pq

from core.atomic import sha256_file, write_json_atomic
from core.document import Document
from core.layout import signals_attribute_path, slug
from core.markers import OUTPUTS, Marker
from core.released import (
    read_release,
    release_record,
    release_record_path,
    released_documents,
    released_intact,
    write_release,
)
from core.shards import ShardLimits, ShardWriter, read_documents
from dedupe.decontaminate import contaminated_ids, contamination_path
from dedupe.explain import attributes_path
from dedupe.priority import reference_excluded
from dedupe.signal_filters import FILTERED, Rule, failures

CONTAMINATED = "contaminated"
#: Stored classes and their labels; ``filtered`` and ``contaminated`` are stored in no set.
CLASS_LABELS: dict[str, list[str]] = {"llama": ["G1", "G2", "G3"], "llama-in-ref": ["G1", "G2"], "extension": ["G2"],
                                      CONTAMINATED: [], FILTERED: []}
LABELED = "labeled"
DUPLICATE = "duplicate"
UNLISTED = "unlisted_source"
REFERENCE_EXCLUDED = "reference_excluded"
#: Extension sources that are Pile (v1) subsets: never G3, so never LLaMA sources (:func:`check_rules`).
PILE_SUBSET_SOURCES: dict[str, str] = {"pubmed_central": "PubMed Central", "pubmed_abstracts": "PubMed Abstracts",
                                       "dm_math": "DM Mathematics"}


class LabelRules(Protocol):
    """What decides a document's class (``flows.label.LabelConfig`` and :class:`LabelJob` are such)."""

    @property
    def llama_sources(self) -> Sequence[str]: ...

    @property
    def extension_sources(self) -> Sequence[str]: ...

    @property
    def drop_duplicates(self) -> bool: ...

    @property
    def reference_excludes(self) -> Mapping[str, Sequence[str]]: ...


def check_rules(llama_sources: Sequence[str], extension_sources: Sequence[str],
                reference_excludes: Mapping[str, Sequence[str]]) -> None:
    """Refuse settings that would break the sets' definitions (raises ``ValueError``).

    A source in both lists would be G3 and extension at once; a Pile subset as a LLaMA source would
    put Pile documents into G3; ``reference_excludes`` may not name a LLaMA source (G.1 must not
    depend on the Pile: a LLaMA document with a Pile match is G1/G2, only not G3). An entry for a
    source not labeled in this run is harmless (it applies to no document).
    """
    both = sorted(set(llama_sources) & set(extension_sources))
    if both:
        raise ValueError(f"sources listed as both LLaMA and extension sources: {both}")
    pile = sorted(set(llama_sources) & set(PILE_SUBSET_SOURCES))
    if pile:
        raise ValueError(f"{pile} are Pile subsets ({', '.join(PILE_SUBSET_SOURCES[s] for s in pile)}): "
                         "list them as extension sources (G2), never as LLaMA sources (G3)")
    llama = sorted(set(reference_excludes) & set(llama_sources))
    if llama:
        raise ValueError(f"reference_excludes names LLaMA sources {llama}: a LLaMA document with a Pile match "
                         "stays in G1/G2 (it is only left out of G3); list extension sources only")


@dataclass(frozen=True)
class LabelJob:
    """Everything one shard's labeling needs besides the shard; small and picklable."""

    llama_sources: tuple[str, ...]
    extension_sources: tuple[str, ...]
    drop_duplicates: bool
    config_hash: str
    limits: ShardLimits
    require_dedup: bool = True
    release: bool = True
    #: extension source -> Pile subsets (``pile_set_name``) whose matches leave its documents out
    reference_excludes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: thresholds over the signals attribute (:func:`dedupe.signal_filters.parse_filters`); none: no filtering
    filters: tuple[Rule, ...] = ()
    #: documents the decontamination stage marked go to ``contaminated`` (no set)
    drop_contaminated: bool = True


def membership_class(source: str, attributes: dict[str, Any] | None, rules: LabelRules) -> str:
    """The class of one document, or the reason it is in no class (``duplicate``, ``unlisted_source``)."""
    if attributes is not None and rules.drop_duplicates and attributes.get("duplicate_of"):
        return DUPLICATE
    if source in rules.llama_sources:
        in_reference = attributes is not None and attributes.get("reference_kind") is not None
        return "llama-in-ref" if in_reference else "llama"
    if source in rules.extension_sources:  # G2 only, matched or not (module docstring)
        return REFERENCE_EXCLUDED if reference_excluded(source, attributes, rules.reference_excludes) else "extension"
    return UNLISTED


@dataclass
class LabelResult:
    """What labeling did for one document shard."""

    shard: str
    shards: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    released: dict[str, Any] | None = None
    error: str | None = None
    #: filter rule name -> documents failing it (a document may fail several; each is in ``filtered`` once)
    rules: dict[str, int] = field(default_factory=dict)
    #: run-length class per document position (None: dropped unstored), for the release record
    order: list[list[Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Exclusions:
    """Per-document reasons to leave a document of a set class out: failed rules, contamination."""

    failed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    contaminated: frozenset[str] = frozenset()
    #: ids with a signals row (None: no filters, nothing to check)
    known: frozenset[str] | None = None

    def verdict(self, doc_id: str) -> tuple[str | None, tuple[str, ...]]:
        """``(class, failed rules)`` overriding a set class, or ``(None, ())`` to keep it."""
        if doc_id in self.contaminated:
            return CONTAMINATED, ()
        if self.known is not None and doc_id not in self.known:
            raise ValueError(f"no signals row for document {doc_id} (written before signals existed); "
                             "re-run its source flow once to have signals")
        rules = self.failed.get(doc_id, ())
        return (FILTERED, rules) if rules else (None, ())


def signals_path(out: Path, shard_path: str) -> Path:
    """The signals attribute of a ``docs/<source>/<partition>/<input>-NNNNN.parquet`` shard's input."""
    parts = Path(shard_path).parts
    prefix = re.sub(r"-\d{5}$", "", Path(shard_path).stem)
    return signals_attribute_path(out, parts[1] if len(parts) > 2 else "", prefix)


def exclusions(out: Path, shard_path: str, job: LabelJob) -> Exclusions:
    """What the filters and the decontamination stage say of one shard's documents."""
    contaminated: frozenset[str] = frozenset()
    path = contamination_path(out, shard_path)
    if job.drop_contaminated and path.is_file():
        contaminated = frozenset(contaminated_ids(path))
    if not job.filters:
        return Exclusions(contaminated=contaminated)
    signals = signals_path(out, shard_path)
    if not signals.is_file():
        raise ValueError(f"no signals at {signals} for the filters (written before signals existed); "
                         "re-run its source flow once to have signals")
    table = pq.read_table(signals, columns=["id", *sorted({r.signal for r in job.filters})])
    return Exclusions(failures(table, job.filters), contaminated, frozenset(table.column("id").to_pylist()))


def exclusion_prints(out: Path, shard_path: str, job: LabelJob) -> dict[str, str]:
    """Fingerprint parts for the attributes the exclusions read (absent when none is read, so the
    markers of runs before filters existed stay valid)."""
    parts: dict[str, str] = {}
    contamination = contamination_path(out, shard_path)
    if job.drop_contaminated and contamination.is_file():
        parts["contamination"] = sha256_file(contamination)
    if job.filters:
        signals = signals_path(out, shard_path)
        parts["signals"] = sha256_file(signals) if signals.is_file() else "missing"
    return parts


def label_marker(out: Path, shard: str, fingerprint: Mapping[str, Any]) -> Marker:
    """The completion marker of one shard's labeling: valid for its docs/attributes/config fingerprint.

    Its outputs are the class shards (each ``path``/``bytes``/``sha256``/``docs``) and it promises
    the documents they hold, so a marker whose class shards were deleted or cut is not trusted.
    """
    return Marker(out / "_state" / LABELED / f"{slug(shard)}.json", {"fingerprint": dict(fingerprint)})


def _attribute_rows(path: Path | None) -> Any:
    """Attribute rows one at a time, in the shard's order (None without a dedup run)."""
    if path is None:
        return None
    return (row for batch in pq.ParquetFile(path).iter_batches(batch_size=1000) for row in batch.to_pylist())


class _Split:
    """One pass over a shard's documents: class shards written under ``root``, counts, per-rule counts, order."""

    def __init__(self, root: Path, shard: dict[str, Any], job: LabelJob) -> None:
        self.root = root
        self.shard = shard
        self.job = job
        self.rel = Path(shard["path"]).relative_to("docs") if shard["path"].startswith("docs/") else Path(shard["path"])
        self.writers: dict[str, ShardWriter] = {}
        self.counts: Counter[str] = Counter()
        self.rules: Counter[str] = Counter()
        self.order: list[list[Any]] = []

    def place(self, cls: str, doc: Document | None) -> None:
        """Count one position's class; write its document when the class is stored."""
        self.counts[cls] += 1
        stored = cls if cls in CLASS_LABELS else None
        if self.order and self.order[-1][0] == stored:
            self.order[-1][1] += 1
        else:
            self.order.append([stored, 1])
        if stored is None:
            return
        if doc is None:
            raise ValueError(f"a document of {self.shard['path']} dropped unstored when it was released would now be "
                             f"{cls}: its text is stored nowhere; re-run its source flow to label it anew")
        if cls not in self.writers:
            # the language its docs shard records (und included); under a folder that is no language, its documents'
            language = self.shard.get("language") or doc.language
            self.writers[cls] = ShardWriter(self.root, self.root / LABELED / cls / self.rel.parent, self.rel.stem,
                                            doc.source, language, labels=CLASS_LABELS[cls], limits=self.job.limits,
                                            file_metadata={"class": cls, "from": self.shard["path"],
                                                           "config_hash": self.job.config_hash})
        self.writers[cls].write(doc)

    def close(self) -> list[dict[str, Any]]:
        return [{**info.to_dict(), "inputs": [self.shard["path"]]} for cls in sorted(self.writers)
                for info in self.writers[cls].close()]

    def abort(self) -> None:
        for writer in self.writers.values():
            writer.abort()


def _split(root: Path, shard: dict[str, Any], docs: Iterable[Document | None], attr_path: Path | None,
           job: LabelJob, excluded: Exclusions) -> tuple[list[dict[str, Any]], _Split]:
    """Write the class shards of one document shard under ``root``; return them and the pass's counts.

    ``docs``: the shard's documents in order, None where a released shard's document was dropped
    unstored (a duplicate: its dedup attributes row still says what it was).
    """
    split = _Split(root, shard, job)
    rows = _attribute_rows(attr_path)
    try:
        for doc in docs:
            attributes = next(rows, None) if rows is not None else None
            if doc is None:
                if attributes is None:
                    raise ValueError(f"{shard['path']}: a dropped document has no dedup attributes row")
                source, doc_id = shard["source"], str(attributes["id"])
            else:
                if rows is not None and (attributes is None or attributes["id"] != doc.id):
                    raise ValueError(f"{attr_path} is out of step with {shard['path']} at {doc.id}")
                source, doc_id = doc.source, doc.id
            cls = membership_class(source, attributes, job)
            if cls in CLASS_LABELS:
                override, failed = excluded.verdict(doc_id)
                cls = override or cls
                split.rules.update(failed)
            split.place(cls, doc)
        if rows is not None and next(rows, None) is not None:
            raise ValueError(f"{attr_path} has more rows than {shard['path']} has documents")
        written = split.close()
    except Exception:
        split.abort()
        raise
    return written, split


def _resume(out: Path, shard: dict[str, Any], fingerprint: dict[str, Any]) -> LabelResult | None:
    """A finished result for this shard, if its marker matches and its class shards are intact."""
    done = label_marker(out, shard["path"], fingerprint).load(out)
    if done is None:
        return None
    return LabelResult(shard["path"], list(done[OUTPUTS]), dict(done["counts"]), read_release(out, shard["path"]),
                       rules=dict(done.get("rules", {})), order=list(done.get("order", [])))


def _release(out: Path, shard: dict[str, Any], result: LabelResult, job: LabelJob) -> None:
    """Delete the ``docs/`` copy once every document is in a class shard or dropped (duplicate, reference_excluded)."""
    if not job.release or result.counts.get(UNLISTED) or not (out / shard["path"]).is_file():
        return
    dropped = result.counts.get(DUPLICATE, 0) + result.counts.get(REFERENCE_EXCLUDED, 0)
    result.released = write_release(out, shard, result.shards, dropped, result.order or None)
    path = out / shard["path"]
    path.unlink()
    for parent in path.parents:  # folders left empty go too (only below docs/, never docs/ itself)
        if parent == out / "docs" or out / "docs" not in parent.parents:
            break
        try:
            parent.rmdir()
        except OSError:  # not empty (other shards), or in use
            break


def label_shard(out: Path, shard: dict[str, Any], job: LabelJob) -> LabelResult:
    """Split one document shard (a manifest ``shards`` row) into its classes' shards; resumable.

    ``shard`` needs ``path``, ``sha256``, ``bytes``, ``docs``, ``source``, ``language``. A shard
    released by an earlier run is labeled anew from its class shards when the settings changed
    (:func:`_relabel_released`); with the same settings its marker and class shards stand for it.
    Errors are returned, never raised, so one bad shard does not stop the others.
    """
    docs_path = out / shard["path"]
    attr_path = attributes_path(out, shard["path"])
    has_attributes = attr_path.exists()
    if not has_attributes and job.require_dedup:
        return LabelResult(shard["path"], error=f"{shard['path']}: no dedup attributes at {attr_path}; run flows.dedup first")
    try:
        finish_swap(out, shard["path"])
        fingerprint = {"docs": shard["sha256"], "attributes": sha256_file(attr_path) if has_attributes else None,
                       "config": job.config_hash, **exclusion_prints(out, shard["path"], job)}
        if not docs_path.is_file():
            return _label_released(out, shard, attr_path if has_attributes else None, job, fingerprint)
        if sha256_file(docs_path) != shard["sha256"]:
            return LabelResult(shard["path"], error=f"{shard['path']}: checksum differs from the manifest; "
                                                    "re-run its source flow")
        done = _resume(out, shard, fingerprint)
        if done is None:
            excluded = exclusions(out, shard["path"], job)
            written, split = _split(out, shard, read_documents(docs_path), attr_path if has_attributes else None,
                                    job, excluded)
            done = _finish(out, shard, fingerprint, written, split)
    except Exception as exc:
        return LabelResult(shard["path"], error=f"{shard['path']}: {type(exc).__name__}: {exc}")
    _release(out, shard, done, job)
    return done


def _finish(out: Path, shard: dict[str, Any], fingerprint: dict[str, Any], written: list[dict[str, Any]],
            split: _Split) -> LabelResult:
    """Write the shard's marker and return its result."""
    counts, rules = dict(split.counts), dict(sorted(split.rules.items()))
    label_marker(out, shard["path"], fingerprint).write(
        {"counts": counts, "rules": rules, "order": split.order}, outputs=written,
        promised_docs=sum(split.counts[c] for c in CLASS_LABELS))
    return LabelResult(shard["path"], written, counts, rules=rules, order=split.order)


def _label_released(out: Path, shard: dict[str, Any], attr_path: Path | None, job: LabelJob,
                    fingerprint: dict[str, Any]) -> LabelResult:
    """A released shard: its marker when the settings are the same, else labeled anew from its class shards."""
    record = read_release(out, shard["path"])
    done = _resume(out, shard, fingerprint)
    if record is not None and done is not None and released_intact(out, record):
        return done
    if record is None or not released_intact(out, record) or record.get("order") is None:
        why = ("missing, with no release record" if record is None else
               "released with class shards changed or missing since" if not released_intact(out, record) else
               "released before release records kept the documents' order")
        return LabelResult(shard["path"], error=f"{shard['path']}: {why}; its documents are only in their class "
                                                "shards: re-run its source flow to label it anew")
    scratch = relabel_dir(out, shard["path"])
    shutil.rmtree(scratch, ignore_errors=True)
    excluded = exclusions(out, shard["path"], job)
    written, split = _split(scratch, shard, released_documents(out, record), attr_path, job, excluded)
    dropped = split.counts.get(DUPLICATE, 0) + split.counts.get(REFERENCE_EXCLUDED, 0)
    new = release_record(shard, written, dropped, split.order)
    write_json_atomic(scratch / PENDING, {"record": new, "old": [entry["path"] for entry in record["into"]]})
    finish_swap(out, shard["path"])
    result = _finish(out, shard, fingerprint, written, split)
    result.released = new
    return result


PENDING = "pending.json"


def relabel_dir(out: Path, shard_path: str) -> Path:
    """Where a released shard's new class shards are written before they replace the old ones."""
    return out / "_state" / "relabel" / slug(shard_path)


def finish_swap(out: Path, shard_path: str) -> None:
    """Roll a re-label's journal forward: move the new class shards into place, write the new release
    record, delete old class shards no longer named, then the journal. Idempotent: each step can be
    redone after a crash. Without a journal, a half-written re-label is discarded (the old copy stands)."""
    scratch = relabel_dir(out, shard_path)
    pending = scratch / PENDING
    if not pending.is_file():
        shutil.rmtree(scratch, ignore_errors=True)
        return
    journal = json.loads(pending.read_text(encoding="utf-8"))
    record = journal["record"]
    for entry in record["into"]:
        source = scratch / entry["path"]
        if source.is_file():
            (out / entry["path"]).parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, out / entry["path"])
    write_json_atomic(release_record_path(out, shard_path), record)
    keep = {entry["path"] for entry in record["into"]}
    for old in journal["old"]:
        if old not in keep:
            (out / old).unlink(missing_ok=True)
    shutil.rmtree(scratch, ignore_errors=True)


def stale_labeled(out: Path, keep: set[str]) -> list[Path]:
    """Class shards on disk that no shard's result names (e.g. left by a run with another config)."""
    return [path for path in sorted((out / LABELED).rglob("*.parquet"))
            if path.relative_to(out).as_posix() not in keep]
