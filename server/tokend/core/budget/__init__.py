"""How a model's window is shared out, and the snapshot the gauge reports."""
