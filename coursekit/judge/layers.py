"""The sandbox's layers: which this machine has, which one grades, and what the report says.

- bubblewrap, where it can create namespaces: own mount, PID, IPC and network namespaces; the
  file system read-only; the grading data, references, checkers and source notebooks hidden;
  writable only the learner's folder, a private /tmp and a private folder for the kernel's
  sockets and the judge's pipes (coursekit.judge.sandbox.bwrap_command).
- landlock, where bubblewrap cannot run but the Linux kernel has Landlock (coursekit.judge.landlock:
  what each ABI adds, what it leaves out): before ipykernel starts any thread, the kernel
  restricts itself and all it will start to reading what a kernel needs (not the grading data,
  the references, home or /tmp), writing only the learner's folder and a private folder,
  executing nothing, no TCP bind or connect, no signals or abstract sockets outside its own
  domain. No root, no namespaces.
- audit, the audit hook alone (coursekit.judge.rules), where neither works: native code is not
  contained.

The layer is SandboxKernelManager.layer (grader_config.py; COURSE_SANDBOX, when set, wins:
coursekit.judge.limits); `mode(layer)` resolves `auto` to the strongest available.
"""
from __future__ import annotations

from coursekit import platforms, settings
from coursekit.judge.limits import AUDIT, BWRAP, LANDLOCK, LAYERS  # noqa: F401 - their names here too

WHY_MISSING = {BWRAP: "bubblewrap is missing or cannot create namespaces here (Debian: apt-get install bubblewrap)",
               LANDLOCK: "this Linux kernel has no Landlock (5.13 or newer, enabled at boot: lsm=...,landlock)"}
_MODE: dict = {}  # layer -> available here (probed once per process)


def available(layer: str) -> bool:
    """Whether grading kernels can run under `layer` on this machine (probed once per process)."""
    if layer not in _MODE:
        if layer == BWRAP:
            import shutil
            import subprocess

            exe = shutil.which("bwrap") if platforms.has_bubblewrap() else None
            _MODE[layer] = bool(exe) and subprocess.run(
                [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net",
                 "--unshare-ipc", "--die-with-parent", "true"], capture_output=True).returncode == 0
        elif layer == LANDLOCK:
            _MODE[layer] = False
            if platforms.has_landlock():
                from coursekit.judge import landlock

                _MODE[layer] = landlock.abi() >= 1
        else:
            _MODE[layer] = True
    return _MODE[layer]


def mode(wanted: str | None = None) -> str:
    """The layer that sandboxes grading kernels on this machine: `wanted` (the manager's `layer`;
    by default COURSE_SANDBOX, else auto) names one (its absence is then an error), or `auto` takes
    the strongest available: bubblewrap where it can create namespaces, else Landlock where the
    Linux kernel has it, else the audit hook alone. A layer named in COURSE_SANDBOX_REQUIRE (CI:
    bubblewrap,landlock) must be available."""
    for layer in settings.SANDBOX_REQUIRE.get():
        if not available(layer):
            raise RuntimeError(f"{settings.SANDBOX_REQUIRE.name} names {layer}, but {WHY_MISSING[layer]}")
    wanted = settings.SANDBOX.get() if wanted is None else settings.SANDBOX.parse(wanted)
    if wanted != "auto":
        if not available(wanted):
            raise RuntimeError(f"the sandbox layer asked for is {wanted} ({settings.SANDBOX.name} or "
                               f"SandboxKernelManager.layer), but {WHY_MISSING[wanted]}")
        return wanted
    return next(layer for layer in LAYERS if available(layer))


def describe(layer: str) -> str:
    """What the report says graded a run."""
    if layer == BWRAP:
        return "bubblewrap"
    if layer == LANDLOCK:
        from coursekit.judge import landlock

        return f"Landlock (ABI {landlock.abi()}) with the audit hook"
    if not platforms.linux():
        return "audit hook only (bubblewrap and Landlock are Linux's: native code is not contained)"
    missing = [WHY_MISSING[other] for other in (BWRAP, LANDLOCK) if not available(other)]
    return "audit hook only (" + ("; ".join(missing) if missing else f"{settings.SANDBOX.name}=audit") + \
        ": native code is not contained)"
