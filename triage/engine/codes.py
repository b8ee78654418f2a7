"""Code tables: what a number in a log line means (an Xid, an ncclResult_t), as data.

A table is `triage/evidence/<name>.toml`: rows `[<name>.<code>]` of fields (`name`,
`signature`, optionally `note` and `confidence`), a top-level `label` ("Xid"), and
optionally `[pattern]` (`literal` + `regex` with a `(?P<code>...)` group): the one shared
reading of the lines that carry such a code. A rule's `kind = "code"` clause reads the
code with its own regex or the table's pattern and fires only for the rows it `select`s,
so which signature owns which code is written once, in the table.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import regex

from triage.engine.patterns import compile_rule_regex
from triage.errors import RuleError
from triage.model import Confidence

TABLES_DIR = Path(__file__).resolve().parent.parent / "evidence"
CODE_GROUP = "code"


@dataclass(frozen=True)
class CodeTable:
    """One table of codes: its rows and the shared pattern that reads them."""

    name: str
    path: str
    label: str
    rows: dict[int, dict[str, Any]]
    literals: tuple[str, ...] = ()
    pattern: regex.Pattern[str] | None = None
    fields: frozenset[str] = field(default_factory=frozenset)

    def describe(self, code: int) -> str:
        """`Xid 74: NVLink Error` / `ncclResult_t 2: ncclSystemError (a system call ...)`."""
        row = self.rows.get(code)
        if row is None:
            return f"{self.label} {code}: not in triage's {self.label} table"
        note = str(row.get("note") or "")
        return f"{self.label} {code}: {row.get('name', '?')}" + (f" ({note})" if note else "")

    def cap(self, code: int) -> Confidence | None:
        """The most this code alone says (the row's `confidence`), None when unbounded."""
        row = self.rows.get(code)
        if row is None or "confidence" not in row:
            return None
        return Confidence.parse(str(row["confidence"]))


def known_tables() -> list[str]:
    """The names of the shipped code tables."""
    return sorted(p.stem for p in TABLES_DIR.glob("*.toml"))


@cache
def code_table(name: str) -> CodeTable:
    """Load and check one table; a bad table is a RuleError naming its file and key."""
    path = TABLES_DIR / f"{name}.toml"
    p = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise RuleError(p, "(file)", f"cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise RuleError(p, "(toml)", str(e)) from None
    raw = data.get(name)
    if not isinstance(raw, dict) or not raw:
        raise RuleError(p, name, f"required: rows [{name}.<code>]")
    rows: dict[int, dict[str, Any]] = {}
    for code, row in raw.items():
        if not code.isdigit() or not isinstance(row, dict):
            raise RuleError(p, f"{name}.{code}", "a row is [<table>.<number>] with fields")
        if "confidence" in row and str(row["confidence"]).upper() not in Confidence.__members__:
            raise RuleError(p, f"{name}.{code}.confidence", "must be confirmed, likely or possible")
        rows[int(code)] = row
    literals: tuple[str, ...] = ()
    pattern = None
    pat = data.get("pattern")
    if pat is not None:
        lits = pat.get("literal") if isinstance(pat, dict) else None
        if isinstance(lits, str):
            lits = [lits]
        if (
            not isinstance(lits, list)
            or not lits
            or not all(isinstance(x, str) and len(x) >= 4 for x in lits)
        ):
            raise RuleError(p, "pattern.literal", "required: selective literals (>= 4 chars)")
        literals = tuple(lits)
        pattern = compile_code_regex(pat.get("regex"), p, "pattern.regex", False)
    fields = frozenset(k for row in rows.values() for k in row)
    return CodeTable(name, p, str(data.get("label", name)), rows, literals, pattern, fields)


def compile_code_regex(src: Any, p: str, key: str, icase: bool) -> regex.Pattern[str]:
    """A regex that reads a code: it must name the number `(?P<code>...)`."""
    if not isinstance(src, str) or not src:
        raise RuleError(p, key, "required: a regex with a (?P<code>...) group")
    try:
        pat = compile_rule_regex(src, regex.IGNORECASE if icase else 0)
    except regex.error as e:
        raise RuleError(p, key, f"bad regex: {e}") from None
    if CODE_GROUP not in pat.groupindex:
        raise RuleError(p, key, "must name the number it reads: (?P<code>...)")
    return pat


def parse_select(src: Any, table: CodeTable, p: str, key: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`select = { signature = "xid-error", cause = ["hardware"] }`: the rows a clause owns.

    Each field must be one the table has, and together they must pick at least one row:
    a clause whose selection is empty could never fire.
    """
    if not isinstance(src, dict) or not src:
        raise RuleError(
            p, key, f'required: the rows of table {table.name} this clause owns, e.g. {{ signature = "..." }}'
        )
    out: list[tuple[str, tuple[str, ...]]] = []
    for k, v in src.items():
        if k not in table.fields:
            raise RuleError(
                p,
                f"{key}",
                f"table {table.name} has no field {k!r} (fields: {', '.join(sorted(table.fields))})",
            )
        vals = v if isinstance(v, list) else [v]
        if not vals or not all(isinstance(x, str) for x in vals):
            raise RuleError(p, f"{key}.{k}", "must be a string or a list of strings")
        out.append((k, tuple(vals)))
    sel = tuple(out)
    if not any(row_selected(row, sel) for row in table.rows.values()):
        raise RuleError(p, key, f"selects no row of table {table.name}")
    return sel


def row_selected(row: dict[str, Any], select: tuple[tuple[str, tuple[str, ...]], ...]) -> bool:
    """Whether a table row has every selected field at one of the selected values."""
    return all(str(row.get(k, "")) in vals for k, vals in select)
