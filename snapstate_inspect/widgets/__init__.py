"""Widgets of the inspector: timeline, stack, source, variables, status bar, run plot."""
