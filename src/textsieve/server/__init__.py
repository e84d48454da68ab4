"""``textsieve serve``: extraction as a service (REST API, Tika-compatible endpoints).

Needs the optional extra ``textsieve[server]`` (FastAPI, uvicorn, prometheus-client).
"""

from __future__ import annotations

import sys

from ..options import Options


def serve(config: object, options: Options) -> None:
    """Run the service until interrupted (uvicorn, one process, the workers behind it)."""
    try:
        import uvicorn
    except ImportError as exc:
        raise ImportError("textsieve serve needs the server extra: pip install "
                          "'textsieve[server]'") from exc

    from .app import ServerConfig, create_app

    assert isinstance(config, ServerConfig)
    app = create_app(config, options)
    host = f"[{config.host}]" if ":" in config.host else config.host  # an IPv6 address
    base = f"http://{host}:{config.port}"
    room = f"; reading room {base}/ui/" if any(
        getattr(r, "path", "") == "/ui" for r in app.routes) else ""
    print(f"textsieve: serving on {base} (API docs {base}/docs{room})", file=sys.stderr,
          flush=True)
    uvicorn.run(app, host=config.host, port=config.port, log_level="warning",
                timeout_graceful_shutdown=5)
