"""Names and code kept as written: sentences whose person names, company and product names,
commands, options, POSIX and Windows paths, versions, e-mail addresses and URLs are the same on
both sides, and the dictionary rows that pair a first name with another ("Peter" / "Pierre")
left out.

The sentences are templates written here (``TEMPLATES``, English and French) whose slots are filled
from the lists below; a translation must copy each slot's value unchanged.  ``maps_name`` tells a
dictionary row that translates a first name.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

SOURCE = "verbatim"
SENTENCES = 12_000

# given names (English and French) that FreeDict pairs with one another, and others; a row mapping
# one of them to a different word is left out
FIRST_NAMES = frozenset("""
Adam Adrien Agatha Agathe Agnès Alain Albert Alexander Ann Antony Bartholomew Bartolomew Barthélemy Ben Benedict Diana Diane Jacob Marcus Sofia Alexandre Alfred Alice Alain André Andrew Anna Anne Antoine Anthony Arthur Baptiste Benoît Bernard Catherine Charles
Charlotte Christophe Christopher Claire Claude Daniel David Denis Dennis Édouard Edward Élisabeth Elizabeth Émile Emily Emma Étienne Eugène Francis
François Françoise Frédéric Frederick Geoffrey Geoffroy George Georges Gérard Gilles Giles Guillaume Hélène Helen Henri Henry Hugh Hugues Isabelle
Jacques James Jean Jeanne Jane Jérôme Jerome Joan John Joseph Julie Julien Julia Juliette Laura Laurent Lawrence Léa Louis Louise Luc Luke Marc Marguerite
Margaret Marie Mark Martin Mary Matthew Matthieu Michael Michel Nicolas Nicholas Olivier Oliver Paul Paule Peter Philip Philippe Pierre Pauline Raymond
Richard Robert Sarah Simon Sophie Stephen Susan Suzanne Thomas Vincent William Yves
""".split())
# German given names, for the English-German dictionary rows
GERMAN_FIRST_NAMES = frozenset("""
Albrecht Alois Andreas Anton Barbara Bernhard Christian Christoph Dietrich Elisabeth Emil Erich Ernst Franz Friedrich Georg Gerhard
Gottfried Gretchen Hans Hansi Heinrich Heinz Helene Helmut Hermann Ignaz Jakob Johann Johanna Johannes Josef Jörg Jürgen Karl Katharina
Klaus Konrad Kurt Ludwig Lukas Margarete Margarethe Maria Markus Matthias Max Michael Nikolaus Otto Paul Peter Philipp Rainer Rudolf
Sebastian Stefan Stephan Susanne Theodor Thomas Ulrich Walter Werner Wilhelm Wolfgang
""".split())

PEOPLE = ["Pierre", "Marie", "Guillaume", "Jean", "Étienne", "Jacques", "Hélène", "Sophie", "Julien", "François", "Louise", "Matthieu",
          "Peter", "William", "John", "James", "Stephen", "Mary", "Helen", "Emily", "Sarah", "Michael", "Oliver", "Laura",
          "Pierre Martin", "Marie Dubois", "John Smith", "Sarah Taylor", "Chloé Lefèvre", "Hugo Bernard"]  # fmt: skip
COMPANIES = ["Apple", "Orange", "Google", "Microsoft", "Renault", "Peugeot", "Michelin", "Airbus", "Total", "Free", "Bouygues", "Amazon", "Shell",
             "Red Hat", "Canonical", "Mozilla", "Samsung", "Ubisoft", "Decathlon", "Carrefour", "Leclerc", "Fnac", "Darty", "Dassault Systèmes"]  # fmt: skip
PRODUCTS = ["Firefox", "Thunderbird", "LibreOffice", "GIMP", "Inkscape", "Ubuntu", "Debian", "Windows", "Excel", "Word", "Outlook", "Blender",
            "VLC", "Android", "iPhone", "Python", "PostgreSQL", "Nextcloud", "GitHub", "Slack", "Zoom", "Teams"]  # fmt: skip
COMMANDS = ["ls -la", "sudo apt install curl", "apt update", "git pull", "git commit -m fix", "git push origin main", "pip install requests", "make install",
            "docker compose up -d", "tar -xzf backup.tar.gz", "grep -r TODO src", "ssh admin@server", "systemctl restart nginx", "df -h", "rm -rf build",
            "chmod +x run.sh", "python3 -m venv .venv", "npm install", "ipconfig /all", "ping 8.8.8.8", "cd /tmp", "top", "journalctl -u ssh"]  # fmt: skip
OPTIONS = ["--verbose", "--help", "-h", "--dry-run", "-r", "--force", "--output", "--quiet", "-n", "--no-cache", "--version", "-v"]
PATHS = ["/etc/hosts", "/var/log/syslog", "/home/marie/Documents", "~/.bashrc", "/usr/local/bin", "/etc/nginx/nginx.conf", "/tmp/report.pdf",
         "/opt/app/config.yaml", "~/Photos/2024", "/srv/backup"]  # fmt: skip
WINDOWS_PATHS = [r"C:\Users\Pierre\Documents", r"C:\Program Files\Mozilla Firefox", r"D:\Backup\photos", r"C:\Windows\System32",
                 r"C:\Users\Marie\Desktop\rapport.docx", r"E:\Music", r"C:\Temp\install.log", r"\\server\share\plans"]  # fmt: skip
VERSIONS = ["3.11", "2.4.1", "1.0", "22.04", "12.5", "v2.0.3", "10.15", "4.2-rc1", "117.0", "8.1"]
EMAILS = ["pierre.martin@example.com", "support@orange.fr", "contact@mairie-lyon.fr", "marie@example.org", "info@acme.com", "j.smith@mail.co.uk",
          "helpdesk@univ-paris.fr", "sales@example.net"]  # fmt: skip
URLS = ["https://www.debian.org/", "https://example.com/login", "http://localhost:8080/admin", "https://github.com/acme/app", "https://www.service-public.fr",
        "https://docs.python.org/3/", "http://192.168.1.1", "https://meet.example.com/room42"]  # fmt: skip
SLOTS = {"name": PEOPLE, "company": COMPANIES, "product": PRODUCTS, "cmd": COMMANDS, "opt": OPTIONS, "path": PATHS, "win": WINDOWS_PATHS,
         "ver": VERSIONS, "email": EMAILS, "url": URLS}  # fmt: skip

TEMPLATES = [  # (English, French); {name2} is a second person
    ("{name} works at {company}.", "{name} travaille chez {company}."),
    ("{name} has worked for {company} since 2019.", "{name} travaille pour {company} depuis 2019."),
    ("Ask {name} for the password.", "Demande le mot de passe à {name}."),
    ("Thank you, {name}!", "Merci, {name} !"),
    ("My name is {name}.", "Je m'appelle {name}."),
    ("{name} and {name2} are coming tonight.", "{name} et {name2} viennent ce soir."),
    ("Have you seen {name}?", "As-tu vu {name} ?"),
    ("{name} called you this morning.", "{name} t'a appelé ce matin."),
    ("Can you send the file to {name}?", "Pouvez-vous envoyer le fichier à {name} ?"),
    ("{name} is in a meeting with {name2}.", "{name} est en réunion avec {name2}."),
    ("I bought a phone from {company}.", "J'ai acheté un téléphone chez {company}."),
    ("{company} has released version {ver} of {product}.", "{company} a publié la version {ver} de {product}."),
    ("Install {product} {ver} or later.", "Installez {product} {ver} ou une version ultérieure."),
    ("{name} uses {product} every day.", "{name} utilise {product} tous les jours."),
    ("{product} no longer works since the update.", "{product} ne fonctionne plus depuis la mise à jour."),
    ("Run {cmd} in a terminal.", "Exécutez {cmd} dans un terminal."),
    ("Type {cmd} and press Enter.", "Tapez {cmd} puis appuyez sur Entrée."),
    ("The command {cmd} fails with an error.", "La commande {cmd} échoue avec une erreur."),
    ("To update it, run {cmd}.", "Pour le mettre à jour, lancez {cmd}."),
    ("Add the {opt} option to see more.", "Ajoutez l'option {opt} pour en voir plus."),
    ("What does {opt} do?", "À quoi sert {opt} ?"),
    ("Run it again with {opt}.", "Relancez-le avec {opt}."),
    ("Edit {path} and restart the service.", "Modifiez {path} et redémarrez le service."),
    ("The file is in {path}.", "Le fichier se trouve dans {path}."),
    ("Save the report in {win}.", "Enregistrez le rapport dans {win}."),
    ("The file is in {win}.", "Le fichier se trouve dans {win}."),
    ("Copy {win} to the USB stick.", "Copiez {win} sur la clé USB."),
    ("Open {win} and delete the old files.", "Ouvrez {win} et supprimez les anciens fichiers."),
    ("Send an e-mail to {email}.", "Envoyez un e-mail à {email}."),
    ("Write to {email} if you have a question.", "Écrivez à {email} si vous avez une question."),
    ("My address is {email}.", "Mon adresse est {email}."),
    ("{name} answered from {email}.", "{name} a répondu depuis {email}."),
    ("Open {url} in your browser.", "Ouvrez {url} dans votre navigateur."),
    ("The page {url} does not open.", "La page {url} ne s'ouvre pas."),
    ("{name} sent me this link: {url}", "{name} m'a envoyé ce lien : {url}"),
    ("You can sign up at {url}.", "Vous pouvez vous inscrire sur {url}."),
    ("{company} is hiring developers who know {product}.", "{company} recrute des développeurs qui connaissent {product}."),
    ("Did {name} install {product} {ver}?", "Est-ce que {name} a installé {product} {ver} ?"),
]


def fill(template: tuple[str, str], rng: random.Random) -> tuple[str, str, dict[str, str]]:
    """A template with each slot filled the same on both sides; the values by slot."""
    values: dict[str, str] = {}
    for slot in re.findall(r"\{(\w+)\}", template[0]):
        pool = SLOTS["name" if slot == "name2" else slot]
        values[slot] = rng.choice([v for v in pool if v not in values.values()])
    return template[0].format(**values), template[1].format(**values), values


def sentences(n: int = SENTENCES, seed: int = 0) -> Iterator[tuple[str, str]]:
    """``n`` distinct (English, French) pairs (fewer if the templates run out)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    for _ in range(n * 5):
        en, fr, _ = fill(rng.choice(TEMPLATES), rng)
        if en not in seen:
            seen.add(en)
            yield en, fr
            if len(seen) == n:
                return


def corpus_rows(n: int = SENTENCES, seed: int = 0) -> Iterator[tuple[str, str, str]]:
    for en, fr in sentences(n, seed):
        yield SOURCE, en, fr


def maps_name(english: str, other: str, lang: str = "fr") -> bool:
    """Whether a dictionary row translates a first name into another word ("Peter" / "Pierre",
    "Guillaume" / "William", "Johann" / "John"): one side a listed first name, the other side different."""
    names = FIRST_NAMES | GERMAN_FIRST_NAMES if lang == "de" else FIRST_NAMES
    en, xx = english.strip(), other.strip()
    return en != xx and (en in names or xx in names)
