"""The profile families that say who the user is: name, residence, job and employer — the English
rules, then the French and Portuguese ones (:mod:`memory.extraction.french`,
:mod:`memory.extraction.portuguese`). Tools are in :mod:`memory.extraction.tools`. Family, pets and relationships are in
:mod:`memory.extraction.household`, dated events in :mod:`memory.extraction.events`."""

from __future__ import annotations

from memory.extraction.french import RULES as FRENCH
from memory.extraction.portuguese import RULES as PORTUGUESE
from memory.extraction.scanner import RuleFamily, rule
from memory.extraction.vocabulary import (
    EN_ADV,
    EN_AGO,
    EN_CLAUSE,
    EN_DAYS,
    EN_FIELDS,
    EN_MONTHS,
    END,
    IM,
    NOT_JOB,
    NOT_NAME,
    NOT_PLACE,
    PLACE_PREFIX,
    TECH,
    TRAIT,
    WS,
    B,
    Q,
    inner,
    phrase,
    words,
    words_of,
)

__all__ = ["JOB", "NAME", "RESIDENCE"]

# Where the place one moved to ends: "… to Singapore in March".
_MOVED_STOPS = EN_CLAUSE + r"|with|for|now|in\s+(?:" + EN_MONTHS + ")|" + EN_AGO
_PLACE_STOPS = EN_CLAUSE + "|with|for|now|at|as|since|these\\s+days|" + EN_AGO
# "I live in fear of …": not a place.
_IDIOM = r"fear|hope|denial|peace|harmony|terror|dread|the\s+(?:moment|past|present|future|now|cloud)"
# "a student in Computer Science", "a researcher in AI": a field, not a place.
_NOT_LOCAL = (
    r"student|major|graduate|grad|degree|phd|masters|researcher|expert|specialist|lecturer|professor|believer"
)

# After "hi, I'm": a state or a stance, not a name.
_NOT_A_NAME = (
    r"sorry|afraid|not|so|just|really|sure|glad|happy|sad|tired|confused|lost|stuck|done|back|here|fine|ok|"
    r"okay|good|great|new|trying|looking|wondering|thinking|asking|curious|worried|scared|excited|busy|bored|"
    r"hungry|sick|late|home|ready|alive|well|a|an|the|in|at|from|on|using|working|still|also|writing|"
    r"building|having|getting|going|struggling|stressed|learning|planning|interested|new|back|free|available"
)

NAME = RuleFamily(
    category="name",
    memory_type="factual",
    min_length=2,
    rules=(
        rule(
            "my_name_is",
            rf"\bmy\s+(?:first\s+)?name(?:{Q}s|\s+is)\s+(?:actually\s+|really\s+|just\s+)?(?!(?:{NOT_NAME}){B}){words(4)}",
            anchors=("name",),
            template="Name is {}",
        ),
        rule("called", rf"{IM}\s+called\s+{words(3)}", anchors=("called",), template="Name is {}"),
        rule(
            "call_me",
            rf"\bcalls?\s+me\s+(?!when|if|back|later|at|on|tomorrow|asap|now|after|before)([^{WS}{END}]+)",
            anchors=("call", "calls"),
            template="Goes by {}",
        ),
        # "I'm Priya, …": a single capitalised word closing the clause.
        rule(
            "im_name",
            rf"{IM}\s+([^{WS}{END}]+)(?=\s*(?:[,.!]|$|\s+(?:and|from|here|btw|lol|by\s+the\s+way){B}))",
            anchors=("i", "im"),
            template="Name is {}",
            case="proper",
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
            case="proper",
        ),
        # Ours.
        rule(
            "im_name_age",
            rf"{IM}\s+([a-z]+)\s*,\s*\d{{1,2}}(?:\s*(?:y/?o|yo|years?\s+old))?(?=\s*(?:[,.!]|$|and{B}))",
            anchors=("i", "im"),
            template="Name is {}",
        ),
        rule(
            "hi_this_is",
            rf"\b(?:hi|hello|hey)[,!]?\s+(?:it{Q}s|this\s+is)\s+{words(1)}(?=\s*(?:[,.!]|$))",
            anchors=("hi", "hello", "hey"),
            template="Name is {}",
            case="proper",
        ),
        rule(
            "my_names",
            rf"\bmy\s+names\s+{words(1)}",
            anchors=("names",),
            template="Name is {}",
            case="proper",  # the apostrophe left out: "my names Deepa", not "my names are hard to spell"
        ),
        rule(
            "greeting_name_here",
            rf"^(?:hi|hey|hello|hiya|yo)\b[!,.]*\s+{words(1)}\s+here\s*(?=[,.!]|$)",
            anchors=("here",),
            template="Name is {}",
            case="proper",
        ),
        rule(
            "for_short",
            rf"(?:^|[.!?\n]\s*){words(1)}\s+for\s+short\b",
            anchors=("short",),
            template="Goes by {}",
            case="proper",
        ),
        # "hi! i'm tomasz, …": written in lower case, so told from "hi, i'm new here" by what follows a
        # greeting and by the words that describe a state.
        rule(
            "greeting_im_name",
            rf"^(?:hi|hey|hello|hiya|yo)\b[!,.]*\s+(?:I{Q}m|im|I\s+am)\s+(?!(?:{_NOT_A_NAME}){B})([a-z]+)(?=\s*(?:,|$|and\s))",
            anchors=("hi", "hey", "hello", "hiya", "yo"),
            template="Name is {}",
        ),
        # "Zhang Wei is my name", not "That is my name" or "what is my name".
        rule(
            "is_my_name",
            rf"(?:^|[.!?\n,]\s*)(?!(?:this|that|it|what|which|who|here|there)\b)([^{WS}{END}]+(?:\s+[^{WS}{END}]+)?)\s+(?:is|{Q}s)\s+my\s+(?:first\s+|real\s+|full\s+|given\s+)?name\b",
            anchors=("name",),
            template="Name is {}",
            case="proper",
        ),
        # "It's Sam here", "it's Marguerite btw": not "it's Monday btw" or "it's Python by the way".
        rule(
            "it_s_name",
            rf"(?:^|[.!?\n]\s*)(?:(?:hi|hey|hello|oh|ok)[,!]?\s+)?it{Q}s\s+(?!(?:{EN_DAYS}|{EN_MONTHS}|{TECH}|me|just|only|not|all|ok|okay|fine|true|late|early)\b){words(1)}(?=\s*,?\s*(?:here|again|btw|by\s+the\s+way|from\s){B})",
            anchors=("s",),
            template="Name is {}",
            case="proper",
        ),
        rule(
            "this_is_from",
            rf"\bthis\s+is\s+{words(1)}(?=\s+(?:from|here|speaking){B})",
            anchors=("from", "here", "speaking"),
            template="Name is {}",
            case="proper",
        ),
    )
    + FRENCH["name"]
    + PORTUGUESE["name"],
)

RESIDENCE = RuleFamily(
    category="residence",
    memory_type="factual",
    min_length=2,  # "LA", "BH"
    rules=(
        rule(
            "live_in",
            rf"\b(?:I|we|and)\s+{EN_ADV}*(?:live|reside)\s+(?:(?:together|alone|here|full[- ]time|permanently)\s+)?(?:with\s+(?:my\s+)?[a-z]+\s+)?(?:just\s+)?(?:in|near|outside(?:\s+of)?|close\s+to|around)\s+(?!(?:{_IDIOM}){B})(?:an?\s+(?:flat|house|apartment|studio)\s+in\s+)?{phrase(EN_CLAUSE + '|with|for|now|' + EN_AGO)}",
            anchors=("live", "reside"),
            template="Lives in {}",
        ),
        rule(
            "living_in",
            rf"(?:{IM}\s+(?:currently\s+|now\s+)?(?:based|living)|{IM}\s+(?:an?\s+)?[^.,\n!?;]{{1,40}}?\s+(?:based|living)|\bI{Q}ve\s+been\s+living|\bI\s+have\s+been\s+living|\bcurrently\s+(?:living|based)|,\s*(?:living|based))\s+(?:in|out\s+of)\s+{phrase(EN_CLAUSE + '|with|for|now|' + EN_AGO)}",
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
            rf"\b(?:I|we)(?:{Q}ve|\s+have|\s+just|\s+recently|\s+finally)*\s+(?:moved|relocated)\s+(?:back\s+)?(?:from\s+[^.,\n]+?\s+)?to\s+(?!(?:{TECH}|an?\s|a\s+new\s+(?:team|role|job|position|project|version))(?![a-z+#])){phrase(_MOVED_STOPS)}",
            anchors=("moved", "relocated"),
            template="Lives in {}",
        ),
        rule(
            "moving_to",
            rf"(?:{IM}|\bwe{Q}re|\bwe\s+are|\b(?:I|we)(?:{Q}ll|\s+will)\s+be)\s+(?:moving|relocating)\s+(?:back\s+)?to\s+(?!an?\s){phrase(EN_CLAUSE + '|with|for|' + EN_AGO)}",
            anchors=("moving", "relocating"),
            template="Is moving to {}",
        ),
        # Ours.
        rule(
            "settled_in",
            rf"\b(?:I|we)(?:{Q}ve|\s+have)?\s+(?:finally\s+|recently\s+|just\s+|now\s+)?settled\s+(?:down\s+)?(?:in|near|outside)\s+(?:an?\s+(?:[a-z-]+\s+){{0,2}}?(?:town|village|city|suburb|place)\s+(?:in|near|outside(?:\s+of)?)\s+)?{phrase(EN_CLAUSE + '|with|for|now|' + EN_AGO)}",
            anchors=("settled",),
            template="Lives in {}",
        ),
        rule(
            "now_in",
            rf"(?:\bnow\s+I(?:m|{Q}m|\s+am)|{IM}\s+(?:now|currently))\s+(?:living\s+|based\s+)?in\s+{PLACE_PREFIX}{phrase(_PLACE_STOPS)}",
            anchors=("now", "currently"),
            template="Lives in {}",
            case="proper",
        ),
        rule(
            "home_is",
            rf"\bhome(?:(?<=^home)|(?<=[.!?\n]home)|(?<=[.!?\n]\shome)|(?<=\bmy\shome))\s+(?:is|{Q}s|is\s+in)\s+{phrase(_PLACE_STOPS)}",
            anchors=("home",),
            template="Lives in {}",
            case="proper",
        ),
        rule(
            "out_of",
            rf"\b(?:freelancing|working|based|operating|living|consulting)\s+out\s+of\s+{PLACE_PREFIX}{NOT_PLACE}{phrase(_PLACE_STOPS)}",
            anchors=("out",),
            template="Based in {}",
            case="proper",
        ),
        # "I rent a room in Bilbao", "our flat in Kreuzberg is tiny": a home of one's own in a named place.
        rule(
            "home_in",
            rf"(?:\b(?:I|we)\s+(?:currently\s+|now\s+|still\s+)?(?:rent|share|own)\s+|\b(?:my|our)\s+(?=(?:[a-z-]+\s+)?(?:room|flat|apartment|house|place|studio|condo|loft|home)\s+in\s+[^.,\n!?;]+?\s+(?:is|has|was)\b))(?:(?:a|an|our|my)\s+)?(?:[a-z-]+\s+)?(?:room|flat|apartment|house|place|studio|condo|loft|home)\s+in\s+{NOT_PLACE}{PLACE_PREFIX}{phrase(_PLACE_STOPS + '|is|has|was')}",
            anchors=("room", "flat", "apartment", "house", "place", "studio", "condo", "loft", "home"),
            template="Lives in {}",
            case="proper",
        ),
        # "As a lawyer in Toronto, I …".
        rule(
            "as_a_in",
            rf"\bas\s+an?\s+[^.,\n!?;]{{1,40}}?\s+in\s+{NOT_PLACE}{PLACE_PREFIX}([^.,\n!?;]+?)\s*,\s*I\s",
            anchors=("as",),
            template="Based in {}",
            case="proper",
        ),
        # "I'm a sous chef in Milan": where one works, when it is a place's name.
        rule(
            "works_in_place",
            rf"(?:{IM}\s+(?:an?|the)\s+(?!(?:{_NOT_LOCAL}){B})[^.,\n!?;]{{1,40}}?|\bI\s+work\s+(?!remotely|from\s+home|for\s(?!an?\s))[^.,\n!?;]{{1,40}}?|(?:\bI|\bwe|\bmy\s+[a-z]+\s+and\s+I)\s+(?:own|run)\s+(?:a|an|our|my)\s+[^.,\n!?;]{{1,40}}?)\s+in\s+{NOT_PLACE}{PLACE_PREFIX}{phrase(_PLACE_STOPS)}",
            anchors=("i", "im", "work", "own", "run"),
            template="Based in {}",
            case="proper",
        ),
    )
    + FRENCH["residence"]
    + PORTUGUESE["residence"],
)

JOB = RuleFamily(
    category="job",
    memory_type="factual",
    rules=(
        rule(
            "work_at",
            rf"\b(?:I|and)\s+{EN_ADV}*work\s+(?:(?:remotely|nights|full[- ]time|part[- ]time|freelance|mostly|from\s+home|from\s+home\s+now)\s+)?((?:at|for|in|as|on)\s+{inner(EN_CLAUSE)})",
            anchors=("work",),
            template="Works {}",
        ),
        rule(
            "im_a",
            rf"{IM}\s+(?:(?:currently|now|still|also|actually|technically|officially|basically|just)\s+)?((?:a|an)\s+(?!(?:{NOT_JOB}){B})(?!(?:[^{WS}{END}]+\s+){{0,2}}(?:{TRAIT}){B}){inner(EN_CLAUSE + '|who|with')})",
            anchors=("i", "im"),
            template="Is {}",
            case="not_name",
        ),
        rule(
            "im_the",
            rf"{IM}\s+(the\s+(?:cto|ceo|cfo|coo|founder|co-founder|cofounder|owner|head|lead|manager|director|vp)\b{inner(EN_CLAUSE)})",
            anchors=("the",),
            template="Is {}",
        ),
        rule(
            "im_status",
            rf"{IM}\s+(?:(?:currently|now|still|recently)\s+(?=retired|unemployed|self|between))?((?:retired|unemployed|self-employed|self\s+employed|between\s+jobs|freelancing){B})",
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
            rf"(?:\bI|\bwe|\bme\s+and\s+my\s+[a-z]+|\bmy\s+[a-z]+\s+and\s+I)\s+(?:(?:also|now|still|currently)\s+)?(?:own|run)\s+((?:a|an|my\s+own|our\s+own|our)\s+(?:small\s+|little\s+|tiny\s+|family\s+)?(?:[a-z-]+\s+)?(?:business|company|shop|store|bakery|restaurant|café|cafe|bar|studio|agency|firm|startup|clinic|practice|salon|farm|ranch|vineyard|nursery|daycare|garage|workshop|gym|hotel|pub|food\s+truck|consultancy|brewery|bookshop|bookstore|channel|podcast|blog|newsletter|etsy\s+shop|online\s+store|nonprofit|charity|band|label|club){B}(?:{inner(EN_CLAUSE)})?)",
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
        # Ours.
        rule(
            "working_at",
            rf"(?:\bI{Q}ve\s+been|\bI\s+have\s+been|{IM}|{IM}\s+currently|\bI{Q}ve\s+been\s+currently)\s+working\s+(?:(?:remotely|full[- ]time|part[- ]time|freelance)\s+)?((?:at|for|as|in)\s+(?!(?:home|the\s+moment|it|this|that|a\s+project|my\s+own\s+project){B}){inner(EN_CLAUSE + '|since|' + EN_AGO)})",
            anchors=("working",),
            template="Works {}",
        ),
        rule(
            "joined_as",
            rf"\b(?:I|we)(?:\s+just|\s+recently|{Q}ve|\s+have)*\s+joined\s+([^.,\n]+?\s+as\s+(?:an?\s+)?{inner(EN_CLAUSE)})",
            anchors=("joined",),
            template="Joined {}",
            case="proper",  # an employer: "joined Spotify as …", not "joined a gym as a beginner"
        ),
        rule(
            "my_job_is",
            rf"\bmy\s+(?:job|work|career|day\s+job)\s+is\s+(in\s+(?:{EN_FIELDS}){B}(?:{inner(EN_CLAUSE)})?)",
            anchors=("job", "work", "career"),
            template="Works {}",
        ),
        rule(
            "in_field",
            rf"(?:{IM}\s+(?:currently\s+|now\s+)?in\s+|\b(?:this\s+is|I{Q}m|im)\s+[^{WS}{END}]+\s+from\s+)((?:{EN_FIELDS}))(?=\s*(?:[{END}]|$|(?:and|but|so|at|for|as|now){B}))",
            anchors=words_of(EN_FIELDS),
            template="Works in {}",
        ),
        rule(
            "studying",
            rf"(?:{IM}\s+(?:currently\s+|now\s+)?studying|\bI\s+(?:currently\s+)?study)\s+(?!(?:for|to|how|the|a|an|it|this|that|hard|late|abroad|at|in|with|on|all|every|tonight|today)\b){phrase(EN_CLAUSE + '|at|in|for|with|on')}",
            anchors=("studying", "study"),
            template="Studies {}",
        ),
        rule(
            "now_at",
            rf"{IM}\s+(?:now|currently)\s+(?:working\s+)?at\s+{phrase(EN_CLAUSE + '|as|in|for|since|' + EN_AGO)}",
            anchors=("now", "currently"),
            template="Works at {}",
            case="proper",
        ),
        rule(
            "been_at",
            rf"\bI(?:{Q}ve|\s+have)\s+been\s+(?:working\s+)?(?:at|with)\s+{phrase(EN_CLAUSE + '|as|in|on|since|for|now')}(?=\s+(?:for|since)\s)",
            anchors=("been",),
            template="Works at {}",
            case="proper",
        ),
        rule(
            "have_worked",
            rf"\bI(?:{Q}ve|\s+have)\s+(?:worked|been\s+working)\s+((?:at|for|as|in)\s+{inner(EN_CLAUSE + '|for|since')})(?=\s+(?:for|since)\s)",
            anchors=("worked", "working"),
            template="Works {}",
        ),
        rule(
            "freelance_as",
            rf"\bI\s+(?:freelance|consult|contract|moonlight)\s+((?:as|for|in)\s+{inner(EN_CLAUSE)})",
            anchors=("freelance", "consult", "contract", "moonlight"),
            template="Works {}",
        ),
        rule(
            "manage_team",
            rf"\bI\s+(?:currently\s+)?(?:manage|lead|head)\s+((?:a|the|our|my)\s+(?:[a-z-]+\s+)?(?:team|department|group|squad|office|unit|division|lab)\b(?:{inner(EN_CLAUSE)})?)",
            anchors=("manage", "lead", "head"),
            template="Leads {}",
        ),
        rule(
            "been_a",
            rf"\bI(?:{Q}ve|\s+have)\s+been\s+((?:a|an)\s+(?!(?:{NOT_JOB}){B})(?!(?:[^{WS}{END}]+\s+){{0,2}}(?:{TRAIT}){B}){inner(EN_CLAUSE + '|for|since|who|with')})",
            anchors=("been",),
            template="Is {}",
        ),
        rule(
            "employed",
            rf"{IM}\s+(?:currently\s+|now\s+)?(?:employed|hired|contracted)\s+((?:at|by|as|with)\s+{inner(EN_CLAUSE + '|since|' + EN_AGO)})",
            anchors=("employed", "hired", "contracted"),
            template="Employed {}",
        ),
        rule(
            "for_a_living",
            r"\bI\s+((?!(?:want|need|wish|hope|would|could|should|used)\b)[a-z]+\s+[^.,\n!?;]{1,40}?)\s+for\s+a\s+living\b",
            anchors=("living",),
            template="Job: {} for a living",
        ),
        rule(
            "on_the_team",
            rf"{IM}\s+(?:now\s+|currently\s+|also\s+)?(?:on|part\s+of|in)\s+(the\s+(?:[a-z-]+\s+){{1,2}}team(?:\s+(?:at|for)\s+{inner(EN_CLAUSE + '|since|' + EN_AGO)})?)",
            anchors=("team",),
            template="Works on {}",
        ),
        rule(
            "interning_at",
            rf"(?:{IM}|\bI{Q}ve\s+been|\bI\s+have\s+been)\s+(?:currently\s+|now\s+)?((?:interning|volunteering|apprenticing|clerking|temping)\s+(?:at|for|with)\s+{inner(EN_CLAUSE + '|since|this|next|' + EN_AGO)})",
            anchors=("interning", "volunteering", "apprenticing", "clerking", "temping"),
            template="Is {}",
        ),
        rule(
            "started_at",
            rf"\bI(?:{Q}ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:started|began)\s+(?:working\s+|a\s+new\s+(?:job|role|position)\s+)?at\s+{phrase(EN_CLAUSE + '|as|in|on|since|this|' + EN_AGO)}",
            anchors=("started", "began"),
            template="Works at {}",
            case="proper",
        ),
        rule(
            "im_the_adjective",
            rf"{IM}\s+(the\s+(?:only|sole|lone|main|new|lead|senior|junior|head|principal|in-house)\s+(?!(?:one|person|people|guy|girl|kid|child|time|thing|way|reason)\b){inner(EN_CLAUSE + '|who')})",
            anchors=(
                "only",
                "sole",
                "lone",
                "main",
                "new",
                "lead",
                "senior",
                "junior",
                "head",
                "principal",
                "house",
            ),
            template="Is {}",
        ),
    )
    + FRENCH["job"]
    + PORTUGUESE["job"],
)
