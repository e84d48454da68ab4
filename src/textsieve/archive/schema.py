"""The archive's SQLite schema, as an ordered list of migrations.

``PRAGMA user_version`` holds the schema version; ``PRAGMA application_id`` marks the file
as a textsieve archive, so a foreign SQLite database is recognised and left untouched. An
archive made by an older textsieve is migrated in place, one step per version, each step in
its own transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from .credentials import scrub_credentials

APPLICATION_ID = 0x54535652  # "TSVR"

_V1 = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One run of `textsieve run`: what it was asked, when, and what it did.
CREATE TABLE runs (
    id       INTEGER PRIMARY KEY,
    started  REAL NOT NULL,
    ended    REAL,
    status   TEXT NOT NULL DEFAULT 'running',  -- running | completed | interrupted
    options  TEXT NOT NULL DEFAULT '{}',       -- JSON
    sources  TEXT NOT NULL DEFAULT '[]',       -- JSON list of source specs
    counts   TEXT NOT NULL DEFAULT '{}'        -- JSON: new, changed, unchanged, ok, error...
);

-- A source as the user named it (a folder, a glob, later a URL list or a mailbox).
CREATE TABLE sources (
    id    INTEGER PRIMARY KEY,
    spec  TEXT NOT NULL UNIQUE
);

-- One row per item: a top-level input or a child (member, attachment, embedded file).
CREATE TABLE items (
    id                 INTEGER PRIMARY KEY,
    key                TEXT NOT NULL UNIQUE,   -- normalised path / URL; children: parent//name
    original           TEXT,                   -- as first given (path or URL)
    parent_id          INTEGER REFERENCES items(id) ON DELETE CASCADE,
    name               TEXT,
    sha256             TEXT,
    size               INTEGER,
    mtime_ns           INTEGER,                -- of the file, for the cheap unchanged check
    mime_type          TEXT,
    title              TEXT,
    metadata           TEXT,                   -- JSON
    status             TEXT NOT NULL,          -- ok | empty | error
    error_kind         TEXT,
    error_message      TEXT,
    text               BLOB,                   -- zstd
    markdown           BLOB,                   -- zstd
    pages              BLOB,                   -- zstd JSON: [[number, start, end, ocr], ...]
    text_chars         INTEGER NOT NULL DEFAULT 0,
    warnings           TEXT,                   -- JSON list
    extractor_version  TEXT,
    first_seen         REAL NOT NULL,
    last_seen          REAL NOT NULL,
    extracted_at       REAL
);
CREATE INDEX items_parent ON items(parent_id);
CREATE INDEX items_sha ON items(sha256);
CREATE INDEX items_status ON items(status, error_kind);

-- Which source produced which item (many-to-many), and in which runs it was seen.
CREATE TABLE provenance (
    item_id    INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    source_id  INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    first_run  INTEGER NOT NULL REFERENCES runs(id),
    last_run   INTEGER NOT NULL REFERENCES runs(id),
    PRIMARY KEY (item_id, source_id)
) WITHOUT ROWID;

-- Full-text index over titles and texts. The texts live compressed in `items`; the index
-- reads them through this view (and the ts_unzstd() function every connection registers)
-- only for snippets, so the archive does not store every text twice.
CREATE VIEW items_fts_content AS
    SELECT id, COALESCE(title, '') AS title, ts_unzstd(text) AS text FROM items;
CREATE VIRTUAL TABLE items_fts USING fts5(
    title, text,
    content = 'items_fts_content', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
"""

# Version 2: HTTP validators for conditional GET on re-runs of URL sources.
_V2 = """
ALTER TABLE items ADD COLUMN etag TEXT;
ALTER TABLE items ADD COLUMN last_modified TEXT;
"""

# Version 3: mail provenance (which mails named which item) and incremental source state
# (IMAP UIDVALIDITY + last UID, Gmail history id).
_V3 = """
CREATE TABLE mails (
    id          INTEGER PRIMARY KEY,
    source_id   INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    message_id  TEXT NOT NULL,
    date        TEXT,
    sender      TEXT,
    subject     TEXT,
    labels      TEXT,               -- JSON list
    uid         TEXT,
    first_run   INTEGER REFERENCES runs(id),
    UNIQUE (source_id, message_id)
);
CREATE TABLE item_mails (
    item_id  INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    mail_id  INTEGER NOT NULL REFERENCES mails(id) ON DELETE CASCADE,
    PRIMARY KEY (item_id, mail_id)
) WITHOUT ROWID;
CREATE INDEX item_mails_mail ON item_mails(mail_id);
CREATE TABLE source_state (
    source_id  INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (source_id, key)
) WITHOUT ROWID;
"""

# Version 4 (enrichment, textsieve.enrich): topic models and each item's topic mixture,
# summaries, keyphrases, related items and near-duplicate groups. Every per-item result
# remembers the ``extracted_at`` of the text it was computed from, so a re-extracted item is
# seen as stale and redone on the next incremental pass, and readers never show a summary
# of an older text.
_V4_ENRICH = """
CREATE TABLE topic_models (
    id          INTEGER PRIMARY KEY,
    created     REAL NOT NULL,
    active      INTEGER NOT NULL DEFAULT 1,   -- the one new items are placed in
    k           INTEGER NOT NULL,
    params      TEXT NOT NULL DEFAULT '{}',   -- JSON: filter, chosen k, coherence by k
    vocabulary  BLOB NOT NULL,                -- zstd JSON list of terms
    idf         BLOB NOT NULL,                -- zstd float32 array, one per term
    components  BLOB NOT NULL                 -- zstd float32 array, k x terms (NMF H)
);
CREATE TABLE topics (
    model_id  INTEGER NOT NULL REFERENCES topic_models(id) ON DELETE CASCADE,
    topic     INTEGER NOT NULL,
    label     TEXT NOT NULL,
    terms     TEXT NOT NULL,                  -- JSON list of [term, weight]
    coherence REAL,                           -- NPMI of the top terms
    PRIMARY KEY (model_id, topic)
) WITHOUT ROWID;
CREATE TABLE item_topics (
    item_id   INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    model_id  INTEGER NOT NULL REFERENCES topic_models(id) ON DELETE CASCADE,
    topic     INTEGER NOT NULL,
    weight    REAL NOT NULL,                  -- share of the item's mixture (sums to 1)
    PRIMARY KEY (item_id, model_id, topic)
) WITHOUT ROWID;
CREATE INDEX item_topics_topic ON item_topics(model_id, topic, weight);
CREATE TABLE enrichment (
    item_id       INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
    extracted_at  REAL,                       -- of the text the results below come from
    topic_model   INTEGER,                    -- model the item was placed in
    summary       TEXT,
    keyphrases    TEXT,                       -- JSON list of [phrase, score]
    minhash       BLOB,                       -- near-duplicate signature
    dup_group     INTEGER,                    -- smallest item id of its near-duplicate group
    related_done  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX enrichment_dup ON enrichment(dup_group);
CREATE TABLE related (
    item_id   INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    other_id  INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    score     REAL NOT NULL,
    PRIMARY KEY (item_id, other_id)
) WITHOUT ROWID;
"""

# Version 5: what the reading room filters, sorts and counts by, indexed so its pages stay
# fast on 100,000 items. A scan of `items` reads every compressed text (the rows hold them),
# so site, language and publication date are virtual generated columns (computed, not
# stored; not listed by table_info, so copies by column name skip them) with indexes, as
# are type, first seen and mail dates. json_valid() first: a damaged metadata cell must
# not make its row unwritable.
_V5_UI = """
ALTER TABLE items ADD COLUMN site TEXT GENERATED ALWAYS AS (
    CASE WHEN substr(key, 1, 4) = 'http' AND instr(key, '://') BETWEEN 5 AND 6
    THEN substr(substr(key, instr(key, '://') + 3), 1,
                instr(substr(key, instr(key, '://') + 3) || '/', '/') - 1) END) VIRTUAL;
ALTER TABLE items ADD COLUMN language TEXT GENERATED ALWAYS AS (
    CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.language') END) VIRTUAL;
ALTER TABLE items ADD COLUMN published TEXT GENERATED ALWAYS AS (
    CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.created') END) VIRTUAL;
CREATE INDEX items_site ON items(site, status);
CREATE INDEX items_language ON items(language);
CREATE INDEX items_published ON items(published);
CREATE INDEX items_type ON items(mime_type);
CREATE INDEX items_first_seen ON items(first_seen);
CREATE INDEX mails_date ON mails(date);
"""

# Version 6: archives made before the credential fix can hold ``user:secret@`` in keys,
# originals, specs and metadata; scrubbed, colliding rows merged, the FTS entries redone
# (the step is ``credentials.scrub_credentials``).

# Version 7 (enrichment at scale): each item's related-items vector, kept so that adding
# items vectorises only them, never the archive again. The vector is the item's TF-IDF over
# the topic model's vocabulary, pruned to its strongest terms: little-endian uint32 term
# ids, then as many float32 weights (unit length). ``vector_model`` is the topic model
# whose vocabulary it uses; vectors of another model are recomputed. The near-duplicate
# LSH buckets are stored too (one row per band of a signature), so a new item finds its
# candidates by lookup instead of a rebuild of the index from every stored signature.
# ``items_enrich`` covers what picks enrichment's candidates and finds re-extracted items
# (those columns sit after the compressed texts in a row: without it, every pass read
# the whole archive, texts and all, to look at them).
_V7_ENRICH_SCALE = """
ALTER TABLE enrichment ADD COLUMN vector BLOB;
ALTER TABLE enrichment ADD COLUMN vector_model INTEGER;
CREATE TABLE minhash_bands (
    band     INTEGER NOT NULL,
    bucket   INTEGER NOT NULL,               -- 63-bit hash of the band's values
    item_id  INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    PRIMARY KEY (band, bucket, item_id)
) WITHOUT ROWID;
CREATE INDEX minhash_bands_item ON minhash_bands(item_id);
CREATE INDEX items_enrich ON items(status, text_chars, extracted_at);
"""

# Version 8: the archive is the record of what was read. An item (the thing read) has
# captures: each time its bytes were received (a fetch, a WARC record, a file that changed),
# with the response's facts, the original bytes (content-addressed in ``originals``, when
# kept) and the text made from them. The item's row holds its current capture's text (the
# one searched); earlier captures keep theirs in their own row. ``checks`` is the state of
# the item's source (last checked, with what outcome, gone since when), apart from its
# content: a failed fetch updates it and never a good capture. Items read before this
# version get one capture each, from what their row says.
_V8_CAPTURES = """
CREATE TABLE originals (
    id       INTEGER PRIMARY KEY,
    sha256   TEXT NOT NULL UNIQUE,       -- of the bytes as received
    size     INTEGER NOT NULL,           -- bytes as received
    stored   INTEGER NOT NULL,           -- bytes kept (zstd)
    data     BLOB,                       -- zstd; NULL: a file in the folder FILE.originals
    created  REAL NOT NULL
);
CREATE TABLE captures (
    id                 INTEGER PRIMARY KEY,
    item_id            INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    current            INTEGER NOT NULL DEFAULT 0,  -- the capture the item's row shows
    kind               TEXT NOT NULL DEFAULT 'capture',  -- capture | degraded
    captured_at        REAL NOT NULL,       -- when the bytes were received
    sha256             TEXT,                -- of the content: what tells captures apart
    original           TEXT,                -- sha256 of the kept original (NULL: not kept)
    url                TEXT,                -- where the bytes came from (after redirects)
    http_status        INTEGER,
    content_type       TEXT,                -- as served, charset included
    http_date          TEXT,                -- the response's Date header
    etag               TEXT,
    last_modified      TEXT,
    source             TEXT,                -- e.g. the WARC file and record it came from
    title              TEXT,
    status             TEXT NOT NULL,
    text_chars         INTEGER NOT NULL DEFAULT 0,
    extractor_version  TEXT,
    extracted_at       REAL,
    text               BLOB,                -- zstd; NULL for the current capture (in items)
    markdown           BLOB
);
CREATE INDEX captures_item ON captures(item_id, captured_at);
CREATE UNIQUE INDEX captures_current ON captures(item_id) WHERE current;
CREATE INDEX captures_original ON captures(original);
CREATE TABLE checks (
    item_id        INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
    checked_at     REAL NOT NULL,
    http_status    INTEGER,
    error_kind     TEXT,                    -- NULL: the last check succeeded
    error_message  TEXT,
    gone_since     REAL,                    -- first failed check since the last good one
    alive_at       REAL                     -- the last good check
);
CREATE INDEX checks_gone ON checks(gone_since);
INSERT INTO captures (item_id, current, captured_at, sha256, url, http_status, content_type,
                      etag, last_modified, title, status, text_chars, extractor_version,
                      extracted_at)
    SELECT id, 1, coalesce(extracted_at, first_seen), sha256,
           CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.extra.final_url') END,
           CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.extra.http_status') END,
           CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.extra.content_type') END,
           etag, last_modified, title, status, text_chars, extractor_version, extracted_at
    FROM items WHERE parent_id IS NULL AND status != 'error';
"""

# Version 9: labels are one kind, whatever gave them: Gmail labels, IMAP folders, bookmark
# folders and tags, feed names. ``item_labels`` holds each item's labels per source (a
# list source replaces its set each time it lists the item; mails add theirs), so search,
# exports and the reading room filter by one table. What a list of links says of an item
# (a bookmark's title, note and date) is provenance: columns of ``provenance``, kept when
# a fetch later replaces the item's text and title. Mail labels archived before are copied.
_V9_LABELS = """
CREATE TABLE item_labels (
    item_id    INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    source_id  INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    label      TEXT NOT NULL,
    PRIMARY KEY (item_id, source_id, label)
) WITHOUT ROWID;
CREATE INDEX item_labels_label ON item_labels(label COLLATE NOCASE, item_id);
ALTER TABLE provenance ADD COLUMN title TEXT;
ALTER TABLE provenance ADD COLUMN note TEXT;
ALTER TABLE provenance ADD COLUMN listed TEXT;
INSERT OR IGNORE INTO item_labels (item_id, source_id, label)
    SELECT im.item_id, m.source_id, l.value
    FROM item_mails im JOIN mails m ON m.id = im.mail_id,
         json_each(CASE WHEN json_valid(m.labels) THEN m.labels ELSE '[]' END) l
    WHERE l.type = 'text' AND l.value != '';
"""

# Version 10: a check keeps the address it asked. An item's source may move (a feed entry
# revised to another link stays its item): a fetch that failed there is owed there, not at
# the address of the item's last good capture (``run.retry.owed``).
_V10_CHECK_URL = """
ALTER TABLE checks ADD COLUMN url TEXT;
"""

# Version 11: what a source told of an item beyond its listing (a feed entry's id, its feed,
# whether the feed's own content was kept: ``Item.facts``) is provenance too, kept per item
# and source, so every later capture of the item says it (a retry, ``reextract``, a fetch
# of the bare link), not only the one made while the source listed it. Archived items take
# theirs from the current capture's ``metadata.extra`` (the feed's keys), for the rows of
# the feed named there (``feed:`` and its ``feed``) or of the OPML list that gave it.
_V11_FACTS = """
ALTER TABLE provenance ADD COLUMN facts TEXT;
UPDATE provenance SET facts = (
    SELECT json_group_object(e.key, CASE WHEN e.type IN ('object', 'array')
                                         THEN json(e.value) ELSE e.value END)
    FROM items i, json_each(i.metadata, '$.extra') e
    WHERE i.id = provenance.item_id AND (e.key = 'feed' OR e.key LIKE 'feed\\_%' ESCAPE '\\'))
WHERE item_id IN (SELECT id FROM items WHERE json_valid(metadata)
                  AND json_extract(metadata, '$.extra.feed') IS NOT NULL)
  AND source_id IN (SELECT s.id FROM sources s, items i WHERE i.id = provenance.item_id
                    AND json_valid(i.metadata) AND (s.spec LIKE 'opml:%'
                    OR s.spec = 'feed:' || json_extract(i.metadata, '$.extra.feed')));
"""

MIGRATIONS: list[str | Callable[[sqlite3.Connection], None]] = [
    _V1, _V2, _V3, _V4_ENRICH, _V5_UI, scrub_credentials, _V7_ENRICH_SCALE, _V8_CAPTURES,
    _V9_LABELS, _V10_CHECK_URL, _V11_FACTS]
VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection, target: int = VERSION) -> int:
    """Bring the schema up to ``target``; returns the version it started from."""
    start = conn.execute("PRAGMA user_version").fetchone()[0]
    for version in range(start + 1, target + 1):
        step = MIGRATIONS[version - 1]
        conn.execute("BEGIN IMMEDIATE")  # one transaction per step: a crash leaves a
        try:  # consistent version behind
            if callable(step):
                step(conn)
            else:
                for stmt in _statements(step):
                    conn.execute(stmt)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {version}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return start


def _statements(script: str) -> list[str]:
    """Split a DDL script into complete statements, as SQLite itself judges them."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
