"""The learner's workspace: a git-ignored copy of course/ that `make lab` serves.

The first run copies everything. Later runs never overwrite a file the learner changed: when
the course has a newer version of such a file, the new version is written beside it as
NAME.course-update.EXT and the learner is told. Unchanged files are simply updated. A
manifest (.course-manifest.json) records the hash of the course version last copied. Notebooks are
copied with the language_info of the learner's kernel in their metadata, so that JupyterLab, which
writes it there when the kernel starts, does not mark an untouched notebook changed.

    python -m coursekit.workspace [WORKSPACE]
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import nbformat

from coursekit.paths import COURSE, WORKSPACE

MANIFEST = ".course-manifest.json"
UPDATE_TAG = ".course-update"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def beside_name(path: Path) -> Path:
    return path.with_name(path.stem + UPDATE_TAG + path.suffix)


def kernel_language_info() -> dict:
    """What the learner's kernel (ipykernel in this environment) reports as its language_info."""
    from ipykernel.ipkernel import IPythonKernel

    return dict(IPythonKernel.language_info)


def localized(src: Path, language_info: dict | None) -> bytes:
    """The course file as the learner gets it: a notebook carries the language_info of the kernel that
    will run it. JupyterLab writes the kernel's language_info (Python's version included) into a
    notebook when the kernel starts, and marks the notebook changed when it differs: without this an
    untouched notebook asked to be saved on close."""
    data = src.read_bytes()
    if src.suffix != ".ipynb" or language_info is None:
        return data
    try:
        nb = nbformat.reads(data.decode(), as_version=nbformat.NO_CONVERT)
    except Exception:  # not a notebook after all: copy it as it is
        return data
    nb.metadata["language_info"] = language_info
    return (nbformat.writes(nb) + "\n").encode()


def sync(course: Path = COURSE, workspace: Path = WORKSPACE, language_info: dict | None = None) -> list[str]:
    """Bring `workspace` up to date with `course`; return one message per notable action.

    The manifest records, per file, the hash of the course version last copied ("course") and of
    the bytes written ("copied", notebooks localized with `language_info`: by default the kernel's)."""
    language_info = kernel_language_info() if language_info is None else language_info
    workspace.mkdir(parents=True, exist_ok=True)
    manifest_path = workspace / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    messages = []
    for src in sorted(p for p in course.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts):
        rel = src.relative_to(course).as_posix()
        dst = workspace / rel
        data = localized(src, language_info)
        entry = {"course": _sha(src.read_bytes()), "copied": _sha(data)}
        last = manifest.get(rel)
        if isinstance(last, str):  # a manifest written before notebooks were localized
            last = {"course": last, "copied": last}
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
            manifest[rel] = entry
            messages.append(f"added    {rel}")
            continue
        current = _sha(dst.read_bytes())
        if current == entry["copied"]:
            manifest[rel] = entry
        elif last is not None and current == last["copied"]:  # learner never touched it: take the new version
            dst.write_bytes(data)
            manifest[rel] = entry
            if last["course"] != entry["course"]:
                messages.append(f"updated  {rel}")
        elif last is None or last["course"] != entry["course"]:  # learner changed it and the course changed too
            beside = beside_name(dst)
            if not beside.exists() or _sha(beside.read_bytes()) != entry["copied"]:
                beside.write_bytes(data)
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
