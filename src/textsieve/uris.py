"""Read and write documents named by URI: ``s3://``, ``http(s)://`` and ``file://``.

The service and the serverless handler take "extract this URI to that URI" events, so a
URI is untrusted input naming a place to read from or write to. Hence:

- ``http(s)://`` is read through the ``Fetcher`` only, so the address policy (no loopback,
  private, link-local or metadata address, checked after DNS resolution and on every
  redirect) and the body cap apply; it is never written to.
- ``file://`` is allowed only under configured roots (``roots``); with no roots, never.
  Reading resolves ``..`` and symbolic links first (a link out of the roots is refused)
  and reads regular files only (a FIFO or a device is a ``not_regular`` error, never a
  hang), capped at ``max_file_size`` and under ``fetch_timeout``. Writing walks from the
  root one folder at a time without following any link (``outfiles``: ``O_NOFOLLOW``
  relative to the folder above), writes a temporary file beside the target (removed on
  failure) and renames it into place; a target that is there already is replaced only
  when the caller asks (``overwrite``), and never when it is the document being read.
- ``s3://bucket/key`` goes to any S3-compatible endpoint through obstore (the endpoint
  from ``Options.s3_endpoint``, else ``AWS_ENDPOINT_URL``/AWS; credentials from the usual
  AWS variables, see ``s3_store``). Object metadata is read and written with the object.

Why obstore (Rust's object_store), not boto3 or s3fs: measured side by side against a
real SeaweedFS on 127.0.0.1 (``bench/bench_s3.py``, figures in bench/README.md), it did
what textsieve does with S3 2-6x faster than boto3 (GET with metadata 3-6x, PUT with
metadata 2-5x, listing with ETags 5-6x; one 100 MB GET is a wash); it imports in 5-7 ms
instead of 0.15-0.35 s (a serverless cold start pays that) and a client costs 5-20 ms,
not 0.1-0.3 s (one is made per URI). s3fs (fsspec) was slower than boto3 and hands user
metadata back with ``_`` turned into ``-`` (``missing_text_pages`` would come back as
``missing-text-pages``). What obstore lacks
is handled here: ``~/.aws`` profiles (boto3's chain when it is installed, see
``s3_store``) and S3's string prefixes (``list_s3``). A key obstore's path rules refuse
(an empty, ``.`` or ``..`` segment) is a ``bad_url`` error, and so is a key ending in
``/`` (obstore would drop the slash and read another object). obstore does not survive
``fork`` (see ``_obstore``): s3:// is read in the driver or the service process and the
bytes go to the workers.

Every refusal or failure is a ``UriError`` with an ``ErrorKind``, so a caller reports it
as data (a typed error record), never a traceback.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from operator import methodcaller
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from .errors import TextsieveError
from .model import ErrorKind
from .options import Options

logger = logging.getLogger(__name__)


class UriError(TextsieveError):
    """A URI that cannot be read or written; ``kind`` says why (blocked_address,
    not_found, bad_url, too_large, ...)."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Blob:
    """An object's bytes with what the store said about it."""

    data: bytes
    metadata: dict[str, str] = field(default_factory=dict)
    etag: str | None = None
    content_type: str | None = None
    identity: tuple[int, int] | None = None  # a local file's (device, inode)


# S3's bucket names, with the legacy ones (upper case, "_", up to 255) and dots let in.
_BUCKET = re.compile(r"[A-Za-z0-9._-]{1,255}")

# Never turned into a UriError: an interrupt, an exit, a generator being closed.
_PASS = (KeyboardInterrupt, SystemExit, GeneratorExit)


def split_s3(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> (bucket, key)."""
    parts = urlsplit(uri)
    if parts.scheme != "s3" or not parts.netloc:
        raise UriError(ErrorKind.BAD_URL, f"not an s3://bucket/key URI: {uri!r}")
    if not _BUCKET.fullmatch(parts.netloc):  # obstore panics on some (a space, say)
        raise UriError(ErrorKind.BAD_URL, f"not a bucket name in {uri!r}")
    return parts.netloc, unquote(parts.path.lstrip("/"))


# The pid of the process whose obstore runtime serves s3:// (None: not started yet).
_RUNTIME_PID: int | None = None


def _obstore() -> Any:
    """The obstore module (the optional extra textsieve[s3]), or a typed error naming it.

    obstore's runtime (tokio's threads) does not survive ``fork``: a child forked after
    its parent used s3:// would hang forever on its first request. Such a child gets an
    ``internal`` error at once instead (download in the parent, as ``run`` and the
    service do, and hand the bytes over; a child forked before any s3:// use is fine)."""
    global _RUNTIME_PID
    if _RUNTIME_PID is None:
        _RUNTIME_PID = os.getpid()
    elif os.getpid() != _RUNTIME_PID:
        raise UriError(ErrorKind.INTERNAL, "s3:// in a process forked after its parent "
                       "used s3://: obstore cannot run there (it would hang)")
    try:
        import obstore
        import obstore.exceptions
        import obstore.store
    except ImportError as exc:
        raise UriError(ErrorKind.MISSING_TOOL,
                       "s3:// needs obstore: pip install 'textsieve[s3]'") from exc
    return obstore


def s3_store(bucket: str, options: Options) -> Any:
    """An obstore ``S3Store`` for ``bucket`` (obstore is the optional extra textsieve[s3]).

    The endpoint is ``Options.s3_endpoint``, else ``AWS_ENDPOINT_URL`` (or
    ``AWS_ENDPOINT_URL_S3``), else AWS; keys, session token, region, web identity, ECS and
    EC2 instance credentials come from the usual AWS variables, read by obstore itself.
    obstore reads no ``~/.aws`` profile: when the environment names no key and boto3 is
    installed, boto3's credential chain (profiles, SSO, ...) supplies them instead.

    One store per bucket, options and AWS environment in a process: making one costs
    4-8 ms (its HTTP client and credential set-up), and a run or an export touches each of
    thousands of objects once."""
    aws_env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_")))
    return _store(os.getpid(), bucket, options, aws_env, _profile_credentials())


@functools.lru_cache(maxsize=16)
def _store(pid: int, bucket: str, options: Options, aws_env: tuple[tuple[str, str], ...],
           credentials: Any) -> Any:
    """``s3_store``'s work; the arguments past ``options`` only key the cache (obstore
    reads the AWS variables itself when the store is made)."""
    S3Store = _obstore().store.S3Store
    if options.s3_endpoint:
        _check_endpoint(options.s3_endpoint)
    # Both keys: obstore prefers AWS_ENDPOINT_URL_S3 to an explicit endpoint otherwise.
    config = ({"endpoint": options.s3_endpoint, "aws_endpoint_url_s3": options.s3_endpoint}
              if options.s3_endpoint else {})
    # allow_http: the endpoint's scheme is the deployment's choice (a SeaweedFS or MinIO
    # on a private network is often plain http), as with any S3 client; AWS is https.
    client_options = {"allow_http": True,
                      "connect_timeout": timedelta(seconds=options.connect_timeout),
                      "read_timeout": timedelta(seconds=options.read_timeout),
                      "timeout": timedelta(seconds=options.fetch_timeout)}
    retry_config = {"max_retries": options.retries,
                    "retry_timeout": timedelta(seconds=options.fetch_timeout)}
    try:
        return S3Store(bucket, config=config, client_options=client_options,
                       retry_config=retry_config, credential_provider=credentials)
    except _PASS:
        raise
    except BaseException as exc:  # a configuration obstore refuses (a bad endpoint, ...)
        raise UriError(ErrorKind.BAD_URL, f"s3://{bucket}: cannot configure the S3 "
                       f"client: {str(exc).splitlines()[0] if str(exc) else exc!r}") from exc


def _check_endpoint(endpoint: str) -> None:
    """Refuse an endpoint that is no http(s) URL with a host (obstore panics on some)."""
    try:
        parts = urlsplit(endpoint)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        ok = False
    if not ok:
        raise UriError(ErrorKind.BAD_URL, f"not an http(s) S3 endpoint: {endpoint!r}")


def _profile_credentials() -> Any:
    """boto3's credential chain when the environment holds no key (a developer's
    ``~/.aws`` profile or SSO, which obstore does not read); None otherwise, and when
    boto3 is absent or finds nothing (then obstore's own chain: web identity, ECS, EC2)."""
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        return None
    return _boto3_provider(os.environ.get("AWS_PROFILE"),
                           os.environ.get("AWS_SHARED_CREDENTIALS_FILE"),
                           os.environ.get("AWS_CONFIG_FILE"))


@functools.lru_cache(maxsize=8)
def _boto3_provider(profile: str | None, credentials_file: str | None,
                    config_file: str | None) -> Any:
    """One provider per profile set-up: boto3's chain can spend a second probing for
    instance metadata when it finds nothing, so that is asked once, not per object (the
    provider refreshes expiring credentials itself)."""
    try:
        from obstore.auth.boto3 import Boto3CredentialProvider
    except ImportError:  # boto3 is not installed
        return None
    try:
        return Boto3CredentialProvider()
    except Exception:  # boto3 found no credentials either
        logger.debug("no boto3 credentials; obstore's own credential chain is used")
        return None


_STATUS = re.compile(r"status code: ([45]\d\d)\b")  # obstore: "... status code: 503 ..."


def _s3_error(uri: str, exc: BaseException) -> UriError:
    """obstore's exception as a typed ``UriError``."""
    oe = _obstore().exceptions
    if isinstance(exc, FileNotFoundError | oe.NotFoundError):  # obstore raises the former
        return UriError(ErrorKind.NOT_FOUND, f"{uri}: no such object")
    if isinstance(exc, oe.PermissionDeniedError | oe.UnauthenticatedError):
        return UriError(ErrorKind.HTTP_4XX, f"{uri}: access denied")
    if isinstance(exc, oe.InvalidPathError | ValueError):
        return UriError(ErrorKind.BAD_URL, f"{uri}: not a valid object key")
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    status = _STATUS.search(str(exc))
    if status:
        kind = ErrorKind.HTTP_5XX if status.group(1).startswith("5") else ErrorKind.HTTP_4XX
        return UriError(kind, f"{uri}: {message}")
    return UriError(ErrorKind.CONNECTION, f"{uri}: cannot reach the S3 endpoint ({message})")


# obstore's names of the standard attributes of an object; every other one is user metadata
_STANDARD = frozenset({"Content-Type", "Content-Disposition", "Content-Encoding",
                       "Content-Language", "Cache-Control"})


def under_roots(uri: str, roots: tuple[str, ...]) -> Path:
    """The local path of a ``file://`` URI, refused unless it lies under one of ``roots``
    once ``..`` and symbolic links are resolved (a path traversal gains nothing)."""
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise UriError(ErrorKind.BAD_URL, f"{uri}: file:// URIs name this machine only")
    path = Path(os.path.realpath(unquote(parts.path)))
    for root in roots:
        base = Path(os.path.realpath(root))
        if path == base or base in path.parents:
            return path
    raise UriError(ErrorKind.BLOCKED_ADDRESS,
                   f"{uri}: outside the allowed folders" if roots else
                   f"{uri}: file:// URIs are not allowed here (no --file-root)")


def local_target(uri: str, roots: tuple[str, ...]) -> tuple[str, list[str]]:
    """Where a ``file://`` URI is written: (a root, the path's parts below it), decided on
    the path as written (``..`` collapsed), never by following a link: the writer walks
    the parts from the root without following any (``outfiles.write_under``)."""
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise UriError(ErrorKind.BAD_URL, f"{uri}: file:// URIs name this machine only")
    path = os.path.normpath(unquote(parts.path))
    if not os.path.isabs(path) or "\x00" in path:
        raise UriError(ErrorKind.BAD_URL, f"{uri}: not an absolute path")
    for root in roots:
        for base in dict.fromkeys((os.path.normpath(root), os.path.realpath(root))):
            if path == base:
                raise UriError(ErrorKind.BAD_URL, f"{uri}: names the folder --file-root "
                               "itself, not a file in it")
            if path.startswith(base.rstrip("/") + "/"):
                return base, path[len(base.rstrip("/")) + 1:].split("/")
    raise UriError(ErrorKind.BLOCKED_ADDRESS,
                   f"{uri}: outside the allowed folders" if roots else
                   f"{uri}: file:// URIs are not allowed here (no --file-root)")


def _read_file(uri: str, options: Options, roots: tuple[str, ...]) -> Blob:
    """A regular file under the roots, read whole under a cap and a deadline."""
    import stat
    import time

    path = under_roots(uri, roots)
    cap, deadline = options.max_file_size, time.monotonic() + options.fetch_timeout
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise UriError(ErrorKind.NOT_REGULAR, f"{uri}: not a regular file "
                           f"({_file_kind(os.stat(path).st_mode)})")
        # O_NONBLOCK: were it swapped for a FIFO since, opening it does not wait.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise UriError(ErrorKind.NOT_FOUND, f"{uri}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UriError(ErrorKind.NOT_REGULAR,
                           f"{uri}: not a regular file ({_file_kind(st.st_mode)})")
        if st.st_size > cap:
            raise UriError(ErrorKind.TOO_LARGE, f"{uri}: larger than the size limit")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > cap:  # it grew while read
                raise UriError(ErrorKind.TOO_LARGE, f"{uri}: larger than the size limit")
            if time.monotonic() > deadline:
                raise UriError(ErrorKind.TIMEOUT, f"{uri}: not read within "
                               f"{options.fetch_timeout:g} s")
            chunks.append(chunk)
        return Blob(b"".join(chunks), identity=(st.st_dev, st.st_ino))
    except OSError as exc:
        raise UriError(ErrorKind.NOT_FOUND, f"{uri}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _file_kind(mode: int) -> str:
    import stat

    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"


def _s3_object(uri: str, options: Options) -> tuple[Any, Any, str]:
    """obstore, the store and the key of the one object ``s3://bucket/key`` names."""
    bucket, key = split_s3(uri)
    if not key or key.endswith("/"):
        raise UriError(ErrorKind.BAD_URL, f"{uri}: names no object")
    return _obstore(), s3_store(bucket, options), key


def read(uri: str, options: Options, *, roots: tuple[str, ...] = ()) -> Blob:
    """The bytes (and metadata) of ``uri``; raises ``UriError``."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme == "s3":
        obstore, store, key = _s3_object(uri, options)
        try:  # one GET: its headers give the size (checked before the body is read)
            got = obstore.get(store, key)
            if got.meta["size"] > options.max_file_size:
                raise UriError(ErrorKind.TOO_LARGE, f"{uri}: larger than the size limit")
            data = bytes(got.bytes())
        except UriError:
            raise
        except _PASS:
            raise
        except BaseException as exc:  # a Rust panic in obstore is a BaseException
            raise _s3_error(uri, exc) from exc
        attributes = dict(got.attributes)
        metadata = {k: str(v) for k, v in attributes.items() if k not in _STANDARD}
        content_type = attributes.get("Content-Type")
        return Blob(data, metadata, got.meta.get("e_tag"),
                    str(content_type) if content_type is not None else None)
    if scheme in ("http", "https"):
        from .fetch import Fetcher

        with Fetcher(options.with_(obey_robots=False)) as fetcher:
            result = fetcher.fetch(uri)
        if result.error is not None:
            raise UriError(result.error.kind, f"{uri}: {result.error.message}")
        return Blob(result.content or b"", {}, result.etag, result.content_type)
    if scheme == "file":
        return _read_file(uri, options, roots)
    raise UriError(ErrorKind.BAD_URL, f"unsupported URI scheme in {uri!r} "
                   "(s3://, http(s)://, file://)")


def write(uri: str, data: bytes, options: Options, *, metadata: dict[str, str] | None = None,
          content_type: str = "application/octet-stream", roots: tuple[str, ...] = (),
          overwrite: bool = True, protect: tuple[int, int] | None = None) -> None:
    """Store ``data`` at ``uri`` (s3:// with object metadata, or file:// under ``roots``,
    written whole or not at all); raises ``UriError``. For file://: ``overwrite=False``
    refuses a target that is there already (``exists``), and ``protect`` (a file's
    device and inode: the document read) is never replaced, whatever the name."""
    scheme = urlsplit(uri).scheme.lower()
    meta = {k: str(v) for k, v in (metadata or {}).items()}
    if scheme == "s3":
        obstore, store, key = _s3_object(uri, options)
        try:
            obstore.put(store, key, data, attributes={**meta, "Content-Type": content_type})
        except _PASS:
            raise
        except BaseException as exc:  # a Rust panic in obstore is a BaseException
            raise _s3_error(uri, exc) from exc
        return
    if scheme == "file":
        import json

        from .outfiles import UnsafePath, lstat_under, write_under

        root, parts = local_target(uri, roots)

        def check(there: os.stat_result | None) -> None:
            if there is None:
                return
            if protect is not None and (there.st_dev, there.st_ino) == protect:
                raise UriError(ErrorKind.BLOCKED_ADDRESS, f"{uri}: the document being "
                               "read; it is never written over")
            if not overwrite:
                raise UriError(ErrorKind.EXISTS, f"{uri}: there already (the event's "
                               "overwrite: true replaces it)")

        # A file has no object metadata: a sidecar beside it keeps it.
        files = [(parts, data)]
        if meta:
            files.append(([*parts[:-1], parts[-1] + ".meta.json"],
                          json.dumps(meta).encode()))
        try:
            for where, _ in files:  # all refused before any is written
                check(lstat_under(root, where))
            for where, content in files:
                write_under(root, where, methodcaller("write", content),
                            replace=overwrite, check=check)
        except UriError:
            raise
        except UnsafePath as exc:
            raise UriError(ErrorKind.BLOCKED_ADDRESS, f"{uri}: {exc.filename} on the way "
                           "is a symbolic link; nothing is written through one") from exc
        except FileExistsError as exc:
            raise UriError(ErrorKind.EXISTS, f"{uri}: there already (the event's "
                           "overwrite: true replaces it)") from exc
        except ValueError as exc:
            raise UriError(ErrorKind.BAD_URL, f"{uri}: {exc}") from exc
        except OSError as exc:
            raise UriError(ErrorKind.NOT_FOUND, f"{uri}: {exc.strerror or exc}") from exc
        return
    raise UriError(ErrorKind.BAD_URL, f"cannot write to {uri!r} (s3:// or file:// only)")


@dataclass(frozen=True)
class S3Object:
    key: str
    etag: str
    size: int


def list_s3(uri: str, options: Options) -> Iterator[S3Object]:
    """Every object whose key starts with the prefix of ``s3://bucket/prefix``, page by
    page. S3's prefix is a plain string prefix (``reports/2024-`` matches
    ``reports/2024-05.pdf``), obstore's a path: a prefix that does not end in ``/`` lists
    its folder and keeps the keys that start with it."""
    bucket, prefix = split_s3(uri)
    obstore, store = _obstore(), s3_store(bucket, options)
    folder = prefix.rstrip("/") if prefix.endswith("/") else prefix.rpartition("/")[0]
    try:
        for batch in obstore.list(store, prefix=folder or None, chunk_size=1000):
            for meta in batch:
                if meta["path"].startswith(prefix):
                    yield S3Object(meta["path"], (meta.get("e_tag") or "").strip('"'),
                                   meta["size"])
    except _PASS:
        raise
    except BaseException as exc:  # a Rust panic in obstore is a BaseException
        raise _s3_error(uri, exc) from exc


def export_to_s3(write_local: Callable[[str], int], uri: str, fmt: str,
                 options: Options) -> int:
    """An export to ``s3://``: ``write_local(path)`` writes it into a temporary folder
    (a txt tree) or file (jsonl, parquet), which is then uploaded under ``uri`` (a txt
    tree keeps its relative paths below the prefix). Returns what ``write_local`` did."""
    from .archive.export import ExportError

    bucket, key = split_s3(uri)
    with tempfile.TemporaryDirectory(prefix="textsieve-export-") as tmp:
        local = Path(tmp) / ("out" if fmt == "txt" else f"out.{fmt}")
        n = write_local(str(local))
        try:
            if fmt == "txt":
                prefix = key.rstrip("/")
                for path in sorted(p for p in local.rglob("*") if p.is_file()):
                    rel = path.relative_to(local).as_posix()
                    write(f"s3://{bucket}/{prefix + '/' if prefix else ''}{rel}",
                          path.read_bytes(), options, content_type="text/plain; charset=utf-8")
            else:
                if not key or key.endswith("/"):
                    key = f"{key}textsieve.{fmt}"
                write(f"s3://{bucket}/{key}", local.read_bytes(), options)
        except UriError as exc:
            raise ExportError(f"cannot export to {uri}: {exc}") from exc
    return n
