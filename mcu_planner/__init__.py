"""mcu-planner: quantized TFLite model -> C that runs in one static arena on a Cortex-M.

Pipeline (data flows one way): reader -> lifetimes -> planners -> verify -> codegen.
"""

__version__ = "0.1.0"
