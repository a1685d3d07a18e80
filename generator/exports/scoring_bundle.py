"""memspec's answer scoring as one file the exported inspect task carries: the scoring
module and every module of memspec it imports (the reading stage, the abstention patterns),
found by following their relative imports, each kept as its own source and loaded under a
private package named by the bundle's hash, so that the modules' own relative imports work
unchanged. memspec's time-limited regular expressions stand in as the standard library's
``re`` (the same syntax: memspec compiles patterns as ``re`` reads them), without the limit.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from ..core.errors import SpecError

#: The folder of memspec's modules (generator/ in a checkout, memspec/ when installed).
_PACKAGE_ROOT = Path(__file__).parents[1]
#: Where the bundle starts: the module the exported task calls.
_ENTRY = "analysis.scoring"
#: The one module of memspec outside the scoring that the bundle replaces rather than carries.
_REPLACED = "core.safe_regex"

#: The standard library's stand-in for memspec's time-limited regex engine.
_STDLIB_REGEX = '''\
import re as _re


class PatternTooSlow(Exception):
    """Never raised here: the standard library's re has no time limit."""


class _Compiled:
    def __init__(self, pattern, flags):
        self._pattern = _re.compile(pattern, flags)
        self.groups = self._pattern.groups

    def match(self, text, timeout=None):
        return self._pattern.match(text)

    def search(self, text, timeout=None):
        return self._pattern.search(text)


def regex_seconds():
    return None


def compiled(pattern, ignore_case=False):
    return _Compiled(pattern, _re.IGNORECASE if ignore_case else 0)


def pattern_error(pattern):
    try:
        _re.compile(pattern)
    except (_re.error, ValueError, OverflowError, RecursionError) as exc:
        return str(exc)
    return None


def match(pattern, text):
    return _re.match(pattern, text) is not None


def search(pattern, text, ignore_case=False):
    return _re.search(pattern, text, _re.IGNORECASE if ignore_case else 0) is not None
'''

#: The loader at the head of the bundle: a finder for the private package's modules.
_LOADER = '''\
import importlib.abc as _abc
import importlib.util as _util
import sys as _sys

_PREFIX = _PACKAGE + "."


class _BundleLoader(_abc.MetaPathFinder, _abc.Loader):
    """Finds the bundled modules by name; each runs from its own source."""

    def find_spec(self, fullname, path=None, target=None):
        name = "" if fullname == _PACKAGE else fullname.removeprefix(_PREFIX)
        if fullname != _PACKAGE and not fullname.startswith(_PREFIX) or name not in _SOURCES:
            return None
        return _util.spec_from_loader(fullname, self, is_package=name in _PACKAGES)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = "" if module.__name__ == _PACKAGE else module.__name__.removeprefix(_PREFIX)
        exec(compile(_SOURCES[name], "<memspec " + (name or "bundle") + ">", "exec"),
             module.__dict__)


if not any(getattr(f, "bundle", None) == _PACKAGE for f in _sys.meta_path):
    _finder = _BundleLoader()
    _finder.bundle = _PACKAGE
    _sys.meta_path.append(_finder)
_scoring = __import__(_PACKAGE + "." + _ENTRY, fromlist=["*"])
globals().update({k: v for k, v in vars(_scoring).items() if not k.startswith("__")})
'''


def _path(module: str) -> Path:
    """The file of a module of memspec, by its dotted name under the package."""
    return _PACKAGE_ROOT / (module.replace(".", "/") + ".py")


def _relative_imports(name: str, source: str) -> list[str]:
    """The modules of memspec that module ``name`` imports, anywhere in it (imports inside
    functions too), as dotted names under the package."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join([*name.split(".")[:-node.level], *filter(None, [node.module])])
            for alias in node.names:
                # `from ..core import safe_regex` imports a module; `from .x import y`, a name.
                module = f"{base}.{alias.name}".lstrip(".")
                found.append(module if module == _REPLACED or _path(module).exists()
                             else base)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                else [node.module or ""]
            if any(n == "memspec" or n.startswith("memspec.") for n in names):
                raise SpecError.single("the scoring imports memspec by its absolute name, "
                                       "which the exported task cannot carry",
                                       f"generator/{name.replace('.', '/')}.py")
    return found


def scoring_modules() -> dict[str, str]:
    """Every module the scoring needs, by dotted name under the package, with its source (the
    replaced regex engine as its stand-in). A module outside the scoring's own folder other
    than the regex engine is refused: the exported task carries only answer scoring."""
    sources: dict[str, str] = {}
    pending = [_ENTRY]
    while pending:
        name = pending.pop()
        if name in sources:
            continue
        if name == _REPLACED:
            sources[name] = _STDLIB_REGEX
            continue
        if not name.startswith("analysis."):
            raise SpecError.single(f"the scoring module imports {name}, more of memspec than "
                                   "the exported task can carry", "generator/analysis/scoring.py")
        sources[name] = _path(name).read_text(encoding="utf-8")
        pending += _relative_imports(name, sources[name])
    return dict(sorted(sources.items()))


def scoring_source() -> str:
    """The exported scoring file: the bundled modules' sources and the loader that runs them,
    its names those of memspec's scoring module (``is_correct`` …)."""
    modules = scoring_modules()
    packages = sorted({".".join(n.split(".")[:k]) for n in modules
                       for k in range(len(n.split(".")))})
    sources = {**dict.fromkeys(packages, ""), **modules}
    digest = hashlib.sha256(json.dumps(sources, sort_keys=True).encode("utf-8")).hexdigest()
    header = (
        '"""memspec\'s answer scoring, carried whole for the exported task (standard library\n'
        'only): each module below runs from its own source under a private package."""\n\n'
        f"_PACKAGE = {('_memspec_scoring_' + digest[:16])!r}\n"
        f"_ENTRY = {_ENTRY!r}\n"
        f"_PACKAGES = {tuple(packages)!r}\n"
        f"_SOURCES = {json.dumps(sources, indent=1, sort_keys=True, ensure_ascii=True)}\n\n")
    return header + _LOADER
