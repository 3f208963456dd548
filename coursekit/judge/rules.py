"""The audit hook (PEP 578) every grading kernel installs, under every layer: from then on it refuses
with PermissionError, and appends each refusal to `.sandbox-refusals.log` in the working folder:

- network: every `socket.connect`, `bind`, `sendto`, `getaddrinfo` from Python code;
- processes: `os.fork`, `subprocess`, `os.system`, `os.exec*`, `os.posix_spawn`, `pty`;
- writing, creating, renaming or deleting files outside the kernel's working folder (the learner's
  own autograded folder), the temp folder and the private folder;
- opening or listing the grading data at all (coursekit.judge.sandbox.hidden_paths says what that
  is), except its own folder; reading what /proc shows of another process that can hold secrets.

Native code (ctypes, a compiled extension) is not subject to audit hooks: bubblewrap and Landlock
(coursekit.judge.layers) contain it where the machine has them.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

NETWORK = {"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
           "socket.gethostbyname", "socket.gethostbyaddr"}
PROCESS = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen",
           "pty.spawn", "os.kill", "os.killpg"}
FS_CHANGE = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link", "os.symlink",
             "os.truncate", "shutil.rmtree", "shutil.move", "os.utime"}
# what /proc shows of another process that can hold secrets (libraries read others' stat, status)
PRIVATE_PROC = {"environ", "cmdline", "mem", "maps", "smaps", "fd", "fdinfo", "cwd", "root", "exe", "auxv", "stack",
                "syscall", "map_files", "task", "pagemap"}


def install_rules(workdir: Path, blocked: list[Path], roots: list[Path], private: Path | None = None) -> None:
    """The audit hook of the kernel's process (coursekit.judge.sandbox.main calls it once the kernel
    is initialised): `blocked`, what it may neither open nor list (the grading data, the references
    and checkers: the hidden tests are judged in the grader's process, so nothing in the kernel
    needs them), except `workdir`, its own folder; `roots`, course roots where it may not write even
    when they lie under the temp folder; `private`, under Landlock, the kernel's private folder
    (its sockets, the judge's pipes, TMPDIR), where it may write."""
    workdir = workdir.resolve()
    temp = Path(os.environ.get("TMPDIR", "/tmp")).resolve()
    private = private.resolve() if private else None
    log = workdir / ".sandbox-refusals.log"
    state = {"inside": False}

    def inside(path, base):
        try:
            return path == base or base in path.parents
        except TypeError:
            return False

    def grading_data(path):
        return any(inside(path, b) for b in blocked) and not inside(path, workdir)

    def resolve(path):
        if isinstance(path, int):
            return None
        try:
            return Path(os.fsdecode(path)).resolve()
        except (TypeError, ValueError, OSError):
            return None

    def refuse(what):
        if not state["inside"]:
            state["inside"] = True
            try:
                with open(log, "a") as f:
                    f.write(what + "\n")
            finally:
                state["inside"] = False
        raise PermissionError(f"not allowed while grading: {what}")

    def hook(event, args):
        if state["inside"]:
            return
        if event in NETWORK:
            refuse(f"network ({event})")
        elif event == "os.kill" and args and args[0] == os.getpid():
            return  # ipykernel interrupts itself this way (an interrupt_request under bubblewrap)
        elif event == "os.killpg" and args and args[0] == os.getpid() == os.getpgrp():
            return  # and this way where it leads its process group (under Landlock)
        elif event in PROCESS:
            refuse(f"starting processes ({event})")
        elif event in ("os.listdir", "os.scandir"):
            path = resolve(args[0]) if args and args[0] is not None else None
            if path is not None and grading_data(path):
                refuse(f"listing grading data ({path})")
        elif event == "open" or event in FS_CHANGE:
            path = resolve(args[0]) if args else None
            if path is None:
                return
            writing = event != "open" or (isinstance(args[1], str) and any(m in args[1] for m in "wax+")) or (
                isinstance(args[2], int) and args[2] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))
            if grading_data(path):
                refuse(f"opening grading data ({path})")
            if len(path.parts) > 3 and path.parts[1] == "proc" and path.parts[2].isdigit() \
                    and int(path.parts[2]) != os.getpid() and path.parts[3] in PRIVATE_PROC:
                refuse(f"reading another process ({path})")
            in_temp = (inside(path, temp) or (private and inside(path, private))) and not any(inside(path, r) for r in roots)
            if writing and not (inside(path, workdir) or in_temp or str(path).startswith("/dev/")):
                refuse(f"writing outside the learner's folder ({path})")

    sys.addaudithook(hook)
