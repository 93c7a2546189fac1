"""The frontend stage of the pipeline (docs/design.md)."""
