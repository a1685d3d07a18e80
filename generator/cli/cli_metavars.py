"""What every option and argument of the command line takes, named in one table.

Left to itself, the parser names a value by its type (``--out <str>``, ``--seed <int>``),
which says nothing of what to give. Every command's parameters are named here, by parameter
name, and ``NamedMetavarsGroup`` puts the names on the commands as the command line is built,
so ``--help`` reads ``--out DIR``, ``--seed N``, ``--policy NAME``. Options that take one of
a few choices keep the list of their choices; flags take no value.
"""


from typing import Any

from typer.core import TyperArgument, TyperGroup

#: The metavar of every parameter that takes a free value, by its name in the command's
#: signature (one name means one kind of value in every command that has it).
METAVARS: dict[str, str] = {
    # projects, specs and families
    "root": "DIR",
    "folder": "DIR",
    "paths": "SPEC",
    "family": "FAMILY",
    "family_id": "FAMILY",
    "paradigm": "PARADIGM",
    "provider": "PROVIDER",
    "locale": "LOCALE",
    # rendering
    "seed": "N",
    "groups": "N",
    "count": "N",
    "resamples": "N",
    "workers": "N",
    "start": "INDEX",
    "group": "INDEX",
    "per_family": "N",
    "only": "FAMILY",
    "variant": "VARIANT",
    "shard": "I/N",
    "scheduler": "ADDRESS",
    "response": "RESPONSE",
    # releases
    "release": "RELEASE",
    "releases": "RELEASE",
    "release_dir": "RELEASE_DIR",
    "shards": "SHARD_DIR",
    "manifest": "MANIFEST",
    "out_dir": "DIR",
    "out_file": "FILE",
    # scoring
    "policy": "NAME",
    "responses_file": "RESPONSES",
    "responses_files": "RESPONSES",
    "instance_id": "ID",
    "response_file": "FILE",
    # running models
    "model": "PROVIDER/MODEL",
    "memory": "SYSTEMS",
    "memory_k": "K",
    "limit": "N",
    "split": "SPLIT",
    "max_connections": "N",
    "log_dir": "DIR",
    "model_base_url": "URL",
    "display": "DISPLAY",
    "by": "KEY[,KEY...]",
    "cluster": "KEY",
    "dataset_key": "KEY",
    "judgments": "JUDGMENTS",
    "unblind": "MAP",
    "abstain_pattern": "REGEX",
    "analysis_file": "ANALYSIS",
    "runs": "LEVEL=SCORES.json",
    "where": "KEY=VALUE[,KEY=VALUE...]",
    "contrast": "NAME",
    "systems": "SYSTEM=RESPONSES",
    "system_judgments": "SYSTEM=JUDGMENTS",
    "system_unblind": "SYSTEM=MAP",
    "export_format": "NAME",
}


def _takes_free_value(param: Any) -> bool:
    """Whether ``param`` takes a value that is neither a flag nor one of listed choices."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return False
    return not param.type_descriptor.is_choice


class NamedArgument(TyperArgument):
    """An argument shown by its metavar alone: ``FAMILY`` in the usage line when it is
    required, ``[SPEC]...`` when it is optional and repeatable, and ``FAMILY`` in the list of
    arguments, without the parser's type (``FAMILY <str>``) beside it."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


def name_metavars(command: Any) -> None:
    """Give every free-value parameter of ``command`` (and of its subcommands) its metavar
    from ``METAVARS``; a parameter the table does not name keeps the parser's."""
    for param in command.params:
        if _takes_free_value(param) and param.name in METAVARS:
            param.metavar = METAVARS[param.name]
            if type(param) is TyperArgument:
                # The command line builds its arguments itself, as TyperArgument: the
                # subclass changes how one is shown, nothing of how it is parsed.
                param.__class__ = NamedArgument
    for sub in getattr(command, "commands", {}).values():
        name_metavars(sub)


class NamedMetavarsGroup(TyperGroup):
    """The command group of ``memspec``: its commands' values named by ``METAVARS``."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        name_metavars(self)
