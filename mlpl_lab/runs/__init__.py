"""Runs as specs, stored once: a run's spec and key (spec), what its key does not hold
(environment), its folder on disk (folders), the run store (store), the access logs (access),
turning specs into stored runs (ensure, with validation, splits_cache, progress, and executors over
workers and Dask: workers, cluster) and run packs (pack).
Imports the engine and everything below it; never analysis, viz, chapters or reports.
"""
