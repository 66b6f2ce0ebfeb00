"""The vocabulary rule sources are written with: phrase bounds, clause words, dates, kin and pets.

Writing a rule: the source is JavaScript regex syntax (see :mod:`memory.extraction.scanner`). Inside a
character class, spell whitespace out with :data:`WS` (``\\s`` is only rewritten outside classes), and
end a non-ASCII word with :data:`B` (JavaScript's ``\\b`` is ASCII-only: there is no boundary after
"é"). A phrase is bounded by :func:`phrase`: it stops at punctuation and before the given words ("I live
in Lyon with my wife" → "Lyon"), so that the key is the thing itself and stays the same across phrasings.
"""

from __future__ import annotations

import re

__all__ = [
    "B",
    "EN_ADV",
    "EN_FIELDS",
    "EN_PREF_STOPS",
    "EN_SEASONS",
    "FR_MONTHS",
    "NOT_PET",
    "NOT_PLACE",
    "PLACE_PREFIX",
    "PT_MONTHS",
    "NOT_NAME",
    "TECH",
    "TRAIT",
    "words_of",
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


def words_of(*alternations: str) -> tuple[str, ...]:
    """A word of each alternative of regex alternations (``"dog|guinea\\s+pig"`` → dog, guinea), as anchors.

    A rule whose every match contains one of these alternations may take their words as anchors, which
    keeps it from running on texts that do not contain them.
    """
    found: set[str] = set()
    for alternation in alternations:
        for alternative in re.sub(r"\\[a-zA-Z]", " ", alternation).split("|"):
            # Every match of "in-laws" contains "laws": the longest word is enough, and a short one
            # ("in") would make the rule run on almost any text.
            letters = re.findall(r"[^\W\d_]+", alternative)
            if letters:
                found.add(max(letters, key=len))
    return tuple(sorted(found))


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
EN_SEASONS = r"spring|summer|fall|autumn|winter"
EN_DATE = (
    rf"(?:on\s+(?:the\s+)?(?:\d{{1,2}}|{EN_DAYS}|{EN_MONTHS})|(?:next|this|coming)\s+(?:week|month|{EN_DAYS}|"
    rf"{EN_SEASONS}|quarter|semester|term)|next\s+year|tomorrow|tonight|today|in\s+(?:a|an|two|three|four|five|"
    rf"a\s+few|a\s+couple\s+of|\d+)\s+(?:hours?|days?|weeks?|months?)|(?:{EN_MONTHS})\s+\d|in\s+(?:{EN_MONTHS}){B}|"
    rf"(?:{EN_DAYS}){B}|later\s+(?:today|this\s+week))"
)
FR_MONTHS = r"janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|novembre|décembre"
FR_DATE = (
    r"(?:lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche|demain|après-demain|ce\s+soir|aujourd['’]hui|"
    # the past too: "j'ai passé mon permis hier"
    r"hier|avant-hier|la\s+semaine\s+dernière|le\s+mois\s+dernier|l['’]an(?:née)?\s+dernière?|ce\s+matin|"
    r"cet\s+après-midi|à\s+\d{1,2}\s*h|il\s+y\s+a\s+(?:deux|trois|quelques|\d+)\s+|"
    r"(?:la\s+)?semaine\s+prochaine|le\s+mois\s+prochain|l['’]an(?:née)?\s+prochaine?|ce\s+week-end|"
    r"cet\s+(?:été|hiver|automne)|ce\s+printemps|le\s+\d|en\s+(?:" + FR_MONTHS + r")|"
    r"\d{1,2}\s+(?:" + FR_MONTHS + r")|dans\s+(?:deux|trois|quinze|\d+)\s+)"
)
PT_MONTHS = r"janeiro|fevereiro|março|abril|maio|junho|julho|agosto|setembro|outubro|novembro|dezembro"
PT_DATE = (
    r"(?:ontem|anteontem|(?:na\s+)?semana\s+passada|(?:no\s+)?mês\s+passado|(?:no\s+)?ano\s+passado|"
    r"hoje\s+de\s+manhã|às\s+\d{1,2}\s*h|há\s+(?:dois|duas|três|uns|umas|\d+)\s+(?:dias|semanas|meses|anos)|"
    r"(?:na|no|nesta|neste|nessa|nesse|próxima|próximo|proxima|proximo)\s+(?:segunda|terça|terca|quarta|"
    r"quinta|sexta|sábado|sabado|domingo|semana|mês|fim\s+de\s+semana)|amanhã|amanha|hoje|depois\s+de\s+amanhã|"
    r"dia\s+\d|em\s+\d|em\s+(?:" + PT_MONTHS + r")|\d{1,2}\s+de\s+(?:" + PT_MONTHS + r")|que\s+vem|"
    r"daqui\s+a\s+)"
)

EN_KIN = (
    r"wife|husband|son|sons|daughter|daughters|kid|kids|children|child|baby|mom|mum|mother|dad|father|"
    r"parents|brother|brothers|sister|sisters|siblings|twins|grandma|grandmother|grandpa|grandfather|"
    r"grandparents|aunt|uncle|cousin|niece|nephew|stepson|stepdaughter|family|in-laws|inlaws|youngest|"
    r"eldest|oldest|middle\s+child|grandkids|grandchildren|grandson|granddaughter|stepmom|stepdad|stepkids|"
    r"newborn|toddler|toddlers|stepson|stepdaughter"
)
_PET_NOUNS = (
    "dog cat kitten rabbit hamster parrot bird turtle tortoise ferret guinea\\s+pig snake lizard horse "
    "retriever labrador beagle poodle corgi terrier collie spaniel dachshund chihuahua pug bulldog greyhound "
    "whippet mutt pup cockatiel budgie gecko chinchilla hedgehog axolotl iguana canary tarantula pet doodle "
    "goldendoodle labradoodle cavapoo cockapoo pomeranian rottweiler mastiff samoyed shiba schnauzer "
    "dalmatian pitbull betta"
).split()
EN_PETS = "|".join(f"{noun}|{noun}s" for noun in _PET_NOUNS) + (
    r"|puppy|puppies|bunny|bunnies|pony|ponies|husky|huskies|fish|goldfish|shih\s+tzu|pit\s+bulls?|"
    r"german\s+shepherds?|border\s+collies?|"
    # Only in the plural: "a chicken" is more often dinner.
    r"chickens|hens|ducks|goats|alpacas|llamas"
)
# What follows a pet word when the phrase is about something else ("a dog bed", "a cat person").
NOT_PET = (
    r"bed|food|toy|toys|walker|walking|sitter|sitting|park|tank|cage|leash|collar|treats|hair|trainer|"
    r"training|breed|breeds|show|shows|friendly|person|people|lover|lovers|owner|owners|video|videos|"
    r"meme|memes|name|names|recipe|tacos?|fingers|shelter|allergy|allergies"
)
EN_PARTNER = r"girlfriend|boyfriend|partner|fiancée|fiancee|fiancé|fiance|spouse|ex-wife|ex-husband|ex"
FR_KIN = (
    r"mari|femme|fils|fille|filles|enfant|enfants|frère|frères|sœur|sœurs|soeur|soeurs|parents|père|"
    r"mère|papa|maman|bébé|jumeaux|jumelles|grand-mère|grand-père|oncle|tante|cousin|cousine"
)
FR_PETS = (
    r"chat|chats|chatte|chattes|chaton|chatons|chien|chiens|chienne|chiennes|chiot|chiots|lapin|lapins|"
    r"hamster|hamsters|perroquet|perruche|poisson|poissons|tortue|furet|cochon\s+d['’]inde|cheval|jument"
)
PT_KIN = (
    r"marido|esposa|mulher|filho|filha|filhos|filhas|irmão|irmã|irmãos|irmãs|pai|mãe|pais|avó|avô|"
    r"tio|tia|primo|prima|bebê|gêmeos|gêmeas"
)
PT_PETS = (
    r"cachorro|cachorros|cachorra|cachorras|cachorrinho|cachorrinha|cão|cães|cadela|gato|gata|gatos|gatas|"
    r"gatinho|gatinha|gatinhos|coelho|coelhos|hamster|papagaio|periquito|peixe|peixes|tartaruga|calopsita|"
    r"porquinho-da-índia|cavalo|égua"
)
EN_COUNT = r"(?:a|an|one|two|three|four|five|\d+)"
FR_COUNT = r"(?:un|une|deux|trois|quatre|cinq|\d+)"
PT_COUNT = r"(?:um|uma|dois|duas|três|quatro|cinco|\d+)"

# "I'm a …" is a job unless it is one of these.
NOT_JOB = (
    r"big|huge|massive|fan|bit|little|beginner|newbie|novice|dad|father|mom|mum|mother|parent|vegetarian|"
    r"vegan|pescatarian|morning|night|person|fast|slow|quick|total|complete|real|bad|good|great|only|single|"
    r"lot|kind|sort|type|very|pretty|customer|user|member|subscriber|client|patient|guest|victim|part|regular|"
    r"native|fool|mess|perfectionist|hypocrite|introvert|extrovert|believer|couple|few|while|year|month|week|"
    r"day|long[- ]time|lifelong|proud|happy|tad|long|rough|tough|hard|busy|crazy|weird|friend|colleague|"
    r"coworker|co-worker|neighbour|neighbor|classmate|roommate|flatmate|acquaintance|stranger|relative|"
    # kin: "I'm a grandmother of four"
    r"grandmother|grandma|grandfather|grandpa|grandparent|granny|nana|aunt|uncle|godmother|godfather|"
    r"wife|husband|son|daughter|sister|brother|twin|sibling|cousin|stepmom|stepdad|widow|widower"
)
# "I'm a coffee snob": a trait, not a job (the head noun within the next three words).
TRAIT = (
    r"fan|fans|lover|person|people|enthusiast|nerd|geek|addict|junkie|snob|fanatic|buff|foodie|freak|"
    r"sucker|owl|bird|riser|sleeper|user|users|supporter|supporters|follower|followers|member|regular|"
    # "a dog mom", "a cat lady": a pet's keeper, not a job
    r"mom|mum|mama|lady"
)
# After "my name is": what is not a name ("my name is not important", "Name is not defined").
NOT_NAME = (
    r"not|a|an|the|in|of|on|too|also|required|missing|invalid|taken|undefined|empty|already|spelled|"
    r"spelt|pronounced|written|so|very|different|hard|long|short|weird|common|unusual|there|here|it|now|still"
)
NOT_JOB_FR = (
    r"marié|mariée|célibataire|fiancé|fiancée|pacsé|pacsée|divorcé|divorcée|séparé|séparée|veuf|veuve|"
    r"en\s+couple|papa|maman|père|mère|d['’]accord|sûr|sûre|désolé|désolée|content|contente|fatigué|"
    r"fatiguée|perdu|perdue|en\s+train|prêt|prête|pas|très|trop|vraiment|un\s+peu|nul|nulle|là|ici|"
    r"sur|malade|heureux|heureuse|ravi|ravie|curieux|curieuse|de|du|né|née|originaire|allergique|"
    r"végétarien|végétarienne|végétalien|végétalienne|vegan|végane|fan|installé|installée|installés|basé|"
    r"basée|domicilié|domiciliée|établi|établie|en|passionné|passionnée|accro|dingue|fou|folle|fier|fière|"
    r"nouveau|nouvelle|encore|toujours|aussi|plutôt|assez|bien|mal|parti|partie|rentré|rentrée|arrivé|enceinte|"
    r"arrivée|allé|allée|venu|venue|passé|passée|tombé|tombée|resté|restée|devenu|devenue|à|au|aux|chez|"
    r"dans|sur|sous|avec|pour|sans|comme|là-bas|dispo|disponible|occupé|occupée|sûr|sûre"
)
NOT_JOB_PT = (
    r"casado|casada|solteiro|solteira|noivo|noiva|divorciado|divorciada|separado|separada|viúvo|viúva|"
    r"mãe|pai|de|do|da|muito|bem|fã|novo|nova|iniciante|alérgico|alérgica|vegetariano|vegetariana|"
    r"vegano|vegana|brasileiro|brasileira|português|portuguesa|fanático|fanática|apaixonado|apaixonada|"
    r"louco|louca|super|bastante|meio|mais|o|a|os|as|aquele|aquela|desempregado|desempregada|aposentado|"
    r"aposentada|eu|só|tão|casada|também|cara|pessoa|tipo|favor|contra|assim|daqui|dali|capaz|obrigado|"
    r"obrigada|grato|grata|feliz|cansado|cansada|novo|nova|bem-vindo"
)

# Adverbs between a subject and its verb ("I much prefer", "I really dislike", "I do love").
EN_ADV = (
    r"(?:(?:really|truly|honestly|genuinely|absolutely|totally|definitely|seriously|just|also|still|actually|"
    r"kinda|kind\s+of|sort\s+of|do|much|so|personally|now|currently|already|finally|recently|very\s+much|"
    r"pretty\s+much|literally|especially|particularly|secretly|low-key|lowkey)\s+)"
)
# Where a liked or disliked thing ends: the next clause, not the next "and" ("I love cats and dogs").
EN_PREF_STOPS = (
    r"but|because|cause|cuz|since|so|though|although|while|when|whenever|if|unless|lol|haha|tbh|honestly|"
    rf"btw|except|especially|which|and\s+(?:I|I{Q}m|im|my|we|it|that|also)"
)
# Lines of work ("I'm in sales", "Greg from accounting").
EN_FIELDS = (
    r"sales|marketing|hr|finance|accounting|it|tech|consulting|retail|logistics|construction|healthcare|"
    r"education|insurance|real\s+estate|hospitality|banking|law|medicine|academia|research|engineering|"
    r"customer\s+(?:service|support|success)|support|product|design|operations|ops|devops|cybersecurity|"
    r"security|publishing|journalism|media|advertising|pharma|biotech|manufacturing|government|recruiting|"
    r"recruitment|procurement|legal|payroll|admin|administration|nursing|social\s+work|"
    r"the\s+(?:army|navy|military|air\s+force)"
)
# Words before a place that are not its name ("in rural Wales", "in the UK").
PLACE_PREFIX = (
    r"(?:(?:rural|northern|southern|eastern|western|central|downtown|greater|upstate|suburban|north|south|"
    r"east|west|the)\s+)?"
)
# After "in", what is a field or a team rather than a place, even when capitalised ("in IT", "in the
# Azure group").
# Technologies, which people work "in" too ("a developer in Kotlin").
TECH = (
    r"python|java|javascript|js|typescript|ts|kotlin|swift|rust|go|golang|ruby|php|perl|scala|elixir|erlang|"
    r"haskell|clojure|lua|dart|flutter|julia|matlab|fortran|cobol|sql|excel|react|angular|vue|svelte|django|"
    r"flask|rails|laravel|spring|node|nodejs|unity|unreal|sap|salesforce|aws|azure|gcp|linux|windows|docker|"
    r"kubernetes|terraform|c|cpp|csharp|dotnet|\.net|postgres|postgresql|mysql|mariadb|mongodb|mongo|redis|"
    r"sqlite|supabase|firebase|vercel|netlify|heroku|github|gitlab|bitbucket|jira|notion|slack|teams|zoom|"
    r"mac|macos|ubuntu|arch|fedora|debian|android|ios|iphone|pixel|vim|neovim|emacs|vs\s+code|vscode|cursor|"
    r"intellij|pycharm|next\.js|nextjs|remix|astro|tailwind|graphql|kafka|spark|airflow|snowflake|"
    r"bigquery|tableau|power\s+bi|figma|photoshop|blender|godot|obsidian|bun|deno|vite|webpack"
)
NOT_PLACE = (
    rf"(?!(?:the\s+)?(?:it|hr|ai|ml|qa|ux|ui|pr|icu|nicu|picu|er|ed|or|ops|tech|r&d|{TECH})(?![a-z+#]))"
    rf"(?!(?:the\s+)?(?:[^{WS}{END}]+\s+){{0,2}}(?:team|group|department|dept|division|unit|lab|office|org|"
    r"organization|organisation|branch|industry|field|sector|area|space|squad|pod)\b)"
)

EN_TOOL_STOPS = (
    EN_CLAUSE + r"|for|at|on|to|every|daily|all\s+day|mostly|a\s+lot|nowadays|these\s+days|in\s+my|with\s+my"
)
FR_TOOL_STOPS = FR_CLAUSE + r"|pour|au|à|a|tous|toutes|tout|dans|chaque|comme"
PT_TOOL_STOPS = PT_CLAUSE + r"|para|pra|no|na|em|todo|toda|com|como"
