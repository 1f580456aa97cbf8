"""Prometheus exposition checked by the real promtool (source: the Prometheus text format)."""
