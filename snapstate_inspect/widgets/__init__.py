"""Widgets of the inspector."""
