"""The dated-event family: appointments, trips, deadlines, milestones — the English rules, then
the French and Portuguese ones (:mod:`memory.extraction.french`, :mod:`memory.extraction.portuguese`)."""

from __future__ import annotations

from memory.extraction.french import RULES as FRENCH
from memory.extraction.portuguese import RULES as PORTUGUESE
from memory.extraction.scanner import RuleFamily, rule
from memory.extraction.vocabulary import (
    EN_DATE,
    EN_DAYS,
    EN_KIN,
    EN_PARTNER,
    EN_PETS,
    END,
    IM,
    WS,
    Q,
    words_of,
)

__all__ = ["EVENT"]

# "Our CEO leaves next week": someone else's event, not the user's.
_OTHERS = (
    r"(?!(?:boss|manager|ceo|cto|cfo|colleague|coworker|co-worker|friend|friends|neighbour|neighbor|client|"
    r"clients|landlord|teacher|doctor|roommate|flatmate|lead|mentor|team|company|competitor|customer)\b)"
)


EVENT = RuleFamily(
    category="event",
    memory_type="episodic",
    rules=(
        rule(
            "have_dated",
            rf"\bI\s+have\s+(?!(?:no|nothing|time|to|been|had|got|decided|chosen|picked|selected|planned|promised|agreed|started|finished|done|made|tried|never|always|already|just)\s)((?:(?:a|an|my)\s+)?[^.,\n!?;]*?\s{EN_DATE}[^.,\n!?;]*)",
            anchors=("have",),
            template="Has {}",
        ),
        rule(
            "my_x_is_on",
            rf"\b(?:my|our)\s+{_OTHERS}([^.,\n!?;]{{2,40}}?(?:\s+is|{Q}s|\s+are|\s+starts|\s+will\s+be)(?:\s+(?:due|scheduled|planned|set|booked|happening|coming\s+up|moved\s+to))?(?:\s+for)?\s+{EN_DATE}[^.!?;\n]*)",
            anchors=("my", "our"),
            template="Event: {}",
        ),
        rule(
            "im_doing_on",
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are)\s+((?!going|gonna|planning(?!\s+(?:a|an|our|my|the)\s)|thinking|considering|moving\s+(?:to|my|our|the|all)\s|switching|migrating|porting|trying|asking|hoping)[a-z]+ing\b[^.,\n!?;]*?\s{EN_DATE}[^.,\n!?;]*)",
            anchors=("i", "im", "we"),
            template="Event: {}",
        ),
        rule(
            "i_start_on",
            rf"\bI\s+((?:start|begin|leave|fly|graduate)\s+[^.,\n!?;]*?{EN_DATE}[^.,\n!?;]*)",
            anchors=("start", "begin", "leave", "fly", "graduate"),
            template="Event: {}",
        ),
        rule(
            "got_dated",
            rf"\b(?:I{Q}ve\s+|I\s+have\s+)?got\s+((?:a|an|my)\s+[^.,\n!?;]*?\s{EN_DATE}[^.,\n!?;]*)",
            anchors=("got",),
            template="Has {}",
        ),
        rule(
            "dated_i_have",
            rf"\b(?:tomorrow|tonight|today|this\s+(?:week|weekend|{EN_DAYS})|next\s+(?:week|{EN_DAYS})|on\s+(?:{EN_DAYS}))\s*,?\s+I\s+have\s+((?:a|an|my)\s+[^.,\n!?;]+)",
            anchors=("have",),
            template="Has {}",
        ),
        # Ours.
        rule(
            "kin_doing_on",
            rf"\b(?:my|our)\s+((?:{EN_KIN}|{EN_PARTNER}|{EN_PETS})(?:{Q}s)?(?:\s+[^{WS}{END}]+)?\s+(?:is|are|{Q}s)\s+[a-z]+ing\b[^.,\n!?;]*?\s{EN_DATE}[^.,\n!?;]*)",
            anchors=words_of(EN_KIN, EN_PARTNER, EN_PETS),
            template="Event: {}",
        ),
        # "My daughter starts kindergarten in September", "Our son turns 3 on Tuesday".
        rule(
            "my_x_verb_on",
            rf"\b(?:my|our)\s+{_OTHERS}([^.,\n!?;]{{2,40}}?\s+(?:starts|begins|ends|leaves|departs|lands|arrives|graduates|turns|finishes|opens|closes|launches|happens|kicks\s+off|takes\s+place|comes\s+out|start|begin|end|finish)\b[^.,\n!?;]{{0,30}}?\s{EN_DATE}[^.!?;\n]*)",
            anchors=(
                "starts",
                "begins",
                "ends",
                "leaves",
                "departs",
                "lands",
                "arrives",
                "graduates",
                "turns",
                "finishes",
                "opens",
                "closes",
                "launches",
                "happens",
                "kicks",
                "takes",
                "comes",
                "start",
                "begin",
                "end",
                "finish",
            ),
            template="Event: {}",
        ),
        rule(
            "date_is_my",
            rf"\b((?:tomorrow|today|tonight|(?:next|this)\s+(?:week|{EN_DAYS})|{EN_DAYS})(?:{Q}s|\s+is)\s+(?:my|our)\s+[^.,\n!?;]+)",
            anchors=(
                "tomorrow",
                "today",
                "tonight",
                "week",
                "monday",
                "tuesday",
                "wednesday",
                "thursday",
                "friday",
                "saturday",
                "sunday",
                "weekend",
            ),
            template="Event: {}",
        ),
        # "going to" a place with a date ("we're going to Iceland in August"; not "going to buy …"). The
        # other travel verbs ("flying to Tokyo tomorrow") are -ing verbs with a date: im_doing_on.
        rule(
            "going_to_place",
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are)\s+(?:going|off|headed)\s+(?:back\s+|home\s+)?to\s+([^.,\n!?;]*?\s{EN_DATE}[^.,\n!?;]*)",
            anchors=("going", "off", "headed"),
            template="Trip to {}",
            case="proper",
        ),
        rule(
            "going_to_the",
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are)\s+(going\s+(?:back\s+)?to\s+(?:the|a|an|my|our)\s[^.,\n!?;]*?\s{EN_DATE}[^.,\n!?;]*)",
            anchors=("going",),
            template="Event: {}",
        ),
    )
    + FRENCH["event"]
    + PORTUGUESE["event"],
)
