"""mcu-planner: quantized TFLite model -> C that runs in one static arena on a Cortex-M.

Stages, one package each, data flowing one way (docs/design.md): frontend/ (read,
verify, validate, fold, order) -> lowering/ (the Program: every op lowered once)
-> memory/ (lifetimes, techniques, planners, verify, the RAM budget) -> emit/ (C,
reports) -> targets/ (firmware, QEMU, check).  api.py, cli.py and pipeline.py
drive them.
"""

__version__ = "0.1.0"


# The API (api.py) and the errors it raises, imported on first use so that
# `import mcu_planner` stays cheap (no numpy, TensorFlow or LiteRT).
_API = {
    "plan": "api",
    "check": "api",
    "Plan": "api",
    "Flash": "api",
    "McuPlanError": "errors",
    "InputError": "errors",
    "DoesNotFit": "errors",
    "UnsupportedModel": "errors",
    "CheckMismatch": "errors",
}
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> object:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'mcu_planner' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
