"""Renderers: pure functions of an analysis and options, no module state."""
