"""The replay: the engine and lockstep, the mock provider and summariser, and the invariant checker (``csim check``)."""
