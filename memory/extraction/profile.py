"""The profile families (SPEC §3): name, residence, job and employer, tools, family, pets, relationship,
dated events — in English, French and Portuguese."""

from __future__ import annotations

from memory.extraction.scanner import RuleFamily, rule
from memory.extraction.vocabulary import (
    EN_AGO,
    EN_CLAUSE,
    EN_COUNT,
    EN_DATE,
    EN_DAYS,
    EN_KIN,
    EN_PARTNER,
    EN_PETS,
    EN_TOOL_STOPS,
    END,
    FR_CLAUSE,
    FR_COUNT,
    FR_DATE,
    FR_KIN,
    FR_PETS,
    FR_TOOL_STOPS,
    IM,
    NOT_JOB,
    NOT_JOB_FR,
    NOT_JOB_PT,
    PT_CLAUSE,
    PT_COUNT,
    PT_DATE,
    PT_KIN,
    PT_PETS,
    PT_TOOL_STOPS,
    WS,
    B,
    Q,
    inner,
    phrase,
    words,
)

__all__ = ["EVENT", "FAMILY", "JOB", "NAME", "PET", "RELATIONSHIP", "RESIDENCE", "TOOL"]

NAME = RuleFamily(
    category="name",
    memory_type="factual",
    min_length=2,
    rules=(
        rule(
            "my_name_is",
            rf"\bmy\s+(?:first\s+)?name(?:{Q}s|\s+is)\s+{words(4)}",
            anchors=("name",),
            template="Name is {}",
        ),
        rule("called", rf"{IM}\s+called\s+{words(3)}", anchors=("called",), template="Name is {}"),
        rule(
            "call_me",
            rf"\bcall\s+me\s+(?!when|if|back|later|at|on|tomorrow|asap|now|after|before)([^{WS}{END}]+)",
            anchors=("call",),
            template="Goes by {}",
        ),
        # "I'm Priya, …": a single capitalised word closing the clause.
        rule(
            "im_name",
            rf"{IM}\s+([^{WS}{END}]+)(?=\s*(?:[,.!]|$|\s+(?:and|from|here|btw|lol|by\s+the\s+way){B}))",
            anchors=("i", "im"),
            template="Name is {}",
            capitalised=True,
        ),
        rule(
            "name_s",
            rf"(?<!the\s)\bname{Q}s\s+{words(3)}",
            anchors=("name",),
            template="Name is {}",
        ),
        rule("go_by", rf"\bI\s+go\s+by\s+{words(3)}", anchors=("by",), template="Goes by {}"),
        rule(
            "name_here",
            rf"(?:^|[.!?\n]\s*){words(1)}\s+here\s*(?=[,.!]|$)",
            anchors=("here",),
            template="Name is {}",
            capitalised=True,
        ),
        rule(
            "fr_nom",
            rf"\b(?:je\s+m{Q}appelle|moi\s+c{Q}est|mon\s+(?:pré)?nom\s+est)\s+{words(3)}",
            anchors=("appelle", "est"),
            template="S'appelle {}",
        ),
        rule(
            "pt_nome",
            rf"\b(?:(?:meu\s+nome|o\s+meu\s+nome)\s+é|(?:eu\s+)?me\s+chamo|pode\s+me\s+chamar\s+de)\s+{words(3)}",
            anchors=("nome", "chamo", "chamar"),
            template="Chama-se {}",
        ),
    ),
)

RESIDENCE = RuleFamily(
    category="residence",
    memory_type="factual",
    rules=(
        rule(
            "live_in",
            rf"\b(?:I|we|and)\s+(?:currently\s+|now\s+|still\s+|actually\s+)?live\s+(?:with\s+(?:my\s+)?[a-z]+\s+)?(?:just\s+)?(?:in|near|outside(?:\s+of)?|close\s+to|around)\s+(?:an?\s+(?:flat|house|apartment|studio)\s+in\s+)?{phrase(EN_CLAUSE + '|with|for|now|' + EN_AGO)}",
            anchors=("live",),
            template="Lives in {}",
        ),
        rule(
            "living_in",
            rf"(?:{IM}\s+(?:currently\s+|now\s+)?(?:based|living)|\bI{Q}ve\s+been\s+living|\bI\s+have\s+been\s+living|\bcurrently\s+(?:living|based)|,\s*(?:living|based))\s+in\s+{phrase(EN_CLAUSE + '|with|for|now|' + EN_AGO)}",
            anchors=("living", "based"),
            template="Lives in {}",
        ),
        rule(
            "lived_in",
            rf"\b(?:I|we)(?:{Q}ve|\s+have)\s+(?:always\s+)?lived\s+in\s+{phrase(EN_CLAUSE + '|with|for|my|all|since|' + EN_AGO)}",
            anchors=("lived",),
            template="Lives in {}",
        ),
        rule(
            "bought_home",
            rf"\b(?:I|we)\s+(?:just\s+|finally\s+|recently\s+)?bought\s+(?:a|an|our|my)\s+(?:house|flat|apartment|place|home|condo)\s+in\s+{phrase(EN_CLAUSE + '|with|for|' + EN_AGO)}",
            anchors=("bought",),
            template="Lives in {}",
        ),
        rule(
            "moved_to",
            rf"\b(?:I|we)(?:{Q}ve|\s+have|\s+just|\s+recently|\s+finally)*\s+(?:moved|relocated)\s+(?:back\s+)?(?:from\s+[^.,\n]+?\s+)?to\s+{phrase(EN_CLAUSE + '|with|for|now|' + EN_AGO)}",
            anchors=("moved", "relocated"),
            template="Lives in {}",
        ),
        rule(
            "moving_to",
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are)\s+(?:moving|relocating)\s+to\s+{phrase(EN_CLAUSE + '|with|for|' + EN_AGO)}",
            anchors=("moving", "relocating"),
            template="Is moving to {}",
        ),
        rule(
            "fr_habite",
            rf"\b(?:j{Q}habite|je\s+vis|je\s+réside|on\s+habite|on\s+vit|nous\s+habitons|nous\s+vivons)\s+(?:à|a|au|aux|en|dans|sur|près\s+de)\s+{phrase(FR_CLAUSE + '|avec|pour|maintenant')}",
            anchors=("habite", "vis", "réside", "vit", "habitons", "vivons"),
            template="Habite à {}",
        ),
        rule(
            "fr_demenage",
            rf"\b(?:je\s+viens\s+de|j{Q}ai|on\s+a|nous\s+avons|on\s+vient\s+d{Q})\s*(?:déménager|déménagé|emménager|emménagé)\s+(?:à|a|au|aux|en|dans|sur)\s+{phrase(FR_CLAUSE + '|avec|pour|l{Q}|cet|cette|il')}",
            anchors=("déménager", "déménagé", "emménager", "emménagé"),
            template="Habite à {}",
        ),
        rule(
            "pt_moro",
            rf"\b(?:eu\s+)?(?:moro|vivo|moramos|vivemos)\s+(?:sozinh[oa]\s+|atualmente\s+|hoje\s+)?(?:em|no|na|nos|nas|perto\s+de)\s+{phrase(PT_CLAUSE + '|com|agora')}",
            anchors=("moro", "vivo", "moramos", "vivemos"),
            template="Mora em {}",
        ),
        rule(
            "pt_mudei",
            rf"\b(?:eu\s+)?(?:me\s+mudei|mudei-me|nos\s+mudamos|mudamos)\s+(?:para|pra|pro)\s+(?:o\s+|a\s+)?{phrase(PT_CLAUSE + '|com|no|em')}",
            anchors=("mudei", "mudamos"),
            template="Mora em {}",
        ),
    ),
)

JOB = RuleFamily(
    category="job",
    memory_type="factual",
    rules=(
        rule(
            "work_at",
            rf"\b(?:I|and)\s+(?:currently\s+|now\s+|still\s+|also\s+)?work\s+(?:(?:remotely|nights|full[- ]time|part[- ]time|freelance|mostly)\s+)?((?:at|for|in|as|on)\s+{inner(EN_CLAUSE)})",
            anchors=("work",),
            template="Works {}",
        ),
        rule(
            "im_a",
            rf"{IM}\s+((?:a|an)\s+(?!(?:{NOT_JOB}){B}){inner(EN_CLAUSE + '|who|with')})",
            anchors=("i", "im"),
            template="Is {}",
        ),
        rule(
            "im_the",
            rf"{IM}\s+(the\s+(?:cto|ceo|cfo|coo|founder|co-founder|cofounder|owner|head|lead|manager|director|vp)\b{inner(EN_CLAUSE)})",
            anchors=("the",),
            template="Is {}",
        ),
        rule(
            "im_status",
            rf"{IM}\s+((?:retired|unemployed|self-employed|self\s+employed|between\s+jobs|freelancing){B})",
            anchors=("retired", "unemployed", "employed", "between", "freelancing"),
            template="Is {}",
        ),
        rule(
            "new_job",
            rf"\bI\s+(?:just\s+|recently\s+)?(?:started|got|landed)\s+(?:a\s+)?(?:new\s+)?job\s+((?:at|with|as)\s+{inner(EN_CLAUSE)})",
            anchors=("job",),
            template="Works {}",
        ),
        rule(
            "teach",
            rf"\bI\s+(?:currently\s+)?teach\s+({inner(EN_CLAUSE)})",
            anchors=("teach",),
            template="Teaches {}",
        ),
        rule(
            "own_business",
            rf"\bI\s+(?:own|run)\s+((?:a|an|my\s+own)\s+(?:small\s+|little\s+)?(?:business|company|shop|store|bakery|restaurant|café|cafe|bar|studio|agency|firm|startup|clinic|practice|salon){B}(?:{inner(EN_CLAUSE)})?)",
            anchors=("own", "run"),
            template="Owns {}",
        ),
        rule(
            "promoted",
            rf"\bI\s+(?:just\s+|finally\s+)?got\s+promoted\s+to\s+({inner(EN_CLAUSE + '|' + EN_AGO)})",
            anchors=("promoted",),
            template="Was promoted to {}",
        ),
        rule(
            "as_a",
            rf"\bas\s+(an?\s+[^{END}]+),\s*I\s",
            anchors=("as",),
            template="Is {}",
        ),
        rule(
            "fr_travaille",
            rf"\bje\s+(?:travaille|bosse)\s+((?:chez|à|a|au|dans|pour|comme|en)\s+{inner(FR_CLAUSE)})",
            anchors=("travaille", "bosse"),
            template="Travaille {}",
        ),
        rule(
            "fr_suis",
            rf"\bje\s+suis\s+(?:un\s+|une\s+)?((?!(?:{NOT_JOB_FR}){B}){inner(FR_CLAUSE)})",
            anchors=("suis",),
            template="Est {}",
        ),
        rule(
            "fr_retraite",
            r"\bje\s+suis\s+(à\s+la\s+retraite|(?:retraité|retraitée)|au\s+chômage|(?:étudiant|étudiante)(?:\s+en\s+[^.,\n]+)?)",
            anchors=("retraite", "retraité", "retraitée", "chômage", "étudiant", "étudiante"),
            template="Est {}",
        ),
        rule(
            "pt_trabalho",
            rf"\b(?:eu\s+)?trabalho\s+((?:na|no|em|numa|num|para|pra|como|com|de)\s+{inner(PT_CLAUSE)})",
            anchors=("trabalho",),
            template="Trabalha {}",
        ),
        rule(
            "pt_sou",
            rf"\b(?:eu\s+)?sou\s+(?:um\s+|uma\s+)?((?!(?:{NOT_JOB_PT}){B}){inner(PT_CLAUSE)})",
            anchors=("sou",),
            template="É {}",
        ),
    ),
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
            rf"(?:{IM}|\bI{Q}ve\s+been|\bI\s+have\s+been|\bwe{Q}re|\bwe\s+are|\bwe{Q}ve\s+been)\s+(?:currently\s+|mostly\s+|now\s+)?using\s+{phrase(EN_TOOL_STOPS)}",
            anchors=("using",),
            template="Uses {}",
        ),
        rule(
            "we_use",
            rf"\b(?:we|our\s+team|everyone\s+at\s+my\s+(?:company|job|work))\s+(?:mostly\s+|also\s+)?(?:use|uses)\s+{phrase(EN_TOOL_STOPS)}",
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
            r"\b(?:our|my)\s+(?:tech\s+)?stack(?:\s+is|\s*:)\s*([^.\n]+)",
            anchors=("stack",),
            template="Stack: {}",
        ),
        rule(
            "im_on",
            rf"{IM}\s+(?:now\s+|still\s+)?on\s+(?:an?\s+)?({inner(EN_TOOL_STOPS + '|with')})",
            anchors=("on",),
            template="Uses {}",
            capitalised=True,
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
            capitalised=True,
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
        rule(
            "fr_utilise",
            rf"\b(?:j{Q}utilise|on\s+utilise|nous\s+utilisons|je\s+me\s+sers\s+d(?:e|u|es|{Q}))\s*(?:surtout\s+|principalement\s+|aussi\s+|beaucoup\s+)?{phrase(FR_TOOL_STOPS)}",
            anchors=("utilise", "utilisons", "sers"),
            template="Utilise {}",
        ),
        rule(
            "fr_code_en",
            rf"\bje\s+(?:code|programme|développe)\s+(?:surtout\s+)?(?:en|avec)\s+{phrase(FR_TOOL_STOPS)}",
            anchors=("code", "programme", "développe"),
            template="Code en {}",
        ),
        rule(
            "pt_uso",
            rf"\b(?:eu\s+)?(?:uso|utilizo|usamos|utilizamos)\s+(?:mais\s+|muito\s+|sempre\s+)?(?:o\s+|a\s+|os\s+|as\s+)?{phrase(PT_TOOL_STOPS)}",
            anchors=("uso", "utilizo", "usamos", "utilizamos"),
            template="Usa {}",
        ),
        rule(
            "pt_a_gente_usa",
            rf"\b(?:a\s+gente|nós)\s+usa(?:mos)?\s+(?:o\s+|a\s+|os\s+|as\s+)?{phrase(PT_TOOL_STOPS)}",
            anchors=("usa",),
            template="Usa {}",
        ),
        rule(
            "pt_programo",
            rf"\b(?:eu\s+)?(?:programo|desenvolvo)\s+(?:principalmente\s+|mais\s+|sempre\s+)?(?:em|com)\s+{phrase(PT_TOOL_STOPS)}",
            anchors=("programo", "desenvolvo"),
            template="Programa em {}",
        ),
    ),
)

FAMILY = RuleFamily(
    category="family",
    memory_type="factual",
    rules=(
        rule(
            "my_kin",
            rf"\bmy\s+((?:(?:two|three|four|\d+)\s+)?(?:(?:little|big|younger|older|baby|twin|step)\s+)?(?:(?:{EN_KIN})(?:-in-law)?|boys|girls)(?:{Q}s)?{B}[^.,\n!?;]*)",
            anchors=("my",),
            template="Family: {}",
        ),
        rule(
            "have_kin",
            rf"\b(?:I|we)(?:\s+have|{Q}ve|\s+have\s+got|{Q}ve\s+got)\s+({EN_COUNT}\s+(?:\d+[- ]years?[- ]old\s+|(?:young|younger|old|older|little|big|baby|teenage|grown-up|step|adult)\s+)?(?:{EN_KIN}|boys?|girls?|husband)\b[^.,\n!?;]*)",
            anchors=("have", "ve"),
            template="Has {}",
        ),
        rule(
            "parent_of",
            rf"{IM}\s+(?:a\s+)?((?:dad|father|mom|mum|mother|parent)\s+(?:of|to)\s+[^.,\n!?;]+)",
            anchors=("of", "to"),
            template="Is a {}",
        ),
        rule("only_child", rf"{IM}\s+an\s+(only\s+child)", anchors=("only",), template="Is an {}"),
        rule(
            "fr_kin",
            rf"\b(?:mon|ma|mes)\s+((?:{FR_KIN}){B}[^.,\n!?;]*)",
            anchors=("mon", "ma", "mes"),
            template="Famille : {}",
        ),
        rule(
            "fr_ai_kin",
            rf"\bj{Q}ai\s+({FR_COUNT}\s+(?:{FR_KIN}){B}[^.,\n!?;]*)",
            anchors=("ai",),
            template="A {}",
        ),
        rule(
            "fr_parent_de",
            r"\bje\s+suis\s+((?:papa|maman|père|mère)\s+d[e'’][^.,\n!?;]+)",
            anchors=("suis",),
            template="Est {}",
        ),
        rule(
            "pt_kin",
            rf"\b(?:meu|minha|meus|minhas)\s+((?:{PT_KIN}){B}[^.,\n!?;]*)",
            anchors=("meu", "minha", "meus", "minhas"),
            template="Família: {}",
        ),
        rule(
            "pt_tenho_kin",
            rf"\b(?:eu\s+)?tenho\s+({PT_COUNT}\s+(?:{PT_KIN}){B}[^.,\n!?;]*)",
            anchors=("tenho",),
            template="Tem {}",
        ),
        rule(
            "pt_sou_mae",
            r"\b(?:eu\s+)?sou\s+((?:mãe|pai)\s+d[eo]s?\s+[^.,\n!?;]+)",
            anchors=("sou",),
            template="É {}",
        ),
    ),
)

PET = RuleFamily(
    category="pet",
    memory_type="factual",
    rules=(
        rule(
            "have_pet",
            rf"\b(?:I|we)(?:\s+have|{Q}ve|\s+have\s+got|{Q}ve\s+got|\s+own)\s+({EN_COUNT}\s+(?:[a-z-]+\s+){{0,2}}?(?:{EN_PETS})\b[^.,\n!?;]*)",
            anchors=("have", "ve", "own"),
            template="Has {}",
        ),
        rule(
            "my_pet",
            rf"\b(?:my|our)\s+((?:{EN_PETS})\b[^.,\n!?;]*)",
            anchors=("my", "our"),
            template="Pet: {}",
        ),
        rule(
            "fr_ai_pet",
            rf"\bj{Q}ai\s+({FR_COUNT}\s+(?:{FR_PETS}){B}[^.,\n!?;]*)",
            anchors=("ai",),
            template="A {}",
        ),
        rule(
            "fr_my_pet",
            rf"\b(?:mon|ma|mes)\s+((?:{FR_PETS}){B}[^.,\n!?;]*)",
            anchors=("mon", "ma", "mes"),
            template="Animal : {}",
        ),
        rule(
            "pt_tenho_pet",
            rf"\b(?:eu\s+)?tenho\s+({PT_COUNT}\s+(?:{PT_PETS}){B}[^.,\n!?;]*)",
            anchors=("tenho",),
            template="Tem {}",
        ),
        rule(
            "pt_my_pet",
            rf"\b(?:meu|minha|meus|minhas)\s+((?:{PT_PETS}){B}[^.,\n!?;]*)",
            anchors=("meu", "minha", "meus", "minhas"),
            template="Animal: {}",
        ),
    ),
)

RELATIONSHIP = RuleFamily(
    category="relationship",
    memory_type="factual",
    rules=(
        rule(
            "im_status",
            rf"{IM}\s+((?:happily\s+|recently\s+|newly\s+)?(?:married(?:\s+to\s+[^.,\n!?;]+)?|single|engaged|divorced|getting\s+divorced|separated|widowed|dating\s+[^.,\n!?;]+|in\s+a\s+(?:[a-z-]+\s+)?relationship)\b)",
            anchors=(
                "married",
                "single",
                "engaged",
                "divorced",
                "separated",
                "widowed",
                "dating",
                "relationship",
            ),
            template="Is {}",
        ),
        rule(
            "my_partner",
            rf"\bmy\s+((?:{EN_PARTNER})(?:{Q}s)?{B}[^.,\n!?;]*)",
            anchors=("my",),
            template="Partner: {}",
        ),
        rule(
            "fr_status",
            r"\bje\s+suis\s+((?:mariée?|célibataire|fiancée?|divorcée?|pacsée?|séparée?|veuf|veuve|en\s+couple)(?:\s+(?:avec|à|depuis)\s+[^.,\n!?;]+)?)",
            anchors=("suis",),
            template="Est {}",
        ),
        rule(
            "fr_partner",
            rf"\b(?:mon|ma)\s+((?:copine|copain|compagne|compagnon|petite\s+amie|petit\s+ami|conjoint|conjointe|fiancée?|partenaire){B}[^.,\n!?;]*)",
            anchors=("mon", "ma"),
            template="Partenaire : {}",
        ),
        rule(
            "pt_status",
            r"\b(?:eu\s+)?(?:sou|estou)\s+((?:casad[oa]|solteir[oa]|noiv[oa]|divorciad[oa]|separad[oa]|viúv[oa]|namorando)(?:\s+(?:com|há|desde)\s+[^.,\n!?;]+)?)",
            anchors=("sou", "estou"),
            template="É {}",
        ),
        rule(
            "pt_partner",
            rf"\b(?:meu|minha)\s+((?:namorad[oa]|noiv[oa]|companheir[oa]|parceir[oa]){B}[^.,\n!?;]*)",
            anchors=("meu", "minha"),
            template="Parceiro(a): {}",
        ),
    ),
)

EVENT = RuleFamily(
    category="event",
    memory_type="episodic",
    rules=(
        rule(
            "have_dated",
            rf"\bI\s+have\s+(?!(?:no|nothing|time|to|been|had|got)\s)((?:(?:a|an|my)\s+)?[^.,\n!?;]*?\s{EN_DATE}[^.,\n!?;]*)",
            anchors=("have",),
            template="Has {}",
        ),
        rule(
            "my_x_is_on",
            rf"\b(?:my|our)\s+([^.,\n!?;]{{2,40}}?\s+(?:is|is\s+due|starts|will\s+be)\s+{EN_DATE}[^.!?;\n]*)",
            anchors=("my", "our"),
            template="Event: {}",
        ),
        rule(
            "im_doing_on",
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are)\s+((?!going|gonna|planning|thinking|considering|moving\s+to|switching|trying|asking|hoping)[a-z]+ing\b[^.,\n!?;]*?\s{EN_DATE}[^.,\n!?;]*)",
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
        rule(
            "fr_pars",
            rf"\bje\s+((?:pars|vais|décolle|voyage|rentre)\s+[^.,\n!?;]*?\s{FR_DATE}[^.,\n!?;]*)",
            anchors=("pars", "vais", "décolle", "voyage", "rentre"),
            template="Événement : {}",
        ),
        rule(
            "pt_viajo",
            rf"\b(?:eu\s+)?((?:viajo|embarco|volto|vou)\s+[^.,\n!?;]*?\s{PT_DATE}[^.,\n!?;]*)",
            anchors=("viajo", "embarco", "volto", "vou"),
            template="Evento: {}",
        ),
        rule(
            "fr_ai_dated",
            rf"\bj{Q}ai\s+((?:un|une|mon|ma)\s+[^.,\n!?;]*?\s{FR_DATE}[^.,\n!?;]*)",
            anchors=("ai",),
            template="A {}",
        ),
        rule(
            "fr_mon_x_est",
            rf"\b(?:mon|ma|notre)\s+([^.,\n!?;]{{2,40}}?\s+(?:est|a\s+lieu|aura\s+lieu|sera)\s+{FR_DATE}[^.!?;\n]*)",
            anchors=("mon", "ma", "notre"),
            template="Événement : {}",
        ),
        rule(
            "pt_tenho_dated",
            rf"\b(?:eu\s+)?tenho\s+((?:uma?\s+)?[^.,\n!?;]*?\s{PT_DATE}[^.,\n!?;]*)",
            anchors=("tenho",),
            template="Tem {}",
        ),
        rule(
            "pt_meu_x_e",
            rf"\b(?:meu|minha|nosso|nossa)\s+([^.,\n!?;]{{2,40}}?\s+(?:é|será|vai\s+ser)\s+(?:em\s+|no\s+|na\s+)?{PT_DATE}[^.!?;\n]*)",
            anchors=("meu", "minha", "nosso", "nossa"),
            template="Evento: {}",
        ),
    ),
)
