"""One error type for everything a user can cause, and the exit codes."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAIL_ON = 1  # --fail-on reached, or fixtures regressed, or repro outcome unexpected
    USAGE = 2  # usage or input error: one line on stderr
    INTERNAL = 3  # a bug: traceback with --debug


class TriageError(Exception):
    """A problem with the user's input or invocation. Printed as one line, exit 2."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = f"triage: error: {self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text.replace("\n", " ")


class RuleError(TriageError):
    """A rule file is invalid. Names the file and the key."""

    def __init__(self, path: str, key: str, problem: str) -> None:
        super().__init__(f"{path}: {key}: {problem}")
        self.path = path
        self.key = key
        self.problem = problem
