"""Link prefixes that mark non-content links in Wikipedia wikitext, per language.

``[[Datei:x.jpg|…]]``, ``[[Kategorie:…]]`` and ``[[fr:Paris]]`` are markup, not prose: the cleaner
drops them. Each dump's ``<siteinfo>`` lists its own local namespace names and they are added at
run time; this table adds the aliases siteinfo does not list (``Image``, ``Bild``, ``Grafika``),
so a dump without siteinfo (or a cut one) is still cleaned correctly.
"""

from __future__ import annotations

#: Namespace names (File = 6, Category = 14, Media = -2) that are always dropped, any language.
CANONICAL_DROP_NAMESPACES: frozenset[str] = frozenset({"file", "image", "category", "media"})

#: Local names and aliases of the File, Media and Category namespaces for the 20 LLaMA languages
#: (plus ja and vi, whose real dumps the tests use).
LOCAL_DROP_NAMESPACES: dict[str, tuple[str, ...]] = {
    "bg": ("файл", "картинка", "изображение", "категория", "медия"),
    "ca": ("fitxer", "imatge", "categoria", "multimèdia"),
    "cs": ("soubor", "obrázek", "kategorie", "média"),
    "da": ("fil", "billede", "kategori", "medie"),
    "de": ("datei", "bild", "kategorie", "medium"),
    "en": ("file", "image", "category", "media"),
    "es": ("archivo", "imagen", "categoría", "medio"),
    "fr": ("fichier", "image", "catégorie", "média"),
    "hr": ("datoteka", "slika", "kategorija", "mediji"),
    "hu": ("fájl", "kép", "kategória", "média"),
    "it": ("file", "immagine", "categoria", "media"),
    "nl": ("bestand", "afbeelding", "categorie", "media"),
    "pl": ("plik", "grafika", "kategoria", "media"),
    "pt": ("ficheiro", "arquivo", "imagem", "categoria", "média", "multimédia"),
    "ro": ("fișier", "fişier", "imagine", "categorie", "media"),
    "ru": ("файл", "изображение", "категория", "медиа"),
    "sl": ("slika", "datoteka", "kategorija", "datoteka"),
    "sr": ("датотека", "слика", "категорија", "медиј", "datoteka", "slika", "kategorija", "medij"),
    "sv": ("fil", "bild", "kategori", "media"),
    "uk": ("файл", "зображення", "категорія", "медіа"),
    "ja": ("ファイル", "画像", "カテゴリ", "メディア"),
    "vi": ("tập tin", "hình", "thể loại", "phương tiện", "tập_tin"),
}

#: Wikipedia language editions (interwiki prefixes). ``[[de:Berlin]]`` at the end of an article
#: is a language link, not text.
INTERWIKI_LANGUAGES: frozenset[str] = frozenset(
    ["aa", "ab", "ace", "ady", "af", "ak", "als", "alt", "am", "ami", "an", "ang", "anp", "ar", "arc", "ary", "arz", "as", "ast", "atj", "av", "avk", "awa", "ay", "az", "azb", "ba", "ban", "bar", "bat-smg", "bcl", "be", "be-tarask", "be-x-old", "bg", "bh", "bi", "bjn", "blk", "bm", "bn", "bo", "bpy", "br", "bs", "bug", "bxr", "ca", "cbk-zam", "cdo", "ce", "ceb", "ch", "cho", "chr", "chy", "ckb", "co", "cr", "crh", "cs", "csb", "cu", "cv", "cy", "da", "dag", "de", "din", "diq", "dsb", "dty", "dv", "dz", "ee", "el", "eml", "en", "eo", "es", "et", "eu", "ext", "fa", "fat", "ff", "fi", "fiu-vro", "fj", "fo", "fon", "fr", "frp", "frr", "fur", "fy", "ga", "gag", "gan", "gcr", "gd", "gl", "glk", "gn", "gom", "gor", "got", "gpe", "gu", "guc", "gur", "guw", "gv", "ha", "hak", "haw", "he", "hi", "hif", "ho", "hr", "hsb", "ht", "hu", "hy", "hyw", "hz", "ia", "id", "ie", "ig", "ii", "ik", "ilo", "inh", "io", "is", "it", "iu", "ja", "jam", "jbo", "jv", "ka", "kaa", "kab", "kbd", "kbp", "kcg", "kg", "ki", "kj", "kk", "kl", "km", "kn", "ko", "koi", "kr", "krc", "ks", "ksh", "ku", "kv", "kw", "ky", "la", "lad", "lb", "lbe", "lez", "lfn", "lg", "li", "lij", "lld", "lmo", "ln", "lo", "lrc", "lt", "ltg", "lv", "mad", "mai", "map-bms", "mdf", "mg", "mh", "mhr", "mi", "min", "mk", "ml", "mn", "mni", "mnw", "mo", "mr", "mrj", "ms", "mt", "mus", "mwl", "my", "myv", "mzn", "na", "nah", "nap", "nds", "nds-nl", "ne", "new", "ng", "nia", "nl", "nn", "no", "nov", "nqo", "nrm", "nso", "nv", "ny", "oc", "olo", "om", "or", "os", "pa", "pag", "pam", "pap", "pcd", "pcm", "pdc", "pfl", "pi", "pih", "pl", "pms", "pnb", "pnt", "ps", "pt", "pwn", "qu", "rm", "rmy", "rn", "ro", "roa-rup", "roa-tara", "ru", "rue", "rw", "sa", "sah", "sat", "sc", "scn", "sco", "sd", "se", "sg", "sh", "shi", "shn", "si", "simple", "sk", "skr", "sl", "sm", "smn", "sn", "so", "sq", "sr", "srn", "ss", "st", "stq", "su", "sv", "sw", "szl", "szy", "ta", "tay", "tcy", "te", "tet", "tg", "th", "ti", "tk", "tl", "tly", "tn", "to", "tpi", "tr", "trv", "ts", "tt", "tum", "tw", "ty", "tyv", "udm", "ug", "uk", "ur", "uz", "ve", "vec", "vep", "vi", "vls", "vo", "wa", "war", "wo", "wuu", "xal", "xh", "xmf", "yi", "yo", "yue", "za", "zea", "zgh", "zh", "zh-classical", "zh-min-nan", "zh-yue", "zu"]
)


def drop_prefixes(language: str | None, siteinfo_names: frozenset[str] = frozenset()) -> frozenset[str]:
    """All lower-cased link prefixes to drop for a dump of ``language``."""
    names = set(CANONICAL_DROP_NAMESPACES) | set(INTERWIKI_LANGUAGES) | set(siteinfo_names)
    names.update(LOCAL_DROP_NAMESPACES.get(language or "", ()))
    return frozenset(n.casefold().replace("_", " ") for n in names)
