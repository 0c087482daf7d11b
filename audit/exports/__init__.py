"""Lineage in standard formats: OpenLineage run events and W3C PROV-JSON."""
