"""Finding documents: their text units (:mod:`.units`), the index kept as they change (:mod:`.index`) and
what an extension (a semantic ranking) plugs into it (:mod:`.extension`). docs/search.md."""
