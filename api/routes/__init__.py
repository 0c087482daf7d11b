"""Every router the app mounts; new route modules add themselves here."""

from api.routes import (
    approvals,
    artifacts,
    audit,
    compare,
    contracts,
    dryrun,
    events,
    health,
    lineage,
    policies,
    rewards,
    serving,
)
from api.routes import registry as registry_routes

ROUTERS = [health.router, events.router, audit.router, contracts.router, registry_routes.router,
           rewards.router, dryrun.router, lineage.router, artifacts.router, serving.router,
           compare.router, policies.router, approvals.router]
