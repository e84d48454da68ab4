"""Read and write documents named by URI: ``s3://``, ``http(s)://`` and ``file://``.

The service and the serverless handler take "extract this URI to that URI" events, so a
URI is untrusted input naming a place to read from or write to. Hence:

- ``http(s)://`` is read through the ``Fetcher`` only, so the address policy (no loopback,
  private, link-local or metadata address, checked after DNS resolution and on every
  redirect) and the body cap apply; it is never written to.
- ``file://`` is allowed only under configured roots (``roots``), after resolving ``..``
  and symbolic links, for reading and writing alike; with no roots, never.
- ``s3://bucket/key`` goes to any S3-compatible endpoint through boto3 (the endpoint from
  ``Options.s3_endpoint``, else boto3's own ``AWS_ENDPOINT_URL``/AWS; credentials from the
  usual AWS variables and files). Object metadata is read and written with the object.

Every refusal or failure is a ``UriError`` with an ``ErrorKind``, so a caller reports it
as data (a typed error record), never a traceback.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from .errors import TextsieveError
from .model import ErrorKind
from .options import Options


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


def split_s3(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> (bucket, key)."""
    parts = urlsplit(uri)
    if parts.scheme != "s3" or not parts.netloc:
        raise UriError(ErrorKind.BAD_URL, f"not an s3://bucket/key URI: {uri!r}")
    return parts.netloc, unquote(parts.path.lstrip("/"))


def s3_client(options: Options) -> Any:
    """A boto3 S3 client for ``options`` (boto3 is the optional extra textsieve[s3])."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:
        raise UriError(ErrorKind.MISSING_TOOL,
                       "s3:// needs boto3: pip install 'textsieve[s3]'") from exc
    config = Config(connect_timeout=options.connect_timeout, read_timeout=options.read_timeout,
                    retries={"max_attempts": options.retries + 1, "mode": "standard"},
                    s3={"addressing_style": "path"} if options.s3_endpoint else None)
    return boto3.session.Session().client("s3", endpoint_url=options.s3_endpoint or None,
                                          config=config)


def _s3_error(uri: str, exc: Exception) -> UriError:
    code = ""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = str(response.get("Error", {}).get("Code", ""))
    if code in ("NoSuchKey", "NoSuchBucket", "404", "NotFound"):
        return UriError(ErrorKind.NOT_FOUND, f"{uri}: no such object")
    if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
        return UriError(ErrorKind.HTTP_4XX, f"{uri}: access denied ({code})")
    name = type(exc).__name__
    if "Endpoint" in name or "Connect" in name:
        return UriError(ErrorKind.CONNECTION, f"{uri}: cannot reach the S3 endpoint ({exc})")
    return UriError(ErrorKind.HTTP_5XX if code.startswith("5") else ErrorKind.CONNECTION,
                    f"{uri}: {name}: {exc}")


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


def read(uri: str, options: Options, *, roots: tuple[str, ...] = ()) -> Blob:
    """The bytes (and metadata) of ``uri``; raises ``UriError``."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme == "s3":
        bucket, key = split_s3(uri)
        client = s3_client(options)
        try:
            head = client.head_object(Bucket=bucket, Key=key)
            if head.get("ContentLength", 0) > options.max_file_size:
                raise UriError(ErrorKind.TOO_LARGE, f"{uri}: larger than the size limit")
            obj = client.get_object(Bucket=bucket, Key=key)
            data = obj["Body"].read(options.max_file_size + 1)
        except UriError:
            raise
        except Exception as exc:
            raise _s3_error(uri, exc) from exc
        return Blob(data, dict(obj.get("Metadata") or {}), obj.get("ETag"),
                    obj.get("ContentType"))
    if scheme in ("http", "https"):
        from .fetch import Fetcher

        with Fetcher(options.with_(obey_robots=False)) as fetcher:
            result = fetcher.fetch(uri)
        if result.error is not None:
            raise UriError(result.error.kind, f"{uri}: {result.error.message}")
        return Blob(result.content or b"", {}, result.etag, result.content_type)
    if scheme == "file":
        path = under_roots(uri, roots)
        try:
            if path.stat().st_size > options.max_file_size:
                raise UriError(ErrorKind.TOO_LARGE, f"{uri}: larger than the size limit")
            return Blob(path.read_bytes())
        except OSError as exc:
            raise UriError(ErrorKind.NOT_FOUND, f"{uri}: {exc.strerror or exc}") from exc
    raise UriError(ErrorKind.BAD_URL, f"unsupported URI scheme in {uri!r} "
                   "(s3://, http(s)://, file://)")


def write(uri: str, data: bytes, options: Options, *, metadata: dict[str, str] | None = None,
          content_type: str = "application/octet-stream", roots: tuple[str, ...] = ()) -> None:
    """Store ``data`` at ``uri`` (s3:// with object metadata, or file:// under ``roots``,
    written whole or not at all); raises ``UriError``."""
    scheme = urlsplit(uri).scheme.lower()
    meta = {k: str(v) for k, v in (metadata or {}).items()}
    if scheme == "s3":
        bucket, key = split_s3(uri)
        if not key or key.endswith("/"):
            raise UriError(ErrorKind.BAD_URL, f"{uri}: names no object")
        try:
            s3_client(options).put_object(Bucket=bucket, Key=key, Body=data, Metadata=meta,
                                          ContentType=content_type)
        except Exception as exc:
            raise _s3_error(uri, exc) from exc
        return
    if scheme == "file":
        path = under_roots(uri, roots)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".textsieve-")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
            if meta:  # a file has no object metadata: a sidecar keeps it
                import json

                path.with_name(path.name + ".meta.json").write_text(json.dumps(meta))
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
    """Every object under an ``s3://bucket/prefix/``, page by page."""
    bucket, prefix = split_s3(uri)
    client = s3_client(options)
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                      Prefix=prefix):
            for obj in page.get("Contents", []):
                yield S3Object(obj["Key"], obj.get("ETag", "").strip('"'), obj.get("Size", 0))
    except Exception as exc:
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
