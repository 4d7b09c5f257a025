"""Telemetry's settings (pure)."""
