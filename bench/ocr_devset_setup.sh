#!/usr/bin/env bash
# Everything bench/ocr_devset.py needs to make the OCR development pages, so that anyone
# makes the same pages: the Debian fonts the pages are set in, headless Chromium for the
# screenshot pages, and bench/.peers/ocrdev-venv with augraphy and matplotlib (kept out of
# .venv: augraphy pulls in OpenCV and scikit-image, which textsieve does not use).
#
# Usage: bash bench/ocr_devset_setup.sh     (root or sudo; idempotent, re-run to repair)
#        OCRDEV_PY=python3.12 bash bench/ocr_devset_setup.sh
# Then:  bench/.peers/ocrdev-venv/bin/python bench/ocr_devset.py --split dev --pages 60
#        bench/.peers/ocrdev-venv/bin/python bench/ocr_devset.py --split aside --pages 40
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/bench/.peers/ocrdev-venv"
PY="${OCRDEV_PY:-python3.11}"

# The faces ocr_devset.py picks from (FONT_DIRS): a page set in a face that is missing
# here comes out in another one, and the pages differ from those the figures were made on.
APT_PACKAGES=(
  fonts-dejavu-core          # DejaVu (also installed by scripts/setup)
  fonts-urw-base35           # Times, Helvetica, Courier, Bookman, Palatino... clones (AGPL
                             # fonts with a font exception; used to draw pages, not shipped)
  fonts-liberation2          # Liberation Serif/Sans/Mono
  fonts-freefont-ttf         # GNU FreeFont
  fonts-crosextra-carlito    # Carlito (metric clone of Calibri)
  fonts-crosextra-caladea    # Caladea (metric clone of Cambria)
  chromium                   # the screenshot pages (skipped without it)
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
fi

# Versions the pages of bench/README.md were made with (Python 3.11, x86_64). augraphy's
# own dependencies (OpenCV, scikit-image, numpy) come in at the versions pip picked then.
PINS=(
  "augraphy==8.2.6"
  "matplotlib==3.11.2"
  "opencv-python==5.0.0.93"
  "scikit-image==0.26.0"
  "numpy==2.4.6"
  "pillow==13.0.0"
  "scipy==1.17.1"
)
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/pip" install -q "${PINS[@]}"
"$VENV/bin/python" -c "import augraphy, matplotlib; print('augraphy', augraphy.__version__ \
  if hasattr(augraphy, '__version__') else '', 'matplotlib', matplotlib.__version__)"
fc-list : family | grep -c -i -E "urw|liberation|freefont|carlito|caladea|dejavu" \
  | sed 's/^/font families found: /'
