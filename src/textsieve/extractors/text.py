"""Plain text and CSV/TSV in any encoding.

Decoding goes through ``textcodec.decode`` (BOMs, UTF-16/32, legacy code pages) so every
text-ish format agrees on encodings. CSV is parsed with the ``csv`` module after sniffing
the delimiter on a sample ourselves: ``csv.Sniffer`` is slow on wide samples and guesses
letters as delimiters; we only ever consider , ; TAB and |.
"""

from __future__ import annotations

import csv
import io
from collections import Counter

from .. import detection as d
from ..bytesource import Source
from ..formats import Format, Reader
from ..model import Document
from ..render import Builder
from ..textcodec import decode
from . import Context

FORMAT = Format(
    name="text", version=1,
    readers=(Reader(d.TEXT, "extract_text"), Reader(d.CSV, "extract_csv"),
             Reader(d.TSV, "extract_csv")),
    hints={"txt": d.TEXT, "md": d.TEXT, "csv": d.CSV, "tsv": d.TSV, "tab": d.TSV},
)

# Imported on first use only; ``preload`` imports them ahead (Counter.most_common).
LAZY = ("heapq",)

_DELIMITERS = ",;\t|"
_SAMPLE_CHARS = 65536
_SAMPLE_ROWS = 200
# A single cell of an exported log can be megabytes; the csv default (128 KiB) would make
# such a file fail. Raising the module-wide limit only lets more data parse.
csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))


def extract_text(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """The decoded text with its line layout kept."""
    out.preformatted(decode_text(src, doc))


def decode_text(src: Source, doc: Document) -> str:
    """Bytes to text with ``\\n`` newlines (CRLF and old-Mac CR) and no NUL bytes."""
    text, enc = decode(src.read())
    doc.metadata.encoding = enc
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


def extract_csv(src: Source, ctx: Context, doc: Document, out: Builder) -> None:
    """A table whose first row is the header; ragged rows are padded."""
    text = decode_text(src, doc)
    if not text.strip():
        return
    prefer_tab = doc.mime_type == d.TSV
    delimiter = sniff_delimiter(text[:_SAMPLE_CHARS], prefer_tab=prefer_tab,
                                truncated=len(text) > _SAMPLE_CHARS)
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter, skipinitialspace=True,
                               strict=False))
    except csv.Error as exc:  # not really CSV: keep its text rather than lose it
        doc.warnings.append(f"CSV could not be parsed ({exc}); kept as plain text")
        out.preformatted(text)
        return
    doc.metadata.extra["delimiter"] = delimiter
    doc.metadata.extra["rows"] = len(rows)
    doc.metadata.extra["columns"] = max(map(len, rows), default=0)
    out.table(rows, header=True)


def sniff_delimiter(sample: str, *, prefer_tab: bool = False, truncated: bool = False) -> str:
    """The delimiter that splits the sample's records into the most consistent number of
    fields (quotes respected, so a comma inside "a, b" does not count); ',' when unsure."""
    lines = sample.split("\n", _SAMPLE_ROWS + 1)[:_SAMPLE_ROWS + 1]
    if truncated and len(lines) > 1:
        lines.pop()  # the sample cut the last record in half
    lines = [ln for ln in lines if ln.strip()][:_SAMPLE_ROWS]
    if not lines:
        return "\t" if prefer_tab else ","
    best, best_key = ("\t" if prefer_tab else ","), (0.0, 0, 0)
    for delim in _DELIMITERS:
        if delim not in sample:
            continue
        try:
            counts = [len(r) for r in csv.reader(lines, delimiter=delim, skipinitialspace=True)]
        except csv.Error:
            continue
        if not counts:
            continue
        modal, freq = Counter(counts).most_common(1)[0]
        if modal < 2:
            continue
        key = (round(freq / len(counts), 2), int(prefer_tab and delim == "\t"), modal)
        if key > best_key:
            best, best_key = delim, key
    return best
