"""Test and benchmark support for mcu-planner, importable from a source
checkout only (not part of the installed `mcu_planner` package):

* `builder`: writes .tflite models from Python (tests, examples/make_examples.py, bench/coverage.py);
* `shared`: where the real models and benchmark instances of ../shared are.
"""
