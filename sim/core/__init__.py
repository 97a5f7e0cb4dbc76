"""The core types: conversations, views, the run state and its log, the run config, sizes and prices, invariants."""
