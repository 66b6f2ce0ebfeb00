"""French rules of every family, by category (:data:`RULES`); each family lists them after its English ones.

French says who one is with "je suis" + a bare noun ("je suis infirmier", no article), so the copula is
read as a job unless its complement is a name (one capitalised word: "je suis Antoine"), a state or a
relationship status (:data:`~memory.extraction.vocabulary.NOT_JOB_FR`).
"""

from __future__ import annotations

from memory.extraction.french_household import EVENT, FAMILY, PET, RELATIONSHIP, WE
from memory.extraction.scanner import Rule, rule
from memory.extraction.vocabulary import (
    END,
    FR_CLAUSE,
    FR_TOOL_STOPS,
    NOT_JOB_FR,
    TECH,
    WS,
    B,
    Q,
    inner,
    phrase,
    words,
)

__all__ = ["RULES"]

# Where a place or an employer ends before "l'an dernier", "l'année prochaine".
_LAST_YEAR = r"l['’]an|l['’]année"
# Adverbs between a verb and its object ("je code principalement en Java").
_ADV = r"(?:(?:surtout|principalement|essentiellement|beaucoup|aussi|souvent|toujours|plutôt|uniquement|maintenant|vraiment|quasiment|tous\s+les\s+jours)\s+)?"
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
    # Colloquial French drops the "ne": "je supporte pas les bruits de bouche".
    rule(
        "fr_supporte_pas_oral",
        r"\bje\s+(?:supporte|peux\s+pas\s+supporter|peux\s+pas\s+voir|supporte\s+vraiment|supporte\s+plus)\s+(?:pas\s+)?([^.,\n]+)",
        anchors=("supporte", "supporter", "voir"),
        polarity="negative",
        template="N'aime pas : {}",
    ),
    rule(
        "fr_pas_fan",
        rf"\bje\s+(?:ne\s+)?suis\s+pas\s+(?:trop\s+|très\s+|vraiment\s+|du\s+tout\s+|une?\s+)?(?:grande?\s+)?(?:fan|fana|amateur|amatrice)\s+(?:des|du|de|d['’]){_NOT_YOURS}([^.,\n]+)",
        anchors=("suis",),
        polarity="negative",
        template="N'aime pas : {}",
    ),
    rule(
        "fr_apprecie",
        rf"\bj{Q}(?:apprécie|aime\s+bien)\s+(?:beaucoup\s+|vraiment\s+|particulièrement\s+)?([^.,\n]+)",
        anchors=("apprécie", "bien"),
        polarity="positive",
        template="Aime {}",
    ),
    # "le jazz, c'est mon truc" / "le rap, c'est pas trop mon truc".
    rule(
        "fr_mon_truc",
        rf"(?:^|[.!?\n]\s*)((?!(?:ça|ca|cela|ce|il|elle|tu|vous)\b)[^.,\n!?;]{{2,40}}?)\s*,?\s+c{Q}est\s+(?:vraiment\s+|trop\s+)?(?:mon\s+truc|ma\s+passion|mon\s+kiff|mon\s+péché\s+mignon)",
        anchors=("truc", "passion", "kiff", "péché"),
        polarity="positive",
        template="Aime {}",
    ),
    rule(
        "fr_pas_mon_truc",
        rf"(?:^|[.!?\n]\s*)((?!(?:ça|ca|cela|ce|il|elle|tu|vous)\b)[^.,\n!?;]{{2,40}}?)\s*,?\s+(?:c{Q}est|ce\s+n{Q}est|c{Q}est\s+vraiment)\s+pas\s+(?:trop\s+|vraiment\s+|du\s+tout\s+)?(?:mon\s+truc|pour\s+moi|ma\s+tasse\s+de\s+thé)",
        anchors=("truc", "moi", "thé"),
        polarity="negative",
        template="N'aime pas : {}",
    ),
    rule(
        "fr_allergique",
        r"\bje\s+suis\s+(?:très\s+)?(?:allergique|intolérante?)\s+(?:à|a|au|aux)\s+([^.,\n]+)",
        anchors=("allergique", "intolérant", "intolérante"),
        polarity="negative",
        template="Allergique à {}",
    ),
    rule(
        "fr_mange_pas",
        rf"\bje\s+(?:ne\s+)?(?:mange|bois)\s+(?:pas|plus|jamais)\s+(?:de\s+|d{Q})([^.,\n]+)",
        anchors=("mange", "bois"),
        polarity="negative",
        template="Ne consomme pas : {}",
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
        rf"\b{WE}\s+(?:finalement\s+)?opté\s+pour\s+{phrase(FR_CLAUSE)}",
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
        "fr_inscrit",
        rf"\b(?:je\s+me\s+suis|on\s+s{Q}est|nous\s+nous\s+sommes|je\s+viens\s+de\s+m{Q})\s*(?:inscrit|inscrite|inscrits|inscrites|inscrire)\s+(?:à|a|au|aux|en|pour)\s+{phrase(FR_CLAUSE)}",
        anchors=("inscrit", "inscrite", "inscrits", "inscrites", "inscrire"),
        template="S'est inscrit à {}",
    ),
    rule(
        "fr_va_passer_a",
        rf"\b(?:je\s+vais|on\s+va|nous\s+allons)\s+(?:passer|migrer|basculer)\s+(?:à|a|au|sur|sous|vers)\s+{phrase(FR_CLAUSE)}",
        anchors=("passer", "migrer", "basculer"),
        template="Va passer à {}",
    ),
    rule(
        "fr_arrete",
        rf"\b(?:j{Q}ai|on\s+a|nous\s+avons)\s+(?:enfin\s+|finalement\s+)?(?:arrêté|quitté|lâché|démissionné\s+de)\s+((?:de\s+|d{Q}|le\s+|la\s+|les\s+|mon\s+|ma\s+)[^.,\n!?;]+)",
        anchors=("arrêté", "quitté", "lâché", "démissionné"),
        template="A arrêté {}",
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
        rf"\b(?:je\s+m{Q}appelle|moi\s*,?\s+c{Q}est|mon\s+(?:pré)?nom\s*,?\s+(?:est|c{Q}est)|(?:tu\s+peux|vous\s+pouvez)\s+m{Q}appeler|appelle-moi|appelez-moi)\s+{words(3)}",
        anchors=("appelle", "est", "appeler", "moi"),
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
        rf"\b(?:je\s+viens\s+d(?:e\s+|{Q})|j{Q}ai|on\s+a|nous\s+avons|on\s+vient\s+d(?:e\s+|{Q}))\s*(?:déménager|déménagé|emménager|emménagé)\s+(?:à|a|au|aux|en|dans|sur)\s+{phrase(FR_CLAUSE + '|avec|pour|cet|cette|il|' + _LAST_YEAR)}",
        anchors=("déménager", "déménagé", "emménager", "emménagé"),
        template="Habite à {}",
    ),
    rule(
        "fr_installe",
        rf"\b(?:je\s+suis|on\s+est|nous\s+sommes)\s+(?:maintenant\s+)?(?:installé|basé|domicilié|établi)e?s?\s+(?:à|a|au|aux|en|dans|sur|près\s+de)\s+{phrase(FR_CLAUSE + '|avec|pour|maintenant')}",
        anchors=("suis", "est", "sommes"),
        template="Habite à {}",
    ),
    rule(
        "fr_installe_pronominal",
        rf"\b(?:je\s+me\s+suis|on\s+s{Q}est|nous\s+nous\s+sommes|je\s+viens\s+de\s+m{Q}|on\s+vient\s+de\s+s{Q}|je\s+vais\s+m{Q}|on\s+va\s+s{Q})\s*(?:installé|installée|installés|installées|installer|établi|établie|établis|établies|établir)\s+(?:à|a|au|aux|en|dans|sur|près\s+de)\s+{phrase(FR_CLAUSE + '|avec|pour|maintenant|depuis|cet|cette|il|' + _LAST_YEAR)}",
        anchors=(
            "installé",
            "installée",
            "installés",
            "installées",
            "installer",
            "établi",
            "établie",
            "établis",
            "établir",
        ),
        template="Habite à {}",
    ),
    rule(
        "fr_achete_maison",
        rf"\b(?:acheté|acheter|achète|achetons|loue|louons|louer|loué)\s+(?:une?\s+|notre\s+|mon\s+|ma\s+)?(?:petite?\s+)?(?:maison|appart|appartement|studio|logement|chambre|coloc)\s+(?:à|a|en|au|dans|près\s+de)\s+{phrase(FR_CLAUSE + '|avec|pour|depuis|cet|cette|il|' + _LAST_YEAR)}",
        anchors=("maison", "appart", "appartement", "studio", "logement", "chambre", "coloc"),
        template="Habite à {}",
        case="proper",
    ),
    # "je suis à Rouen maintenant", "on est à Lyon depuis deux ans".
    rule(
        "fr_suis_a_place",
        rf"\b(?:je\s+suis|on\s+est|nous\s+sommes|j{Q}habite|je\s+vis)\s+(?:maintenant\s+|désormais\s+)?(?:à|a)\s+([^{WS}{END}]+(?:(?:\s+|-)(?!(?:maintenant|désormais|depuis|en){B})[^{WS}{END}]+)?)(?=\s+(?:maintenant|désormais|depuis|en\s+ce\s+moment){B}|\s*[.!]|\s*$)",
        anchors=("suis", "est", "sommes", "habite", "vis"),
        template="Habite à {}",
        case="proper",
    ),
    # "je bosse comme graphiste à Nantes": where one works, when it is a place's name.
    rule(
        "fr_works_in_place",
        rf"\bje\s+(?:suis\s+(?!(?:{NOT_JOB_FR}){B})|travaille\s+|bosse\s+)[^.,\n!?;]{{1,40}}?\s+(?:à|a)\s+(?!(?:{TECH})(?![a-z+#])){phrase(FR_CLAUSE + '|avec|pour|chez|depuis|comme|' + _LAST_YEAR)}",
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
    # "…, dev front chez Qonto": a role, then "chez" and a capitalised name, is an employer.
    rule(
        "fr_chez_employer",
        rf"(?:^|[,;:]\s*)(?:(?!(?:je|j|on|nous|tu|il|elle|ils|elles|vous|et|mais|mon|ma|mes|son|sa|ses|notre|nos|leur|leurs|le|la|les|un|une|des|rendez-vous|rdv|entretien|travaille|bosse|dîne|dîner|mange|manger|dors|dormir|vais|aller|passe|passer|suis|est|reste|rester)\b)[a-zà-ÿ'’-]+\s+){{1,3}}chez\s+(?!(?:moi|toi|lui|elle|nous|vous|eux|le|la|les|mes|mon|ma|ses|des|un|une)\b){phrase(FR_CLAUSE + '|comme|depuis|en|à|pour|' + _LAST_YEAR)}",
        anchors=("chez",),
        template="Travaille chez {}",
        case="proper",
    ),
    rule(
        "fr_embauche_chez",
        rf"\b(?:je\s+suis\s+(?:en\s+poste|embauchée?|salariée?|stagiaire|en\s+stage|en\s+alternance|en\s+cdi|en\s+cdd|prestataire)|je\s+viens\s+d{Q}être\s+embauchée?|j{Q}ai\s+été\s+embauchée?|je\s+viens\s+de\s+commencer|j{Q}ai\s+commencé|je\s+commence|je\s+suis\s+entrée?)\s+chez\s+{phrase(FR_CLAUSE + '|comme|depuis|en|à|pour|' + _LAST_YEAR)}",
        anchors=("chez",),
        template="Travaille chez {}",
        case="proper",
    ),
    # "Je suis Antoine, développeur web": the words after a name given, before the next clause.
    rule(
        "fr_name_then_role",
        rf"\b(?:je\s+suis|moi\s*,?\s+c{Q}est|je\s+m{Q}appelle)\s+[^{WS}{END}]+\s*,\s*(?!(?:je|j|et|mais|on|nous|tu|vous|il|elle|merci|bonjour|salut|alors|donc|enfin|ici|voilà|{NOT_JOB_FR}){B})((?:un\s+|une\s+)?[a-zà-ÿ-]+(?:\s+[a-zà-ÿ-]+){{0,3}}?(?:\s+chez\s+[^{WS}{END}]+(?:\s+[^{WS}{END}]+)?)?)(?=\s*(?:[.,!;]|$|à{B}|depuis{B}|dans{B}))",
        anchors=("suis", "est", "appelle"),
        template="Est {}",
        case="not_name",
    ),
    rule(
        "fr_enseigne",
        rf"\bj{Q}enseigne\s+{phrase(FR_CLAUSE + '|depuis')}",
        anchors=("enseigne",),
        template="Enseigne {}",
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
    # The items after the first of a list of tools: "j'utilise VS Code et un peu Vim".
    rule(
        "fr_outil_suivant",
        rf"\b(?:j{Q}utilise|on\s+utilise|nous\s+utilisons|je\s+code\s+(?:en|avec)|je\s+bosse\s+(?:avec|sous)|on\s+bosse\s+(?:avec|sous))\s+[^.\n!?;]{{1,40}}?(?:,|\s+et)\s+(?:un\s+peu\s+(?:de\s+|d{Q})?|aussi\s+|parfois\s+|surtout\s+|du\s+|de\s+l{Q}|le\s+|la\s+|en\s+|avec\s+)?{phrase(FR_TOOL_STOPS + '|aussi|parfois|pour|quand|un|une')}",
        anchors=("utilise", "utilisons", "code", "bosse"),
        template="Utilise {}",
        case="named",
    ),
    rule(
        "fr_outil_dernier",
        rf"\b(?:j{Q}utilise|on\s+utilise|nous\s+utilisons|je\s+code\s+(?:en|avec))\s+[^.\n!?;]{{1,60}}\s+et\s+(?:un\s+peu\s+(?:de\s+|d{Q})?|aussi\s+|parfois\s+|surtout\s+|du\s+|de\s+l{Q}|le\s+|la\s+|en\s+|avec\s+)?{phrase(FR_TOOL_STOPS + '|aussi|parfois|pour|quand|un|une')}",
        anchors=("utilise", "utilisons", "code"),
        template="Utilise {}",
        case="named",
    ),
    rule(
        "fr_tourne_sous",
        rf"\b(?:je\s+(?:tourne|suis)|on\s+(?:tourne|est))\s+(?:sous|sur)\s+{phrase(FR_TOOL_STOPS)}",
        anchors=("tourne", "suis", "est"),
        template="Utilise {}",
        case="named",
    ),
    rule(
        "fr_my_device",
        rf"\b(?:mon|ma)\s+(?:ordi|ordinateur|pc|portable|laptop|téléphone|tel|tél|smartphone|éditeur|ide|os|machine|setup|config|distrib|distribution|navigateur|langage)(?:\s+(?:principal|principale|perso|pro|actuel|actuelle))?\s+(?:c{Q}est|est)\s+(?:un\s+|une\s+|le\s+|la\s+)?{phrase(FR_TOOL_STOPS)}",
        anchors=("mon", "ma"),
        template="Utilise {}",
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
    "family": FAMILY,
    "pet": PET,
    "relationship": RELATIONSHIP,
    "event": EVENT,
}
