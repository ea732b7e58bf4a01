"""The docs speak of the project, not of its tracker, and the README stays a front door."""

import re

from tests.conftest import REPO

ISSUE = re.compile(r"\bissues? \d+\b|\(#\d+\)", re.IGNORECASE)


def test_no_page_names_an_issue_number_a_reader_cannot_look_up():
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    named = [f"{page.relative_to(REPO)}:{number}: {line.strip()[:80]}" for page in pages
             for number, line in enumerate(page.read_text().splitlines(), start=1) if ISSUE.search(line)]
    assert named == []


def test_the_readme_is_under_200_lines_and_its_links_resolve():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) < 200
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith("http"):
            assert (REPO / target).exists(), target
