"""The HTML view: one self-contained page to look at and share.

The console's order of ideas: the verdict and how sure it is; each diagnosis with its
evidence lines in context (the lines before them, rank, source:line), what it explains,
the checks, the fixes; what was ruled out; then pictures of the run: the rank timeline
with the cascade (who failed first, who after), the metric curves with the failure and
every non-finite value marked, the GPUs of the evidence snapshot, and for a log that
just stops, where it stopped and the hypotheses side by side with the check that tells
each apart.

The page has no script and loads nothing: the CSS is inline and the charts are inline
SVG (see charts.py for why matplotlib draws them). Every piece of log text is escaped;
with --redact the data is masked before it gets here, like the other markup views.
`render_history` puts several reports on one page (a run's past crashes).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from triage import __version__
from triage.errors import TriageError
from triage.model import Confidence, Diagnosis, Evidence, RankSpan, Report
from triage.report.common import (
    causes,
    clip,
    describe_log,
    how_it_stops,
    log_evidence,
    plural,
    ranges,
    stop_state,
    verdict,
    where,
)

MAX_EVIDENCE = 5  # evidence lines shown per diagnosis; the count of the rest is said
MAX_TEXT = 600  # characters of one log line
TABLE_OPEN_ROWS = 16  # a longer rank table starts folded
ROLE_WORDS = {"root-cause": "root cause", "contributing": "contributing", "consequence": "consequence"}

CSS = """
:root{--fg:#1d1d1f;--muted:#5f6368;--line:#e2e2e2;--bg:#fff;--code:#f6f7f9;
--confirmed:#b3261e;--likely:#c26100;--possible:#5f6368;--mark:#fff2b3}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1020px;padding:24px 28px 64px;color:var(--fg);background:var(--bg);
font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:32px 0 8px;padding-bottom:4px;
border-bottom:1px solid var(--line)}h3{font-size:14px;margin:0 0 6px}
.meta{color:var(--muted);font-size:13px}.verdict{font-size:17px;margin:16px 0 6px;font-weight:600}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;
color:#fff;vertical-align:1px}.badge.confirmed{background:var(--confirmed)}
.badge.likely{background:var(--likely)}.badge.possible{background:var(--possible)}
.diag{border:1px solid var(--line);border-radius:8px;padding:12px 14px;margin:10px 0}
.diag.consequence{background:#fafafa}.role{color:var(--muted);font-size:12px;margin-left:6px}
.sig{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:13px}
pre{background:var(--code);border-radius:6px;padding:8px 10px;margin:6px 0;overflow-x:auto;
font:12px/1.45 ui-monospace,"DejaVu Sans Mono",Menlo,monospace;white-space:pre-wrap;word-break:break-all}
pre .ctx{color:var(--muted)}pre mark{background:var(--mark);color:inherit}
.where{font:12px ui-monospace,"DejaVu Sans Mono",Menlo,monospace;color:#1a5fb4}
.label{font-weight:600;margin:8px 0 2px}ul{margin:4px 0;padding-left:20px}
.more{color:var(--muted);font-size:12px}
table{border-collapse:collapse;font-size:12px;width:100%}
th,td{text-align:left;border-bottom:1px solid var(--line);padding:3px 6px;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
figure.chart{margin:10px 0}figure.chart svg{width:100%;height:auto;display:block}
figcaption{color:var(--muted);font-size:12px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:10px}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.cascade{margin:4px 0 8px}footer{margin-top:40px;color:var(--muted);font-size:12px}
@media print{pre{white-space:pre-wrap}}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _badge(c: Confidence) -> str:
    return f'<span class="badge {c.label}">{c.label}</span>'


def _evidence(e: Evidence) -> str:
    loc = where(e)
    head = f'<div class="where">{_e(loc)}</div>' if loc else ""
    ctx = "".join(f'<span class="ctx">{_e(clip(c.rstrip(), MAX_TEXT))}</span>\n' for c in e.context)
    return f"{head}<pre>{ctx}<mark>{_e(clip(e.text, MAX_TEXT))}</mark></pre>"


def _diagnosis(d: Diagnosis, r: Report) -> str:
    role = ROLE_WORDS.get(d.role, d.role)
    if d.role == "consequence" and d.explained_by:
        role = f"consequence of {d.explained_by}"
    out = [
        f'<section class="diag {_e(d.role)}" data-signature="{_e(d.signature)}">',
        f'<h3><span class="sig">{_e(d.signature)}</span> {_e(d.title)} {_badge(d.confidence)}'
        f'<span class="role">{_e(role)}</span></h3>',
    ]
    if d.summary:
        out.append(f"<p>{_e(d.summary)}</p>")
    # a consequence is said once, with the count of the rest: its cause is the story
    shown = d.evidence[: 1 if d.role == "consequence" else MAX_EVIDENCE]
    out.extend(_evidence(e) for e in shown)
    n = max(d.occurrences, len(d.evidence))
    if n > len(shown):
        on = f", on ranks {ranges(d.ranks)}" if d.ranks else ""
        out.append(f'<div class="more">+{n - len(shown)} more{_e(on)}</div>')
    for e in d.counter_evidence:
        out.append(f'<div class="label">Against</div>{_evidence(e)}')
    explained = [x.signature for x in r.diagnoses if x.explained_by == d.signature]
    if explained:
        out.append(f'<div class="label">Explains</div><p class="sig">{_e(", ".join(explained))}</p>')
    if d.role != "consequence":
        out.append(_list("Checks", d.checks, code=True))
        out.append(_list("Fixes", d.remedies))
        if d.docs:
            out.append(
                '<div class="label">Docs</div><ul>' + "".join(f"<li>{_e(u)}</li>" for u in d.docs) + "</ul>"
            )
    out.append("</section>")
    return "".join(out)


def _list(label: str, items: Sequence[str], code: bool = False) -> str:
    if not items:
        return ""
    if code:
        body = "".join(f"<pre><code>{_e(c)}</code></pre>" for c in items)
        return f'<div class="label">{label}</div>{body}'
    return f'<div class="label">{label}</div><ul>' + "".join(f"<li>{_e(x)}</li>" for x in items) + "</ul>"


def first_failed(r: Report) -> RankSpan | None:
    """The span that failed first: where the root cause's first log line is, else the
    earliest first error (by time when every span has one, else by line in one file)."""
    with_err = [s for s in r.timeline if s.first_error is not None]
    if not with_err:
        return None
    roots = [d for d in causes(r) if d.role == "root-cause"]
    for d in roots[:1]:
        for e in log_evidence(d):
            for s in with_err:
                if (s.source, s.rank) == (e.source, e.rank):
                    return s
    timed = all(s.first_error_ts is not None for s in with_err)
    return min(
        with_err,
        key=lambda s: (
            (s.first_error_ts or 0.0) if timed else 0.0,
            s.first_error.line if s.first_error and s.first_error.line else 0,
        ),
    )


def _who(s: RankSpan, ranked: bool = True) -> str:
    if s.rank is not None:
        return f"rank {s.rank}"
    return "the launcher" if ranked else "the run"


def _cascade(r: Report, first: RankSpan | None) -> str:
    if first is None or first.first_error is None:
        return ""
    after = [s for s in r.timeline if s.first_error is not None and s is not first]
    has_ranks = any(s.rank is not None for s in r.timeline)
    text = (
        f"{_who(first, has_ranks).capitalize()} failed first ({where(first.first_error)}: "
        f"{clip(first.first_error.text, 160)})"
    )
    ranked = sorted(s.rank for s in after if s.rank is not None)
    if ranked:
        timed_out = {
            x for d in r.diagnoses if d.signature in ("nccl-timeout", "training-hang") for x in d.ranks
        }
        waited = [x for x in ranked if x in timed_out]
        text += f"; {plural(len(ranked), 'rank')} {ranges(ranked)} reported an error after it"
        if waited:
            text += f" ({ranges(waited)} timed out waiting)"
    if any(s.rank is None for s in after):
        text += "; then the launcher reported the failure"
    return f'<p class="cascade">{_e(text)}.</p>'


def _rank_table(spans: Sequence[RankSpan]) -> str:
    rows = []
    ranked = any(s.rank is not None for s in spans)
    single = len({s.source for s in spans}) == 1  # then the source is said once, above
    for s in spans:
        phases = " → ".join(p[0] for p in s.phases) or "-"
        err = ""
        if s.first_error is not None:
            loc = f"line {s.first_error.line}" if single else where(s.first_error)
            err = f"{loc}: {clip(s.first_error.text, 120)}"
        step = "" if s.last_step is None else str(s.last_step)
        who = s.rank if s.rank is not None else "launcher" if ranked else "-"
        src = "" if single else f"<td>{_e(s.source)}</td>"
        rows.append(
            f"<tr><td>{_e(who)}</td>{src}"
            f'<td class="num">{s.first_line}</td><td class="num">{s.last_line}</td>'
            f'<td class="num">{_e(step)}</td><td>{_e(phases)}</td><td>{_e(err)}</td></tr>'
        )
    head = "<th>rank</th>" + ("" if single else "<th>source</th>")
    table = (
        f"<table><thead><tr>{head}<th>first line</th><th>last line</th>"
        "<th>last step</th><th>phases</th><th>first error</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
    opened = " open" if len(spans) <= TABLE_OPEN_ROWS else ""
    return f"<details{opened}><summary>Per rank ({len(spans)})</summary>{table}</details>"


def _figure(kind: str, svg: str, caption: str, series: int) -> str:
    return (
        f'<figure class="chart" data-chart="{_e(kind)}" data-series="{series}">{svg}'
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )


def _pictures(r: Report) -> str:
    from triage.report import charts

    out: list[str] = []
    first = first_failed(r)
    if r.timeline:
        key = (first.source, first.rank) if first else None
        svg = charts.timeline(r.timeline, first_failed=key)
        out.append("<h2>Rank timeline</h2>")
        out.append(_cascade(r, first))
        out.append(
            _figure(
                "timeline",
                svg,
                "Each bar is one rank's output from its first to its "
                "last line, coloured by phase; X marks the first error.",
                len(r.timeline),
            )
        )
        out.append(_rank_table(r.timeline))
    names = [n for n in charts.METRIC_ORDER if any(s.name == n for s in r.series)]
    if names:
        out.append("<h2>Metrics</h2>")
        fail_x = float(first.error_step) if first and first.error_step is not None else None
        label = f"first error ({_who(first, any(s.rank is not None for s in r.timeline))})" if first else ""
        sampled = any(n.startswith("Fast scan") for n in r.notes)
        for n in names:
            drawn = [s for s in r.series if s.name == n]
            svg = charts.curves(r.series, n, fail_x=fail_x, fail_label=label)
            ranks = [s.rank for s in drawn if s.rank is not None]
            cap = f"{charts.METRIC_TITLES.get(n, n)} per {drawn[0].x}"
            if ranks:
                cap += f", ranks {ranges(ranks)}"
            if sampled:
                cap += (
                    " (sampled: the fast scan of a big log reads its head, its tail, a step "
                    "line every 128 KiB and the lines around its longest pauses; --full "
                    "reads every line)"
                )
            out.append(_figure(n, svg, cap, len(drawn)))
    if r.gpus:
        out.append("<h2>GPUs (evidence snapshot)</h2>")
        out.append(
            _figure(
                "gpus",
                charts.gpus(r.gpus),
                "Memory used of total and utilization when the snapshot was taken.",
                len(r.gpus),
            )
        )
    if r.end_state.truncated:
        out.append(_stopped(r))
    return "".join(out)


def _stopped(r: Report) -> str:
    """Where a log that just stops stopped, and the readings of it side by side, each
    with the check that tells it apart."""
    end = r.end_state
    where_ = f"{end.source}:{end.line}" if end.source and end.line else "-"
    out = [
        '<h2>Where it stopped</h2><section class="stopped">',
        f"<p>The log {_e(how_it_stops(r))}. Last phase: <b>{_e(end.last_phase or 'none named')}"
        f'</b>; last line: <span class="where">{_e(where_)}</span></p>',
        f"<pre><mark>{_e(clip(end.last_text, MAX_TEXT))}</mark></pre>",
    ]
    cards = []
    for d in causes(r)[:6]:
        check = d.checks[0] if d.checks else "(no check)"
        cards.append(
            f'<div class="card"><h3><span class="sig">{_e(d.signature)}</span> '
            f"{_badge(d.confidence)}</h3><p>{_e(d.title)}</p>"
            f'<div class="label">Tells it apart</div><pre><code>{_e(check)}</code></pre></div>'
        )
    state = stop_state(r)
    if state is not None:
        check = state.checks[0] if state.checks else "(no check)"
        cards.append(
            '<div class="card"><h3>Still running, or gone?</h3><p>Nothing in the log '
            'proves a failure.</p><div class="label">Tells it apart</div>'
            f"<pre><code>{_e(check)}</code></pre></div>"
        )
    if cards:
        out.append('<div class="label">Hypotheses</div><div class="cards">' + "".join(cards) + "</div>")
    out.append("</section>")
    return "".join(out)


def _body(r: Report) -> str:
    top = r.top
    sources = ", ".join(s.path for s in r.sources[:4]) + (
        f" and {len(r.sources) - 4} more" if len(r.sources) > 4 else ""
    )
    badge = _badge(top.confidence) if top is not None and not top.fallback else ""
    out = [
        f'<p class="meta"><span class="where">{_e(sources)}</span> ({_e(describe_log(r))})</p>',
        f'<p class="verdict">{_e(verdict(r))} {badge}</p>',
    ]
    if top is not None and top.summary and not top.fallback:
        out.append(f"<p>{_e(top.summary)}</p>")
    roots = causes(r)
    cons = [d for d in r.diagnoses if d.role == "consequence"]
    state = stop_state(r)
    if roots:
        label = "Diagnosis" if len(roots) == 1 and state is None else "Possible causes, best first"
        out.append(f"<h2>{label}</h2>")
        out.extend(_diagnosis(d, r) for d in roots)
    if cons:
        out.append("<h2>Consequences (explained by the cause above)</h2>")
        out.extend(_diagnosis(d, r) for d in cons)
    if r.ruled_out:
        out.append(
            "<h2>Ruled out</h2><ul>"
            + "".join(
                f'<li><span class="sig">{_e(x.signature)}</span>: {_e(x.because)}</li>' for x in r.ruled_out
            )
            + "</ul>"
        )
    if len(roots) > 1:
        out.append(
            "<h2>To tell them apart, run first</h2>"
            + "".join(
                f'<pre><code>{_e(d.checks[0])}</code></pre><div class="more">{_e(d.signature)}</div>'
                for d in roots[:4]
                if d.checks
            )
        )
    if state is not None:
        out.append("<h2>What would tell</h2>" + _list("Checks", state.checks, code=True))
    if r.notes:
        out.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in r.notes) + "</ul>")
    if r.evidence_summary:
        out.append(
            "<h2>Environment (snapshot)</h2><table><tbody>"
            + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in r.evidence_summary.items())
            + "</tbody></table>"
        )
    out.append(_pictures(r))
    return "".join(out)


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        # nothing may be fetched: the policy makes a stray reference fail closed
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>{body}"
        f"<footer>triage {_e(__version__)}</footer></body></html>\n"
    )


def require() -> None:
    """A one-line error (exit 2) when the [html] extra is not installed."""
    from triage.report import charts

    if not charts.available():
        raise TriageError("--format html needs matplotlib: pip install 'triage[html]'")


def render(r: Report) -> str:
    """The whole page for one report."""
    require()
    title = f"triage: {clip(verdict(r), 120)}"
    return _page(title, "<h1>triage report</h1>" + _body(r))


def render_history(entries: Sequence[tuple[str, Report]], title: str = "Crash history") -> str:
    """Several reports on one page, each under its own heading (a run's past crashes,
    newest first as given): for `triage history`."""
    require()
    parts = [f"<h1>{_e(title)}</h1>"]
    if not entries:
        parts.append("<p>No crashes recorded.</p>")
    for i, (heading, r) in enumerate(entries):
        parts.append(f'<article id="crash-{i}"><h2>{_e(heading)}</h2>{_body(r)}</article>')
    return _page(title, "".join(parts))
