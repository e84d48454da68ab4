"""A ZIP of many large, distinct members under a worker's memory cap: the members that fit
the unpacked-size budget are kept, the rest reported, and the worker does not run out of
memory (it used to, and then lost every member as "result too large")."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import zipfile
from pathlib import Path

from textsieve.options import MiB, Options

MEMBERS, MEMBER_MB, CAP_MB = 24, 8, 400


def distinct_members(path: Path) -> None:
    """Members of different text that compress ~8:1 (far below the ratio cap): each one is
    random draws from six 4 KiB blocks of random words (deflate's window holds all six)."""
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(3, 9)))
             for _ in range(2000)]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(MEMBERS):
            blocks = [(f"member {i} " + " ".join(rng.choice(words) for _ in range(700)))
                      .encode()[:4095] + b"\n" for _ in range(6)]
            body = b"".join(rng.choice(blocks) for _ in range(MEMBER_MB * 256))
            z.writestr(f"part-{i:02d}.txt", body)


def test_zip_over_the_memory_cap_keeps_the_members_that_fit(tmp_path: Path) -> None:
    path = tmp_path / "many.zip"
    distinct_members(path)
    res = subprocess.run([sys.executable, "-m", "textsieve", "extract", "-f", "json",
                          "-j", "1", "--memory-limit", str(CAP_MB), str(path)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert "Traceback" not in res.stderr
    doc = json.loads(res.stdout)
    assert doc["status"] == "error" and doc["error"]["kind"] == "too_large", doc["error"]
    budget = Options(memory_limit=CAP_MB * MiB).unpack_budget
    fit = budget // (MEMBER_MB * MiB)
    assert 1 <= fit < MEMBERS
    kids = doc["children"]
    kept = [c for c in kids if c["status"] == "ok"]
    assert [c["name"] for c in kept] == [f"part-{i:02d}.txt" for i in range(fit)]
    assert all(f"member {i} " in c["text"] for i, c in enumerate(kept))
    # The member that did not fit says so; the ones after it are counted in the message.
    assert kids[fit]["error"]["kind"] == "too_large"
    assert f"{MEMBERS - fit - 1} of {MEMBERS} members not extracted" in doc["error"]["message"]
