"""A session as immutable data, the changes it goes through, and its gauge."""
