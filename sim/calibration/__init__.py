"""Calibration of token counts against recorded provider usage, and the fidelity check."""
