"""A Python client for a schemadoc server's REST API, synchronous (:class:`Client`) and asynchronous
(:class:`AsyncClient`), on httpx (``pip install 'schemadoc[client]'``).

Every REST operation is a method with a typed result (the server's own result models, in
:mod:`schemadoc.client.models`); every error answer is raised as :class:`ClientError` carrying the error
object (``version-conflict`` as :class:`VersionConflictError`); a write's version travels as ``If-Match``;
:meth:`Client.retry_on_conflict` re-reads and retries a write that lost a race; :meth:`Client.iter_changes`
walks the ``/changes`` feed and :meth:`Client.events` follows a document's event stream, resuming with
``Last-Event-ID`` after a dropped connection. See docs/client.md.
"""

from __future__ import annotations

from schemadoc.client._clients import AsyncClient, Client
from schemadoc.client._sse import Event
from schemadoc.client.errors import ClientError, VersionConflictError

__all__ = ["AsyncClient", "Client", "ClientError", "Event", "VersionConflictError"]
