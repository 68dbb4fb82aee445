"""The manual builds with `mkdocs build --strict` (a broken link, a page missing from the nav or a bad anchor is
an error) and the built site loads nothing from the internet: no web fonts, no scripts or styles from a CDN."""
import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from tests.support.paths import REPO

INSTALL = "mkdocs and mkdocs-material come with the test extra: pip install -e '.[test]'"


class _Assets(HTMLParser):
    """Every URL a page makes the browser fetch by itself: scripts, styles, icons, images, frames."""

    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "iframe", "source", "audio", "video") and a.get("src"):
            self.urls.append(a["src"])
        if tag == "link" and a.get("href") and (a.get("rel") or "") != "canonical":
            self.urls.append(a["href"])


@pytest.mark.slow
def test_the_manual_builds_strict_and_offline(tmp_path):
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    try:
        done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                               str(REPO / "mkdocs.yml"), "--site-dir", str(site)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    except FileNotFoundError:
        raise AssertionError(INSTALL) from None
    assert "No module named mkdocs" not in done.stderr, INSTALL
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20 and (site / "first-day.html").is_file() and (site / "reference" / "cli.html").is_file()
    fetched = []
    for page in pages:
        parser = _Assets()
        parser.feed(page.read_text(encoding="utf-8"))
        fetched += [f"{page.relative_to(site)}: {u}" for u in parser.urls if re.match(r"(https?:)?//", u)]
    assert not fetched, "the site fetches from the internet:\n" + "\n".join(fetched)
    for style in [*site.rglob("*.css"), *pages]:
        text = style.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, f"{style}: web fonts"
        for url in re.findall(r"url\(\s*['\"]?((?:https?:)?//[^)'\"]+)", text) + \
                re.findall(r"@import\s+['\"]((?:https?:)?//[^'\"]+)", text):
            raise AssertionError(f"{style.relative_to(site)} loads {url}")
