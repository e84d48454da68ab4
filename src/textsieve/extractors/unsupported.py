"""Formats textsieve recognises and deliberately does not read: a typed answer
(``unsupported``, with the reason), never a guess and never an empty success.

Their signatures are declared here so that a 7-Zip archive or a Photoshop file is named
for what it is; a plugin format (``textsieve.formats``) may read any of them.
"""

from __future__ import annotations

from .. import detection as d
from ..formats import Format, Signature

FORMAT = Format(
    name="unsupported", version=1,
    signatures=(
        # An OLE2 compound file: detection looks inside for the application that made it
        # (Word, Excel, PowerPoint, Outlook...); this is what is left when it knows none.
        Signature(d.OLE_OTHER, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"),
        *(Signature(d.HEIC, b"ftyp" + brand, offset=4)
          for brand in (b"heic", b"heix", b"mif1", b"avif")),
        Signature(d.PSD, b"8BPS"),
        Signature(d.ZSTD, b"\x28\xb5\x2f\xfd"),
        Signature(d.SEVENZ, b"7z\xbc\xaf\x27\x1c"),
        Signature(d.RAR, b"Rar!\x1a\x07\x00"),
        Signature(d.RAR, b"Rar!\x1a\x07\x01"),
    ),
    unsupported={
        d.SEVENZ: "7-Zip archives are not supported",
        d.RAR: "RAR archives are not supported",
        d.ZSTD: "zstd-compressed files are not supported",
        d.HEIC: "HEIC/AVIF images are not supported",
        d.PSD: "Photoshop files are not supported",
        d.OLE_OTHER: "OLE2 file of an application textsieve does not read",
        d.OCTET: "unrecognised binary format",
    },
)
