"""The JSON Schemas shipped with memspec, and validation that reports every error with its place."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.code_cache import cached_code
from ..core.errors import Problem, lookalike_note
from .yamlsafe import Located

if TYPE_CHECKING:  # jsonschema is imported on use: only a rejected document needs it
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

SCHEMA_NAMES = ("family", "paradigm", "release", "pool", "instance", "manifest", "check",
                "export", "shard", "analysis", "score", "scaffold")


@cache
def _schema(name: str) -> dict[str, Any]:
    # The JSON Schemas are data of the package root (schemas/), beside the subpackages.
    folder = resources.files(__package__.partition(".")[0]).joinpath("schemas")
    text = folder.joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@cache
def _registry() -> Registry:
    from referencing import Registry, Resource

    registry: Registry = Registry()
    for name in SCHEMA_NAMES:
        schema = _schema(name)
        registry = registry.with_resource(schema["$id"], Resource.from_contents(schema))
    return registry


def matches(pattern: str, text: str) -> bool:
    """Whether ``text`` matches a schema ``pattern`` as JSON Schema means it (ECMA-262), where
    a final ``$`` matches only at the very end. Python's ``$`` also matches before a trailing
    newline, which would let ``"demo\\n"`` pass as a release name and become a folder's."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.search(pattern, text) is not None


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any
                  ) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def validator(name: str) -> Draft202012Validator:
    """A Draft 2020-12 validator for the named schema, with format checking on, and
    ``pattern`` anchored as ECMA-262 anchors it."""
    from jsonschema import Draft202012Validator, validators

    extended = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})
    return extended(  # type: ignore[no-any-return]
        _schema(name),
        registry=_registry(),
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


_URN = "urn:memspec:schema:"


def _self_contained(name: str) -> dict[str, Any]:
    """The named schema with every schema it refers to copied into its ``$defs`` and every
    ``$ref`` pointing inside it, in the subset of JSON Schema on which drafts 7 and 2020-12
    agree: the form the compiled check reads. (A ``$ref`` with other keywords beside it,
    which draft 7 would let hide them, is wrapped in an ``allOf``.)"""
    embedded: dict[str, Any] = {}

    def rewrite(node: Any, home: str) -> Any:
        if isinstance(node, list):
            return [rewrite(item, home) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: (value if key in ("const", "enum") else rewrite(value, home))
               for key, value in node.items() if key not in ("$id", "$schema")}
        ref = out.pop("$ref", None)
        if ref is None:
            return out
        target, _, pointer = ref.partition("#")
        if target:
            other = target.removeprefix(_URN)
            if other != name and other not in embedded:
                embedded[other] = {}  # claimed first: a schema may refer back
                embedded[other] = rewrite(_schema(other), other)
            home = other
        prefix = "" if home == name else f"/$defs/__{home}"
        local = {"$ref": f"#{prefix}{pointer}"}
        return {"allOf": [local], **out} if out else local

    schema = rewrite(_schema(name), name)
    schema.setdefault("$defs", {}).update({f"__{other}": body
                                           for other, body in sorted(embedded.items())})
    return schema


@cache
def fast_check(name: str) -> Callable[[Any], bool]:
    """A quick yes/no for the named schema, compiled to Python (fastjsonschema): for data
    checked in bulk, such as every spec and every generated instance. A no is then explained
    by ``validator``, whose messages say where."""
    import fastjsonschema

    schema = _self_contained(name)
    # The generated module is large (each error repeats its part of the schema) and slow to
    # compile, so its code is kept between runs; it defines ``validate`` for the whole schema.
    code = cached_code("fastjsonschema", (fastjsonschema.VERSION, name,
                                          json.dumps(schema, sort_keys=True)),
                       lambda: compile(fastjsonschema.compile_to_code(schema),
                                       f"<schema {name}>", "exec"))
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # noqa: S102 (our own schema, compiled by fastjsonschema)
    compiled = namespace["validate"]

    def check(value: Any) -> bool:
        try:
            compiled(value)
        except fastjsonschema.JsonSchemaException:
            return False
        return True

    return check


def schema_errors(name: str, value: Any) -> list[ValidationError]:
    """Every error of ``value`` against the named schema, in path order (none, at the cost
    of the compiled check alone, when it is valid)."""
    if fast_check(name)(value):
        return []
    return sorted(validator(name).iter_errors(value), key=lambda e: list(e.path))


def read_json_as(path: Path, name: str, what: str, display: str | None = None) -> Any:
    """The JSON document in ``path``, which must match the named schema; otherwise a
    SpecError naming the file (as ``display``), and the line and column of a syntax error:
    "not WHAT: <why>"."""
    from ..core.errors import SpecError

    shown = display or str(path)
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SpecError.single(f"not {what}: not valid JSON: {exc.msg}", shown, exc.lineno,
                               exc.colno) from None
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise SpecError.single(f"not {what}: {exc}", shown) from None
    error = first_error(name, value)
    if error:
        raise SpecError.single(f"not {what}: {error}", shown)
    return value


def first_error(name: str, value: Any) -> str | None:
    """The first error of ``value`` against the named schema and where it is (a JSON path,
    or "top level"), as one line; None when it is valid."""
    errors = schema_errors(name, value)
    if not errors:
        return None
    where = "/".join(map(str, errors[0].absolute_path)) or "top level"
    return f"{errors[0].message} (at {where})"


def schema_document(name: str) -> dict[str, Any]:
    """The named schema as a JSON object (e.g. for documentation or other validators)."""
    return _schema(name)


def _leaf(error: ValidationError) -> ValidationError:
    # For oneOf/anyOf, the most relevant sub-error says more than "is not valid under any".
    from jsonschema.exceptions import best_match

    if error.context:
        # Prefer the branch whose type matched: its complaint is the one the author means.
        typed = [e for e in error.context if e.validator not in ("type", "const")]
        best = best_match(typed or error.context)
        if best is not None:
            return _leaf(best)
    return error


def _allowed_keys(error: ValidationError, leaf: ValidationError) -> set[str]:
    """Keys allowed at the leaf's place; for alternatives (oneOf), those of every object form."""
    allowed = set(leaf.schema.get("properties", {}))
    for sub_error in error.context or ():
        if sub_error.validator == "additionalProperties" and \
                list(sub_error.absolute_path) == list(leaf.absolute_path):
            allowed |= set(sub_error.schema.get("properties", {}))
    return allowed


def _describe(error: ValidationError) -> str:
    if error.validator == "enum":
        return f"{error.instance!r} is not one of {', '.join(map(repr, error.validator_value))}"
    if error.validator == "pattern" and isinstance(error.instance, str):
        # Every pattern of ours is ASCII: a look-alike character is the likely culprit.
        return error.message + lookalike_note(error.instance)
    return error.message


def schema_problems(name: str, located: Located) -> list[Problem]:
    """Every schema error of a located document, each with file:line:col and JSON path."""
    problems: list[Problem] = []
    if fast_check(name)(located.data):
        return problems
    for error in validator(name).iter_errors(located.data):
        leaf = _leaf(error)
        path = tuple(leaf.absolute_path)
        if leaf.validator == "additionalProperties" and isinstance(leaf.instance, dict):
            allowed = sorted(_allowed_keys(error, leaf))
            unknown = [k for k in leaf.instance if k not in allowed]
            if unknown:
                # One problem per unknown key, each at its own line.
                for key in unknown:
                    line, column = located.where((*path, key))
                    problems.append(Problem(
                        f"unknown key {key!r}; allowed keys are: {', '.join(allowed)}",
                        located.file, line, column, (*path, key)))
                continue
        if "propertyNames" in leaf.absolute_schema_path and isinstance(leaf.instance, str):
            path = (*path, leaf.instance)  # a bad key: point at the key itself
        line, column = located.where(path)
        problems.append(Problem(_describe(leaf), located.file, line, column, path or None))
    return problems
