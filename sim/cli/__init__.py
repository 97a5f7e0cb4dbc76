"""``csim``, the command line: one module per group of commands, each parsing and calling the library."""
