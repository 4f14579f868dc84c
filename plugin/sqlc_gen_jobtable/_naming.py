"""Turns SQL names into Python names: classes, methods, fields and constants.

Every name that comes out of here is a valid identifier that is neither a
keyword nor one of the builtin constants: a name that would be one gets a
trailing underscore (``in`` becomes ``in_``, a table ``none`` the class
``None_``).
"""

import keyword
import re

# Names a generated annotation or body refers to unqualified: a method or a
# field of the same name in a class body would shadow them there.
_BUILTINS_USED = frozenset(
    {"bool", "bytes", "dict", "float", "int", "list", "object", "str", "tuple", "type"}
)
# Names the generated methods use for their own locals.
_LOCALS = frozenset({"self", "row", "rows", "cur"})
# Names that read as 1 or 0 in some fonts; ruff refuses them (E741, E742,
# E743) as variables, classes and functions, so they are escaped as keywords are.
_AMBIGUOUS = frozenset({"l", "O", "I"})

# Words whose plural is irregular, or that are the same in both numbers.
_IRREGULAR = {
    "people": "person",
    "men": "man",
    "women": "woman",
    "children": "child",
    "mice": "mouse",
    "geese": "goose",
    "teeth": "tooth",
    "feet": "foot",
    "oxen": "ox",
    "indices": "index",
    "vertices": "vertex",
    "matrices": "matrix",
    "appendices": "appendix",
    "criteria": "criterion",
    "phenomena": "phenomenon",
    "movies": "movie",
    "cookies": "cookie",
    "zombies": "zombie",
    "pies": "pie",
    "ties": "tie",
    "lies": "lie",
    "shoes": "shoe",
    "toes": "toe",
    "heroes": "hero",
    "potatoes": "potato",
    "tomatoes": "tomato",
    "echoes": "echo",
    "vetoes": "veto",
    "wolves": "wolf",
    "halves": "half",
    "knives": "knife",
    "lives": "life",
    "wives": "wife",
    "leaves": "leaf",
    "shelves": "shelf",
    "thieves": "thief",
    "calves": "calf",
    "selves": "self",
    "loaves": "loaf",
    "quizzes": "quiz",
    "analyses": "analysis",
    "diagnoses": "diagnosis",
    "theses": "thesis",
    "crises": "crisis",
    "syntheses": "synthesis",
    "hypotheses": "hypothesis",
    "parentheses": "parenthesis",
    "bases": "base",
    "cases": "case",
    "databases": "database",
    "releases": "release",
    "purchases": "purchase",
    "courses": "course",
    "responses": "response",
    "licenses": "license",
    "expenses": "expense",
    "phases": "phase",
    "houses": "house",
    "causes": "cause",
    "uses": "use",
    "pauses": "pause",
    "clauses": "clause",
    "warehouses": "warehouse",
    "statuses": "status",
    "aliases": "alias",
    "buses": "bus",
    "bonuses": "bonus",
    "viruses": "virus",
    "campuses": "campus",
    "censuses": "census",
    "addresses": "address",
}
_UNCOUNTABLE = frozenset(
    {
        "news",
        "series",
        "species",
        "data",
        "metadata",
        "media",
        "information",
        "equipment",
        "sheep",
        "fish",
        "deer",
        "money",
        "rice",
        "police",
        "software",
        "hardware",
        "feedback",
        "analytics",
        "physics",
        "mathematics",
        "economics",
        "ethics",
        "politics",
        "status",
        "alias",
        "bus",
        "campus",
        "virus",
        "bonus",
        "corpus",
        "census",
        "axis",
        "basis",
        "analysis",
        "thesis",
        "crisis",
        "gas",
        "canvas",
        "lens",
        "atlas",
    }
)


def singular(word: str) -> str:
    """Returns the singular of an English plural; a name of words changes its last word."""
    head, sep, last = word.rpartition("_")
    lower = last.lower()
    if lower in _UNCOUNTABLE or not lower.isalpha():
        return word
    if lower in _IRREGULAR:
        single = _IRREGULAR[lower]
    elif lower.endswith("ies") and len(lower) > 4:
        single = lower[:-3] + "y"
    elif lower.endswith("ves"):
        single = lower[:-1]
    elif lower.endswith(("sses", "xes", "ches", "shes", "zzes")):
        single = lower[:-2]
    elif lower.endswith(("ss", "us", "is")) or not lower.endswith("s"):
        return word
    else:
        single = lower[:-1]
    # Keep the spelling's case: Users becomes User, USERS becomes USER.
    if last.isupper():
        single = single.upper()
    elif last[:1].isupper():
        single = single[:1].upper() + single[1:]
    return head + sep + single


def escape(name: str) -> str:
    """Returns name, with an underscore added when it is a keyword or ambiguous (l, O, I)."""
    if keyword.iskeyword(name) or name == "_" or name in _AMBIGUOUS:
        return name + "_"
    return name


def snake(name: str) -> str:
    """Returns name in snake_case: GetUserByID becomes get_user_by_id."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"\W+", "_", name).strip("_").lower()


def pascal(name: str) -> str:
    """Returns name in PascalCase, a valid class name: user_roles becomes UserRoles."""
    out = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", name))
    if not out:
        out = "T"
    if out[0].isdigit():
        out = "T" + out
    return escape(out)


def method(query_name: str) -> str:
    """Returns the method name of a query: List becomes list_, In becomes in_."""
    name = snake(query_name) or "query"
    if name[0].isdigit():
        name = "q" + name
    if name in _BUILTINS_USED:
        return name + "_"
    return escape(name)


def constant(query_name: str) -> str:
    """Returns the module constant that holds a query's SQL."""
    name = snake(query_name).upper() or "QUERY"
    if name[0].isdigit():
        name = "Q" + name
    return name


def identifier(name: str) -> str:
    """Returns a field or parameter name for a SQL name: lower case, escaped."""
    ident = re.sub(r"\W+", "_", name).strip("_").lower() or "param"
    if ident[0].isdigit():
        ident = "p" + ident
    if (
        keyword.iskeyword(ident)
        or ident in _LOCALS
        or ident in _BUILTINS_USED
        or ident in _AMBIGUOUS
    ):
        ident += "_"
    return ident


def enum_member(value: str, taken: set[str]) -> str:
    """Returns the member name of an enum value, unique among taken (which it joins)."""
    name = re.sub(r"\W+", "_", value).strip("_").upper() or "EMPTY"
    if name[0].isdigit():
        name = "V" + name
    if name.startswith("_") or keyword.iskeyword(name) or name in ("MRO", *_AMBIGUOUS):
        name = "V" + name
    base, n = name, 2
    while name in taken:
        name = f"{base}_{n}"
        n += 1
    taken.add(name)
    return name
