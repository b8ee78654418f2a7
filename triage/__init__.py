"""triage: crash triage and log diagnosis for ML training runs."""

__version__ = "0.1.0"
