"""One run's tracking without I/O: the core, how a run fails, its ledger, its configuration, the errors a
caller sees, and the readers (Wire) that turn a body into events.

The rooms above the runtime import it from ``streamfsm.runtime``."""
