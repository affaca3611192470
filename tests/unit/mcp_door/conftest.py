"""Fixtures of the in-process MCP door tests: a fresh service and server, a client in each protocol era."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator

import pytest
from mcp import Client
from mcp_support import BOOK_SCHEMA

from schemadoc.interfaces.mcp_door.server import SchemaDocMCPServer, build_mcp_server
from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def schema() -> LoadedSchema:
    return load_schema(BOOK_SCHEMA)


@pytest.fixture
def service(schema: LoadedSchema) -> DocumentService:
    service = DocumentService(schema, MemoryDocumentStore())
    service.open()
    return service


@pytest.fixture
def server(service: DocumentService) -> SchemaDocMCPServer:
    return build_mcp_server(service)


@pytest.fixture(params=["auto", "legacy"])
async def client(request: pytest.FixtureRequest, server: SchemaDocMCPServer) -> AsyncIterator[Client]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(server, mode=request.param) as client:
            yield client
