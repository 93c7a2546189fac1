"""The Python API: plan a model (and generate or check it) without the
command line, e.g. in an architecture search that asks thousands of
candidates whether they fit.

    import mcu_planner
    plan = mcu_planner.plan("model.tflite", ram="64K")
    if plan.fits:
        plan.generate("out/model")

`plan()` reads nothing but the model (a path, or its bytes) and writes
nothing; `Plan.generate` writes the directory `-o` writes.  Errors are the
command line's: `mcu_planner.InputError` (exit code 2), `DoesNotFit` (3),
`UnsupportedModel` (4), `CheckMismatch` (5), all `McuPlanError`s with
`exit_code` and a one-line `message`.  Plans pickle (to send them between
processes).  Neither importing `mcu_planner` nor planning imports
TensorFlow or LiteRT; `check()` does (it runs the reference interpreter).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from .errors import DoesNotFit, InputError

if TYPE_CHECKING:
    from .pipeline import PlannedModel, PlanOptions
    from .targets.check import CheckReport

ModelSource = Union[str, "os.PathLike[str]", bytes]
Size = int | str | None  # bytes, "64K", "min", or None (no budget)


def _budget(ram: Size) -> int | str | None:
    """An int, "min" or None from what a caller may write."""
    from .sizes import parse_size

    if ram is None or (isinstance(ram, int) and not isinstance(ram, bool)):
        if isinstance(ram, int) and ram < 0:
            raise InputError(f"ram must not be negative: {ram}")
        return ram
    if isinstance(ram, str):
        if ram.strip().lower() == "min":
            return "min"
        try:
            return parse_size(ram)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    raise InputError(f"ram must be a size (262144, '256K'), 'min' or None, not {type(ram).__name__}")


def _label(model: ModelSource) -> str:
    return "model.tflite" if isinstance(model, bytes) else str(model)


@dataclass(frozen=True)
class Flash:
    """The model's flash as counted without compiling: its weights and the
    tables derived from them (`Plan.measure_flash()` adds the code)."""

    weights: int
    tables: int

    @property
    def total(self) -> int:
        return self.weights + self.tables


@dataclass
class Plan:
    """One model's arena plan at one budget (see `plan()`)."""

    model: str  # the path given, or "model.tflite" for bytes
    sha256: str  # of the model file's bytes
    ram: int | None  # the budget planned for (with ram="min": the smallest found)
    planned: PlannedModel
    source: str | bytes = field(default="", repr=False)  # what was planned: the path, or the bytes
    _json: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def fits(self) -> bool:
        """Within the budget (always, without one)."""
        return self.planned.fits

    @property
    def arena_bytes(self) -> int:
        return int(self.planned.plan.arena_bytes)

    @property
    def variable_bytes(self) -> int:
        """Variable tensors' state, kept beside the arena (counted in the budget)."""
        return int(self.planned.lifetimes.variable_bytes)

    @property
    def ram_needed(self) -> int:
        """Arena plus variables: what the budget must hold."""
        return int(self.planned.ram_needed)

    @property
    def lower_bound_bytes(self) -> int:
        """No arena of these lifetimes can be smaller (the live peak less all that sharing could save)."""
        from .memory.problem import sharing_lower_bound

        return int(sharing_lower_bound(self.planned.lifetimes.problem))

    @property
    def live_peak_bytes(self) -> int:
        """The most (aligned) bytes of whole tensors alive at one op step."""
        from .memory.problem import peak_live

        return int(peak_live(self.planned.lifetimes.problem).bytes)

    @property
    def ops(self) -> int:
        return len(self.planned.graph.operators)

    @property
    def flash(self) -> Flash:
        """Weights and tables; raises UnsupportedModel when an op has no kernel."""
        from .emit.codegen import lower_all
        from .targets.flash import counted_flash

        weights, tables = counted_flash(
            self.planned.graph, lower_all(self.planned.program, self.planned.lifetimes.elided_ops)
        )
        return Flash(int(weights), int(tables))

    @property
    def techniques(self) -> list[str]:
        """What took the arena where it is, e.g. ["overlaps 4", "patches 6x6 over 4 ops"]."""
        from .emit.report import technique_names

        return technique_names(self.to_json())

    @property
    def extra_macs_percent(self) -> float:
        """Multiply-accumulates recomputed (patches' halos), per cent of the model's."""
        from .emit.report import mac_overhead_percent

        return mac_overhead_percent(self.to_json())

    def shortfall(self) -> str:
        """The one line `mcu-plan MODEL --ram RAM` ends with when the plan
        does not fit ("" when it does): it names the smallest budget that
        fits, the same whatever budget was asked (one more plan, or a search)."""
        if self.fits or self.ram is None:
            return ""
        from .emit.report import shortfall_message
        from .pipeline import smallest_ram

        p = self.planned
        least = smallest_ram(self.source or self.model, p.options, failed=p)
        return shortfall_message(
            least.graph, least.lifetimes, least.plan, least.ram_budget, self.ram, least.options.ram
        )

    def to_json(self) -> dict[str, Any]:
        """The record `mcu-plan MODEL --json PLAN.json` writes."""
        if self._json is None:
            from .emit import report

            p = self.planned
            without_overlaps = report.arena_without_overlaps(p.lifetimes, p.options.time_limit)
            record = report.plan_json(
                self.model, p.graph, p.lifetimes, p.plan, p.options.alias, p.op_order, without_overlaps
            )
            self._json = report.add_ram(record, p.regions, p.lifetimes, p.ram_budget, self.ram)
        return self._json

    def generate(
        self,
        outdir: str | os.PathLike[str],
        *,
        name: str | None = None,
        arena_section: str | None = None,
        extern_arena: bool = False,
    ) -> Path:
        """Write the C sources `-o OUTDIR` writes (replacing an OUTDIR only
        mcu-plan wrote); DoesNotFit when the plan is over its budget."""
        from .emit.c_literals import c_identifier, validate_section_name
        from .emit.output_dir import write_output

        if not self.fits:
            raise DoesNotFit(
                f"does not fit: needs {self.ram_needed:,} B but ram is {self.ram:,} B, {self.ram_needed - (self.ram or 0):,} B short"
            )
        prefix = name or c_identifier(Path(self.model).stem)
        if prefix != c_identifier(prefix):
            raise InputError(f"name {prefix!r} is not usable as the C prefix (try {c_identifier(prefix)!r})")
        if arena_section is not None:
            validate_section_name(arena_section)
        files = self.planned.generate(prefix, arena_section=arena_section, extern_arena=extern_arena)
        try:
            return write_output(files, Path(outdir))
        except OSError as exc:
            raise InputError(f"cannot write {outdir}: {exc.strerror or exc}") from None

    def measure_flash(self, board: str | None = None) -> Any:
        """flash.FlashReport: weights, tables and the code, compiled for
        `board`'s core (default mps2-an386) as `-o` does."""
        from .emit.codegen import lower_all
        from .targets.flash import counted_flash, measure_flash

        p = self.planned
        name = "model"
        files = p.generate(name)
        counted = counted_flash(p.graph, lower_all(p.program, p.lifetimes.elided_ops))
        return measure_flash(files, name, counted, board)


def plan_options(
    *,
    ram: int | None = None,
    planner: str = "auto",
    align: int = 16,
    alias: bool = True,
    time_limit: float | None = None,
    order: str = "auto",
    patches: str = "default",
    stop_at_fit: bool = False,
) -> PlanOptions:
    """The pipeline's options, checked as the command line checks its flags."""
    from .memory.planners.optimal import DEFAULT_TIME_LIMIT
    from .memory.planning import planner_names
    from .pipeline import ORDERS, PlanOptions, forced_grid

    if planner not in planner_names() + ["all"]:
        raise InputError(f"unknown planner {planner!r}; choose from {', '.join(planner_names())} or all")
    if not isinstance(align, int) or align < 1:
        raise InputError(f"align must be a whole number of bytes, at least 1: {align!r}")
    if order not in ORDERS:
        raise InputError(f"order must be one of {', '.join(ORDERS)}: {order!r}")
    if patches != "default":
        forced_grid(patches)
    return PlanOptions(
        planner=planner,
        alignment=align,
        alias=alias,
        time_limit=DEFAULT_TIME_LIMIT if time_limit is None else float(time_limit),
        ram=ram,
        stop_at_fit=stop_at_fit,
        order=order,
        patches=patches,
    )


def plan(
    model: ModelSource,
    ram: Size = None,
    *,
    planner: str = "auto",
    align: int = 16,
    alias: bool = True,
    time_limit: float | None = None,
    order: str = "auto",
    patches: str = "default",
    stop_at_fit: bool = False,
    max_extra_macs: float | None = None,
) -> Plan:
    """Plan `model` (a .tflite path or its bytes) as `mcu-plan MODEL --ram
    RAM` does; the keywords are the command's options (`time_limit` in
    seconds, default 10).  `ram="min"`: the smallest budget that fits
    (`--ram min`), within `max_extra_macs` per cent of recomputed MACs when
    given.  A model over its budget is a Plan with `fits` False, not an
    error; a model that cannot be read or planned raises InputError or
    UnsupportedModel."""
    from .pipeline import model_sha256, plan_model, smallest_ram

    budget = _budget(ram)
    if max_extra_macs is not None and budget != "min":
        raise InputError("max_extra_macs caps the search of ram='min'")
    options = plan_options(
        ram=None if budget == "min" else budget,  # type: ignore[arg-type]
        planner=planner,
        align=align,
        alias=alias,
        time_limit=time_limit,
        order=order,
        patches=patches,
        stop_at_fit=stop_at_fit,
    )
    label = _label(model)
    if budget == "min":
        cap = max_extra_macs

        def within_cap(candidate: PlannedModel) -> bool:
            stage = candidate.program.patch_stage
            if cap is None or stage is None or not stage.model_macs:
                return True
            return bool(100.0 * stage.extra_macs / stage.model_macs <= cap)

        planned = smallest_ram(model, options, accept=within_cap)
    else:
        planned = plan_model(model, options)
    sha = planned.model_sha256 or model_sha256(model)
    source = model if isinstance(model, bytes) else os.fspath(model)
    return Plan(model=label, sha256=sha, ram=planned.options.ram, planned=replace(planned), source=source)


def check(
    model: ModelSource,
    ram: Size = None,
    *,
    target: str = "host",
    inputs: int = 3,
    seed: int = 0,
    patches: str = "default",
    sanitize: bool = False,
    profile: bool = False,
) -> CheckReport:
    """`mcu-plan check MODEL`: generate, build and run the C on `inputs`
    random input sets and compare with LiteRT's reference kernels.  Returns
    the report (`passed`, `summary()`, `format()`); raises CheckMismatch
    (exit code 5) on the first difference, DoesNotFit over `ram`."""
    from .targets.check import check_model

    budget = _budget(ram)
    if budget == "min":
        budget = plan(model, "min").ram
    return check_model(
        model,
        target=target,
        inputs=inputs,
        seed=seed,
        ram=budget,  # type: ignore[arg-type]
        patches=patches,
        sanitize=sanitize,
        extremes=sanitize,
        profile=profile,
    )
