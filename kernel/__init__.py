"""The shared kernel: what every package needs and nothing of ours provides.

Database metadata and dialect helpers, the bulk-insert and position helpers of the
append-only tables, canonical JSON, UTC time, and the base errors the API maps to
404/409/422. It imports nothing from the other packages, so every package may import it.
"""
