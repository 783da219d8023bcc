"""The ``kinda`` command: inspect and verify the manifest (and, from other modules, dedup/report).

``kinda manifest summary|sql|verify`` work on ``<out>/manifest.duckdb`` or an explicit
``--manifest`` file, read-only, so they are safe while a flow runs. Without either, the output
root is the current folder when it holds a manifest (a user inside an ``--out`` folder of any
name), else ``data``; when neither does, the error names both places. ``--out`` and
``--manifest`` may be given before or after the sub-command.

Errors a user can hit (no manifest, a corrupt one, a bad SQL query, ``| head`` closing the
pipe, a missing optional package) end in one line on stderr, never a traceback:
exit 2 for usage errors (bad query, missing manifest or package), 1 for a damaged manifest.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator

import duckdb

from core.manifest import ManifestError
from core.os_errors import os_error_line
from core.report import format_storage, format_summary, format_table, storage
from kinda import cli_dedup, cli_deployments, cli_filters, cli_report, cli_slurm, cli_tensors
from kinda.command import KindaError, first_line, manifest_path, open_manifest, output_root

#: The sub-command modules, each with ``register(subparsers)``; heavy imports stay inside their commands.
SUBCOMMANDS = (cli_dedup, cli_report, cli_tensors, cli_slurm, cli_filters, cli_deployments)
#: Exit status of a command whose reader closed the pipe (as a process killed by SIGPIPE).
BROKEN_PIPE_EXIT = 128 + 13


def cmd_summary(args: argparse.Namespace) -> int:
    """Print documents, bytes and drops per source and language, each document counted once."""
    manifest = open_manifest(args)
    print(format_summary(manifest))
    print()
    print(format_storage(storage(manifest, manifest.path.parent)))
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    """Run one read-only SQL query and print the result; a bad query is a usage error (exit 2)."""
    manifest = open_manifest(args)
    try:
        columns, rows = manifest.query(args.query)
    except (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException,
            duckdb.InvalidInputException, duckdb.ConversionException) as exc:
        raise KindaError(f"bad query: {first_line(exc)}") from exc
    if args.json:
        print(json.dumps([dict(zip(columns, row, strict=True)) for row in rows], default=str, indent=1))
    else:
        print(format_table(columns, rows))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Re-hash every shard and compare kept counts with the shards on disk; exit 1 on any problem.

    One line per problem (a missing or corrupt shard, a shard holding other than its recorded
    rows, an input whose shards hold other than its kept count, an unrecorded shard), then
    the totals; see :mod:`kinda.manifest_verify`.
    """
    from kinda.manifest_verify import verify_lines

    manifest = open_manifest(args)
    root = output_root(args)
    problems, summary = verify_lines(manifest, root)
    for line in [*problems, *summary]:
        print(line)
    return 1 if problems else 0


def _add_root_options(parser: argparse.ArgumentParser, top: bool) -> None:
    """``--out``/``--manifest``; on a sub-command they default to what was given before it."""
    existing = {s for action in parser._actions for s in action.option_strings}
    if "--out" not in existing:
        parser.add_argument("--out", default=None if top else argparse.SUPPRESS,
                            help="output root holding manifest.duckdb (default: the current folder when it "
                                 "holds one, else data)")
    if "--manifest" not in existing:
        parser.add_argument("--manifest", default=None if top else argparse.SUPPRESS, help="explicit manifest file")


def _subcommand_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every parser below ``parser`` (sub-commands, their sub-commands, ...)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):  # aliases map to the same parser
                yield child
                yield from _subcommand_parsers(child)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with the sub-commands registered and ``--out`` on every one."""
    parser = argparse.ArgumentParser(prog="kinda", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_root_options(parser, top=True)
    commands = parser.add_subparsers(dest="command", required=True)
    manifest = commands.add_parser("manifest", help="query and verify the manifest")
    sub = manifest.add_subparsers(dest="manifest_command", required=True)
    sub.add_parser("summary", help="documents, bytes, drops by reason").set_defaults(func=cmd_summary)
    sql = sub.add_parser("sql", help="run a SQL query (tables: runs, inputs, shards, drops, errors, matches, "
                                     "tensors, released)")
    sql.add_argument("query")
    sql.add_argument("--json", action="store_true", help="print rows as JSON")
    sql.set_defaults(func=cmd_sql)
    sub.add_parser("verify", help="re-hash shards, compare kept counts with the documents on disk").set_defaults(func=cmd_verify)
    for module in SUBCOMMANDS:
        module.register(commands)
    for child in _subcommand_parsers(parser):
        _add_root_options(child, top=False)
    return parser


def _chosen_parsers(parser: argparse.ArgumentParser,
                    args: argparse.Namespace) -> list[tuple[str, argparse.ArgumentParser]]:
    """The sub-command parsers the command line chose, outermost first, with the names that chose them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None) or ""
            child = action.choices.get(name)
            return [(name, child), *_chosen_parsers(child, args)] if child is not None else []
    return []


def _parser_of(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str],
               token: str) -> argparse.ArgumentParser:
    """The parser whose part of ``argv`` holds ``token``: the last sub-command named before it."""
    where = argv.index(token) if token in argv else len(argv)
    owner, position = parser, -1
    for name, child in _chosen_parsers(parser, args):
        position = argv.index(name, position + 1) if name in argv[position + 1:] else len(argv)
        if position > where:
            break
        owner = child
    return owner


def parse_command_line(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse ``argv``; an argument no parser knows is reported with the usage of the part it was in.

    argparse hands every unknown argument back to the top-level parser, which printed ``kinda``'s
    own usage for a typo in ``kinda report --hmtl x``: the user then had to look for ``report``'s
    options elsewhere. The sub-command whose arguments hold the typo reports it (exit 2, as
    argparse does); one before any sub-command is still ``kinda``'s.
    """
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    args, unknown = parser.parse_known_args(given)
    if unknown:
        _parser_of(parser, args, given, unknown[0]).error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _quiet_broken_pipe() -> int:
    """The reader (``| head``) went away: stop writing, say nothing, exit as ``cat`` would."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not raise again
    except (OSError, ValueError):  # stdout without a file descriptor (captured in tests)
        pass
    return BROKEN_PIPE_EXIT


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``kinda`` console script."""
    args = parse_command_line(argv)
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except KindaError as exc:
        print(f"kinda: {exc}", file=sys.stderr)
        return exc.status
    except FileNotFoundError as exc:
        print(f"kinda: {exc}", file=sys.stderr)
        return 2
    except ManifestError as exc:  # the manifest's own one-line diagnosis (damaged, unopenable)
        print(f"kinda: {first_line(exc)}", file=sys.stderr)
        return 1
    except duckdb.Error as exc:  # damage found only while reading (a corrupt block)
        print(f"kinda: {manifest_path(args)}: {first_line(exc)}", file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk, a read-only folder: the path and errno, not a traceback
        print(f"kinda: {os_error_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # ``python -m kinda.cli``
    sys.exit(main())
