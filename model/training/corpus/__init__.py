"""The broad EN-FR(-DE) parallel corpus built from what Debian bookworm packages ship.

Each source is a module with its own extraction and cleaning (``gettext``: compiled message
catalogs; ``mallard``: GNOME help pages aligned by document structure; ``freedict``: bilingual
dictionaries; ``ddtp``: package descriptions, see ``rendition.model.training.data``).  ``debian`` downloads the
packages named in the committed manifest with ``apt-get download``, checks their sha256 and
unpacks them with ``dpkg-deb``; ``build`` cleans, filters, deduplicates, holds out the
valid/test splits and writes the corpus (``rendition data --corpus``).
"""
