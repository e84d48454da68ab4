"""Topic sieve benchmark: textsieve against the 2015 method on recipes-dev, side by side.

Run by hand, from the repo root:

    .venv/bin/python bench/bench_sieve.py [--split dev|holdout|all] [--condition raw|stripped|both]

Quality: ../shared/tools/recipe_score.py itself runs both systems in one process on the
pages of the chosen split (it prints its own tables: F1 per field and per language
group), with ``--callable textsieve --callable bench.sieve2015:sieve``. Speed: the
median process CPU time per page and field, as the scorer measures it (one call, the
file read included, after an untimed warm-up), and the ratio of the two systems.

The split: recipes-dev's hosts are divided by ``md5("h25" + host) % 4``; hosts with 0
(73 hosts, 120 pages: en 98, de 7, fr 2, es 1, other 12) are the ``holdout``, set aside
while the sieve was tuned on the ``dev`` rest (189 hosts, 334 pages) and scored at the
end only. Every page of a host is on the same side.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT.parent / "shared" / "tools"
DATA = ROOT.parent / "shared" / "data" / "recipes-dev"
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(ROOT))

import recipe_score  # noqa: E402

SALT = "h25"
SYSTEMS = ("textsieve", "bench.sieve2015:sieve")


def split_of(host: str) -> str:
    return "holdout" if int(hashlib.md5((SALT + host).encode()).hexdigest(), 16) % 4 == 0 \
        else "dev"


def split_dir(tmp: Path, split: str) -> Path:
    """A folder of links to the hosts of ``split`` (the scorer reads <host>/NAME.*)."""
    out = tmp / split
    out.mkdir()
    for host in sorted(p for p in DATA.iterdir() if p.is_dir()):
        if split == "all" or split_of(host.name) == split:
            (out / host.name).symlink_to(host)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("dev", "holdout", "all"), default="dev")
    ap.add_argument("--condition", choices=("raw", "stripped", "both"), default="both")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-sieve-") as tmp:
        data = split_dir(Path(tmp), args.split)
        summary = Path(tmp) / "summary.json"
        cli = ["--data-dir", str(data), "--condition", args.condition,
               "--json-out", str(summary)]
        for name in SYSTEMS:
            cli += ["--callable", name]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            recipe_score.main(cli)
        print(f"# split: {args.split}\n")
        print(out.getvalue().replace(str(data), f"recipes-dev[{args.split}]"))
        result = json.loads(summary.read_text("utf-8"))
    print("\n## Speed: median process CPU ms per page and field (the file read included)\n")
    print("| condition | field | textsieve | 2015 method | textsieve / 2015 |")
    print("|---|---|---|---|---|")
    for condition, groups in result["summary"].items():
        for field in recipe_score.FIELDS:
            ours = groups[f"{SYSTEMS[0]}/{field}"]["cpu_ms"]["median"]
            theirs = groups[f"{SYSTEMS[1]}/{field}"]["cpu_ms"]["median"]
            print(f"| {condition} | {field} | {ours:.1f} | {theirs:.1f} | "
                  f"{ours / theirs:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
