"""`mcu-plan`: plan a model's arena, generate C, check it against TFLite.

Exit codes: 0 fits / bit-exact, 1 internal error, 2 bad input or usage,
3 does not fit the RAM budget, 4 unsupported operators, 5 generated C differs
from the reference interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

from .emit.c_literals import PREFIX_RULE
from .errors import DoesNotFit, InputError, McuPlanError
from .shown import escape_controls
from .sizes import format_bytes, parse_size

if TYPE_CHECKING:
    from .deadline import Deadline
    from .emit.codegen import GeneratedSources
    from .emit.output_dir import ModelInterface
    from .graph import Graph
    from .memory.lifetimes import Lifetimes
    from .memory.ram_budget import FirmwareTarget
    from .memory.regions import Region
    from .pipeline import PlannedModel, PlanOptions
    from .targets.flash import FlashReport

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line and exit 2, like every other bad input."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{message} (see {self.prog} --help)")


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


RAM_MIN = "min"


def _ram(text: str) -> int | str:
    """--ram: a size, or "min" (the smallest budget the model fits)."""
    return RAM_MIN if text.strip().lower() == RAM_MIN else _size(text)


def _percent(text: str) -> float:
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r} (e.g. 5%)") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be at least 0%: {text}")
    return value


class _VersionAction(argparse.Action):
    """--version: computed only when asked (it hashes the runtime and templates)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        from .emit.identity import version_line

        print(version_line())
        parser.exit(0)


def _section_name(text: str) -> str:
    from .emit.c_literals import validate_section_name

    return validate_section_name(text)


def _region(text: str) -> Region:
    from .memory.regions import parse_region

    try:
        return parse_region(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# The largest --align: beyond any MPU region or cache line a core needs, and
# far below what GCC's aligned attribute accepts (2**28 on ELF targets).
MAX_ALIGN = 2**16


def _alignment(text: str) -> int:
    """--align: a power of two from 1 to MAX_ALIGN."""
    value = _positive_int(text)
    if value & (value - 1) or value > MAX_ALIGN:
        raise argparse.ArgumentTypeError(f"must be a power of two from 1 to {MAX_ALIGN}, not {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def _time_limit(text: str) -> float:
    from .deadline import check_time_limit

    try:
        return check_time_limit(float(text))
    except ValueError as exc:
        message = str(exc) if "seconds" in str(exc) else f"not a number: {text!r}"
        raise argparse.ArgumentTypeError(message) from None


def _plan_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mcu-plan",
        description="Plan one static arena for a TFLite model; optionally emit C for it. "
        "`mcu-plan check MODEL` compares the generated C with TFLite.",
    )
    p.add_argument(
        "model", nargs="*", help=".tflite model (several: generated into one OUTDIR around one arena they share)"
    )
    p.add_argument(
        "--concurrent",
        action="store_true",
        help="with several models: disjoint parts of the arena (sized together), so that they may interleave",
    )
    p.add_argument("--version", action=_VersionAction, help="print the version and the runtime+templates digest")
    p.add_argument(
        "--ram",
        type=_ram,
        metavar="SIZE|min",
        help="RAM budget, e.g. 256K: arena, variables, counters and static kernel buffers "
        "(with --board: the whole firmware's RAM, stack included); min: the smallest that fits, then its plan",
    )
    p.add_argument(
        "--max-extra-macs",
        type=_percent,
        metavar="PERCENT",
        help="with --ram min: the smallest RAM whose plan recomputes at most P%% more MACs (patches' halos)",
    )
    _add_region_argument(p)
    p.add_argument(
        "--align", type=_alignment, default=16, help="alignment of the arena and its buffers in bytes (default 16)"
    )
    p.add_argument("--planner", default="auto", help="planner name, or 'all' to compare them (default auto)")
    p.add_argument(
        "--alias", choices=("on", "off"), default="on", help="reshape/concatenation aliasing and in-place ops"
    )
    p.add_argument(
        "--time-limit",
        type=_time_limit,
        default=10.0,
        help="seconds for the whole command's searches (op order, patches, exact planner; default 10): "
        "past it each keeps its best plan so far, and a note says so",
    )
    p.add_argument(
        "--order",
        choices=("model", "auto", "memory"),
        default="auto",
        help="op order: the model's; auto (default): the memory-aware order when it lowers the arena; "
        "memory: the memory-aware order whenever it differs",
    )
    _add_patches_argument(p)
    p.add_argument("--json", metavar="PLAN.json", help="write the plan as JSON")
    p.add_argument("--map", action="store_true", help="print a memory map")
    p.add_argument(
        "--report",
        metavar="PLAN.html",
        help="write the plan as one self-contained HTML page (arena picture, live bytes, per-layer costs)",
    )
    p.add_argument(
        "--tflm-plan",
        metavar="OUT.tflite",
        help="write a copy of the model whose OfflineMemoryAllocation metadata holds our plan (for TFLM)",
    )
    p.add_argument("-o", "--output", metavar="OUTDIR", help="write C sources for the model here")
    p.add_argument("--name", help=f"C prefix (default: the model file's stem): {PREFIX_RULE}")
    p.add_argument("--arena-section", metavar="SECTION", type=_section_name, help="linker section for the arena")
    p.add_argument("--extern-arena", action="store_true", help="the application defines NAME_arena")
    p.add_argument(
        "--board",
        help="a bundled board (mps2-an386, mps3-an547) or PATH/board.json: --ram is its firmware's RAM, "
        "and with -o the firmware is built; or, for a core (cortex-m0plus, cortex-m4, cortex-m7, cortex-m33, "
        "cortex-m55), the library alone (with -o)",
    )
    p.add_argument(
        "--stack", type=_size, help="with --board: the firmware's stack reserve (default 1K; a multiple of 8)"
    )
    p.add_argument(
        "--intervals", metavar="FILE.csv", help="plan an interval set (id,lower,upper,size) instead of a model"
    )
    p.add_argument("--capacity", type=_size, help="with --intervals: the capacity to fit")
    p.add_argument(
        "--stop-at-fit",
        action="store_true",
        help="with --capacity or --ram: keep the first plan that fits instead of tightening for the time limit",
    )
    p.add_argument("--out", metavar="OFFSETS.csv", help="with --intervals: write id,lower,upper,size,offset")
    return p


def _add_region_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--region",
        action="append",
        type=_region,
        default=[],
        metavar="NAME=SIZE[@SECTION]",
        help="a memory region for the arena, fastest first (repeatable; instead of --ram), e.g. dtcm=32K@.dtcm_bss",
    )


def _regions_of(args: argparse.Namespace) -> tuple[Region, ...]:
    """--region's regions, checked; () without."""
    from .memory.regions import check_regions

    regions = tuple(args.region)
    if regions and args.ram is not None:
        raise InputError("give --ram (one arena) or --region (several), not both")
    if len(regions) > 1 and getattr(args, "tflm_plan", None):
        raise InputError("--tflm-plan writes TFLM's one arena: plan it with --ram, not --region")
    check_regions(regions)
    return regions


def _patches_value(text: str) -> str:
    from .pipeline import forced_grid

    try:
        forced_grid(text)
    except InputError:
        raise argparse.ArgumentTypeError(
            f"off, auto, N (an N x N grid) or RxC (R rows of C patches; Rx1: strips), not {text!r}"
        ) from None
    return text


def _add_patches_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--patches",
        type=_patches_value,
        default="default",
        metavar="off|auto|N|RxC",
        help="run the first stage of spatial ops patch by patch (recomputing halos): by default only when "
        "--ram needs it, auto: whenever it lowers the arena (both try full-width strips and n x n grids); "
        "N: an N x N grid of patches; RxC: R rows of C patches (Rx1: R full-width strips); off: never",
    )


def _check_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mcu-plan check", description="Generate, build and run the model's C; compare with TFLite.")
    p.add_argument("model", nargs="+", help=".tflite model (several: generated together around one shared arena)")
    p.add_argument("--concurrent", action="store_true", help="with several models: disjoint parts of the arena")
    p.add_argument("--target", default="host", help="host, or a board (mps2-an386, mps3-an547)")
    p.add_argument(
        "--inputs",
        type=_positive_int,
        default=3,
        help="number of random inputs, run as one sequence of invocations (default 3)",
    )
    p.add_argument(
        "--after-reset",
        type=_positive_int,
        default=None,
        metavar="N",
        help="a model with state: how many of the input sets run again after NAME_reset() (default 2)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--ram", type=_size, help="RAM budget for the arena and variables (boards: also the linker's RAM region)"
    )
    p.add_argument(
        "--stack",
        type=_size,
        help="with a board target: the firmware's stack reserve (default 1K; a multiple of 8), "
        "counted in --ram; a --profile build adds its own headroom",
    )
    _add_region_argument(p)
    _add_patches_argument(p)
    p.add_argument(
        "--sanitize",
        action="store_true",
        help="build with ASan and UBSan (host) and add extreme inputs (all minimum, maximum, zero point)",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="also run a profile build and print ticks, MACs and MACs per tick for every op "
        "(boards: and a cycle estimate per op and in total)",
    )
    p.add_argument(
        "--clock",
        type=_clock,
        metavar="HZ",
        help="with --profile on a board: give the cycle estimate's milliseconds at this clock, e.g. 120M "
        "(default: the board's nominal clock)",
    )
    return p


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every cleanup (staging
    directories, staged files, a half-swapped OUTDIR) runs on the way out."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    import threading

    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    # Import what every run needs before SIGTERM becomes an exception: an
    # exception raised inside a C extension's import turns into an ImportError
    # (until the handler is in place SIGTERM simply ends the process, before
    # anything is written).
    import numpy  # noqa: F401

    from . import pipeline  # noqa: F401

    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return _main(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str]) -> int:
    try:
        import numpy as np

        # Extreme scales overflow float32 arithmetic on the way to a constant;
        # the validator judges the result (e.g. rule rescale-finite), so
        # numpy's warnings would only add lines to the one error line.
        with np.errstate(all="ignore"):
            if argv and argv[0] == "check":
                return _run_check(_check_parser().parse_intermixed_args(argv[1:]))
            if argv and argv[0] == "survey":
                return _run_survey(argv[1:])
            return _run_plan(_plan_parser().parse_intermixed_args(argv))
    except McuPlanError as exc:
        # Stages escape the model's strings they quote (shown.py); this is
        # the last guard for any that slipped through.
        print(f"mcu-plan: error: {escape_controls(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except Terminated:
        print("mcu-plan: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("mcu-plan: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (`mcu-plan ... | head`): stop
        # quietly, with the shell's status for a process ended by SIGPIPE.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as exc:  # a bug in mcu-planner: still one line unless asked for more
        if os.environ.get("MCU_PLAN_DEBUG"):
            raise
        print(
            f"mcu-plan: internal error: {type(exc).__name__}: {escape_controls(str(exc))} "
            "(MCU_PLAN_DEBUG=1 shows a traceback)",
            file=sys.stderr,
        )
        return 1


def _check_planner_name(name: str) -> None:
    from .memory.planning import planner_names

    names = planner_names()
    if name not in names + ["all"]:
        raise InputError(f"unknown planner {name!r}; choose from {', '.join(names)} or all")


def _check_output_arguments(args: argparse.Namespace) -> None:
    """Everything about where output goes, checked before any planning."""
    if args.board is not None and not args.board:
        raise InputError("--board needs a board name")
    from .targets.firmware_build import CORES

    core_only = args.board in CORES
    if args.stack is not None and (not args.board or core_only):
        raise InputError("--stack sets a firmware's stack reserve: it needs --board with a board")
    if args.stack is not None and (args.stack <= 0 or args.stack % 8):
        raise InputError(f"--stack must be a positive multiple of 8 bytes, not {args.stack}")
    if args.board and not core_only and args.output and args.ram is None and not args.region:
        raise InputError("--board needs --ram (or --region): the RAM budget its linker script enforces")
    if core_only and not args.output:
        raise InputError(f"--board {args.board} builds the library alone: it needs -o OUTDIR")
    for flag in ("name", "arena_section", "extern_arena"):
        if getattr(args, flag) and not args.output:
            raise InputError(f"--{flag.replace('_', '-')} only applies with -o OUTDIR")
    if args.output:
        from .emit.c_literals import checked_prefix
        from .emit.output_dir import check_output_dir

        if args.name is not None:
            prefix = checked_prefix(args.name)
            if prefix != args.name:
                print(f"note: --name {args.name!r} becomes the C prefix {prefix!r} (the rule: see --help)")
            args.name = prefix
        check_output_dir(Path(args.output))
    if args.board and not core_only:
        from .targets.firmware_build import load_board

        load_board(args.board)
    for path in (args.json, args.out, getattr(args, "tflm_plan", None), getattr(args, "report", None)):
        if path:
            check_replaceable_file(Path(path))
    _check_distinct_paths(args)


def _same_file(a: str, b: str) -> bool:
    """Whether paths `a` and `b` name one file: the same path once symlinks
    and `..` are resolved, or one file under two names (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False


def _check_distinct_paths(args: argparse.Namespace) -> None:
    """Refuse, before anything is read or written, an output file that is an
    input (the model, the interval file) or another output, or that lies
    inside -o OUTDIR (replacing OUTDIR would take it away)."""
    outputs = [
        (flag, path)
        for flag, path in (
            ("--json", args.json),
            ("--out", args.out),
            ("--tflm-plan", getattr(args, "tflm_plan", None)),
            ("--report", getattr(args, "report", None)),
        )
        if path
    ]
    inputs = [("the model", m) for m in args.model] + ([("--intervals", args.intervals)] if args.intervals else [])
    for index, (flag, path) in enumerate(outputs):
        for what, source in inputs:
            if _same_file(path, source):
                raise InputError(f"{flag} {path} is {what} {source}: writing it would replace the input")
        for other_flag, other in outputs[:index]:
            if _same_file(path, other):
                raise InputError(f"{other_flag} and {flag} name one file ({path}): give each its own path")
        if args.output:
            outdir = os.path.realpath(args.output)
            if os.path.commonpath([outdir, os.path.realpath(path)]) == outdir:
                raise InputError(f"{flag} {path} is inside OUTDIR {args.output}, which -o replaces: write it elsewhere")


def _kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def check_replaceable_file(path: Path) -> None:
    """InputError unless `path` is absent or a regular file (never a symlink,
    FIFO, device or directory: mcu-plan replaces files, nothing else) in an
    existing, writable directory."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise InputError(f"refusing to replace {path}: it is {_kind_of(mode)}, not a regular file")
    parent = Path(os.path.abspath(path)).parent
    if not parent.is_dir():
        raise InputError(f"cannot write {path}: its directory does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {path}: its directory is not writable")


class _StagedFile:
    """A file's new contents written beside it, put in place by commit()
    (one rename) or removed by discard(): written first, so that a failure
    afterwards (e.g. in -o OUTDIR) leaves neither file changed."""

    def __init__(self, path: Path, text: str | bytes):
        check_replaceable_file(path)
        self.path = path
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=os.path.abspath(path.parent))
        except OSError as exc:
            raise InputError(f"cannot write {path}: {exc.strerror}") from None
        self.tmp = Path(tmp)
        try:
            # mkstemp's file is private (0600); the file it becomes gets the
            # mode any new file gets (0666 less the umask), as a plain open() gives.
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
            with os.fdopen(fd, "wb") as f:
                f.write(text.encode() if isinstance(text, str) else text)
        except OSError as exc:
            self.discard()
            raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
        except BaseException:
            self.discard()
            raise

    def commit(self) -> None:
        try:
            check_replaceable_file(self.path)  # again: it may have changed meanwhile
            os.replace(self.tmp, self.path)
        except OSError as exc:
            self.discard()
            raise InputError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        self.tmp.unlink(missing_ok=True)


def _run_plan(args: argparse.Namespace) -> int:
    _check_planner_name(args.planner)
    _check_output_arguments(args)
    if args.output:
        from .emit.output_dir import OutputLock

        with OutputLock(args.output):
            return _run_plan_checked(args)
    return _run_plan_checked(args)


def _run_plan_checked(args: argparse.Namespace) -> int:
    if args.stop_at_fit and (args.capacity if args.intervals else args.ram or args.region) is None:
        raise InputError("--stop-at-fit needs a budget to fit: --capacity with --intervals, --ram with a model")
    ram_min = args.ram == RAM_MIN
    if args.max_extra_macs is not None and not ram_min:
        raise InputError("--max-extra-macs caps the search of --ram min: give --ram min")
    if ram_min and (args.intervals or len(args.model) > 1 or args.region):
        raise InputError("--ram min searches one model's single arena: give one model, without --region or --intervals")
    if args.intervals:
        if args.model:
            raise InputError("give a model or --intervals, not both")
        return _run_intervals(args)
    if not args.model:
        raise InputError("no model given (usage: mcu-plan MODEL --ram SIZE)")
    if len(args.model) > 1:
        return _run_models(args)
    if args.concurrent:
        raise InputError("--concurrent plans several models: give two or more")
    args.model = args.model[0]

    from .emit import report
    from .pipeline import analyse_model, plan_analysed

    smallest = None
    if ram_min:
        args.ram = None
        smallest = _smallest_ram(args, _plan_options(args))
        args.ram = smallest.options.ram
    options = _plan_options(args, _regions_of(args))
    analysed = analyse_model(args.model, options)
    # The model as read (its depthwise convolutions on their ordinary kernel).
    ordinary = analysed.without_in_place or analysed
    graph, lifetimes = ordinary.graph, ordinary.lifetimes
    out = sys.stdout
    print(f"model: {args.model}", file=out)
    for line in report.model_summary(graph, lifetimes):
        print(line, file=out)

    # --ram min: the plan the search found (planning again might, with an
    # exact search cut by its time limit, find another).
    planned = smallest or plan_analysed(analysed, options)
    _say_if_stopped(options.deadline)
    graph, lifetimes, plan = planned.graph, planned.lifetimes, planned.plan
    if planned.op_order is not None:
        before = planned.model_order_arena
        print(
            "op order: memory-aware"
            + (f" (the model's order needs {format_bytes(before)})" if before is not None else "")
            + ": "
            + " ".join(str(i) for i in planned.op_order),
            file=out,
        )
    if planned.compared and planned.regions is None:
        for line in report.planner_table(lifetimes, planned.compared):
            print(line, file=out)
    in_place_depthwise = report.in_place_depthwise_ops(lifetimes.program)
    if in_place_depthwise:
        print(
            f"in-place depthwise (for --ram): ops {', '.join(map(str, in_place_depthwise))} run channel by channel "
            "over their own input through a scratch buffer",
            file=out,
        )
    if planned.slower_walks is not None:
        print(planned.slower_walks.line(), file=out)
    patches = report.patches_line(lifetimes.program)
    if patches:
        print(patches, file=out)
    without_overlaps = None
    if planned.regions is None:
        # What the overlaps saved: the same lifetimes planned with none.
        without_overlaps = report.arena_without_overlaps(lifetimes, options.search_seconds())
        for line in report.plan_summary(lifetimes, plan, without_overlaps):
            print(line, file=out)
    else:
        for line in report.region_lines(planned.regions):
            print(line, file=out)
    if args.map:
        for line in report.memory_map(graph, lifetimes, plan, planned.regions):
            print(line, file=out)
    if args.ram is not None or options.target is not None:
        for line in planned.ram_budget.lines(args.ram):
            print(line, file=out)
    out.flush()

    if not planned.fits:
        if planned.regions is not None:
            from .memory.regions import regions_shortfall

            raise DoesNotFit(regions_shortfall(planned.regions))
        from .pipeline import smallest_ram

        # The smallest budget, not this plan's need: the figure must not
        # depend on the budget asked (a tighter one takes other techniques).
        least = smallest_ram(args.model, options, failed=planned)
        raise DoesNotFit(
            report.shortfall_message(
                least.graph, least.lifetimes, least.plan, least.ram_budget, args.ram, least.options.ram
            )
        )
    if options.target is not None:
        _check_board_flash(args.board, planned)

    staged: list[_StagedFile] = []
    files = None
    if args.output or args.report:
        # Generated here (before anything is written) so that the flash line
        # and the page can measure the code: -o writes these same files.
        files, flash = _generate_and_measure(args, planned)
        print(flash.line(), file=out)
    try:
        if args.json:
            record = report.plan_json(
                args.model, graph, lifetimes, plan, args.alias == "on", planned.op_order, without_overlaps
            )
            report.add_ram(record, planned.regions, lifetimes, planned.ram_budget, args.ram)
            staged.append(_StagedFile(Path(args.json), json.dumps(record, indent=1) + "\n"))
        if args.tflm_plan:
            staged.append(_stage_tflm_plan(args, options))
        if args.report:
            staged.append(_stage_report(args, planned, flash))
        if args.output:
            _generate(args, planned, files)
        else:
            _warn_if_not_generatable(graph, lifetimes)
    except BaseException:
        for file in staged:
            file.discard()
        raise
    for file in staged:
        file.commit()
    return 0


def _smallest_ram(args: argparse.Namespace, options: PlanOptions) -> PlannedModel:
    """--ram min: the smallest budget (a multiple of --align) the model fits,
    within --max-extra-macs; its line says what it costs."""
    from .emit import report
    from .pipeline import smallest_ram

    cap = args.max_extra_macs

    def within_cap(planned: PlannedModel) -> bool:
        stage = planned.program.patch_stage
        return (
            cap is None or stage is None or not stage.model_macs or 100.0 * stage.extra_macs / stage.model_macs <= cap
        )

    smallest = smallest_ram(args.model, options, accept=within_cap)
    record = report.plan_json(
        args.model, smallest.graph, smallest.lifetimes, smallest.plan, options.alias, smallest.op_order
    )
    names = report.technique_names(record)
    capped = f" (at most {cap:g}% extra MACs)" if cap is not None else ""
    print(
        # smallest_ram sets the plan's options.ram to its need, to the byte.
        f"smallest --ram{capped}: {format_bytes(smallest.ram_needed)}; techniques: {', '.join(names) or 'none'}; "
        f"extra MACs {report.mac_overhead_percent(record):+.1f}% (ticks: measure with mcu-plan check --profile)"
    )
    return smallest


def _model_names(paths: list[str]) -> list[str]:
    """Each model's C prefix (its file stem); two models with one prefix: InputError."""
    from .emit.c_literals import c_prefix

    names: dict[str, str] = {}
    for path in paths:
        name = c_prefix(Path(path).stem)
        if name in names:
            raise InputError(
                f"{names[name]} and {path} would both get the C prefix {name!r}: copy one under another file name"
            )
        names[name] = path
    return list(names)


def _say_if_stopped(deadline: Deadline | None) -> None:
    """The report's one line saying which searches the time limit stopped, if
    any (stdout, with the report: stderr keeps its one line for errors)."""
    if deadline is None:
        return
    deadline.end_progress()
    line = deadline.stopped_line()
    if line is not None:
        print(line)


def _plan_options(args: argparse.Namespace, regions: tuple[Region, ...] = ()) -> PlanOptions:
    """The plan options the arguments ask for, with the whole command's
    deadline (--time-limit) starting now."""
    from .deadline import Deadline
    from .pipeline import PlanOptions

    return PlanOptions(
        deadline=Deadline.for_terminal(args.time_limit),
        target=_firmware_target(args, regions),
        planner=args.planner,
        alignment=args.align,
        alias=args.alias == "on",
        time_limit=args.time_limit,
        ram=args.ram,
        stop_at_fit=args.stop_at_fit,
        order=args.order,
        regions=regions,
        patches=args.patches,
    )


def _run_models(args: argparse.Namespace) -> int:
    """Several models, one arena: each planned on its own, laid out in the
    arena they share (one after another: the largest need; --concurrent:
    side by side), generated into one OUTDIR."""
    from .emit import report
    from .pipeline import generate_models, plan_model, share_arena

    for flag, given in (
        ("--region", args.region),
        ("--name", args.name),
        ("--extern-arena", args.extern_arena),
    ):
        if given:
            raise InputError(f"{flag} applies to one model; several models share one arena (--ram)")
    for flag, given in (("--report", args.report), ("--tflm-plan", args.tflm_plan)):
        if given:
            raise InputError(f"{flag} describes one model: run it for each model on its own")
    if args.board:
        raise InputError(
            "--board builds a test firmware for one model; check several together with "
            "mcu-plan check A B --target BOARD"
        )
    names = _model_names(args.model)
    options = _plan_options(args)
    planned = []
    for path, name in zip(args.model, names, strict=True):
        model = plan_model(path, options)
        print(f"model: {path} (prefix {name}_)")
        for line in report.plan_summary(model.lifetimes, model.plan):
            print(f"  {line}")
        if model.lifetimes.variable_bytes:
            print(f"  variables (own state region): {format_bytes(model.lifetimes.variable_bytes)}")
        planned.append(model)
    _say_if_stopped(options.deadline)
    models = share_arena(names, planned, concurrent=args.concurrent)
    how = "side by side (--concurrent)" if args.concurrent else "one after another: the largest need"
    print(f"shared arena: {format_bytes(models.arena_bytes)} ({how})")
    if args.ram is not None:
        margin = args.ram - models.ram_needed
        print(
            f"budget: {format_bytes(args.ram)}, needed {format_bytes(models.ram_needed)}, margin {margin:+,} B: "
            + ("fits" if margin >= 0 else "DOES NOT FIT")
        )
        if margin < 0:
            raise DoesNotFit(
                f"does not fit: the models need {format_bytes(models.ram_needed)} (arena "
                f"{format_bytes(models.arena_bytes)} + variables {format_bytes(models.variable_bytes)}) but --ram is "
                f"{format_bytes(args.ram)}, {format_bytes(-margin)} short"
            )
    staged = None
    if args.json:
        record = {
            "concurrent": models.concurrent,
            "arena_bytes": models.arena_bytes,
            "models": [
                dict(
                    report.plan_json(path, m.graph, m.lifetimes, m.plan, args.alias == "on", m.op_order),
                    name=name,
                    arena_base=base,
                )
                for path, name, m, base in zip(args.model, names, models.planned, models.bases, strict=True)
            ],
        }
        staged = _StagedFile(Path(args.json), json.dumps(record, indent=1) + "\n")
    try:
        if args.output:
            from .emit.output_dir import write_output

            files = generate_models(models, arena_section=args.arena_section)
            try:
                write_output(files, Path(args.output))
            except OSError as exc:
                raise InputError(f"cannot write {args.output}: {exc.strerror or exc}") from None
            print(f"wrote {args.output}/ ({len(files)} files, prefixes {', '.join(n + '_' for n in names)})")
    except BaseException:
        if staged is not None:
            staged.discard()
        raise
    if staged is not None:
        staged.commit()
    return 0


def _stage_tflm_plan(args: argparse.Namespace, options: PlanOptions) -> _StagedFile:
    """The model with our plan as TFLM's offline plan, staged beside --tflm-plan's path."""
    from .emit.tflm_plan import tflm_plan_model

    data, tflm = tflm_plan_model(args.model, options)
    staged = _StagedFile(Path(args.tflm_plan), data)
    print(
        f"TFLM offline plan: {args.tflm_plan}: {sum(1 for o in tflm.offsets if o >= 0)} tensors at our offsets, "
        f"{format_bytes(tflm.arena_bytes)} of TFLM's arena ({tflm.source}); TFLM plans the rest around them"
    )
    return staged


def _model_name(args: argparse.Namespace) -> str:
    from .emit.c_literals import c_prefix

    return str(args.name or c_prefix(Path(args.model).stem))


def _generate_and_measure(
    args: argparse.Namespace, planned: PlannedModel
) -> tuple[GeneratedSources | None, FlashReport]:
    """The generated sources (None when only --report asked and the model
    cannot be generated) and the model's flash (flash.py)."""
    from .emit.codegen import lower_all
    from .errors import UnsupportedModel
    from .targets.flash import FlashReport, counted_flash, measure_flash

    name = _model_name(args)
    try:
        files = planned.generate(name, arena_section=args.arena_section, extern_arena=args.extern_arena)
    except UnsupportedModel:
        if args.output:
            raise
        from .emit.layers import layer_rows

        # The arrays of the ops that have kernels; no code without all of them.
        rows = layer_rows(planned.graph, planned.lifetimes, planned.plan)
        weights = sum(row.weight_bytes for row in rows)
        tables = sum(row.table_bytes or 0 for row in rows)
        return None, FlashReport(weights, tables, None, "code not measured: some ops have no kernel, see the note")
    counted = counted_flash(planned.graph, lower_all(planned.lifetimes.program, planned.lifetimes.elided_ops))
    return files, measure_flash(files, name, counted, args.board)


def _stage_report(args: argparse.Namespace, planned: PlannedModel, flash: FlashReport) -> _StagedFile:
    from .emit import report
    from .emit.html_report import render_report
    from .memory.scratch import scratch_op

    plan = report.plan_json(
        args.model, planned.graph, planned.lifetimes, planned.plan, args.alias == "on", planned.op_order
    )
    report.add_ram(plan, planned.regions, planned.lifetimes, planned.ram_budget, args.ram)
    line = flash.line().removeprefix("flash: ")
    page = render_report(plan, Path(args.model).name, line, scratch_op(planned.graph))
    return _StagedFile(Path(args.report), page)


def _generate(args: argparse.Namespace, planned: PlannedModel, files: GeneratedSources | None = None) -> None:
    from .emit.output_dir import replace_output_dir, write_output

    name = _model_name(args)
    if not planned.plan.reproducible:
        print(
            "note: this plan comes from an exact search that ran out of time; on another machine or with "
            "another --time-limit it may differ, and so may the C (pin it with --planner NAME of a fast planner "
            "for byte-identical output everywhere)"
        )
    if files is None:
        files = planned.generate(name, arena_section=args.arena_section, extern_arena=args.extern_arena)
    if args.board:
        # Generated sources and firmware files go into one staging directory
        # that replaces OUTDIR only when the build succeeded.
        from .emit.output_dir import make_parents, remove_created
        from .targets.firmware_build import CORES, FirmwareReport, LibraryReport, build_firmware, build_library

        created = make_parents(args.output)
        try:
            staging = Path(tempfile.mkdtemp(prefix=".mcu-plan-", dir=Path(os.path.abspath(args.output)).parent))
        except OSError as exc:
            remove_created(created)
            raise InputError(f"cannot write {args.output}: {exc.strerror}") from None
        try:
            write_output(files, staging / "out")
            firmware: LibraryReport | FirmwareReport
            if args.board in CORES:
                firmware = build_library(
                    staging / "out",
                    model=files.interface,
                    core=args.board,
                    alignment=args.align,
                    region_memories={r.section: r.name.upper() for r in args.region if r.section},
                )
            else:
                firmware = build_firmware(
                    staging / "out",
                    model=files.interface,
                    board=args.board,
                    ram_bytes=_firmware_ram(args, files.interface),
                    stack_bytes=_stack(args),
                )
            replace_output_dir(staging / "out", Path(args.output))
        except BaseException:
            _remove_tree(staging)
            remove_created(created)
            raise
        _remove_tree(staging)
        for line in firmware.format():
            print(line)
    else:
        try:
            write_output(files, Path(args.output))
        except OSError as exc:
            raise InputError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    print(f"wrote {args.output}/ ({len(files)} files, prefix {name}_)")


def _check_board_flash(board_name: str, planned: PlannedModel) -> None:
    """DoesNotFit when no firmware of the model links on the board, whatever the RAM."""
    from .targets.flash import flash_shortfall

    message = flash_shortfall(board_name, planned.program, planned.lifetimes.elided_ops)
    if message is not None:
        raise DoesNotFit(message)


def _firmware_target(args: argparse.Namespace, regions: tuple[Region, ...]) -> FirmwareTarget | None:
    """--board's firmware, whose RAM --ram budgets (None: no board, a core, or --region's own sizes)."""
    from .targets.firmware_build import CORES, firmware_target

    if not getattr(args, "board", None) or args.board in CORES or regions:
        return None
    return firmware_target(args.board, _stack(args))


def _stack(args: argparse.Namespace) -> int:
    from .targets.firmware_build import DEFAULT_STACK_BYTES

    return DEFAULT_STACK_BYTES if args.stack is None else int(args.stack)


def _firmware_ram(args: argparse.Namespace, interface: ModelInterface) -> int:
    """The RAM a firmware links against: --ram, or with --region the firmware's
    RAM (ram_budget.py) with the regions whole as its arena."""
    if args.ram is not None:
        return int(args.ram)
    from .targets.firmware_build import region_firmware_ram

    return region_firmware_ram(interface, args.board, sum(region.size for region in args.region), _stack(args))


def _warn_if_not_generatable(graph: Graph, lifetimes: Lifetimes) -> None:
    """Planning works for any model; say now, not at -o time, when C cannot be generated."""
    from .emit.codegen import lower_all
    from .errors import UnsupportedModel

    try:
        lower_all(lifetimes.program, lifetimes.elided_ops)
    except UnsupportedModel as exc:
        print(f"note: -o would stop with exit 4: {exc}")


def _run_intervals(args: argparse.Namespace) -> int:
    from .deadline import Deadline
    from .memory.intervals import format_offsets, read_intervals
    from .memory.planning import plan_within
    from .memory.problem import peak_live, problem_from_intervals

    deadline = Deadline(args.time_limit)
    buffers = read_intervals(args.intervals)
    problem = problem_from_intervals(buffers, alignment=1)
    bound = peak_live(problem).bytes
    if args.planner == "all":
        from .memory.planning import planner_names

        names = [n for n in planner_names() if n != "auto"]
    else:
        names = [args.planner]
    plans = []
    print(f"intervals: {args.intervals} ({len(buffers)} buffers), lower bound {format_bytes(bound)}")
    for name in names:
        plan = plan_within(problem, name, min(args.time_limit, deadline.remaining()), args.capacity, args.stop_at_fit)
        if not plan.reproducible and deadline.expired():
            deadline.cut(f"the {name} planner")
        proof = ", proven optimal" if plan.proven_optimal else ""
        print(f"{name}: {format_bytes(plan.arena_bytes)}{proof} ({plan.seconds:.2f} s)")
        plans.append(plan)
    best = min(plans, key=lambda plan: plan.arena_bytes)  # the first of the smallest
    _say_if_stopped(deadline)
    if args.capacity is not None:
        margin = args.capacity - best.arena_bytes
        print(f"capacity: {format_bytes(args.capacity)}, margin {margin:+,} B")
        if margin < 0:
            raise DoesNotFit(
                f"does not fit: {format_bytes(best.arena_bytes)} needed, capacity {format_bytes(args.capacity)}, "
                f"{format_bytes(-margin)} short (lower bound {format_bytes(bound)})"
            )
    if args.out:
        _StagedFile(Path(args.out), format_offsets(buffers, best.offsets)).commit()
    return 0


def _run_check(args: argparse.Namespace) -> int:
    from .targets.check import check_model, check_models

    if len(args.model) > 1:
        for flag, given in (("--region", args.region), ("--sanitize", args.sanitize)):
            if given:
                raise InputError(f"{flag} checks one model at a time")
        for each in check_models(
            args.model,
            target=args.target,
            inputs=args.inputs,
            seed=args.seed,
            ram=args.ram,
            concurrent=args.concurrent,
        ):
            for line in each.format():
                print(line)
        return 0
    if args.concurrent:
        raise InputError("--concurrent plans several models: give two or more")
    if args.clock is not None and (not args.profile or args.target == "host"):
        raise InputError("--clock sets the clock of the cycle estimate: it needs --profile and a board --target")
    report = check_model(
        args.model[0],
        target=args.target,
        inputs=args.inputs,
        seed=args.seed,
        ram=args.ram,
        regions=_regions_of(args),
        sanitize=args.sanitize,
        extremes=args.sanitize,
        profile=args.profile,
        patches=args.patches,
        after_reset=args.after_reset,
        stack=_check_stack(args),
    )
    if args.clock is not None and report.profile is not None:
        report.profile = report.profile.at_clock(args.clock, "--clock")
    for line in report.format():
        print(line)
    return 0


def _clock(text: str) -> int:
    from .targets.cycles import parse_clock

    try:
        return parse_clock(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _check_stack(args: argparse.Namespace) -> int:
    """`check --stack`: only for a board target, a positive multiple of 8."""
    if args.stack is None:
        return _stack(args)
    if args.target == "host":
        raise InputError("--stack sets a firmware's stack reserve: it needs --target with a board")
    if args.stack <= 0 or args.stack % 8:
        raise InputError(f"--stack must be a positive multiple of 8 bytes, not {args.stack}")
    return int(args.stack)


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def survey_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mcu-plan survey",
        description="Plan every .tflite model under the paths at one budget, in parallel; one CSV row per model.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help=".tflite files, or directories searched recursively")
    p.add_argument("--ram", type=_size, required=True, help="RAM budget for the arena and variables, e.g. 256K")
    p.add_argument(
        "--board",
        help="flash with the code compiled for this board's or core's CPU (slower: one compile per model); "
        "default: weights and tables only",
    )
    p.add_argument(
        "--jobs", type=_positive_int, default=os.cpu_count() or 1, help="worker processes (default: one per CPU)"
    )
    p.add_argument("--csv", metavar="OUT.csv", help="write the rows here (default: standard output)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on this dask.distributed scheduler instead (--jobs unused)")
    p.add_argument(
        "--time-limit", type=float, default=None, help="seconds for the exact planner per model (default 10)"
    )
    return p


def _run_survey(argv: list[str]) -> int:
    """`mcu-plan survey`: survey.py's rows as CSV, and one summary line."""
    from .survey import survey, to_csv

    args = survey_parser().parse_intermixed_args(argv)
    if args.board:
        from .targets.firmware_build import CORES, load_board

        if args.board not in CORES:
            load_board(args.board)
    if args.csv:
        check_replaceable_file(Path(args.csv))
    started = time.perf_counter()
    rows = survey(
        args.paths,
        args.ram,
        board=args.board,
        jobs=args.jobs,
        dask=args.dask,
        time_limit=args.time_limit,
        progress=sys.stderr.isatty(),
    )
    seconds = time.perf_counter() - started
    text = to_csv(rows)
    if args.csv:
        _StagedFile(Path(args.csv), text).commit()
    else:
        sys.stdout.write(text)
    fit = sum(1 for r in rows if r.exit_code == 0)
    over = sum(1 for r in rows if r.exit_code == 3)
    print(
        f"survey: {len(rows)} models at --ram {format_bytes(args.ram)}: {fit} fit, {over} do not, "
        f"{len(rows) - fit - over} failed; {seconds:.1f} s ({len(rows) / seconds:.2f} models/s)"
        + (f"; wrote {args.csv}" if args.csv else ""),
        file=sys.stderr if not args.csv else sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
