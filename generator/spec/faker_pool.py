"""Materialising a Faker provider into a curated pool file.

Faker's output changes between versions and locales, so authors run it once, at authoring
time; the pool file records the Faker version, locale, provider and seed in its ``source``
header, and releases depend only on the committed file.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

from ..core.errors import SpecError
from .yamlsafe import dump_yaml

_PROVIDER_RE = re.compile(r"^[a-z][a-z0-9_]*$")
#: How many draws to attempt per requested item before giving up on uniqueness.
_ATTEMPTS_PER_ITEM = 50


def faker_items(provider: str, count: int, locale: str, seed: int) -> list[str]:
    """``count`` distinct values of a Faker provider, in a seeded order."""
    from faker import Faker
    from faker.exceptions import UniquenessException

    if not _PROVIDER_RE.match(provider) or provider.startswith("seed"):
        raise SpecError.single(f"{provider!r} is not a Faker provider name")
    try:
        fake = Faker(locale)
    except AttributeError:
        raise SpecError.single(f"unknown Faker locale {locale!r}") from None
    fake.seed_instance(seed)
    method = getattr(fake, provider, None)
    if method is None or not callable(method):
        raise SpecError.single(f"Faker has no provider {provider!r} for locale {locale!r}")
    items: list[str] = []
    seen: set[str] = set()
    attempts = 0
    try:
        while len(items) < count:
            attempts += 1
            if attempts > count * _ATTEMPTS_PER_ITEM:
                raise UniquenessException
            value = method()
            if not isinstance(value, (str, int, float)):
                raise SpecError.single(f"provider {provider!r} gives {type(value).__name__} "
                                       "values; pools take strings")
            text = " ".join(str(value).split())
            if text and text not in seen:
                seen.add(text)
                items.append(text)
    except UniquenessException:
        raise SpecError.single(f"provider {provider!r} gave only {len(items)} distinct values; "
                               f"asked for {count}") from None
    except TypeError as exc:
        raise SpecError.single(f"provider {provider!r} cannot be called without "
                               f"arguments: {exc}") from None
    except SpecError:
        raise
    except Exception as exc:  # Faker's own failure (a provider needing a missing extra)
        raise SpecError.single(f"provider {provider!r} failed: {type(exc).__name__}: "
                               f"{exc}") from None
    return items


def pool_document(pool_id: str, provider: str, count: int, locale: str, seed: int) -> str:
    """The YAML text of a pool made from a Faker provider."""
    items = faker_items(provider, count, locale, seed)
    data = {
        "pool": pool_id,
        "description": f"{count} values of the Faker provider {provider} ({locale}), "
                       "materialised once so that releases never depend on Faker's version",
        "source": {"faker": version("faker"), "provider": provider, "locale": locale,
                   "seed": seed},
        "items": items,
    }
    return dump_yaml(data, f"pool {pool_id}")


def pool_id_for(out: Path, specs: Path) -> str:
    """A pool id from the output path: ``specs/pools/people/names.yaml`` → ``people.names``."""
    try:
        relative = out.resolve().relative_to((specs / "pools").resolve())
    except ValueError:
        relative = Path(out.name)
    parts = [re.sub(r"[^a-z0-9_]", "_", p.lower()) for p in relative.with_suffix("").parts]
    parts = [p if p[:1].isalpha() else f"p{p}" for p in parts if p]
    return ".".join(parts) or "pool"
