"""The test suite: a package, so that tests import what they share from ``tests.support``."""
