"""The JUnit XML pytest has just written, read by the guard (swebounty_guard.py) inside its
pytest_sessionfinish, before any later code of the workspace could change the file: never
through a link, never a FIFO or other special file, never more than `limit` bytes.

Python 3.6+, standard library only.
"""

import os
import stat


def read(path, limit=64 << 20):
    """(the file's bytes, None) or (None, why there are none)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        return None, "no JUnit XML (%s)" % e.strerror
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "the JUnit XML is not a regular file"
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                return None, "the JUnit XML is over %d bytes" % limit
        return b"".join(chunks), None
    finally:
        os.close(fd)
