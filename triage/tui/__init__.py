"""tui: the textual screen of `triage watch` (the only package that imports textual)."""
