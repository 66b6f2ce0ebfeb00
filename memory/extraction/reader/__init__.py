"""A clause reader: the English facts the phrase rules miss, read from who does what in each clause.

The rule families match trigger phrases; a phrasing they were not written for is lost ("I do most of my
writing in Obsidian", "been single for a couple years", "my husband hates sushi but I love it"). This
package reads a message the way a person does, and only adds the facts of phrases that no rule of the same
class has read (:func:`memory.extraction.rules.extract_facts` checks the spans). Its modules, each used
only by the ones after it:

1. **Verbs** (:mod:`.lexicon`): every form of the verbs the reader knows, its lemma and kind.
2. **Clauses** (:mod:`.clauses`): sentences are cut at ``.``, ``!``, ``?`` and line breaks, then at
   commas, semicolons, colons and dashes, and before a conjunction ("and", "but", "so", "because",
   "though", …) that opens a new clause (a subject, or a verb the reader knows, follows it). "me and my
   gf" and "my wife and I" stay one subject. The subjects: "I" (with "I'm", "I've", "I'll", "I'd"),
   "we", "me and my X", "my X and I", someone else, or the user's kin, partner or pet.
3. **Modality** (:mod:`.modality`): a hedge (might, maybe, probably, want, hope, thinking about,
   considering, trying, need to …) or a past habit ("used to") drops the clause; a negation (don't,
   never, no longer, can't) flips a preference and drops the other classes; "going to", "gonna",
   "planning to", "will" make it a plan; adverbs are skipped.
4. **Objects** (:mod:`.phrases`): the phrase after the verb, up to the clause's end or a word that starts
   something else (a date, "with", "for", "since"); lists are split ("Jira and Confluence").
5. **Readings per class** (:mod:`.readings`: a :class:`Reading`; work, tools, preferences and decisions;
   :mod:`.household`: relationships, family, pets and dated events, whose subject may also be the
   user's kin or pet, "my son has a tournament on Saturday"; :mod:`.tastes`: tastes with the thing as
   the subject, "podcasts aren't my thing", "nothing beats X", or judged by an adjective, "I find small
   talk exhausting").
6. **Verb classes** (:mod:`.predicate`): the verb's lemma picks the reading — where one lives (live,
   reside, move, relocate, settle, be based), work (work at/for/as, get hired, join, "a new role as"),
   tools (use, code in, write a language, an activity "in/on/with/using" a tool), preferences (love,
   like, enjoy, prefer; hate, dislike, can't stand; "into", "a fan of"), decisions (decide, pick, choose,
   quit, sell, switch; a clause with "instead" or opened by "from now on"), relationships (be single,
   married, divorced; marry), pets ("a … called Spike"), and dated events (a clause with an event verb —
   had, ran, graduated, expecting, moving in, starting … — and a date, "last Friday", "in 2020", "on the
   9th").
7. **The walk** (:mod:`.sentences`, :func:`read_clauses`): each clause of the text's last
   :data:`MAX_READ_LENGTH` characters, by its subject; a clause with none written continues the
   sentence's first-person subject, or opens the message in the telegraphic style people use ("Moved
   back to Glasgow", "been single for years"); a clause about someone else ("my sister keeps saying…",
   "he lives in…") is not read; "it" / "them" take the object of the sentence's previous clause ("I used
   to hate olives but now I love them"). Every reading is judged by
   :class:`memory.extraction.guards.Guard` at its clause.
"""

from memory.extraction.reader.clauses import clauses
from memory.extraction.reader.readings import Reading
from memory.extraction.reader.sentences import MAX_READ_LENGTH, read_clauses

__all__ = ["MAX_READ_LENGTH", "Reading", "clauses", "read_clauses"]
