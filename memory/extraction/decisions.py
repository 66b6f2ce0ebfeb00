"""The original's decision family (decisions and plans): its rules (sources unchanged, so its
worked examples still capture the same phrase), then the English phrasings it misses, then
the French and Portuguese rules (:mod:`memory.extraction.french`, :mod:`memory.extraction.portuguese`)."""

from __future__ import annotations

from memory.extraction.french import RULES as FRENCH
from memory.extraction.portuguese import RULES as PORTUGUESE
from memory.extraction.scanner import RuleFamily, rule
from memory.extraction.vocabulary import EN_AGO, EN_CLAUSE, IM, B, Q, phrase

__all__ = ["DECISION"]

# After "going to": what is not a plan (a place, a conversational move, a state).
_NOT_PLAN = (
    r"use|adopt|be|ask|need|have|the|a|an|my|our|work|school|bed|church|paste|share|show|give|send|"
    r"explain|describe|list|post|tell|say|write|check|try|test|run|get|do|make|keep|look|see\s+if|"
    r"go\s+with|stick|stay|cry|die|lose|fail"
)

DECISION = RuleFamily(
    category="decision",
    memory_type="episodic",
    rules=(
        # The original `\bI'?(?:ll|will)\s+use` has no whitespace before "will", so "I will
        # use X" never matched. The `\s+will` branch adds it; the original forms still match.
        rule(
            "will_use",
            r"\bI(?:'?(?:ll|will)|\s+will)\s+use\s+([^.,\n]+)",
            anchors=("use",),
            template="Will use {}",
        ),
        rule("chose", r"\bI\s+chose\s+([^.,\n]+)", anchors=("chose",), template="Chose {}"),
        # "I've decided to X" / "Ive decided" did not match, only "I decided" and
        # "I have decided".
        rule(
            "decided",
            r"\bI(?:\s+have|'?ve)?\s+decided\s+(?:to\s+)?([^.,\n]+)",
            anchors=("decided",),
            template="Decided: {}",
        ),
        # "I am going to use X" / "I am going with X" did not match, only I'm / Im.
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
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are)\s+(?:going\s+to|gonna)\s+(?!(?:{_NOT_PLAN}){B})([^.,\n]+)",
            anchors=("going", "gonna"),
            template="Plans to {}",
            # A verb: "going to Iceland in August" is a trip (an event), not a plan to do something.
            case="common",
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
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are)\s+(?:switching|moving|migrating)\s+(?:(?:my|our)\s+[a-z]+(?:\s+[a-z]+)?\s+|(?:careers|jobs|fields|roles)\s+)?(?:over\s+)?(?:to|into)\s+(?!a\s|the\s|[a-z]+\s+(?:next|this|in)\s)([^.,\n]+)",
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
        # Ours: the plans and choices people type that the reference's verbs miss.
        rule(
            "gonna_use",
            rf"(?:{IM}\s+(?!going\s+(?:to\s+)?(?:use|with|adopt)\s)|\bwe{Q}re\s+|\bwe\s+are\s+|\bwe\s+)(?:(?:going\s+to|gonna)\s+(?:use|adopt|go\s+with|stick\s+with|stay\s+with)|going\s+with)\s+{phrase(EN_CLAUSE)}",
            anchors=("going", "gonna"),
            template="Will use {}",
        ),
        rule(
            "we_will_use",
            rf"\bwe(?:{Q}ll|\s+will)\s+use\s+{phrase(EN_CLAUSE)}",
            anchors=("ll", "will"),
            template="Will use {}",
        ),
        rule(
            "we_chose",
            rf"\bwe(?:{Q}ve|\s+have)?\s+(?:finally\s+|just\s+)?(?:picked|chose|chosen|selected)\s+{phrase(EN_CLAUSE + '|over|instead')}",
            anchors=("picked", "chose", "chosen", "selected"),
            template="Chose {}",
        ),
        rule(
            "opted_for",
            rf"\b(?:I|we)(?:{Q}ve|\s+have|{Q}ll|\s+will)?\s+(?:finally\s+|just\s+|eventually\s+)?(?:opted\s+for|opt\s+for|gone\s+with|committed\s+to|stuck\s+with|stick\s+with|ended\s+up\s+(?:going\s+with|using|choosing|picking|with))\s+{phrase(EN_CLAUSE)}",
            anchors=("opted", "opt", "gone", "committed", "stuck", "stick", "ended"),
            template="Chose {}",
        ),
        rule(
            "sticking_with",
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are)\s+(?:sticking|staying)\s+with\s+{phrase(EN_CLAUSE)}",
            anchors=("sticking", "staying"),
            template="Sticking with {}",
        ),
        rule(
            "made_decision",
            rf"\b(?:I|we)(?:{Q}ve|\s+have)?\s+(?:finally\s+)?(?:made\s+(?:the|a|my|our)\s+decision|made\s+up\s+(?:my|our)\s+minds?)\s+to\s+{phrase(EN_CLAUSE)}",
            anchors=("made",),
            template="Decided: {}",
        ),
        rule(
            "quit",
            rf"\bI(?:{Q}ve|\s+have)?\s+(?:just\s+|finally\s+|recently\s+)?quit\s+((?:my\s+(?:job|day\s+job|position|role|phd|degree|band|team)|smoking|drinking|vaping|sugar|caffeine|alcohol|social\s+media|coffee|meat|twitter|facebook|instagram|tiktok)\b[^.,\n!?;]*)",
            anchors=("quit",),
            template="Quit {}",
        ),
        rule(
            "signed_up",
            rf"\b(?:I|we)(?:{Q}ve|\s+have)?\s+(?:just\s+|finally\s+|officially\s+|already\s+)?(?:signed\s+up|enrolled|enroled|registered)\s+(?:for|in|to)\s+{phrase(EN_CLAUSE)}",
            anchors=("signed", "enrolled", "enroled", "registered"),
            template="Signed up for {}",
        ),
        rule(
            "agreed_on",
            rf"\b(?:I|we)(?:{Q}ve|\s+have)?\s+(?:finally\s+|just\s+|eventually\s+)?(?:agreed\s+on|landed\s+on|went\s+for|gone\s+for|decided\s+on|narrowed\s+it\s+down\s+to)\s+(?!(?:nothing|anything|that|this|it|something)\b){phrase(EN_CLAUSE + '|over|instead')}",
            anchors=("agreed", "landed", "went", "gone", "decided", "narrowed"),
            template="Chose {}",
        ),
        rule(
            "my_plan_is",
            rf"\b(?:my|our)\s+plan\s+is\s+to\s+{phrase(EN_CLAUSE)}",
            anchors=("plan",),
            template="Plans to {}",
        ),
    )
    + FRENCH["decision"]
    + PORTUGUESE["decision"],
)
