"""The registry: MIME type -> ordered extractors, and the context they run in.

Each extractor is ``extract(src, ctx, doc, out) -> None``: it reads ``src``, fills ``doc``
(title, metadata, children) and describes the content to ``out`` (a ``Builder``). It raises
``ExtractionError`` with a kind when it cannot. For a MIME type with several extractors
(DOC: antiword, then catdoc, then LibreOffice) the first that succeeds wins; a later one is
tried only after a failure that another parser might overcome (``corrupt``,
``unsupported``, ``missing_tool``), never after ``encrypted`` or ``too_large``.

Modules are imported on first use, so ``textsieve --help`` does not load pypdfium2.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import detection as d
from ..model import Document, ErrorKind, ExtractionError
from ..options import Options

if TYPE_CHECKING:
    import subprocess

    from ..render import Builder
    from ..source import Source

Extractor = Callable[["Source", "Context", Document, "Builder"], None]

_P = "textsieve.extractors."
CORE_VERSION = "1"  # detection / rendering / model changes that alter every output
REGISTRY_VERSION = 2  # bump when a format gains an extractor (retries its "unsupported")
REGISTRY_TAG = f"{CORE_VERSION}:registry/{REGISTRY_VERSION}"
FETCH_VERSION = 1  # bump when fetching changes in a way that should retry fetch failures
FETCH_TAG = f"{CORE_VERSION}:fetch/{FETCH_VERSION}"
_ODF = [f"{_P}odf:extract"]
_SHEET = [f"{_P}sheets:extract"]

REGISTRY: dict[str, list[str]] = {
    d.PDF: [f"{_P}pdf:extract"],
    d.DOCX: [f"{_P}docx:extract"],
    d.DOCM: [f"{_P}docx:extract"],
    d.DOTX: [f"{_P}docx:extract"],
    d.DOTM: [f"{_P}docx:extract"],
    d.PPTX: [f"{_P}pptx:extract"],
    d.PPTM: [f"{_P}pptx:extract"],
    d.PPSX: [f"{_P}pptx:extract"],
    d.POTX: [f"{_P}pptx:extract"],
    d.XLSX: _SHEET,
    d.XLSM: _SHEET,
    d.XLTX: _SHEET,
    d.XLSB: _SHEET,
    d.XLS: _SHEET,
    d.ODS: _SHEET,
    d.ODS + "-template": _SHEET,
    d.DOC: [f"{_P}word97:extract", f"{_P}legacy:extract_doc_antiword",
            f"{_P}legacy:extract_doc_catdoc", f"{_P}legacy:extract_libreoffice"],
    d.PPT: [f"{_P}legacy:extract_ppt", f"{_P}legacy:extract_ppt_catppt",
            f"{_P}legacy:extract_libreoffice"],
    d.RTF: [f"{_P}rtf:extract", f"{_P}legacy:extract_libreoffice"],
    d.WORDPERFECT: [f"{_P}wordperfect:extract"],
    d.OOXML_ENCRYPTED: [f"{_P}encrypted:extract"],
    d.IRM_PROTECTED: [f"{_P}protected:extract"],
    d.MSG: [f"{_P}mail:extract_msg"],
    d.EML: [f"{_P}mail:extract_eml"],
    d.MBOX: [f"{_P}mail:extract_mbox"],
    d.EPUB: [f"{_P}epub:extract"],
    d.HTML: [f"{_P}html:extract_html"],
    d.XML: [f"{_P}html:extract_xml"],
    d.TEXT: [f"{_P}text:extract_text"],
    d.CSV: [f"{_P}text:extract_csv"],
    d.TSV: [f"{_P}text:extract_csv"],
    d.ZIP: [f"{_P}archive:extract_zip"],
    d.TAR: [f"{_P}archive:extract_tar"],
    d.GZIP: [f"{_P}archive:extract_compressed"],
    d.BZIP2: [f"{_P}archive:extract_compressed"],
    d.XZ: [f"{_P}archive:extract_compressed"],
    d.PNG: [f"{_P}image:extract"],
    d.JPEG: [f"{_P}image:extract"],
    d.GIF: [f"{_P}image:extract"],
    d.TIFF: [f"{_P}image:extract"],
    d.BMP: [f"{_P}image:extract"],
    d.WEBP: [f"{_P}image:extract"],
    d.JP2: [f"{_P}image:extract"],
}
# Every OpenDocument type (text, presentation, drawing, master, web, and templates).
for _kind in ("text", "presentation", "graphics", "text-master", "text-web", "chart",
              "formula", "text-template", "presentation-template", "graphics-template",
              "text-master-template"):
    REGISTRY[d.ODF_PREFIX + _kind] = _ODF

_FALLBACK_KINDS = {ErrorKind.CORRUPT, ErrorKind.UNSUPPORTED, ErrorKind.MISSING_TOOL}

# Formats we recognise and deliberately do not read: a typed answer, not a guess.
UNSUPPORTED = {
    d.SEVENZ: "7-Zip archives are not supported",
    d.RAR: "RAR archives are not supported",
    d.ZSTD: "zstd-compressed files are not supported",
    d.HEIC: "HEIC/AVIF images are not supported",
    d.PSD: "Photoshop files are not supported",
    d.OLE_OTHER: "OLE2 file of an application textsieve does not read",
    d.OCTET: "unrecognised binary format",
}


def extractors_for(mime: str) -> Iterator[tuple[str, Extractor]]:
    """(version tag, function) for each extractor of ``mime``, in order of preference,
    each module imported only when its turn comes: the fallbacks of a format (antiword,
    catdoc, LibreOffice after our Word reader) are not loaded for the files the first one
    reads (tempfile and shutil were half of a DOC's imports)."""
    for spec in REGISTRY.get(mime, []):
        yield version_of(spec), _load(spec)


def version_of(spec: str) -> str:
    """"module/N": bump a module's ``VERSION`` when its output changes, and archives
    re-extract exactly the items that module produced (core changes bump CORE_VERSION)."""
    mod = spec.partition(":")[0]
    module = importlib.import_module(mod)
    return f"{CORE_VERSION}:{mod.rsplit('.', 1)[-1]}/{getattr(module, 'VERSION', 1)}"


def is_current(tag: str | None) -> bool:
    """Whether an archived item's extractor tag is what this textsieve would use now."""
    if not tag or ":" not in tag or "/" not in tag:
        return False
    if tag in (REGISTRY_TAG, FETCH_TAG):
        return True
    core, _, rest = tag.partition(":")
    mod = rest.partition("/")[0]
    if mod in ("registry", "fetch"):
        return False
    try:
        return version_of(f"{__name__}.{mod}:x") == tag and core == CORE_VERSION
    except ImportError:
        return False


_cache: dict[str, Extractor] = {}


def preload(mimes: Iterable[str] | None = None) -> None:
    """Pay the one-time start-up of the extractors for ``mimes`` (all when None) now: the
    modules, the libraries they import only on first use (a module's ``LAZY`` names) and,
    for all formats, the code pages charset detection tries. ``import textsieve`` stays
    light so that a one-file CLI call does not load every parser; a long-lived caller (a
    service, the pool before it forks its workers, a benchmark) wants the ~0.2 s paid once,
    up front, and not by the first file of each format."""
    # ocr: imported for its imports (core, the layer above, is its callers' to load).
    from .. import ocr, textcodec  # noqa: F401

    wanted = REGISTRY.keys() if mimes is None else [m for m in mimes if m in REGISTRY]
    for spec in {s for m in wanted for s in REGISTRY[m]}:
        try:
            _load(spec)
        except ImportError:  # an optional parser that is not installed
            continue
        for lib in getattr(importlib.import_module(spec.partition(":")[0]), "LAZY", ()):
            with contextlib.suppress(ImportError):
                importlib.import_module(lib)
    if mimes is None:  # a CLI call on a few PDFs need not look up 99 code pages
        textcodec.warm()


def wants_pictures(ctx: Context, out: Builder) -> bool:
    """Whether a document's pictures are read: always with ``ocr="always"``; otherwise
    only when the document holds no text (a scan pasted into Word, photographed slides),
    which must not come out as an empty success."""
    return ctx.options.ocr == "always" or not out.has_text()


def _load(spec: str) -> Extractor:
    fn = _cache.get(spec)
    if fn is None:
        mod, _, attr = spec.partition(":")
        fn = getattr(importlib.import_module(mod), attr)
        _cache[spec] = fn
    return fn


@dataclass
class Budget:
    """Shared by a top-level file and everything unpacked from it (bomb protection)."""

    unpacked: int = 0
    members: int = 0


@dataclass
class Context:
    """What an extractor may use besides its input: options, limits, nested extraction."""

    options: Options
    depth: int = 0
    budget: Budget = field(default_factory=Budget)
    ancestors: tuple[str, ...] = ()  # sha256 of the containers we are inside (loops)
    # Processes a long paged document may use to read its pages (forked, see forking.py):
    # all cores for a document handed to the API, 1 for members and inside busy workers.
    page_workers: int = 1
    # How a member is extracted: given by the caller (``core``), so that extractors never
    # import the layer above them. None: members cannot be extracted (a bare test context).
    nested: Callable[[Source, Context], Document] | None = None
    # Pages (1-based) the extractor left for OCR: a scan's, an image's frames. The caller
    # (``core``) OCRs them or hands them to an executor; they never enter the metadata.
    ocr_pending: list[int] = field(default_factory=list)

    def child(self, data: bytes, name: str | None) -> Document:
        """Extract a member/attachment/embedded file as a child Document.

        Depth and the unpacked-size budget are shared with the whole tree, so a zip of zips
        (or a zip that contains itself) stops with a typed error instead of running away.
        """
        from ..source import Source

        if self.depth + 1 > self.options.max_depth:
            return Document.failed(ErrorKind.TOO_LARGE,
                                   f"nesting deeper than {self.options.max_depth} levels",
                                   name=name)
        if self.nested is None:
            raise ExtractionError(ErrorKind.INTERNAL, "no nested extraction in this context")
        return self.nested(Source.from_bytes(data, name=name),
                           Context(self.options, self.depth + 1, self.budget, self.ancestors,
                                   nested=self.nested))

    def account(self, nbytes: int, what: str = "archive") -> None:
        """Charge unpacked bytes to the budget; raises too_large when it is spent."""
        self.budget.unpacked += nbytes
        self.budget.members += 1
        if self.budget.unpacked > self.options.unpack_budget:
            raise ExtractionError(
                ErrorKind.TOO_LARGE,
                f"{what} unpacks to more than {self.options.unpack_budget} bytes in total",
            )

    def run_tool(self, args: Sequence[str], *, input: bytes | None = None,
                 timeout: float | None = None, env: dict[str, str] | None = None,
                 ) -> subprocess.CompletedProcess[bytes]:
        """Run an external program with a deadline; missing program -> missing_tool."""
        import shutil  # here: most formats run no program, and a command start pays
        import subprocess

        exe = shutil.which(args[0])
        if exe is None:
            raise ExtractionError(ErrorKind.MISSING_TOOL, f"{args[0]} is not installed")
        try:
            return subprocess.run([exe, *args[1:]], input=input, capture_output=True,
                                  timeout=timeout or self.options.tool_timeout, env=env,
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            raise ExtractionError(ErrorKind.TIMEOUT,
                                  f"{args[0]} did not finish in {exc.timeout:.0f} s") from exc
