"""The original's preference and pattern (habit) families: its rules (sources unchanged, so its
worked examples still capture the same phrase), then the English phrasings it misses, then the French
and Portuguese rules (:mod:`memory.extraction.french`, :mod:`memory.extraction.portuguese`). Its
decision family is in :mod:`memory.extraction.decisions`."""

from __future__ import annotations

from memory.extraction.french import RULES as FRENCH
from memory.extraction.portuguese import RULES as PORTUGUESE
from memory.extraction.scanner import RuleFamily, rule
from memory.extraction.vocabulary import (
    EN_ADV,
    EN_PREF_STOPS,
    END,
    IM,
    WS,
    B,
    Q,
    inner,
    phrase,
    words_of,
)

__all__ = ["PATTERN", "PREFERENCE"]

# "a huge Arsenal fan": words before "fan" that say how much, not what of.
_FAN_ADJ = r"big|huge|massive|die-?hard|lifelong|long-?time|total|true|real|proud|complete|hopeless|proper"
# "a nice person" is not a taste.
_NOT_TRAIT = (
    r"nice|good|bad|kind|decent|terrible|horrible|normal|different|better|worse|reasonable|simple|busy|old|"
    r"young|new|private|shy|quiet|patient|lucky|grown|adult|real"
)
_INTO_STOPS = EN_PREF_STOPS + r"|lately|recently|these\s+days|right\s+now|now"
_FROM_NOW_STOPS = EN_PREF_STOPS + r"|from\s+now\s+on|going\s+forward"
# "I'm gluten-free": what a diet leaves out.
_DIET_FREE = r"gluten|dairy|lactose|sugar|nut|meat|alcohol|caffeine|egg|soy|wheat|grain|fodmap"
# After "I don't eat": a food, not an amount or a time ("I don't eat much", "I can't eat anymore").
_FOOD = (
    r"(?!(?:much|a\s+lot|anything|enough|well|properly|out|late|early|before|after|until|at|when|if|that|it|"
    r"anymore|any\s+more|now|right\s+now|today|tonight)\b)"
)
# After "I generally": an opinion or a happening, not a habit ("I generally agree", "I rarely get this").
_NOT_HABIT = r"(?:agree|disagree|think|feel|believe|get|see|hear|have|need|know|understand)\b"

PREFERENCE = RuleFamily(
    category="preference",
    memory_type="factual",
    rules=(
        # The original's seven, in its evaluation order.
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
            r"(?:^|[.!?\n]\s*)([a-z][^.,\n!?]{1,40}?)\s+(?:is|are)\s+(?:still\s+|definitely\s+)?my\s+(?:all[- ]time\s+|absolute\s+|total\s+|personal\s+|top\s+|number\s+one\s+)?(?:favorite|favourite|fave|fav|go-to)\b",
            anchors=("favorite", "favourite", "fave", "fav", "go"),
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
            rf"{IM}\s+(?:not\s+(?:a\s+|really\s+a\s+|much\s+of\s+a\s+)?|no\s+)(?:big\s+|huge\s+)?fan\s+of\s+([^.,\n]+)",
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
        # Ours, for the phrasings people type: an adverb before the verb ("I much prefer", "I really
        # dislike", "I do love"), other spellings and synonyms of the verb, "I'm into / obsessed with",
        # "a huge Arsenal fan", "I'd rather". The reference's own forms (no adverb; "really" before like
        # and prefer) are left to its rules above, so that one sentence gives one fact.
        rule(
            "adverb_prefer",
            rf"\bI\s+(?:(?!really\s+prefer\s){EN_ADV}+prefer|{EN_ADV}*(?:perfer|prefere|preffer|prefr))\s+{phrase(EN_PREF_STOPS)}",
            anchors=(*words_of(EN_ADV), "perfer", "prefere", "preffer", "prefr"),
            polarity="positive",
            template="Prefers {}",
        ),
        rule(
            "adverb_love",
            rf"\bI\s+(?:{EN_ADV}+love|{EN_ADV}*(?:adore|luv|lvoe|lurve))\s+{phrase(EN_PREF_STOPS)}",
            anchors=(*words_of(EN_ADV), "adore", "luv", "lvoe", "lurve"),
            polarity="positive",
            template="Loves {}",
        ),
        rule(
            "adverb_like",
            rf"\bI\s+(?!really\s+like\s){EN_ADV}+(?:like|enjoy)\s+{phrase(EN_PREF_STOPS)}",
            anchors=words_of(EN_ADV),
            polarity="positive",
            template="Likes {}",
        ),
        rule(
            "adverb_dislike",
            rf"\bI\s+(?:{EN_ADV}+(?:hate|dislike|avoid)|{EN_ADV}*(?:detest|despise|loathe|abhor))\s+{phrase(EN_PREF_STOPS)}",
            anchors=(*words_of(EN_ADV), "detest", "despise", "loathe", "abhor"),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "cant_bear",
            rf"\bI\s+(?:{EN_ADV}+(?:can{Q}?t|cannot)\s+stand|{EN_ADV}*(?:can{Q}?t|cannot)\s+(?:bear|tolerate|stomach))\s+{phrase(EN_PREF_STOPS)}",
            anchors=("stand", "bear", "tolerate", "stomach"),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "cant_get_enough",
            rf"\b(?:I\s+)?(?:can{Q}?t|cannot|could\s+never)\s+get\s+enough\s+of\s+{phrase(_INTO_STOPS)}",
            anchors=("enough",),
            polarity="positive",
            template="Loves {}",
        ),
        rule(
            "dont_eat",
            rf"\bI\s+{EN_ADV}?(?:don{Q}?t|do\s+not|no\s+longer)\s+((?:eat|drink)\s+{_FOOD}{inner(EN_PREF_STOPS)})",
            anchors=("eat", "drink"),
            polarity="negative",
            template="Does not {}",
        ),
        rule(
            "cant_eat",
            rf"\bI\s+(?:can{Q}?t|cannot)\s+((?:eat|drink)\s+{_FOOD}{inner(EN_PREF_STOPS)})",
            anchors=("eat", "drink"),
            polarity="negative",
            template="Cannot {}",
        ),
        rule(
            "into",
            rf"{IM}\s+{EN_ADV}*(?:(?:so|very|super|big\s+time)\s+)?(?:into|obsessed\s+with|passionate\s+about|crazy\s+about|mad\s+about|nuts\s+about|addicted\s+to|hooked\s+on|a\s+sucker\s+for|keen\s+on|fond\s+of|partial\s+to)\s+(?!(?:my|the|a|an|our|his|her|their|week|year|month|day|part|chapter)\b){phrase(_INTO_STOPS)}",
            anchors=(
                "into",
                "obsessed",
                "passionate",
                "crazy",
                "mad",
                "nuts",
                "addicted",
                "hooked",
                "sucker",
                "keen",
                "fond",
                "partial",
            ),
            polarity="positive",
            template="Likes {}",
        ),
        rule(
            "x_fan",
            rf"{IM}\s+(?:(?:a|an)\s+)?(?:(?:{_FAN_ADJ})\s+)*(?!(?:a|an|the|my|your|his|her|their|{_FAN_ADJ})\s)((?:[^{WS}{END}]+\s+){{0,2}}?[^{WS}{END}]+)\s+(?:fan|supporter)(?!\s+of{B})(?![a-z])",
            anchors=("fan", "supporter"),
            polarity="positive",
            template="Is a fan of {}",
        ),
        rule(
            "x_person",
            rf"{IM}\s+((?:a|an)\s+(?:(?:{_FAN_ADJ})\s+)?(?!(?:{_NOT_TRAIT})\s)(?:[^{WS}{END}]+\s+){{0,2}}?(?:lover|person|enthusiast|nerd|geek|addict|junkie|snob|fanatic|buff|foodie|freak|night\s+owl|early\s+bird))(?=\s*(?:[{END}]|$|(?:and|but|so|who|lol|haha){B}))",
            anchors=(
                "lover",
                "person",
                "enthusiast",
                "nerd",
                "geek",
                "addict",
                "junkie",
                "snob",
                "fanatic",
                "buff",
                "foodie",
                "freak",
                "owl",
                "bird",
            ),
            polarity="positive",
            template="Is {}",
        ),
        rule(
            "rather",
            rf"\b(?:I{Q}d|id|I\s+would)\s+(?:much\s+|really\s+|honestly\s+)?rather\s+(?!(?:not|you|we|they|he|she|die)\b){phrase(EN_PREF_STOPS)}",
            anchors=("d", "id", "would"),
            polarity="positive",
            template="Would rather {}",
        ),
        rule(
            "rather_not",
            rf"\b(?:I{Q}d|id)\s+(?:much\s+|really\s+)?(?:rather\s+(?:not|(?:you|we)\s+(?:didn{Q}?t|did\s+not|don{Q}?t|do\s+not|not|never|avoid|avoided))|prefer\s+(?:not\s+to|(?:you|we)\s+(?:didn{Q}?t|did\s+not|not)|no))\s+{phrase(EN_PREF_STOPS)}",
            anchors=("d", "id"),
            polarity="negative",
            template="Would rather not: {}",
        ),
        rule(
            "would_prefer",
            rf"\b(?:I{Q}d|id)\s+(?:much\s+|really\s+)?prefer\s+(?!(?:not|if|no|you|we|it)\b){phrase(_FROM_NOW_STOPS)}",
            anchors=("d", "id"),
            polarity="positive",
            template="Prefers {}",
        ),
        rule(
            "dont_care_for",
            rf"\bI\s+(?:don{Q}?t|do\s+not)\s+care\s+(?:much\s+)?for\s+{phrase(EN_PREF_STOPS)}",
            anchors=("care",),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "not_x_person",
            rf"{IM}\s+(?:really\s+|just\s+|honestly\s+|definitely\s+)?not\s+(?:really\s+|much\s+of\s+)?((?:a|an)\s+(?:[^{WS}{END}]+\s+){{0,2}}?(?:person|people|fan|lover|type|drinker|eater))\b(?!\s+of\b)",
            anchors=("person", "people", "fan", "lover", "type", "drinker", "eater"),
            polarity="negative",
            template="Is not {}",
        ),
        rule(
            "x_free",
            rf"{IM}\s+(?:(?:strictly|mostly|completely|totally)\s+)?({_DIET_FREE})[- ]free\b",
            anchors=("free",),
            polarity="negative",
            template="Avoids: {}",
        ),
        rule(
            "not_big_on",
            rf"{IM}\s+not\s+(?:(?:really|that|very|too|a)\s+)?(?:big|huge|keen|crazy|mad|fussed)\s+(?:on|about)\s+{phrase(EN_PREF_STOPS)}",
            anchors=("big", "huge", "keen", "crazy", "mad", "fussed"),
            polarity="negative",
            template="Dislikes: {}",
        ),
        rule(
            "would_like_it_if",
            rf"\b(?:I{Q}d|id)\s+(?:really\s+)?(?:love|like|appreciate|prefer)\s+it\s+if\s+you\s+(?!(?:could|can|would|will|please|just|help|tell|give|show|explain|write|did|do)\b){phrase(EN_PREF_STOPS)}",
            anchors=("d", "id"),
            polarity="positive",
            template="Would like it if you {}",
        ),
        rule(
            "favourite_variants",
            rf"\bmy\s+(?:(?:all[- ]time|absolute|current|personal|top)\s+)?(?:fave|fav|go-to|preferred|(?:all[- ]time|absolute)\s+favou?rite)\s+((?:[a-z]+(?:\s+[a-z]+)?\s+)?(?:is|are|has\s+to\s+be|would\s+be|{Q}s)\s+[^.,\n]+)",
            anchors=("fave", "fav", "go", "preferred", "time", "absolute"),
            polarity="positive",
            template="Favourite {}",
        ),
    )
    + FRENCH["preference"]
    + PORTUGUESE["preference"],
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
        # Negative so that "I never X" and "I always X" do not share a key (the original gave them one shared key).
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
        # Ours.
        rule(
            "generally",
            rf"\bI\s+(?:normally|generally|habitually|almost\s+always|nearly\s+always|pretty\s+much\s+always)\s+(?!{_NOT_HABIT}){phrase(EN_PREF_STOPS)}",
            anchors=("normally", "generally", "habitually", "almost", "nearly", "pretty"),
            polarity="positive",
            template="Usually {}",
        ),
        # Negative, so that it shares its key with "I never X".
        rule(
            "rarely",
            rf"\bI\s+(?:rarely|seldom|hardly\s+ever|almost\s+never|pretty\s+much\s+never|basically\s+never)\s+(?!{_NOT_HABIT}){phrase(EN_PREF_STOPS)}",
            anchors=("rarely", "seldom", "hardly", "almost", "pretty", "basically"),
            polarity="negative",
            template="Never: {}",
        ),
    ),
)
