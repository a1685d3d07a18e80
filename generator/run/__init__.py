"""run: models and memory systems through inspect_ai.

Reading inspect eval logs as responses (what went wrong with a sample counted apart), running
a release's exported inspect task on models and memory systems with inspect_ai's own
``eval_set`` (its providers, concurrency, retries and logs), and what inspect needs to run
offline.

May import: core, spec, formats, analysis, engine, audit, release, exports, report.
"""
