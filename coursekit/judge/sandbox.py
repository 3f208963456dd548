"""The sandbox that learners' code runs in while it is graded (nbgrader autograde, `make check`,
`make grade`): the kernel's manager and launcher, and what a kernel may not see.

grader_config.py sets `c.Execute.kernel_manager_class` to `SandboxKernelManager`, so every
grading kernel starts as `python -m coursekit.judge.sandbox -f <connection file>` instead of
`python -m ipykernel_launcher`, under one of three layers (coursekit.judge.layers: bubblewrap,
Landlock, the audit hook alone; the manager's `layer`, `auto` by default, takes the strongest this
machine has). The layer and the kernel's resource limits are the manager's traits
(coursekit.judge.limits: set in grader_config.py; an environment variable, when set, wins).

In every layer the launcher (`main`), before the kernel starts:

1. sets resource limits (kernel and any child): address space `memory_limit` bytes, CPU time
   `cpu_limit` seconds (then the kernel is killed), files written at most `file_limit` bytes, no
   core dumps, and `process_limit` processes for a non-root grader;
2. imports numpy and matplotlib (building its font cache on a fresh machine), so that their
   own start-up work is done before any rule applies (torch imports fine under the rules);
3. under Landlock, restricts itself (`landlock_paths`);
4. initialises the kernel (connection file, IPython profile and history), then installs the
   audit hook (coursekit.judge.rules) over what it must not see (`hidden_paths`): the gradebook,
   grades.csv, the course root's source/ (solutions), submitted/, autograded/ and feedback/
   folders, except its own folder, and the `solutions` package (references and checkers:
   coursekit.judge runs them outside); under parallel grading (`make grade`) the same for the
   course roots named by COURSE_SANDBOX_PROTECT (the worker's run folder and the main course
   root), and their .grading/ folders of other learners' scratch roots.

And the grader becomes a child subreaper (coursekit.judge.reaper): no process outlives grading.

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
import sys
from pathlib import Path

from jupyter_client.ioloop import AsyncIOLoopKernelManager
from traitlets import Bool

from coursekit import settings, threads
from coursekit.judge.layers import BWRAP, LANDLOCK, mode
from coursekit.judge.limits import ENVIRONMENT, KernelLimits, set_limits
from coursekit.judge.reaper import adopt_orphans, children, end_strays
from coursekit.judge.rules import install_rules

GRADING_DATA = ("gradebook.db", "grades.csv", "source", "submitted", "autograded", "feedback")
SCRATCH_ROOTS = ".grading"  # where parallel grading puts each learner's scratch course root
LIMIT_SETTINGS = {"memory_limit": settings.SANDBOX_MEMORY, "cpu_limit": settings.SANDBOX_CPU,
                  "file_limit": settings.SANDBOX_FILE, "process_limit": settings.SANDBOX_PROCESSES}


def from_environment(limits: KernelLimits, environ=None) -> KernelLimits:
    """`limits` with every trait whose environment variable is set (ENVIRONMENT) taken from it:
    the variable wins over grader_config.py."""
    for trait, name in ENVIRONMENT.items():
        setting = settings.BY_NAME[name]
        if setting.is_set(environ):
            setattr(limits, trait, setting.get(environ))
    return limits


def configured(config=None) -> KernelLimits:
    """The sandbox's settings a grading kernel would get from nbgrader configuration `config`
    (coursekit.grading.config.course_config: grader_config.py), the environment winning."""
    limits = KernelLimits()
    for section in ("KernelLimits", "SandboxKernelManager"):
        for trait, value in ((config or {}).get(section) or {}).items():
            if limits.has_trait(trait):
                setattr(limits, trait, value)
    return from_environment(limits)


class SandboxKernelManager(KernelLimits, AsyncIOLoopKernelManager):
    """Starts the grading kernel through this module instead of ipykernel_launcher, with one
    torch/BLAS thread and OpenMP's passive wait (coursekit.threads).

    A grading kernel that dies (os._exit, a limit) stays dead: with jupyter_client's default
    auto-restart, a fresh kernel sometimes replaced it before nbclient noticed the death, and the
    cell then waited out the timeout for a reply that never came instead of failing at once."""

    autorestart = Bool(False, config=True, help="Restart a grading kernel that dies (no: report it).")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        from_environment(self)  # a variable set in the grader's environment wins over grader_config.py

    async def _async_pre_start_kernel(self, **kw):
        """Under bubblewrap the kernel has its own network namespace, and under Landlock it may not
        bind TCP ports, so it talks to the grader over unix sockets (ZMQ's ipc transport) in a
        private folder that also holds its connection file and the judge's pipes; nothing of other
        kernels (their connection files and keys) is visible to it."""
        self._workdir = Path(kw.get("cwd") or os.getcwd()).resolve()
        self._layer = mode(self.layer)
        adopt_orphans()  # this process inherits whatever the kernel leaves running (ended at cleanup)
        self._children_before = children()
        # one torch/BLAS thread and a passive OpenMP wait (coursekit.threads: why)
        # and timings that only need to run: specdec.timing makes one repeat of each
        values = {**threads.env(threads.KERNEL_THREADS), settings.TIMING_REPEATS: 1, settings.SANDBOX_MODE: self._layer}
        # the limits cross to the launcher (main) in the kernel's environment
        values.update({setting: getattr(self, trait) for trait, setting in LIMIT_SETTINGS.items()})
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
        if (getattr(self, "_layer", None) or mode(self.layer)) == BWRAP:
            cmd = bwrap_command(cmd, getattr(self, "_workdir", Path.cwd()), self._private)
        return cmd


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


def main() -> None:
    set_limits(**{trait: setting.get() for trait, setting in LIMIT_SETTINGS.items()})  # as the manager passed them
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
    install_rules(Path.cwd(), hidden_paths(Path.cwd()), _course_roots(Path.cwd()), settings.SANDBOX_PRIVATE.get())
    app.start()


if __name__ == "__main__":
    main()
