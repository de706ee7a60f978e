"""The retry executor and what it decides with: policy, routes, circuit breakers, the chain's record and what
a retrying run gives its consumer.

The rooms above the runtime import it from ``streamfsm.runtime``."""
