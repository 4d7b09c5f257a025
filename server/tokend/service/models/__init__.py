"""A session's model, settings and token counter as its workspace gives them."""
