"""Settings in one place: every COURSE_ variable the repository names is declared in
coursekit/settings.py, and no module reads one by a bare string."""
from __future__ import annotations

import re
import subprocess

from coursekit import settings
from coursekit.paths import REPO

NAME = re.compile(r"\bCOURSE_[A-Z][A-Z_]*[A-Z]\b")
BARE_READ = re.compile(r"""(environ(\.get)?\s*[\[(]|getenv\(|setenv\(|delenv\()\s*["']COURSE_""")
# specdec is the learner's package and cannot import coursekit: its one variable names itself and
# the test below checks it is the declared one
BARE_ALLOWED = {"coursekit/settings.py"}


def _tracked_text_files():
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in names:
        path = REPO / name
        if path.suffix in (".py", ".md", ".toml", ".cfg", ".yml", ".txt", "") or name in ("Makefile", ".ci/run"):
            try:
                yield name, path.read_text()
            except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
                continue


def test_every_course_variable_named_anywhere_is_declared():
    declared = {s.name for s in settings.ALL}
    undeclared = {}
    for name, text in _tracked_text_files():
        for found in set(NAME.findall(text)) - declared:
            undeclared.setdefault(found, []).append(name)
    assert not undeclared, f"declare these in coursekit/settings.py: {undeclared}"


def test_no_module_reads_a_course_variable_by_a_bare_string():
    offenders = [name for name, text in _tracked_text_files()
                 if name.endswith(".py") and name not in BARE_ALLOWED and BARE_READ.search(text)]
    assert not offenders, f"read these through coursekit.settings: {offenders}"


def test_the_learner_packages_variable_is_the_declared_one():
    from specdec import timing

    assert timing.REPEATS_VARIABLE == settings.TIMING_REPEATS.name


def test_settings_parse_and_pass_to_children(tmp_path):
    env = {settings.SANDBOX_CPU.name: "5", settings.SANDBOX_PROTECT.name: f"{tmp_path}:{tmp_path / 'b'}"}
    assert settings.SANDBOX_CPU.get(env) == 5 and settings.SANDBOX_MEMORY.get(env) == 8 * settings.GiB
    assert settings.SANDBOX_PROTECT.get(env) == [tmp_path.resolve(), (tmp_path / "b").resolve()]
    assert settings.HUB_USERS.get({}) == {"ada", "bo", "cy"} and settings.BROWSER_TESTS.get({}) is True
    child = settings.child_env({settings.KERNEL_THREADS: 2, "GONE": None}, base={"GONE": "x", "PATH": "/usr/bin"})
    assert child[settings.KERNEL_THREADS.name] == "2" and "GONE" not in child
    import sys
    from pathlib import Path

    assert child["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert len({s.name for s in settings.ALL}) == len(settings.ALL)
    assert all(s.help for s in settings.ALL)
    assert "| `COURSE_SANDBOX` |" in settings.table()
    assert settings.SANDBOX_REQUIRE.get({settings.SANDBOX_REQUIRE.name: "bubblewrap, landlock"}) == ["bubblewrap", "landlock"]


def test_the_instructors_guide_shows_the_settings_table():
    guide = (REPO / "docs" / "instructors.md").read_text()
    block = guide.split("<!-- settings:begin -->\n", 1)[1].split("\n<!-- settings:end -->", 1)[0]
    assert block == settings.table(), "run `python -m coursekit.settings` and paste the table into docs/instructors.md"
