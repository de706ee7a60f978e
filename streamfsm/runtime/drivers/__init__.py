"""The drivers' sources: each file here reads one kind of source into a run core, as httpx's transports do.

A *source* is what a run reads: it sends the request (or is handed a stream already sent), tells the core
what it learned (``RunCore.begin``, ``request_left``, ``lifecycle``, ``headers(status, headers, wire)``, or
``fault``/``http_error``/``timed_out`` when it ends before the body), then yields the body's chunks (bytes,
or an SDK's items) to the run's one watched read (``LoopReads`` async, ``ThreadReads`` sync). It never
decides how a read ended: the watched read turns each read into an outcome (the chunk, ``END``,
``DEADLINE``, ``STOP`` or the fault raised) and the core's read door (``RunCore.took``) decides. It never
writes the record or the machine: the core's methods do (``source_facts``, ``use_format``, ``resumed``,
``recovery`` ...). It gives the watched read what a watchdog needs to end a blocked read (``reads.socket``
or ``reads.response``) and closes what it opened.

A source over a sync library is a ``SyncRun`` (``runtime/drivers/_sync_run.py``) that implements
``_connect_sync`` (on success the core has taken the headers and ``_iterator`` yields the body) and
``_close_sync``; an async one is a ``Run`` (``runtime/drivers/_stream.py``) that implements ``_connect``
(setting
``_next_chunk``) and ``_close_source``. The handle (``RunHandle``), the events handed to the consumer
(``ConsumerRun``) and the lifecycle are theirs, not the source's.

* ``sync_http``: our own request over httpx's sync client (``open_sync_stream``).
"""
