"""The course on a learner's Mac, simulated here (issue 44): no macOS machine is available, so

- a static read of the code fails when a Linux-only facility (prctl, /proc, Landlock's system
  calls, bubblewrap, fork of a warm process, resource limits) is used outside its platform check
  (coursekit.platforms) or a place reached only through one;
- `make check` and Validate run end to end with Linux hidden: every Python process they start
  (nbgrader's, the grading kernels) has tests/support/pretend_darwin on its PYTHONPATH, whose
  sitecustomize reports the platform as darwin and makes prctl, syscall and /proc fail as they do
  on a Mac (psutil keeps working, as it does there), so a Linux-only call outside its check fails
  the run; grading then runs under the audit hook alone and `make check` says so once.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from coursekit import platforms
from coursekit.paths import COURSE, REPO, SOURCE
from coursekit.reference import with_reference_answers

PRETEND = REPO / "tests" / "support" / "pretend_darwin"
A = "01_acceptance_chain"

# Linux-only facilities: what their use looks like in code
LINUX_ONLY = {
    "prctl": re.compile(r"\bprctl\b"),
    "/proc": re.compile(r"[\"']/proc\b"),
    "Landlock's system calls": re.compile(r"\.syscall\b"),
    "resource limits": re.compile(r"^\s*(import resource\b|from resource import)"),
    "fork": re.compile(r"\bos\.fork\("),
    "bubblewrap": re.compile(r"[\"']bwrap[\"']"),
}
# Places only reached through a platform check, each with what guards it: a module that is Linux's
# own, or a function that runs only under a layer only Linux has (coursekit.judge.layers.available
# answers False for bubblewrap and Landlock wherever platforms.has_bubblewrap/has_landlock does).
REACHED_ONLY_ON_LINUX = {
    "coursekit/platforms.py": "the checks themselves",
    "coursekit/judge/landlock.py": "imported by layers.available behind platforms.has_landlock(), and by the "
                                   "kernel's launcher only under the landlock layer; abi() is 0 elsewhere",
    "coursekit/judge/sandbox.py:bwrap_command": "the bubblewrap layer only",
    "coursekit/judge/sandbox.py:landlock_paths": "the landlock layer only",
    "coursekit/judge/sandbox.py:main": "its /proc and Landlock steps run under the landlock layer only",
    "coursekit/judge/sandbox.py:SandboxKernelManager.format_kernel_cmd": "the bubblewrap layer only",
    "coursekit/grading/forkserver.py:serve": "started by coursekit.batch only where forkserver.usable() "
                                             "(platforms.can_fork_server())",
    "coursekit/judge/rules.py": "names of audit events and /proc paths the audit hook refuses: data, no call",
    "coursekit/judge/cpuwatch.py:CpuWatch._interrupt": "compares a process's name through psutil (every platform)",
}
CODE = [p for folder in ("coursekit", "specdec") for p in sorted((REPO / folder).rglob("*.py"))]


def _functions(tree: ast.AST) -> list[tuple[str, int, int]]:
    """(qualified name, first line, last line) of every function, methods as Class.method."""
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((prefix + child.name, child.lineno, child.end_lineno))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)
    visit(tree, "")
    return out


def _guarded(lines: list[str], start: int, line: int) -> bool:
    """Whether a platform check comes before `line`, or on it, in the function that starts at `start`."""
    return any("platforms." in text for text in lines[start - 1:line])


def linux_only_uses(paths=CODE, root=REPO) -> list[str]:
    """Every use of a Linux-only facility outside its check: "path:line (facility): code"."""
    found = []
    for path in paths:
        rel = path.relative_to(root).as_posix()
        if rel in REACHED_ONLY_ON_LINUX:
            continue
        text = path.read_text()
        lines = text.splitlines()
        functions = _functions(ast.parse(text))
        for number, line in enumerate(lines, 1):
            if line.lstrip().startswith("#"):
                continue
            for facility, pattern in LINUX_ONLY.items():
                if not pattern.search(line.split("  #")[0]):
                    continue
                inside = [(name, a) for name, a, b in functions if a <= number <= b]
                name, start = inside[-1] if inside else ("", 1)
                if f"{rel}:{name}" in REACHED_ONLY_ON_LINUX or any(
                        f"{rel}:{outer}" in REACHED_ONLY_ON_LINUX for outer, _ in inside):
                    continue
                if inside and _guarded(lines, inside[0][1], number):
                    continue
                found.append(f"{rel}:{number} ({facility}): {line.strip()}")
    return found


def test_linux_only_calls_stay_behind_their_platform_check():
    assert linux_only_uses() == []


def test_the_static_check_finds_an_unguarded_call(tmp_path):
    mod = tmp_path / "coursekit" / "x.py"
    mod.parent.mkdir()
    mod.write_text("import ctypes\n\n\ndef f():\n    ctypes.CDLL(None).prctl(36, 1)\n\n\n"
                   "def g():\n    if platforms.has_prctl():\n        ctypes.CDLL(None).prctl(36, 1)\n\n\n"
                   "def h():\n    return open('/proc/self/stat').read()\n")
    assert [u.split(" ")[0] for u in linux_only_uses([mod], tmp_path)] == ["coursekit/x.py:5", "coursekit/x.py:14"]


def test_the_checks_say_linux_here():
    assert platforms.linux() and platforms.has_prctl() and platforms.can_fork_server() and not platforms.windows()


def _darwin_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_SANDBOX")}
    env["PYTHONPATH"] = os.pathsep.join([str(PRETEND), str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    return env


def test_the_simulation_hides_linux():
    code = ("import sys, os, ctypes, psutil\n"
            "from coursekit import platforms\n"
            "from coursekit.judge import layers, landlock\n"
            "print(sys.platform, platforms.has_prctl(), platforms.can_fork_server(), layers.mode(), landlock.abi())\n"
            "try:\n    ctypes.CDLL(None).prctl\nexcept AttributeError:\n    print('no prctl')\n"
            "try:\n    os.listdir('/proc')\nexcept FileNotFoundError:\n    print('no /proc')\n"
            "print(len(psutil.Process().children()) >= 0)\n")
    done = subprocess.run([sys.executable, "-c", code], env=_darwin_env(), capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == ["darwin False False audit 0", "no prctl", "no /proc", "True"], done.stdout


@pytest.mark.slow  # grades notebook 01 twice (make check, Validate) in fresh processes
def test_make_check_and_validate_on_a_mac(tmp_path):
    ws = tmp_path / "workspace" / A
    ws.mkdir(parents=True)
    with_reference_answers(COURSE / A / f"{A}.ipynb", SOURCE / A / f"{A}.ipynb", ws / f"{A}.ipynb")
    env = _darwin_env()
    done = subprocess.run([sys.executable, "-m", "coursekit.check", str(ws.parent), "01"], env=env,
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "TOTAL 12/12" in out and "Traceback" not in out, out[-3000:]
    assert out.count("audit hook only") == 1, out[-3000:]  # said once, in the instructors' guide's words

    from coursekit.grading.scratch import ScratchCourse

    # CI requires bubblewrap and Landlock (COURSE_SANDBOX_REQUIRE): a Mac has neither, so no COURSE_SANDBOX* here
    course = ScratchCourse(tmp_path / "root", env={"PYTHONPATH": env["PYTHONPATH"],
                                                   **{name: None for name in os.environ if name.startswith("COURSE_SANDBOX")}})
    blank = course.nbgrader("validate", str(COURSE / A / f"{A}.ipynb"), check=False)
    assert "VALIDATION FAILED" in blank.stdout and "NotImplementedError" in blank.stdout, blank.stdout[-2000:]
    filled = course.nbgrader("validate", str(ws / f"{A}.ipynb"), check=False)
    assert "Success! Your notebook passes all the tests." in filled.stdout, (filled.stdout + filled.stderr)[-2000:]


def test_every_learner_command_has_a_python_m_form():
    """`python -m coursekit` lists setup, lab, check and test (the make targets a learner uses), with
    the standard library alone; an unknown command is an error."""
    base = Path(sys.base_prefix) / "bin" / "python3"  # the Python .venv was made from: no traitlets, no nbgrader
    python = str(base if base.exists() else sys.executable)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([python, "-m", "coursekit"], capture_output=True, text=True, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr
    for command, target in (("setup", "make venv"), ("lab", "make lab"), ("check", "make check"), ("test", "make test")):
        assert f"python3 -m coursekit {command}" in done.stdout and target in done.stdout, done.stdout
    assert subprocess.run([python, "-m", "coursekit", "nope"], capture_output=True, cwd=REPO, env=env).returncode == 2
    readme = (REPO / "README.md").read_text()
    assert all(f"python3 -m coursekit {command}" in readme for command in ("lab", "check", "test", "setup"))


@pytest.mark.parametrize("module", ["coursekit", "coursekit.lab"])
def test_native_windows_stops_with_one_sentence(module):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "tests" / "support" / "pretend_windows"), str(REPO)]))
    done = subprocess.run([sys.executable, "-m", module, "lab"], capture_output=True, text=True, cwd=REPO, env=env)
    assert done.returncode == 1 and done.stdout == "" and done.stderr == platforms.WSL + "\n", done.stderr


def test_python_m_coursekit_test_is_make_test():
    """`python -m coursekit test` runs the Makefile's `make test` command, flag for flag."""
    from coursekit.__main__ import COMMANDS

    recipe = (REPO / "Makefile").read_text().split("\ntest:", 1)[1].splitlines()[1].split()
    assert recipe[0] == "$(BIN)/python" and recipe[1:] == COMMANDS["test"], recipe
