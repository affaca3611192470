"""schemadoc: JSON documents kept valid against one JSON Schema, edited by JSON Pointer."""

__version__ = "0.1.0"
