"""What may enter the ``human`` block: notes grounded in what the user said about themselves.

A 1.5B model saves small talk as if it were a fact about the user ("Weather has been odd
lately", "Traffic was bad this morning", "The bus was late again"): half the lines it wrote
to ``human`` on scenarios of our own were chatter, and every such line sits in every later
prompt of the agent. What makes a line a fact about the user is visible in the user's own
message: they speak about themselves ("I", "my", "we"), or they give their name ("Name's
Bram", "Dev here"). Chatter speaks about the world ("the traffic", "the weather").

`grounded_in_user_words` lets a note into ``human`` only when a sentence of the user in
view states something lasting about them (`fact_sentences`: not a question; their name, a
person of theirs named, their work or home told outright; otherwise judged by the learned
model in `lasting`, which weighs the rules below as cues: first person, the passing moment
"I'm so tired today", a story about a thing...) and shares a content word with the note.
The embedded model's wrapper (`LocalToolCallingChatModel`) takes the other ``human`` edits
out of the step it returns (`drop_ungrounded_notes`), before they run; it
asks nothing of the model and costs no call. Other models are trusted with their notes (a
user may well ask any model to keep "The door code is 4711").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolCall

from langgraph_memgpt.prompts import HUMAN_BLOCK, without_time
from langgraph_memgpt.small_model.lasting import is_fragment, lasts
from langgraph_memgpt.small_model.people import KEPT_ANIMALS, identities
from langgraph_memgpt.small_model.people import RELATION as _RELATION
from langgraph_memgpt.small_model.same_fact import same_fact
from langgraph_memgpt.stores.words import STOP_WORDS, topic_stems
from langgraph_memgpt.turn.tokens import content_text

_FIRST_PERSON = re.compile(
    r"\b(i|i['\u2019](m|ve|d|ll)|im|me|my|mine|myself|we|we['\u2019](re|ve)|us|our|ours)\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_PASSING = re.compile(
    r"\b(today|tonight|this (morning|afternoon|evening)|right now|at the moment|just now|"
    r"last night|yesterday|earlier|about to|rn|brb|lol|lmao|omg|haha+|ugh|"
    r"so (?:embarrassing|annoying|awkward)|nothing serious|luckily|thankfully|"
    r"worst \w+ ever|of all (?:days|times)|i['\u2019]?m off(?=\W*$))\b",
    re.IGNORECASE,
)
_COUNT = (
    r"(?:about|nearly|almost|over|a good|a|an|half an?|a couple of|a few|\d+|one|two|three|"
    r"four|five|ten|fifteen|twenty|thirty|forty|forty-five|fifty|sixty|ninety)"
)
_TIME_BOX = re.compile(
    rf"\b(?:for|after|in)\s+(?:{_COUNT}\s+)+(?:seconds?|minutes?|mins?|hours?)\b"
    r"(?!\s+(?:a|an|per|each|every)\b)"
    r"|\ball (?:night|morning|afternoon|evening)(?: long)?\b"
    r"|\b(?:minutes|hours) (?:straight|on end)\b",
    re.IGNORECASE,
)
"""A span of minutes or hours, or a whole night or afternoon: the measure of an episode
("stood outside for forty minutes", "hiccups for twenty minutes straight", "playing the
accordion all afternoon"). A rate is not one ("eight hours a night")."""
_DEGREE = (
    r"(?:(?:so|really|a bit|a little|kind of|kinda|pretty|very|super|totally|quite|rather|"
    r"just|absolutely|completely|too|bit)\s+)*"
)
_MOMENT_STATE = re.compile(
    rf"\b(?:i['\u2019]?m|i am|we['\u2019]re|we are|i feel|i['\u2019]m feeling|i am feeling|"
    rf"feeling)\s+{_DEGREE}"
    r"(?:tired|exhausted|sleepy|hungry|starving|thirsty|bored|stressed|busy|sick|ill|cold|"
    r"freezing|hot|late|stuck|sore|knackered|shattered|soaked|full|fed up|under the weather|"
    r"in a mood|off to|heading|on (?:my|our) way|running late|home)(?![\w-])(?!\s+of\b)",
    re.IGNORECASE,
)
_MUSING = re.compile(
    r"^(?:i|we)\s+(?:think|guess|wonder|suppose|bet|can['\u2019]?t believe|cannot believe|"
    r"need a|could use|could really use)\b"
    r"|^(?:maybe|perhaps)\b|\b(?:someday|some day|one day|who knows)\b",
    re.IGNORECASE,
)


_BODY_STATE = re.compile(
    rf"\b(?:is|are|was|were|feels?|felt)\s+{_DEGREE}"
    r"(?:sore|aching|achy|stiff|hurting|throbbing|killing me)\b",
    re.IGNORECASE,
)
_SMALL_TALK = re.compile(
    r"\b(?:weather|rain(?:s|y|ing|ed)?|pouring|drizzl\w*|snow(?:s|y|ing|ed)?|sunny|windy|"
    r"fog(?:gy)?|hail|humid|heatwave|"
    r"traffic|commute|bus|tram|train|metro|subway|ferry|roadworks|motorway|queue|"
    r"coffee|tea|espresso|latte|cappuccino|flat white|croissant|muffin|sandwich|porridge|"
    r"breakfast|lunch|snack|"
    r"watched|binged|episode|series|finale|documentary|"
    r"neighbou?rs?|upstairs|next door|car alarm|"
    r"out of order|went cold|screen cracked)\b",
    re.IGNORECASE,
)
"""What everyday small talk is about: the weather, getting about, a drink or a snack, a
show watched, the neighbours, a small mishap. A sentence about one of them is passing
unless it says something that lasts (`_LASTING`)."""
_HABIT = (
    r"always|every (?:day|morning|evening|night|week|weekend)|usually|"
    r"(?:once|twice|\w+ times) a (?:day|week|month|year)"
)
_LASTING_CORE = (
    r"for a living|as a living|(?:i|we) (?:work|live|drive|teach|run|own)|allergic|"
    r"intoleran\w*|vegetarian|vegan|favou?rite|(?:i|we) (?:"
    r"can['\u2019]?t (?:eat|have|drink)|don['\u2019]?t (?:eat|drink)|never (?:eat|drink))|"
    r"(?:i|we)\s+(?:really\s+|absolutely\s+|just\s+|do\s+)?(?:love|hate|adore|detest|prefer|"
    r"can['\u2019]?t stand|don['\u2019]?t (?:like|own|have))\s+"
    r"(?!(?:this|that|it|these|those|the|today|tonight|how)\b)(?:(?:a|an|any)\s+)?\w+\w"
    r"|(?:not\s+)?a\s+(?:huge\s+|big\s+)?fan\s+of\s+(?!(?:this|that|it|the)\b)\w+\w"
)
"""What says the user's lasting ways: their work, home, diet, and a liking that is general
("I really love rainy days", "Not a fan of cold weather"), not one for the moment ("I love
this rain")."""
_DURABLE = (
    r"(?:for|been|(?:lived|worked|had \w+)(?:\s+\w+){0,3}) (?:\d+|a few|several|many|two|"
    r"three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty) "
    r"years|years ago|since i was|since (?:he|she|they) (?:was|were)|ever since|all my life|"
    r"(?:\d+|a few|several|many|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"fifteen|twenty|thirty|forty) years (?:i|we)(?:['\u2019]ve| have) (?:lived|worked|been)|"
    r"(?:from|after) years of|since (?:my|our) (?:teens|twenties|thirties|forties|fifties|"
    r"childhood|school days)|since (?:i was )?(?:a )?(?:kid|child|childhood|teenager|baby|birth)|"
    r"(?:since|in) (?:19|20)\d\d"
)
"""A span of years: what has lasted ("I've had it since I was a kid", "we've lived here six
years"), whatever else the sentence tells."""
_LASTING = re.compile(rf"\b(?:{_HABIT}|{_LASTING_CORE}|{_DURABLE})\b", re.IGNORECASE)
_SAYS_ITSELF = re.compile(
    rf"\b(?:{_HABIT}|{_LASTING_CORE}|{_DURABLE}|as an? [a-z]+)\b", re.IGNORECASE
)
"""What a sentence ending on "it" still says of the user on its own: a habit, their ways,
a span of years, what they are ("As a nurse I really appreciate that")."""
_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december)"
)
_DATE = (
    rf"(?:on|in|for|next|from)\s+(?:the\s+)?(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?)?{_MONTH}\b"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|on\s+the\s+\d{{1,2}}(?:st|nd|rd|th)\b"
)
"""A day of the calendar: "on the 27th of July", "next June", "on June 18th"."""
_DATED_PLAN = (
    rf"(?:i['\u2019]m|i am|i was|we['\u2019]re|we are|we were)\s+\w+ing\b[^.!?]*\b"
    rf"(?:on|in|for)\s+"
    rf"(?:the\s+\d+\w*\s+of\s+)?{_MONTH}"
)
"""The user's own plan for a date ("and I'm walking the Milford Track on the 8th of March")."""
_THEIR_PLACE = (
    r"(?:our|my) (?:(?![\w-]+['\u2019]s\b)[\w-]+ )?(?:street|road|building|flat|apartment|"
    r"house|home|cottage|town|city|village|neighbou?rhood|estate) (?:in|of) (?-i:[A-Z])"
)
"""Where the user lives, told in passing ("on our street in Vancouver", "key collection for
our BTO flat in Punggol"; not "my friend's house in Leeds")."""
_OWNERS_LASTING = re.compile(
    rf"\b(?:{_LASTING_CORE}|{_DURABLE}|booked|scheduled|planned for|{_DATED_PLAN}|"
    rf"{_THEIR_PLACE}|{_DATE})",
    re.IGNORECASE,
)
"""What lasts in a story about a thing: the user's own lasting ways, not the thing's
habits ("My neighbour's parrot screams every morning" is still about the parrot), and a
plan ("My driving test is booked for March")."""
_PAST_IRREGULAR = (
    r"went|came|got|made|took|kept|gave|sent|brought|left|found|ate|drank|saw|heard|ran|"
    r"fell|forgot|caught|threw|drove|flew|spent|rang|sat|stood|slept|woke|paid|"
    r"cut|hit|put|shut|tore|bit|stuck|swam|sang|broke"
)
"""Irregular past tenses of everyday actions (not "had", "was", "met", "lost", "wrote",
"won": those also tell lasting things, "I had surgery", "I wrote two novels")."""
_PAST = (
    rf"(?:{_PAST_IRREGULAR}"
    r"|(?!(?:n|f|s|bl|br|sp|proc|succ|exc)eed\b)[a-z]{2,}ed)"
)
_EPISODE = re.compile(
    rf"^(?:(?:i|we)\s+)?(?:just\s+|then\s+|finally\s+|accidentally\s+|nearly\s+|almost\s+)?"
    rf"{_PAST}\b(?!\s+(?:is|are|was|were|has|have|and)\b)(?!['\u2019]s\b)",
    re.IGNORECASE,
)
"""An episode: a sentence opening on a past action of the user's, with or without its
"I" ("I stepped on a Lego brick", "Sent an email with a typo", "Left my keys in the
door"). A name is no verb ("Fred is my husband")."""
_BIOGRAPHY = re.compile(
    r"\b(?:grew up|raised|brought up|studied|trained|qualified|graduated|worked|lived|"
    r"used to|started|began|joined|signed up|enrolled|quit|gave up|stopped|switched|"
    r"became|took up|converted|met (?:my )?(?:wife|husband|partner)|relocated|emigrated|"
    r"moved (?:to|from|here|abroad|back|house|country|in with)|"
    r"for (?:\w+ )?years|years ago|(?:since|in) (?:19|20)\d\d|since i was)\b",
    re.IGNORECASE,
)
"""What a past tense tells for good: where the user grew up, studied or worked, the
changes they made that last ("I started learning the harp", "I gave up meat"), and what
is dated in years ("I ran a marathon in 2019", "I drove a taxi for ten years")."""
_REGRET = re.compile(
    r"\b(?:i|we)\s+(?:should|shouldn['\u2019]t|could|would)(?:['\u2019]ve| have)\s+"
    r"(?!(?:mentioned|said|told)\b)\w+|\b(?:i|we) wish\b|\bif only\b",
    re.IGNORECASE,
)
"""A regret or a wish about the moment ("I should have worn gloves", "I wish I'd slept
more"); not "I should have mentioned, ..." (which brings a fact)."""
_MISHAP = re.compile(
    r"(?:^|\b(?:i|we)\s+)(?:just\s+)?(?:forgot|missed|spilled|spilt|dropped|burnt|burned|stubbed|"
    r"overslept|tripped|locked (?:myself|ourselves) out|ran out of|got (?:a |an )?"
    r"(?:parking |speeding )?(?:ticket|fine)|got (?:soaked|stuck|lost|caught))\b",
    re.IGNORECASE,
)
"""A small mishap told in the first person ("I forgot my keys", "I got a parking ticket"),
or with the "I" left out ("Spilled coffee on my shirt")."""
_AILMENT = re.compile(
    r"(?:\b(?:i|we)\s+|^)(?:have|['\u2019]ve got|got|caught)\s+(?:a|an)\s+(?:\w+\s+)?"
    r"(?:headache|cold|cough|fever|hangover|sore throat|runny nose|stomach ache|toothache)\b",
    re.IGNORECASE,
)
"""A passing ailment, said with "a" ("I have a headache"); a lasting one is said without
("I have asthma", "I have coeliac disease")."""
_LIFE_EVENT = re.compile(
    rf"\b(?:stolen|lost (?:my|our) (?:job|home|house|{_RELATION})|broke (?:my|our)|broken|"
    r"married|engaged|divorced|born|died|passed away|"
    r"moved|moving|promoted|fired|hired|laid off|adopted|bought|sold|diagnosed|graduated|"
    r"retired|injured|pregnant)\b",
    re.IGNORECASE,
)
"""Events whose consequences last: told with "yesterday", they are still facts about the
user ("My bike got stolen outside the station yesterday")."""
_THING_EVENT = re.compile(
    r"\b(?:stolen|stole|sold|bought|broken into|broke into|burn(?:ed|t) down|written off|"
    r"totall?ed)\b",
    re.IGNORECASE,
)
"""What happening to a thing of theirs lasts (`_LIFE_EVENT` for things): "My bike got
stolen", not "My phone battery died" nor "The lift is broken again"."""


_OWN = (
    r"(?:name|job|work|career|profession|birthday|hometown|home|flat|house|apartment|address|"
    r"diet|allergy|"
    r"health|degree|religion|first language|native language|favou?rite\w*)"
)
_THINGS_SUBJECT = re.compile(
    rf"^(?:(?:the|a|an|this|that|these|those|some|somebody|someone|everyone|everybody|"
    rf"nobody|no one)\b|there(?:['\u2019]s| is| was| were)\b|"
    rf"(?:my|our)\s+(?!(?:[\w'\u2019-]+\s+){{0,2}}(?:{_RELATION}|{_OWN})\b)[\w'\u2019-]+|"
    rf"(?:my|our)\s+{_RELATION}['\u2019]s\s+"
    rf"(?!(?:[\w'\u2019-]+\s+){{0,1}}(?:{_RELATION}|{_OWN})\b)[\w'\u2019-]+)",
    re.IGNORECASE,
)
"""A sentence told about a thing, not about the user nor one of their people: "The parcel
I ordered hasn't arrived", "There's a song stuck in my head", "My phone battery died",
"Our team lost 3-1". The user is in it only as its owner or witness."""
_USER_TOLD_OF = re.compile(
    rf"^(?:(?!(?:{_PAST}|is|are|was|were|has|have|had)\b)[\w'\u2019,-]+\s+){{1,4}}"
    r"(?:and|&)\s+(?:i|me)\b"
    r"|\b(?:says?|said|told (?:me|us)|thinks?|confirmed|found out)\s+(?:that\s+)?(?:i|we)\b",
    re.IGNORECASE,
)
"""A sentence opening on a thing or a person that is about the user all the same: they
are part of its subject ("The kids and I moved to Leeds", not "The clocks went back and I
turned up early") or what is said of them is reported ("The doctor says I'm diabetic")."""
_PET = "|".join(sorted(KEPT_ANIMALS))
_NAMED_RELATIVE = re.compile(
    rf"\b(?i:my|our)\s+(?:(?i:older|younger|little|big|baby|twin|eldest|youngest)\s+)?"
    rf"(?i:{_RELATION})\s*,?\s+[A-Z][\w'\u2019-]+"
    r"|\b[A-Z][\w'\u2019-]+,\s+(?i:my|our)\s+(?:[a-z-]+\s+){0,2}[a-z-]+\s*,"
    r"|\b(?!(?i:honestly|anyway|well|so|and|but|also|actually|basically|apparently|"
    r"obviously|seriously|yesterday|today|tonight|sadly|luckily|thankfully|yeah|like)\b)"
    rf"[A-Z][\w'\u2019-]+,\s+(?i:my|our)\s+(?:[\w-]+\s+){{0,2}}(?i:{_RELATION}|{_PET})\b"
    r"[^,]{0,30},"
    rf"|\b[\w'\u2019-]+\s*\((?i:my|our)\s+(?:[a-z-]+\s+){{0,2}}(?i:{_RELATION}|{_PET})\)"
    rf"|\b(?i:my|our)\s+(?:[a-z-]+\s+){{0,2}}(?i:{_PET})\s*,?\s+[A-Z][\w'\u2019-]+"
)
"""One of the user's people, named ("with my daughter Aino"; "Bryn, our collie, ...";
"Faizal, my army buddy from NS days, ..."; "gherkin (my ferret)"): a fact, whatever the
episode it is told in."""
_RELATION_EPISODE = re.compile(
    rf"^(?:my|our)\s+{_RELATION}\s+(?:just\s+|finally\s+|\w+ly\s+)?"
    rf"(?:[a-z]+ed|called|said|told|had|was|were|did|has\s+(?:just\s+)?[a-z]+ed|"
    rf"keeps?\s+\w+ing|{_PAST_IRREGULAR})\b",
    re.IGNORECASE,
)
"""One of the user's people in a passing episode, unnamed: "My sister called for an hour"
(not "My sister Noor lives in Oslo", not "My brother moved to Canada": a life event)."""


def passing(sentence: str) -> bool:
    """Whether a sentence speaks of the passing moment, not of the user for good.

    A sentence naming one of the user's people by relation ("with my son Radu") is not:
    it introduces them. A story about a thing (`_THINGS_SUBJECT`: "The parcel hasn't
    arrived", "My phone battery died", "Our team lost") is passing unless it says
    something lasting (the user's ways, a span of years, a dated plan, where they live) or
    what befell the thing lasts (`_THING_EVENT`: stolen, sold); so is an unnamed person of
    theirs in an episode ("My sister called for an hour"). Otherwise:
    Day-scale time ("this morning", "last night", "about to") unless the sentence tells a
    life event (`_LIFE_EVENT`: stolen, moved, married...), the measure of an episode
    (`_TIME_BOX`: "for twenty minutes", "all night"), a past action told as an episode
    (`_EPISODE`: "I stepped on a Lego brick", "Sent an email with a typo") unless it tells
    where the user grew up or worked or a change that lasts (`_BIOGRAPHY`), an
    anecdote's aside ("nothing serious", "luckily"), chat noise ("lol", "brb"), a
    state of the body or mood ("I'm starving", "my knee is sore"; "tired *of* something"
    lasts), a musing as the whole point ("I think it'll rain", "I need a nap"), or
    everyday small talk (`_SMALL_TALK`: "My tea went cold", "Our neighbour was drilling")
    that says nothing lasting: none of it belongs in every later prompt.
    """
    if _NAMED_RELATIVE.search(sentence) or _SAYS_WORK_OR_HOME.search(sentence):
        return bool(_MUSING.search(sentence))  # "with my son Radu": a person of theirs
    if _THINGS_SUBJECT.search(sentence) and not _USER_TOLD_OF.search(sentence):
        return not (_OWNERS_LASTING.search(sentence) or _THING_EVENT.search(sentence))
    if _LIFE_EVENT.search(sentence) and not _MOMENT_STATE.search(sentence):
        return bool(_MUSING.search(sentence))
    return bool(
        (_RELATION_EPISODE.search(sentence) and not _LASTING.search(sentence))
        or _PASSING.search(sentence)
        or _MOMENT_STATE.search(sentence)
        or _BODY_STATE.search(sentence)
        or _MUSING.search(sentence)
        or _REGRET.search(sentence)
        or _MISHAP.search(sentence)
        or _AILMENT.search(sentence)
        or (_TIME_BOX.search(sentence) and not _LASTING.search(sentence))
        or (
            _EPISODE.search(sentence)
            and not (_LASTING.search(sentence) or _BIOGRAPHY.search(sentence))
        )
        or (_SMALL_TALK.search(sentence) and not _LASTING.search(sentence))
        or _CHAT_TURN.search(sentence)
        or (_AGAIN.search(sentence) and not _OWNERS_LASTING.search(sentence))
        or (_ABOUT_IT.search(sentence) is not None and not _SAYS_ITSELF.search(sentence))
    )


_SAYS_WORK_OR_HOME = re.compile(
    r"\b(?:where (?:i|we) (?:work|live)|(?:i|we) work (?:as|at|in|for)|for a living|"
    r"(?:that['\u2019]s|is) (?:my|our) (?:job|work|trade)|allergic to|intolerant to|"
    r"that['\u2019]s (?:the job|my days?)\b(?! done)|"
    r"(?:my|our) shifts? (?:at|in) |"
    r"(?:i|i['\u2019]ve|i was|i got|been|i have been) (?:just |finally |officially )?diagnosed\b|"
    r"(?:i['\u2019]m|i am) (?:allergic|intolerant)|"
    r"(?:i|we) spend (?:most of |all of |half )?(?:my|our) (?:waking hours|days|working days|"
    r"weeks|working week|time)|"
    r"^(?:i['\u2019]m|i am) (?:an? )(?!(?:bit|little|lot|mess|wreck|fan|big|huge|total|"
    r"complete|bundle|tad|touch|nervous|fool)\b)[a-z-]+(?:\s+[a-z-]+)?\s*(?:[,;.!]|$|\s+(?:and|so|by|at|in|for)\b))",
    re.IGNORECASE,
)
"""The user's work, home, allergy or diagnosis, said in any story ("Got soaked walking to
the clinic where I work as a nurse", "Took the earrings back, nickel, and I'm allergic",
"the fire alarm went off during my shift at the call centre", "I was diagnosed with ADHD
last year"), what they spend their days on ("I spend most of my waking hours stitching old
bibles") and who they are ("I'm a notary, so today was three closings"): what the story is
told beside stays."""
_CHAT_TURN = re.compile(
    r"^(?:excuse me|kindly excuse|pardon|tell me|let me|hmm+|interesting|never mind|nvm|"
    r"i mean)\b|\b(?:away|off|heading|going) to (?:my |our )?bed\b"
    r"|^(?:(?:ok(?:ay)?|right|well|bas|anyway|alright|achha|sige|so)[\s,!.]+)?"
    r"(?:bye+|bye for now|ta-?ra|tata|ciao|adios|laters|cheers|g?night|nite|ttyl|"
    r"(?:allah|khuda) hafiz|see (?:ya|you)|catch you|talk (?:soon|later)|"
    r"(?:i )?(?:go|gotta|got to|have to|need to|must|off to) (?:go|run|dash|shower|sleep)|"
    r"signing off)\b",
    re.IGNORECASE,
)
"""The talk about the talk: an excuse, a request, a filler, a goodnight ("Kindly excuse the
late reply", "Tell me something interesting", "hmm let me think", "I'm away to my bed"), and
a goodbye in any English ("Ta-ra for now", "bas, allah hafiz", "gotta shower, byee").
Not "Sorry": an apology opens facts as often ("Sorry if I'm slow, I make wedding cakes to
order, that's my job")."""
_ABOUT_IT = re.compile(
    r"\b(?:i|we)(?:['\u2019]ve|['\u2019]d|['\u2019]ll| have| had| will)?\s+(?:\w+\s+){0,2}?"
    r"(?:it|this|that|them)\s*(?:,?\s*(?:honestly|now|already|too|though|anyway|lol|haha))?"
    r"\s*[.!]*\s*$",
    re.IGNORECASE,
)
"""A sentence about the user that ends on "it" or "that", whatever it is ("Glamorous it is
not, but I love it.", "I've muted it."): it says something only of what was said before,
and a note of it ("Has muted it.") says nothing on its own."""
_AGAIN = re.compile(r"\bagain\b", re.IGNORECASE)
"""A thing that happened once more ("My brother burnt the toast again"): an episode."""


_LEAD = re.compile(
    r"^\s*((hi|hello|hey|hiya|oh|ok|okay|so|and|also|anyway|actually|well|btw|fyi|yes|no|"
    r"oh no|oh dear|yay|ha|haha|wow|ugh|aw|oops|phew|hooray|whoa|yikes|argh|gosh|ooh|right|"
    r"(?:good )?(?:morning|afternoon|evening))"
    r"(?: there)?\b[\s,!.:-]*|(just so you know|by the way|for the record|remember that|quick one)"
    r"\b[\s,!.:-]*|[\w' ]{1,20}:\s+)+",
    re.IGNORECASE,
)
_NOT_NAMES = (
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|"
    r"may|june|july|august|september|october|november|december|christmas|easter|halloween|"
    r"ramadan|diwali|eid|hanukkah|thanksgiving|new|ok|okay"
)
"""What follows "It's" and is no one's name ("It's Friday!", "It's Christmas.")."""
_GREETS = r"(?i:(?:hi|hello|hey)(?: there)?|(?:nice|pleased|good|great|lovely) to meet you)"
_NOT_PEOPLE = (
    r"american|canadian|mexican|brazilian|jamaican|trinidadian|indian|pakistani|bangladeshi|"
    r"nigerian|ghanaian|kenyan|ugandan|zimbabwean|ethiopian|egyptian|african|asian|european|"
    r"australian|italian|german|russian|korean|iranian|malaysian|indonesian|singaporean|"
    r"filipino|filipina|christian|muslim|catholic|hindu|sikh|buddhist|vegan|vegetarian|"
    r"retired|single|married|new|back|home|fine|good|great|okay|ok|sorry|here|off"
)
"""Capitalised words after "I'm" that say what someone is, not who: "I'm Nigerian, from
Lagos" (a word ending in -ish or -ese, as Irish or Chinese, is left out too)."""
_A_NAME = r"[A-Z][\w'\u2019-]+"
_FULL_NAME = rf"{_A_NAME}(?:\s+{_A_NAME})?"
"""A name, or a first and second name ("Jun Hao")."""
_IM_NAME_THEN = (
    rf"^(?i:i['\u2019]m|i am)\s+(?!(?i:{_NOT_PEOPLE})\b)(?![\w'-]*(?:ish|ese)\b)"
    r"(?P<then>[A-Z][\w'\u2019-]+),\s+(?=(?i:from|originally|born|based|living|aged?|age|a|an|and|"
    r"but|just|your|mum|mom|dad|father|mother|wife|husband|\d)\b)"
)
"""A self-introduction the sentence goes on from ("I'm Rustam, from Samarkand originally")."""
_NAME = re.compile(
    r"\b(?i:my name is|my name's|name's|call me|calls me|i'm|i am|this is)\s+"
    rf"({_FULL_NAME})\s*(?:[.!,]\s*{_GREETS})?\s*[.!,]?\s*$"
    r"|(?:^|,\s+)([A-Z][\w'-]+) (?:here|speaking|typing|on this end|on the line)\b"
    r"|^([A-Z][\w'-]+)\s*,\s*(?i:nice|pleased|good|great|lovely) to meet you\b"
    rf"|^(?i:it['\u2019]s|it is)\s+(?!(?i:{_NOT_NAMES})\b)([A-Z][a-z][\w'-]*)"
    r"\s*(?:[.!]|,\s*(?i:for the record|here|by the way|btw)\b|$)"
    rf"|{_IM_NAME_THEN}"
    rf"|^(?P<stated>{_A_NAME})(?:['\u2019]s|\s+is)\s+(?i:the|my)\s+name\b"
    rf"|^({_A_NAME}),\s+(?i:that['\u2019]?s|that is)\s+me\b"
    rf"|\b(?i:i\s+(?:\w+\s+)?go\s+by|put\s+me\s+down\s+as|(?:call|calls|calling|called)\s+me)"
    rf"\s+(?!(?i:{_NOT_NAMES})\b)({_A_NAME})"
    rf"|(?:^|\b(?i:my|the)\s+)(?i:full|real|proper|given|legal)\s+(?i:name['\u2019]s|name\s+is)"
    rf"\s+({_A_NAME})"
    rf"|^({_A_NAME})\s+is\s+(?i:my|the)\s+(?i:full|real|proper|given|legal)\s+name\b",
)


def names_themselves(sentence: str) -> re.Match[str] | None:
    """The self-introduction in a sentence, if any; `name_in` reads the name.

    "I'm Ada", "Name's Bram", "Dev here", "Ada, nice to meet you", "I'm Rustam, from
    Samarkand", "Ruairí's the name", "I go by Ximena", "Rhiannon, that's me", "full name is
    Yashodhara", "started calling me Immy": the forms the scenario sets' helpers wrote, of
    which the first forms alone read 1 name in 4 on the sixth to tenth sets.
    """
    return _NAME.search(sentence)


def name_in(introduction: re.Match[str]) -> str:
    """The name a `names_themselves` match introduces."""
    return next(group for group in introduction.groups() if group)


def states_the_name(introduction: re.Match[str]) -> bool:
    """Whether it states the name rather than introduces a speaker ("Leilani's the name.")."""
    return introduction.group("stated") is not None


def goes_on_from_name(introduction: re.Match[str]) -> bool:
    """Whether the sentence goes on about the user after it ("I'm Rustam, from Samarkand")."""
    return introduction.group("then") is not None


_NAME_THEN_GREETING = re.compile(
    r"^(\s*[A-Z][\w'-]+)[.!]\s+(?=(?i:nice|pleased|good|great|lovely) to meet you)"
)
"""A name said alone, then the greeting ("Parisa. Pleased to meet you."): one introduction."""


_GREETING = r"(?:hi+|hey+|hello+|hiya|heya|yo|oi|alright|morning|evening)\b[\s,!]*"
_NOT_A_NAME = frozenset(
    """same still back stuck home nobody everybody everyone anyone anybody someone somebody
    noone people nothing life weather sun rain snow cold hot warm quiet busy dark freezing
    boiling raining snowing sunny windy humid sleepyhead night morning evening spring summer
    winter autumn lovely gorgeous grim miserable chaos mayhem madness fine ok okay me
    newbie noob lurker beginner student teacher nurse doctor parent mum mom dad grandma
    grandad granny nan""".split()
)
"""Words before "here" that are no name: "same here", "freezing here", "newbie here",
"nurse here" (a role, said in lowercase)."""
_LOWERCASE_INTRODUCTION = re.compile(
    rf"^(?:{_GREETING})?(?P<name>[a-z][a-z'-]{{1,19}}) here\b(?=\s*(?:[.!,;:\u2013\u2014-]|$))"
    rf"|^{_GREETING}(?:it['\u2019]?s|its)\s+(?P<said>[a-z][a-z'-]{{1,19}})(?=\s*(?:[.!,]|$))"
)
"""A self-introduction typed in lowercase ("hey, wendell here.", "hiii its tayla, ..."). "It's
x" counts only after a greeting: "its raining" is the weather."""


def _introduction_capitalised(sentence: str) -> str:
    """``sentence`` with a lowercase self-introduction rewritten as "Tayla here".

    `names_themselves` then reads "hiii its tayla" and "jago here" as it reads "Tayla here".
    """
    found = _LOWERCASE_INTRODUCTION.match(sentence)
    if found is None:
        return sentence
    name = found["name"] or found["said"]
    if name in _NOT_A_NAME or name in STOP_WORDS:
        return sentence
    return f"{name[0].upper()}{name[1:]} here{sentence[found.end() :]}"


def _sentences(message: str) -> list[str]:
    """A user's message in sentences, each without its greeting or lead-in ("Oh, ...")."""
    found = []
    text = _NAME_THEN_GREETING.sub(r"\1, ", without_time(message))
    for raw in _SENTENCES.split(text):
        sentence = _LEAD.sub("", _introduction_capitalised(raw.strip())).strip()
        if sentence:
            found.append(sentence)
    return found


def introduced_names(text: str) -> set[str]:
    """The names the user introduces themselves by in ``text`` ("Hi there, Chen here.")."""
    found = (names_themselves(sentence) for sentence in _sentences(text))
    return {name_in(m) for m in found if m is not None}


def _states_a_fact(sentence: str) -> bool:
    """A sentence told outright (`told_outright`), or one the learned gate finds lasting.

    Everything between (first person or not, a story or a fragment) is for `lasting` to
    judge, with what the rules see in it as its cues (`gate_cues`): rules written from one
    set of scenarios did not hold on the next.
    """
    if asks(sentence):
        return False
    return told_outright(sentence) or lasts(sentence, gate_cues(sentence))


_ASKS_UNMARKED = re.compile(
    r"^(?:(?:what|why|how|where|when|who|which)\s+(?:is|are|was|were|do|does|did|can|could|"
    r"should|would|will|shall)\b|(?:what|where|who|how|why)(?:['\u2019]s|s)\s+"
    r"(?!(?:more|worse|better|funny|weird|strange|mad|wild|crazy)\b)"
    r"|(?:do|does|did|can|could|should|would|will|is|are)\s+(?:you|i|we|it|there|they)\b)",
    re.IGNORECASE,
)
"""A question typed without its mark ("whats the fastest way to get rid of a blister", "why
do we drive on the left anyway"): a word that asks, then the verb before its subject. Not
"When I was small we lived in Hull" nor "What's worse, I ...": those tell."""


def asks(sentence: str) -> bool:
    """Whether a sentence is a question, with its question mark or typed without it."""
    return sentence.rstrip().endswith("?") or _ASKS_UNMARKED.match(sentence) is not None


_THEFT = re.compile(
    r"^(?!.*\b(?:dog|cat|seagulls?|gulls?|squirrels?|monkeys?|fox|birds?|magpies?|crows?|"
    r"pigeons?|baboons?)\b)"
    r".*(?:\b(?:my|our)\s+(?:[\w'\u2019-]+\s+){0,3}?(?:(?:got|was|were|has been|had been|"
    r"have been)\s+(?:\w+\s+)?(?:stolen|broken into)|stolen)\b|\bstole\s+(?:my|our)\b|"
    r"\b(?:i|we)\s+(?:got|was|were)\s+(?:robbed|burgled|mugged)\b|"
    r"\b(?:broke|broken) into (?:my|our)\b)",
    re.IGNORECASE,
)
"""A theft from the user ("My bike got stolen outside the station yesterday", "Someone
stole my bike"): told as the day's news, asked about months later ("Where was my bike
stolen?"); not a gull taking their chips."""
_WHERE_THEY_LIVE = re.compile(_THEIR_PLACE, re.IGNORECASE)


def told_outright(sentence: str) -> bool:
    """Whether a sentence gives the user's name, a person of theirs named, their work or home.

    "Dev here", "Olivier — my husband — burnt the pancakes", "the clinic where I work",
    "a parade went past our flat in Valparaiso", "my bike got stolen": whatever passing
    story it is told in, the fact lasts (of 4,390 hand-written sentences, 310 are told
    outright and 5 of them are small talk), unless it is a musing ("I wonder if my son
    Radu will ...").
    """
    if names_themselves(sentence):
        return True
    outright = (
        _NAMED_RELATIVE.search(sentence)
        or _SAYS_WORK_OR_HOME.search(sentence)
        or _WHERE_THEY_LIVE.search(sentence)
        or _THEFT.search(sentence)
    )
    return bool(outright) and not _MUSING.search(sentence)


def rules_verdict(sentence: str) -> bool:
    """What the rules of words alone say: their name, or about them and not passing."""
    return bool(names_themselves(sentence)) or (
        about_themselves(sentence) and not passing(sentence)
    )


def about_themselves(sentence: str) -> bool:
    """Whether the user speaks of themselves: in the first person, or with it left out."""
    return speaks_about_themselves(sentence) or _WITHOUT_I.match(sentence) is not None


_WITHOUT_I = re.compile(
    r"^(?:allergic|intolerant|vegan|vegetarian|pescatarian|diabetic|coeliac|celiac|"
    r"asthmatic|epileptic|married|engaged|divorced|widowed|single|retired|pregnant|"
    r"born|raised|based|originally|self-employed|left-handed)\b"
    r"|^(?:got|started|moved|grew|work|worked|live|lived|teach|taught)\s+"
    r"(?!to\b|it\b|this\b|that\b|there\b|the\b)",
    re.IGNORECASE,
)
"""A sentence about the user with its "I" or "I'm" left out, as people type in chat:
"Allergic to latex", "Born in Lagos", "Got a pacemaker fitted three years ago". Whether it
lasts is still `passing`'s to say ("Got soaked on the way in" does not)."""


_OWN_WORK = re.compile(
    r"\b(?:my|our) (?:shift|boss|manager|clients?|customers?|patients?|pupils|students|"
    r"colleagues|co-?workers|office|desk|workshop|studio|stall|ward|classroom|rota|day job|"
    r"job)\b|\bat work\b|\b(?:reached|got to|left) (?:the )?office\b",
    re.IGNORECASE,
)
"""The user's work in a day's story ("Just got off my shift at the call centre", "my boss
still wanted notes"): a cue, not a verdict; "My boss was grumpy" is a passing day."""
_REACTION = re.compile(
    r"\bbreaks? out in\b|\bbroke out in\b|\b(?:face|lips?|throat|tongue|eyes|skin)\s+"
    r"(?:\w+\s+)?(?:swells?|swelled|swell up|blew up|blows up|itch(?:es|y)?|puff(?:s|ed)? up)\b"
    r"|\banaphyla\w+|\bepi-?pen\b|\b(?:doctor|gp|dr|consultant)\b.{0,20}\b(?:said|says|told)\b"
    r"|\bdiagnos\w+",
    re.IGNORECASE,
)
"""The body's lasting answer to a food or a condition ("one bite of brinjal and my whole face
itches", "Doctor said it's ulcer"): a cue, as a cousin's diagnosis is not the user's."""
_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("first_person", _FIRST_PERSON),
    ("without_i", _WITHOUT_I),
    ("named_relative", _NAMED_RELATIVE),
    ("relation_episode", _RELATION_EPISODE),
    ("work_or_home", _SAYS_WORK_OR_HOME),
    ("things_subject", _THINGS_SUBJECT),
    ("user_told_of", _USER_TOLD_OF),
    ("owners_lasting", _OWNERS_LASTING),
    ("thing_event", _THING_EVENT),
    ("life_event", _LIFE_EVENT),
    ("passing_time", _PASSING),
    ("moment_state", _MOMENT_STATE),
    ("body_state", _BODY_STATE),
    ("musing", _MUSING),
    ("regret", _REGRET),
    ("mishap", _MISHAP),
    ("ailment", _AILMENT),
    ("time_box", _TIME_BOX),
    ("episode", _EPISODE),
    ("lasting", _LASTING),
    ("biography", _BIOGRAPHY),
    ("small_talk", _SMALL_TALK),
    ("chat_turn", _CHAT_TURN),
    ("again", _AGAIN),
    ("about_it", _ABOUT_IT),
    ("says_itself", _SAYS_ITSELF),
    ("own_work", _OWN_WORK),
    ("reaction", _REACTION),
)
"""The patterns the rules read, each a cue of the learned gate (present or not)."""
_LENGTHS = ((0, 6), (6, 15), (15, 30), (30, 10_000))
"""Word-count bands: a long story hides its fact among other words."""


def gate_cues(sentence: str) -> dict[str, float]:
    """What the rules see in ``sentence``, as the learned gate's cues (1.0 present, 0.0 not)."""
    cues = {name: float(pattern.search(sentence) is not None) for name, pattern in _CUES}
    words = len(sentence.split())
    cues |= {f"words_{low}_{high}": float(low <= words < high) for low, high in _LENGTHS}
    named = names_themselves(sentence) is not None
    about = about_themselves(sentence)
    passes = passing(sentence)
    cues["names_themselves"] = float(named)
    cues["about_themselves"] = float(about)
    cues["passing"] = float(passes)
    cues["fragment"] = float(is_fragment(sentence))
    cues["rules_verdict"] = float(named or (about and not passes))  # `rules_verdict`, read once
    return cues


def fact_sentences(message: str) -> list[str]:
    """The sentences of a user's message that state something lasting about the user."""
    return [sentence for sentence in _sentences(message) if _states_a_fact(sentence)]


_NAMING = re.compile(r"\b(name|names|named|called|call)\b", re.IGNORECASE)
_CAPITALISED = re.compile(r"\b[A-Z][\w'\u2019-]+")


def speaks_about_themselves(text: str) -> bool:
    """Whether a user's message speaks about the user (first person)."""
    return bool(_FIRST_PERSON.search(text))


def _capitalised(text: str) -> set[str]:
    return {
        w.casefold().removesuffix("'s").removesuffix("\u2019s") for w in _CAPITALISED.findall(text)
    }


def _gives_its_name(note: str, said: str) -> bool:
    """A self-introduction without a pronoun ("Name's Bram.", "Dev here.").

    The note is about a name and shares a capitalised word, other than the naming words
    themselves, with the message.
    """
    if not _NAMING.search(note):
        return False
    return bool((_capitalised(note) & _capitalised(said)) - {"name", "names", "call", "called"})


_NOTE_FORM = frozenset(topic_stems("user user's name named said remembered"))
"""Words a note is written with whatever it says ("User's name is ..."): not the user's."""

MIN_SAID_SHARE = 1 / 3
"""The least share of a note's content words the user said: a note is the user's words,
cut and put in the third person, or close to them (the notes kept on our scenarios share
half or more); a paragraph the model wrote about the topic shares a tenth or a fifth."""


def grounded_in_user_words(note: str, user_messages: Iterable[str]) -> bool:
    """Whether one of ``user_messages`` says ``note`` about the user themselves.

    A sentence of theirs that states something lasting about them (`fact_sentences`: not
    a question, not the passing moment) shares a content word with the note, or the note
    gives the name they introduced themselves with; and the note, and each sentence of it,
    says mostly what the user said (`MIN_SAID_SHARE` of its content words are theirs), not
    what the model knows about it ("Coeliac disease is a condition that affects the
    digestive system ..."; a sentence of that kind beside one of the user's words).
    """
    user_messages = list(user_messages)
    stems = topic_stems(note)
    sentences = _said(user_messages)
    said_words = set().union(*(topic_stems(said) for said in user_messages))
    for part in [note, *_SENTENCES.split(note)]:  # the whole note, and each sentence of it
        words = topic_stems(part) - _NOTE_FORM
        if words and len(words & said_words) < MIN_SAID_SHARE * len(words):
            return False
    for part in _SENTENCES.split(note):  # each sentence of it taken from a fact
        words = topic_stems(part) - _NOTE_FORM
        closest = _closest(words, sentences)
        if closest and not any(said.fact for said in closest):
            return False
    if any(said.fact and stems & said.words for said in sentences):
        return True
    return any(_gives_its_name(note, said) for said in user_messages)


@dataclass(frozen=True)
class _Said:
    """A sentence of the user in view, with its content words and whether it states a fact."""

    text: str
    words: set[str]
    fact: bool


def _said(user_messages: Iterable[str]) -> list[_Said]:
    """Every sentence of ``user_messages``, read once for the rules that compare notes."""
    return [
        _Said(sentence, topic_stems(sentence), _states_a_fact(sentence))
        for message in user_messages
        for sentence in _sentences(message)
    ]


def _closest(words: set[str], sentences: Sequence[_Said]) -> list[_Said]:
    """The sentences holding most of ``words`` (none when no sentence holds any), in order.

    What a note was taken from: a note copied from small talk ("The dishwasher at work
    flooded the floor") shares a word with some fact sentence as often as not ("I work
    as a chef"), but most of its words with the sentence it copies.
    """
    best = max((len(words & said.words) for said in sentences), default=0)
    return [said for said in sentences if best and len(words & said.words) == best]


_THEIR_PERSON = re.compile(
    rf"\b(?i:my|our)\s+(?:[a-z]+\s+)?(?P<relation>(?i:{_RELATION}))\s+"
    rf"(?P<name>[A-Z][\w'\u2019-]+)"
    rf"|\b(?P<named>[A-Z][\w'\u2019-]+),\s+(?i:my|our)\s+(?:[a-z]+\s+)?"
    rf"(?P<as>(?i:{_RELATION}))\b"
)
"""One of the user's people, named: "my wife Ngozi", "my younger brother Otto", "Joaquín,
my stepson, ..."."""


def whole_note(note: str, user_messages: Sequence[str]) -> str:
    """``note``, or the user's sentence it came from when the note lost whom it is about.

    The model notes "My wife Ngozi runs a bakery." as "Runs a bakery.": the fact is now the
    user's own, and the wife and her name are gone. When the fact sentence holding most of
    the note's words names one of the user's people and the note lacks the relation or the
    name ("Joaquín speaks in grunts now": whose Joaquín?), the note becomes that sentence in
    the third person: an answer to "What's my stepson called?" needs both. So does a note
    that drops a name, a number or a relative the sentence gives ("Moved to Haifa" for
    "We're moving to Haifa in March"): the fact is changed, not shortened.
    """
    closest = _closest(topic_stems(note), [said for said in _said(user_messages) if said.fact])
    source = closest[0].text if closest else None
    if source is None or names_themselves(source):
        return note
    if not identities(source) <= identities(note) | identities(third_person_note(note)):
        return third_person_note(source)  # "Moved to Haifa" for "moving to Haifa in March"
    person = _THEIR_PERSON.search(source)
    if person is None:
        return note
    relation = (person.group("relation") or person.group("as")).lower()
    name = (person.group("name") or person.group("named")).lower()
    lowered = note.lower()
    if re.search(rf"\b{re.escape(relation)}", lowered) and re.search(
        rf"\b{re.escape(name)}", lowered
    ):
        return note
    return third_person_note(source)


_WE = re.compile(r"\b(we|we're|we've|us|our|ours)\b", re.IGNORECASE)
_ADVERBS = frozenset(
    """just also really still usually always never recently finally now actually only often
    sometimes mostly currently even already""".split()
)
_SAME_FORM = frozenset(
    """can could will would should must may might did was had got went bought took made
    left lost found met began became came said told sold won broke saw quit ran put set
    cut hurt kept grew knew threw drew flew wrote rode drove gave ate swam sang rang drank
    fell felt held heard taught thought brought caught fought slept meant paid spent
    stood understood wore spoke stole woke chose froze forgot hid hit let shut sat led fed
    built sent lent bent spent dealt dreamt lit shot shook struck stuck swore tore""".split()
)
"""Verbs that keep their form after "I" and "user" (modal verbs and irregular pasts):
"I grew up in Turin" is "Grew up in Turin", never "Grews"."""
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "don't": "doesn't"}
_MODALS = frozenset("can could will would should must may might".split())


def tells_without_i(message: str) -> bool:
    """Whether the user tells something they did with the "I" left out.

    "Missed the last tram and had to walk home.", "Spilled soup on my shirt.": the message
    opens on a verb in the past.
    """
    sentences = _sentences(message)
    first = sentences[0].split(" ", 1)[0].lower().strip(".,!") if sentences else ""
    return (
        bool(first)
        and first not in _MODALS
        and (first in _SAME_FORM or (first.endswith("ed") and len(first) > 4))
    )


def _third_person(word: str) -> str:
    """The verb after "user" for the one after "I"; punctuation after it kept after it."""
    verb = word.rstrip(".,!?;:")
    return _third_person_verb(verb) + word[len(verb) :] if verb else word


def _third_person_verb(verb: str) -> str:
    lowered = verb.lower()
    if lowered in _IRREGULAR:
        return _IRREGULAR[lowered]
    if lowered in _SAME_FORM or lowered.endswith(("ed", "n't")):
        return verb
    if re.search(r"(s|sh|ch|x|z|o)$", lowered):
        return verb + "es"
    if re.search(r"[^aeiou]y$", lowered):
        return verb[:-1] + "ies"
    return verb + "s"


_SUBJECT_FORMS = (
    (re.compile(r"\bI(?:'|\u2019)m\b|\bI am\b"), "is"),
    (re.compile(r"\bI(?:'|\u2019)ve\b"), "has"),
    (re.compile(r"\bI(?:'|\u2019)d\b"), "would"),
    (re.compile(r"\bI(?:'|\u2019)ll\b"), "will"),
)


def third_person_note(sentence: str) -> str:
    """The sentence as a note about the user ("I work as a welder." -> "Works as a welder.")."""
    text = sentence.strip()
    if _WE.search(text):
        return f'Said: "{text}"'
    for pattern, verb in _SUBJECT_FORMS:
        text = pattern.sub(f"user {verb}", text)
    words = text.split(" ")
    out: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "I":
            out.append("user")
            index += 1
            while index < len(words) and words[index].lower() in _ADVERBS:
                out.append(words[index])
                index += 1
            if index < len(words):
                out.append(_third_person(words[index]))
                index += 1
            continue
        lowered = word.lower()
        if lowered in ("my", "mine"):
            out.append("user's")
        elif lowered.rstrip(".,!?") == "me":
            out.append("user" + word[len(word.rstrip(".,!?")) :])
        elif lowered.rstrip(".,!?") == "myself":
            out.append("themselves" + word[len(word.rstrip(".,!?")) :])
        else:
            out.append(word)
        index += 1
    note = " ".join(out)
    if note.startswith("user "):
        note = note[len("user ") :]  # "Works as a welder.", as the instructions' examples
    note = note.rstrip(" ,;:-") or note
    if note[-1] not in ".!":
        note += "."
    return note[0].upper() + note[1:]


DROPPED_FLAG = "memgpt_dropped_notes"
"""On an AI message: the ``human`` notes the wrapper took out of it (no user words ground them)."""


def _human_note(call: ToolCall) -> tuple[str, str] | None:
    """(argument name, text) of a call that writes a note to ``human``, else None."""
    args = call["args"]
    key = "content" if "content" in args else "new_content"
    note = args.get(key)
    if args.get("label") == "human" and isinstance(note, str) and note.strip():
        return key, note
    return None


_LEADING_CUE = re.compile(
    r"^\s*(?:(?:like|as)\s+(?:i|user|the user)(?:['\u2019]ve)?\s+(?:said|mentioned|told you)|"
    r"as you know|remember)\s*[,:;-]?\s*",
    re.IGNORECASE,
)


def as_a_note(note: str) -> str:
    """``note`` as a line of ``human``, without a restating cue or a stray "?".

    The user's "like I said" opening it is no part of the fact; a fact's "?" ("Is a
    locksmith?" for "I'm a locksmith") is made a full stop. A question the user asked is
    no fact: it still finds no fact sentence to ground it.
    """
    text = _LEADING_CUE.sub("", note, count=1)
    if text != note and text[:1].islower():
        text = text[:1].upper() + text[1:]
    stripped = text.rstrip()
    if stripped.endswith("?"):
        text = stripped.rstrip("?").rstrip() + "."
    return text if text.strip(" .") else note


def drop_ungrounded_notes(
    message: AIMessage, prompt: Sequence[BaseMessage], edit_tools: Collection[str]
) -> AIMessage:
    """``message`` without its ``human`` edits that no user message in the prompt grounds.

    The dropped notes are listed under `DROPPED_FLAG`; everything else (the reply, other
    blocks) stays. A prompt without user messages drops nothing. A kept note that copies
    the user's words as they said them ("My daughter Noor turns seven in March.") is put
    in the third person (`third_person_note`): in ``human`` it would read as the agent's own
    daughter, and the model copies it back to the user in that voice.
    """
    said = [content_text(m) for m in prompt if isinstance(m, HumanMessage) and not m.name]
    if not said:
        return message
    kept: list[ToolCall] = []
    dropped: list[str] = []
    revoiced = False
    for call in message.tool_calls:
        written = _human_note(call) if call["name"] in edit_tools else None
        if written is not None:
            key, note = written
            plain = as_a_note(note)
            if not grounded_in_user_words(plain, said):
                dropped.append(note)
                continue
            whole = whole_note(plain, said)
            if whole != plain:
                plain = whole
            elif in_users_voice(plain):
                plain = third_person_note(plain)
            if plain != note:
                call = {**call, "args": {**call["args"], key: plain}}
                revoiced = True
        kept.append(call)
    if not dropped and not revoiced:
        return message
    flags = {**message.additional_kwargs, DROPPED_FLAG: dropped} if dropped else None
    update: dict[str, object] = {"tool_calls": kept}
    if flags is not None:
        update["additional_kwargs"] = flags
    return message.model_copy(update=update)


_USERS_VOICE = re.compile(r"^\s*(i|i['\u2019](m|ve|d|ll)|my|we|we['\u2019](re|ve)|our)\b", re.I)


_USERS_MY = re.compile(r"\b(?:my|mine)\b", re.IGNORECASE)


def in_users_voice(note: str) -> bool:
    """Whether a ``human`` note speaks in the user's first person: their words copied.

    It opens in the first person, or says "my" anywhere ("Training for my first marathon"):
    in ``human`` that is the user's. A "me" alone is not: "User told me they love teal" is
    the agent's "me".
    """
    return bool(_USERS_VOICE.match(note) or _USERS_MY.search(note))


_RESTATING = re.compile(
    r"\b(?:like|as)\s+(?:i|i['\u2019]ve)\s+(?:said|mentioned|told you)\b|\bas you know\b"
    r"|\bi(?:['\u2019]ve)?\s+(?:already\s+)?told you\b|\breminding you\b"
    r"|(?:^|[,;]\s*)remember\s*(?:[,;!?]|$)|,\s*remember\b",
    re.IGNORECASE | re.MULTILINE,
)
"""How a person marks a sentence as something they said before: "like I said", "as you
know", "I told you", ", remember,". Not "just so you know" (news, as often as not) nor
"remember that ..." (a request to keep something new)."""

RESTATED_FLAG = "memgpt_restated_notes"
"""On an AI message: the ``human`` notes taken out of it (the user restated what a line holds)."""


def restates(message: str) -> bool:
    """Whether the user's message says it repeats something they told before.

    Read without the time the loop stamps on it: "Remember, ..." opens the message.
    """
    return bool(_RESTATING.search(without_time(message)))


def held_already(note: str, lines: Iterable[str]) -> str | None:
    """The line of ``human`` that holds most of ``note`` already (half its words), if any.

    Only for a restated fact: a note that shares half its words with a line but comes
    without "like I said" may well update it ("Works at the hospital now").
    """
    text = _RESTATING.sub(" ", note)
    stems = _roots(text) - _NOTE_WORDS
    if not stems:
        return None
    who = identities(text)
    for line in lines:
        held = _roots(line)
        if not line.strip() or not who <= identities(line):
            continue
        if 2 * sum(_meets(root, held) for root in stems) >= len(stems):
            return line
    return None


def _meets(root: str, roots: set[str]) -> bool:
    """Whether ``root`` is one of ``roots`` or a short form of one ("vet", "veterinarian")."""
    return root in roots or (len(root) >= 3 and any(r.startswith(root) for r in roots))


def _roots(text: str) -> set[str]:
    """Word stems cut shorter still: "works" and "work", "electrician" and "electrical" meet."""
    return {stem[:4] for stem in topic_stems(text)}


_NOTE_WORDS = frozenset(
    _roots("user user's said remembered remember reminding remind like told know just mentioned")
)
"""The words of a note that say it is a note or a repeat, not what the fact is about."""


def human_lines(prompt: Sequence[BaseMessage]) -> list[str]:
    """The lines of ``human`` as far as the prompt shows them.

    The block its system message renders, and the notes this thread's earlier steps added
    to it: the system prompt is rendered again only between turns for edits made
    elsewhere, so a fact saved earlier in the same thread is in the queue, not there.
    """
    lines: list[str] = []
    for message in prompt:
        if isinstance(message, SystemMessage):
            for block in HUMAN_BLOCK.findall(content_text(message)):
                lines.extend(line for line in block.splitlines() if line.strip())
        elif isinstance(message, AIMessage):
            for written in filter(None, map(_human_note, message.tool_calls)):
                lines.extend(line for line in written[1].splitlines() if line.strip())
    return lines


def drop_restated_notes(
    message: AIMessage, prompt: Sequence[BaseMessage], edit_tools: Collection[str]
) -> AIMessage:
    """``message`` without its ``human`` notes of a fact ``human`` holds already.

    "By the way, I do electrical work for a living, like I said." beside "Works as an
    electrician.": the user says it is a repeat, and the block has it (`human_lines`) in
    half its words (`held_already`); "Our home is in Izmir, right by the water." beside
    "Lives in Izmir, in a flat near the sea." says it in other words, with nothing new
    (`same_fact.same_fact`, any appended note). A second line would be the same fact held
    twice. A replacement is an update, and stays. The dropped notes are listed under
    `RESTATED_FLAG`.
    """

    def appended(call: ToolCall) -> tuple[str, str] | None:
        """The note an append to ``human`` writes (a replacement is an update)."""
        if call["name"] in edit_tools and "content" in call["args"]:
            return _human_note(call)
        return None

    if not any(appended(call) for call in message.tool_calls):
        return message
    human = human_lines(prompt)
    if not human:
        return message
    said = next(
        (content_text(m) for m in reversed(prompt) if isinstance(m, HumanMessage) and not m.name),
        "",
    )
    told_before = bool(said) and restates(said)
    kept: list[ToolCall] = []
    dropped: list[str] = []
    for call in message.tool_calls:
        written = appended(call)
        if written is not None and (
            (told_before and held_already(written[1], human) is not None)
            or same_fact(written[1], human) is not None
        ):
            dropped.append(written[1])
            continue
        kept.append(call)
    if not dropped:
        return message
    flags = {**message.additional_kwargs, RESTATED_FLAG: dropped}
    return message.model_copy(update={"tool_calls": kept, "additional_kwargs": flags})
