"""The reading room: a web UI over the archive (search, items, reading list, problems,
overview). ``router(settings)`` is what ``textsieve serve`` mounts; ``app(archive)`` serves
the reading room alone. Needs the ``textsieve[server]`` extra."""

from .web import Settings, app, router

__all__ = ["Settings", "app", "router"]
