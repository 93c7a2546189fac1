"""Only the native part of the build; everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        # The optimal planner's search core (C99, CPython API, no dependencies).
        # Optional: without a C compiler the package still installs, and the
        # optimal planner says the extension is missing when asked to run.
        Extension("mcu_planner._solver", sources=["mcu_planner/_solver.c"], optional=True),
    ],
)
