"""Harnesses: what produces experience and posts it through the ingest path like any client."""
