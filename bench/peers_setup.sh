#!/usr/bin/env bash
# Create bench/.peers/venv: ONE interpreter that can import textsieve AND the peer
# extractors (markitdown, kreuzberg, extractous), so bench_corpus.py / bench_sheet.py can
# run them side by side in a single run. Kept apart from .venv so the peers' large
# dependency trees never leak into textsieve's own environment or tests.
#
# Usage: bash bench/peers_setup.sh            (idempotent; re-run to repair)
#        PEERS_PY=python3.12 bash bench/peers_setup.sh
#
# Offline by design: no peer is configured to download models. markitdown's optional
# LLM/Azure/audio paths are never enabled by the bench; kreuzberg runs with OCR disabled,
# except in `bench_corpus.py --per-file`'s OCR pair, where it uses the system tesseract
# and its eng model (scripts/setup installs them; nothing is downloaded); extractous ships
# a GraalVM native library in its wheel and needs no JVM.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/bench/.peers/venv"
PY="${PEERS_PY:-python3.11}"

# Versions that were installed and run together on this machine (Python 3.11, x86_64).
PINS=(
  "markitdown[all]==0.1.8"
  "kreuzberg==4.10.4"
  "extractous==0.3.0"
  "psutil==7.2.2"
  "openpyxl==3.1.5"
  "reportlab==5.1.0"
)

if [[ ! -x "$VENV/bin/python" ]]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "${PINS[@]}"
"$VENV/bin/python" -m pip install --quiet -e "$ROOT"
"$VENV/bin/python" -m compileall -q "$ROOT/src"  # no module compiled on a timed start

# Smoke test: every peer imports and extracts a tiny text file. Where the kernel lets us,
# it runs in a fresh network namespace (no network at all) to prove the peers work offline.
OFFLINE=()
if command -v unshare >/dev/null && unshare -n true 2>/dev/null; then OFFLINE=(unshare -n); fi
"${OFFLINE[@]}" "$VENV/bin/python" - <<'EOF'
import importlib.metadata as md, tempfile, os
tmp = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
tmp.write("hello peers"); tmp.close()
for name in ("textsieve", "markitdown", "kreuzberg", "extractous", "psutil"):
    try:
        print(f"{name:12s} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name:12s} MISSING")
import textsieve
print("textsieve   ->", repr(textsieve.extract(tmp.name).text[:20]))
from markitdown import MarkItDown
print("markitdown  ->", repr(MarkItDown(enable_plugins=False).convert(tmp.name).text_content[:20]))
from kreuzberg import ExtractionConfig, extract_file_sync
print("kreuzberg   ->", repr(extract_file_sync(tmp.name, config=ExtractionConfig(use_cache=False, disable_ocr=True)).content[:20]))
from extractous import Extractor
print("extractous  ->", repr(Extractor().extract_file_to_string(tmp.name)[0][:20]))
os.unlink(tmp.name)
EOF
echo "peers venv ready: $VENV"
