"""Regenerate the example models in this directory.

    python examples/make_examples.py          # rewrite them
    python examples/make_examples.py --check  # exit 1 if a committed file differs

The models come from seeded generators in mcu_planner_testing.builder, so the bytes are
the same on every run and every machine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a source checkout without installing

from mcu_planner_testing.builder import tiny_kws_int8  # noqa: E402

EXAMPLES = {
    "tiny_kws_int8.tflite": lambda: tiny_kws_int8(seed=0),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    stale = []
    for name, make in EXAMPLES.items():
        path = HERE / name
        model = make()
        if args.check:
            if not path.is_file() or path.read_bytes() != model:
                stale.append(name)
        else:
            path.write_bytes(model)
            print(f"wrote {path} ({len(model)} bytes)")
    if stale:
        print(f"out of date: {', '.join(stale)} (run python examples/make_examples.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
