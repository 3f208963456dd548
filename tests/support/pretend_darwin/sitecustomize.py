"""Every Python process started with this folder on PYTHONPATH believes it runs on macOS
(tests/test_platforms.py): sys.platform is "darwin", and the Linux-only facilities fail as they
would there, so that a use of one outside its platform check (coursekit.platforms) fails the run:

- the C library has no `prctl` (macOS's has none: AttributeError) and no `syscall` (macOS's takes
  other numbers than Landlock's: any use is a mistake here);
- /proc does not exist (FileNotFoundError), for every caller but psutil, whose Linux implementation
  reads it where macOS's asks the kernel: psutil is imported before the platform changes, so it
  keeps its Linux implementation and works as psutil does on a Mac;
- bubblewrap is not on PATH (shutil.which answers None).
"""
import builtins
import ctypes
import io
import os
import platform
import shutil
import sys

import sysconfig

import psutil  # noqa: F401 - imported with Linux's implementation, before sys.platform changes

sysconfig.get_config_vars()  # read (and cached) from this Python's Linux build data, as a Mac's reads its own

sys.platform = "darwin"
platform.mac_ver = lambda *args: ("14.5", ("", "", ""), "arm64")  # a Mac's answer (ipykernel reads it)
_CDLL = ctypes.CDLL


class _MacLibc(_CDLL):
    def __getattr__(self, name):
        if name in ("prctl", "syscall"):
            raise AttributeError(f"dlsym(RTLD_DEFAULT, {name}): symbol not found (pretend darwin)")
        return super().__getattr__(name)

    def __getitem__(self, name):
        return self.__getattr__(name) if isinstance(name, str) else super().__getitem__(name)


ctypes.CDLL = _MacLibc


def _from_psutil() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("psutil"):
            return True
        frame = frame.f_back
    return False


def _hidden(path) -> bool:
    try:
        text = os.fsdecode(path) if not isinstance(path, int) else ""
    except TypeError:
        return False
    return (text == "/proc" or text.startswith("/proc/")) and not _from_psutil()


def _guard(fn):
    def guarded(*args, **kwargs):
        path = args[0] if args else kwargs.get("path", kwargs.get("file", "."))
        if isinstance(path, (str, bytes, os.PathLike)) and _hidden(path):
            raise FileNotFoundError(2, "No such file or directory (pretend darwin)", os.fsdecode(path))
        return fn(*args, **kwargs)
    guarded.__wrapped__ = fn
    return guarded


builtins.open = io.open = _guard(io.open)
for _name in ("scandir", "listdir", "stat", "lstat", "open"):
    setattr(os, _name, _guard(getattr(os, _name)))
_which = shutil.which
shutil.which = lambda cmd, *a, **k: None if os.path.basename(str(cmd)) == "bwrap" else _which(cmd, *a, **k)
