"""Errors of the results storage itself, without the Parquet machinery (pyarrow, numpy), so
the `masgrid run` process can catch them without importing what only the recorder needs."""

from __future__ import annotations

import errno
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Iterator


class ResultsUnwritable(OSError):
    """The results directory refuses writes (disk full, read-only, permissions): no run
    can be recorded, so the sweep stops instead of running work it cannot keep."""

    def __str__(self) -> str:
        return str(self.strerror)


#: OS errors that mean the storage, not one file, is the problem
STORAGE_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EIO, errno.EFBIG}


@contextmanager
def storage_errors(where: Path) -> Iterator[None]:
    """OS errors of the storage itself -> ResultsUnwritable naming the directory."""
    try:
        yield
    except ResultsUnwritable:
        raise
    except OSError as exc:
        text = str(exc)
        if exc.errno in STORAGE_ERRNOS or "No space left" in text or "Read-only file system" in text:
            # pyarrow raises OSError without an errno for a failed write; its message keeps strerror
            raise ResultsUnwritable(exc.errno or errno.EIO, f"cannot write {where}: {exc.strerror or text}") from None
        raise
