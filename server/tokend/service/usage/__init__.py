"""The usage monitor: spend limits and rate headroom."""
