"""report: views of a `Report` (console, JSON, Markdown, SARIF, JUnit, GitHub, HTML).

Every view is `render(report) -> str` in its own module; the engine formats nothing.
"""

from __future__ import annotations

import importlib
import io

from triage.model import Report

TEXT_FORMATS = ("json", "markdown", "sarif", "junit", "github", "html")
MARKUP_FORMATS = ("markdown", "junit", "html")  # placeholders must be escaped, not pasted in


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
    redactor = None
    if redact:
        from triage.redact import Redactor

        # Mask the data before rendering, so each view escapes the placeholders (a raw
        # "<HF_TOKEN_1>" is markup in XML and Markdown) and console wrapping cannot split
        # a secret; the text pass below catches anything a view derived from the data.
        redactor = Redactor(mode=redact)
        report = redactor.redact_data(report)
    if fmt == "console":
        from triage.report import console

        buf = io.StringIO()
        force = {"always": True, "never": False}.get(color)
        if force is None:
            import sys

            force = sys.stdout.isatty() and redact is None
        console.render(report, buf, width=width or _term_width(), color=force, verbose=verbose)
        text = buf.getvalue()
    elif fmt in TEXT_FORMATS:
        text = importlib.import_module(f"triage.report.{fmt}").render(report)
    else:
        raise ValueError(f"unknown format {fmt}")
    if redactor is not None and fmt not in MARKUP_FORMATS:
        text = redactor.redact(text)
    return text


def _term_width() -> int:
    import shutil

    return max(60, min(140, shutil.get_terminal_size((100, 24)).columns))
