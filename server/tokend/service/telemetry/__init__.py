"""Telemetry: the OpenTelemetry sink, when an exporter is named."""
