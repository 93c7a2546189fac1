"""The targets stage of the pipeline (docs/design.md)."""
