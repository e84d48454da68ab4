"""``s3://bucket/prefix/``: every object under a prefix, on any S3-compatible endpoint.

Incremental by ETag without downloading: an object's size and a number derived from its
ETag stand in for a file's size and mtime, so the runner skips an unchanged object on the
listing alone and downloads (``Item.remote``) only what is new or changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import PurePosixPath

from ..model import Item
from ..options import Options
from ..uris import UriError, list_s3, split_s3
from .base import SourceError


def etag_stamp(etag: str) -> int:
    """A stable 60-bit number for an ETag (stored where a file's mtime goes)."""
    return int(hashlib.sha256(etag.encode()).hexdigest()[:15], 16)


class S3Source:
    def __init__(self, spec: str, options: Options) -> None:
        try:
            split_s3(spec)
        except UriError as exc:
            raise SourceError(str(exc)) from exc
        self.spec, self.options = spec, options

    def items(self) -> Iterator[Item]:
        bucket, _ = split_s3(self.spec)
        try:
            for obj in list_s3(self.spec, self.options):
                if obj.key.endswith("/") or obj.size > self.options.max_file_size:
                    continue
                uri = f"s3://{bucket}/{obj.key}"
                yield Item(key=uri, original=uri, source=self.spec,
                           name=PurePosixPath(obj.key).name, size=obj.size,
                           mtime_ns=etag_stamp(obj.etag), remote=uri)
        except UriError as exc:
            raise SourceError(f"{self.spec}: {exc}") from exc
