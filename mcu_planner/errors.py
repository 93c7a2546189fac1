"""Errors the command line turns into one line on stderr and an exit code.

Every stage raises one of these for problems caused by its input; anything else
escaping to the CLI is a bug in mcu-planner.
"""


class McuPlanError(Exception):
    """`exit_code`: the command line's exit status for it; `message`: the
    one line it prints after "mcu-plan: error: "."""

    exit_code = 1

    @property
    def message(self) -> str:
        return one_line(self)


class InputError(McuPlanError):
    """The model or interval file cannot be read (missing, not TFLite, truncated, corrupt)."""

    exit_code = 2


class DoesNotFit(McuPlanError):
    """The plan needs more RAM than the budget (`short_bytes` more, when a link measured it)."""

    exit_code = 3

    def __init__(self, message: str, short_bytes: int | None = None):
        super().__init__(message)
        self.short_bytes = short_bytes


class UnsupportedModel(McuPlanError):
    """Operators, dtypes or graph features the C runtime does not implement."""

    exit_code = 4


def one_line(exc: Exception) -> str:
    """The error's message on one line (an unsupported model's list joined
    with "; "), for tables and logs."""
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())


# An unsupported model's message: a head line, then at most this many lines
# (one per operator and dtype, most frequent first) and "and N more".
MAX_UNSUPPORTED_LINES = 10
# A reason quoted on such a line is cut to this many characters.
MAX_REASON_CHARS = 100


def unsupported_model_error(
    combinations: dict[str, int], reasons: dict[str, str], tensor_types: dict[str, int], label: str = ""
) -> UnsupportedModel:
    """One UnsupportedModel for everything a model needs that is missing.

    `combinations`: "OPCODE dtype" -> number of ops; `reasons`: the first
    such op's reason, where there is more to say than the name; `tensor_types`:
    tensor type -> number of tensors of it; `label` (the model) starts the
    head line when given."""
    ops = sum(combinations.values())
    head = []
    if combinations:
        head.append(
            f"{ops} op{'s' if ops != 1 else ''} in {len(combinations)} unsupported operator and dtype "
            f"combination{'s' if len(combinations) != 1 else ''}"
        )
    if tensor_types:
        head.append(f"unsupported tensor type{'s' if len(tensor_types) != 1 else ''} {', '.join(sorted(tensor_types))}")
    entries = [
        (count, f"tensor type {name}", f"{count} tensor{'s' if count != 1 else ''}")
        for name, count in tensor_types.items()
    ]
    for key, count in combinations.items():
        line = f"{count} op{'s' if count != 1 else ''}"
        reason = reasons.get(key, "")
        if reason:
            if len(reason) > MAX_REASON_CHARS:
                reason = reason[: MAX_REASON_CHARS - 3] + "..."
            line += f" ({reason})"
        entries.append((count, key, line))
    entries.sort(key=lambda e: (-e[0], e[1]))
    lines = [f"  {key}: {text}" for _, key, text in entries[:MAX_UNSUPPORTED_LINES]]
    if len(entries) > MAX_UNSUPPORTED_LINES:
        lines.append(f"  and {len(entries) - MAX_UNSUPPORTED_LINES} more")
    prefix = f"{label}: " if label else ""
    return UnsupportedModel("\n".join([prefix + "; ".join(head) + ":", *lines]))


class CheckMismatch(McuPlanError):
    """Generated C disagrees with the TFLite reference interpreter."""

    exit_code = 5


class InvalidModel(InputError):
    """A model that parses but breaks one of the semantic rules (validate.py)."""
