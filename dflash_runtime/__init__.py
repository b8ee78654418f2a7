"""DFlash reference training runtime (see shared/reference/dflash.md)."""
