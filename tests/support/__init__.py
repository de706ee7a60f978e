"""What more than one test module uses, imported by its package name (``from tests.support.runs import
...``): ``runs`` (cut points, consuming a run, record and failure checks), ``sdk`` (the real SDK clients
against a fault server), ``relay`` and ``relay_process`` (a relay in a thread or a process), ``logs`` and
``store`` (records and store rows), ``pgserver`` (a throwaway PostgreSQL), ``cdp`` (a headless browser),
``cli`` (the command in this process), ``sockets`` (the open sockets), ``retry``, ``diagnoses``,
``frameworks``, ``fsm_strategies`` and ``scorer`` (the held-out sets' scorer)."""
