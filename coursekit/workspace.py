"""The learner's workspace: a git-ignored copy of course/ that `make lab` serves.

The first run copies everything. Later runs never overwrite a file the learner changed: when
the course has a newer version of such a file, the new version is written beside it as
NAME.course-update.EXT and the learner is told. Unchanged files are simply updated. A
manifest (.course-manifest.json) records the hash of the course version last copied.

    python -m coursekit.workspace [WORKSPACE]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

from coursekit.paths import COURSE, WORKSPACE

MANIFEST = ".course-manifest.json"
UPDATE_TAG = ".course-update"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def beside_name(path: Path) -> Path:
    return path.with_name(path.stem + UPDATE_TAG + path.suffix)


def sync(course: Path = COURSE, workspace: Path = WORKSPACE) -> list[str]:
    """Bring `workspace` up to date with `course`; return one message per notable action."""
    workspace.mkdir(parents=True, exist_ok=True)
    manifest_path = workspace / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    messages = []
    for src in sorted(p for p in course.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts):
        rel = src.relative_to(course).as_posix()
        dst = workspace / rel
        new = _sha(src)
        last_copied = manifest.get(rel)
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            manifest[rel] = new
            messages.append(f"added    {rel}")
            continue
        current = _sha(dst)
        if current == new:
            manifest[rel] = new
        elif current == last_copied:  # learner never touched it: take the new version
            shutil.copyfile(src, dst)
            manifest[rel] = new
            messages.append(f"updated  {rel}")
        elif last_copied != new:  # learner changed it and the course changed too
            beside = beside_name(dst)
            if not beside.exists() or _sha(beside) != new:
                shutil.copyfile(src, beside)
            messages.append(f"KEPT your {rel}; the course has a newer version: "
                            f"{beside.relative_to(workspace).as_posix()} (copy your answers across)")
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return messages


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workspace", nargs="?", type=Path, default=WORKSPACE)
    workspace = ap.parse_args(argv).workspace
    for message in sync(COURSE, workspace):
        print(message)
    print(f"workspace ready: {workspace}")


if __name__ == "__main__":
    main()
