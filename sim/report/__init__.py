"""Reports: the notebooks ``csim report`` executes, what they read, and their figures."""
