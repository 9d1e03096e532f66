"""Screens of the inspector."""
