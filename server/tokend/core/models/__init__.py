"""The model catalog: names, windows, prices and what each provider accepts."""
