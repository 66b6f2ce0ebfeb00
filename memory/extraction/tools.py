"""The tool family: the products, languages and systems the user works with ("I use Notion", "we're on
GCP", "my editor of choice is VS Code") — the English rules, then the French and Portuguese ones
(:mod:`memory.extraction.french`, :mod:`memory.extraction.portuguese`). The clause reader adds the tools
of phrasings no rule reads (:mod:`memory.extraction.reader`)."""

from __future__ import annotations

from memory.extraction.french import RULES as FRENCH
from memory.extraction.portuguese import RULES as PORTUGUESE
from memory.extraction.scanner import RuleFamily, rule
from memory.extraction.vocabulary import (
    EN_DAYS,
    EN_MONTHS,
    EN_SEASONS,
    EN_TOOL_STOPS,
    END,
    IM,
    WS,
    B,
    Q,
    inner,
    phrase,
    words,
)

__all__ = ["TOOL"]

# What people write that is not a technology.
_WRITTEN = (
    r"english|french|spanish|german|portuguese|italian|chinese|japanese|arabic|russian|dutch|poetry|fiction|"
    r"novels|songs|music|code|emails?|letters|articles|blogs?|essays|reports|books|stories|scripts|docs"
)

TOOL = RuleFamily(
    category="tool",
    memory_type="factual",
    min_length=2,
    rules=(
        rule(
            "i_use",
            rf"\bI\s+(?:mostly\s+|mainly\s+|also\s+|primarily\s+|only\s+|still\s+|now\s+)?use\s+{phrase(EN_TOOL_STOPS)}",
            anchors=("use",),
            template="Uses {}",
        ),
        rule(
            "using",
            rf"(?:{IM}|\bI{Q}ve\s+been|\bI\s+have\s+been|\bwe{Q}re|\bwe\s+are|\bwe{Q}ve\s+been|\bI{Q}m\s+still)\s+(?:currently\s+|mostly\s+|now\s+)?using\s+{phrase(EN_TOOL_STOPS)}",
            anchors=("using",),
            template="Uses {}",
        ),
        rule(
            "we_use",
            rf"\b(?:we|our\s+team|(?:my|our)\s+(?:team|company|job|startup|org|lab|department)|everyone\s+at\s+my\s+(?:company|job|work))\s+(?:mostly\s+|also\s+|all\s+)?(?:use|uses)\s+{phrase(EN_TOOL_STOPS)}",
            anchors=("use", "uses"),
            template="Uses {}",
        ),
        rule(
            "code_in",
            rf"\bI\s+(?:code|program|write\s+code|develop)\s+(?:mostly\s+|mainly\s+)?in\s+{phrase(EN_TOOL_STOPS)}",
            anchors=("code", "program", "develop"),
            template="Codes in {}",
        ),
        rule(
            "stack",
            r"\b(?:our|my)\s+(?:tech\s+)?stack(?:\s+(?:at\s+work|here|at\s+my\s+job|for\s+work))?(?:\s+is|\s*:)\s*([^.\n]+)",
            anchors=("stack",),
            template="Stack: {}",
        ),
        rule(
            "im_on",
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are|\b(?:I|we)(?:{Q}ve|\s+have)\s+been)\s+(?:now\s+|still\s+|currently\s+|mostly\s+|all\s+)?on\s+(?:an?\s+)?({inner(EN_TOOL_STOPS + '|with|since')})",
            anchors=("on",),
            template="Uses {}",
            case="named",
        ),
        rule(
            "been_coding_in",
            rf"\bI(?:{Q}ve|\s+have)\s+been\s+(?:coding|programming|writing\s+code|developing)\s+(?:mostly\s+)?in\s+{phrase(EN_TOOL_STOPS)}",
            anchors=("been",),
            template="Codes in {}",
        ),
        rule(
            "work_with",
            rf"\bI\s+(?:mostly\s+|mainly\s+)?work\s+with\s+({inner(EN_TOOL_STOPS)})",
            anchors=("work",),
            template="Works with {}",
            case="proper",
        ),
        rule(
            "my_device",
            r"\bmy\s+((?:laptop|phone|computer|machine|desktop|editor|ide|os|daily\s+driver|main\s+machine)\s+is\s+[^.,\n!?;]+)",
            anchors=("my",),
            template="Setup: {}",
        ),
        rule(
            "run_on",
            rf"\bI\s+run\s+(?:everything|it\s+all|my\s+[a-z]+)\s+on\s+{phrase(EN_TOOL_STOPS)}",
            anchors=("run",),
            template="Runs on {}",
        ),
        # Ours.
        rule(
            "my_main_tool",
            rf"\bmy\s+((?:(?:main|primary|daily|usual|default|current|work|home)\s+)?(?:language|editor|ide|os|browser|shell|terminal|distro|setup|rig|toolchain|framework|database|db|keyboard|camera|daily\s+driver)\s+(?:is|{Q}s|:)\s*[^.,\n!?;]+)",
            anchors=(
                "language",
                "editor",
                "ide",
                "os",
                "browser",
                "shell",
                "terminal",
                "distro",
                "setup",
                "rig",
                "toolchain",
                "framework",
                "database",
                "db",
                "keyboard",
                "camera",
                "driver",
            ),
            template="Setup: {}",
        ),
        rule(
            "rely_on",
            rf"\b(?:I|we|(?:my|our)\s+(?:team|company|org|startup|lab|department|business|shop|agency|school))\s+(?:really\s+|mostly\s+|heavily\s+|basically\s+|still\s+)?(?:rely|relies|depend|depends)\s+(?:heavily\s+|mostly\s+|entirely\s+)?on\s+{phrase(EN_TOOL_STOPS)}",
            anchors=("rely", "relies", "depend", "depends"),
            template="Uses {}",
            case="proper",
        ),
        rule(
            "x_shop",
            rf"\bwe(?:{Q}re|\s+are)\s+(?:a|an)\s+{words(2)}\s+shop\b",
            anchors=("shop",),
            template="Uses {}",
            case="proper",
        ),
        rule(
            "x_user",
            rf"{IM}\s+(?:a|an)\s+(?:(?:big|huge|long-?time|happy|loyal|daily|heavy|die-?hard|proud|lifelong)\s+)?((?:[^{WS}{END}]+\s+){{0,2}}?[^{WS}{END}]+)\s+(?:user|person)\b",
            anchors=("user", "person"),
            template="Uses {}",
            case="proper",  # "a Mac user", not "a morning person"
        ),
        rule(
            "write_language",
            rf"\bI\s+(?:mostly\s+|mainly\s+|usually\s+|only\s+|also\s+)?write\s+(?!(?:{_WRITTEN}){B}){words(1)}(?=\s*(?:[,.!;]|$|(?:and|but|these\s+days|nowadays|now|mostly|mainly|professionally|for\s+(?:work|a\s+living)|at\s+work|daily|every\s+day){B}))",
            anchors=("write",),
            template="Uses {}",
            case="proper",
        ),
        rule(
            "do_my_x_in",
            rf"\b(?:I|we)\s+(?:mostly\s+|mainly\s+|usually\s+|always\s+)?(?:do|write|build|make|edit|draw|design|host|deploy|keep|manage|track|develop|program|script|render|model|store|plan)\s+(?:(?!(?:to|at|for|from)\s)[a-z-]+\s+){{0,3}}?(?:in|with|on|using)\s+(?!(?:{EN_MONTHS}|{EN_DAYS}|{EN_SEASONS}|the|my|a|an)\b){phrase(EN_TOOL_STOPS)}",
            anchors=(
                "do",
                "write",
                "build",
                "make",
                "edit",
                "draw",
                "design",
                "host",
                "deploy",
                "keep",
                "manage",
                "track",
                "develop",
                "program",
                "script",
                "render",
                "model",
                "store",
                "plan",
            ),
            template="Uses {}",
            case="proper",
        ),
    )
    + FRENCH["tool"]
    + PORTUGUESE["tool"],
)
