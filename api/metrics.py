"""Prometheus metrics, one registry per container so tests can build many apps."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.events_appended = Counter(
            "hcp_events_appended", "Events appended to the log", registry=self.registry)
        self.log_head = Gauge("hcp_log_head_position", "Last committed position",
                              registry=self.registry)
        self.request_seconds = Histogram(
            "hcp_http_request_seconds", "HTTP request latency", ["route", "method", "status"],
            registry=self.registry)
