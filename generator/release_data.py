"""Reading the instances of a built release, in file order, after checking its sums."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import SpecError
from .manifest import MANIFEST_FILE
from .verify import verify_release


def load_release_instances(folder: Path, check: bool = True) -> tuple[dict[str, Any],
                                                                       list[dict[str, Any]]]:
    """The manifest and every instance of a built release (data files in manifest order).

    With ``check``, the folder must first pass its own SHA256SUMS and manifest: scoring a
    tampered release would give numbers nobody can reproduce."""
    if check:
        report = verify_release(folder, None)
        if not report.ok:
            raise SpecError(report.problems)
    manifest_path = folder / MANIFEST_FILE
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpecError.single(f"cannot read the release manifest: {exc}",
                               str(manifest_path)) from None
    instances = [inst for name in sorted(manifest["files"]) if name.startswith("data/")
                 for inst in _read_jsonl(folder / name)]
    return manifest, instances


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)
