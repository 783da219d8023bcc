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

This module is pure (no Prefect): :mod:`flows.label` runs :func:`label_shard` once per shard.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pyarrow.parquet as pq

from core.atomic import sha256_file
from core.layout import slug
from core.markers import OUTPUTS, Marker
from core.released import read_release, released_intact, write_release
from core.shards import ShardLimits, ShardWriter, read_documents
from dedupe.explain import attributes_path
from dedupe.priority import reference_excluded

CLASS_LABELS: dict[str, list[str]] = {"llama": ["G1", "G2", "G3"], "llama-in-ref": ["G1", "G2"], "extension": ["G2"]}
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


def _split(out: Path, shard: dict[str, Any], attr_path: Path | None, job: LabelJob) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Write the class shards of one document shard; return them and the documents per class."""
    rel = Path(shard["path"]).relative_to("docs") if shard["path"].startswith("docs/") else Path(shard["path"])
    writers: dict[str, ShardWriter] = {}
    counts: Counter[str] = Counter()
    rows = _attribute_rows(attr_path)
    try:
        for doc in read_documents(out / shard["path"]):
            attributes = next(rows, None) if rows is not None else None
            if rows is not None and (attributes is None or attributes["id"] != doc.id):
                raise ValueError(f"{attr_path} is out of step with {shard['path']} at {doc.id}")
            cls = membership_class(doc.source, attributes, job)
            counts[cls] += 1
            if cls not in CLASS_LABELS:
                continue
            if cls not in writers:
                writers[cls] = ShardWriter(out, out / LABELED / cls / rel.parent, rel.stem, doc.source, doc.language,
                                           labels=CLASS_LABELS[cls], limits=job.limits,
                                           file_metadata={"class": cls, "from": shard["path"],
                                                          "config_hash": job.config_hash})
            writers[cls].write(doc)
        written = [{**info.to_dict(), "inputs": [shard["path"]]} for cls in sorted(writers) for info in writers[cls].close()]
    except Exception:
        for writer in writers.values():
            writer.abort()
        raise
    return written, counts


def _resume(out: Path, shard: dict[str, Any], fingerprint: dict[str, Any]) -> LabelResult | None:
    """A finished result for this shard, if its marker matches and its class shards are intact."""
    done = label_marker(out, shard["path"], fingerprint).load(out)
    if done is None:
        return None
    return LabelResult(shard["path"], list(done[OUTPUTS]), dict(done["counts"]), read_release(out, shard["path"]))


def _release(out: Path, shard: dict[str, Any], result: LabelResult, job: LabelJob) -> None:
    """Delete the ``docs/`` copy once every document is in a class shard or dropped (duplicate, reference_excluded)."""
    if not job.release or result.counts.get(UNLISTED) or not (out / shard["path"]).is_file():
        return
    dropped = result.counts.get(DUPLICATE, 0) + result.counts.get(REFERENCE_EXCLUDED, 0)
    result.released = write_release(out, shard, result.shards, dropped)
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
    released by an earlier run is not read again: its marker and class shards stand for it.
    Errors are returned, never raised, so one bad shard does not stop the others.
    """
    docs_path = out / shard["path"]
    attr_path = attributes_path(out, shard["path"])
    has_attributes = attr_path.exists()
    if not has_attributes and job.require_dedup:
        return LabelResult(shard["path"], error=f"{shard['path']}: no dedup attributes at {attr_path}; run flows.dedup first")
    fingerprint = {"docs": shard["sha256"], "attributes": sha256_file(attr_path) if has_attributes else None,
                   "config": job.config_hash}
    if not docs_path.is_file():
        record = read_release(out, shard["path"])
        done = _resume(out, shard, fingerprint)
        if record is not None and done is not None and released_intact(out, record):
            return done
        why = ("released by a label run with other settings or dedup decisions" if record is not None
               else "missing, with no release record")
        return LabelResult(shard["path"], error=f"{shard['path']}: {why}; its documents are only in their class "
                                                "shards: re-run its source flow to label it anew")
    if sha256_file(docs_path) != shard["sha256"]:
        return LabelResult(shard["path"], error=f"{shard['path']}: checksum differs from the manifest; re-run its source flow")
    done = _resume(out, shard, fingerprint)
    if done is None:
        try:
            written, counts = _split(out, shard, attr_path if has_attributes else None, job)
        except Exception as exc:
            return LabelResult(shard["path"], error=f"{shard['path']}: {type(exc).__name__}: {exc}")
        label_marker(out, shard["path"], fingerprint).write(
            {"counts": dict(counts)}, outputs=written, promised_docs=sum(counts[c] for c in CLASS_LABELS))
        done = LabelResult(shard["path"], written, dict(counts))
    _release(out, shard, done, job)
    return done


def stale_labeled(out: Path, keep: set[str]) -> list[Path]:
    """Class shards on disk that no shard's result names (e.g. left by a run with another config)."""
    return [path for path in sorted((out / LABELED).rglob("*.parquet"))
            if path.relative_to(out).as_posix() not in keep]
