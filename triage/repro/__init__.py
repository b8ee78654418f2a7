"""repro: reproduce known failures on the reference runtime and verify their fixes.

`triage repro NAME` runs a scenario (scenarios/, one module each: a real failing
configuration of dflash_runtime or of the real library, and its fix) in a subprocess
with the run's interpreter, captures the combined log, takes an evidence snapshot when
it can, triages the log with `triage.engine.analyze`, and says whether the failure
really happened and whether triage named it. triage never imports torch,
transformers or dflash_runtime: the subprocess's log and exit status are the interface.
"""

from triage.repro.runner import Outcome, run_scenario

__all__ = ["Outcome", "run_scenario"]
