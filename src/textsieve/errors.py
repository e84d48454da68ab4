"""One error tree for everything that is not an extraction failure.

A file that fails to extract is data: a ``Document`` with an ``ErrorKind``, and the run goes
on. Everything else (a bad option, a config file with a typo, an archive that is not ours, a
mail server that refuses the login) stops the command: it raises a ``TextsieveError``, which
carries the exit code and a one-line message, so the command line can print
``textsieve: message`` and exit with that code instead of showing a traceback (the model is
OCRmyPDF's ``ExitCodeException``). Each family keeps its own class, importable where it
always was (``textsieve.archive.ArchiveError``, ``textsieve.sources.SourceError``...).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """The exit codes of the ``textsieve`` command (README: "Exit codes")."""

    OK = 0
    FAILED = 1  # at least one input failed, or the archive/export could not be used
    USAGE = 2  # bad arguments, options, config file, source spec or query
    UNREACHABLE = 3  # a mail server or API could not be reached
    AUTH = 4  # credentials refused or missing
    INTERNAL = 70  # a bug (sysexits' EX_SOFTWARE): please report it
    INTERRUPTED = 130  # Ctrl-C


class TextsieveError(Exception):
    """Base of every non-extraction error: ``str(exc)`` is the one-line message shown to the
    user, ``exit_code`` what the command exits with."""

    exit_code: int = ExitCode.FAILED

    @property
    def message(self) -> str:
        """The message on one line: a server's multi-line answer must not break the
        ``textsieve: ...`` line a user (or a script) reads."""
        return " ".join(str(self).split())


class UsageError(TextsieveError):
    """What the user asked for cannot be done as asked: fix the command line."""

    exit_code = ExitCode.USAGE


class ConfigError(UsageError):
    """A config file that cannot be read, or holds an unknown key or a bad value."""


class UnreachableError(TextsieveError):
    """A server or API a source needs could not be reached (refused, TLS, timeout)."""

    exit_code = ExitCode.UNREACHABLE


class AuthError(TextsieveError):
    """Credentials refused by a server, or none found."""

    exit_code = ExitCode.AUTH


__all__ = ["AuthError", "ConfigError", "ExitCode", "TextsieveError", "UnreachableError",
           "UsageError"]
