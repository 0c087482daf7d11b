"""Who may do what: API keys (stored hashed), their scopes, and the principal a key names."""
