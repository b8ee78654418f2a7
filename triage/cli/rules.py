"""`triage rules list|show|lint|export`: the rules, their coverage and their lint."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from triage.cli.parser import add_rules_option
from triage.errors import ExitCode, TriageError


def register(sub: Any) -> None:
    """Add the `rules` subcommand (and its four subcommands) to triage's subparsers."""
    rules = sub.add_parser("rules", help="list, show, lint or export the rules")
    rsub = rules.add_subparsers(dest="rules_command", parser_class=sub._parser_class, required=True)
    rl = rsub.add_parser("list", help="signatures, rules and fixture coverage")
    add_rules_option(rl)
    rl.add_argument(
        "--format", choices=("console", "json"), default="console", help="a table (default) or JSON rows"
    )
    rl.set_defaults(func=cmd_rules_list)
    rs = rsub.add_parser("show", help="one rule in full")
    rs.add_argument("id", help="a signature id or alias (see: triage rules list)")
    add_rules_option(rs)
    rs.set_defaults(func=cmd_rules_show)
    rlint = rsub.add_parser("lint", help="check rules for speed and precision")
    add_rules_option(rlint)
    rlint.add_argument("--only", action="store_true", help="lint only the --rules folders")
    rlint.set_defaults(func=cmd_rules_lint)
    rexp = rsub.add_parser("export", help="print the rules' patterns for other tools")
    rexp.add_argument("--grep", action="store_true", help="as grep -E patterns, one per line")
    add_rules_option(rexp)
    rexp.set_defaults(func=cmd_rules_export)


def cmd_rules_list(args: argparse.Namespace) -> int:
    """Every signature with its rule and fixture count, as a table or JSON rows."""
    from triage.engine.catalog import coverage

    rows = coverage(args.rules)
    if args.format == "json":
        import json

        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    w_sig = max(len(r["signature"]) for r in rows)
    w_rule = max(len(r["rule"] or "MISSING") for r in rows)
    sys.stdout.write(f"{'signature':{w_sig}}  {'rule':{w_rule}}  fixtures  title\n")
    for row in rows:
        sys.stdout.write(
            f"{row['signature']:{w_sig}}  {row['rule'] or 'MISSING':{w_rule}}  "
            f"{row['fixtures']:>8}  {row['title'] or ''}\n"
        )
    _write_missing(rows)
    return 0


def _write_missing(rows: list[dict[str, Any]]) -> None:
    """The canonical signatures that lack a rule or (in a checkout) two fixtures."""
    from triage.engine.catalog import fixtures_dir

    if fixtures_dir() is None:
        missing = [r["signature"] for r in rows if r["canonical"] and not r["rule"]]
        sys.stdout.write(
            "\n(no fixtures/ folder here: fixture counts need a checkout of the "
            "project or your own fixtures/)\n"
        )
    else:
        missing = [r["signature"] for r in rows if r["canonical"] and (not r["rule"] or r["fixtures"] < 2)]
    if missing:
        sys.stdout.write(
            f"\n{len(missing)} canonical signature(s) lack a rule or two fixtures: {', '.join(missing)}\n"
        )


def cmd_rules_show(args: argparse.Namespace) -> int:
    """Print one rule's file as written."""
    from triage.engine import get_rules

    for r in get_rules(args.rules):
        if r.id == args.id or args.id in r.aliases:
            sys.stdout.write(Path(r.path).read_text(encoding="utf-8"))
            return 0
    raise TriageError(f"no rule with id {args.id!r} (see: triage rules list)")


def cmd_rules_lint(args: argparse.Namespace) -> int:
    """Lint the rules; exit 1 when any has a problem."""
    from triage.engine.lint import lint

    problems = lint(args.rules or [], include_default=not args.only)
    for p in problems:
        sys.stdout.write(p + "\n")
    if problems:
        sys.stderr.write(f"triage: {len(problems)} rule problem(s)\n")
        return ExitCode.FAIL_ON
    sys.stdout.write("rules ok\n")
    return 0


def cmd_rules_export(args: argparse.Namespace) -> int:
    """Print the rules' patterns, one per line, for grep -E."""
    from triage.engine import get_rules
    from triage.engine.lint import grep_patterns

    for pat in grep_patterns(get_rules(args.rules)):
        sys.stdout.write(pat + "\n")
    return 0
