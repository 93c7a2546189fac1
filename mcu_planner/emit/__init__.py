"""The emit stage of the pipeline (docs/design.md)."""
