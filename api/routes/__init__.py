"""Every router the app mounts; new route modules add themselves here."""

from api.routes import audit, events, health

ROUTERS = [health.router, events.router, audit.router]
