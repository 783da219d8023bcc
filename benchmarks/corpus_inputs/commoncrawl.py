"""Common Crawl WARC and WET files of any size, with the page structure and boilerplate of real crawls.

    python -m benchmarks.corpus_inputs.commoncrawl --out /tmp/cc --size-mb 200 --kind wet

``write_commoncrawl(directory, size_bytes, kind, seed)`` writes files named and laid out like one
crawl's segment (``CC-MAIN-<timestamp>-<n>.warc.gz`` / ``.warc.wet.gz``) until their gzip bytes
reach ``size_bytes`` (each file about ``file_bytes``, default 32 MB). The same arguments give
the same bytes on every machine: record ids are UUID5 of the file name and record number, dates
count up from a fixed start, every choice comes from ``random.Random`` seeded by strings, and
warcio writes one gzip member per record with gzip mtime 0.

What is in them, and where each figure comes from:

* **Text**: every sentence is real public-domain prose (:mod:`sources.samples.prose`, the
  Project Gutenberg excerpts shipped with the package, so no network and no ``../shared`` is
  needed). A paragraph is 2-6 sentences of one language drawn at random, so paragraphs (the
  lines that cc_net's dedup hashes) do not repeat unless a duplicate is planted, and no text is
  tiled. Page length is log-normal (median 2.4 KB of main text, capped at 40 KB).
* **Languages**: a host has one language; hosts are English with probability 0.46 (English is
  43-46% of the pages of the 2023 crawls in Common Crawl's language statistics,
  commoncrawl.github.io/cc-crawl-statistics, "languages"); the other 54% are spread over the
  shipped German, French, Spanish and Dutch (weights 0.35/0.25/0.25/0.15 of the rest), which
  stand in for every other language: language ID drops them all alike.
* **Hosts and site chrome**: host sizes follow a Zipf law (exponent 0.6, so that the largest
  host of a 100 MB file holds about 2% of its pages: Common Crawl caps pages per host) over a
  pool of ``pages / 8`` hosts, pages in crawl order (hosts interleaved). Every page of a host repeats the
  host's chrome: header, a navigation menu of 6-30 items, breadcrumb, cookie banner, sidebar
  (recent posts, tags, archive months), newsletter box, footer columns and copyright; in the WET
  text these are lines of their own, as Common Crawl's WET extraction prints every text block.
  This is the text cc_net's paragraph dedup removes (its paper, Wenzek et al. 2019 §3.2: menus,
  cookie warnings and contact details repeated across pages). HTML pages also carry what real
  pages carry around the text: inline CSS and JavaScript, JSON-LD, meta tags, SVG icons, menus
  with sub-menus, paragraphs inside wrapper divs with links and emphasis, readers' comments on
  40% of pages. Sized to the real pages in ``../shared/realdata/warc``: mean response 30 KB and
  gzip ratio 3.7 per record (the CC-MAIN-2020-34 sample: 32 KB, 4.05), ~360 elements a page
  (real: 220-340), and trafilatura extracts 2.4 MB of it per CPU-second (real: 1.8-2.2).
* **Duplicates**: 3% of pages are an exact copy of an earlier page of the same host under another
  URL (tracking parameters, print views); 11% are a near copy of an earlier page (another host's
  reprint: paragraphs joined in pairs, a few words changed). Together 14%: the low end of the
  14-52% near-duplicate documents within one crawl that Fröbe et al. measured on two Common Crawl
  snapshots (ChatNoir-CopyCat-21, 2021).
* **Other records** (WARC only): 1% of responses are PDFs (``not_html``); 3% of Latin-script
  pages are served as windows-1252 with a ``<meta charset>`` (Common Crawl's charset statistics
  put UTF-8 above 90% of HTML pages); each capture is ``request``, ``response`` and ``metadata``
  records, as in Common Crawl's WARC files. WET files hold one ``conversion`` record per HTML
  page, with ``WARC-Refers-To`` and ``WARC-Identified-Content-Language``.
"""

from __future__ import annotations

import argparse
import bisect
import io
import itertools
import math
import random
import re
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from html import escape
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from sources.samples import prose

CRAWL = "CC-MAIN-2023-06"
SEGMENT = "CC-MAIN-20230127143940-20230127173940"
KINDS = ("warc", "wet")
SUFFIX = {"warc": ".warc.gz", "wet": ".warc.wet.gz"}
NAMESPACE = uuid.UUID("0b6f2a8e-3f0c-4c59-9a55-7d0c1e3b2a41")
START = datetime(2023, 1, 27, 14, 39, 40, tzinfo=UTC)
DEFAULT_FILE_BYTES = 32 * 1024 * 1024
#: Share of hosts per language (module docstring: Common Crawl's language statistics).
LANGUAGE_WEIGHTS = {"en": 0.46, "de": 0.54 * 0.35, "fr": 0.54 * 0.25, "es": 0.54 * 0.25, "nl": 0.54 * 0.15}
EXACT_COPY_RATE = 0.03
NEAR_COPY_RATE = 0.11
PDF_RATE = 0.01
LEGACY_CHARSET_RATE = 0.03
PAGES_PER_HOST = 8
#: Share of pages with readers' comments under the article (1-8 of them).
COMMENTED_PAGES = 0.4
#: Pages remembered per host and per language, for planted copies (bounded memory at any size).
RECENT_PAGES = 50
ZIPF_EXPONENT = 0.6
#: Log-normal main-text length: median exp(MU) characters, capped.
TEXT_MU, TEXT_SIGMA, TEXT_MAX = math.log(2400), 0.9, 40_000
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[\"'«¿¡(]?[A-ZÀ-ÖØ-Þ])")

#: Boilerplate each language's sites carry (cookie banners, newsletter boxes, footers): the
#: phrasings of real consent banners and site footers, one per language.
CHROME = {
    "en": ("We use cookies to personalise content and ads and to analyse our traffic. By clicking "
           "Accept you consent to our use of cookies.", "Accept", "Manage settings",
           "Sign up for our newsletter and get the latest stories in your inbox every week.", "Subscribe",
           "All rights reserved.", ["Home", "News", "Features", "Reviews", "Opinion", "Culture", "Travel",
                                    "Books", "Science", "Sport", "About us", "Contact", "Advertise", "Archive"],
           ["Privacy policy", "Terms of use", "Cookie settings", "Imprint", "Careers", "Help"],
           "Recent posts", "Tags", "Archives", "Share this article", "Read more", "Leave a comment"),
    "de": ("Wir verwenden Cookies, um Inhalte und Anzeigen zu personalisieren und die Zugriffe auf unsere "
           "Website zu analysieren. Mit Klick auf Akzeptieren stimmen Sie zu.", "Akzeptieren",
           "Einstellungen", "Abonnieren Sie unseren Newsletter und erhalten Sie jede Woche die neuesten Beiträge.",
           "Anmelden", "Alle Rechte vorbehalten.", ["Startseite", "Nachrichten", "Themen", "Kultur", "Reisen",
                                                   "Bücher", "Wissen", "Sport", "Über uns", "Kontakt", "Archiv"],
           ["Datenschutz", "Impressum", "Nutzungsbedingungen", "Cookie-Einstellungen", "Hilfe"],
           "Neueste Beiträge", "Schlagwörter", "Archiv", "Artikel teilen", "Weiterlesen", "Kommentar schreiben"),
    "fr": ("Nous utilisons des cookies pour personnaliser le contenu et les annonces et pour analyser notre "
           "trafic. En cliquant sur Accepter, vous consentez à leur utilisation.", "Accepter", "Paramètres",
           "Inscrivez-vous à notre lettre d'information pour recevoir nos articles chaque semaine.", "S'inscrire",
           "Tous droits réservés.", ["Accueil", "Actualités", "Culture", "Voyages", "Livres", "Sciences",
                                     "Sport", "À propos", "Contact", "Archives"],
           ["Politique de confidentialité", "Mentions légales", "Conditions d'utilisation", "Aide"],
           "Articles récents", "Étiquettes", "Archives", "Partager cet article", "Lire la suite",
           "Laisser un commentaire"),
    "es": ("Utilizamos cookies para personalizar el contenido y los anuncios y para analizar nuestro tráfico. "
           "Al hacer clic en Aceptar, consiente su uso.", "Aceptar", "Configuración",
           "Suscríbase a nuestro boletín y reciba cada semana las últimas noticias.", "Suscribirse",
           "Todos los derechos reservados.", ["Inicio", "Noticias", "Cultura", "Viajes", "Libros", "Ciencia",
                                              "Deportes", "Quiénes somos", "Contacto", "Archivo"],
           ["Política de privacidad", "Aviso legal", "Condiciones de uso", "Ayuda"],
           "Entradas recientes", "Etiquetas", "Archivo", "Compartir este artículo", "Leer más",
           "Deja un comentario"),
    "nl": ("Wij gebruiken cookies om inhoud en advertenties te personaliseren en ons verkeer te analyseren. "
           "Door op Accepteren te klikken gaat u hiermee akkoord.", "Accepteren", "Instellingen",
           "Schrijf u in voor onze nieuwsbrief en ontvang elke week de nieuwste verhalen.", "Inschrijven",
           "Alle rechten voorbehouden.", ["Home", "Nieuws", "Cultuur", "Reizen", "Boeken", "Wetenschap",
                                          "Sport", "Over ons", "Contact", "Archief"],
           ["Privacybeleid", "Colofon", "Gebruiksvoorwaarden", "Help"],
           "Recente berichten", "Tags", "Archief", "Deel dit artikel", "Lees meer", "Reageer"),
}
TLDS = {"en": (".com", ".org", ".net", ".co.uk"), "de": (".de", ".at", ".ch"), "fr": (".fr", ".be", ".ca"),
        "es": (".es", ".com.mx", ".com.ar"), "nl": (".nl", ".be")}
_SVG = ('<svg class="icon" viewBox="0 0 24 24" width="24" height="24" aria-hidden="true"><path d="M{a} {b}l{c} '
        '{d}-{e} {a}h{b}v{c}z"/></svg>')


@cache
def sentences(lang: str) -> tuple[str, ...]:
    """Every sentence of the language's shipped prose (paragraphs of prose only, in text order)."""
    out: list[str] = []
    for passage in prose.passages(lang, min_chars=1):
        for paragraph in passage.paragraphs:
            out.extend(s.strip() for s in _SENTENCE_END.split(paragraph) if len(s.strip()) >= 20)
    return tuple(out)


def _words(lang: str, rng: random.Random, count: int) -> str:
    """A headline-like run of ``count`` words of one of the language's sentences."""
    words = rng.choice(sentences(lang)).split()
    start = rng.randrange(max(1, len(words) - count))
    return " ".join(words[start:start + count]).strip(",;:.!?\"'()«»¿¡_-") or "Untitled"


@dataclass
class Host:
    """One site: its language and the chrome every one of its pages repeats."""

    name: str
    lang: str
    nav: list[str]
    footer: list[str]
    tags: list[str]
    months: list[str]
    css: str
    script: str
    theme: str
    titles: list[str] = field(default_factory=list)  # its pages so far (the sidebar's recent posts)
    pages: list[Page] = field(default_factory=list)


@dataclass
class Page:
    """One captured URL: its host, title, main-text blocks (kind, text), and how it is served."""

    host: Host
    url: str
    title: str
    blocks: list[tuple[str, str]]
    date: datetime
    charset: str = "utf-8"
    pdf: bool = False


def make_host(seed: int, index: int) -> Host:
    """Host ``index`` of the crawl: the same for the same seed, whatever else is generated."""
    rng = random.Random(f"cc-host/{seed}/{index}")
    lang = rng.choices(list(LANGUAGE_WEIGHTS), weights=list(LANGUAGE_WEIGHTS.values()))[0]
    chrome = CHROME[lang]
    slug = re.sub(r"[^a-z]+", "-", _words(lang, rng, 2).lower()).strip("-") or "site"
    name = f"{'www.' if rng.random() < 0.6 else ''}{slug[:24]}-{index}{rng.choice(TLDS[lang])}"
    nav = rng.sample(chrome[6], k=min(len(chrome[6]), rng.randint(5, 12)))
    nav += [_words(lang, rng, rng.randint(1, 3)) for _ in range(rng.randint(1, 18))]
    footer = [*rng.sample(chrome[7], k=3), *(_words(lang, rng, 2) for _ in range(rng.randint(2, 8)))]
    tags = [_words(lang, rng, 1) for _ in range(rng.randint(5, 25))]
    months = [f"{2023 - m // 12}-{12 - m % 12:02d}" for m in range(rng.randint(6, 36))]
    theme = rng.choice(("wp", "ghost", "drupal", "custom"))
    css = "".join(f".{theme}-{i}{{margin:0 {rng.randint(0, 40)}px;padding:{rng.randint(0, 24)}px;"
                  f"color:#{rng.randrange(16**6):06x};font-size:{rng.randint(10, 28)}px}}"
                  for i in range(rng.randint(30, 150)))
    script = "".join(f"function f{i}(e){{var t=document.querySelectorAll('.{theme}-{i}');for(var n=0;"
                     f"n<t.length;n++){{t[n].addEventListener('click',function(){{e({rng.randint(0, 999)})}})}}}}"
                     for i in range(rng.randint(10, 60)))
    return Host(name, lang, nav, footer, tags, months, css, script, theme)


class Crawl:
    """The stream of captures: hosts by a Zipf law, pages made of random real sentences."""

    def __init__(self, seed: int, expected_pages: int) -> None:
        self.seed = seed
        self.rng = random.Random(f"cc-crawl/{seed}")
        hosts = max(4, expected_pages // PAGES_PER_HOST)
        self.cumulative = list(itertools.accumulate(1 / (rank + 1) ** ZIPF_EXPONENT for rank in range(hosts)))
        self.hosts: dict[int, Host] = {}
        self.recent: dict[str, list[Page]] = {lang: [] for lang in LANGUAGE_WEIGHTS}  # originals to reprint
        self.count = 0

    def host(self) -> Host:
        index = bisect.bisect(self.cumulative, self.rng.random() * self.cumulative[-1])
        if index not in self.hosts:
            self.hosts[index] = make_host(self.seed, index)
        return self.hosts[index]

    def paragraph(self, lang: str) -> str:
        pool = sentences(lang)
        return " ".join(self.rng.choice(pool) for _ in range(self.rng.randint(2, 6)))

    def blocks(self, lang: str) -> list[tuple[str, str]]:
        """Main text of a new page: paragraphs, with a heading, a list or a quote now and then."""
        rng = self.rng
        target = min(TEXT_MAX, int(rng.lognormvariate(TEXT_MU, TEXT_SIGMA)))
        blocks: list[tuple[str, str]] = []
        size = 0
        while size < target:
            roll = rng.random()
            if roll < 0.08 and blocks:
                block = ("h2", _words(lang, rng, rng.randint(2, 6)))
            elif roll < 0.12:
                block = ("li", "\n".join(_words(lang, rng, rng.randint(3, 9)) for _ in range(rng.randint(3, 7))))
            elif roll < 0.14:
                block = ("blockquote", self.paragraph(lang))
            else:
                block = ("p", self.paragraph(lang))
            blocks.append(block)
            size += len(block[1])
        if rng.random() < COMMENTED_PAGES:
            blocks += [("comment", " ".join(rng.choice(sentences(lang)) for _ in range(rng.randint(1, 3))))
                       for _ in range(rng.randint(1, 8))]
        return blocks

    def next_page(self) -> Page:
        """The next capture: a new page, or a planted exact or near copy (module docstring)."""
        rng, host = self.rng, self.host()
        self.count += 1
        date = START + timedelta(seconds=self.count * 3)
        roll = rng.random()
        earlier = [p for p in host.pages if not p.pdf]
        if roll < EXACT_COPY_RATE and earlier:
            original = rng.choice(earlier)
            suffix = rng.choice(("?utm_source=newsletter", "?print=1", "?amp=1", "?ref=home"))
            return Page(host, original.url + suffix, original.title, original.blocks, date, original.charset)
        if roll < EXACT_COPY_RATE + NEAR_COPY_RATE and self.recent[host.lang]:
            original = rng.choice(self.recent[host.lang])
            return self._keep(Page(host, f"https://{host.name}/reprints/{self.count}.html", original.title,
                                   reprint(original.blocks, rng), date))
        title = _words(host.lang, rng, rng.randint(3, 9))
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "page"
        url = f"https://{host.name}/{date.year}/{rng.randint(1, 12):02d}/{slug}-{self.count}/"
        pdf = rng.random() < PDF_RATE
        charset = "windows-1252" if host.lang != "en" and rng.random() < LEGACY_CHARSET_RATE else "utf-8"
        page = self._keep(Page(host, url, title, self.blocks(host.lang), date, charset, pdf))
        host.titles[:] = [*host.titles[-RECENT_PAGES:], title]
        if not pdf:
            self.recent[host.lang][:] = [*self.recent[host.lang][-RECENT_PAGES:], page]
        return page

    @staticmethod
    def _keep(page: Page) -> Page:
        """Remember the host's last pages (bounded: memory stays flat at any size)."""
        page.host.pages[:] = [*page.host.pages[-RECENT_PAGES:], page]
        return page


def reprint(blocks: list[tuple[str, str]], rng: random.Random) -> list[tuple[str, str]]:
    """Another site's copy: paragraphs joined in pairs (no line repeats), a few words changed."""
    paragraphs = [text for kind, text in blocks if kind == "p"]
    joined = [" ".join(paragraphs[i:i + 2]) for i in range(0, len(paragraphs), 2)] or [blocks[0][1]]
    out = []
    for text in joined:
        words = text.split()
        for _ in range(max(1, len(words) // 200)):
            words[rng.randrange(len(words))] = rng.choice(("this", "that", "a", "one", "the"))
        out.append(("p", " ".join(words)))
    return out


# -- rendering ------------------------------------------------------------------------------
def _chrome_lines(page: Page) -> tuple[list[str], list[str]]:
    """The host's text before and after the main text, as WET prints it (one block per line)."""
    host, chrome = page.host, CHROME[page.host.lang]
    recent = host.titles[-6:-1] if len(host.titles) > 1 else host.titles[:1]
    before = [f"{page.title} | {host.name}", *host.nav, chrome[0], chrome[1], chrome[2],
              f"{chrome[6][0]} » {page.title}", page.title, page.date.strftime("%d.%m.%Y")]
    after = [chrome[11], chrome[3], chrome[4], chrome[8], *recent, chrome[9], " ".join(host.tags), chrome[10],
             *host.months, *host.footer, f"© {page.date.year} {host.name}. {chrome[5]}"]
    return before, after


def wet_text(page: Page) -> str:
    """The page as Common Crawl's WET extraction gives it: every text block on a line of its own."""
    before, after = _chrome_lines(page)
    main = [text for _, text in page.blocks]
    return "\n".join([*before, *main, *after])


def _inline_markup(text: str, rng: random.Random) -> str:
    """A paragraph as CMS editors write it: a link and an emphasis around some of its words."""
    words = [escape(w) for w in text.split(" ")]
    for tag in ("a", "em", "strong")[: rng.randint(0, 3)]:
        start = rng.randrange(len(words))
        end = min(len(words), start + rng.randint(1, 4))
        attrs = f' href="/{rng.randint(1, 9999)}/" rel="noopener"' if tag == "a" else ""
        words[start] = f"<{tag}{attrs}>{words[start]}"
        words[end - 1] = f"{words[end - 1]}</{tag}>"
    return " ".join(words)


def _comments_html(page: Page, rng: random.Random) -> str:
    """Readers' comments: each an article with author card, date link, text and a reply link."""
    items = []
    for number, (kind, text) in enumerate(page.blocks):
        if kind == "comment":
            author = escape(_words(page.host.lang, rng, 2))
            items.append(f'<li id="comment-{number}" class="comment even thread-even depth-1"><article class="comment-body">'
                         f'<footer class="comment-meta"><div class="comment-author vcard"><img alt="" src="/avatar/'
                         f'{number}.png" class="avatar" height="48" width="48"><b class="fn">{author}</b></div>'
                         f'<div class="comment-metadata"><a href="#comment-{number}"><span>{page.date:%d.%m.%Y}'
                         f'</span></a></div></footer><div class="comment-content"><p>{escape(text)}</p></div>'
                         f'<div class="reply"><a class="comment-reply-link" href="#respond">Reply</a></div>'
                         "</article></li>")
    return f'<ol class="comment-list">{"".join(items)}</ol>' if items else ""


def _main_html(page: Page, rng: random.Random) -> str:
    parts = []
    for kind, text in page.blocks:
        if kind == "comment":
            continue
        if kind == "li":
            items = "".join(f"<li>{escape(item)}</li>" for item in text.split("\n"))
            parts.append(f"<ul class=\"wp-block-list\">{items}</ul>")
        elif kind == "blockquote":
            parts.append(f"<blockquote class=\"wp-block-quote\"><p>{escape(text)}</p></blockquote>")
        elif kind == "p":
            parts.append(f'<div class="wp-block-group"><div class="wp-block-group__inner-container"><p>'
                         f"{_inline_markup(text, rng)}</p></div></div>")
        else:
            parts.append(f"<{kind}>{escape(text)}</{kind}>")
    return "\n".join(parts)


def _submenu(host: Host, index: int) -> str:
    """Every third menu item opens a sub-menu of tags (a mega menu, as CMS themes print it)."""
    if index % 3:
        return ""
    items = host.tags[index % len(host.tags):][:6]
    links = "".join(f'<li class="menu-item"><a href="/{index}/{n}/"><span>{escape(t)}</span></a></li>'
                    for n, t in enumerate(items))
    return f'<ul class="sub-menu">{links}</ul>'


def html_page(page: Page, rng: random.Random) -> str:
    """A CMS page: head with meta, CSS, JSON-LD and scripts; header, menu, banner; article; sidebar; footer."""
    host, chrome = page.host, CHROME[page.host.lang]
    theme, lang = host.theme, host.lang
    recent = host.titles[-6:-1] if len(host.titles) > 1 else host.titles[:1]
    nav = "".join(f'<li class="menu-item menu-item-{i}"><a href="/{i}/">{escape(item)}</a>'
                  f'{_SVG.format(a=i, b=i + 2, c=i + 4, d=i + 1, e=i + 3)}{_submenu(host, i)}</li>'
                  for i, item in enumerate(host.nav))
    links = "".join(f'<li><a href="/post/{i}/">{escape(t)}</a></li>' for i, t in enumerate(recent))
    tags = "".join(f'<a class="tag-cloud-link tag-link-{i}" href="/tag/{i}/" style="font-size:{8 + i % 14}pt">'
                   f"{escape(t)}</a> " for i, t in enumerate(host.tags))
    months = "".join(f'<li><a href="/{m}/">{m}</a></li>' for m in host.months)
    footer = "".join(f'<li><a href="/f/{i}/">{escape(t)}</a></li>' for i, t in enumerate(host.footer))
    iso = page.date.strftime("%Y-%m-%dT%H:%M:%SZ")
    ld = (f'{{"@context":"https://schema.org","@type":"Article","headline":"{escape(page.title)}",'
          f'"datePublished":"{iso}","publisher":{{"@type":"Organization","name":"{host.name}"}}}}')
    share = "".join(f'<a class="share-{s}" href="https://{s}.example/share?u={page.url}">{s}</a>'
                    for s in ("facebook", "twitter", "linkedin", "email"))
    return f"""<!DOCTYPE html>
<html lang="{lang}" class="{theme}-html">
<head>
<meta charset="{page.charset}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(page.title)} | {host.name}</title>
<meta name="description" content="{escape(page.blocks[0][1][:150])}">
<meta property="og:title" content="{escape(page.title)}"><meta property="og:url" content="{page.url}">
<link rel="canonical" href="{page.url}"><link rel="stylesheet" href="/wp-content/themes/{theme}/style.css?ver={rng.randint(1, 99)}">
<style id="{theme}-inline-css">{host.css}</style>
<script type="application/ld+json">{ld}</script>
<script>window.dataLayer=window.dataLayer||[];function gtag(){{dataLayer.push(arguments);}}gtag('js',new Date());gtag('config','G-{rng.randrange(16**8):08X}');{host.script}</script>
</head>
<body class="post-template-default single single-post {theme}-body">
<div id="cookie-notice" class="cookie-banner" role="dialog"><p>{escape(chrome[0])}</p><button class="accept">{chrome[1]}</button><button class="settings">{chrome[2]}</button></div>
<header id="masthead" class="site-header"><div class="site-branding"><a class="logo" href="/" rel="home">{host.name}</a></div>
<nav id="site-navigation" class="main-navigation"><ul id="primary-menu" class="menu">{nav}</ul></nav></header>
<div class="breadcrumbs"><a href="/">{escape(chrome[6][0])}</a> » <span>{escape(page.title)}</span></div>
<div id="content" class="site-content"><main id="primary" class="site-main">
<article class="post type-post status-publish format-standard hentry">
<header class="entry-header"><h1 class="entry-title">{escape(page.title)}</h1>
<div class="entry-meta"><span class="posted-on"><time class="entry-date published" datetime="{iso}">{page.date.strftime("%d.%m.%Y")}</time></span></div></header>
<div class="entry-content">
{_main_html(page, rng)}
</div>
<footer class="entry-footer"><div class="share-buttons"><span>{escape(chrome[11])}</span>{share}</div></footer>
</article>
<div class="newsletter-box"><p>{escape(chrome[3])}</p><form action="/subscribe" method="post"><input type="email" name="email"><button>{escape(chrome[4])}</button></form></div>
<div id="comments" class="comments-area"><h3 class="comment-reply-title">{escape(chrome[13])}</h3>{_comments_html(page, rng)}<form><textarea name="comment"></textarea></form></div>
</main>
<aside id="secondary" class="widget-area"><section class="widget widget_recent_entries"><h2 class="widget-title">{escape(chrome[8])}</h2><ul>{links}</ul></section>
<section class="widget widget_tag_cloud"><h2 class="widget-title">{escape(chrome[9])}</h2><div class="tagcloud">{tags}</div></section>
<section class="widget widget_archive"><h2 class="widget-title">{escape(chrome[10])}</h2><ul>{months}</ul></section></aside></div>
<footer id="colophon" class="site-footer"><ul class="footer-menu">{footer}</ul>
<div class="site-info">&copy; {page.date.year} {host.name}. {escape(chrome[5])}</div></footer>
<script src="/wp-includes/js/jquery.min.js?ver=3.6.{rng.randint(0, 9)}"></script>
</body>
</html>
"""


def _pdf_body(page: Page, rng: random.Random) -> bytes:
    """A small PDF (a non-HTML response the reader must drop as ``not_html``)."""
    stream = rng.randbytes(rng.randint(2_000, 60_000))
    head = f"%PDF-1.4\n1 0 obj<</Length {len(stream)}>>stream\n".encode()
    return head + stream + b"\nendstream endobj\n%%EOF\n"


# -- writing --------------------------------------------------------------------------------
def _record_id(file_name: str, number: int) -> str:
    return f"<urn:uuid:{uuid.uuid5(NAMESPACE, f'{file_name}#{number}')}>"


def _headers(file_name: str, number: int, date: datetime, **extra: str) -> dict[str, str]:
    return {"WARC-Record-ID": _record_id(file_name, number), "WARC-Date": date.strftime("%Y-%m-%dT%H:%M:%SZ"),
            **extra}


class _File:
    """One WARC or WET file being written: warcinfo first, then records, counting its gzip bytes."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path, self.kind, self.name = path, kind, path.name
        self.handle = open(path, "wb")  # noqa: SIM115 (closed by close())
        self.writer = WARCWriter(self.handle, gzip=True, warc_version="1.0")
        self.number = 0
        software = "Apache Nutch 1.19 (modified, https://github.com/commoncrawl/nutch/)" if kind == "warc" \
            else "ia-web-commons.1.1.10-SNAPSHOT-20230123"
        info = (f"software: {software}\r\nisPartOf: {CRAWL}\r\noperator: Common Crawl Admin "
                "(info@commoncrawl.org)\r\nformat: WARC File Format 1.0\r\n").encode()
        self._write("", "warcinfo", info, START, warc_content_type="application/warc-fields",
                    extra={"WARC-Filename": self.name})

    def _write(self, url: str, rec_type: str, payload: bytes, date: datetime, extra: dict[str, str] | None = None,
               **kwargs: object) -> None:
        record = self.writer.create_warc_record(
            url, rec_type, payload=io.BytesIO(payload), length=len(payload),
            warc_headers_dict=_headers(self.name, self.number, date, **(extra or {})), **kwargs)
        self.writer.write_record(record)
        self.number += 1

    def add(self, page: Page, rng: random.Random) -> None:
        if self.kind == "wet":
            if not page.pdf:
                self._write(page.url, "conversion", wet_text(page).encode("utf-8"), page.date,
                            warc_content_type="text/plain",
                            extra={"WARC-Refers-To": f"<urn:uuid:{uuid.uuid5(NAMESPACE, 'response ' + page.url)}>",
                                   "WARC-Identified-Content-Language": _ISO3[page.host.lang]})
            return
        host_path = page.url.split("/", 3)
        request = (f"GET /{host_path[3] if len(host_path) > 3 else ''} HTTP/1.1\r\nUser-Agent: CCBot/2.0 "
                   f"(https://commoncrawl.org/faq/)\r\nAccept: text/html,application/xhtml+xml\r\n"
                   f"Host: {page.host.name}\r\n\r\n").encode()
        self._write(page.url, "request", request, page.date, warc_content_type="application/http; msgtype=request")
        if page.pdf:
            body, content_type = _pdf_body(page, rng), "application/pdf"
        else:
            body = html_page(page, rng).encode(page.charset, errors="replace")
            content_type = f"text/html; charset={page.charset}" if rng.random() < 0.7 else "text/html"
        http = StatusAndHeaders("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(body))),
                                           ("Server", "nginx")], protocol="HTTP/1.1")
        self._write(page.url, "response", body, page.date, http_headers=http)
        metadata = f"fetchTimeMs: {rng.randint(40, 3000)}\r\ncharset-detected: {page.charset.upper()}\r\n".encode()
        self._write(page.url, "metadata", metadata, page.date, warc_content_type="application/warc-fields",
                    extra={"WARC-Concurrent-To": _record_id(self.name, self.number - 1)})

    def size(self) -> int:
        return self.handle.tell()

    def close(self) -> None:
        self.handle.close()


_ISO3 = {"en": "eng", "de": "deu", "fr": "fra", "es": "spa", "nl": "nld"}
#: Rough gzip bytes of one capture (to size the host pool before the first page is written).
_BYTES_PER_PAGE = {"warc": 11_000, "wet": 2_600}


def write_commoncrawl(directory: Path | str, size_bytes: int, kind: str = "warc", seed: int = 0,
                      file_bytes: int = DEFAULT_FILE_BYTES) -> list[Path]:
    """Write ``kind`` files (``warc`` or ``wet``) of about ``size_bytes`` gzip bytes in all; return their paths.

    Files are filled to ``file_bytes`` each (the last may be smaller; at least one file), in
    crawl order (module docstring); the result depends on the arguments only.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    crawl = Crawl(seed, max(1, size_bytes // _BYTES_PER_PAGE[kind]))
    rng = random.Random(f"cc-render/{seed}")
    paths: list[Path] = []
    written = 0
    for number in itertools.count():
        path = directory / f"{SEGMENT}-{number:05d}{SUFFIX[kind]}"
        target = min(file_bytes, size_bytes - written)
        file = _File(path, kind)
        try:
            while file.size() < target:
                file.add(crawl.next_page(), rng)
        finally:
            file.close()
        paths.append(path)
        written += path.stat().st_size
        if written >= size_bytes:
            return paths
    raise AssertionError("unreachable")


def pages(seed: int, count: int) -> Iterator[Page]:
    """The first ``count`` pages of the crawl of ``seed`` (for tests and statistics)."""
    crawl = Crawl(seed, count)
    for _ in range(count):
        yield crawl.next_page()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--size-mb", type=float, required=True, help="gzip megabytes (10^6 bytes) in all")
    parser.add_argument("--kind", choices=KINDS, default="warc")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--file-mb", type=float, default=DEFAULT_FILE_BYTES / 1e6)
    args = parser.parse_args(argv)
    for path in write_commoncrawl(args.out, int(args.size_mb * 1e6), args.kind, args.seed, int(args.file_mb * 1e6)):
        print(path, path.stat().st_size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
