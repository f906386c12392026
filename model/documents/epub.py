"""EPUB books (.epub): the package's XHTML content documents (the chapters, the navigation
document) and its NCX table of contents, each translated as an HTML file is (``textfiles.Html``,
parsed as XML: the names' case and the namespaces are kept, and each comes back as XML).

The package document is found through ``META-INF/container.xml``; its manifest names the content
documents.  Everything else (the package document and its metadata, styles, images, fonts) is
copied byte for byte, the ``mimetype`` member first and stored, as the format requires.  A content
document may have a DOCTYPE but no entity declarations; a named entity that XML does not define
(``&nbsp;`` without its DTD) makes it malformed XML, as an EPUB 3 checker says.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from urllib.parse import unquote

from rendition.model.documents.base import Document, InvalidDocument, Limits, decode_text
from rendition.model.documents.safezip import ZipContents, check_xml, parse_xml
from rendition.model.documents.textfiles import Html

CONTAINER = "META-INF/container.xml"
_CONTAINER_NS = "urn:oasis:names:tc:opendocument:xmlns:container"
_OPF_NS = "http://www.idpf.org/2007/opf"
TRANSLATED_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/x-dtbncx+xml"})


class Epub(Document):
    what = ".epub"
    placeholders_whole = False  # (as HTML's)

    def __init__(self, data: bytes, limits: Limits, **_: object):
        self.zip = ZipContents(data, self.what, limits)
        if self.zip.data.get("mimetype", b"").strip() != b"application/epub+zip" or CONTAINER not in self.zip.data:
            raise InvalidDocument(
                "the file is not an EPUB book (no mimetype member application/epub+zip, or no META-INF/container.xml)"
            )
        rootfile = parse_xml(self.zip.data[CONTAINER], f".epub member {CONTAINER}").find(
            f".//{{{_CONTAINER_NS}}}rootfile"
        )
        opf_name = rootfile.get("full-path", "") if rootfile is not None else ""
        if opf_name not in self.zip.data:
            raise InvalidDocument(f"the EPUB's package document {opf_name!r} (named in {CONTAINER}) is not in the file")
        opf = parse_xml(self.zip.data[opf_name], f".epub member {opf_name}")
        base = posixpath.dirname(opf_name)
        self.parts: list[tuple[str, Html]] = []
        for item in opf.iterfind(f".//{{{_OPF_NS}}}manifest/{{{_OPF_NS}}}item"):
            name = posixpath.normpath(posixpath.join(base, unquote(item.get("href", ""))))
            if item.get("media-type") in TRANSLATED_TYPES and name in self.zip.data and name not in dict(self.parts):
                what = f".epub member {name}"
                check_xml(self.zip.data[name], what, doctype=True)
                self.parts.append((name, Html(decode_text(self.zip.data[name], what), xml=True)))
        self.segments = [s for _, part in self.parts for s in part.segments]

    @property
    def counted(self) -> Sequence[str]:
        return [s for _, part in self.parts for s in part.counted]

    def render(self, translations: Sequence[str | None]) -> bytes:
        if len(translations) != len(self.segments):
            raise ValueError(f"{len(translations)} translations for {len(self.segments)} segments")
        replaced, start = {}, 0
        for name, part in self.parts:
            replaced[name] = part.render(translations[start : start + len(part.segments)])
            start += len(part.segments)
        return self.zip.write(replaced)
