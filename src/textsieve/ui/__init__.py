"""The reading room: a web UI over the archive (search, items, reading list, problems,
overview). ``router(settings)`` is what ``textsieve serve`` mounts, with
``install_error_pages(app, router)`` for its error pages; ``app(archive)`` serves the
reading room alone. Needs the ``textsieve[server]`` extra."""

from .pages import Settings, app, install_error_pages, router

__all__ = ["Settings", "app", "install_error_pages", "router"]
