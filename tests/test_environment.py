"""Pins: requirements.txt is the list, environment.yml repeats it exactly, torch is 2.13.0."""
import re
from importlib import metadata

from coursekit.paths import REPO


def pins(text: str) -> dict:
    found = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(?:-\s+)?([A-Za-z0-9_.\-]+)==([^\s#]+)", line)
        if m:
            found[m.group(1).lower()] = m.group(2)
    return found


def test_environment_yml_has_the_same_pins_as_requirements():
    req = pins((REPO / "requirements.txt").read_text())
    env = pins((REPO / "environment.yml").read_text())
    env.pop("python", None)
    assert req == env
    assert req["torch"] == "2.13.0"


def test_every_requirement_is_pinned():
    for line in (REPO / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        assert not line or "==" in line, line


def test_installed_versions_are_the_pinned_ones():
    for name, version in pins((REPO / "requirements.txt").read_text()).items():
        assert metadata.version(name).split("+")[0] == version, name
