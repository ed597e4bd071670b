"""MkDocs hook: fill ``api/other.md`` with a ``::: d2s.<module>`` directive for every subpackage
named in ``d2s.__all__`` that no page of ``docs/api/`` documents, so the API reference covers a
module as soon as it is added (``tests/test_docs.py`` checks that every public name has a page)."""
import inspect
import re
from pathlib import Path

MARKER = "<!-- other-modules -->"


def _documented(api_dir):
    found = set()
    for page in Path(api_dir).glob("*.md"):
        found.update(re.findall(r"^::: ([\w.]+)", page.read_text(), re.M))
    return found


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    import d2s
    api_dir = Path(config["docs_dir"]) / "api"
    documented = _documented(api_dir)
    modules = [f"d2s.{n}" for n in d2s.__all__ if inspect.ismodule(getattr(d2s, n))]
    missing = [m for m in modules if m not in documented]
    body = "\n\n".join(f"::: {m}" for m in missing) or "(none: every subpackage has its page)"
    return markdown.replace(MARKER, body)
