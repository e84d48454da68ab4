"""The language of every item in the reading room, in a real headless Chromium: files and
a mail whose formats declare no language are filtered by the one detected, and an item's
page says it."""

from __future__ import annotations

import subprocess
import sys
from email.message import EmailMessage
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("selenium")
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from server_proc import running_server
from test_language import DE, EN, FR
from test_ui import _check, browser, needs_browser, shots

__all__ = ["browser", "shots"]  # fixtures, used by name


@needs_browser
def test_language_filter_and_item_language_in_chromium(tmp_path: Path,
                                                       browser: webdriver.Chrome,
                                                       shots: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "reiher.txt").write_text(DE, encoding="utf-8")
    (docs / "herons.md").write_text(EN, encoding="utf-8")
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "a@example.org", "b@example.org", "Hérons"
    mail.set_content(FR)
    (docs / "herons.eml").write_bytes(mail.as_bytes())
    db = tmp_path / "a.db"
    res = subprocess.run([sys.executable, "-m", "textsieve", "run", str(docs), "--archive",
                          str(db)], capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    d = browser
    with running_server("--archive", str(db), "-j", "1") as served:
        url = f"{served.url}/ui"  # as the README serves it
        d.get(f"{url}/search")
        d.find_element(By.CSS_SELECTOR, "details.filters summary").click()
        language = Select(d.find_element(By.NAME, "language"))
        assert {o.get_attribute("value") for o in language.options} == {"", "de", "en", "fr"}
        language.select_by_value("fr")
        d.find_element(By.CSS_SELECTOR, "#search-form button[type=submit]").click()
        WebDriverWait(d, 10).until(lambda x: "language=fr" in x.current_url)
        hits = d.find_elements(By.CSS_SELECTOR, ".hit a.title")
        assert [h.text for h in hits] == ["Hérons"]
        hits[0].click()
        WebDriverWait(d, 10).until(lambda x: "/items/" in x.current_url)
        facts = {dt.text: dd.text for dt, dd in zip(
            d.find_elements(By.CSS_SELECTOR, "dl dt"), d.find_elements(By.CSS_SELECTOR, "dl dd"),
            strict=False)}
        assert facts.get("Language") == "fr"
        _check(d, shots, "language-item")
