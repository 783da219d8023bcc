"""The manifest: one DuckDB file per output root, recording every run, input, shard and drop.

DuckDB allows one writing process at a time, so workers never open it: tasks return plain
records (:class:`InputRecord`) and the flow, a single process, writes them here in short
transactions. Between writes the file is closed, so ``kinda manifest sql`` can read it while a
flow runs. Every question a user asks about the corpus ("how many G.3 tokens from arXiv?",
"why was this page dropped?") is one SQL query over these tables.

A reader never fails a run. DuckDB lets no process write while another holds the file open,
even read-only (a notebook, ``duckdb -readonly``, a long ``kinda manifest sql``). A write that
cannot get the file within a short wait is queued instead: its statements go, in order, into
``<out>/_state/manifest-queue/`` (one JSON file per write, written atomically). The rule:

- every later write (of this run or any other) applies the queue first, in the same
  transaction, so rows land in the order they were written;
- the last write of a run (its status) waits longer, ``KINDA_MANIFEST_WAIT_S`` seconds
  (default 30), for the reader to close; if it still cannot write, the run ends as usual (rc 0
  when it succeeded) and says how many writes are queued;
- reads through :class:`Manifest` (every ``kinda`` command, the flows' own reads) apply the queue
  when the file is free and otherwise see the queued rows anyway (they query a copy of the
  file with the queue applied in memory), so a queued row is never invisible.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from core.atomic import TMP_SUFFIX, sha256_file, write_json_atomic
from core.document import UNDETERMINED
from core.released import is_released

MANIFEST_NAME = "manifest.duckdb"
#: Writes that could not get the file wait here, beside the run's other state (see the module docstring).
QUEUE_DIR = ("_state", "manifest-queue")
#: How long a write in the middle of a run waits for a reader before it is queued.
WRITE_WAIT_S = 2.0
#: How long the last write of a run waits for a reader by default (``KINDA_MANIFEST_WAIT_S``).
FINAL_WAIT_S = 30.0

# Every table of the manifest is defined here (one place to read the schema); the two written by
# later stages have their own names so a stage can create them on a connection of its own.
MATCHES_SQL = """
-- Documents compared by flows.dedup: one row per duplicate and per reference (Pile) match
-- (dedupe.explain.record_matches); ``kinda dedup explain`` reads it.
CREATE TABLE IF NOT EXISTS matches (
    run_id VARCHAR NOT NULL,
    doc_id VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    shard VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    matched_doc_id VARCHAR,
    reference_index VARCHAR,
    reference_shard VARCHAR,
    reference_line BIGINT,
    reference_set VARCHAR,
    jaccard DOUBLE,
    threshold DOUBLE,
    layout VARCHAR
);
"""
RELEASED_SQL = """
-- docs/ shards released by flows.label: deleted once their documents are in class shards
-- (core.released); ``into_shards`` names those class shards, so counts over ``shards`` see
-- each document once and later stages know where the documents are.
CREATE TABLE IF NOT EXISTS released (
    path VARCHAR PRIMARY KEY,
    source VARCHAR NOT NULL,
    language VARCHAR,
    docs BIGINT NOT NULL,
    text_bytes BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    sha256 VARCHAR NOT NULL,
    into_shards VARCHAR[] NOT NULL,
    dropped BIGINT NOT NULL,
    run_id VARCHAR NOT NULL,
    released_at TIMESTAMP NOT NULL
);
"""
SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    flow VARCHAR NOT NULL,
    source VARCHAR,
    config_hash VARCHAR NOT NULL,
    config JSON,
    code_version VARCHAR NOT NULL,
    started_at TIMESTAMP NOT NULL,
    ended_at TIMESTAMP,
    status VARCHAR NOT NULL,
    prefect_flow_run_id VARCHAR
);
CREATE TABLE IF NOT EXISTS inputs (
    run_id VARCHAR NOT NULL,
    input_key VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    language VARCHAR,
    location VARCHAR NOT NULL,
    size BIGINT,
    sha256 VARCHAR,
    status VARCHAR NOT NULL,
    error VARCHAR,
    records_in BIGINT NOT NULL,
    docs_kept BIGINT NOT NULL,
    docs_dropped BIGINT NOT NULL,
    seconds DOUBLE,
    config_hash VARCHAR NOT NULL,
    PRIMARY KEY (run_id, input_key)
);
CREATE TABLE IF NOT EXISTS shards (
    path VARCHAR PRIMARY KEY,
    source VARCHAR NOT NULL,
    language VARCHAR,
    labels VARCHAR[] NOT NULL,
    docs BIGINT NOT NULL,
    text_bytes BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    tokens BIGINT,
    sha256 VARCHAR NOT NULL,
    config_hash VARCHAR NOT NULL,
    recipe VARCHAR NOT NULL,
    code_version VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    inputs VARCHAR[] NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS drops (
    run_id VARCHAR NOT NULL,
    input_key VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    language VARCHAR,
    step VARCHAR NOT NULL,
    reason VARCHAR NOT NULL,
    count BIGINT NOT NULL
);
-- Per input, each step's traffic in chain order (position 0 is the reader): documents and
-- characters in and out, and the thread CPU seconds the step itself spent (core.steps). A step's
-- drops are in ``drops`` under the same step name; docs_in - docs_out is their count.
CREATE TABLE IF NOT EXISTS step_stats (
    run_id VARCHAR NOT NULL,
    input_key VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    position INTEGER NOT NULL,
    step VARCHAR NOT NULL,
    docs_in BIGINT NOT NULL,
    docs_out BIGINT NOT NULL,
    chars_in BIGINT,
    chars_out BIGINT NOT NULL,
    cpu_seconds DOUBLE NOT NULL
);
CREATE TABLE IF NOT EXISTS errors (
    run_id VARCHAR NOT NULL,
    input_key VARCHAR NOT NULL,
    step VARCHAR NOT NULL,
    reason VARCHAR NOT NULL,
    record VARCHAR NOT NULL,
    detail VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS tensors (
    tensor_root VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    input VARCHAR NOT NULL,
    split VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    language VARCHAR,
    labels VARCHAR[] NOT NULL,
    tokenizer_hash VARCHAR NOT NULL,
    split_digits BOOLEAN NOT NULL,
    tokens BIGINT NOT NULL,
    docs BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    sha256 VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tensor_root, path)
);
""" + MATCHES_SQL + RELEASED_SQL + """
-- The newest run's view of each input: re-runs add rows per run, summaries want the latest.
CREATE OR REPLACE VIEW latest_inputs AS
    SELECT i.* FROM inputs i JOIN runs r USING (run_id)
    QUALIFY row_number() OVER (PARTITION BY i.source, i.input_key ORDER BY r.started_at DESC) = 1;
CREATE OR REPLACE VIEW latest_drops AS
    SELECT d.* FROM drops d JOIN latest_inputs l ON d.run_id = l.run_id AND d.input_key = l.input_key;
CREATE OR REPLACE VIEW latest_step_stats AS
    SELECT s.* FROM step_stats s JOIN latest_inputs l ON s.run_id = l.run_id AND s.input_key = l.input_key;
"""


@dataclass
class InputRecord:
    """Everything one task learned about one input; a plain, picklable, JSON-able record.

    It is also the resume marker's payload: a finished input's record is stored next to its
    shards, so a re-run can skip the work and still write the same manifest rows.
    """

    input_key: str
    source: str
    location: str
    language: str | None
    config_hash: str
    size: int | None = None
    sha256: str | None = None
    status: str = "done"
    error: str | None = None
    records_in: int = 0
    docs_kept: int = 0
    seconds: float = 0.0
    drops: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    shards: list[dict[str, Any]] = field(default_factory=list)
    #: Each step's traffic (:meth:`core.steps.StepStats.step_rows`); a marker written before
    #: steps were recorded has none, and its input then has no ``step_stats`` rows.
    steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def docs_dropped(self) -> int:
        """Total dropped records of this input."""
        return sum(int(d["count"]) for d in self.drops)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> InputRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(**payload)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class ManifestError(RuntimeError):
    """The manifest file cannot be used (damaged, unwritable, or held too long by another process)."""


def _is_lock_conflict(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set lock" in text)


#: One write statement: SQL, its parameters (or rows, for ``executemany``), and whether it is a many.
Statement = tuple[str, list[Any], bool]


def final_wait_s() -> float:
    """How long the last write of a run waits for readers (``KINDA_MANIFEST_WAIT_S``, default 30 s)."""
    raw = os.environ.get("KINDA_MANIFEST_WAIT_S", "")
    try:
        return max(0.0, float(raw)) if raw.strip() else FINAL_WAIT_S
    except ValueError:
        raise ManifestError(f"KINDA_MANIFEST_WAIT_S={raw!r} is not a number of seconds") from None


def _encode(value: Any) -> Any:
    """JSON for a statement parameter: timestamps tagged, lists walked, the rest as is."""
    if isinstance(value, dt.datetime):
        return {"$ts": value.isoformat()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$ts"}:
        return dt.datetime.fromisoformat(value["$ts"])
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _execute(con: duckdb.DuckDBPyConnection, statements: Sequence[Statement]) -> None:
    for sql, params, many in statements:
        if many:
            if params:
                con.executemany(sql, params)
        else:
            con.execute(sql, params)


class _Busy(Exception):
    """The file is held by another process (a reader, or a writer) past the wait."""


class Manifest:
    """A handle on the manifest file; open it briefly with :meth:`connect` for each write."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @classmethod
    def for_output(cls, out_root: Path) -> Manifest:
        """The manifest of an output root (``<out>/manifest.duckdb``)."""
        return cls(Path(out_root) / MANIFEST_NAME)

    @property
    def queue_dir(self) -> Path:
        """Where writes wait while a reader holds the file (see the module docstring)."""
        return self.path.parent.joinpath(*QUEUE_DIR)

    def queued(self) -> list[Path]:
        """The queued writes, oldest first."""
        if not self.queue_dir.is_dir():
            return []
        return sorted(p for p in self.queue_dir.glob("*.json") if not p.name.endswith(TMP_SUFFIX))

    def _open(self, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
        """Open the file, retrying while another process holds its lock; :class:`_Busy` after ``wait_s``."""
        if read_only and not self.path.exists():
            raise FileNotFoundError(f"no manifest at {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + wait_s
        attempt = 0
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=read_only)
            except duckdb.IOException as exc:
                if not _is_lock_conflict(exc):  # retrying cannot fix a corrupt or unwritable file
                    raise ManifestError(self._unusable(exc)) from None
                if time.monotonic() >= deadline:
                    raise _Busy(str(exc)) from None
            except duckdb.Error as exc:
                raise ManifestError(self._unusable(exc)) from None
            attempt += 1
            time.sleep(min(0.05 * attempt, 1.0, max(0.0, deadline - time.monotonic())))

    @contextlib.contextmanager
    def connect(self, read_only: bool = False, wait_s: float = 40.0) -> Iterator[duckdb.DuckDBPyConnection]:
        """Open the DuckDB file, waiting up to ``wait_s`` while another process holds its lock.

        A writing connection applies the queued writes first, so what the caller writes lands
        after them. Prefer :meth:`write`, which queues instead of failing.
        """
        try:
            con = self._open(read_only, wait_s)
        except _Busy as exc:
            raise ManifestError(f"manifest {self.path} stayed locked by another process: {exc}") from None
        try:
            if not read_only:
                con.execute(SCHEMA_SQL)
                self._apply_queue(con, [])
            yield con
        finally:
            con.close()

    def _unusable(self, exc: Exception) -> str:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (f"manifest {self.path} cannot be opened ({first}); if it is damaged, move it away and re-run "
                "the flows: finished inputs are skipped and their rows recorded again")

    # -- writes (the flow process only) ---------------------------------------------------
    def write(self, statements: Sequence[Statement], wait_s: float = WRITE_WAIT_S) -> bool:
        """Apply ``statements`` in one transaction after the queued writes; queue them if the file is busy.

        True when they reached the file, False when they were queued (see the module docstring).
        """
        if self.try_write(statements, wait_s):
            return True
        self._enqueue(statements)
        return False

    def try_write(self, statements: Sequence[Statement], wait_s: float = WRITE_WAIT_S) -> bool:
        """:meth:`write` without the queue: False, and nothing kept, when the file stays busy.

        For statements that read a file which will not outlive the caller (a Parquet of a stage's
        work folder): the caller queues a self-contained form of them instead.
        """
        try:
            con = self._open(False, wait_s)
        except _Busy:
            return False
        try:
            con.execute(SCHEMA_SQL)
            self._apply_queue(con, statements)
        finally:
            con.close()
        return True

    def apply_queued(self, wait_s: float = 0.0) -> int:
        """Apply the queued writes if the file is free within ``wait_s``; return how many are still queued."""
        if self.queued():
            with contextlib.suppress(_Busy):
                self.write([], wait_s)
        return len(self.queued())

    def _enqueue(self, statements: Sequence[Statement]) -> None:
        """Keep a write that could not reach the file (atomic, named to sort after the queue's others)."""
        if not statements:
            return
        self.queue_dir.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
        write_json_atomic(self.queue_dir / name, [[sql, _encode(params), many] for sql, params, many in statements])

    def _apply_queue(self, con: duckdb.DuckDBPyConnection, statements: Sequence[Statement]) -> None:
        """Run the queued writes, then ``statements``, in one transaction; drop the queue files after.

        Each queued write is idempotent (keyed inserts, delete-then-insert, updates to fixed values),
        so a crash between the commit and the deletes only applies them again, to the same end.
        """
        queued = self.queued()
        if not queued and not statements:
            return
        con.execute("BEGIN TRANSACTION")
        try:
            for path in queued:
                _execute(con, self._load_queued(path))
            _execute(con, statements)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        for path in queued:
            path.unlink(missing_ok=True)

    def _load_queued(self, path: Path, missing_ok: bool = False) -> list[Statement]:
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
            return [(str(sql), _decode(params), bool(many)) for sql, params, many in payload]
        except FileNotFoundError:
            if missing_ok:  # another process applied it meanwhile
                return []
            raise
        except (OSError, ValueError, TypeError) as exc:
            raise ManifestError(f"queued manifest write {path} cannot be read ({exc}); move it away and re-run "
                                "the flows to record their rows again") from None

    def abandon_stale_runs(self) -> int:
        """Mark runs still ``running`` as ``abandoned``; call only while holding the output lock.

        Whoever holds :class:`core.lock.OutputLock` is the only live writer, so a run row that
        says ``running`` belongs to a process that was killed mid-way. The count is read first
        (through the queue), the update is a write like any other.
        """
        _, rows = self.query("SELECT count(*) FROM runs WHERE status = 'running'") if self._exists() else ([], [(0,)])
        self.write([("UPDATE runs SET status = 'abandoned', ended_at = ? WHERE status = 'running'", [_now()], False)])
        return int(rows[0][0]) if rows else 0

    def _exists(self) -> bool:
        return self.path.exists() or bool(self.queued())

    def start_run(
        self,
        run_id: str,
        flow: str,
        source: str | None,
        config_hash: str,
        config: dict[str, Any],
        code_version: str,
        prefect_flow_run_id: str | None = None,
    ) -> None:
        """Record that a run started."""
        self.write([(
            "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, NULL, 'running', ?)",
            [run_id, flow, source, config_hash, json.dumps(config, sort_keys=True, default=str),
             code_version, _now(), prefect_flow_run_id], False,
        )])

    def finish_run(self, run_id: str, status: str, wait_s: float | None = None) -> bool:
        """Record a run's end and final status (``completed``, ``failed``, ``partial``).

        The run's last write: it waits longest for a reader (:func:`final_wait_s`); False when
        it (and the run's other queued writes) stayed queued.
        """
        statement = ("UPDATE runs SET ended_at = ?, status = ? WHERE run_id = ?", [_now(), status, run_id], False)
        return self.write([statement], final_wait_s() if wait_s is None else wait_s)

    def record_inputs(
        self, run_id: str, records: Sequence[InputRecord], recipe: str, code_version: str
    ) -> None:
        """Write inputs, their drops, errors and shards in one transaction.

        Shards are keyed by path: a re-run that rewrites a shard replaces its row, so the
        table always describes the files on disk.
        """
        statements: list[Statement] = []
        for rec in records:
            statements += self._input_statements(run_id, rec, recipe, code_version, self.path.parent)
        self.write(statements)

    @staticmethod
    def _input_statements(run_id: str, rec: InputRecord, recipe: str, code_version: str,
                          root: Path) -> list[Statement]:
        statements: list[Statement] = [
            ("DELETE FROM drops WHERE run_id = ? AND input_key = ?", [run_id, rec.input_key], False),
            ("DELETE FROM errors WHERE run_id = ? AND input_key = ?", [run_id, rec.input_key], False),
            ("DELETE FROM step_stats WHERE run_id = ? AND input_key = ?", [run_id, rec.input_key], False),
            ("INSERT OR REPLACE INTO inputs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
             [run_id, rec.input_key, rec.source, rec.language, rec.location, rec.size, rec.sha256,
              rec.status, rec.error, rec.records_in, rec.docs_kept, rec.docs_dropped, rec.seconds,
              rec.config_hash], False),
            ("INSERT INTO drops VALUES (?, ?, ?, ?, ?, ?, ?)",
             [[run_id, rec.input_key, rec.source, d.get("language") or rec.language or UNDETERMINED, d["step"],
               d["reason"], int(d["count"])] for d in rec.drops], True),
            ("INSERT INTO errors VALUES (?, ?, ?, ?, ?, ?)",
             [[run_id, rec.input_key, e["step"], e["reason"], e["record"], e["detail"]] for e in rec.errors], True),
            ("INSERT INTO step_stats VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
             [[run_id, rec.input_key, rec.source, s["position"], s["step"], s["docs_in"], s["docs_out"],
               s["chars_in"], s["chars_out"], s["cpu_seconds"]] for s in rec.steps], True),
        ]
        now = _now()
        for shard in rec.shards:
            if is_released(root, shard["path"]):  # its documents live in class shards now
                continue
            statements.append((
                "INSERT OR REPLACE INTO shards VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [shard["path"], shard["source"], shard.get("language"), list(shard.get("labels", [])),
                 shard["docs"], shard["text_bytes"], shard["bytes"], shard.get("tokens"), shard["sha256"],
                 rec.config_hash, recipe, code_version, run_id,
                 list(shard.get("inputs", [rec.input_key])), now], False,
            ))
        return statements

    def record_shards(
        self, run_id: str, shards: Sequence[dict[str, Any]], config_hash: str, recipe: str,
        code_version: str, replace_prefix: str | None = None,
    ) -> None:
        """Write shard rows produced by a non-source stage (dedup, labels, tokenize).

        ``replace_prefix`` removes older rows under a directory the stage rewrote, so the table
        keeps matching the files on disk.
        """
        statements: list[Statement] = []
        if replace_prefix is not None:
            statements.append(("DELETE FROM shards WHERE starts_with(path, ?)", [replace_prefix], False))
        now = _now()
        statements.append((
            "INSERT OR REPLACE INTO shards VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [[shard["path"], shard["source"], shard.get("language"), list(shard.get("labels", [])),
              shard["docs"], shard["text_bytes"], shard["bytes"], shard.get("tokens"),
              shard["sha256"], config_hash, recipe, code_version, run_id,
              list(shard.get("inputs", [])), now] for shard in shards], True,
        ))
        self.write(statements)

    def forget_shards(self, paths: Sequence[str]) -> None:
        """Remove rows of shards that a stage deleted."""
        if paths:
            self.write([("DELETE FROM shards WHERE path = ?", [[p] for p in paths], True)])

    # -- reads ----------------------------------------------------------------------------
    def query(self, sql: str, params: Sequence[Any] | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run a read-only SQL query; return column names and rows (queued writes included)."""
        if self.apply_queued():
            return self._query_with_queue(sql, params)
        try:
            con = self._open(True, 40.0)
        except _Busy as exc:
            raise ManifestError(f"manifest {self.path} stayed locked by another process: {exc}") from None
        try:
            return self._run_query(con, sql, params)
        finally:
            con.close()

    def _query_with_queue(self, sql: str, params: Sequence[Any] | None,
                          wait_s: float = 40.0) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Query an in-memory copy of the file with the queued writes applied (a reader holds the file)."""
        deadline = time.monotonic() + wait_s
        while True:
            # the queue is read before the file is copied: a write applied in between is then in both,
            # and applying it twice ends the same (queued writes are idempotent)
            queued = [self._load_queued(path, missing_ok=True) for path in self.queued()]
            con = duckdb.connect()
            try:
                if self.path.exists():
                    quoted = str(self.path).replace("'", "''")
                    con.execute(f"ATTACH '{quoted}' AS stored (READ_ONLY)")
                    con.execute("COPY FROM DATABASE stored TO memory")
                    con.execute("DETACH stored")
                con.execute(SCHEMA_SQL)
                for statements in queued:
                    _execute(con, statements)
                return self._run_query(con, sql, params)
            except duckdb.Error as exc:
                # a writer holds the file for a moment (it is applying the queue): read again after it
                if not _is_lock_conflict(exc) or time.monotonic() >= deadline:
                    raise ManifestError(f"manifest {self.path} cannot be read: {exc}") from None
            finally:
                con.close()
            time.sleep(0.2)

    def _attribute_views(self, con: duckdb.DuckDBPyConnection) -> None:
        """Temporary views over the attribute files beside the shards (``signals``: one row per document).

        Made per query from the files there now, so the manifest holds no path of this machine and a
        moved output root still answers; a root without such files gets an empty view of the same columns.
        """
        from core.filters.signal_schema import SIGNAL_SCHEMA  # the schema alone: no numba for a query

        files = sorted(p.as_posix() for p in (self.path.parent / "attributes").glob("*/*.signals.parquet"))
        if files:
            listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            body = (f"SELECT regexp_extract(filename, '([^/]+)/[^/]+[.]signals[.]parquet$', 1) AS source, "
                    f"* EXCLUDE (filename) FROM read_parquet([{listed}], filename=true)")
        else:
            typed = ", ".join(f"NULL::{'VARCHAR' if f.type == 'string' else 'BIGINT' if f.type == 'int64' else 'FLOAT'}"
                              f" AS {f.name}" for f in SIGNAL_SCHEMA)
            body = f"SELECT NULL::VARCHAR AS source, {typed} WHERE false"
        con.execute(f"CREATE OR REPLACE TEMP VIEW signals AS {body}")

    def _run_query(self, con: duckdb.DuckDBPyConnection, sql: str,
                   params: Sequence[Any] | None) -> tuple[list[str], list[tuple[Any, ...]]]:
        if "signals" in sql.lower():
            self._attribute_views(con)
        cursor = con.execute(sql, params or [])
        columns = [d[0] for d in cursor.description] if cursor.description else []
        return columns, cursor.fetchall()

    def document_shards(self, sources: Sequence[str] = ()) -> list[tuple[str, str, str]]:
        """``(path, source, sha256)`` of the final document shards, in a fixed order (source, path)."""
        _, rows = self.query("SELECT path, source, sha256 FROM shards WHERE starts_with(path, 'docs/') "
                             "ORDER BY source, path")
        return [(str(r[0]), str(r[1]), str(r[2])) for r in rows if not sources or r[1] in sources]

    def has_table(self, name: str) -> bool:
        """True when the table exists (a manifest last written by an older version may lack later tables)."""
        _, rows = self.query("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name])
        return bool(rows[0][0])

    def stored_copies(self, sources: Sequence[str] = ()) -> list[tuple[str, str, str]]:
        """``(path, source, sha256)`` of the class shards that hold the documents of released ``docs/`` shards.

        Once ``flows.label`` released a ``docs/`` shard, its kept documents exist only in these
        shards (``released.into_shards``); a stage that must see every stored document (dedup of
        sources added later against them) reads them here. A released shard whose ``docs/`` file
        was written again by its source is left out: its documents are in ``docs/`` once more.
        Order: (source, path), like :meth:`document_shards`.
        """
        if not self.has_table("released"):
            return []
        _, rows = self.query("""
            SELECT DISTINCT s.path, s.source, s.sha256
            FROM (SELECT path AS origin, unnest(into_shards) AS into_path FROM released) r
            JOIN shards s ON s.path = r.into_path
            WHERE r.origin NOT IN (SELECT path FROM shards)
            ORDER BY s.source, s.path""")
        return [(str(r[0]), str(r[1]), str(r[2])) for r in rows if not sources or r[1] in sources]

    def final_shards(self) -> list[dict[str, Any]]:
        """Every final document shard, on disk in ``docs/`` or released into class shards, as dicts.

        Columns ``path, source, language, docs, text_bytes, bytes, sha256``; a ``docs/`` row (the
        shard written again by its source) wins over its old release. Order: (source, path).
        """
        columns = "path, source, language, docs, text_bytes, bytes, sha256"
        released = f" UNION ALL SELECT {columns}, 1 FROM released" if self.has_table("released") else ""
        names, rows = self.query(f"SELECT {columns}, 0 AS released FROM shards WHERE starts_with(path, 'docs/')"
                                 f"{released} ORDER BY path, released")
        unique: dict[str, dict[str, Any]] = {}
        for row in rows:
            unique.setdefault(row[0], dict(zip(names[:-1], row[:-1], strict=True)))
        return sorted(unique.values(), key=lambda s: (s["source"], s["path"]))

    def verify(self, out_root: Path) -> list[dict[str, str]]:
        """Re-hash every shard; return one problem per missing or corrupt shard (empty = ok)."""
        _, rows = self.query("SELECT path, sha256, bytes FROM shards ORDER BY path")
        problems: list[dict[str, str]] = []
        for rel_path, expected, size in rows:
            shard = Path(out_root) / rel_path
            if not shard.exists():
                problems.append({"path": rel_path, "problem": "missing"})
            elif shard.stat().st_size != size:
                problems.append({"path": rel_path, "problem": f"size {shard.stat().st_size} != {size}"})
            elif sha256_file(shard) != expected:
                problems.append({"path": rel_path, "problem": "checksum mismatch"})
        return problems
