"""Sweeps: grids of runs, where they execute, the results they leave on disk, and their comparison."""
