"""The ``textsieve`` command.

Exit codes: 0 every input extracted (``ok`` or ``empty``); 1 at least one input failed
(its error is printed to stderr and, with ``--format json``, in its record); 2 usage error.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sqlite3
import sys
from collections.abc import Iterator

from . import __version__
from .model import Document, Status
from .options import MIN_MEMORY, MiB, Options, OptionsError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _expand(args: list[str]) -> Iterator[str]:
    """Files, folders (walked, sorted, hidden entries skipped) and globs, in order."""
    for a in args:
        if a == "-":
            yield a
        elif os.path.isdir(a):
            for root, dirs, files in os.walk(a):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for f in sorted(files):
                    if not f.startswith("."):
                        yield os.path.join(root, f)
        elif not os.path.exists(a) and glob.has_magic(a):
            yield from sorted(glob.glob(a, recursive=True))
        else:
            yield a


def _options(ns: argparse.Namespace) -> Options:
    return Options(
        password=ns.password,
        timeout=ns.timeout,
        memory_limit=ns.memory_limit * MiB,
        workers=ns.jobs,
        comments=ns.comments,
        libreoffice=not ns.no_libreoffice,
        ocr=ns.ocr,
        ocr_lang=ns.lang,
        html=ns.html,
        topic=ns.topic,
    )


def _add_extract_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-j", "--jobs", type=int, default=0,
                   help="files extracted in parallel (default: number of cores)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds allowed per file before it is stopped (default 120)")
    p.add_argument("--memory-limit", type=int, default=4096, metavar="MB",
                   help="memory cap per worker process in MiB (default 4096; 0: no cap)")
    p.add_argument("--password", help="password for encrypted PDF/Office files")
    p.add_argument("--comments", action="store_true", help="include document comments")
    p.add_argument("--no-libreoffice", action="store_true",
                   help="never fall back to LibreOffice for legacy formats")
    p.add_argument("--html", choices=["auto", "main", "full", "sieve"], default="auto",
                   help="HTML: main content, all visible text, or only the part about "
                        "--topic (sieve); auto: main for web pages, full for files")
    p.add_argument("--topic", metavar="WORDS|FILE",
                   help="for --html sieve: a preset (recipe-directions, recipe-ingredients), "
                        "a file of words/phrases one a line, or words")
    _add_ocr_options(p)


def _add_ocr_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ocr", choices=["auto", "always", "never"], default="auto",
                   help="auto: OCR pages without usable text (default); always; never")
    p.add_argument("--lang", default="eng", metavar="LANGS",
                   help="OCR languages, tesseract codes joined by + (default: eng)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="textsieve", description="Clean, searchable text from any pile of documents.")
    parser.add_argument("--version", action="version", version=f"textsieve {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("extract", help="print the text of files (folders and globs expand)")
    p.add_argument("inputs", nargs="+", metavar="FILE", help="files, folders, globs, or -")
    p.add_argument("-f", "--format", choices=["text", "markdown", "json"], default="text")
    _add_extract_options(p)

    p = sub.add_parser("detect", help="print the MIME type of files, decided by content")
    p.add_argument("inputs", nargs="+", metavar="FILE")

    p = sub.add_parser("run", help="extract sources into the archive (incremental, resumable)")
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="files, folders or globs")
    _add_archive_option(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--force", action="store_true", help="extract every item again")
    g.add_argument("--retry-errors", action="store_true",
                   help="only retry items that failed before")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary")
    p.add_argument("--fetch-timeout", type=float, default=120.0, metavar="S",
                   help="seconds allowed per URL, redirects and retries included (120)")
    p.add_argument("--host-delay", type=float, default=0.5, metavar="S",
                   help="minimum seconds between requests to one host (0.5)")
    p.add_argument("--user-agent", help="the User-Agent header sent when fetching")
    p.add_argument("--contact-url", metavar="URL",
                   help="named in the User-Agent, so site owners can reach you")
    p.add_argument("--ignore-robots", action="store_true",
                   help="do not read robots.txt (only for sites that are yours)")
    p.add_argument("--allow-private", action="store_true",
                   help="also fetch loopback, private, link-local and metadata addresses "
                        "(refused by default: links in mail and pages are not trusted)")
    p.add_argument("--allow-cidr", action="append", default=[], metavar="CIDR",
                   help="fetch from this network although it is not public, e.g. "
                        "192.168.1.0/24 (repeatable)")
    p.add_argument("--searchable-pdf", metavar="DIR",
                   help="also write every OCRed PDF here, with an invisible text layer")
    p.add_argument("--enrich", nargs="?", const="all", metavar="KINDS",
                   help="then bring topics, summaries, keyphrases, related items and "
                        "near-duplicates up to date (only new items; KINDS: a comma list "
                        "of those, default all; needs textsieve[topics])")
    _add_extract_options(p)

    p = sub.add_parser("ocr", help="make a scanned PDF searchable: the same pages with an "
                       "invisible OCR text layer")
    p.add_argument("input", metavar="IN.pdf")
    p.add_argument("-o", "--output", required=True, metavar="OUT.pdf",
                   help="the searchable PDF to write (the input is never modified)")
    p.add_argument("--lang", default="eng", help="tesseract languages, e.g. eng+deu")
    p.add_argument("--ocr", choices=["auto", "always"], default="auto",
                   help="auto: only pages without a usable text layer (default); always: all")
    p.add_argument("-j", "--jobs", type=int, default=0,
                   help="pages OCRed in parallel (default: number of cores)")
    p.add_argument("--password", help="password for an encrypted PDF")

    p = sub.add_parser("demo", help="the whole job on the bundled samples (documents, a "
                       "mailbox of links served from a local site), then searches")
    _add_archive_option(p)
    p.add_argument("-j", "--jobs", type=int, default=0)

    p = sub.add_parser("gmail-auth", help="authorise textsieve to read your Gmail (once): "
                       "opens Google's consent page and stores the token for gmail:LABEL")
    p.add_argument("--client-id", required=True, help="OAuth client id (installed app)")
    p.add_argument("--client-secret", help="OAuth client secret, if your client has one")

    p = sub.add_parser("search", help="full-text search of the archive")
    p.add_argument("query", help="words (all must match), or FTS5 syntax: \"a phrase\", OR")
    p.add_argument("-n", "--limit", type=int, default=20)
    p.add_argument("--all-duplicates", action="store_true",
                   help="list near-duplicates of a hit as hits of their own")
    _add_archive_option(p)

    p = sub.add_parser("show", help="print an archived item")
    p.add_argument("id", type=int)
    p.add_argument("-f", "--format", choices=["text", "markdown", "json"], default="text")
    _add_archive_option(p)

    p = sub.add_parser("topics", help="find the topics of the archive's texts (fitted once, "
                       "new items placed in them on later runs)")
    p.add_argument("-k", type=int, metavar="N",
                   help="number of topics (default: chosen by coherence)")
    p.add_argument("--refit", action="store_true", help="fit the topics again from scratch")
    p.add_argument("--format", choices=["table", "json"], default="table")
    _add_selection_options(p)
    _add_archive_option(p)

    p = sub.add_parser("summarize", help="write an extractive summary of items into the "
                       "archive (shown by show, search and exports)")
    p.add_argument("ids", nargs="*", type=int, metavar="ID")
    p.add_argument("--all", action="store_true", help="every item without a summary yet")
    p.add_argument("-n", "--sentences", type=int, default=3, metavar="N",
                   help="sentences per summary (default 3)")
    p.add_argument("--force", action="store_true", help="summarise again (with --all)")
    _add_archive_option(p)

    p = sub.add_parser("keyphrases", help="find the keyphrases of items (stored in the "
                       "archive, shown by show)")
    p.add_argument("ids", nargs="*", type=int, metavar="ID")
    p.add_argument("--all", action="store_true", help="every item without keyphrases yet")
    p.add_argument("--force", action="store_true", help="find them again (with --all)")
    _add_archive_option(p)

    p = sub.add_parser("related", help="items most like an item (nearest neighbours, kept "
                       "up to date in the archive)")
    p.add_argument("ids", nargs="*", type=int, metavar="ID")
    p.add_argument("--all", action="store_true", help="compute the neighbours of every item")
    _add_archive_option(p)

    p = sub.add_parser("duplicates", help="group near-duplicate items (the same text under "
                       "two URLs...): search shows each group once")
    p.add_argument("--format", choices=["table", "json"], default="table")
    _add_archive_option(p)

    p = sub.add_parser("stats", help="summarise the archive by status, type and error")
    _add_archive_option(p)

    p = sub.add_parser("export", help="write the archive out as files, JSONL or Parquet")
    p.add_argument("--to", required=True, metavar="PATH",
                   help="folder (txt) or file (jsonl, parquet)")
    p.add_argument("--format", choices=["txt", "jsonl", "parquet"], default="txt")
    _add_archive_option(p)
    return parser


def _add_archive_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--archive", default="textsieve.db", metavar="FILE",
                   help="the archive file (default: textsieve.db here)")


def _add_selection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--type", dest="mime", metavar="MIME",
                   help="only items of this MIME type or prefix (text/html, application/)")
    p.add_argument("--since", metavar="DATE", help="only items first seen on or after it")
    p.add_argument("--until", metavar="DATE", help="only items first seen up to that day")
    p.add_argument("--label", help="only items mailed with this mail label")


def _read_stdin() -> bytes:
    return sys.stdin.buffer.read()


def cmd_extract(ns: argparse.Namespace) -> int:
    from .run.pool import extract_many

    options = _options(ns)
    paths = list(_expand(ns.inputs))
    if not paths:
        print("textsieve: no input files", file=sys.stderr)
        return EXIT_USAGE
    objs = [_read_stdin() if p == "-" else p for p in paths]
    names = ["<stdin>" if p == "-" else None for p in paths]
    many = len(paths) > 1
    failed = 0
    out = sys.stdout
    workers = options.worker_count  # all of them even for one file: its OCR pages spread
    for path, doc in zip(paths, extract_many(objs, options, names=names, workers=workers),
                         strict=True):
        if doc.status is Status.ERROR:
            failed += 1
            assert doc.error is not None
            print(f"textsieve: {path}: {doc.error.kind}: {doc.error.message}", file=sys.stderr)
        _emit(out, path, doc, ns.format, many)
    out.flush()
    return EXIT_FAILED if failed else EXIT_OK


def _emit(out, path: str, doc: Document, fmt: str, many: bool) -> None:
    if fmt == "json":
        record = {"path": path, **doc.to_dict()}
        out.write(json.dumps(record, ensure_ascii=False, indent=None if many else 2) + "\n")
        return
    body = doc.full_text(markdown=fmt == "markdown")
    if many:
        header = f"# {path}" if fmt == "markdown" else f"==> {path} <=="
        out.write(f"{header}\n\n")
    if body:
        out.write(body.rstrip("\n") + "\n")
    if many:
        out.write("\n")


def cmd_detect(ns: argparse.Namespace) -> int:
    from . import _source
    from .detection import detect

    failed = 0
    for path in _expand(ns.inputs):
        try:
            with _source(sys.stdin.buffer.read() if path == "-" else path, None,
                         Options()) as src:
                det = detect(src)
        except OSError as exc:
            print(f"textsieve: {path}: {exc.strerror or exc}", file=sys.stderr)
            failed += 1
            continue
        note = f"  ({det.note})" if det.note else ""
        print(f"{path}: {det.mime}  [{det.how}]{note}")
    return EXIT_FAILED if failed else EXIT_OK


def _open_archive(path: str, *, readonly: bool):
    from .archive import Archive, ArchiveError

    if readonly and not os.path.exists(path):
        raise ArchiveError(f"{path}: no such archive (create it with textsieve run)")
    return Archive(path, readonly=readonly)


def cmd_run(ns: argparse.Namespace) -> int:
    from .archive.stats import totals
    from .run.progress import Progress
    from .run.runner import Mode, run
    from .sources import SourceError, open_source

    archive_path = os.path.abspath(ns.archive)
    exclude = frozenset({archive_path, archive_path + "-wal", archive_path + "-shm",
                         archive_path + "-journal"})
    try:
        sources = [open_source(spec, exclude=exclude, options=_options(ns))
                   for spec in ns.sources]
    except SourceError as exc:
        print(f"textsieve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    options = _options(ns).with_(fetch_timeout=ns.fetch_timeout,
                                 per_host_delay=max(ns.host_delay, 0.0))
    if ns.user_agent:
        options = options.with_(user_agent=ns.user_agent)
    options = options.with_(contact_url=ns.contact_url, obey_robots=not ns.ignore_robots,
                            allow_private=ns.allow_private,
                            allow_cidrs=tuple(ns.allow_cidr))
    if ns.searchable_pdf:
        os.makedirs(ns.searchable_pdf, exist_ok=True)
        options = options.with_(searchable_pdf_dir=os.path.abspath(ns.searchable_pdf))
    if ns.enrich:
        from .enrich import require

        require()  # before the extraction, not after an hour of it
        kinds = () if ns.enrich == "all" else tuple(
            k.strip() for k in ns.enrich.split(",") if k.strip())
        options = options.with_(enrich=kinds)
    mode = Mode.FORCE if ns.force else Mode.RETRY_ERRORS if ns.retry_errors else \
        Mode.INCREMENTAL
    progress = Progress(quiet=ns.quiet)
    with _open_archive(ns.archive, readonly=False) as archive, progress:
        stats = run(sources, archive, options, mode=mode, progress=progress,
                    run_options={"mode": str(mode), "timeout": options.timeout,
                                 "workers": options.worker_count})
        progress.finish(stats, totals(archive))  # on Ctrl-C, the summary so far
        if ns.enrich:
            from .enrich.driver import enrich

            done = enrich(archive, options, progress=_enrich_progress(ns.quiet))
            if not ns.quiet:
                print("enriched: " + ", ".join(f"{k} {v}" for k, v in done.items()),
                      file=sys.stderr)
    return EXIT_FAILED if stats.status.get("error") else EXIT_OK


def cmd_ocr(ns: argparse.Namespace) -> int:
    from .model import ExtractionError
    from .ocr.searchable import make_searchable
    from .run.pool import WorkerPool

    options = Options(password=ns.password, workers=ns.jobs, ocr=ns.ocr, ocr_lang=ns.lang)
    if not os.path.isfile(ns.input):
        print(f"textsieve: {ns.input}: no such file", file=sys.stderr)
        return EXIT_FAILED
    try:
        with WorkerPool(options) as pool:  # the pages of the scan spread over all cores
            report = make_searchable(ns.input, ns.output, options, pool=pool)
    except (ExtractionError, OSError) as exc:
        what = f"{exc.kind}: {exc.message}" if isinstance(exc, ExtractionError) else str(exc)
        print(f"textsieve: {ns.input}: cannot make it searchable: {what}", file=sys.stderr)
        return EXIT_FAILED
    ocred, kept, missing = report["ocr_pages"], report["kept_pages"], report["missing_pages"]
    print(f"{ns.output}: {len(ocred)} page(s) OCRed, {len(kept)} kept their text layer "
          f"({report['seconds']:.1f} s)", file=sys.stderr)
    if missing:
        reasons = "; ".join(f"page {n}: {report['errors'][n]}" for n in missing[:10])
        print(f"textsieve: {ns.input}: OCR failed on {len(missing)} page(s), left without "
              f"text in {ns.output}: {reasons}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def cmd_search(ns: argparse.Namespace) -> int:
    from .archive.search import QueryError, search

    with _open_archive(ns.archive, readonly=True) as archive:
        try:
            hits = search(archive, ns.query, limit=ns.limit)
        except QueryError as exc:
            print(f"textsieve: {exc}", file=sys.stderr)
            return EXIT_USAGE
        from .enrich.items import duplicates_of, summary_of

        summaries = {h.id: summary_of(archive, h.id) for h in hits}
        if not ns.all_duplicates:  # one hit per near-duplicate group (textsieve duplicates)
            seen: set[int] = set()
            kept = []
            for h in hits:
                if h.id in seen:
                    continue
                dups = duplicates_of(archive, h.id)
                seen.update(dups)
                kept.append((h, dups))
            collapsed = dict((h.id, d) for h, d in kept)
            hits = [h for h, _ in kept]
        else:
            collapsed = {}
    for h in hits:
        where = " › ".join(h.where)
        title = f"  {h.title}" if h.title else ""
        print(f"[{h.id}] {where}{title}\n    {h.snippet}")
        if summaries.get(h.id):
            print(f"    = {summaries[h.id]}")
        if collapsed.get(h.id):
            print("    + near-duplicates: " + " ".join(f"[{d}]" for d in collapsed[h.id]))
    if not hits:
        print("no match", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def cmd_show(ns: argparse.Namespace) -> int:
    with _open_archive(ns.archive, readonly=True) as archive:
        doc = archive.document(ns.id)
        lineage = archive.lineage(ns.id)
        where = " › ".join(w for _, w in lineage)
        mails = archive.mails_of(lineage[0][0]) if lineage else []
        enriched = _enriched(archive, ns.id)
    if doc is None:
        print(f"textsieve: no item {ns.id}", file=sys.stderr)
        return EXIT_FAILED
    if ns.format == "json":
        record = {"path": where, **doc.to_dict(), "mails": mails, **enriched}
        sys.stdout.write(json.dumps(record, ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    for m in mails:  # which mails named it: provenance a reader wants to see first
        print(f"mailed: {m['date'] or '?'}  {m['from'] or '?'}  «{m['subject'] or ''}»",
              file=sys.stderr)
    if enriched["summary"]:
        print(f"summary: {enriched['summary']}", file=sys.stderr)
    _emit(sys.stdout, where, doc, ns.format, many=False)
    return EXIT_OK


def _enriched(archive, item_id: int) -> dict:
    """What enrichment knows about an item (for show): summary, keyphrases, topics..."""
    from .enrich.items import enriched

    return enriched(archive, item_id)


def _enrich_progress(quiet: bool = False):
    """A one-line progress report on stderr for long enrichment work (a terminal only)."""
    if quiet or not sys.stderr.isatty():
        return None

    def show(kind: str, done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(f"\r{kind}: {done:,}/{total:,}", end=end, file=sys.stderr, flush=True)
    return show


def cmd_topics(ns: argparse.Namespace) -> int:
    from .enrich import items, require, topics

    require()
    if ns.k is not None and ns.k < 1:
        print("textsieve: -k must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    selection = items.Selection(mime=ns.mime, since=ns.since, until=ns.until, label=ns.label)
    with _open_archive(ns.archive, readonly=False) as archive:
        report = topics.update(archive, k=ns.k, refit=ns.refit, selection=selection,
                               progress=_enrich_progress())
        found = topics.list_topics(archive)
    if ns.format == "json":
        sys.stdout.write(json.dumps([t.to_dict() for t in found], ensure_ascii=False,
                                    indent=2) + "\n")
    else:
        for t in found:
            coh = f"{t.coherence:+.2f}" if t.coherence is not None else "   ?"
            print(f"{t.id:>3}  {t.size:>6,}  {coh}  {t.label}\n"
                  f"     {', '.join(term for term, _ in t.terms)}")
            for it in t.items:
                print(f"     [{it['id']}] {it['title'] or it['key']}")
    how = "fitted" if report.refitted else "placed in the existing topics"
    print(f"{report.k} topics; {report.placed:,} item(s) {how}", file=sys.stderr)
    return EXIT_OK


def cmd_summarize(ns: argparse.Namespace) -> int:
    from .enrich import require, summary

    require()
    if bool(ns.ids) == bool(ns.all) or ns.sentences < 1:
        print("textsieve: summarize takes item ids or --all (and -n of at least 1)",
              file=sys.stderr)
        return EXIT_USAGE
    with _open_archive(ns.archive, readonly=False) as archive:
        n = summary.update(archive, ns.ids or None, n=ns.sentences,
                           force=ns.force or bool(ns.ids), progress=_enrich_progress())
        for item_id in ns.ids:
            text = summary.summary_of(archive, item_id)
            print(f"[{item_id}] {text}" if text else
                  f"[{item_id}] (no summary: no such item or too little text)")
    print(f"{n:,} item(s) summarised", file=sys.stderr)
    return EXIT_OK


def cmd_keyphrases(ns: argparse.Namespace) -> int:
    from .enrich import items, keyphrases, require

    require()
    if bool(ns.ids) == bool(ns.all):
        print("textsieve: keyphrases takes item ids or --all", file=sys.stderr)
        return EXIT_USAGE
    with _open_archive(ns.archive, readonly=False) as archive:
        n = keyphrases.update(archive, ns.ids or None, force=ns.force or bool(ns.ids),
                              progress=_enrich_progress())
        for item_id in ns.ids:
            print(f"[{item_id}] " + ", ".join(items.keyphrases_of(archive, item_id)))
    print(f"{n:,} item(s) given keyphrases", file=sys.stderr)
    return EXIT_OK


def cmd_related(ns: argparse.Namespace) -> int:
    from .enrich import items, related, require

    require()
    if bool(ns.ids) == bool(ns.all):
        print("textsieve: related takes item ids or --all", file=sys.stderr)
        return EXIT_USAGE
    with _open_archive(ns.archive, readonly=False) as archive:
        n = related.update(archive, progress=_enrich_progress())
        for item_id in ns.ids:
            print(f"[{item_id}]")
            for r in items.related_of(archive, item_id):
                print(f"  {r['score']:.2f}  [{r['id']}] {r['title'] or r['key']}")
    print(f"{n:,} item(s) given neighbours", file=sys.stderr)
    return EXIT_OK


def cmd_duplicates(ns: argparse.Namespace) -> int:
    from .enrich import neardup, require

    require()
    with _open_archive(ns.archive, readonly=False) as archive:
        n = neardup.update(archive, progress=_enrich_progress())
        found = neardup.groups(archive)
        where = {g: [(i, archive.lineage(i)[0][1] if archive.lineage(i) else "?")
                     for i in group] for g, group in enumerate(found)}
    if ns.format == "json":
        sys.stdout.write(json.dumps([[{"id": i, "key": k} for i, k in where[g]]
                                     for g in where], ensure_ascii=False, indent=2) + "\n")
    else:
        for g in where:
            print("  ".join(f"[{i}] {k}" for i, k in where[g]))
    print(f"{len(found):,} group(s) of near-duplicates; {n:,} item(s) hashed",
          file=sys.stderr)
    return EXIT_OK


def cmd_stats(ns: argparse.Namespace) -> int:
    from .archive.stats import format_stats, stats

    with _open_archive(ns.archive, readonly=True) as archive:
        print(format_stats(stats(archive)))
    return EXIT_OK


def cmd_export(ns: argparse.Namespace) -> int:
    from collections import Counter

    from .archive.export import ExportError, export

    counts: Counter[str] = Counter()
    with _open_archive(ns.archive, readonly=True) as archive:
        try:
            n = export(archive, ns.to, ns.format, counts=counts)
        except ExportError as exc:
            print(f"textsieve: {exc}", file=sys.stderr)
            return EXIT_FAILED
    more = "".join(f", {v:,} {k}" for k, v in sorted(counts.items()) if k != "items" and v)
    print(f"exported {n:,} items to {ns.to}{more}", file=sys.stderr)
    return EXIT_OK


def _check_sieve(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> None:
    """--topic implies --html sieve; sieve needs a topic that loads (checked here once, not
    in every worker); a topic file is made absolute for workers and re-runs."""
    if ns.topic and ns.html == "auto":
        ns.html = "sieve"
    if ns.html != "sieve":
        if ns.topic:
            parser.error("--topic only applies to --html sieve")
        return
    if not ns.topic:
        parser.error("--html sieve needs --topic WORDS|FILE")
    from .web.sieve import load_topic

    try:
        load_topic(ns.topic)
    except (ValueError, OSError) as exc:
        parser.error(f"--topic: {exc}")
    if not _is_preset(ns.topic) and os.path.isfile(ns.topic):
        ns.topic = os.path.abspath(ns.topic)


def _is_preset(name: str) -> bool:
    from .web.sieve import presets

    return name in presets()


def cmd_gmail_auth(ns: argparse.Namespace) -> int:
    from .mailsrc.gmail import authorize

    path = authorize(ns.client_id, ns.client_secret, Options(),
                     show=lambda url: print(f"Open this page to allow access:\n{url}",
                                            file=sys.stderr))
    print(f"token stored in {path}", file=sys.stderr)
    return EXIT_OK


def cmd_demo(ns: argparse.Namespace) -> int:
    from .demo import main as demo_main

    return demo_main(ns.archive, ns.jobs)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if getattr(ns, "jobs", 0) < 0 or getattr(ns, "timeout", 1) <= 0:
        parser.error("--jobs must be >= 0 and --timeout > 0")
    memory, floor = getattr(ns, "memory_limit", 0), MIN_MEMORY // MiB  # said in MiB here
    if memory < 0 or 0 < memory < floor:
        parser.error(f"--memory-limit must be 0 (no cap) or at least {floor} (MiB)")
    if getattr(ns, "html", None) is not None:
        _check_sieve(parser, ns)
    handler = {"extract": cmd_extract, "detect": cmd_detect, "run": cmd_run,
               "ocr": cmd_ocr, "search": cmd_search, "demo": cmd_demo, "gmail-auth": cmd_gmail_auth,
               "show": cmd_show, "topics": cmd_topics,
               "summarize": cmd_summarize, "keyphrases": cmd_keyphrases,
               "related": cmd_related, "duplicates": cmd_duplicates,
               "stats": cmd_stats, "export": cmd_export}[ns.command]
    from .archive.store import ArchiveError
    from .enrich import EnrichError

    try:
        return handler(ns)
    except EnrichError as exc:
        print(f"textsieve: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OptionsError as exc:  # a value argparse could not check (--memory-limit 1)
        print(f"textsieve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ArchiveError as exc:
        print(f"textsieve: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except sqlite3.DatabaseError as exc:  # damage the open checks cannot see (a bad page)
        where = getattr(ns, "archive", "archive")
        print(f"textsieve: {where}: cannot use the archive ({exc})", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # `textsieve extract ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

