"""UI-free view-models of timelines: plain functions and data the CLI and the app both use."""
