"""French rules of every family, by category (:data:`RULES`); each family lists them after its English ones.

French says who one is with "je suis" + a bare noun ("je suis infirmier", no article), so the copula is
read as a job unless its complement is a name (one capitalised word: "je suis Antoine"), a state or a
relationship status (:data:`~memory.extraction.vocabulary.NOT_JOB_FR`).
"""

from __future__ import annotations

from memory.extraction.scanner import Rule, rule
from memory.extraction.vocabulary import (
    FR_CLAUSE,
    FR_COUNT,
    FR_DATE,
    FR_KIN,
    FR_PETS,
    FR_TOOL_STOPS,
    NOT_JOB_FR,
    TECH,
    B,
    Q,
    inner,
    phrase,
    words,
)

__all__ = ["RULES"]

# Adverbs between a verb and its object ("je code principalement en Java").
_ADV = r"(?:(?:surtout|principalement|essentiellement|beaucoup|aussi|souvent|toujours|plutôt|uniquement|maintenant|vraiment|quasiment|tous\s+les\s+jours)\s+)?"
_WE = rf"(?:j{Q}ai|on\s+a|nous\s+avons)"
_STATUS = r"mariée?s?|pacsée?s?|célibataire|fiancée?s?|divorcée?s?|séparée?s?|veuf|veuve|en\s+couple"
# Capitalised after "je suis" but not a name ("Je suis Français").
_DEMONYM = (
    r"français|française|belge|suisse|canadien|canadienne|québécois|québécoise|parisien|parisienne|italien|"
    r"italienne|espagnol|espagnole|allemand|allemande|anglais|anglaise|américain|américaine|breton|bretonne|"
    r"marocain|marocaine|algérien|algérienne|tunisien|tunisienne|sénégalais|sénégalaise|portugais|portugaise|"
    r"brésilien|brésilienne|chinois|chinoise|japonais|japonaise|lyonnais|lyonnaise|marseillais|marseillaise"
)
# After "fan de": the assistant's idea, not a taste ("je suis fan de ton idée").
_NOT_YOURS = r"(?!\s*(?:ton|ta|tes|votre|vos|ça|ca|cela|ce|cette)\b)\s*"

_PREFERENCE = (
    rule(
        "fr_prefere",
        r"\bje\s+préfère\s+([^.,\n]+)",
        anchors=("préfère",),
        polarity="positive",
        template="Préfère {}",
    ),
    rule(
        "fr_aime",
        rf"\bj{Q}aime\s+(?!pas\s|plus\s)(?:beaucoup\s+|bien\s+|vraiment\s+|trop\s+)?([^.,\n]+)",
        anchors=("aime",),
        polarity="positive",
        template="Aime {}",
    ),
    rule(
        "fr_adore",
        rf"\bj{Q}adore\s+([^.,\n]+)",
        anchors=("adore",),
        polarity="positive",
        template="Adore {}",
    ),
    rule(
        "fr_prefere_noun",
        rf"\b(?:mon|ma|mes)\s+([^.,\n]+?\s+(?:préféré|préférée|préférés|préférées)\s+(?:est|sont|c{Q}est|ce\s+sont)\s+[^.,\n]+)",
        anchors=("préféré", "préférée", "préférés", "préférées"),
        polarity="positive",
        template="Préféré : {}",
    ),
    rule(
        "fr_deteste",
        r"\bje\s+déteste\s+([^.,\n]+)",
        anchors=("déteste",),
        polarity="negative",
        template="N'aime pas : {}",
    ),
    rule(
        "fr_naime_pas",
        rf"\bje\s+n{Q}aime\s+pas\s+(?:trop\s+|du\s+tout\s+|beaucoup\s+)?([^.,\n]+)",
        anchors=("aime",),
        polarity="negative",
        template="N'aime pas : {}",
    ),
    rule(
        "fr_horreur",
        rf"\bj{Q}ai\s+horreur\s+(?:de\s+|des\s+|du\s+|d{Q})?([^.,\n]+)",
        anchors=("horreur",),
        polarity="negative",
        template="N'aime pas : {}",
    ),
    rule(
        "fr_aime_pas",
        rf"\bj{Q}aime\s+(?:pas|plus)\s+(?:trop\s+|du\s+tout\s+|beaucoup\s+)?([^.,\n]+)",
        anchors=("aime",),
        polarity="negative",
        template="N'aime pas : {}",
    ),
    # Also "je ne peux pas supporter X" and "je ne supporte vraiment pas X".
    rule(
        "fr_supporte_pas",
        r"\bje\s+ne\s+(?:supporte|peux\s+pas\s+supporter|supporte\s+vraiment)\s+(?:pas\s+)?([^.,\n]+)",
        anchors=("supporte",),
        polarity="negative",
        template="N'aime pas : {}",
    ),
    rule(
        "fr_fan",
        rf"\bje\s+suis\s+(?:un\s+|une\s+)?(?:grande?\s+|vraie?\s+|très\s+)?((?:fan|passionnée?|accro|dingue|fou|folle)\s+(?:de|du|des|d['’]|à|au|aux|par){_NOT_YOURS}[^.,\n]+)",
        anchors=("suis",),
        polarity="positive",
        template="Est {}",
    ),
    rule(
        "fr_kiffe",
        rf"\bje\s+(?:kiffe|raffole\s+(?:de|du|des|d{Q}))\s*([^.,\n]+)",
        anchors=("kiffe", "raffole"),
        polarity="positive",
        template="Aime {}",
    ),
    rule(
        "fr_diet",
        r"\bje\s+suis\s+((?:végétarien|végétalien|pescétarien)(?:ne)?|végane?|vegan)",
        anchors=("suis",),
        polarity="positive",
        template="Est {}",
    ),
)

_DECISION = (
    rule(
        "fr_decide",
        rf"\b(?:j{Q}ai|on\s+a|nous\s+avons)\s+décidé\s+(?:de\s+|d{Q})?([^.,\n]+)",
        anchors=("décidé",),
        template="A décidé : {}",
    ),
    rule(
        "fr_vais_utiliser",
        rf"\b(?:je\s+vais|on\s+va)\s+(?:utiliser|prendre|partir\s+sur)\s+{phrase(FR_CLAUSE)}",
        anchors=("utiliser", "prendre", "partir"),
        template="Va utiliser {}",
    ),
    rule(
        "fr_choisi",
        rf"\b(?:j{Q}ai|on\s+a|nous\s+avons)\s+choisi\s+([^.,\n]+)",
        anchors=("choisi",),
        template="A choisi {}",
    ),
    rule(
        "fr_compte",
        rf"\bje\s+(?:compte|prévois\s+de|prévois\s+d{Q}|vais)\s+((?:déménager|partir|quitter|apprendre|changer|acheter|arrêter|commencer|me\s+mettre|reprendre|lancer|créer|ouvrir|rejoindre|démissionner|vendre)[^.,\n]*)",
        anchors=("compte", "prévois", "vais"),
        template="Prévoit de {}",
    ),
    rule(
        "fr_opte",
        rf"\b{_WE}\s+(?:finalement\s+)?opté\s+pour\s+{phrase(FR_CLAUSE)}",
        anchors=("opté",),
        template="A choisi {}",
    ),
    rule(
        "fr_pars_sur",
        rf"\b(?:je\s+pars|on\s+part|nous\s+partons)\s+sur\s+{phrase(FR_CLAUSE)}",
        anchors=("pars", "part", "partons"),
        template="Va utiliser {}",
    ),
    rule(
        "fr_passe_a",
        rf"\b(?:je\s+suis|on\s+est|nous\s+sommes)\s+(?:finalement\s+)?passée?s?\s+(?:à|a|au|sur|sous)\s+{phrase(FR_CLAUSE)}",
        anchors=("suis", "est", "sommes"),
        template="Est passé à {}",
        case="proper",  # "passé à Linux", not "passé à autre chose"
    ),
)

_NAME = (
    rule(
        "fr_nom",
        rf"\b(?:je\s+m{Q}appelle|moi\s*,?\s+c{Q}est|mon\s+(?:pré)?nom\s+est)\s+{words(3)}",
        anchors=("appelle", "est"),
        template="S'appelle {}",
    ),
    # What others call the user: "tout le monde m'appelle Clem", "mes amis m'appellent Manu".
    rule(
        "fr_on_m_appelle",
        rf"\b(?:tout\s+le\s+monde|on|mes\s+(?:amis|potes|proches|collègues)|ils|elles)\s+m{Q}(?:appelle|appellent)\s+{words(1)}",
        anchors=("appelle", "appellent"),
        template="Surnom : {}",
        case="proper",
    ),
    # "Je suis Antoine, développeur web": one capitalised word closing the clause.
    rule(
        "fr_je_suis_name",
        rf"\bje\s+suis\s+(?!(?:{_DEMONYM}){B}){words(1)}(?=\s*(?:[,.!]|$|et{B}))",
        anchors=("suis",),
        template="S'appelle {}",
        case="proper",
    ),
)

_RESIDENCE = (
    rule(
        "fr_habite",
        rf"\b(?:j{Q}habite|je\s+vis|j{Q}vis|je\s+réside|on\s+habite|on\s+vit|nous\s+habitons|nous\s+vivons)\s+(?:à|a|au|aux|en|dans|sur|près\s+de)\s+{phrase(FR_CLAUSE + '|avec|pour|maintenant')}",
        anchors=("habite", "vis", "réside", "vit", "habitons", "vivons"),
        template="Habite à {}",
    ),
    rule(
        "fr_demenage",
        rf"\b(?:je\s+viens\s+d(?:e\s+|{Q})|j{Q}ai|on\s+a|nous\s+avons|on\s+vient\s+d(?:e\s+|{Q}))\s*(?:déménager|déménagé|emménager|emménagé)\s+(?:à|a|au|aux|en|dans|sur)\s+{phrase(FR_CLAUSE + '|avec|pour|l{Q}|cet|cette|il')}",
        anchors=("déménager", "déménagé", "emménager", "emménagé"),
        template="Habite à {}",
    ),
    rule(
        "fr_installe",
        rf"\b(?:je\s+suis|on\s+est|nous\s+sommes)\s+(?:maintenant\s+)?(?:installé|basé|domicilié|établi)e?s?\s+(?:à|a|au|aux|en|dans|sur|près\s+de)\s+{phrase(FR_CLAUSE + '|avec|pour|maintenant')}",
        anchors=("suis", "est", "sommes"),
        template="Habite à {}",
    ),
    # "je bosse comme graphiste à Nantes": where one works, when it is a place's name.
    rule(
        "fr_works_in_place",
        rf"\bje\s+(?:suis\s+(?!(?:{NOT_JOB_FR}){B})|travaille\s+|bosse\s+)[^.,\n!?;]{{1,40}}?\s+(?:à|a)\s+(?!(?:{TECH})(?![a-z+#])){phrase(FR_CLAUSE + '|avec|pour|chez|depuis|comme|l{Q}an')}",
        anchors=("suis", "travaille", "bosse"),
        template="Vit ou travaille à {}",
        case="proper",
    ),
)

_JOB = (
    rule(
        "fr_travaille",
        rf"\bje\s+(?:travaille|bosse)\s+(?:(?:de\s+chez\s+moi|à\s+distance|en\s+remote|en\s+télétravail|à\s+temps\s+partiel|à\s+plein\s+temps)\s+)?((?:chez|à|a|au|dans|pour|comme|en)\s+{inner(FR_CLAUSE)})",
        anchors=("travaille", "bosse"),
        template="Travaille {}",
    ),
    rule(
        "fr_suis",
        rf"\bje\s+suis\s+(?:un\s+|une\s+)?((?!(?:{NOT_JOB_FR}){B}){inner(FR_CLAUSE)})",
        anchors=("suis",),
        template="Est {}",
        case="not_name",
    ),
    rule(
        "fr_retraite",
        r"\bje\s+suis\s+(à\s+la\s+retraite|(?:retraité|retraitée)|au\s+chômage|(?:étudiant|étudiante)(?:\s+en\s+[^.,\n]+)?)",
        anchors=("retraite", "retraité", "retraitée", "chômage", "étudiant", "étudiante"),
        template="Est {}",
    ),
    rule(
        "fr_statut",
        r"\bje\s+suis\s+((?:en\s+(?:freelance|free|cdi|cdd|alternance|stage|intérim|indépendant)|indépendante?|auto-entrepreneur|autoentrepreneur|à\s+mon\s+compte|intermittente?)\b[^.,\n!?;]*)",
        anchors=("suis",),
        template="Est {}",
    ),
)

_TOOL = (
    rule(
        "fr_utilise",
        rf"\b(?:(?:j{Q}utilise|on\s+utilise|nous\s+utilisons|je\s+me\s+sers\s+d(?:e|u|es)){B}\s*|je\s+me\s+sers\s+d{Q})(?:surtout\s+|principalement\s+|aussi\s+|beaucoup\s+)?{phrase(FR_TOOL_STOPS)}",
        anchors=("utilise", "utilisons", "sers"),
        template="Utilise {}",
    ),
    rule(
        "fr_code_en",
        rf"\bje\s+(?:code|programme|développe)\s+{_ADV}(?:en|avec|sous)\s+{phrase(FR_TOOL_STOPS)}",
        anchors=("code", "programme", "développe"),
        template="Code en {}",
    ),
    rule(
        "fr_bosse_avec",
        rf"\b(?:je|on|nous)\s+(?:bosse|travaille|bossons|travaillons)\s+{_ADV}(?:avec|sous)\s+{phrase(FR_TOOL_STOPS)}",
        anchors=("bosse", "travaille", "bossons", "travaillons"),
        template="Utilise {}",
        case="proper",
    ),
    rule(
        "fr_on_est_sur",
        rf"\b(?:on\s+est|je\s+suis|nous\s+sommes)\s+(?:sous\s+|sur\s+(?=(?:{TECH})(?![a-z+#])))(?:du\s+|de\s+l{Q})?{phrase(FR_TOOL_STOPS)}",
        anchors=("est", "suis", "sommes"),
        template="Utilise {}",
        case="proper",
    ),
    rule(
        "fr_my_device",
        rf"\b(?:mon|ma)\s+(?:ordi|ordinateur|pc|portable|laptop|téléphone|tel|tél|smartphone|éditeur|ide|os|machine|setup|config|distrib|distribution|navigateur|langage)(?:\s+(?:principal|principale|perso|pro|actuel|actuelle))?\s+(?:c{Q}est|est)\s+(?:un\s+|une\s+|le\s+|la\s+)?{phrase(FR_TOOL_STOPS)}",
        anchors=("mon", "ma"),
        template="Utilise {}",
    ),
)

_FAMILY = (
    rule(
        "fr_kin",
        rf"\b(?:mon|ma|mes)\s+((?:{FR_KIN}){B}[^.,\n!?;]*)",
        anchors=("mon", "ma", "mes"),
        template="Famille : {}",
    ),
    rule(
        "fr_ai_kin",
        rf"\b{_WE}\s+({FR_COUNT}\s+(?:{FR_KIN}){B}[^.,\n!?;]*)",
        anchors=("ai", "a", "avons"),
        template="A {}",
    ),
    rule(
        "fr_parent_de",
        r"\bje\s+suis\s+((?:papa|maman|père|mère)\s+d[e'’][^.,\n!?;]+)",
        anchors=("suis",),
        template="Est {}",
    ),
    # "marié, avec deux filles", "en couple avec deux enfants"
    rule(
        "fr_status_avec_kin",
        rf"\bje\s+suis\s+[^.!?\n]{{0,40}}?\b(?:{_STATUS}|papa|maman)\s*,?\s+(?:et\s+)?avec\s+({FR_COUNT}\s+(?:{FR_KIN}){B})",
        anchors=("suis",),
        template="A {}",
    ),
)

_PET = (
    rule(
        "fr_ai_pet",
        rf"\b{_WE}\s+({FR_COUNT}\s+(?:{FR_PETS}){B}[^.,\n!?;]*)",
        anchors=("ai", "a", "avons"),
        template="A {}",
    ),
    rule(
        "fr_my_pet",
        rf"\b(?:mon|ma|mes)\s+((?:{FR_PETS}){B}[^.,\n!?;]*)",
        anchors=("mon", "ma", "mes"),
        template="Animal : {}",
    ),
    rule(
        "fr_adopte_pet",
        rf"\b{_WE}\s+(?:adopté|recueilli|pris)\s+({FR_COUNT}\s+(?:{FR_PETS}){B}[^.,\n!?;]*)",
        anchors=("adopté", "recueilli", "pris"),
        template="A {}",
    ),
)

_RELATIONSHIP = (
    rule(
        "fr_status",
        rf"\bje\s+suis\s+((?:{_STATUS})(?:\s+(?:avec|à|depuis)\s+[^.,\n!?;]+)?)",
        anchors=("suis",),
        template="Est {}",
    ),
    # "je suis infirmier, marié, …": a status among the items of a "je suis" list.
    rule(
        "fr_status_in_list",
        rf"\bje\s+suis\s+[^.!?\n]{{1,40}}?,\s*(?:et\s+)?((?:{_STATUS}){B})",
        anchors=("suis",),
        template="Est {}",
    ),
    rule(
        "fr_partner",
        rf"\b(?:mon|ma)\s+((?:copine|copain|compagne|compagnon|petite\s+amie|petit\s+ami|conjoint|conjointe|fiancée?|partenaire|chéri|chérie|mec|meuf){B}[^.,\n!?;]*)",
        anchors=("mon", "ma"),
        template="Partenaire : {}",
    ),
)

_EVENT = (
    rule(
        "fr_pars",
        rf"\bje\s+((?:pars(?!\s+sur{B})|vais|décolle|voyage|rentre|déménage|passe|commence|soutiens)\s+[^.,\n!?;]*?\s{FR_DATE}[^.,\n!?;]*)",
        anchors=("pars", "vais", "décolle", "voyage", "rentre", "déménage", "passe", "commence", "soutiens"),
        template="Événement : {}",
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

RULES: dict[str, tuple[Rule, ...]] = {
    "preference": _PREFERENCE,
    "decision": _DECISION,
    "pattern": (),
    "name": _NAME,
    "residence": _RESIDENCE,
    "job": _JOB,
    "tool": _TOOL,
    "family": _FAMILY,
    "pet": _PET,
    "relationship": _RELATIONSHIP,
    "event": _EVENT,
}
