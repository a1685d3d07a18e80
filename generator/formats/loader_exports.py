"""What a layout-3 release adds for dataset loaders, gathered while its instances are written:
the Parquet copies, the card's loader configs and the Croissant description."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..spec.spec import FamilySpec, ReleaseSpec
from .croissant import FamilyShape, croissant_document
from .croissant_messages import MESSAGES_DIR, MessagesWriter
from .dataset_configs import Config, ParquetPart, loader_configs, split_order
from .parquet_export import DEFAULT_SPLIT, ParquetShards, split_of
from .release_layouts import release_layout


class LoaderExports:
    """What a layout-3 release adds for dataset loaders while its instances are written: the
    Parquet files, and each family's shape for the Croissant description."""

    def __init__(self, folder: Path, release: ReleaseSpec, layout: int = 3) -> None:
        self.folder = folder
        self.release = release
        self.layout = layout
        self.files: dict[str, dict[str, Any]] = {}
        self.parts: list[ParquetPart] = []
        self.shapes: dict[str, FamilyShape] = {}
        self._family: FamilySpec | None = None
        self._shards: ParquetShards | None = None
        self._keys: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {}
        # Layout 8: each family's flattened messages, and the message keys each one uses.
        self._flatten = release_layout(layout).croissant_messages
        self._messages: MessagesWriter | None = None
        self.message_keys: dict[str, set[str]] = {}

    def start(self, family: FamilySpec) -> None:
        self._family = family
        self._shards = ParquetShards(self.folder, family.family_id, self.release.subsets,
                                     family.file, self.layout)
        self._keys = {}
        self.shapes[family.family_id] = FamilyShape(self.layout)
        if self._flatten:
            self._messages = MessagesWriter(self.folder, family.family_id)

    def add(self, instance: dict[str, Any]) -> None:
        assert self._shards is not None and self._family is not None
        name = self._shards.add(instance)
        if name not in self._keys:
            self._keys[name] = (split_of(instance), tuple(
                (field, instance["fields"][field]) for field in self.release.subsets))
        self.shapes[self._family.family_id].observe(instance)
        if self._messages is not None:
            self._messages.add(instance)

    def finish(self) -> None:
        assert self._shards is not None and self._family is not None
        family = self._family
        self.files.update(self._shards.close())
        if self._messages is not None:
            self.files[self._messages.name] = self._messages.close()
            self.message_keys[family.family_id] = self._messages.keys
            self._messages = None
        for name, (split, subsets) in sorted(self._keys.items()):
            self.parts.append(ParquetPart(name, family.family_id, family.paradigm.paradigm_id,
                                          split, subsets))
        self._shards = None

    def configs(self, where: str) -> list[Config]:
        """The card's loader configs over the Parquet files (``where`` names the release
        file in an error)."""
        order = split_order((entry.splits for entry in self.release.families), DEFAULT_SPLIT)
        return loader_configs(self.parts, order, where)

    def croissant(self, root_sha256: str, data_files: Mapping[str, Mapping[str, Any]],
                  descriptions: Mapping[str, str]) -> dict[str, Any]:
        """The Croissant description of the release's data files."""
        messages = {name: self.files[name] for name in self.files
                    if name.startswith(f"{MESSAGES_DIR}/")}
        return croissant_document(self.release, root_sha256, data_files, self.shapes,
                                  descriptions, self.layout, messages, self.message_keys)
