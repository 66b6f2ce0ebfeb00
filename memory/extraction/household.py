"""The household families family, pets and relationships — the English rules, then the French
and Portuguese ones (:mod:`memory.extraction.french`, :mod:`memory.extraction.portuguese`)."""

from __future__ import annotations

from memory.extraction.french import RULES as FRENCH
from memory.extraction.portuguese import RULES as PORTUGUESE
from memory.extraction.scanner import RuleFamily, rule
from memory.extraction.vocabulary import (
    EN_COUNT,
    EN_KIN,
    EN_PARTNER,
    EN_PETS,
    END,
    IM,
    NOT_PET,
    WS,
    B,
    Q,
    words_of,
)

__all__ = ["FAMILY", "PET", "RELATIONSHIP"]

# After a count of children: ones that are not the user's ("30 kids per class", "two kids at a time").
_NOT_MINE = (
    r"\s+(?:per|a\s+day|a\s+week|each|every|at\s+a\s+time|in\s+(?:my|the|each|a)\s+(?:class|group|team))\b"
)
# What follows a pet: the rest of the clause, and a name given after a comma ("a dog, a mutt called
# Rosie", "my dog, Juniper.").
_PET_TAIL = (
    r"[^.,\n!?;]*(?:,\s*(?:an?|the|my|our)\s+[^.,\n!?;]*?\b(?:named|called)\s+[^.,\n!?;]+|"
    rf",\s*[^{WS}{END}]+(?=\s*(?:[.!?]|$)))?"
)

FAMILY = RuleFamily(
    category="family",
    memory_type="factual",
    rules=(
        rule(
            "my_kin",
            rf"\b(?:my|our)\s+((?:(?:two|three|four|\d+)\s+)?(?:(?:little|big|younger|older|baby|twin|step|eldest|youngest|oldest)\s+)?(?:(?:{EN_KIN})(?:-in-law)?|boys|girls)(?:{Q}s)?{B}[^.,\n!?;]*)",
            anchors=(*words_of(EN_KIN), "boys", "girls"),
            template="Family: {}",
        ),
        rule(
            "have_kin",
            rf"\b(?:I|we)(?:\s+have\s+got|{Q}ve\s+got|\s+have|{Q}ve)\s+(?:[^.,\n!?;]{{1,40}}?\s(?:and|&)\s+)??({EN_COUNT}\s+(?:\d+[- ]years?[- ]old\s+|(?:[a-z-]+\s+){{0,2}}?)(?:{EN_KIN}|boys?|girls?|husband|brother|sister|son|daughter)\b(?!{_NOT_MINE})[^.,\n!?;]*)",
            anchors=("have", "ve"),
            template="Has {}",
        ),
        rule(
            "parent_of",
            rf"{IM}\s+(?:a\s+)?((?:(?:proud|single|busy|working|first-time|new)\s+)?(?:dad|father|mom|mum|mother|parent|grandmother|grandma|grandfather|grandpa|grandparent|granny|nana)\s+(?:of|to)\s+[^.,\n!?;]+)",
            anchors=("of", "to"),
            template="Is a {}",
        ),
        rule("only_child", rf"{IM}\s+an\s+(only\s+child)", anchors=("only",), template="Is an {}"),
        # "I'm the youngest of four", "I'm the middle child".
        rule(
            "birth_order",
            rf"{IM}\s+the\s+((?:eldest|oldest|youngest|middle|second|third)(?:\s+(?:child|kid|one|sibling|daughter|son|of\s+(?:two|three|four|five|six|seven|eight|\d+)(?:\s+(?:kids|children|siblings|sisters|brothers))?)){B})",
            anchors=("eldest", "oldest", "youngest", "middle", "second", "third"),
            template="Is the {}",
        ),
        rule(
            "pregnant",
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are)\s+(?:finally\s+|now\s+)?((?:\d+\s+(?:weeks|months)\s+)?(?:pregnant|expecting)(?:\s+(?:with|again)[^.,\n!?;]*)?)(?=\s*(?:[{END}]|$|and|but|so))",
            anchors=("pregnant", "expecting"),
            template="Is {}",
        ),
        # Ours.
        rule(
            "have_children",
            rf"\b(?:I|we)(?:\s+have\s+got|{Q}ve\s+got|\s+have|{Q}ve)\s+((?:(?:young|little|small|grown(?:-up)?|adult|teenage)\s+)?(?:twins|triplets|kids|children|grandkids|grandchildren|stepkids|stepchildren){B}(?!{_NOT_MINE})[^.,\n!?;]*)",
            anchors=(
                "twins",
                "triplets",
                "kids",
                "children",
                "grandkids",
                "grandchildren",
                "stepkids",
                "stepchildren",
            ),
            template="Has {}",
        ),
        rule(
            "had_baby",
            rf"\b(?:I|we)(?:{Q}ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?had\s+((?:a|an|our|my)\s+(?:(?:first|second|third|fourth|new|baby|little)\s+)*(?:baby|kid|child|son|daughter|girl|boy|twins)\b[^.,\n!?;]*)",
            anchors=("had",),
            template="Had {}",
        ),
        rule(
            "status_with_kids",
            rf"{IM}\s+(?:happily\s+)?(?:married|divorced|single|separated|widowed|a\s+(?:single\s+)?(?:mom|mum|dad|mother|father|parent))\s+(?:with|of)\s+({EN_COUNT}\s+(?:(?:young|little|small|grown(?:-up)?|adult|teenage)\s+)?(?:{EN_KIN}|boys|girls){B})",
            anchors=(
                "married",
                "divorced",
                "single",
                "separated",
                "widowed",
                "mom",
                "mum",
                "dad",
                "mother",
                "father",
                "parent",
            ),
            template="Has {}",
        ),
    )
    + FRENCH["family"]
    + PORTUGUESE["family"],
)

PET = RuleFamily(
    category="pet",
    memory_type="factual",
    rules=(
        rule(
            "have_pet",
            rf"\b(?:I|we)(?:\s+have\s+got|{Q}ve\s+got|\s+have|{Q}ve|\s+own)\s+(?:[^.,\n!?;]{{1,40}}?\s(?:and|&)\s+)??({EN_COUNT}\s+(?:[a-z-]+\s+){{0,2}}?(?:{EN_PETS})\b(?!\s+(?:{NOT_PET}){B}){_PET_TAIL})",
            anchors=("have", "ve", "own"),
            template="Has {}",
        ),
        rule(
            "my_pet",
            rf"\b(?:my|our)\s+((?:(?:two|three|four|\d+)\s+)?(?:(?:little|old|new|young|senior|rescue|baby)\s+)?(?:{EN_PETS})\b(?!\s+(?:{NOT_PET}){B}){_PET_TAIL})",
            anchors=words_of(EN_PETS),
            template="Pet: {}",
        ),
        # Ours.
        # Plural pets without a count: "we keep chickens", "I have cats".
        rule(
            "have_pets",
            rf"\b(?:I|we)(?:{Q}ve\s+got|\s+have\s+got|\s+have|\s+keep|\s+own|\s+raise|\s+breed)\s+((?:pet\s+)?(?:chickens|hens|ducks|goats|bees|cats|dogs|rabbits|bunnies|hamsters|ferrets|parrots|budgies|horses|snakes|lizards|guinea\s+pigs|rats|mice|tortoises|sheep|alpacas|pigeons)(?:\s+(?:and|&)\s+{EN_COUNT}\s+[a-z-]+)?\b(?!\s+(?:{NOT_PET}){B}))",
            anchors=(
                "chickens",
                "hens",
                "ducks",
                "goats",
                "bees",
                "cats",
                "dogs",
                "rabbits",
                "bunnies",
                "hamsters",
                "ferrets",
                "parrots",
                "budgies",
                "horses",
                "snakes",
                "lizards",
                "pigs",
                "rats",
                "mice",
                "tortoises",
                "sheep",
                "alpacas",
                "pigeons",
            ),
            template="Has {}",
        ),
        # "I'm a dog mom", "a crazy cat lady": not a job but a pet.
        rule(
            "pet_parent",
            rf"{IM}\s+(?:an?\s+)?(?:(?:proud|crazy|total|full-time|new)\s+)?(dog|cat|bunny|rabbit|bird|horse|fur|puppy|kitten)\s+(?:mom|mum|dad|mama|papa|parent|lady|guy|owner|baby\s+mama)\b",
            anchors=("mom", "mum", "dad", "mama", "papa", "parent", "lady", "guy", "owner"),
            template="Has a {}",
        ),
        # "We adopted a cat last month, her name is Mochi".
        rule(
            "pet_then_name",
            rf"\b(?:{EN_PETS})\b[^.!?\n]{{0,60}}?,\s*(?:and\s+)?(?:his|her|its|their)\s+names?\s+(?:is|are|{Q}s)\s+([^{WS}{END}]+(?:\s+(?:and|&)\s+[^{WS}{END}]+)?)",
            anchors=("name", "names"),
            template="Pet named {}",
            case="proper",
        ),
        rule(
            "got_pet",
            rf"\b(?:I|we)(?:{Q}ve|\s+have|\s+just|\s+recently|\s+finally)*\s+(?:adopted|rescued|got|bought|brought\s+home|took\s+in)\s+({EN_COUNT}\s+(?:new\s+)?(?:[a-z-]+\s+){{0,2}}?(?:{EN_PETS})\b(?!\s+(?:{NOT_PET}){B}){_PET_TAIL})",
            anchors=("adopted", "rescued", "got", "bought", "brought", "took"),
            template="Has {}",
        ),
    )
    + FRENCH["pet"]
    + PORTUGUESE["pet"],
)

RELATIONSHIP = RuleFamily(
    category="relationship",
    memory_type="factual",
    rules=(
        rule(
            "im_status",
            rf"{IM}\s+((?:happily\s+|recently\s+|newly\s+)?(?:married(?:\s+to\s+[^.,\n!?;]+)?|single|engaged|divorced|getting\s+divorced|separated|widowed|dating\s+[^.,\n!?;]+|seeing\s+someone|in\s+a\s+(?:[a-z-]+\s+)?relationship)\b)",
            anchors=(
                "married",
                "single",
                "engaged",
                "divorced",
                "separated",
                "widowed",
                "dating",
                "seeing",
                "relationship",
            ),
            template="Is {}",
        ),
        rule(
            "my_partner",
            rf"\bmy\s+((?:{EN_PARTNER})(?:{Q}s)?{B}[^.,\n!?;]*)",
            anchors=words_of(EN_PARTNER),
            template="Partner: {}",
        ),
        # Ours.
        rule(
            "have_partner",
            rf"\b(?:I)(?:\s+have\s+got|{Q}ve\s+got|\s+have|{Q}ve)\s+((?:a|an)\s+(?:{EN_PARTNER}){B}[^.,\n!?;]*)",
            anchors=words_of(EN_PARTNER),
            template="Has {}",
        ),
        rule(
            "been_married",
            rf"\b(?:I|we)(?:{Q}ve|\s+have)\s+been\s+((?:happily\s+)?(?:married|together|engaged|dating)\b[^.,\n!?;]*)",
            anchors=("married", "together", "engaged", "dating"),
            template="Has been {}",
        ),
        # "I'm dating someone new, her name is Zoe".
        rule(
            "partner_then_name",
            rf"\b(?:dating|seeing|married\s+to|engaged\s+to|{EN_PARTNER}|wife|husband)\b[^.!?\n]{{0,40}}?,\s*(?:and\s+)?(?:his|her|their)\s+name\s+(?:is|{Q}s)\s+([^{WS}{END}]+)",
            anchors=("name",),
            template="Partner named {}",
            case="proper",
        ),
        rule(
            "got_engaged",
            rf"\b(?:I|we)(?:{Q}ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+|officially\s+)?got\s+(engaged|married|hitched|divorced)\b",
            anchors=("got",),
            template="Got {}",
        ),
        rule(
            "we_are_status",
            rf"\bwe(?:{Q}re|\s+are)\s+((?:happily\s+|recently\s+|newly\s+)?(?:married|engaged|separated|getting\s+divorced)){B}",
            anchors=("married", "engaged", "separated", "divorced"),
            template="Is {}",
        ),
    )
    + FRENCH["relationship"]
    + PORTUGUESE["relationship"],
)
