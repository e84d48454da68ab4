"""The README's main job, end to end: `textsieve demo` on the bundled samples.

Documents of every family, and a mailbox of links served from a local site: each link is
fetched once however many mails name it, kept with the mails that named it, junk links
(unsubscribe, share buttons, tracking pixels) are not archived, and search finds it all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from textsieve.archive import Archive


def test_demo_end_to_end(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    p = subprocess.run([sys.executable, "-m", "textsieve", "demo", "--archive", str(db)],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    with Archive(db, readonly=True) as a:
        rows = a.conn.execute("SELECT id, key, status FROM items WHERE parent_id IS NULL")
        items = {key: (iid, status) for iid, key, status in rows}
        web = {k: v for k, v in items.items() if k.startswith("http://127.0.0.1")}
        docs = {k: v for k, v in items.items() if "/samples/docs/" in k}
        assert len(docs) == len(list((Path(__file__).parents[1] / "samples" / "docs").iterdir()))
        assert all(status == "ok" for _, status in items.values()), items
        # three pages linked from four mails; tracking parameters stripped from the keys
        assert sorted(k.rsplit("/", 1)[1] for k in web) == [
            "heron-migration.html", "reed-bed-soup.html", "ringing-report.pdf"]
        heron = next(v[0] for k, v in web.items() if k.endswith("heron-migration.html"))
        mails = a.mails_of(heron)
        assert len(mails) == 3  # mailed three times (once inside a newsletter)
        assert {m["subject"] for m in mails} >= {"read later: herons in winter",
                                                 "again, the heron piece"}
        doc = a.document(heron)
        assert doc is not None and "most grey herons hardly migrate" in doc.text
        for junk in ("Accept all cookies", "Related posts", "Great read"):
            assert junk not in doc.text  # main content only
        assert not any("unsubscribe" in k or "open.gif" in k or "twitter" in k for k in items)
        # the newsletter's own article is an item of its own, tied to its mail
        (article,) = [v[0] for k, v in items.items() if k.startswith("mail:")]
        text = a.document(article).full_text()  # type: ignore[union-attr]
        assert "booming males" in text and "pallets" in text
        assert [m["subject"] for m in a.mails_of(article)] == [
            "Wetland Notes weekly: where the herons go"]
    assert "ringing" in p.stdout.lower() and "nettle" in p.stdout.lower()
    shown = subprocess.run([sys.executable, "-m", "textsieve", "show", str(heron), "-f", "json",
                            "--archive", str(db)], capture_output=True, text=True, timeout=60,
                           check=True)
    assert len(json.loads(shown.stdout)["mails"]) == 3  # show gives the mail provenance
    # so do the exports: each row names the mails its item came from
    out = tmp_path / "all.jsonl"
    subprocess.run([sys.executable, "-m", "textsieve", "export", "--format", "jsonl", "--to",
                    str(out), "--archive", str(db)], capture_output=True, timeout=60, check=True)
    rows = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert {m["subject"] for m in rows[heron]["mails"]} >= {"read later: herons in winter",
                                                            "again, the heron piece"}
    assert all(m["message_id"] and m["source"] for m in rows[heron]["mails"])
    assert [m["subject"] for m in rows[article]["mails"]] == [
        "Wetland Notes weekly: where the herons go"]
    assert all(not r["mails"] for r in rows.values() if "/samples/docs/" in r["key"])
    try:
        import pyarrow.parquet as pq
    except ImportError:  # the parquet extra is not installed
        pq = None
    if pq is not None:
        subprocess.run([sys.executable, "-m", "textsieve", "export", "--format", "parquet",
                        "--to", str(tmp_path / "all.parquet"), "--archive", str(db)],
                       capture_output=True, timeout=60, check=True)
        table = {r["id"]: r for r in pq.read_table(tmp_path / "all.parquet").to_pylist()}
        assert table[heron]["mails"] == rows[heron]["mails"]
    # a second run changes nothing
    p = subprocess.run([sys.executable, "-m", "textsieve", "demo", "--archive", str(db)],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert p.returncode == 0, p.stderr
    with Archive(db, readonly=True) as a:
        counts = a.conn.execute("SELECT counts FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0]
    assert '"extracted": 0' in counts
