"""The sandbox that learners' code runs in while it is graded (nbgrader autograde, `make check`,
`make grade`).

grader_config.py sets `c.Execute.kernel_manager_class` to `SandboxKernelManager`, so every
grading kernel starts as `python -m coursekit.judge.sandbox -f <connection file>` instead of
`python -m ipykernel_launcher`, under one of three layers (`mode()`: COURSE_SANDBOX names one, or
`auto` takes the strongest this machine has; `describe()` is what the report says):

- BWRAP, bubblewrap, where it can create namespaces (`bwrap_command`): own mount, PID, IPC and
  network namespaces; the file system read-only; the grading data, references, checkers and
  source notebooks hidden; writable only the learner's folder, a private /tmp and a private
  folder for the kernel's sockets and the judge's pipes.
- LANDLOCK, where bubblewrap cannot run but the Linux kernel has Landlock (coursekit.judge.landlock:
  what each ABI adds, what it leaves out): before ipykernel starts any thread, the kernel
  restricts itself and all it will start to reading what a kernel needs (`landlock_paths`: not
  the grading data, the references, home or /tmp), writing only the learner's folder and a
  private folder (its sockets, the judge's pipes, TMPDIR), executing nothing, no TCP bind or
  connect, no signals or abstract sockets outside its own domain. No root, no namespaces.
- AUDIT, the audit hook alone (below), where neither works: native code is not contained.

In every layer the launcher, before the kernel starts:

1. sets resource limits (kernel and any child): address space LIMITS["memory"] bytes, CPU time
   LIMITS["cpu"] seconds (then the kernel is killed), files written at most LIMITS["file"]
   bytes, no core dumps, and LIMITS["processes"] processes for a non-root grader;
2. imports numpy and matplotlib (building its font cache on a fresh machine), so that their
   own start-up work is done before any rule applies (torch imports fine under the rules);
3. initialises the kernel (connection file, IPython profile and history), then installs a
   Python audit hook (PEP 578) that, from then on, refuses with PermissionError:
   - network: every `socket.connect`, `bind`, `sendto`, `getaddrinfo` from Python code;
   - processes: `os.fork`, `subprocess`, `os.system`, `os.exec*`, `os.posix_spawn`, `pty`;
   - writing, creating, renaming or deleting files outside the kernel's working folder (the
     learner's own autograded folder), the temp folder and the private folder;
   - opening or listing the grading data at all: the gradebook, grades.csv, the course root's
     source/ (solutions), submitted/, autograded/ and feedback/ folders, except its own folder,
     and the `solutions` package (references and checkers: coursekit.judge runs them outside);
     under parallel grading (`make grade`, coursekit.grade) the same for the main course root
     named by COURSE_SANDBOX_PROTECT (a list: the worker's run folder and the main course root),
     and their .grading/ folders of other learners' scratch roots.
   Every refusal is also appended to `.sandbox-refusals.log` in the working folder.

And the grader (the process that starts kernels) becomes a child subreaper (`adopt_orphans`):
what a kernel leaves running (a double fork, `sleep &` from native code) becomes its child, not
init's, and is killed when the notebook is done (`end_strays`), under every layer.

What it guarantees: well-behaved Python code (including the learner's, the libraries' and the
checkers') cannot reach the network, start processes, write outside its folder or read other
learners' work and the solutions; under bubblewrap and Landlock, native code cannot either
(Landlock's gaps: UDP and unix sockets reached by path, coursekit.judge.landlock); a runaway cell
is stopped by the memory, CPU and file-size limits or by nbgrader's per-cell timeout; an exit()
ends only this kernel (nbgrader scores the rest as errors); no process outlives grading. What it
does NOT guarantee under the audit hook alone: native code (ctypes, a compiled extension) is not
subject to audit hooks and can bypass the Python-level rules; and as root the process limit does
not apply (the kernel refuses os.fork instead). No score depends on what the kernel's own Python
concludes: hidden tests are judged in the grader's process (coursekit.judge.execute).
"""
from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

from jupyter_client.ioloop import AsyncIOLoopKernelManager
from traitlets import Bool

from coursekit import settings, threads

GiB = 1024 ** 3
LIMITS = dict(memory=settings.SANDBOX_MEMORY.get(), cpu=settings.SANDBOX_CPU.get(),
              file=settings.SANDBOX_FILE.get(), processes=settings.SANDBOX_PROCESSES.get())

NETWORK = {"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
           "socket.gethostbyname", "socket.gethostbyaddr"}
PROCESS = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen",
           "pty.spawn", "os.kill", "os.killpg"}
FS_CHANGE = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link", "os.symlink",
             "os.truncate", "shutil.rmtree", "shutil.move", "os.utime"}
# what /proc shows of another process that can hold secrets (libraries read others' stat, status)
PRIVATE_PROC = {"environ", "cmdline", "mem", "maps", "smaps", "fd", "fdinfo", "cwd", "root", "exe", "auxv", "stack",
                "syscall", "map_files", "task", "pagemap"}
GRADING_DATA = ("gradebook.db", "grades.csv", "source", "submitted", "autograded", "feedback")
SCRATCH_ROOTS = ".grading"  # where parallel grading puts each learner's scratch course root


class SandboxKernelManager(AsyncIOLoopKernelManager):
    """Starts the grading kernel through this module instead of ipykernel_launcher, with one
    torch/BLAS thread and OpenMP's passive wait (coursekit.threads).

    A grading kernel that dies (os._exit, a limit) stays dead: with jupyter_client's default
    auto-restart, a fresh kernel sometimes replaced it before nbclient noticed the death, and the
    cell then waited out the timeout for a reply that never came instead of failing at once."""

    autorestart = Bool(False, config=True, help="Restart a grading kernel that dies (no: report it).")

    async def _async_pre_start_kernel(self, **kw):
        """Under bubblewrap the kernel has its own network namespace, and under Landlock it may not
        bind TCP ports, so it talks to the grader over unix sockets (ZMQ's ipc transport) in a
        private folder that also holds its connection file and the judge's pipes; nothing of other
        kernels (their connection files and keys) is visible to it."""
        self._workdir = Path(kw.get("cwd") or os.getcwd()).resolve()
        self._layer = mode()
        adopt_orphans()  # this process inherits whatever the kernel leaves running (ended at cleanup)
        self._children_before = children()
        # one torch/BLAS thread and a passive OpenMP wait (coursekit.threads: why)
        # and timings that only need to run: specdec.timing makes one repeat of each
        values = {**threads.env(threads.KERNEL_THREADS), settings.TIMING_REPEATS: 1, settings.SANDBOX_MODE: self._layer}
        if self._layer in (BWRAP, LANDLOCK):
            import tempfile

            self._private = Path(tempfile.mkdtemp(prefix="grading-kernel-"))
            _seed_caches(self._private)
            self.connection_file = str(self._private / "kernel.json")
            self.transport = "ipc"
            self.ip = str(self._private / "ipc")
            # home is read-only (bubblewrap) or closed (Landlock): matplotlib's and IPython's folders go here
            values.update({"MPLCONFIGDIR": self._private / "matplotlib", "IPYTHONDIR": self._private / "ipython"})
        if self._layer == LANDLOCK:  # everything else the kernel writes goes to its private folder too
            (self._private / "tmp").mkdir()
            values.update({settings.SANDBOX_PRIVATE: self._private, "TMPDIR": self._private / "tmp",
                           "JUPYTER_CONFIG_DIR": self._private / "jupyter",
                           "JUPYTER_DATA_DIR": self._private / "jupyter", "JUPYTER_RUNTIME_DIR": self._private})
        kw["env"] = settings.child_env(values, base=kw.get("env") or os.environ)
        return await super()._async_pre_start_kernel(**kw)

    @property
    def sandbox_folder(self) -> Path | None:
        """The kernel's private folder under bubblewrap or Landlock (writable inside and out), else None."""
        return getattr(self, "_private", None)

    async def _async_interrupt_kernel(self) -> None:
        """Under bubblewrap or Landlock, interrupt by message (ipykernel then sends SIGINT to itself):
        a SIGINT to the process group would also reach bubblewrap, which would die and take the
        kernel with it."""
        if self.sandbox_folder is None:
            return await super()._async_interrupt_kernel()
        self._connect_control_socket()
        self.session.send(self._control_socket, self.session.msg("interrupt_request", content={}))

    interrupt_kernel = _async_interrupt_kernel

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart)
        if not restart and hasattr(self, "_children_before"):
            # the kernel is gone (jupyter_client waited for it): whatever it started and left
            # running became this process's child (adopt_orphans); end them all
            end_strays(self._children_before)
        if self.sandbox_folder is not None and not restart:
            import shutil

            shutil.rmtree(self.sandbox_folder, ignore_errors=True)

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        if "ipykernel_launcher" in cmd:
            i = cmd.index("ipykernel_launcher")
            cmd = [sys.executable, "-m", "coursekit.judge.sandbox", *cmd[i + 1:]]
        if mode() == BWRAP:
            cmd = bwrap_command(cmd, getattr(self, "_workdir", Path.cwd()), self._private)
        return cmd


def _limit(kind, value):
    soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value if hard == resource.RLIM_INFINITY else hard))


def set_limits() -> None:
    _limit(resource.RLIMIT_AS, LIMITS["memory"])
    _limit(resource.RLIMIT_CPU, LIMITS["cpu"])
    _limit(resource.RLIMIT_FSIZE, LIMITS["file"])
    _limit(resource.RLIMIT_CORE, 0)
    if os.getuid() != 0:
        _limit(resource.RLIMIT_NPROC, LIMITS["processes"])


def _warm_up() -> None:
    """Do the libraries' own start-up work (imports, font cache) before the rules apply."""
    import numpy  # noqa: F401

    try:
        import matplotlib

        matplotlib.use("module://matplotlib_inline.backend_inline")
        import matplotlib.font_manager  # builds the font cache on a fresh machine
        import matplotlib.pyplot  # noqa: F401
    except ImportError:
        pass


BWRAP, LANDLOCK, AUDIT = "bubblewrap", "landlock", "audit"  # the values of COURSE_SANDBOX
LAYERS = (BWRAP, LANDLOCK, AUDIT)


def available(layer: str) -> bool:
    """Whether grading kernels can run under `layer` on this machine (probed once per process)."""
    if layer not in _MODE:
        if layer == BWRAP:
            import shutil
            import subprocess

            exe = shutil.which("bwrap")
            _MODE[layer] = bool(exe) and subprocess.run(
                [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net",
                 "--unshare-ipc", "--die-with-parent", "true"], capture_output=True).returncode == 0
        elif layer == LANDLOCK:
            from coursekit.judge import landlock

            _MODE[layer] = landlock.abi() >= 1
        else:
            _MODE[layer] = True
    return _MODE[layer]


WHY_MISSING = {BWRAP: "bubblewrap is missing or cannot create namespaces here (Debian: apt-get install bubblewrap)",
               LANDLOCK: "this Linux kernel has no Landlock (5.13 or newer, enabled at boot: lsm=...,landlock)"}


def mode() -> str:
    """The layer that sandboxes grading kernels on this machine: COURSE_SANDBOX names one (its
    absence is then an error), or `auto` takes the strongest available: bubblewrap where it can
    create namespaces, else Landlock where the Linux kernel has it, else the audit hook alone.
    A layer named in COURSE_SANDBOX_REQUIRE (CI: bubblewrap,landlock) must be available."""
    for layer in settings.SANDBOX_REQUIRE.get():
        if not available(layer):
            raise RuntimeError(f"{settings.SANDBOX_REQUIRE.name} names {layer}, but {WHY_MISSING[layer]}")
    wanted = settings.SANDBOX.get()
    if wanted != "auto":
        if not available(wanted):
            raise RuntimeError(f"{settings.SANDBOX.name}={wanted}, but {WHY_MISSING[wanted]}")
        return wanted
    return next(layer for layer in LAYERS if available(layer))


def describe(layer: str) -> str:
    """What the report says graded a run."""
    if layer == BWRAP:
        return "bubblewrap"
    if layer == LANDLOCK:
        from coursekit.judge import landlock

        return f"Landlock (ABI {landlock.abi()}) with the audit hook"
    missing = [WHY_MISSING[other] for other in (BWRAP, LANDLOCK) if not available(other)]
    return "audit hook only (" + ("; ".join(missing) if missing else f"{settings.SANDBOX.name}=audit") + \
        ": native code is not contained)"


_MODE: dict = {}


PR_SET_CHILD_SUBREAPER = 36
_SUBREAPER: list = []


def adopt_orphans() -> None:
    """Make this process (the grader) a child subreaper: a process that a kernel starts and
    leaves behind (a double fork, `sleep &` from native code) becomes this process's child when
    its parent exits, instead of init's, so `end_strays` can find and end it."""
    if not _SUBREAPER:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
        _SUBREAPER.append(True)


def children() -> set[int]:
    """The process ids whose parent is this process (zombies included)."""
    me, found = os.getpid(), set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found.add(int(entry.name))
    return found


def end_strays(before: set[int]) -> list[int]:
    """Kill and reap every child of this process that was not one `before` the kernel started:
    once the kernel is gone, those are what it left running (this process is their subreaper).
    Repeats until none is left, as each killed one's own children become ours in turn."""
    import signal

    ended: list[int] = []
    for _ in range(1000):
        strays = children() - before
        if not strays:
            break
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        ended += sorted(strays)
    return ended


def _course_roots(workdir: Path) -> list[Path]:
    workdir = workdir.resolve()
    roots = [workdir.parents[2]] if len(workdir.parents) > 2 and workdir.parents[1].name == "autograded" else []
    return roots + _protected()


def _protected() -> list[Path]:
    """The course roots named in COURSE_SANDBOX_PROTECT (os.pathsep-separated): under make grade,
    the worker's run folder (where the run's other learners are graded) and the main course root."""
    return settings.SANDBOX_PROTECT.get()


def hidden_paths(workdir: Path) -> list[Path]:
    """What a grading kernel must not see: the grading data of its course root (and, under parallel
    grading, of the main course root), the references and checkers, the repository's source
    notebooks (the solutions), except the kernel's own folder."""
    from coursekit.paths import SOURCE

    workdir = workdir.resolve()
    root = workdir.parents[2] if len(workdir.parents) > 2 else None  # <root>/autograded/<student>/<assignment>
    paths = [root / name for name in GRADING_DATA] if root and (root / "autograded") in workdir.parents else []
    for main_root in _protected():  # make grade: the run's other learners and the main course root too
        paths += [main_root / name for name in (*GRADING_DATA, SCRATCH_ROOTS)]
    return paths + _answer_packages() + [Path(SOURCE).resolve()]


def bwrap_command(cmd: list[str], workdir: Path, private: Path) -> list[str]:
    """`cmd` inside bubblewrap: its own mount, PID, IPC and network namespaces; the whole file
    system read-only; an empty private /tmp; the grading data, references and checkers replaced by
    empty folders (files by /dev/null); writable only the kernel's own folder and its private
    socket folder. The kernel dies with the grader."""
    from jupyter_core.paths import jupyter_runtime_dir

    from coursekit.paths import REPO

    args = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    # a checkout (and its .venv) under /tmp, as a CI clone may be: back in, read-only, before the hiding
    temp = Path("/tmp").resolve()
    for keep in dict.fromkeys([Path(REPO).resolve(), Path(sys.prefix).resolve()]):
        if temp in keep.parents:
            args += ["--ro-bind", str(keep), str(keep)]
    for path in [*hidden_paths(workdir), Path(jupyter_runtime_dir()).resolve()]:
        if path.is_dir():
            args += ["--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
    args += ["--bind", str(workdir), str(workdir), "--bind", str(private), str(private),
             "--setenv", "TMPDIR", "/tmp",
             # ipykernel shuts down when its parent's pid changes; in its own PID namespace it always
             # has (--die-with-parent ends it with the grader instead)
             "--unsetenv", "JPY_PARENT_PID", "--chdir", str(workdir), "--"]
    return args + cmd


def _seed_caches(private: Path) -> None:
    """A writable matplotlib folder for the kernel (home is read-only inside), seeded with this
    machine's font cache so that no kernel rebuilds it."""
    import shutil

    folder = private / "matplotlib"
    folder.mkdir()
    try:
        import matplotlib

        for cached in Path(matplotlib.get_cachedir()).glob("fontlist-*.json"):
            shutil.copy(cached, folder / cached.name)
    except ImportError:
        pass


def _answer_packages() -> list[Path]:
    """Where `solutions` (references and checkers) lives, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("solutions")
    # a namespace package's path also lists the editable install's path hook (a name, not a folder)
    return [Path(p).resolve() for p in (spec.submodule_search_locations or []) if os.path.isabs(p)] if spec else []


KERNEL_PACKAGES = ("coursekit", "specdec")  # the course's code a kernel imports (not `solutions`)
SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/sys")


def landlock_paths(workdir: Path, private: Path) -> tuple[list[Path], list[Path]]:
    """What a grading kernel under Landlock may read, and where it may write (coursekit.judge.landlock:
    why reads are restricted too). Raises if grading data lies beneath a readable path."""
    import importlib.util

    from coursekit.judge import landlock

    hidden = hidden_paths(workdir)

    def holds_grading_data(folder: Path) -> bool:
        return any(folder == h or folder in h.parents for h in hidden)

    python = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    # sys.path's folders, but not one that holds grading data (PYTHONPATH=<the repository>): the
    # course's packages are granted on their own below
    python += [p for p in sys.path if p and os.path.isabs(p) and os.path.isdir(p)
               and not holds_grading_data(Path(p).resolve())]
    course = []
    for name in KERNEL_PACKAGES:
        spec = importlib.util.find_spec(name)
        course += [p for p in spec.submodule_search_locations or [] if os.path.isabs(p)] if spec else []
    proc = [f"/proc/{os.getpid()}", *(f"/proc/{name}" for name in landlock.PROC_FILES)]
    readable = list(dict.fromkeys(Path(p).resolve() for p in (*SYSTEM, *python, *course) if os.path.exists(p)))
    readable += [Path(p) for p in proc if os.path.exists(p)]
    for path in readable:
        if holds_grading_data(path):
            raise RuntimeError(f"grading data lies beneath {path}, which a kernel under Landlock must read: "
                               "move the course root and the Python installation apart")
    return readable, [workdir.resolve(), private.resolve()]


def apply_landlock(workdir: Path, private: Path) -> int:
    """Restrict this process (the kernel, before ipykernel starts its threads) with Landlock."""
    from coursekit.judge import landlock

    readable, writable = landlock_paths(workdir, private)
    return landlock.restrict(readable, writable)


def install_rules(workdir: Path) -> None:
    workdir = workdir.resolve()
    temp = Path(os.environ.get("TMPDIR", "/tmp")).resolve()
    private = settings.SANDBOX_PRIVATE.get()  # under Landlock: the kernel's sockets, the judge's pipes, TMPDIR
    private = private.resolve() if private else None
    # the references and checkers are among them: the hidden tests are judged in the grader's
    # process (coursekit.judge.execute), so nothing in the kernel needs them
    blocked = hidden_paths(workdir)
    roots = _course_roots(workdir)  # no writes there even when they lie under the temp folder
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


def main() -> None:
    set_limits()
    _warm_up()
    if settings.SANDBOX_MODE.get() == LANDLOCK:  # before ipykernel starts any thread (landlock.restrict)
        apply_landlock(Path.cwd(), settings.SANDBOX_PRIVATE.get())
    from ipykernel.kernelapp import IPKernelApp

    import warnings

    # under Landlock: no TCP port for the pipe that forwards subprocesses' output (there are none)
    warnings.filterwarnings("ignore", message="Couldn't bind IOPub Pipe")
    app = IPKernelApp.instance()
    app.initialize(sys.argv[1:])  # reads the connection file, sets up IPython's profile and history
    if settings.SANDBOX_MODE.get() == LANDLOCK:
        # ipykernel looks for its children at shutdown through psutil, which lists all of /proc: closed
        # under Landlock. The grader ends whatever the kernel leaves running (end_strays) instead.
        app.kernel._process_children = lambda: []
    # Warnings are not failures: autograde drops them from stderr (grader_config.py, IgnorePattern),
    # and Validate, which checks every cell (Validator.validate_all) and cannot take that step,
    # would report a correct cell that warned (a RuntimeWarning from 0/0 handled by np.where) as failed.
    warnings.simplefilter("ignore")
    install_rules(Path.cwd())
    app.start()


if __name__ == "__main__":
    main()
