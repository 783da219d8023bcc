"""``kinda tensors verify DIR``: check a local tensor set against its own ``metadata.json``.

Opening a set for training checks sizes and token ids but not checksums (hashing every file on
each start would cost minutes); this is the full check to run after copying a set or before a
long job (:func:`loader.verify.verify_tensor_set`: sizes, SHA256, index offsets, every token id
below the vocabulary size). One line per problem, naming the file; exit 0 when the set is
intact, 1 when any file is damaged or the metadata is unusable, 2 for usage errors.
"""

from __future__ import annotations

import argparse
from typing import Any

from kinda.command import KindaError, first_line


def cmd_tensors_verify(args: argparse.Namespace) -> int:
    """Verify one tensor set; print its problems and a one-line total."""
    from loader.safe_paths import UnsafePathError
    from loader.tensor_writer import TensorFormatError
    from loader.verify import verify_tensor_set

    try:
        report = verify_tensor_set(args.directory, splits=args.split or None, checksums=not args.no_checksums)
    except (TensorFormatError, UnsafePathError) as exc:
        raise KindaError(f"{args.directory}: {first_line(exc)}", 1) from exc
    except ValueError as exc:  # a remote location
        raise KindaError(first_line(exc)) from exc
    for problem in report.problems:
        print(problem)
    what = "sizes and token ids" if args.no_checksums else "sizes, checksums and token ids"
    verdict = "ok" if report.ok else f"{len(report.problems)} problem(s)"
    print(f"{report.location}: {report.files} files, {report.bytes:,} bytes checked ({what}): {verdict}")
    return 0 if report.ok else 1


def register(subparsers: Any) -> None:
    """Add ``kinda tensors verify`` (called by :func:`kinda.cli.build_parser`)."""
    tensors = subparsers.add_parser("tensors", help="check tensor sets")
    sub = tensors.add_subparsers(dest="tensors_command", required=True)
    verify = sub.add_parser("verify", help="sizes, SHA256 and token ids of a local tensor set")
    verify.add_argument("directory", help="the tensor set (the folder holding metadata.json)")
    verify.add_argument("--split", action="append", help="check only this split (repeatable)")
    verify.add_argument("--no-checksums", action="store_true", help="skip SHA256 (sizes and ids only)")
    verify.set_defaults(func=cmd_tensors_verify)
