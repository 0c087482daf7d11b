"""OpenTelemetry in and out: OTLP/HTTP traces mapped onto client events, reward records
exported as ``gen_ai.evaluation.result`` log records (docs/integrations.md)."""
