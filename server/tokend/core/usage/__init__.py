"""What provider calls cost and how a session uses the provider."""
