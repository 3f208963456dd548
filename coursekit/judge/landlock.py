"""Landlock (Linux 5.13+): a process restricts itself and everything it starts, without root and
without namespaces, and native code cannot undo it. The grading kernel uses it where bubblewrap
cannot run (coursekit.judge.sandbox: the LANDLOCK layer), through its three system calls and
ctypes (no dependency): `landlock_create_ruleset`, `landlock_add_rule`, `landlock_restrict_self`.

What each ABI version adds (the kernel reports its version; `abi()` reads it), and what the
grading kernel's ruleset (`restrict`) asks of it:

| ABI | Linux | adds | used here |
|---|---|---|---|
| 1 | 5.13 | file system access by path: execute, read, write, list, remove, create files of each kind | read-only where a kernel needs to read, writable only the learner's folder and a private folder; execute nowhere |
| 2 | 5.19 | REFER: moving or linking a file into another folder | inside the writable folders only |
| 3 | 6.2 | TRUNCATE | on the writable folders and the few devices |
| 4 | 6.7 | TCP bind and connect by port | no port at all: no TCP bind or connect |
| 5 | 6.10 | IOCTL_DEV: ioctl on device files | only on /dev/null, /dev/zero, /dev/full, /dev/urandom, /dev/random |
| 6 | 6.12 | scopes: signals, abstract unix sockets | both scoped to the kernel's own domain: it cannot signal the grader or reach abstract sockets outside |
| 7 | 6.15 | audit logging of denials (restrict_self flags) | the defaults (denials go to the kernel's audit log where auditing is on) |
| 8 | later | restricting every thread of a process at once | not used: the kernel restricts itself while it has one thread |
| 9 | later | connecting to a unix socket by its path | not used yet (the course machine's kernel offers 7) |

(Sources: the kernel's Documentation/userspace-api/landlock.rst and include/uapi/linux/landlock.h;
ABIs 8 and 9 as the Rust `landlock` crate's changelog lists them.)

The rules restrict a thread and what it starts afterwards, never other threads that already run:
`restrict` refuses to run in a process that has more than one thread (the grading kernel calls
it before ipykernel starts any), so no thread of the kernel escapes the ruleset.

What Landlock does not cover, and what the grading kernel does about it:
- Reading what the ruleset leaves readable. `restrict` does not leave the whole file system
  readable: only the system's libraries and configuration (/usr, /lib*, /bin, /sbin, /etc, /sys),
  the Python installation and its packages, the course's own code (coursekit, specdec: not the
  `solutions` package), the kernel's own /proc entry and a few /proc files that libraries read
  (cpuinfo, meminfo, stat, ...), the learner's folder and the private folder. Home folders, /tmp,
  /run, other processes under /proc, the grading data, the references and checkers stay closed
  even to native code (the sandbox refuses to start if grading data lies under a readable path).
  Everything readable is readable by any user of the machine anyway.
- UDP, and connecting to a unix socket by its path (no ABI up to 8 controls them): the audit hook
  refuses both from Python; native code could reach a service listening on a unix socket (the
  Docker socket, if the grader runs as root next to one: run graders as an unprivileged user).
- Creating processes: Landlock does not stop fork(). The ruleset grants execute nowhere, so native
  code cannot start another program (execve fails), and the grader ends every process a kernel
  leaves behind (coursekit.judge.sandbox: the child subreaper).
- Resource use: the limits (memory, CPU, file size, processes) are rlimits, set before.
"""
from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path

from coursekit import platforms

# system call numbers: the same on every architecture (added after the numbering was unified)
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1  # (2, RULE_NET_PORT, would open ports: none is)
PR_SET_NO_NEW_PRIVS = 38

# file system access rights, by the ABI that introduced them
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FS_BY_ABI = {1: (1 << 13) - 1, 2: REFER, 3: TRUNCATE, 5: IOCTL_DEV}
# network (ABI 4) and scopes (ABI 6)
BIND_TCP, CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = READ_FILE | READ_DIR
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the rights a rule on a file may hold
WRITE = (WRITE_FILE | READ_FILE | READ_DIR | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK
         | MAKE_FIFO | MAKE_SYM | REFER | TRUNCATE)  # no execute, no device nodes
DEVICE = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/urandom", "/dev/random")
PROC_FILES = ("cpuinfo", "meminfo", "stat", "loadavg", "uptime", "version", "filesystems", "sys")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is packed: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_LIBC: list = []


def _libc():
    """The C library, loaded on first use: only on Linux (coursekit.platforms.has_landlock), where its
    syscall() takes Landlock's numbers."""
    if not _LIBC:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        _LIBC.append(libc)
    return _LIBC[0]


class LandlockError(OSError):
    pass


def _call(number, *args) -> int:
    result = _libc().syscall(ctypes.c_long(number), *args)
    if result < 0:
        code = ctypes.get_errno()
        raise LandlockError(code, f"landlock system call {number}: {os.strerror(code)}")
    return result


def abi() -> int:
    """The Landlock ABI version this kernel offers; 0 where it has none (too old: ENOSYS; built
    without it or not enabled at boot: EOPNOTSUPP; a seccomp filter of a container: EPERM/ENOSYS);
    0 on every other system, whose system call numbers mean other calls."""
    if not platforms.has_landlock():
        return 0
    try:
        return _call(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except LandlockError as exc:
        if exc.errno in (errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
            return 0
        raise


def handled_fs(version: int) -> int:
    return sum(bits for since, bits in FS_BY_ABI.items() if version >= since)


def restrict(readable, writable, *, version: int | None = None) -> int:
    """Restrict this process (and everything it starts) to reading `readable` paths (folders and
    everything beneath, or single files), reading and writing `writable` folders, reading and
    writing the harmless devices, no execute anywhere; no TCP bind or connect (ABI 4); signals and
    abstract unix sockets scoped to this domain (ABI 6). Returns the ABI used. Raises where this
    kernel has no Landlock or where the process already runs more than one thread."""
    version = abi() if version is None else version
    if version < 1:
        raise LandlockError(errno.EOPNOTSUPP, "this kernel has no Landlock")
    threads = os.listdir("/proc/self/task")
    if len(threads) != 1:
        raise LandlockError(errno.EBUSY, f"Landlock restricts only the calling thread, and this process runs "
                                         f"{len(threads)}: restrict before any thread starts")
    fs = handled_fs(version)
    attr = _RulesetAttr(fs, (BIND_TCP | CONNECT_TCP) if version >= 4 else 0,
                        (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if version >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if version >= 6 else (16 if version >= 4 else 8)  # what this ABI knows
    ruleset = _call(CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        rules = [(p, READ) for p in readable] + [(p, WRITE) for p in writable] + [(p, DEVICE) for p in DEVICES]
        for path, rights in rules:
            _allow(ruleset, Path(path), rights & fs)
        if _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise LandlockError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        _call(RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return version


def _allow(ruleset: int, path: Path, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # a path this machine lacks (/lib32, a device): nothing to allow
    try:
        if not path.is_dir():
            rights &= FILE_RIGHTS
        rule = _PathBeneath(rights, fd)
        _call(ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0))
    finally:
        os.close(fd)
