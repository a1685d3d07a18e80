"""Layout 8: the messages of a release as Croissant records, one record per message.

mlcroissant 1.0 reads a list inside the items of a repeated column one record per item of
the column (the messages inside a phase come back one per phase), so the conversation cannot
be a nested field of the family's record set. Instead each family gets a flattened copy of its
messages, ``messages/<family>.jsonl``: one line per message, in conversation order, keyed by
the instance's ``id``, the phase's place (``phase_index``) and name, and the message's place
in its phase (``index``), with the message's own keys as written. Its bytes are canonical
JSON, so the manifest pins them as it pins the data; its record set ``<family>_messages``
names the family's record set by the instance id, a join a loader can make on
(``id``, ``phase_index``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.canonical import dump_bytes

MESSAGES_DIR = "messages"
#: The keys of a message line that place it; the message's own keys follow them.
_PLACE = (("id", "sc:Text"), ("phase_index", "sc:Integer"), ("phase", "sc:Text"),
          ("index", "sc:Integer"))
#: The keys a message may have (instance.schema.json admits no others): its role, its text
#: and a tool's name.
_MESSAGE_KEYS = (("role", "sc:Text"), ("content", "sc:Text"), ("name", "sc:Text"))


def messages_file(family: str) -> str:
    """The release path of a family's flattened messages."""
    return f"{MESSAGES_DIR}/{family}.jsonl"


def message_lines(instance: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The messages of one instance as the flattened file's lines, in conversation order."""
    return [{"id": instance["id"], "phase_index": phase_index, "phase": phase["phase"],
             "index": index, **message}
            for phase_index, phase in enumerate(instance["phases"])
            for index, message in enumerate(phase["messages"])]


class MessagesWriter:
    """Writes one family's ``messages/<family>.jsonl`` as its instances are written, hashing
    it as it goes; ``close`` gives what the manifest records of the file."""

    def __init__(self, folder: Path, family: str) -> None:
        self.name = messages_file(family)
        path = folder / self.name
        path.parent.mkdir(exist_ok=True)
        self._file = path.open("wb")
        self._hash = hashlib.sha256()
        self._bytes = 0
        self._records = 0
        self.keys: set[str] = set()

    def add(self, instance: Mapping[str, Any]) -> None:
        """Append the messages of one instance."""
        for line in message_lines(instance):
            self.keys.update(line)
            data = dump_bytes(line)
            self._file.write(data)
            self._hash.update(data)
            self._bytes += len(data)
            self._records += 1

    def close(self) -> dict[str, Any]:
        """Close the file; its SHA-256, size and line count, as the manifest records a data
        file's."""
        self._file.close()
        return {"sha256": self._hash.hexdigest(), "bytes": self._bytes,
                "records": self._records}


def messages_distribution(name: str, info: Mapping[str, Any]) -> dict[str, Any]:
    """The FileObject of a flattened messages file."""
    return {"@type": "cr:FileObject", "@id": name, "name": name, "contentUrl": name,
            "encodingFormat": "application/jsonlines", "sha256": info["sha256"],
            "contentSize": f"{info['bytes']} B"}


def messages_record_set(family: str, keys: set[str]) -> dict[str, Any]:
    """The record set ``<family>_messages``: one record per message of the family, its
    ``id`` referencing the family's record set; a message key no message of the family has
    (a tool's ``name``) is not described."""
    record_set = f"{family}_messages"
    file = messages_file(family)
    fields = []
    for name, kind in (*_PLACE, *((k, t) for k, t in _MESSAGE_KEYS if k in keys)):
        field: dict[str, Any] = {
            "@type": "cr:Field", "@id": f"{record_set}/{name}", "name": name, "dataType": kind,
            "source": {"fileObject": {"@id": file}, "extract": {"column": name}}}
        if name == "id":
            field["references"] = {"field": {"@id": f"{family}/id"}}
        fields.append(field)
    return {"@type": "cr:RecordSet", "@id": record_set, "name": record_set,
            "description": f"the messages of {family}, one record per message in "
                           "conversation order: the instance's id, the phase's place and "
                           "name, the message's place in its phase, its role, content and "
                           "(a tool's result) name",
            "field": fields}
