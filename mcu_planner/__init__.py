"""mcu-planner: quantized TFLite model -> C that runs in one static arena on a Cortex-M.

Pipeline (data flows one way): reader -> lifetimes -> planners -> verify -> codegen.
"""

import sys
import types

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


class _Package(types.ModuleType):
    """The package module: `mcu_planner.check` stays the API's function
    after the submodule mcu_planner/check.py is imported (the import system
    would otherwise set the package's `check` attribute to that module)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _API and isinstance(value, types.ModuleType):
            return  # a submodule of an API name: reached through sys.modules
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> object:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'mcu_planner' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
