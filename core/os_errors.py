"""An OSError as one line for a command's user: what happened, its errno name, and where."""

from __future__ import annotations

import errno
import os
from pathlib import Path


def os_error_line(exc: OSError, root: Path | str | None = None) -> str:
    """``No space left on device (ENOSPC, errno 28): /path``; the path is ``under <root>`` when unknown.

    Library errors (pyarrow's, DuckDB's) often carry the errno without the file name; what was
    being written is then somewhere under the output root, which is what the user has to free.
    """
    code = exc.errno
    if code is None:
        text = " ".join(str(exc).split()) or type(exc).__name__
        return f"{text} ({type(exc).__name__})"
    where = exc.filename or (f"under {root}" if root is not None else "")
    line = f"{os.strerror(code)} ({errno.errorcode.get(code, '?')}, errno {code})"
    return f"{line}: {where}" if where else line
