"""Shared test fixtures: where ../shared is, and the models it holds."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcu_planner_testing.compiler_cache import CACHE_ENV, install_shims
from mcu_planner_testing.shared import (  # noqa: F401  (re-exported to the tests)
    BENCHMARKS_DIR,
    MODELS_DIR,
    REPO,
    SHARED,
    parse_int,
    shared_model_paths,
    shared_model_table,
)

needs_shared = pytest.mark.skipif(
    not (MODELS_DIR / "MODELS.md").is_file(),
    reason=f"../shared is absent (looked for {MODELS_DIR}/MODELS.md); set MCU_PLANNER_SHARED to its path",
)


# Real models in ../shared whose operators the runtime does not implement
# yet: codegen refuses them with exit 4 (tests/test_codegen.py and
# tests/test_cli_codegen.py check the message).  None today: every model in
# ../shared/models and peer-tests/coral runs (Coral's MoveNet since CAST,
# GATHER_ND and int32 arithmetic, tests/test_kernels_uint8.py).
UNSUPPORTED_PEER_MODELS: tuple[Path, ...] = ()


def supported_shared_model_paths() -> list[Path]:
    return shared_model_paths()


def model_param(path: Path):
    return pytest.param(path, id=path.stem)


from shutil import which  # noqa: E402  (appended section)


def needs_tools(*tools: str):
    """Skip when one of `tools` is not on PATH, except in CI, where the
    toolchain is part of the setup and a missing tool must fail loudly."""
    missing = [tool for tool in tools if which(tool) is None]
    return pytest.mark.skipif(
        bool(missing) and not os.environ.get("CI"),
        reason=f"{', '.join(missing)} not installed "
        "(apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm; CI installs them)",
    )


# Compiling generated C for a Cortex-M.
needs_arm_gcc = needs_tools("arm-none-eabi-gcc")
# `make` of a firmware OUTDIR (build_firmware measures the ELF with arm-none-eabi-size).
needs_firmware_build = needs_tools("make", "arm-none-eabi-gcc", "arm-none-eabi-size")
# Building and running firmware under QEMU (tests read symbols with arm-none-eabi-nm).
needs_cortex_m = needs_tools("make", "arm-none-eabi-gcc", "arm-none-eabi-size", "arm-none-eabi-nm", "qemu-system-arm")


# -- markers (registered in pyproject.toml) --------------------------------------
# `qemu` and `shared` follow the skip conditions above, so a test that needs
# QEMU or ../shared is marked by the very decorator that skips it; `slow`
# names the modules whose tests compile and run generated C for many models.
# The fast tier, `pytest -m "not qemu and not slow"`, runs in under a minute.
_MARKER_OF_SKIP = {id(needs_shared.mark): "shared", id(needs_cortex_m.mark): "qemu"}
# Modules that compile or run generated C (or install the package).
SLOW_MODULES = frozenset(
    {
        "test_check_build_inputs",
        "test_check_models",
        "test_cli_codegen",
        "test_codegen",
        "test_dropin_build",
        "test_install",
        "test_quantize_exact",
        "test_random_networks",
        "test_seanet",
        "test_strict_build",
        "test_unsupported_messages",
    }
)
SLOW_MODULE_PREFIXES = ("test_kernels_", "test_qemu")
# Tests elsewhere that compile and run generated C.
SLOW_TESTS = frozenset(
    {
        "test_the_readme_example_application_builds_and_runs",
        "test_in_place_never_writes_over_a_graph_output",
        "test_reshapes_feeding_a_concatenation_move_into_its_slices",
        "test_a_normal_build_preprocesses_without_any_profile_hook",
        "test_host_profile_times_every_op",
        "test_value_mutations_end_in_exact_c_or_one_line",
        "test_shared_model_is_sanitizer_clean_on_extreme_inputs",
        "test_conv_rescale_exponents_beyond_31_match_the_reference_sanitized",
        "test_branchy_random_networks_run_in_another_order_bit_exact",
        "test_fully_connected_rescale_inside_int32_matches_sanitized",
        "test_auto_order_lowers_the_arena_and_stays_bit_exact",
        "test_shape_chain_folds_to_nothing_at_run_time",
        "test_c_one_rounding_multiplier_equals_two_roundings",
        "test_random_chains_run_strip_by_strip_bit_exact",
        "test_a_strip_wholly_in_a_pads_padding_is_bit_exact",
        "test_a_long_stage_through_pad_pooling_and_an_activation_is_bit_exact",
        "test_patches_auto_lowers_the_arena_and_overlaps_the_stage_input",
        "test_patched_model_bit_exact_on_mps2_an386",
        "test_check_build_stops_a_strip_written_over_rows_a_later_strip_reads",
        "test_arena_bars_bit_exact_on_the_host",
        "test_person_detect_at_the_bar_bit_exact_on_mps2_an386",
        "test_mobilenet_v2_bar_bit_exact_on_the_host",
        "test_random_chains_run_in_a_grid_bit_exact",
        "test_a_grid_through_pads_and_pooling_is_bit_exact",
        "test_check_build_stops_a_patch_scattered_from_over_the_stage_output",
        "test_grid_model_bit_exact_on_mps2_an386",
        "test_random_networks_with_every_technique_under_a_tight_budget_bit_exact",
        # `-o` compiles the model with a cross compiler to measure its flash
        # (flash.py): tests that generate many OUTDIRs take seconds each.
        "test_mutated_models_never_crash_the_command",
        "test_header_carries_the_model_sha256_and_the_tool_version",
        "test_one_region_is_the_ram_shorthand",
        "test_several_models_share_one_arena",
        "test_a_board_build_failure_leaves_no_parent_directories",
        "test_json_is_not_written_when_outdir_fails",
        # Not C, but seconds of sleeping between signals.
        "test_sigterm_never_leaves_outdir_missing_or_staging_behind",
        # Python only, but each costs seconds (planning a 224x224 model, a
        # browser, several interpreter starts): together a third of the fast
        # tier, which is for editing; the full suite runs them.
        "test_mobilenet_v2_does_not_fit_256k_and_says_why",
        "test_a_budget_below_the_arena_exits_3_and_writes_nothing",
        "test_planner_all_picks_what_auto_picks",
        "test_page_shows_the_budget_margin_and_a_live_bytes_axis",
        "test_readme_table_is_what_the_lowering_accepts",
        "test_a_refused_variant_is_refused_with_exit_4_naming_the_op",  # shares the coverage fixture above
        "test_survey_in_two_processes_writes_one_row_per_model",
        "test_builder_models_walk_every_lowered_opcode_and_params_struct",
        "test_needs_is_the_same_figure_whatever_budget_was_asked",
        "test_mobilenet_v1_025_96_plans_within_st_activation_ram_bit_exact",  # also compiles (check_model)
        "test_plans_pickle_and_ram_min_is_the_cli_figure",
        "test_report_and_plan_json_say_what_the_overlaps_saved",
        "test_every_metadata_word_of_the_example_overwritten",
        "test_tflm_runs_shared_models_in_our_arena",
        "test_stop_at_fit_keeps_the_first_plan_that_fits",
    }
)


def _is_slow_module(name: str) -> bool:
    return name in SLOW_MODULES or name.startswith(SLOW_MODULE_PREFIXES)


# The suite's longest tests (15-40 s each on an idle 2-core machine, the rest
# take seconds) start first: xdist hands tests out in collection order, so
# one of them collected last would leave the other worker idle meanwhile.
LONGEST_FIRST = (
    "test_kws_ref_model_fits_9k_in_place_bit_exact",
    "test_mobilenet_v2_does_not_fit_256k_and_says_why",
    "test_survey_of_the_shared_models_matches_single_runs",
    "test_static_kernel_buffers_are_what_the_linker_keeps[mps3-an547]",
    "test_static_kernel_buffers_are_what_the_linker_keeps[mps2-an386]",
    "test_every_snippet_runs_as_written[docs/boards.md:3]",
    "test_two_models_in_one_arena_are_bit_exact_on_mps2_an386",
    "test_generated_c_compiles_clean_under_the_strict_flags[float32-cortex-m55]",
    "test_every_snippet_runs_as_written[docs/memory.md:76]",
    "test_regions_and_shared_arena_build_with_the_drop_ins[cmake]",
    "test_ram_min_on_every_other_shared_model[vww_96_int8]",
    "test_generated_c_compiles_clean_under_the_strict_flags[float32-cortex-m4]",
)


def pytest_collection_modifyitems(config, items):
    first = {name: rank for rank, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: first.get(item.name, len(first)))
    for item in items:
        for mark in item.iter_markers("skipif"):
            marker = _MARKER_OF_SKIP.get(id(mark))
            if marker is not None:
                item.add_marker(marker)
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""
        if _is_slow_module(module) or item.originalname in SLOW_TESTS:
            item.add_marker("slow")


# -- the session's compiler cache (mcu_planner_testing/compiler_cache.py) --------
# The controller makes the cache and puts its compiler shims first on PATH
# before xdist starts the workers, which inherit both; the controller removes
# it at the end.  MCU_PLAN_TEST_NO_COMPILER_CACHE=1 runs every compile for real.
def pytest_configure(config):
    if hasattr(config, "workerinput") or os.environ.get(CACHE_ENV) or os.environ.get("MCU_PLAN_TEST_NO_COMPILER_CACHE"):
        return
    cache = Path(tempfile.mkdtemp(prefix="mcu-plan-test-compiler-cache-"))
    config._compiler_cache = cache
    os.environ[CACHE_ENV] = str(cache)
    os.environ["PATH"] = os.pathsep.join([str(install_shims(cache)), os.environ.get("PATH", "")])


def pytest_unconfigure(config):
    cache = getattr(config, "_compiler_cache", None)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)


@contextmanager
def compact_columns_everywhere() -> Iterator[None]:
    """Plans made inside run every int8 convolution on its compact columns
    (the paths without the M4 DSP blocks, lowering/conv.py), none given its
    full columns back: what a budget that needs them all plans."""
    from mcu_planner import pipeline

    def everywhere(model: pipeline.AnalysedModel, options: pipeline.PlanOptions) -> pipeline.PlannedModel:
        return pipeline._plan_analysed(pipeline._with_smaller_scratch(model, options), options)

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(pipeline, "plan_analysed", everywhere)
        patched.setattr(pipeline, "regrow_scratch", lambda *args: None)
        yield
