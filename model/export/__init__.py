"""What is built from a trained translator for other engines and for inference, never imported by
serving: the CTranslate2 export and its engine (``ct2``), and the vocabulary shortlist's builder
(``shortlist``; the loader the decoder uses is ``rendition.model.translation.shortlist``)."""
