#!/usr/bin/env python3
"""Cuts the committed corpus extracts (fixtures/books/<name>/) out of the local git mirrors.

Every extract is an unpacked EPUB tree. Files are copied byte for byte from the mirror at a
pinned commit; the content documents, the package document and the navigation are trimmed by
cutting whole lines (each cut removes whole elements, so the markup that remains is the
book's own), and a few literal replacements fix what the cuts leave dangling (the manifest,
the spine, the nav). SOURCE.md and EXPECTED.md are hand-written and not touched here.

Usage: scripts/corpus/extract.py [name...]   (no names: every extract)
"""

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

MIRRORS = os.environ.get("MIRRORS", "/work/.mirror")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "fixtures", "books")

IDPF = ("IDPF+epub3-samples", "7651e2002b631e6577fadf7e9e0692fa6efb8746")
SE_MOBY = ("standardebooks+herman-melville_moby-dick", "f6a255003170e113bb80a33cad230154af4caef8")
SE_LEAVES = (
    "standardebooks+walt-whitman_leaves-of-grass",
    "90dcc864bfee88a8533d6994e3d2f01c8e986101",
)


def show(mirror, path):
    repo, commit = mirror
    git = os.path.join(MIRRORS, repo, "repo")
    return subprocess.run(
        ["git", "-C", git, "show", f"{commit}:{path}"], check=True, capture_output=True
    ).stdout


def keep(data, ranges):
    """The lines of `data` in the 1-based inclusive `ranges` (`None`: to the end), line
    endings kept."""
    lines = data.splitlines(keepends=True)
    out = []
    for a, b in ranges:
        b = len(lines) if b is None else b
        assert 1 <= a <= b <= len(lines), (a, b, len(lines))
        out.extend(lines[a - 1 : b])
    return b"".join(out)


def replace(data, pairs):
    for old, new in pairs:
        assert data.count(old) == 1, old
        data = data.replace(old, new)
    return data


def drop(data, pred):
    """`data` without the lines for which `pred(line)` holds (line as text, ending kept)."""
    lines = data.splitlines(keepends=True)
    return b"".join(l for l in lines if not pred(l.decode("utf-8")))


def attr(line, name):
    m = re.search(rf'\b{name}="([^"]*)"', line)
    return m and m.group(1)


def manifest_only(opf, hrefs):
    """The package document with only the manifest items in `hrefs` (one item or itemref a
    line) and the spine's itemrefs to them."""
    ids = set()
    for line in opf.decode("utf-8").splitlines():
        if "<item " in line and attr(line, "href") in hrefs:
            ids.add(attr(line, "id"))
    missing = set(hrefs) - {
        attr(l, "href") for l in opf.decode("utf-8").splitlines() if "<item " in l
    }
    assert not missing, missing
    return drop(
        opf,
        lambda l: ("<item " in l and attr(l, "href") not in hrefs)
        or ("<itemref " in l and attr(l, "idref") not in ids),
    )


def nav_only(nav, files):
    """The nav document without the three-line `<li>`/`<a href>`/`</li>` entries whose file is
    not in `files`."""
    lines = nav.splitlines(keepends=True)
    out, i = [], 0
    while i < len(lines):
        a = lines[i].decode("utf-8").strip()
        if a == "<li>" and i + 2 < len(lines) and lines[i + 2].decode("utf-8").strip() == "</li>":
            href = attr(lines[i + 1].decode("utf-8"), "href")
            if href and href.split("#")[0] not in files:
                i += 3
                continue
        out.append(lines[i])
        i += 1
    return b"".join(out)


def nav_keep(nav, keep_href):
    """The nav document without the `<li>` entries (one tag a line, as Standard Ebooks writes
    them) whose `href` fails `keep_href` and that hold no kept entry; an `<ol>` left empty goes
    with them."""
    lines = nav.splitlines(keepends=True)
    text = [l.decode("utf-8").strip() for l in lines]
    dropped = [False] * len(lines)

    def block(i, opener, closer):
        """The index of the line closing the block that opens at line i."""
        depth = 0
        for j in range(i, len(lines)):
            if text[j].startswith(opener):
                depth += 1
            elif text[j] == closer:
                depth -= 1
                if depth == 0:
                    return j
        raise ValueError(i)

    def visit(i):
        """Whether the `<li>` at line i keeps; drops it (and its lines) when not."""
        end = block(i, "<li", "</li>")
        kept = False
        j = i + 1
        while j < end:
            if text[j].startswith("<li"):
                kept |= visit(j)
                j = block(j, "<li", "</li>") + 1
                continue
            href = attr(text[j], "href")
            if href is not None and j == i + 1 and keep_href(href):
                kept = True
            j += 1
        if not kept:
            for k in range(i, end + 1):
                dropped[k] = True
        return kept

    i = 0
    while i < len(lines):
        if text[i].startswith("<li"):
            visit(i)
            i = block(i, "<li", "</li>") + 1
        else:
            i += 1
    # An <ol> whose entries all went.
    for i in range(len(lines)):
        if text[i] == "<ol>" and not dropped[i]:
            end = block(i, "<ol", "</ol>")
            if all(dropped[k] for k in range(i + 1, end)):
                dropped[i] = dropped[end] = True
    return b"".join(l for l, d in zip(lines, dropped) if not d)


def no_img(data):
    """Without the `<img>` lines (images are not carried into the extracts)."""
    return drop(data, lambda l: l.lstrip().startswith("<img "))


def no_css(data):
    """Without the stylesheet `<link>` lines."""
    return drop(data, lambda l: l.lstrip().startswith("<link ") and "stylesheet" in l)


class Book:
    def __init__(self, name, mirror, tree):
        self.name, self.mirror, self.tree = name, mirror, tree
        self.dir = os.path.join(OUT, name)
        for dirpath, _, files in os.walk(self.dir, topdown=False):
            for f in files:
                if f not in ("SOURCE.md", "EXPECTED.md"):
                    os.remove(os.path.join(dirpath, f))
            if dirpath != self.dir and not os.listdir(dirpath):
                os.rmdir(dirpath)
        os.makedirs(self.dir, exist_ok=True)

    def src(self, path):
        return show(self.mirror, f"{self.tree}/{path}")

    def put(self, path, data=None, keep_ranges=None, subs=()):
        if data is None:
            data = self.src(path)
        if keep_ranges is not None:
            data = keep(data, keep_ranges)
        data = replace(data, subs)
        if path.endswith((".xhtml", ".opf", ".ncx", ".xml", ".pls", ".svg")):
            try:
                ET.fromstring(data)  # the cuts must leave well-formed XML
            except ET.ParseError as e:
                sys.exit(f"{self.name}/{path}: {e}")
        dest = os.path.join(self.dir, path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(data)

    def copy(self, *paths):
        for p in paths:
            self.put(p)


def wasteland():
    b = Book("wasteland", IDPF, "30/wasteland")
    b.copy("mimetype", "META-INF/container.xml", "EPUB/wasteland.css", "EPUB/wasteland-night.css")
    # The cover image is dropped (with its manifest item and the metadata that refines it).
    b.put("EPUB/wasteland.opf", keep_ranges=[(1, 13), (19, 22), (24, None)])
    # Nav and NCX: part I and the notes remain.
    b.put("EPUB/wasteland-nav.xhtml", keep_ranges=[(1, 13), (18, None)])
    b.put("EPUB/wasteland.ncx", keep_ranges=[(1, 17), (42, None)])
    # Front matter; part I's first two line groups (lines 1-42, note markers 1-4, line
    # numbers 10-40); the end of the body matter; the notes' preface and notes 1-4.
    b.put(
        "EPUB/wasteland-content.xhtml",
        keep_ranges=[(1, 95), (152, 152), (741, 769), (812, 812), (1060, None)],
    )


def childrens_literature():
    b = Book("childrens-literature", IDPF, "30/childrens-literature")
    b.copy("mimetype", "META-INF/container.xml", "EPUB/css/epub.css", "EPUB/css/nav.css")
    # The cover page (an image only) and its image are dropped.
    b.put("EPUB/package.opf", keep_ranges=[(1, 32), (34, 35), (37, 41), (43, None)])
    # The nav (in the spine!): Section IV, Bibliography, Introductory, story 190 with the
    # first of its hidden sub-entries; landmarks; page list 169-175; the nav's script.
    b.put("EPUB/nav.xhtml", keep_ranges=[(1, 33), (49, 52), (135, 169), (425, None)])
    b.put("EPUB/toc.ncx", keep_ranges=[(1, 42), (61, 61), (154, 201), (712, None)])
    # Section IV's heading (page 169), three bibliography entries (page 170), the
    # introduction's first paragraph (page 171) and two with a page break mid-sentence (172,
    # 173), story 190's introduction (page 174) and its first sub-story (page 175 mid-sentence).
    b.put(
        "EPUB/s04.xhtml",
        keep_ranges=[
            (1, 22), (66, 83), (109, 129), (158, 183), (200, 263), (402, 403), (4746, None)
        ],
    )


def moby_dick_se():
    b = Book("moby-dick-se", SE_MOBY, "src")
    b.copy("mimetype", "META-INF/container.xml")
    texts = [
        "titlepage", "imprint", "dedication", "etymology", "extracts", "halftitlepage",
        "chapter-1", "chapter-24", "endnotes", "colophon", "uncopyright",
    ]
    hrefs = ["toc.xhtml"] + [f"text/{t}.xhtml" for t in texts]
    opf = manifest_only(b.src("epub/content.opf"), hrefs)
    # Metadata: the subjects, collections and long description are cut.
    lines = opf.splitlines(keepends=True)
    first = next(i for i, l in enumerate(lines) if b"<dc:subject" in l)
    last = next(i for i, l in enumerate(lines) if b"<dc:language>" in l)
    opf = b"".join(lines[:first] + lines[last:])
    # Without their images the title page, imprint and colophon hold no SVG.
    opf = opf.replace(b' properties="svg"', b"")
    b.put("epub/content.opf", opf)
    b.put("epub/toc.xhtml", nav_only(b.src("epub/toc.xhtml"), hrefs))
    whole = ["titlepage", "imprint", "dedication", "etymology", "halftitlepage", "colophon",
             "uncopyright"]
    for t in whole:
        b.put(f"epub/text/{t}.xhtml", no_css(no_img(b.src(f"epub/text/{t}.xhtml"))))
    cut = {
        # The preamble, the first three extracts, the first verse one, the last song.
        "extracts": [(1, 31), (84, 97), (482, None)],
        # The opening three paragraphs.
        "chapter-1": [(1, 16), (35, None)],
        # The heading and the paragraph with the chapter's note reference.
        "chapter-24": [(1, 13), (32, 32), (36, None)],
        # Note 1.
        "endnotes": [(1, 14), (None, None)],
    }
    for t, ranges in cut.items():
        data = b.src(f"epub/text/{t}.xhtml")
        if t == "endnotes":
            n = len(data.splitlines())
            ranges = [(1, 14), (n - 3, None)]
        b.put(f"epub/text/{t}.xhtml", no_css(keep(data, ranges)))


def moby_dick_idpf():
    b = Book("moby-dick-idpf", IDPF, "30/moby-dick")
    b.copy("mimetype", "META-INF/container.xml")
    # The stylesheet without its @font-face rules (the fonts are not carried).
    b.put("OPS/css/stylesheet.css", keep_ranges=[(1, 1), (29, None)])
    # Manifest: nav, copyright, title page, preface, introduction, chapter 1, brief toc (CSS; fonts,
    # images, the cover page, the epigraph and chapters 2-136 cut); spine to match.
    b.put(
        "OPS/package.opf",
        keep_ranges=[(1, 19), (28, 30), (34, 34), (37, 38), (40, 40), (176, 183), (185, 188), (190, 190),
                     (326, None)],
    )
    # The nav: title page, preface, introduction, chapter 1, copyright; landmarks less the
    # cover.
    b.put("OPS/toc.xhtml", (keep(b.src("OPS/toc.xhtml"),
                                       [(1, 23), (27, 29), (435, 443), (447, None)])))
    b.put("OPS/toc-short.xhtml", (keep(b.src("OPS/toc-short.xhtml"), [(1, 29), (33, None)])))
    for t in ["titlepage", "preface_001", "introduction_001", "copyright"]:
        b.put(f"OPS/{t}.xhtml", (no_img(b.src(f"OPS/{t}.xhtml"))))
    # Chapter 1: the heading, two paragraphs, the "playbill" block.
    b.put("OPS/chapter_001.xhtml", (keep(b.src("OPS/chapter_001.xhtml"),
                                               [(1, 16), (27, 30), (34, None)])))


def leaves_of_grass_se():
    b = Book("leaves-of-grass-se", SE_LEAVES, "src")
    b.copy("mimetype", "META-INF/container.xml")
    texts = [
        "titlepage", "imprint", "epigraph", "halftitlepage", "inscriptions", "song-of-myself",
        "uncopyright",
    ]
    hrefs = ["toc.xhtml"] + [f"text/{t}.xhtml" for t in texts]
    anchors = {
        "ones-self-i-sing", "as-i-ponderd-in-silence", "to-foreign-lands",
        "song-of-myself-1", "song-of-myself-2",
    }
    opf = manifest_only(b.src("epub/content.opf"), hrefs)
    lines = opf.splitlines(keepends=True)
    first = next(i for i, l in enumerate(lines) if b"<dc:subject" in l)
    last = next(i for i, l in enumerate(lines) if b"<dc:language>" in l)
    opf = b"".join(lines[:first] + lines[last:]).replace(b' properties="svg"', b"")
    b.put("epub/content.opf", opf)

    def keep_href(href):
        file, _, frag = href.partition("#")
        return file in hrefs and (not frag or frag in anchors)

    b.put("epub/toc.xhtml", nav_keep(b.src("epub/toc.xhtml"), keep_href))
    for t in ["titlepage", "imprint", "halftitlepage", "uncopyright"]:
        b.put(f"epub/text/{t}.xhtml", no_css(no_img(b.src(f"epub/text/{t}.xhtml"))))
    # The epigraph less its last paragraph, the signature as an image (alt "Walt Whitman.").
    epigraph = b.src("epub/text/epigraph.xhtml")
    n = len(epigraph.splitlines())
    b.put("epub/text/epigraph.xhtml", no_css(keep(epigraph, [(1, n - 9), (n - 3, None)])))
    # Inscriptions: its first two poems and "To Foreign Lands".
    ins = b.src("epub/text/inscriptions.xhtml")
    n = len(ins.splitlines())
    b.put("epub/text/inscriptions.xhtml", no_css(keep(ins, [(1, 91), (160, 169), (n - 2, None)])))
    # Song of Myself: its parts 1 and 2.
    som = b.src("epub/text/song-of-myself.xhtml")
    n = len(som.splitlines())
    b.put("epub/text/song-of-myself.xhtml", no_css(keep(som, [(1, 99), (n - 2, None)])))


def accessible_epub_3():
    b = Book("accessible-epub-3", IDPF, "30/accessible_epub_3")
    b.copy("mimetype", "META-INF/container.xml")
    hrefs = ["bk01-toc.xhtml", "index.xhtml", "ch02.xhtml", "ch02s03.xhtml", "ch04.xhtml"]
    b.put("EPUB/package.opf", manifest_only(b.src("EPUB/package.opf"), hrefs))
    # The nav: chapter 2 with its metadata section, chapter 4 with its sections; no
    # landmarks (they named only the cover).
    b.put("EPUB/bk01-toc.xhtml", no_css(keep(b.src("EPUB/bk01-toc.xhtml"),
                                             [(1, 13), (29, 30), (51, 53), (85, 95), (102, None)])))
    # The title and copyright page, with no epub:type at all (and in no toc entry).
    b.put("EPUB/index.xhtml", no_css(b.src("EPUB/index.xhtml")))
    # Chapter 2: its opening, and its "Page Numbering" section (markup examples in <pre>).
    b.put("EPUB/ch02.xhtml", no_css(keep(b.src("EPUB/ch02.xhtml"),
                                         [(1, 20), (980, 1006), (1028, 1028), (1030, None)])))
    # The metadata section: <pre class="screen"> listings and inline <code>, a note aside, a list.
    b.put("EPUB/ch02s03.xhtml", no_css(keep(b.src("EPUB/ch02s03.xhtml"),
                                            [(1, 31), (41, 88), (146, None)])))
    # Chapter 4's end: a one-cell layout table, a figure (its 1 MB image cut), a list.
    b.put("EPUB/ch04.xhtml", no_css(no_img(keep(b.src("EPUB/ch04.xhtml"), [(1, 11), (26, None)]))))


def sous_le_vent():
    b = Book("sous-le-vent", IDPF, "30/sous-le-vent")
    b.copy("mimetype", "META-INF/container.xml", "EPUB/Navigation/toc.ncx")
    pages = ["Content/pageNum-4.xhtml", "Content/pageNum-9.xhtml", "Content/pageNum-11.xhtml"]
    hrefs = ["Navigation/nav.xhtml", "Navigation/toc.ncx"] + pages
    opf = manifest_only(b.src("EPUB/package.opf"), hrefs)
    # The cover image is not carried: its <meta name="cover"> goes too.
    opf = drop(opf, lambda l: '<meta name="cover"' in l)
    b.put("EPUB/package.opf", opf)
    b.put("EPUB/Navigation/nav.xhtml", no_css(b.src("EPUB/Navigation/nav.xhtml")))
    # Whole pages (each page's SVG is one line): the copyright page, the chapter number
    # page, the first page of text. The stylesheet (fonts only) is not carried.
    for p in pages:
        b.put(f"EPUB/{p}", no_css(b.src(f"EPUB/{p}")))


def kusamakura_japanese():
    b = Book("kusamakura-japanese", IDPF, "30/kusamakura-japanese-vertical-writing")
    b.copy("mimetype", "META-INF/container.xml", "OPS/meta/底本.xmp")
    # Metadata less the media overlays' (durations, the audio's rights and licence); manifest
    # and spine: the cover page, the nav (non-linear, in the spine), chapter 一 (its media
    # overlay dropped: the mirror lacks the audio), the NCX.
    opf = b.src("OPS/package.opf")
    n = len(opf.splitlines())
    opf = keep(opf, [(1, 98), (111, 112), (117, 131), (135, 139), (167, 174), (n - 1, None)])
    b.put("OPS/package.opf", re.sub(rb'\s+media-overlay="[^"]*"', b"", opf))
    # The nav: chapter 一; landmarks: cover, toc, body matter.
    b.put("OPS/xhtml/目次.xhtml", keep_ranges=[(1, 31), (36, 48), (88, 102), (107, None)])
    b.put("OPS/xhtml/toc.ncx", keep_ranges=[(1, 26), (92, None)])
    # The stylesheets are not carried (their <link>s cut in every document).
    # The cover page (its two images cut, one a logo in a paragraph of its own).
    b.put("OPS/xhtml/表紙.xhtml", no_img(keep(b.src("OPS/xhtml/表紙.xhtml"), [(1, 31), (36, 42), (46, None)])))
    # Chapter 一: its first eight paragraphs (ruby, sesame-dot emphasis, spans per sentence).
    ch = b.src("OPS/xhtml/一.xhtml")
    n = len(ch.splitlines())
    b.put("OPS/xhtml/一.xhtml", keep(ch, [(1, 31), (36, 81), (n - 2, None)]))


def regime_anticancer_arabic():
    b = Book("regime-anticancer-arabic", IDPF, "30/regime-anticancer-arabic")
    b.copy("mimetype", "META-INF/container.xml", "EPUB/Style/style.css")
    hrefs = ["Navigation/toc.ncx", "Navigation/nav.xhtml", "Style/style.css",
             "Content/C_content.xhtml"]
    opf = manifest_only(b.src("EPUB/package.opf"), hrefs)
    b.put("EPUB/package.opf", drop(opf, lambda l: '<meta name="cover"' in l))
    # The cover and title pages (full-page images) are cut, with their nav entries.
    b.put("EPUB/Navigation/nav.xhtml", keep_ranges=[(1, 14), (23, 31), (35, None)])
    b.put("EPUB/Navigation/toc.ncx", keep_ranges=[(1, 12), (25, None)],
          subs=[(b'playOrder="3"', b'playOrder="1"')])
    # The chapter's header (two headings), its first section's opening (a footnote reference
    # with no epub:type), the next heading and two paragraphs, the footnotes aside.
    b.put("EPUB/Content/C_content.xhtml", keep_ranges=[(1, 20), (42, 44), (159, None)])


def georgia_pls_ssml():
    b = Book("georgia-pls-ssml", IDPF, "30/georgia-pls-ssml")
    b.copy("mimetype", "META-INF/container.xml", "EPUB/css/epub.css", "EPUB/lexicon/en.pls")
    hrefs = ["nav.xhtml", "georgia.xhtml", "css/epub.css", "lexicon/en.pls"]
    # The cover page and its image, the map image and the NCX are cut.
    opf = manifest_only(b.src("EPUB/package.opf"), hrefs)
    b.put("EPUB/package.opf", opf.replace(b'<spine toc="ncx">', b"<spine>"))
    # The nav: the article and its sections Climate and Soils, Government, History; no
    # landmarks (they named only the cover); page list 752 and 758.
    b.put("EPUB/nav.xhtml", keep_ranges=[(1, 16), (29, 31), (38, 45), (51, 54), (60, None)])
    # The article's opening (ssml:ph on abbreviations and coordinates), a paragraph with a
    # note reference, "Climate and Soils" (a page break mid-sentence), the start of
    # "Government" (a note reference, an epub:type="annotation" aside), "History" cut to its
    # page-break <div> and the "List of Governors" table (note references in cells, ditto
    # marks with ssml:ph), the notes those references point to.
    b.put(
        "EPUB/georgia.xhtml",
        keep_ranges=[
            (1, 17), (19, 25), (55, 57), (59, 59), (64, 64), (74, 75), (91, 114), (490, 496),
            (511, 519), (523, 525), (530, 530), (532, 533), (540, None),
        ],
    )


EXTRACTS = {
    "georgia-pls-ssml": georgia_pls_ssml,
    "regime-anticancer-arabic": regime_anticancer_arabic,
    "kusamakura-japanese": kusamakura_japanese,
    "sous-le-vent": sous_le_vent,
    "accessible-epub-3": accessible_epub_3,
    "leaves-of-grass-se": leaves_of_grass_se,
    "moby-dick-idpf": moby_dick_idpf,
    "moby-dick-se": moby_dick_se,
    "wasteland": wasteland,
    "childrens-literature": childrens_literature,
}

if __name__ == "__main__":
    for name in sys.argv[1:] or EXTRACTS:
        EXTRACTS[name]()
        print(name)
