"""The one freshness policy: every step of a run asks the same question the same way."""

from __future__ import annotations

from pathlib import Path

from textsieve import Options
from textsieve.archive.store import Known
from textsieve.extractors import FETCH_TAG
from textsieve.model import Document, Item
from textsieve.run.fresh import Freshness, Mode, Why


def _known(tag: str, status: str = "ok", kind: str | None = None, **kw: object) -> Known:
    return Known(id=1, sha256=kw.get("sha256"), size=kw.get("size"),  # type: ignore[arg-type]
                 mtime_ns=kw.get("mtime_ns"), status=status,  # type: ignore[arg-type]
                 extractor_version=tag, error_kind=kind)


def _tag(options: Options) -> str:
    doc = Document()
    doc.extractor = FETCH_TAG
    Freshness(options).stamp(doc)
    return doc.extractor


def test_other_output_options_make_an_item_outdated_at_every_step(tmp_path: Path) -> None:
    """Made with --lang deu, asked with eng: a file is re-extracted, a URL is fetched
    without its validators (a 304 would keep the old text) and extracted again."""
    f = tmp_path / "a.txt"
    f.write_text("hello")
    st = f.stat()
    made = _known(_tag(Options(ocr_lang="deu")), size=st.st_size, mtime_ns=st.st_mtime_ns)
    item = Item(key=str(f), original=str(f), source="x", path=str(f), size=st.st_size,
                mtime_ns=st.st_mtime_ns)
    now = Freshness(Options(ocr_lang="eng"))
    assert now.decide(item, made) == (Why.OUTDATED, None)
    assert now.fetch_wanted(made) and not now.still_good(made)
    assert now.why_again(made) is Why.OUTDATED
    same = Freshness(Options(ocr_lang="deu"))
    assert same.decide(item, made) == (None, None)
    assert same.still_good(made) and same.why_again(made) is Why.CHANGED


def test_failures_that_repeat_are_settled_until_asked() -> None:
    opts = Options()
    corrupt = _known(_tag(opts), status="error", kind="http_404")
    timeout = _known(_tag(opts), status="error", kind="timeout")
    assert not Freshness(opts).fetch_wanted(corrupt)
    assert Freshness(opts).fetch_wanted(timeout)
    assert Freshness(opts, Mode.RETRY_ERRORS).fetch_wanted(corrupt)
    assert not Freshness(opts, Mode.RETRY_ERRORS).fetch_wanted(_known(_tag(opts)))
    assert not Freshness(opts, Mode.RETRY_ERRORS).fetch_wanted(None)
    item = Item(key="k", original="k", source="x", data=b"abc")
    assert Freshness(opts).decide(item, timeout)[0] is Why.FAILED
    assert Freshness(opts, Mode.FORCE).decide(item, _known(_tag(opts)))[0] is Why.FORCED
