"""Errors the command line turns into one line on stderr and an exit code.

Every stage raises one of these for problems caused by its input; anything else
escaping to the CLI is a bug in mcu-planner.
"""


class McuPlanError(Exception):
    exit_code = 1


class InputError(McuPlanError):
    """The model or interval file cannot be read (missing, not TFLite, truncated, corrupt)."""

    exit_code = 2


class DoesNotFit(McuPlanError):
    """The plan needs more RAM than the budget."""

    exit_code = 3


class UnsupportedModel(McuPlanError):
    """Operators, dtypes or graph features the C runtime does not implement."""

    exit_code = 4


class CheckMismatch(McuPlanError):
    """Generated C disagrees with the TFLite reference interpreter."""

    exit_code = 5
