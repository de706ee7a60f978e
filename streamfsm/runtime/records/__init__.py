"""Where records go and how they are read back: the run record, sinks, logs, reports, metric labels and
OpenTelemetry.

The rooms above the runtime import it from ``streamfsm.runtime``."""
