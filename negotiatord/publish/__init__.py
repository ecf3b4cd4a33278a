"""Rendering and publishing what cycles decide."""
