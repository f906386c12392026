"""Zip-based files (.docx, .pptx, .odt) read within limits, and their XML parsed safely.

A zip bomb is refused from the central directory (member count, declared total size) before
anything is inflated, and again while inflating (a header may lie about a member's size): no
member is read past what the limit has left.  XML with a DOCTYPE (entity declarations: billion
laughs, external entities) is refused by ``defusedxml`` before lxml parses it for editing (lxml
keeps the namespace prefixes that Office's ``mc:Ignorable`` refers to by name).
"""

from __future__ import annotations

import io
import zipfile
import zlib

import defusedxml.ElementTree as DET
from defusedxml import DefusedXmlException
from lxml import etree

from rendition.model.documents.base import DocumentTooLarge, InvalidDocument, Limits

_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_comments=False)


class ZipContents:
    """The members of a zip file, read whole (checked against ``limits``), in their order."""

    def __init__(self, data: bytes, what: str, limits: Limits):
        try:
            zf = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, NotImplementedError):
            # (NotImplementedError: a directory entry that needs a zip version Python cannot read)
            raise InvalidDocument(f"the file is not a valid {what} file (not a zip archive)") from None
        with zf:
            infos = zf.infolist()
            if len(infos) > limits.max_members:
                raise DocumentTooLarge(
                    f"the {what} file has {len(infos):,} zip members; the limit is {limits.max_members:,} ({limits.names[1]})"
                )
            declared = sum(i.file_size for i in infos)
            if declared > limits.max_unpacked_bytes:
                raise DocumentTooLarge(self._too_big(what, declared, limits))
            self.infos: list[zipfile.ZipInfo] = []
            self.data: dict[str, bytes] = {}
            left = limits.max_unpacked_bytes
            for info in infos:
                name = info.filename
                if name in self.data:
                    raise InvalidDocument(f"the {what} file has the zip member {name!r} twice")
                if info.flag_bits & 0x1:
                    raise InvalidDocument(f"the {what} file is encrypted")
                try:
                    with zf.open(info) as f:
                        body = f.read(left + 1)
                except (zipfile.BadZipFile, zlib.error, NotImplementedError, OSError, ValueError, EOFError) as e:
                    raise InvalidDocument(f"the {what} file is damaged (member {name!r}: {e})") from None
                except RuntimeError as e:  # encrypted member
                    raise InvalidDocument(f"the {what} file cannot be read (member {name!r}: {e})") from None
                if len(body) > left:
                    raise DocumentTooLarge(self._too_big(what, None, limits))
                left -= len(body)
                self.infos.append(info)
                self.data[name] = body

    @staticmethod
    def _too_big(what: str, size: int | None, limits: Limits) -> str:
        found = f"{size:,} bytes" if size is not None else "more"
        return (
            f"the {what} file unpacks to {found}; the limit is {limits.max_unpacked_bytes:,} bytes ({limits.names[0]})"
        )

    def names(self) -> list[str]:
        return [i.filename for i in self.infos]

    def write(self, replaced: dict[str, bytes]) -> bytes:
        """The archive again, members in their order and compression, ``replaced`` swapped in."""
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as zf:
            for info in self.infos:
                zf.writestr(info, replaced.get(info.filename, self.data[info.filename]))
        return out.getvalue()


def check_xml(data: bytes, what: str, doctype: bool = False) -> None:
    """Refuse (``InvalidDocument``) malformed XML and entity declarations; a DOCTYPE with none
    only where ``doctype`` allows it (an EPUB's XHTML)."""
    refused = "entities are refused" if doctype else "DTDs and entities are refused"
    try:
        DET.fromstring(data, forbid_dtd=not doctype, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as e:
        raise InvalidDocument(f"{what}: forbidden XML construct ({type(e).__name__}: {refused})") from None
    except DET.ParseError as e:
        raise InvalidDocument(f"{what}: malformed XML ({e})") from None


def parse_xml(data: bytes, what: str) -> etree._ElementTree:
    """An XML part for editing; a DOCTYPE with entities, or malformed XML, is ``InvalidDocument``."""
    check_xml(data, what)
    try:
        return etree.ElementTree(etree.fromstring(data, _PARSER))
    except etree.XMLSyntaxError as e:
        raise InvalidDocument(f"{what}: malformed XML ({e})") from None


def write_xml(tree: etree._ElementTree) -> bytes:
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8", standalone=tree.docinfo.standalone)
