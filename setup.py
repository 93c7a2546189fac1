"""Only the native part of the build; everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        # The optimal planner's search: its core (_solver_core.c, C99, no
        # dependencies) and its CPython binding (_solver.c).  Optional: without
        # a C compiler the package still installs, and the optimal planner says
        # the extension is missing when asked to run.
        Extension(
            "mcu_planner._solver",
            sources=["mcu_planner/_solver.c", "mcu_planner/_solver_core.c"],
            depends=["mcu_planner/_solver_core.h"],
            optional=True,
        ),
    ],
)
