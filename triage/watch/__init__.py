"""watch: live capture of a run (a tmux pane through pipe-pane, or a followed file),
live diagnosis, stall and end detection. The TUI lives in triage/tui/."""
