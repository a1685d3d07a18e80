"""analysis: how a response is scored and what the scores say.

The scorers (exact, regex, canonical, choice, judged), response files, declared outcomes,
signal detection, statistics (exact tests, intervals, Holm, equivalence), contrasts, reference
policies and judge requests and panels. Generation checks every gold against its own scorer,
so this stage comes before the engine.

May import: core, spec, formats.
"""
