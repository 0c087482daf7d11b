"""Every router the app mounts; new route modules add themselves here."""

from api.routes import (
    approvals,
    artifacts,
    audit,
    base_model_artifacts,
    chat,
    compare,
    contracts,
    dryrun,
    events,
    health,
    jobs,
    lineage,
    policies,
    proofs,
    rewards,
    serving,
    traces,
    webhooks,
)
from api.routes import registry as registry_routes

ROUTERS = [health.router, events.router, audit.router, proofs.router, contracts.router,
           registry_routes.router, rewards.router, dryrun.router, jobs.router, lineage.router,
           artifacts.router,
           serving.router, compare.router, policies.router, approvals.router, chat.router,
           webhooks.router, traces.router, base_model_artifacts.router]
