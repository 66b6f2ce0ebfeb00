"""The reference's families (preference, decision, pattern): its rules (§2.1, sources unchanged, so its
worked examples still capture the same phrase), then the phrasings it misses and their French and
Portuguese forms."""

from __future__ import annotations

from memory.extraction.scanner import RuleFamily, rule
from memory.extraction.vocabulary import EN_AGO, EN_CLAUSE, FR_CLAUSE, IM, PT_CLAUSE, Q, phrase

__all__ = ["DECISION", "PATTERN", "PREFERENCE"]

PREFERENCE = RuleFamily(
    category="preference",
    memory_type="factual",
    rules=(
        # The reference's seven, in its order (§2.1).
        rule(
            "prefer",
            r"\bI\s+(?:really\s+)?prefer\s+([^.,\n]+)",
            anchors=("prefer",),
            polarity="positive",
            template="Prefers {}",
        ),
        rule(
            "like",
            r"\bI\s+(?:really\s+)?like\s+([^.,\n]+)",
            anchors=("like",),
            polarity="positive",
            template="Likes {}",
        ),
        rule(
            "favorite",
            r"\bmy\s+(?:favorite|favourite)\s+(?:is|are)\s+([^.,\n]+)",
            anchors=("favorite", "favourite"),
            polarity="positive",
            template="Favourite: {}",
        ),
        rule(
            "dont_like",
            r"\bI\s+(?:don'?t|do\s+not)\s+like\s+([^.,\n]+)",
            anchors=("like",),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "hate",
            r"\bI\s+(?:hate|dislike|avoid)\s+([^.,\n]+)",
            anchors=("hate", "dislike", "avoid"),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "enjoy",
            r"\bI\s+enjoy\s+([^.,\n]+)",
            anchors=("enjoy",),
            polarity="positive",
            template="Enjoys {}",
        ),
        rule("love", r"\bI\s+love\s+([^.,\n]+)", anchors=("love",), polarity="positive", template="Loves {}"),
        # Ours: "my favourite editor is VS Code" (the reference needs "my favourite is").
        rule(
            "favorite_thing",
            r"\bmy\s+(?:favorite|favourite)\s+([a-z]+(?:\s+[a-z]+)?\s+(?:is|are)\s+[^.,\n]+)",
            anchors=("favorite", "favourite"),
            polarity="positive",
            template="Favourite {}",
        ),
        rule(
            "of_choice",
            r"\bmy\s+([a-z]+\s+of\s+choice\s+(?:is|are)\s+[^.,\n]+)",
            anchors=("choice",),
            polarity="positive",
            template="Favourite: {}",
        ),
        rule(
            "but_hate",
            r"\b(?:but|and)\s+(?:I\s+)?(?:hate|dislike)\s+([^.,\n]+)",
            anchors=("hate", "dislike"),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "really_dont_like",
            rf"\bI\s+(?:really|just|honestly|truly)\s+(?:don{Q}?t|do\s+not)\s+like\s+(?:it\s+when\s+)?([^.,\n]+)",
            anchors=("like",),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "dont_really_like",
            rf"\bI\s+(?:don{Q}?t|do\s+not)\s+(?:really|much|particularly)\s+(?:like|enjoy|care\s+for)\s+([^.,\n]+)",
            anchors=("like", "enjoy", "care"),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "not_into",
            rf"{IM}\s+(?:really\s+)?not\s+(?:really\s+)?into\s+([^.,\n]+)",
            anchors=("into",),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "is_my_favourite",
            r"(?:^|[.!?\n]\s*)([a-z][^.,\n!?]{1,40}?)\s+(?:is|are)\s+my\s+(?:favorite|favourite)\b",
            anchors=("favorite", "favourite"),
            polarity="positive",
            template="Favourite: {}",
        ),
        rule(
            "fan_of",
            rf"{IM}\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\s+([^.,\n]+)",
            anchors=("fan",),
            polarity="positive",
            template="Is a fan of {}",
        ),
        rule(
            "not_fan_of",
            rf"{IM}\s+not\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\s+([^.,\n]+)",
            anchors=("fan",),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "cant_stand",
            rf"\bI\s+(?:can{Q}?t|cannot)\s+stand\s+([^.,\n]+)",
            anchors=("stand",),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "allergic",
            rf"{IM}\s+(?:(?:very|really|severely)\s+)?allergic\s+to\s+([^.,\n]+)",
            anchors=("allergic",),
            polarity="negative",
            template="Allergic to {}",
        ),
        rule(
            "intolerant",
            rf"{IM}\s+([a-z]+)\s+intolerant",
            anchors=("intolerant",),
            polarity="negative",
            template="Intolerant: {}",
        ),
        rule(
            "diet",
            rf"{IM}\s+(?:a\s+)?(vegetarian|vegan|pescatarian)",
            anchors=("vegetarian", "vegan", "pescatarian"),
            polarity="positive",
            template="Is {}",
        ),
        # French
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
            r"\b(?:mon|ma|mes)\s+([^.,\n]+?\s+(?:préféré|préférée|préférés|préférées)\s+(?:est|sont)\s+[^.,\n]+)",
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
        rule(
            "fr_supporte_pas",
            r"\bje\s+ne\s+(?:supporte|peux\s+pas\s+supporter)\s+pas\s+([^.,\n]+)",
            anchors=("supporte",),
            polarity="negative",
            template="N'aime pas : {}",
        ),
        # Portuguese
        rule(
            "pt_prefiro",
            r"\b(?:eu\s+)?prefiro\s+([^.,\n]+)",
            anchors=("prefiro",),
            polarity="positive",
            template="Prefere {}",
        ),
        rule(
            "pt_gosto",
            r"(?<!não\s)(?<!nao\s)\b(?:eu\s+)?gosto\s+(?:muito\s+|bastante\s+|mais\s+)?d(?:e|o|a|os|as)\s+([^.,\n]+)",
            anchors=("gosto",),
            polarity="positive",
            template="Gosta de {}",
        ),
        rule(
            "pt_adoro",
            r"\b(?:eu\s+)?(?:adoro|amo)\s+([^.,\n]+)",
            anchors=("adoro", "amo"),
            polarity="positive",
            template="Adora {}",
        ),
        rule(
            "pt_favorito",
            r"\b(?:meu|minha|meus|minhas)\s+([^.,\n]+?\s+(?:favorito|favorita|favoritos|favoritas|preferido|preferida|preferidos|preferidas)\s+(?:é|são)\s+[^.,\n]+)",
            anchors=(
                "favorito",
                "favorita",
                "favoritos",
                "favoritas",
                "preferido",
                "preferida",
                "preferidos",
                "preferidas",
            ),
            polarity="positive",
            template="Favorito: {}",
        ),
        rule(
            "pt_odeio",
            r"\b(?:eu\s+)?(?:odeio|detesto)\s+([^.,\n]+)",
            anchors=("odeio", "detesto"),
            polarity="negative",
            template="Não gosta de {}",
        ),
        rule(
            "pt_nao_suporto",
            r"\b(?:eu\s+)?n(?:ão|ao)\s+(?:suporto|aguento|curto)\s+([^.,\n]+)",
            anchors=("suporto", "aguento", "curto"),
            polarity="negative",
            template="Não gosta de {}",
        ),
        rule(
            "pt_nao_gosto",
            r"\b(?:eu\s+)?n(?:ão|ao)\s+gosto\s+(?:muito\s+)?d(?:e|o|a|os|as)\s+([^.,\n]+)",
            anchors=("gosto",),
            polarity="negative",
            template="Não gosta de {}",
        ),
    ),
)

DECISION = RuleFamily(
    category="decision",
    memory_type="episodic",
    rules=(
        # B9: the original `\bI'?(?:ll|will)\s+use` has no whitespace before "will", so "I will
        # use X" never matched. The `\s+will` branch adds it; the original forms still match.
        rule(
            "will_use",
            r"\bI(?:'?(?:ll|will)|\s+will)\s+use\s+([^.,\n]+)",
            anchors=("use",),
            template="Will use {}",
        ),
        rule("chose", r"\bI\s+chose\s+([^.,\n]+)", anchors=("chose",), template="Chose {}"),
        # B9 family: "I've decided to X" / "Ive decided" did not match, only "I decided" and
        # "I have decided".
        rule(
            "decided",
            r"\bI(?:\s+have|'?ve)?\s+decided\s+(?:to\s+)?([^.,\n]+)",
            anchors=("decided",),
            template="Decided: {}",
        ),
        # B9: "I am going to use X" / "I am going with X" did not match, only I'm / Im.
        rule(
            "going_to",
            r"\bI(?:'?m|\s+am)\s+going\s+(?:to\s+)?(?:use|with|adopt)\s+([^.,\n]+)",
            anchors=("going",),
            template="Will use {}",
        ),
        rule("selected", r"\bI\s+selected\s+([^.,\n]+)", anchors=("selected",), template="Selected {}"),
        rule("picked", r"\bI\s+picked\s+([^.,\n]+)", anchors=("picked",), template="Picked {}"),
        rule("went_with", r"\bI\s+went\s+with\s+([^.,\n]+)", anchors=("went",), template="Went with {}"),
        # Ours.
        rule(
            "we_decided",
            r"\bwe(?:\s+have|'?ve)?\s+decided\s+(?:to\s+)?([^.,\n]+)",
            anchors=("decided",),
            template="Decided: {}",
        ),
        rule(
            "decided_adverb",
            rf"\bI(?:\s+have|{Q}ve)?\s+(?:finally|just|already|now)\s+decided\s+(?:to\s+)?([^.,\n]+)",
            anchors=("decided",),
            template="Decided: {}",
        ),
        rule(
            "will_be_using",
            rf"\b(?:I|we)(?:{Q}ll|\s+will)\s+be\s+using\s+{phrase(EN_CLAUSE)}",
            anchors=("using",),
            template="Will use {}",
        ),
        rule(
            "going_to_do",
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are)\s+(?:going\s+to|gonna)\s+(?!use\s|adopt\s|be\s|ask\s|need\s|have\s)([^.,\n]+)",
            anchors=("going", "gonna"),
            template="Plans to {}",
        ),
        rule(
            "plan_to",
            rf"(?:{IM}\s+planning|\bI\s+plan)\s+(?:to|on)\s+([^.,\n]+)",
            anchors=("plan", "planning"),
            template="Plans to {}",
        ),
        rule(
            "chosen",
            rf"\bI(?:{Q}ve|\s+have)\s+(?:chosen|picked|selected)\s+([^.,\n]+)",
            anchors=("chosen", "picked", "selected"),
            template="Chose {}",
        ),
        rule(
            "switching_to",
            rf"{IM}\s+(?:switching|moving|migrating)\s+(?:over\s+)?to\s+(?!a\s|the\s|[a-z]+\s+(?:next|this|in)\s)([^.,\n]+)",
            anchors=("switching", "moving", "migrating"),
            template="Switching to {}",
        ),
        rule(
            "will_go_with",
            rf"\b(?:I|we)(?:{Q}ll|\s+will)\s+go\s+with\s+{phrase(EN_CLAUSE)}",
            anchors=("go",),
            template="Will go with {}",
        ),
        rule(
            "switched",
            rf"\b(?:I|we)(?:{Q}ve|\s+have)?\s+(?:just\s+|finally\s+)?switched\s+(?:over\s+)?(?:from\s+[^.,\n]+?\s+)?to\s+{phrase(EN_CLAUSE + '|' + EN_AGO)}",
            anchors=("switched",),
            template="Switched to {}",
        ),
        rule(
            "settled_on",
            rf"\b(?:I|we)(?:{Q}ve|\s+have)?\s+(?:finally\s+)?settled\s+on\s+{phrase(EN_CLAUSE)}",
            anchors=("settled",),
            template="Settled on {}",
        ),
        # French
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
            rf"\bje\s+(?:compte|prévois\s+de|prévois\s+d{Q}|vais)\s+((?:déménager|partir|quitter|apprendre|changer|acheter|arrêter|commencer)[^.,\n]*)",
            anchors=("compte", "prévois", "vais"),
            template="Prévoit de {}",
        ),
        # Portuguese
        rule(
            "pt_decidi",
            r"\b(?:eu\s+)?(?:decidi|decidimos|resolvi|resolvemos)\s+(?:que\s+)?([^.,\n]+)",
            anchors=("decidi", "decidimos", "resolvi", "resolvemos"),
            template="Decidiu: {}",
        ),
        rule(
            "pt_vou_usar",
            rf"\b(?:eu\s+)?(?:vou|vamos)\s+(?:usar|utilizar)\s+{phrase(PT_CLAUSE)}",
            anchors=("usar", "utilizar"),
            template="Vai usar {}",
        ),
        rule(
            "pt_escolhi",
            r"\b(?:eu\s+)?(?:escolhi|escolhemos)\s+([^.,\n]+)",
            anchors=("escolhi", "escolhemos"),
            template="Escolheu {}",
        ),
        rule(
            "pt_vou_mudar",
            r"\b(?:eu\s+)?vou\s+(?:me\s+)?((?:mudar|largar|sair|aprender|comprar|trocar|começar|parar)[^.,\n]*)",
            anchors=("vou",),
            template="Vai {}",
        ),
    ),
)

PATTERN = RuleFamily(
    category="pattern",
    memory_type="factual",
    rules=(
        rule(
            "usually",
            r"\bI\s+usually\s+([^.,\n]+)",
            anchors=("usually",),
            polarity="positive",
            template="Usually {}",
        ),
        rule(
            "always",
            r"\bI\s+always\s+([^.,\n]+)",
            anchors=("always",),
            polarity="positive",
            template="Always {}",
        ),
        # Negative so that "I never X" and "I always X" do not share a key (the L3 defect again).
        rule(
            "never",
            r"\bI\s+never\s+([^.,\n]+)",
            anchors=("never",),
            polarity="negative",
            template="Never: {}",
        ),
        rule(
            "typically",
            r"\bI\s+typically\s+([^.,\n]+)",
            anchors=("typically",),
            polarity="positive",
            template="Typically {}",
        ),
        rule(
            "tend_to",
            r"\bI\s+tend\s+to\s+([^.,\n]+)",
            anchors=("tend",),
            polarity="positive",
            template="Tends to {}",
        ),
        rule(
            "often",
            r"\bI\s+(?:often|frequently|regularly)\s+([^.,\n]+)",
            anchors=("often", "frequently", "regularly"),
            polarity="positive",
            template="Often {}",
        ),
    ),
)
