"""Secrets by reference, Kafka client security settings, the access offsetscope needs, and the
file modes of what it writes., one module per job:

* :mod:`.references` -- ``env:NAME`` / ``secret:scope/key`` references, resolved at the edge and
  registered for redaction;
* :mod:`.kafka` -- ``[sources.kafka.security]`` as the Java client's and librdkafka's settings;
* :mod:`.access` -- the ACLs offsetscope needs, checked up front, and access failures named;
* :mod:`.files` -- the modes of the folders and files it writes locally.
"""
