"""Sample programs for SnapState; ``python -m examples.make_samples`` records sample_snapshots/."""
