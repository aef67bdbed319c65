"""The storage ports: what a service may ask of each aggregate store, declared once.

One module per aggregate (documents, admission, reads, management, sessions, lifecycle,
governance, keys, reports, workspace), the rows the stores return (``rows``), the contradiction
gate the admission store consults (``gate``) and the one unit of work for the verbs that change
several aggregates together (``unit_of_work``). Services take these; the container wires the
implementations (``contextos.store.*``); a unit test hands a service a fake. No port names a
connection, a pool or a transaction: a store opens and commits its own.

Nothing is re-exported here, so importing one port loads only its module.
"""
