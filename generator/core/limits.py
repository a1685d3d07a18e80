"""Budgets that keep a hostile spec from hanging or exhausting the machine.

The interface the rest of the package imports from: how large the budgets are
(``limits_settings``), the budget of one block of work such as a group (``limits_budget``) and
that of one analysis command (``limits_commands``).
"""

from __future__ import annotations

from .limits_budget import Budget, BudgetExceeded, one_group, rendering_alone
from .limits_commands import CommandBudget, working_on
from .limits_settings import (
    DEFAULT_COMMAND_MEGABYTES,
    DEFAULT_COMMAND_SECONDS,
    DEFAULT_GROUP_MEGABYTES,
    DEFAULT_GROUP_SECONDS,
    command_megabytes,
    command_seconds,
    group_megabytes,
    group_seconds,
)

__all__ = [
    "DEFAULT_COMMAND_MEGABYTES",
    "DEFAULT_COMMAND_SECONDS",
    "DEFAULT_GROUP_MEGABYTES",
    "DEFAULT_GROUP_SECONDS",
    "Budget",
    "BudgetExceeded",
    "CommandBudget",
    "command_megabytes",
    "command_seconds",
    "group_megabytes",
    "group_seconds",
    "one_group",
    "rendering_alone",
    "working_on",
]
