"""Benchmarks: ``make bench`` runs :mod:`bench.run`, which writes ``bench/results.json`` and
``docs/benchmarks.md``. Speed goals live here, never in timed unit tests."""
