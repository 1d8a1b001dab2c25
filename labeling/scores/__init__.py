"""Figures of runs for pages and commands: metrics, estimates, samples, charts."""
