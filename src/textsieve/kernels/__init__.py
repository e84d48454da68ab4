"""Format kernels: the parsing that several parts of textsieve share, in one public place.

An HTML tree and what a browser hides in it (``html``), MIME messages and mboxes
(``mime``), OLE2 compound files (``ole``), safe XML and guarded ZIP members (``xml``),
equations as linear text (``equations``). Extractors, link harvesting, mail sources and
web-page reading all import them from here, never from one another: a kernel knows no
extractor, no source and no page reader, only the data model below it.
"""
