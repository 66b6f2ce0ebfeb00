"""French rules about the people, pets and dates of the user's life: family, pets, relationships and
dated events; :mod:`memory.extraction.french` lists them in its :data:`~memory.extraction.french.RULES`."""

from __future__ import annotations

from memory.extraction.scanner import rule
from memory.extraction.vocabulary import (
    FR_COUNT,
    FR_DATE,
    FR_KIN,
    FR_PETS,
    B,
    Q,
    words,
)

__all__ = ["EVENT", "FAMILY", "PET", "RELATIONSHIP", "STATUS", "WE"]

WE = rf"(?:j{Q}ai|on\s+a|nous\s+avons)"
STATUS = r"mariée?s?|pacsée?s?|célibataire|fiancée?s?|divorcée?s?|séparée?s?|veuf|veuve|en\s+couple"

FAMILY = (
    rule(
        "fr_kin",
        rf"\b(?:mon|ma|mes|notre|nos)\s+((?:{FR_KIN}){B}[^.,\n!?;]*)",
        anchors=("mon", "ma", "mes", "notre", "nos"),
        template="Famille : {}",
    ),
    rule(
        "fr_ai_kin",
        rf"\b{WE}\s+({FR_COUNT}\s+(?:{FR_KIN}){B}[^.,\n!?;]*)",
        anchors=("ai", "a", "avons"),
        template="A {}",
    ),
    rule(
        "fr_parent_de",
        r"\bje\s+suis\s+((?:papa|maman|père|mère)\s+d[e'’][^.,\n!?;]+)",
        anchors=("suis",),
        template="Est {}",
    ),
    rule(
        "fr_enceinte",
        rf"\bje\s+suis\s+((?:enfin\s+)?enceinte(?:\s+(?:de|d{Q})\s+[^.,\n!?;]+)?|(?:fils|fille|enfant)\s+unique)",
        anchors=("enceinte", "unique"),
        template="Est {}",
    ),
    # "marié, avec deux filles", "en couple avec deux enfants"
    rule(
        "fr_status_avec_kin",
        rf"\bje\s+suis\s+[^.!?\n]{{0,40}}?\b(?:{STATUS}|papa|maman)\s*,?\s+(?:et\s+)?avec\s+({FR_COUNT}\s+(?:{FR_KIN}){B})",
        anchors=("suis",),
        template="A {}",
    ),
)

PET = (
    rule(
        "fr_ai_pet",
        rf"\b{WE}\s+({FR_COUNT}\s+(?:{FR_PETS}){B}[^.,\n!?;]*)",
        anchors=("ai", "a", "avons"),
        template="A {}",
    ),
    rule(
        "fr_my_pet",
        rf"\b(?:mon|ma|mes|notre|nos)\s+((?:{FR_PETS}){B}[^.,\n!?;]*)",
        anchors=("mon", "ma", "mes", "notre", "nos"),
        template="Animal : {}",
    ),
    # "j'ai une chienne, elle s'appelle Noisette".
    rule(
        "fr_pet_name",
        rf"\b(?:{FR_PETS}){B}[^.!?\n]{{0,40}}?(?:,\s*|\s+)(?:(?:il|elle)\s+s{Q}appelle|qui\s+s{Q}appelle|nommée?|appelée?|son\s+nom\s+(?:est|c{Q}est))\s+{words(1)}",
        anchors=("appelle", "nommé", "nommée", "appelé", "appelée", "nom"),
        template="Animal : {}",
        case="proper",
    ),
    rule(
        "fr_adopte_pet",
        rf"\b{WE}\s+(?:adopté|recueilli|pris)\s+({FR_COUNT}\s+(?:{FR_PETS}){B}[^.,\n!?;]*)",
        anchors=("adopté", "recueilli", "pris"),
        template="A {}",
    ),
)

RELATIONSHIP = (
    rule(
        "fr_status",
        rf"\bje\s+suis\s+((?:{STATUS})(?:\s+(?:avec|à|depuis)\s+[^.,\n!?;]+)?)",
        anchors=("suis",),
        template="Est {}",
    ),
    # "je suis infirmier, marié, …": a status among the items of a "je suis" list.
    rule(
        "fr_status_in_list",
        rf"\bje\s+suis\s+[^.!?\n]{{1,40}}?,\s*(?:et\s+)?((?:{STATUS}){B})",
        anchors=("suis",),
        template="Est {}",
    ),
    rule(
        "fr_sors_avec",
        rf"\bje\s+sors\s+(?:depuis\s+[^.,\n!?;]+?\s+)?avec\s+{words(2)}(?=\s*(?:[.,!]|$|depuis{B}))",
        anchors=("sors",),
        template="En couple avec {}",
    ),
    rule(
        "fr_marie",
        rf"\b(?:je\s+me\s+suis|on\s+s{Q}est|nous\s+nous\s+sommes)\s+((?:marié|mariée|mariés|mariées|pacsé|pacsée|pacsés|pacsées|fiancé|fiancée|fiancés|fiancées|séparé|séparée|séparés|séparées)(?:\s+(?:avec|à)\s+[^.,\n!?;]+)?)",
        anchors=(
            "marié",
            "mariée",
            "mariés",
            "mariées",
            "pacsé",
            "pacsée",
            "pacsés",
            "pacsées",
            "fiancé",
            "fiancée",
            "fiancés",
            "fiancées",
            "séparé",
            "séparée",
            "séparés",
            "séparées",
        ),
        template="S'est {}",
    ),
    rule(
        "fr_partner",
        rf"\b(?:mon|ma)\s+((?:copine|copain|compagne|compagnon|petite\s+amie|petit\s+ami|conjoint|conjointe|fiancée?|partenaire|chéri|chérie|mec|meuf){B}[^.,\n!?;]*)",
        anchors=("mon", "ma"),
        template="Partenaire : {}",
    ),
)

EVENT = (
    rule(
        "fr_pars",
        rf"\bje\s+((?:pars(?!\s+sur{B})|vais|décolle|voyage|rentre|déménage|passe|commence|soutiens|fête|me\s+marie|m{Q}envole|reprends)\s+[^.,\n!?;]*?\s{FR_DATE}[^.,\n!?;]*)",
        anchors=(
            "pars",
            "vais",
            "décolle",
            "voyage",
            "rentre",
            "déménage",
            "passe",
            "commence",
            "soutiens",
            "fête",
            "marie",
            "envole",
            "reprends",
        ),
        template="Événement : {}",
    ),
    rule(
        "fr_passe_dated",
        rf"\b(?:j{Q}ai|on\s+a|nous\s+avons)\s+((?:passé|eu|fait|couru|fêté|obtenu|réussi|raté|fini|terminé|soutenu|visité|rencontré|commencé|signé|accouché)\s+[^.,\n!?;]*?\s{FR_DATE}[^.,\n!?;]*)",
        anchors=(
            "passé",
            "eu",
            "fait",
            "couru",
            "fêté",
            "obtenu",
            "réussi",
            "raté",
            "fini",
            "terminé",
            "soutenu",
            "visité",
            "rencontré",
            "commencé",
            "signé",
            "accouché",
        ),
        template="Événement : {}",
    ),
    rule(
        "fr_rdv",
        rf"\b(?:j{Q}ai|on\s+a)\s+((?:rendez-vous|rdv|rendez\s+vous)\s+[^.,\n!?;]*?{FR_DATE}[^.,\n!?;]*)",
        anchors=("rendez", "rdv"),
        template="A {}",
    ),
    rule(
        "fr_ai_dated",
        rf"\b(?:j{Q}ai|on\s+a)\s+((?:un|une|mon|ma|mes|des|notre)\s+[^.,\n!?;]*?\s{FR_DATE}[^.,\n!?;]*)",
        anchors=("ai", "a"),
        template="A {}",
    ),
    rule(
        "fr_mon_x_est",
        rf"\b(?:mon|ma|notre)\s+([^.,\n!?;]{{2,40}}?\s+(?:est|a\s+lieu|aura\s+lieu|sera|c{Q}est|tombe)\s+(?:prévue?\s+)?{FR_DATE}[^.!?;\n]*)",
        anchors=("mon", "ma", "notre"),
        template="Événement : {}",
    ),
    rule(
        "fr_on_dated",
        rf"\b(?:on|nous)\s+((?:part|partons|va|allons|se\s+marie|nous\s+marions|déménage|déménageons)\s+[^.,\n!?;]*?\s{FR_DATE}[^.,\n!?;]*)",
        anchors=("part", "partons", "va", "allons", "marie", "marions", "déménage", "déménageons"),
        template="Événement : {}",
    ),
)
