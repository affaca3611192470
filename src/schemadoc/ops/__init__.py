"""Operations on documents: requests compiled to RFC 6902 patches, applied, and journaled.

- ``compile.py``: requests (update/create/delete a node, merge patch, …) → strict RFC 6902 patches;
- ``apply.py``: a patch applied to a structurally shared copy, with its inverse;
- ``journal.py``: the journal entries that record every version, and ``replay``.

Nothing here touches the disk.
"""
