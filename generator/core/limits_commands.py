"""The budget of one analysis command (score, audit, report, ...) over one input, and how the
work deep inside it says which item it is on, so that running out names that item (and, for
an item read from a responses or judgments file, the file and line where it stands)."""

from __future__ import annotations

from .errors import SpecError
from .limits_budget import Budget, BudgetExceeded
from .limits_settings import command_megabytes, command_seconds

#: The analysis command's budget that this process is inside, if any: what ``working_on``
#: tells which item the work deep inside the command (an audit, an export) is on.
_COMMAND: CommandBudget | None = None

#: Where an item stands in a file a user wrote (a responses or judgments file): its name as
#: shown and the line.
Place = tuple[str, int]


def working_on(item: str, place: Place | None = None) -> None:
    """Tell the budget of the analysis command running, if one is, what it works on from now
    (``instance ID``) and, for an item read from a file, where it stands there: named by its
    error if a budget runs out. Plain assignments, cheap enough for every instance of a
    release; nothing where no command budget is open."""
    if _COMMAND is not None:
        _COMMAND.item = item
        _COMMAND.place = place


class CommandBudget:
    """The time and memory budget of one analysis command over one input, as a context
    manager. The command, or the work it calls (``working_on``), says which item it is working
    on; running out of either budget is an error naming the input and that item."""

    def __init__(self, command: str, source: str) -> None:
        self.command = command
        self.source = source
        self.item = ""
        self.place: Place | None = None
        self._budget = Budget(command_seconds(), command_megabytes())
        self._outer: CommandBudget | None = None

    def on(self, item: str, place: Place | None = None) -> None:
        """What the command works on from now, and where it stands in a file it was read
        from: named by the error if a budget runs out."""
        self.item = item
        self.place = place

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
        # An item read from a file is placed at its line there, where a user would look.
        file, line = self.place if self.place is not None else (self.source, None)
        column = None if line is None else 1
        if kind is BudgetExceeded:
            raise SpecError.single(
                f"{self.command} took longer than {self._budget.seconds:g} s "
                f"($MEMSPEC_COMMAND_SECONDS){where}", file, line, column) from None
        if kind is MemoryError:
            raise SpecError.single(
                f"{self.command} went over its memory budget of {self._budget.megabytes} MB "
                f"($MEMSPEC_COMMAND_MEGABYTES){where}", file, line, column) from None
