"""Labels in the reading room, in a real headless Chromium: an archive made by `textsieve
run --fetch never` from a real Firefox bookmark export (tests/fixtures/bookmarks) and a
bookmark file whose folder name and tag are script payloads. A user filters the search
page by a label, sees each hit's labels, opens a hit (its labels and what the bookmark said
of it: title, date), follows a label to the search it filters; no payload runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("selenium")
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from server_proc import running_server
from test_ui import P_IMG, P_TAG, _check, browser, needs_browser, shots

__all__ = ["browser", "shots"]  # fixtures, used by name

FIREFOX_HTML = Path(__file__).parent / "fixtures" / "bookmarks" / "firefox-153.html"


@needs_browser
def test_label_filter_and_item_labels_in_chromium(tmp_path: Path, browser: webdriver.Chrome,
                                                  shots: Path) -> None:
    hostile = tmp_path / "hostile.html"
    hostile.write_text(
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n"
        f"<DT><H3>{P_TAG.replace('<', '&lt;')}</H3>\n<DL><p>\n"
        '<DT><A HREF="https://h.example/x" ADD_DATE="1700000000" '
        f'TAGS="{P_IMG.replace(chr(34), "&quot;")}">'
        f"Hostile {P_TAG.replace('<', '&lt;')}</A>\n<DD>note {P_IMG.replace('<', '&lt;')}\n"
        "</DL><p>\n</DL>\n", "utf-8")
    db = tmp_path / "a.db"
    res = subprocess.run([sys.executable, "-m", "textsieve", "run", "--archive", str(db),
                          "--fetch", "never", f"bookmarks:{FIREFOX_HTML}",
                          f"bookmarks:{hostile}"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    d = browser
    with running_server("--archive", str(db), "-j", "1") as served:
        url = f"{served.url}/ui"  # as the README serves it
        d.get(f"{url}/search")
        d.find_element(By.CSS_SELECTOR, "details.filters summary").click()
        Select(d.find_element(By.NAME, "label")).select_by_value("Recipes")
        d.find_element(By.CSS_SELECTOR, "#search-form button[type=submit]").click()
        WebDriverWait(d, 10).until(lambda x: "label=Recipes" in x.current_url)
        titles = sorted(a.text for a in d.find_elements(By.CSS_SELECTOR, ".hit a.title"))
        assert titles == ["Soupe à l’oignon", "Sourdough bread 日本語"]
        soup = next(h for h in d.find_elements(By.CSS_SELECTOR, ".hit")
                    if "Soupe" in h.text)
        assert [a.text for a in soup.find_elements(By.CSS_SELECTOR, "a.label")] == [
            "cooking", "français", "Reading", "Recipes"]
        _check(d, shots, "labels-search")

        soup.find_element(By.CSS_SELECTOR, "a.title").click()
        WebDriverWait(d, 10).until(lambda x: "/items/" in x.current_url)
        labels = [a.text for a in d.find_elements(By.CSS_SELECTOR, "dd ul.labels a.label")]
        assert labels == ["cooking", "français", "Reading", "Recipes"]
        listing = d.find_element(By.CSS_SELECTOR, ".provenance .listing")
        assert "2023-12-08" in listing.text and "Soupe à l’oignon" in listing.text
        _check(d, shots, "labels-item")

        next(a for a in d.find_elements(By.CSS_SELECTOR, "dd ul.labels a.label")
             if a.text == "français").click()
        WebDriverWait(d, 10).until(lambda x: "/search" in x.current_url)
        assert [a.text for a in d.find_elements(By.CSS_SELECTOR, ".hit a.title")] == [
            "Soupe à l’oignon"]

        # Labels that are script payloads are shown as text, and filter like any other.
        d.get(f"{url}/search")
        select = Select(d.find_element(By.NAME, "label"))
        assert P_TAG in [o.get_attribute("value") for o in select.options]
        d.find_element(By.CSS_SELECTOR, "details.filters summary").click()
        select.select_by_value(P_TAG)
        d.find_element(By.CSS_SELECTOR, "#search-form button[type=submit]").click()
        WebDriverWait(d, 10).until(lambda x: "label=" in x.current_url)
        hit = d.find_element(By.CSS_SELECTOR, ".hit")
        assert P_IMG in [a.text for a in hit.find_elements(By.CSS_SELECTOR, "a.label")]
        hit.find_element(By.CSS_SELECTOR, "a.title").click()
        WebDriverWait(d, 10).until(lambda x: "/items/" in x.current_url)
        assert P_IMG in d.find_element(By.CSS_SELECTOR, ".provenance .note").text
        _check(d, shots, "labels-hostile")
