"""`hcp gateway`: serve POST /v1/chat/completions (and /v1/models, /v1/feedback) alone."""

from __future__ import annotations

import typer


def gateway(host: str = typer.Option(None), port: int = typer.Option(None),
            warm: bool = typer.Option(True, "--warm/--no-warm",
                                      help="Load the base model before taking requests")) -> None:
    """Serve the OpenAI-compatible chat routes in a process of their own (docs/serving.md)."""
    import uvicorn

    from api.gateway_app import create_gateway_app
    from cli.common import check_port
    from hcp.bootstrap import bootstrap
    from hcp.settings import get_settings

    settings = get_settings()
    host, port = host or settings.api_host, port or settings.api_port
    check_port(host, port)
    container = bootstrap(settings)
    if warm:
        container.chat.warm()
    uvicorn.run(create_gateway_app(container), host=host, port=port, log_level="info")


def register(app: typer.Typer) -> None:
    app.command()(gateway)
