"""report: views of a `Report` (console, JSON, Markdown, SARIF, JUnit, GitHub, HTML).

Every view is `render(report) -> str` in its own module (the console view writes to a
stream instead); the engine formats nothing. `FORMATS` is the one list of them: the
CLI's `--format` choices and help come from it, so a new view is one module here plus
one row in that table.
"""

from __future__ import annotations

import importlib
import io
from dataclasses import dataclass

from triage.model import Report


@dataclass(frozen=True)
class Format:
    """One output format: where its view lives and what rendering it needs."""

    name: str  # the --format value
    module: str  # the module whose `render` draws it
    help: str  # its words in the --format help
    markup: bool = False  # placeholders must be escaped by the view, not pasted in after
    extra: str | None = None  # the pip extra it needs (`pip install 'triage[EXTRA]'`)
    console: bool = False  # renders to a terminal stream (width, colour), not to a string


_FORMAT_LIST = (
    Format("console", "triage.report.console", "console (default)", console=True),
    Format("json", "triage.report.json", "json (triage.report/1)"),
    Format("markdown", "triage.report.markdown", "markdown", markup=True),
    Format("sarif", "triage.report.sarif", "sarif"),
    Format("junit", "triage.report.junit", "junit", markup=True),
    Format("github", "triage.report.github", "github annotations"),
    Format(
        "html",
        "triage.report.html",
        "html (one self-contained page with charts; needs the html extra)",
        markup=True,
        extra="html",
    ),
)
# name -> Format, in the order the help lists them
FORMATS: dict[str, Format] = {f.name: f for f in _FORMAT_LIST}
# kept for importers: the views that return a string, and those that escape placeholders
TEXT_FORMATS = tuple(f.name for f in _FORMAT_LIST if not f.console)
MARKUP_FORMATS = tuple(f.name for f in _FORMAT_LIST if f.markup)


def format_help() -> str:
    """The --format help: every format's words, "a, b, ..., or z"."""
    words = [f.help for f in _FORMAT_LIST]
    return ", ".join(words[:-1]) + ", or " + words[-1]


def render_to_string(
    report: Report,
    fmt: str,
    *,
    width: int | None = None,
    color: str = "auto",
    verbose: bool = False,
    redact: str | None = None,
) -> str:
    """Render `report` as `fmt`; with `redact`, secrets are masked in the output."""
    spec = FORMATS.get(fmt)
    if spec is None:
        raise ValueError(f"unknown format {fmt}")
    redactor = None
    if redact:
        from triage.redact import Redactor

        # Mask the data before rendering, so each view escapes the placeholders (a raw
        # "<HF_TOKEN_1>" is markup in XML and Markdown) and console wrapping cannot split
        # a secret; the text pass below catches anything a view derived from the data.
        redactor = Redactor(mode=redact)
        report = redactor.redact_data(report)
    if spec.console:
        text = _render_console(spec, report, width, color, verbose, redact)
    else:
        text = importlib.import_module(spec.module).render(report)
    if redactor is not None and not spec.markup:
        text = redactor.redact(text)
    return text


def _render_console(
    spec: Format, report: Report, width: int | None, color: str, verbose: bool, redact: str | None
) -> str:
    """The console view into a string: colour on a terminal unless told (or redacting)."""
    view = importlib.import_module(spec.module)
    buf = io.StringIO()
    force = {"always": True, "never": False}.get(color)
    if force is None:
        import sys

        force = sys.stdout.isatty() and redact is None
    view.render(report, buf, width=width or _term_width(), color=force, verbose=verbose)
    return buf.getvalue()


def _term_width() -> int:
    import shutil

    return max(60, min(140, shutil.get_terminal_size((100, 24)).columns))
