"""Every router the app mounts; new route modules add themselves here."""

from api.routes import (
    approvals,
    audit,
    compare,
    contracts,
    dryrun,
    events,
    health,
    policies,
    rewards,
    serving,
)
from api.routes import registry as registry_routes

ROUTERS = [health.router, events.router, audit.router, contracts.router, registry_routes.router,
           rewards.router, dryrun.router, serving.router, compare.router,
           policies.router, approvals.router]
