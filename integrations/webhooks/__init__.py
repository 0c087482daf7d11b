"""Webhooks delivered from the log: subscriptions are events (``webhook.*``), deliveries a
follower of the log with a checkpoint per subscription (docs/integrations.md)."""
