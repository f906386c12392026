"""Translation: the relative-position Transformer, its KV caches, beam search and the ``Translator`` API."""
