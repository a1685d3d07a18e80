"""Memory systems for the exported inspect task: what a model is given in place of the
conversation before the probe.

A memory system is a class with two methods. ``ingest(messages)`` is handed every message of
the phases before the probe, in order (a new system for every sample, so nothing carries over
between samples); ``recall(probe)`` is handed the probe's messages and returns the messages
placed before them. The model then answers the probe with what ``recall`` returned in front
of it. Three ship here:

- ``full``: the whole history in context (what the task does without a memory system);
- ``none``: nothing (the probe alone: the no-memory baseline);
- ``bm25``: BM25 over the earlier turns (each message a passage, ranked by the ``bm25s``
  library against the probe), the ``k`` best placed before the probe in their original order.

Another is a class in a Python file named as ``PATH.py:CLASS``; its constructor takes the
keyword argument ``k`` (the number of passages asked for, which it may ignore).

Needs inspect_ai and the standard library only (``bm25s`` for ``bm25``); copied beside the
task as memspec_memory.py by `memspec export --format inspect`.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any, Protocol

from inspect_ai.model import ChatMessage, ChatMessageUser

#: The number of passages a retrieval memory places before the probe unless told.
DEFAULT_K = 5
#: What the passages a retrieval memory found are introduced with.
RECALLED_HEADING = "Passages recalled from earlier in this conversation:"


class MemorySystem(Protocol):
    """What the task asks of a memory system."""

    def ingest(self, messages: list[ChatMessage]) -> None:
        """Take in the messages of the phases before the probe, in order."""

    def recall(self, probe: list[ChatMessage]) -> list[ChatMessage]:
        """The messages to place before the probe's."""


class FullHistory:
    """The whole history in context: every earlier message, as it was."""

    name = "full"

    def __init__(self, k: int = DEFAULT_K) -> None:
        self.messages: list[ChatMessage] = []

    def ingest(self, messages: list[ChatMessage]) -> None:
        self.messages.extend(messages)

    def recall(self, probe: list[ChatMessage]) -> list[ChatMessage]:
        return list(self.messages)


class NoMemory:
    """No memory: the probe alone."""

    name = "none"

    def __init__(self, k: int = DEFAULT_K) -> None:
        pass

    def ingest(self, messages: list[ChatMessage]) -> None:
        pass

    def recall(self, probe: list[ChatMessage]) -> list[ChatMessage]:
        return []


_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    """Lower-cased words: one tokenisation for passages and queries alike, independent of
    any locale or stemmer version."""
    return [w.lower() for w in _WORD.findall(text)]


class BM25Memory:
    """BM25 (``bm25s``, its default Lucene variant) over the earlier messages, each message a
    passage; the ``k`` passages that score highest against the probe's text (ties in their
    original order, passages scoring 0 left out) placed before the probe, in the order they
    were said, as one user message."""

    name = "bm25"

    def __init__(self, k: int = DEFAULT_K) -> None:
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        self.k = k
        self.passages: list[str] = []

    def ingest(self, messages: list[ChatMessage]) -> None:
        self.passages += [f"{m.role}: {m.text}" for m in messages if m.text.strip()]

    def recall(self, probe: list[ChatMessage]) -> list[ChatMessage]:
        import bm25s

        query = _words(" ".join(m.text for m in probe))
        corpus = [_words(p) for p in self.passages]
        if not query or not any(corpus):
            return []
        vocabulary = {w: i for i, w in enumerate(dict.fromkeys(w for p in corpus for w in p))}
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenization.Tokenized(
            ids=[[vocabulary[w] for w in p] for p in corpus], vocab=vocabulary),
            show_progress=False)
        known = [vocabulary[w] for w in query if w in vocabulary]
        if not known:
            return []
        scores = retriever.get_scores(known)
        ranked = sorted(range(len(corpus)), key=lambda i: (-float(scores[i]), i))
        chosen = sorted(i for i in ranked[:self.k] if scores[i] > 0)
        if not chosen:
            return []
        text = "\n\n".join(self.passages[i] for i in chosen)
        return [ChatMessageUser(content=f"{RECALLED_HEADING}\n\n{text}")]


BUILT_IN: dict[str, type] = {"full": FullHistory, "none": NoMemory, "bm25": BM25Memory}


def memory_class(name: str) -> Any:
    """The memory system ``name`` names: a built-in one, or ``PATH.py:CLASS``."""
    if name in BUILT_IN:
        return BUILT_IN[name]
    path, sep, attribute = name.rpartition(":")
    if not sep or not path.endswith(".py"):
        raise ValueError(f"unknown memory system {name!r}: give one of "
                         f"{', '.join(BUILT_IN)} or PATH.py:CLASS")
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    if spec is None or spec.loader is None or not Path(path).is_file():
        raise ValueError(f"memory system {name!r}: no Python file {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, attribute):
        raise ValueError(f"memory system {name!r}: {path} defines no {attribute}")
    return getattr(module, attribute)


def with_memory(messages: list[ChatMessage], probe_messages: int, system: Any
                ) -> list[ChatMessage]:
    """The messages a model answers: those the memory system recalls, then the probe (the
    last ``probe_messages`` messages), after the system ingested everything before it."""
    cut = len(messages) - probe_messages
    system.ingest(messages[:cut])
    return [*system.recall(messages[cut:]), *messages[cut:]]
