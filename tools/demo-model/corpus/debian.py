"""Debian packages as corpus sources: `apt-get download` + `dpkg -x` into a folder we own
(never into /), with each package's version and copyright file recorded for the model card."""
import glob
import os
import shutil
import subprocess

# Each source package, what it gives the corpus, and its license in one line (the full
# copyright file travels in the corpus meta record).
PACKAGES = {
    "wordnet-base": "WordNet 3.0 database: definitions, examples, synonyms, antonyms, hypernyms",
    "dict-gcide": "GCIDE (Collaborative International Dictionary of English, from Webster 1913)",
    "fortunes-min": "fortune cookies: fortunes, literature, riddles",
    "fortunes": "fortune cookies: the other topic files",
    "bible-kjv-text": "King James Version text (compressed, read with bible-kjv)",
    "bible-kjv": "the reader of bible-kjv-text (run from the unpacked folder, not installed)",
    "wamerican": "American English word list: test-word filter, and the evaluation's dictionary",
}

LICENSES = {
    "wordnet-base": "WordNet 3.0 license (Princeton University; BSD-style, permits use, copy, modify and distribute with the notice)",
    "dict-gcide": "GPL-2.0-or-later (GCIDE); formatting software GPL-1.0-or-later",
    "fortunes-min": "BSD-3-Clause (fortune-mod, University of California); fortune texts collected from many authors",
    "fortunes": "BSD-3-Clause (fortune-mod, University of California); fortune texts collected from many authors",
    "bible-kjv-text": "KJV text: public domain (translation of 1611); package: unrestricted use with the legend, GPL-2.0-or-later for code",
    "bible-kjv": "GPL-2.0-or-later (reader program; nothing of it goes into the corpus)",
    "wamerican": "SCOWL: permissive (use, copy, modify, distribute and sell with the notice); no text of it goes into the corpus",
}


class DebianError(RuntimeError):
    pass


def _run(cmd, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise DebianError(f"{' '.join(cmd)} failed (exit {r.returncode}): {r.stderr.strip()[-400:]}")
    return r.stdout


def download(names, deb_dir):
    """apt-get download each package into deb_dir (skips those already there)."""
    os.makedirs(deb_dir, exist_ok=True)
    missing = [n for n in names if not glob.glob(os.path.join(deb_dir, f"{n}_*.deb"))]
    if missing:
        if shutil.which("apt-get") is None:
            raise DebianError("apt-get is not on PATH: run this on Debian, or pass --debs DIR with the .deb files")
        try:
            _run(["apt-get", "download", *missing], cwd=deb_dir)
        except DebianError as err:
            raise DebianError(f"{err}; run `apt-get update` first if the package lists are empty") from err
    return {n: deb_path(deb_dir, n) for n in names}


def deb_path(deb_dir, name):
    found = sorted(glob.glob(os.path.join(deb_dir, f"{name}_*.deb")))
    if not found:
        raise DebianError(f"no {name}_*.deb in {deb_dir}")
    return found[-1]


def unpack(debs, root):
    """dpkg -x each .deb into root/<name>; returns {name: {"dir", "version", "copyright"}}."""
    out = {}
    for name, deb in debs.items():
        dest = os.path.join(root, name)
        os.makedirs(dest, exist_ok=True)
        _run(["dpkg", "-x", deb, dest])
        version = _run(["dpkg-deb", "-f", deb, "Version"]).strip()
        copyright_path = os.path.join(dest, "usr", "share", "doc", name, "copyright")
        if not os.path.exists(copyright_path):
            raise DebianError(f"{name}: {copyright_path} is missing from the package")
        with open(copyright_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        out[name] = {"dir": dest, "version": version, "copyright": text, "license": LICENSES[name], "what": PACKAGES[name]}
    return out
