"""Portuguese rules (Brazil and Portugal) of every family, by category (:data:`RULES`); each family lists
them after its English and French ones.

Portuguese leaves the subject out ("Moro em Recife", "Trabalho na Petrobras"), so the rules take an
optional "eu". Like French, "sou" + a bare noun is a job unless its complement is a name ("Sou a Joana"),
a state or a status (:data:`~memory.extraction.vocabulary.NOT_JOB_PT`).
"""

from __future__ import annotations

from memory.extraction.scanner import Rule, rule
from memory.extraction.vocabulary import (
    NOT_JOB_PT,
    PT_CLAUSE,
    PT_COUNT,
    PT_DATE,
    PT_KIN,
    PT_PETS,
    PT_TOOL_STOPS,
    TECH,
    B,
    inner,
    phrase,
    words,
)

__all__ = ["RULES"]

_HAVE = r"\b(?:eu\s+)?(?:tenho|temos)"
# Degrees are written with capitals ("formado em Direito"): not a place.
_NOT_DEGREE = r"(?!formad|graduad|especialista|mestr|doutor|bacharel|licenciad|pós)"

_PREFERENCE = (
    rule(
        "pt_prefiro",
        r"\b(?:eu\s+)?prefiro\s+([^.,\n]+)",
        anchors=("prefiro",),
        polarity="positive",
        template="Prefere {}",
    ),
    rule(
        "pt_gosto",
        r"(?<!não\s)(?<!nao\s)\b(?:eu\s+)?gosto\s+(?:muito\s+|bastante\s+|mais\s+|demais\s+)?d(?:e|o|a|os|as)\s+([^.,\n]+)",
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
        "pt_curto",
        rf"(?<!não\s)(?<!nao\s)\b(?:eu\s+)?curto\s+(?:muito\s+|demais\s+)?{phrase(PT_CLAUSE)}",
        anchors=("curto",),
        polarity="positive",
        template="Gosta de {}",
    ),
    rule(
        "pt_fa",
        rf"(?<!não\s)(?<!nao\s)\b(?:eu\s+)?sou\s+(?:muito\s+|super\s+|um\s+|uma\s+|grande\s+)*((?:fã|fanátic[oa]|apaixonad[oa]|viciad[oa]|louc[oa])\s+(?:de|do|da|dos|das|por|pelo|pela|pelos|pelas|em|no|na)\s+(?!(?:você|voce|seu|sua|teu|tua|isso|isto){B})[^.,\n]+)",
        anchors=("sou",),
        polarity="positive",
        template="É {}",
    ),
    rule(
        "pt_diet",
        r"\b(?:eu\s+)?sou\s+(vegetarian[oa]|vegan[oa])",
        anchors=("sou",),
        polarity="positive",
        template="É {}",
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
        "pt_nao_sou_fa",
        r"\b(?:eu\s+)?n(?:ão|ao)\s+sou\s+(?:muito\s+|tão\s+|um\s+|uma\s+|grande\s+)*(?:fã|fan|chegado|chegada)\s+(?:dos|das|do|da|de)\s+([^.,\n]+)",
        anchors=("sou",),
        polarity="negative",
        template="Não gosta de {}",
    ),
    # "samba é a minha praia" / "futebol não é muito a minha praia".
    rule(
        "pt_minha_praia",
        r"(?:^|[.!?\n]\s*)((?!(?:isso|isto|aquilo|ele|ela|você|voce)\b)[^.,\n!?;]{2,40}?)(?<!não)(?<!nao)\s*,?\s+(?:é|e)\s+(?:muito\s+|total(?:mente)?\s+)?(?:a\s+)?(?:minha\s+praia|minha\s+paixão|meu\s+xodó|tudo\s+pra\s+mim)",
        anchors=("praia", "paixão", "xodó", "tudo"),
        polarity="positive",
        template="Gosta de {}",
    ),
    rule(
        "pt_nao_minha_praia",
        r"(?:^|[.!?\n]\s*)((?!(?:isso|isto|aquilo|ele|ela|você|voce)\b)[^.,\n!?;]{2,40}?)\s*,?\s+n(?:ão|ao)\s+(?:é|e)\s+(?:muito\s+|bem\s+)?(?:a\s+)?(?:minha\s+praia|pra\s+mim|para\s+mim|(?:muito\s+)?(?:a\s+)?minha\s+(?:praia|vibe))",
        anchors=("praia", "mim", "vibe"),
        polarity="negative",
        template="Não gosta de {}",
    ),
    rule(
        "pt_alergia",
        r"\b(?:eu\s+)?(?:sou\s+(?:muito\s+)?(?:alérgico|alérgica|intolerante)|tenho\s+(?:alergia|intolerância))\s+(?:a|à|ao|aos|às|de|do|da)\s+([^.,\n]+)",
        anchors=("alérgico", "alérgica", "intolerante", "alergia", "intolerância"),
        polarity="negative",
        template="Alérgico a {}",
    ),
    rule(
        "pt_nao_como",
        r"\b(?:eu\s+)?n(?:ão|ao)\s+(?:como|bebo)\s+(?!(?:nada|muito|bem|mais|agora|hoje)\b)([^.,\n]+)",
        anchors=("como", "bebo"),
        polarity="negative",
        template="Não consome {}",
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
)

_DECISION = (
    rule(
        "pt_decidi",
        r"\b(?:eu\s+)?(?:decidi|decidimos|resolvi|resolvemos)\s+(?:que\s+)?([^.,\n]+)",
        anchors=("decidi", "decidimos", "resolvi", "resolvemos"),
        template="Decidiu: {}",
    ),
    rule(
        "pt_vou_usar",
        rf"\b(?:eu\s+)?(?:vou|vamos)\s+(?:usar|utilizar|adotar|migrar\s+para|migrar\s+pro|migrar\s+pra)\s+{phrase(PT_CLAUSE)}",
        anchors=("usar", "utilizar", "adotar", "migrar"),
        template="Vai usar {}",
    ),
    rule(
        "pt_escolhi",
        r"\b(?:eu\s+)?(?:escolhi|escolhemos)\s+([^.,\n]+)",
        anchors=("escolhi", "escolhemos"),
        template="Escolheu {}",
    ),
    rule(
        "pt_optei",
        rf"\b(?:eu\s+)?(?:optei|optamos|fechei|fechamos)\s+(?:por|pelo|pela|com)\s+{phrase(PT_CLAUSE)}",
        anchors=("optei", "optamos", "fechei", "fechamos"),
        template="Escolheu {}",
    ),
    rule(
        "pt_pretendo",
        rf"\b(?:eu\s+)?(?:pretendo|planejo|pretendemos|planejamos|estou\s+planejando|tô\s+planejando)\s+{phrase(PT_CLAUSE)}",
        anchors=("pretendo", "planejo", "pretendemos", "planejamos", "planejando"),
        template="Pretende {}",
    ),
    rule(
        "pt_me_inscrevi",
        rf"\b(?:eu\s+)?(?:me\s+inscrevi|nos\s+inscrevemos|me\s+matriculei|fiz\s+inscrição)\s+(?:em|no|na|nos|nas|para|pra|pro|num|numa)\s+{phrase(PT_CLAUSE)}",
        anchors=("inscrevi", "inscrevemos", "matriculei", "inscrição"),
        template="Se inscreveu em {}",
    ),
    rule(
        "pt_parei",
        r"\b(?:eu\s+)?((?:larguei|parei\s+de|deixei\s+de|pedi\s+demissão|saí\s+d[oa])\s*[^.,\n!?;]*)",
        anchors=("larguei", "parei", "deixei", "demissão", "saí"),
        template="Decidiu: {}",
    ),
    rule(
        "pt_vou_mudar",
        r"\b(?:eu\s+)?vou\s+(?:me\s+)?((?:mudar|largar|sair|aprender|comprar|trocar|começar|parar|estudar|abrir|vender|adotar|pedir\s+demissão)[^.,\n]*)",
        anchors=("vou",),
        template="Vai {}",
    ),
)

_NAME = (
    rule(
        "pt_nome",
        rf"\b(?:(?:meu\s+nome|o\s+meu\s+nome)\s+é|(?:eu\s+)?me\s+chamo|(?:pode|podem)\s+me\s+chamar\s+de|me\s+chamam\s+de|me\s+chama\s+de)\s+{words(3)}",
        anchors=("nome", "chamo", "chamar", "chamam", "chama"),
        template="Chama-se {}",
    ),
    # "Sou a Joana", "Aqui é o Pedro": one capitalised word closing the clause.
    rule(
        "pt_sou_name",
        rf"\b(?:(?:eu\s+)?sou|aqui\s+(?:é|e))\s+(?:o|a)\s+{words(1)}(?=\s*(?:[,.!]|$|e{B}))",
        anchors=("sou", "aqui"),
        template="Chama-se {}",
        case="proper",
    ),
)

_RESIDENCE = (
    rule(
        "pt_moro",
        rf"\b(?:eu\s+)?(?:moro|vivo|moramos|vivemos|a\s+gente\s+(?:mora|vive))\s+(?:sozinh[oa]\s+|atualmente\s+|hoje\s+|agora\s+)?(?:em|no|na|nos|nas|perto\s+de)\s+{phrase(PT_CLAUSE + '|com|agora')}",
        anchors=("moro", "vivo", "moramos", "vivemos", "mora", "vive"),
        template="Mora em {}",
    ),
    rule(
        "pt_mudei",
        rf"\b(?:eu\s+)?(?:me\s+mudei|mudei-me|nos\s+mudamos|mudamos|a\s+gente\s+se\s+mudou|se\s+mudou|mudou-se)\s+(?:para|pra|pro)\s+(?:o\s+|a\s+)?{phrase(PT_CLAUSE + '|com|no|em')}",
        anchors=("mudei", "mudamos", "mudou"),
        template="Mora em {}",
    ),
    rule(
        "pt_morando",
        rf"\b(?:(?:eu\s+)?(?:estou|tô|to|estamos)\s+(?:morando|vivendo)|(?:fui|vim|fomos|viemos)\s+morar)\s+(?:em|no|na|nos|nas)\s+{phrase(PT_CLAUSE + '|com|agora')}",
        anchors=("morando", "vivendo", "morar"),
        template="Mora em {}",
    ),
    rule(
        "pt_comprei_casa",
        rf"\b(?:comprei|compramos|comprar|aluguei|alugamos|alugo|alugamos)\s+(?:uma?\s+|o\s+nosso\s+|a\s+nossa\s+|meu\s+|minha\s+)?(?:casa|apartamento|apê|ape|flat|kitnet|quarto)\s+(?:em|no|na|perto\s+de)\s+{phrase(PT_CLAUSE + '|com|há|desde')}",
        anchors=("casa", "apartamento", "apê", "ape", "flat", "kitnet", "quarto"),
        template="Mora em {}",
        case="proper",
    ),
    # "Sou advogado em São Paulo": where one works, when it is a place's name.
    rule(
        "pt_works_in_place",
        rf"\b(?:eu\s+)?(?:sou|trabalho)\s+{_NOT_DEGREE}(?:(?!\se\s)[^.,\n!?;]){{1,40}}?\s+em\s+(?!(?:ti|rh|{TECH}){B}){phrase(PT_CLAUSE + '|com|como|desde|no|na')}",
        anchors=("sou", "trabalho"),
        template="Mora ou trabalha em {}",
        case="proper",
    ),
)

_JOB = (
    rule(
        "pt_trabalho",
        rf"\b(?:eu\s+)?(?:trabalho|atuo|estou\s+trabalhando|tô\s+trabalhando)\s+((?:na|no|em|numa|num|para|pra|como|com|de)\s+{inner(PT_CLAUSE)})",
        anchors=("trabalho", "atuo", "trabalhando"),
        template="Trabalha {}",
    ),
    rule(
        "pt_sou",
        rf"\b(?:eu\s+)?sou\s+(?:um\s+|uma\s+|o\s+|a\s+)?((?!(?:{NOT_JOB_PT}){B}){inner(PT_CLAUSE)})",
        anchors=("sou",),
        template="É {}",
        case="not_name",
    ),
    rule(
        "pt_entrei_na",
        rf"\b(?:eu\s+)?(?:entrei|comecei\s+a\s+trabalhar|comecei|fui\s+(?:contratado|contratada|efetivado|efetivada))\s+(?:na|no|pela|pelo|em)\s+{phrase(PT_CLAUSE + '|como|há|desde|semana|mês|ano|no|na|em|este|esta|ontem|hoje')}",
        anchors=("entrei", "comecei", "contratado", "contratada", "efetivado", "efetivada"),
        template="Trabalha em {}",
        case="proper",
    ),
    rule(
        "pt_dou_aula",
        rf"\b(?:eu\s+)?(?:dou\s+aulas?|leciono|ensino)\s+((?:de\s+|d[oa]s?\s+)?{inner(PT_CLAUSE + '|há|desde')})",
        anchors=("aula", "aulas", "leciono", "ensino"),
        template="Dá aula {}",
    ),
    rule(
        "pt_dono",
        r"\b(?:eu\s+)?tenho\s+((?:uma?|minha|meu)\s+(?:própri[oa]\s+)?(?:loja|empresa|padaria|restaurante|bar|café|salão|clínica|escritório|agência|startup|oficina|academia|pousada|lanchonete|hamburgueria|barbearia)\b[^.,\n!?;]*)",
        anchors=("tenho",),
        template="É dono(a) de {}",
    ),
    rule(
        "pt_job_status",
        rf"\b(?:eu\s+)?(?:sou|estou|tô)\s+(?:atualmente\s+)?(desempregad[oa]|aposentad[oa]|autônom[oa]|sem\s+emprego|de\s+licença|procurando\s+emprego){B}",
        anchors=("sou", "estou", "tô"),
        template="Está {}",
    ),
)

_TOOL = (
    rule(
        "pt_uso",
        rf"\b(?:eu\s+)?(?:uso|utilizo|usamos|utilizamos)\s+(?:mais\s+|muito\s+|sempre\s+|principalmente\s+|bastante\s+)?(?:o\s+|a\s+|os\s+|as\s+)?{phrase(PT_TOOL_STOPS)}",
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
        rf"\b(?:eu\s+)?(?:programo|desenvolvo|codo)\s+(?:principalmente\s+|mais\s+|sempre\s+)?(?:em|com)\s+{phrase(PT_TOOL_STOPS)}",
        anchors=("programo", "desenvolvo", "codo"),
        template="Programa em {}",
    ),
    # The items after the first of a list of tools: "a gente usa GitLab e Docker".
    rule(
        "pt_ferramenta_seguinte",
        rf"\b(?:uso|utilizo|usamos|utilizamos|a\s+gente\s+usa|programo\s+em|trabalho\s+com)\s+[^.\n!?;]{{1,40}}?(?:,|\s+e)\s+(?:um\s+pouco\s+(?:de\s+)?|também\s+|às\s+vezes\s+|o\s+|a\s+)?{phrase(PT_TOOL_STOPS + '|também|pra|quando|um|uma')}",
        anchors=("uso", "utilizo", "usamos", "utilizamos", "usa", "programo", "trabalho"),
        template="Usa {}",
        case="named",
    ),
    rule(
        "pt_ferramenta_ultima",
        rf"\b(?:uso|utilizo|usamos|utilizamos|a\s+gente\s+usa|programo\s+em)\s+[^.\n!?;]{{1,60}}\s+e\s+(?:um\s+pouco\s+(?:de\s+)?|também\s+|às\s+vezes\s+|o\s+|a\s+)?{phrase(PT_TOOL_STOPS + '|também|pra|quando|um|uma')}",
        anchors=("uso", "utilizo", "usamos", "utilizamos", "usa", "programo"),
        template="Usa {}",
        case="named",
    ),
    rule(
        "pt_my_device",
        rf"\b(?:meu|minha)\s+(?:notebook|computador|pc|laptop|celular|telefone|editor|ide|sistema|setup|máquina|linguagem)(?:\s+(?:principal|atual|de\s+trabalho))?\s+(?:é|e)\s+(?:um\s+|uma\s+|o\s+|a\s+)?{phrase(PT_TOOL_STOPS)}",
        anchors=("meu", "minha"),
        template="Usa {}",
    ),
)

_FAMILY = (
    rule(
        "pt_kin",
        rf"\b(?:meu|minha|meus|minhas|nosso|nossa|nossos|nossas)\s+((?:{PT_KIN}){B}[^.,\n!?;]*)",
        anchors=("meu", "minha", "meus", "minhas", "nosso", "nossa", "nossos", "nossas"),
        template="Família: {}",
    ),
    rule(
        "pt_tenho_kin",
        rf"{_HAVE}\s+({PT_COUNT}\s+(?:{PT_KIN}){B}[^.,\n!?;]*)",
        anchors=("tenho", "temos"),
        template="Tem {}",
    ),
    rule(
        "pt_gravida",
        r"\b(?:eu\s+)?(?:estou|tô|to|sou)\s+((?:grávida|gravida)(?:\s+(?:de|do|da)\s+[^.,\n!?;]+)?|(?:filho|filha)\s+(?:único|única|unico|unica))",
        anchors=("grávida", "gravida", "único", "única", "unico", "unica"),
        template="Está {}",
    ),
    rule(
        "pt_sou_mae",
        r"\b(?:eu\s+)?sou\s+((?:mãe|pai)\s+d[eo]s?\s+[^.,\n!?;]+)",
        anchors=("sou",),
        template="É {}",
    ),
)

_PET = (
    rule(
        "pt_tenho_pet",
        rf"{_HAVE}\s+({PT_COUNT}\s+(?:{PT_PETS}){B}[^.,\n!?;]*)",
        anchors=("tenho", "temos"),
        template="Tem {}",
    ),
    rule(
        "pt_my_pet",
        rf"\b(?:meu|minha|meus|minhas|nosso|nossa|nossos|nossas)\s+((?:{PT_PETS}){B}[^.,\n!?;]*)",
        anchors=("meu", "minha", "meus", "minhas", "nosso", "nossa", "nossos", "nossas"),
        template="Animal: {}",
    ),
    rule(
        "pt_pet_name",
        rf"\b(?:{PT_PETS}){B}[^.!?\n]{{0,40}}?(?:,\s*|\s+)(?:(?:ele|ela)\s+se\s+chama|que\s+se\s+chama|chamado|chamada|o\s+nome\s+del[ea]\s+é)\s+{words(1)}",
        anchors=("chama", "chamado", "chamada", "nome"),
        template="Animal: {}",
        case="proper",
    ),
    rule(
        "pt_adotei",
        rf"\b(?:eu\s+)?(?:adotei|adotamos|resgatei|ganhei)\s+({PT_COUNT}\s+(?:{PT_PETS}){B}[^.,\n!?;]*)",
        anchors=("adotei", "adotamos", "resgatei", "ganhei"),
        template="Tem {}",
    ),
)

_RELATIONSHIP = (
    rule(
        "pt_status",
        r"\b(?:eu\s+)?(?:sou|estou)\s+((?:casad[oa]|solteir[oa]|noiv[oa]|divorciad[oa]|separad[oa]|viúv[oa]|namorando)(?:\s+(?:com|há|desde)\s+[^.,\n!?;]+)?)",
        anchors=("sou", "estou"),
        template="É {}",
    ),
    rule(
        "pt_casei",
        r"\b(?:eu\s+)?((?:me\s+casei|casei|nos\s+casamos|casamos|fiquei\s+(?:noivo|noiva)|ficamos\s+noivos|me\s+separei|nos\s+separamos|me\s+divorciei|namoro)(?:\s+(?:com|há|desde)\s+[^.,\n!?;]+)?)",
        anchors=(
            "casei",
            "casamos",
            "noivo",
            "noiva",
            "noivos",
            "separei",
            "separamos",
            "divorciei",
            "namoro",
        ),
        template="Relacionamento: {}",
    ),
    rule(
        "pt_partner",
        rf"\b(?:meu|minha)\s+((?:namorad[oa]|noiv[oa]|companheir[oa]|parceir[oa]|mina|boy|crush){B}[^.,\n!?;]*)",
        anchors=("meu", "minha"),
        template="Parceiro(a): {}",
    ),
    rule(
        "pt_tenho_partner",
        rf"{_HAVE}\s+(?:uma?\s+)?((?:namorad[oa]|noiv[oa]|companheir[oa]){B}[^.,\n!?;]*)",
        anchors=("tenho", "temos"),
        template="Tem {}",
    ),
)

_EVENT = (
    # A plan to move or to use something is a decision (above), even with a date.
    rule(
        "pt_viajo",
        rf"\b(?:eu\s+)?((?:viajo|embarco|volto|vou|viajamos|vamos)\s+(?!me\s+mudar|nos\s+mudar|usar|utilizar|adotar|migrar)[^.,\n!?;]*?\s{PT_DATE}[^.,\n!?;]*)",
        anchors=("viajo", "embarco", "volto", "vou", "viajamos", "vamos"),
        template="Evento: {}",
    ),
    rule(
        "pt_passado_dated",
        rf"\b(?:eu\s+)?((?:passei|fiz|tive|corri|terminei|defendi|voltei|viajei|me\s+formei|formei-me|comemorei|ganhei|recebi)\s+[^.,\n!?;]*?\s{PT_DATE}[^.,\n!?;]*)",
        anchors=(
            "passei",
            "fiz",
            "tive",
            "corri",
            "terminei",
            "defendi",
            "voltei",
            "viajei",
            "formei",
            "comemorei",
            "ganhei",
            "recebi",
        ),
        template="Evento: {}",
    ),
    rule(
        "pt_tenho_dated",
        rf"{_HAVE}\s+((?:uma?\s+)?[^.,\n!?;]*?\s{PT_DATE}[^.,\n!?;]*)",
        anchors=("tenho", "temos"),
        template="Tem {}",
    ),
    rule(
        "pt_meu_x_e",
        rf"\b(?:meu|minha|nosso|nossa)\s+([^.,\n!?;]{{2,40}}?\s+(?:é|será|vai\s+ser|está\s+marcad[oa]\s+para|tá\s+marcad[oa]\s+pra)\s+(?:em\s+|no\s+|na\s+|para\s+|pra\s+)?{PT_DATE}[^.!?;\n]*)",
        anchors=("meu", "minha", "nosso", "nossa"),
        template="Evento: {}",
    ),
)

RULES: dict[str, tuple[Rule, ...]] = {
    "preference": _PREFERENCE,
    "decision": _DECISION,
    "pattern": (),
    "name": _NAME,
    "residence": _RESIDENCE,
    "job": _JOB,
    "tool": _TOOL,
    "family": _FAMILY,
    "pet": _PET,
    "relationship": _RELATIONSHIP,
    "event": _EVENT,
}
