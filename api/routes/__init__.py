"""Every router the app mounts; new route modules add themselves here."""

from api.routes import audit, events, health
from api.routes import registry as registry_routes

ROUTERS = [health.router, events.router, audit.router, registry_routes.router]
