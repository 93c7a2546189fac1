"""The C runtime stays readable (issue 23): no file of firmware/runtime over
600 lines, and no function a header declares taking more than 6 parameters -- a kernel
with many tensors takes them in one struct (runtime_contract: `NAME_tensors`),
as CMSIS-NN groups its arguments."""

from __future__ import annotations

import re

from mcu_planner.emit.resources import firmware_dir
from mcu_planner.lowering.runtime_contract import runtime_declarations

MAX_LINES = 600
MAX_PARAMETERS = 6

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)
_PROTOTYPE = re.compile(r"\b(mcu_\w+)\s*\((.*)\)\s*$", re.DOTALL)


def _without_braced_blocks(code: str) -> str:
    """`code` with the inside of every {...} (struct bodies, inline function
    bodies) removed, so that what remains are declarations."""
    kept, depth = [], 0
    for char in code:
        if char == "{":
            depth += 1
            if depth == 1:
                kept.append("{")
        elif char == "}":
            depth -= 1
            if depth == 0:
                kept.append("}")
        elif depth == 0:
            kept.append(char)
    return "".join(kept)


def _count_parameters(text: str) -> int:
    """Top-level commas + 1 (a function pointer's own parameters are one)."""
    if text.strip() in ("", "void"):
        return 0
    depth, count = 0, 1
    for char in text:
        depth += char == "("
        depth -= char == ")"
        count += char == "," and depth == 0
    return count


def public_prototypes(header_text: str) -> dict[str, int]:
    """Function name -> number of parameters, for every non-static function
    the header declares (inline definitions and macros are not entries)."""
    code = _without_braced_blocks(_DIRECTIVE.sub(" ", _COMMENT.sub(" ", header_text)))
    found = {}
    for statement in re.split(r"[;}]", code):
        words = statement.split()
        if not words or words[0] in ("static", "typedef", "extern") or "{" in statement:
            continue
        match = _PROTOTYPE.search(statement)
        if match:
            found[match.group(1)] = _count_parameters(match.group(2))
    return found


def _runtime_files():
    return sorted(p for p in (firmware_dir() / "runtime").iterdir() if p.suffix in (".c", ".h"))


def test_no_runtime_file_is_over_600_lines():
    lengths = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in _runtime_files()}
    assert len(lengths) > 50, "firmware/runtime was not found"
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}


def test_no_runtime_function_a_header_declares_takes_more_than_6_parameters():
    """The kernel entries the generated C calls, and the helpers kernel files
    call among themselves."""
    declared: dict[str, int] = {}
    for path in _runtime_files():
        if path.suffix == ".h":
            declared.update(public_prototypes(path.read_text(encoding="utf-8")))
    # Every kernel the generated code can call is among the prototypes read here.
    assert set(runtime_declarations().functions) <= set(declared)
    over = {name: n for name, n in declared.items() if n > MAX_PARAMETERS}
    assert over == {}
    # The kernels with the most tensors take them grouped: params + tensors.
    for kernel in ("mcu_lstm_s8", "mcu_lstm_f32", "mcu_svdf_s8", "mcu_split", "mcu_concatenation", "mcu_add_n_f32"):
        assert declared[kernel] == 2, kernel
        assert runtime_declarations().functions[kernel].tensors_type == kernel + "_tensors"


def test_the_parameter_count_reads_prototypes_as_c_does():
    header = """
    #define MCU_X(a, b) mcu_not_a_function(a, b);
    typedef struct { int32_t n; } mcu_x_params; /* mcu_in_a_comment(int a, int b, int c); */
    static inline int32_t mcu_inline(int32_t a) { return mcu_called(a, a, a, a, a, a, a); }
    void mcu_one(const mcu_x_params *p, const int8_t *input,
                 int8_t *output);
    MCU_NOINLINE int32_t mcu_with_pointer(void (*row)(int, int, int), int8_t *out);
    void mcu_none(void);
    """
    assert public_prototypes(header) == {"mcu_one": 3, "mcu_with_pointer": 2, "mcu_none": 0}
