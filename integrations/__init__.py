"""What plugs the server into the tools teams already run: webhooks delivered from the log,
OpenTelemetry GenAI traces in, evaluation results out as OTLP logs (docs/integrations.md)."""
