"""context/assemble: the next request, built from the session."""
