"""The REST door: ``routes.py`` (one route per catalogue route), ``lane.py`` (the same answers without
FastAPI's routing), ``wire.py`` (JSON in, bodies and errors out), ``feeds.py`` (event streams, raw
versions, the error catalog), ``verdicts.py`` (status and verdict routes), ``openapi.py`` (the OpenAPI
document made exact)."""
