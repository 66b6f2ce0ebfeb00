"""The vocabulary rule sources are written with: phrase bounds, clause words, dates, kin and pets.

Writing a rule: the source is JavaScript regex syntax (see :mod:`memory.extraction.scanner`). Inside a
character class, spell whitespace out with :data:`WS` (``\\s`` is only rewritten outside classes), and
end a non-ASCII word with :data:`B` (JavaScript's ``\\b`` is ASCII-only: there is no boundary after
"é"). A phrase is bounded by :func:`phrase`: it stops at punctuation and before the given words ("I live
in Lyon with my wife" → "Lyon"), so that the key is the thing itself and stays the same across phrasings.
"""

from __future__ import annotations

__all__ = [
    "B",
    "END",
    "EN_AGO",
    "EN_CLAUSE",
    "EN_COUNT",
    "EN_DATE",
    "EN_DAYS",
    "EN_KIN",
    "EN_MONTHS",
    "EN_PARTNER",
    "EN_PETS",
    "EN_TOOL_STOPS",
    "FR_CLAUSE",
    "FR_COUNT",
    "FR_DATE",
    "FR_KIN",
    "FR_PETS",
    "FR_TOOL_STOPS",
    "IM",
    "NOT_JOB",
    "NOT_JOB_FR",
    "NOT_JOB_PT",
    "PT_CLAUSE",
    "PT_COUNT",
    "PT_DATE",
    "PT_KIN",
    "PT_PETS",
    "PT_TOOL_STOPS",
    "Q",
    "WS",
    "inner",
    "phrase",
    "words",
]

WS = r" \t\n\v\f\r\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
END = r".,!?;:()\"“”«»\n"
B = rf"(?![^{WS}{END}])"  # end of a word, also after a non-ASCII letter
Q = "['’]"  # typed and typographic apostrophe
IM = rf"\b(?:im|I{Q}m|I\s+am)"

EN_CLAUSE = r"and|but|so|because|since|which|while|though|although|when|lol|haha|btw|if"
FR_CLAUSE = r"et|mais|donc|car|parce|quand|si|depuis|alors|qui|que"
PT_CLAUSE = r"e|mas|porque|pois|quando|se|desde|há|ha|que|então"
EN_AGO = r"(?:[a-z0-9]+\s+)?(?:years?|months?|weeks?|days?)\s+ago|last|this|next|in\s+\d{4}"


def inner(stops: str) -> str:
    """Text up to the end of the clause or up to (not including) one of the words ``stops``."""
    # A "." inside a word ("Next.js", "Ubuntu 22.04") does not end the phrase.
    return rf"(?:(?!\s(?:{stops}){B})(?:[^{END}]|\.(?=[a-z0-9])))+"


def phrase(stops: str) -> str:
    """A capture of :func:`_inner`."""
    return f"({inner(stops)})"


def words(count: int) -> str:
    """A capture of 1..``count`` words (a name), stopping before a clause word."""
    word = rf"[^{WS}{END}]+"
    stop = rf"(?!(?:and|but|i|i{Q}?m|et|e|je|eu|sou|from|here|btw){B})"
    return rf"({word}(?:\s+{stop}{word}){{0,{count - 1}}})"


EN_DAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend"
EN_MONTHS = r"january|february|march|april|may|june|july|august|september|october|november|december"
EN_DATE = (
    rf"(?:on\s+(?:the\s+)?(?:\d{{1,2}}|{EN_DAYS}|{EN_MONTHS})|next\s+(?:week|month|year|{EN_DAYS})|"
    rf"this\s+(?:week|month|{EN_DAYS})|tomorrow|tonight|today|in\s+(?:a|two|three|four|\d+)\s+"
    rf"(?:days?|weeks?|months?)|(?:{EN_MONTHS})\s+\d)"
)
FR_DATE = (
    r"(?:lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche|demain|ce\s+soir|aujourd['’]hui|"
    r"la\s+semaine\s+prochaine|le\s+mois\s+prochain|le\s+\d|en\s+(?:janvier|février|mars|avril|mai|"
    r"juin|juillet|août|septembre|octobre|novembre|décembre)|dans\s+(?:deux|trois|\d+)\s+)"
)
PT_DATE = (
    r"(?:(?:na|no|nesta|neste|nessa|nesse|próxima|próximo)\s+(?:segunda|terça|quarta|quinta|sexta|"
    r"sábado|domingo|semana|mês)|amanhã|hoje|dia\s+\d|em\s+\d|que\s+vem)"
)

EN_KIN = (
    r"wife|husband|son|sons|daughter|daughters|kid|kids|children|child|baby|mom|mum|mother|dad|father|"
    r"parents|brother|brothers|sister|sisters|siblings|twins|grandma|grandmother|grandpa|grandfather|"
    r"grandparents|aunt|uncle|cousin|niece|nephew|stepson|stepdaughter|family"
)
EN_PETS = (
    r"dog|dogs|cat|cats|puppy|kitten|kittens|rabbit|rabbits|bunny|hamster|parrot|bird|birds|fish|"
    r"turtle|tortoise|ferret|guinea\s+pig|snake|lizard|horse|retriever|labrador|beagle|poodle|corgi|"
    r"husky|terrier|cockatiel|budgie|gecko|chinchilla|goldfish|hedgehog|pet|pets"
)
EN_PARTNER = r"girlfriend|boyfriend|partner|fiancée|fiancee|fiancé|fiance|spouse|ex-wife|ex-husband|ex"
FR_KIN = (
    r"mari|femme|fils|fille|filles|enfant|enfants|frère|frères|sœur|sœurs|soeur|soeurs|parents|père|"
    r"mère|papa|maman|bébé|jumeaux|jumelles|grand-mère|grand-père|oncle|tante|cousin|cousine"
)
FR_PETS = r"chat|chats|chatte|chien|chiens|chienne|lapin|hamster|perroquet|poisson|tortue|furet"
PT_KIN = (
    r"marido|esposa|mulher|filho|filha|filhos|filhas|irmão|irmã|irmãos|irmãs|pai|mãe|pais|avó|avô|"
    r"tio|tia|primo|prima|bebê|gêmeos|gêmeas"
)
PT_PETS = (
    r"cachorro|cachorros|cachorra|cão|cães|gato|gata|gatos|gatas|coelho|hamster|papagaio|peixe|"
    r"tartaruga|calopsita"
)
EN_COUNT = r"(?:a|an|one|two|three|four|five|\d+)"
FR_COUNT = r"(?:un|une|deux|trois|quatre|cinq|\d+)"
PT_COUNT = r"(?:um|uma|dois|duas|três|quatro|cinco|\d+)"

# "I'm a …" is a job unless it is one of these.
NOT_JOB = (
    r"big|huge|fan|bit|little|beginner|newbie|novice|dad|father|mom|mum|mother|parent|vegetarian|vegan|"
    r"pescatarian|morning|night|person|fast|slow|quick|total|complete|real|bad|good|great|only|single|"
    r"lot|kind|sort|type|very|pretty"
)
NOT_JOB_FR = (
    r"marié|mariée|célibataire|fiancé|fiancée|pacsé|pacsée|divorcé|divorcée|séparé|séparée|veuf|veuve|"
    r"en\s+couple|papa|maman|père|mère|d['’]accord|sûr|sûre|désolé|désolée|content|contente|fatigué|"
    r"fatiguée|perdu|perdue|en\s+train|prêt|prête|pas|très|trop|vraiment|un\s+peu|nul|nulle|là|ici|"
    r"sur|malade|heureux|heureuse|ravi|ravie|curieux|curieuse|de|du|né|née|originaire|allergique|"
    r"végétarien|végétarienne|vegan|végane|fan"
)
NOT_JOB_PT = (
    r"casado|casada|solteiro|solteira|noivo|noiva|divorciado|divorciada|separado|separada|viúvo|viúva|"
    r"mãe|pai|de|do|da|muito|bem|fã|novo|nova|iniciante|alérgico|alérgica|vegetariano|vegetariana|"
    r"vegano|vegana|brasileiro|brasileira|português|portuguesa"
)

EN_TOOL_STOPS = (
    EN_CLAUSE + r"|for|at|on|to|every|daily|all\s+day|mostly|a\s+lot|nowadays|these\s+days|in\s+my|with\s+my"
)
FR_TOOL_STOPS = FR_CLAUSE + r"|pour|au|à|a|tous|toutes|tout|dans|chaque|comme"
PT_TOOL_STOPS = PT_CLAUSE + r"|para|pra|no|na|em|todo|toda|com|como"
