"""The memory stage of the pipeline (docs/design.md)."""
