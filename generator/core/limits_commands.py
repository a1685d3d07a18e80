"""The budget of one analysis command (score, audit, report, ...) over one input, and how the
work deep inside it says which item it is on, so that running out names that item."""

from __future__ import annotations

from .errors import SpecError
from .limits_budget import Budget, BudgetExceeded
from .limits_settings import command_megabytes, command_seconds

#: The analysis command's budget that this process is inside, if any: what ``working_on``
#: tells which item the work deep inside the command (an audit, an export) is on.
_COMMAND: CommandBudget | None = None


def working_on(item: str) -> None:
    """Tell the budget of the analysis command running, if one is, what it works on from now
    (``instance ID``): named by its error if a budget runs out. A plain assignment, cheap
    enough for every instance of a release; nothing where no command budget is open."""
    if _COMMAND is not None:
        _COMMAND.item = item


class CommandBudget:
    """The time and memory budget of one analysis command over one input, as a context
    manager. The command, or the work it calls (``working_on``), says which item it is working
    on; running out of either budget is an error naming the input and that item."""

    def __init__(self, command: str, source: str) -> None:
        self.command = command
        self.source = source
        self.item = ""
        self._budget = Budget(command_seconds(), command_megabytes())
        self._outer: CommandBudget | None = None

    def on(self, item: str) -> None:
        """What the command works on from now: named by the error if a budget runs out."""
        self.item = item

    def __enter__(self) -> CommandBudget:
        global _COMMAND
        self._budget.__enter__()
        self._outer, _COMMAND = _COMMAND, self
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        global _COMMAND
        _COMMAND = self._outer
        try:
            self._budget.__exit__(kind, *rest)
        except BudgetExceeded:
            kind = BudgetExceeded
        where = f" (at {self.item})" if self.item else ""
        if kind is BudgetExceeded:
            raise SpecError.single(
                f"{self.command} took longer than {self._budget.seconds:g} s "
                f"($MEMSPEC_COMMAND_SECONDS){where}", self.source) from None
        if kind is MemoryError:
            raise SpecError.single(
                f"{self.command} went over its memory budget of {self._budget.megabytes} MB "
                f"($MEMSPEC_COMMAND_MEGABYTES){where}", self.source) from None
