"""The seccomp filter every bwrap sandbox runs under, as a classic BPF program for `--seccomp`.

Network namespaces do not isolate AF_VSOCK: on a VM a sandboxed process could talk to the
hypervisor side or bind a vsock port the host holds. The filter closes what namespaces leave open:
- `socket`/`socketpair` with domain AF_VSOCK fail with EAFNOSUPPORT. The kernel reads the domain
  as a 32-bit int, so the rule compares only the low 32 bits: a plain equality rule was bypassed
  with `socket(0x1_00000028)`.
- io_uring fails with ENOSYS: IORING_OP_SOCKET creates sockets without the socket() system call.
- system calls of any other ABI (32-bit `int 0x80` on x86_64) kill the process: they have their
  own numbers and would otherwise bypass every rule above.
Everything else is allowed; the namespaces, the dropped uid and capabilities do the rest.
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile

from swebounty.sandbox._process import SandboxError

AF_VSOCK = 40
LOW_32_BITS = 0xFFFF_FFFF


class SeccompUnavailableError(SandboxError):
    """libseccomp (through pyseccomp) cannot build the filter on this machine."""


@functools.lru_cache(maxsize=1)
def filter_bpf() -> bytes:
    """The compiled filter (native architecture), built once per process."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as e:  # OSError: pyseccomp found no libseccomp.so
        raise SeccompUnavailableError(
            f"cannot load pyseccomp/libseccomp ({e}); install the system package libseccomp2 "
            "and the Python package pyseccomp"
        ) from e

    flt = sc.SyscallFilter(sc.ALLOW)
    # Only the native ABI is in the filter; any other ABI hits the bad-arch action.
    flt.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    vsock = sc.Arg(0, sc.MASKED_EQ, LOW_32_BITS, AF_VSOCK)
    for call in ("socket", "socketpair"):
        flt.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), call, vsock)
    for call in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
        flt.add_rule(sc.ERRNO(errno.ENOSYS), call)
    with tempfile.TemporaryFile() as f:
        flt.export_bpf(f)
        f.seek(0)
        return f.read()


def filter_fd() -> int:
    """A fresh readable fd holding the filter, positioned at 0 (bwrap reads it to EOF)."""
    fd = os.memfd_create("swebounty-seccomp", os.MFD_CLOEXEC)
    os.write(fd, filter_bpf())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
