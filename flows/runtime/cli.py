"""One command line for every flow: a typed config class + a flow + its extra flags.

``python -m flows.<name>`` gets ``--help``, ``--config FILE``, ``--set key=value``, ``--out``,
``--workers``, ``--runner`` and ``--dask-address`` from here, so a flow module holds only its
config, its flow and the few flags of its own. Precedence: the YAML file, then ``--set``, then
explicit flags.

What users get wrong is answered before Prefect starts (it costs seconds and would bury the
message in a log): a config file that is not YAML, no input or a missing one, a folder where
files are read, a bad ``--set``, an invalid value, a missing model, an unwritable ``--out`` or
an output root another run is writing to each end with one line and exit code 2; a Dask
scheduler that does not answer ends with one line and exit code 1. Errors that retrying cannot
fix (a full disk, a damaged manifest) end with one line too, naming the path and the errno,
not a traceback.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from core.config import PipelineConfig, parse_set_option
from core.lock import PENDING_RUN, OutputLock, OutputLockedError
from core.os_errors import os_error_line
from flows.runtime.dask_settings import quiet_cluster
from flows.runtime.logs import quiet_environment_errors
from flows.runtime.runner import make_task_runner, prefect_api

C = TypeVar("C", bound=PipelineConfig)

RUNNERS = ["process", "thread", "sequential", "dask", "ray"]


class UsageError(Exception):
    """Something the user can fix on the command line; printed as one line, exit code 2."""


class RunError(Exception):
    """The run cannot start or go on for a reason outside the command line; one line, exit code 1."""


@dataclass(frozen=True)
class Flag:
    """A flow's own flag, mapped onto a config field (dotted for nested fields; empty: not a field).

    ``many``: repeatable, collected into a list; ``split``: a comma-separated list;
    ``switch``: a flag without a value that sets the field to True; ``boolean``: ``--x``/``--no-x``.
    """

    name: str
    field: str
    help: str
    many: bool = False
    split: bool = False
    switch: bool = False
    boolean: bool = False
    required: bool = False
    type: Callable[[str], Any] = str
    choices: Sequence[str] | None = None

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Declare the flag on ``parser``."""
        dest = self._dest()
        if self.boolean:
            parser.add_argument(self.name, dest=dest, action=argparse.BooleanOptionalAction, default=None,
                                help=self.help)
        elif self.switch:
            parser.add_argument(self.name, dest=dest, action="store_true", default=None, help=self.help)
        elif self.many:
            parser.add_argument(self.name, dest=dest, action="append", type=self.type, required=self.required,
                                metavar=self.metavar, help=self.help)
        else:
            parser.add_argument(self.name, dest=dest, type=self.type, choices=self.choices, required=self.required,
                                metavar=None if self.choices else self.metavar, help=self.help)

    def value(self, args: argparse.Namespace) -> Any:
        """The flag's value for the config, or None when not given."""
        raw = getattr(args, self._dest())
        if raw is not None and self.split:
            return [item.strip() for item in str(raw).split(",") if item.strip()]
        return raw

    def _dest(self) -> str:
        return "flag_" + self.name.lstrip("-").replace("-", "_")

    @property
    def metavar(self) -> str:
        return self.name.lstrip("-").replace("-", "_").upper()


def one_line(exc: BaseException) -> str:
    """An exception as one readable line (pydantic's errors become ``field: message`` pairs)."""
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(str(p) for p in err['loc']) or 'config'}: {err['msg']}" for err in exc.errors()]
        return "invalid config: " + "; ".join(parts)
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


class FlowCLI(Generic[C]):
    """The command line of one flow (see the module docstring)."""

    def __init__(self, flow: Any, config_cls: type[C], config_file: str | None, doc: str | None,
                 flags: Sequence[Flag] = (), report: Callable[[Any], int] | None = None,
                 out_is_root: bool = True, out_field: str = "out",
                 prepare: Callable[[argparse.Namespace], dict[str, Any]] | None = None,
                 runner: Callable[[C], Any] | None = None) -> None:
        self.flow = flow
        self.config_cls = config_cls
        self.config_file = Path(__file__).resolve().parents[2] / "configs" / config_file if config_file else None
        self.doc = doc
        self.flags = list(flags)
        self.report = report
        self.out_is_root = out_is_root
        self.out_field = out_field
        self.prepare = prepare
        self._runner = runner

    @property
    def prog(self) -> str:
        """``python -m flows.<module>``, also when the module runs as ``__main__``."""
        module = self.flow.fn.__module__
        if module == "__main__":
            spec = getattr(sys.modules["__main__"], "__spec__", None)
            module = spec.name if spec is not None else module
        return f"python -m {module}"

    def parser(self) -> argparse.ArgumentParser:
        """The argument parser: the flow's flags, then the options every flow shares."""
        parser = argparse.ArgumentParser(prog=self.prog, description=self.doc,
                                         formatter_class=argparse.RawDescriptionHelpFormatter)
        for flag in self.flags:
            flag.add_to(parser)
        default = f" (default: {self.config_file.relative_to(self.config_file.parent.parent)})" if self.config_file else ""
        parser.add_argument("--config", type=Path, default=self.config_file, help="YAML config" + default)
        parser.add_argument("--out", type=Path, help="output root (default from config)" if self.out_field == "out"
                            else f"the {self.out_field} file to write")
        parser.add_argument("--workers", type=int, help="parallel tasks (default: one per core)")
        parser.add_argument("--runner", choices=RUNNERS, help="task runner (default from config: process)")
        parser.add_argument("--dask-address", help="existing Dask scheduler, e.g. tcp://127.0.0.1:8786")
        parser.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                            help="override any config field, e.g. --set shards.max_docs=5000 (repeatable)")
        return parser

    def parse_args(self, argv: Sequence[str] | None = None) -> C:
        """Command line -> typed config; a usage error exits 2 with one line."""
        parser = self.parser()
        args = parser.parse_args(argv)
        try:
            return self.config_cls.from_yaml(args.config, self._overrides(args))
        except (ValidationError, ValueError, OSError) as exc:  # the config, not the syntax: no usage text
            print(f"{self.prog}: error: {one_line(exc)}", file=sys.stderr)
            raise SystemExit(2) from None

    def _overrides(self, args: argparse.Namespace) -> dict[str, Any]:
        overrides = self.prepare(args) if self.prepare is not None else {}
        overrides.update(parse_set_option(args.set))
        for name in ("out", "workers", "runner", "dask_address"):
            value = getattr(args, name, None)
            if value is not None:
                overrides[self.out_field if name == "out" else name] = value
        for flag in self.flags:
            value = flag.value(args)
            if value is not None and flag.field:
                overrides[flag.field] = str(value) if isinstance(value, Path) else value
        return overrides

    def run(self, config: C) -> Any:
        """Run the flow with the task runner the config names (inside a Prefect API context).

        A local Dask cluster (``--runner dask``) starts with :func:`flows.runtime.dask_settings.quiet_cluster`.
        """
        quiet_environment_errors()
        with quiet_cluster(config.runner, config.dask_address):
            if self._runner is not None:
                return self._runner(config)
            return self.flow.with_options(task_runner=make_task_runner(config))(config)

    def check(self, config: C) -> OutputLock | None:
        """Fail fast, before Prefect starts, on what the user can fix (see the module docstring).

        The output root's lock is taken here and held by :meth:`main` until the run ends: taken
        and given back, two commands started together would both pass and race inside their
        flows, where the loser's refusal comes with Prefect's traceback.
        """
        if config.dask_address and config.runner != "dask":  # it would be ignored: the run stays on this machine
            raise UsageError(f"--dask-address {config.dask_address} needs --runner dask (the runner is {config.runner})")
        if config.lacks_input():
            raise UsageError("no input: give " + " and/or ".join(self._flag_name(f) for f in config.INPUT_FIELDS))
        missing = config.missing_inputs()
        if missing:
            raise UsageError(f"input not found: {', '.join(missing)} (no file or folder matches)")
        folders = config.folder_inputs()
        if folders:
            raise UsageError(f"input is a folder, not a file: {', '.join(folders)} "
                             f"(name the files in it, e.g. '{folders[0].rstrip('/')}/*')")
        try:
            config.preflight()
        except (ValueError, OSError) as exc:
            raise UsageError(one_line(exc)) from None
        if config.runner == "dask" and config.dask_address:
            check_scheduler(config.dask_address)
        if not self.out_is_root:
            return None
        out = Path(config.out)
        check_writable(out)
        lock = OutputLock(out, self.prog.removeprefix("python -m flows."), PENDING_RUN)
        lock.acquire()
        return lock

    def _flag_name(self, field: str) -> str:
        """The command-line flag that sets ``field`` (``dumps`` -> ``--dump``)."""
        named = [flag.name for flag in self.flags if flag.field == field]
        return named[0] if named else "--" + field.replace("_", "-")

    def main(self, argv: Sequence[str] | None = None) -> int:
        """``python -m flows.<name>``: parse, check, run, print where the output is."""
        config = self.parse_args(argv)
        from core.manifest import ManifestError  # DuckDB: imported for a run, not for --help

        lock: OutputLock | None = None
        try:
            lock = self.check(config)
            with prefect_api():
                result = self.run(config)
        except (UsageError, OutputLockedError) as exc:
            print(f"{self.prog}: error: {one_line(exc)}", file=sys.stderr)
            return 2
        except (RunError, ManifestError, FileNotFoundError, PermissionError, ValueError, RuntimeError) as exc:
            print(f"{self.prog}: error: {one_line(exc)}", file=sys.stderr)
            return 1
        except OSError as exc:  # a full disk, a read-only or vanished mount: retrying cannot fix it
            print(f"{self.prog}: error: {os_error_line(exc, getattr(config, self.out_field, None))}",
                  file=sys.stderr)
            return 1
        finally:
            if lock is not None:
                lock.release()
        return self.report(result) if self.report is not None else 0

    def __call__(self, argv: Sequence[str] | None = None) -> int:
        return self.main(argv)


def check_writable(out: Path) -> None:
    """Raise a UsageError naming ``out`` when the output root cannot be created or written."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".kinda-write-check-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"cannot write to --out {out}: {exc.strerror or exc}") from None


def check_scheduler(address: str, timeout_s: float = 5.0) -> None:
    """Raise RunError unless the Dask scheduler at ``address`` accepts a TCP connection.

    Dask itself retries for 30 s per attempt and Prefect wraps its failure in a long
    traceback; a refused or silent port is known in a second, before Prefect starts.
    Schemes other than ``tcp``/``tls`` (``inproc``, ``ucx``) are left to Dask.
    """
    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "tcp", "tls"):
        return
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--dask-address {address}: expected tcp://HOST:PORT")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise RunError(f"Dask scheduler at {address} is not reachable ({reason}); "
                       "start it (dask scheduler) or leave out --dask-address for a local cluster") from None
