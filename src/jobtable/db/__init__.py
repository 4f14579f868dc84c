"""The code sqlc generates from the schema and queries, one package per engine.

Nothing here is edited by hand: ``make generate`` rewrites the engine
packages. Only the engine adapters (``jobtable._sqlite``, ``jobtable._postgres``)
import them; the runner sees the shared types those adapters return.
"""
