"""Sentence embeddings: the DiSAN encoder and the ``SentenceEncoder`` API."""
