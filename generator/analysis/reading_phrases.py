"""The words around an answer that are no part of it, and the words that make a response
something other than an answer: openers and sign-offs set aside, clarifying questions and
hedges (abstentions), and the cues of a rejected mention. Generic English of chat replies;
a paradigm or family adds its own forms in its ``reading`` block."""

from __future__ import annotations

import re

#: A courtesy or a lead-in at the start of a reply, up to its punctuation: "Sure!",
#: "Good question!", "Great —", "Of course, ", "Here's the call:", "In short:", "TL;DR:",
#: "Answer:". "Yes" and "No" are not among them: they answer yes/no questions.
OPENERS = (
    r"(?:sure(?: thing)?|certainly|of course|absolutely|great|perfect|gladly|happy to help"
    r"|happy to|no problem|good question|great question|thanks(?: for asking)?|thank you"
    r"|got it|understood|alright|all right|okay|ok)(?: (?:[a-z']+ ){0,3}[a-z']+)?"
    r"\s*(?:[!.:,]+|\s[—–-]+)",
    r"here(?:'s| is| are| you go)\b[^\n:.!]{0,60}[:.!]",
    # A proposal that the reply then acts on: "How about Friday at 12:30? schedule(...)"
    # (a reply that is only the proposal keeps it: an opener is never the whole reply).
    r"(?:how about|what about|shall we say)\b[^?\n]{1,80}\?",
    # A lead-in to the answer itself: "That would be Clause 4.", "It's A."
    r"(?:that|it|this)(?:'s| is| would be| will be| should be)\s+(?=\S)",
    r"(?:in short|tl;?dr|short answer|long story short|in a word|in one word"
    r"|bottom line|quick answer|(?:my |final |the )?answer(?: is)?)\s*[:—–-]",
)
#: A closing courtesy that starts a sentence; it and what follows are set aside.
SIGN_OFFS = (
    r"(?:i )?hope (?:this|that|it) helps\b",
    r"let me know if\b",
    r"feel free to\b",
    r"happy to help\b",
    r"(?:good luck|cheers|best of luck)\b",
    r"(?:is there )?anything else\b[^\n?]*\?",
)
#: A question back to the user asking which, or for more (an abstention where the paradigm
#: does not count asking as an answer). Searched, ignoring case, in each sentence up to the
#: answer's own.
QUESTIONS = (
    r"\b(?:do|did|would|should|could) you (?:mean|want|prefer|like|need)\b[^?]*\?",
    r"\b(?:which|what) (?:one|of (?:these|those|them|the)|option|do you|would you|should)\b"
    r"[^?]*\?",
    r"\b(?:can|could|would) you (?:clarify|confirm|specify|tell me|let me know|say)\b",
    r"\b(?:please )?(?:tell|let) me (?:know )?(?:which|what|whether|if)\b",
    r"\bplease (?:confirm|clarify|specify)\b",
    r"\b(?:is it|was it|are you)\b[^?]* or [^?]*\?",
    # An alternative put back to the user: "A or B?", "Terrace or Harbour Room?"
    r"\bor\b[^.!?]*\?",
    r"\bI (?:need|would need|'d need) (?:more|some|additional|further) "
    r"(?:information|details|context)\b",
    r"\bbefore I (?:send|book|do|pick|choose|schedule|answer)\b[^.?]*\?",
    # A question that opens with which, where or what: "Which one should I send?"
    r"^\W*(?:which|where|what|how (?:heavy|big|many|much|long|old|often))\b[^?]*\?",
    # A check back on what the memory says: "Is that still your airline?"
    r"^\W*(?:is|are|was|were|do|does|did|should|shall|can|could|would|have|has)\b[^?]*"
    r"\b(?:still|again|sure|exact|right|correct)\b[^?]*\?",
    # "Confirm and I'll ...", "Remind me and I'll ...", "let me know before I book"
    r"\b(?:confirm|remind me|let me know|tell me)(?: and| before| once|,? then)\b",
    r"\bI(?:'d| would) (?:like|rather|prefer) to (?:check|confirm|verify|ask)\b",
    r"\bjust checking\b",
    r"\bcheck(?:ing)? (?:first|before)\b",
)
#: A hedge: the reply will not commit to one answer.
HEDGES = (
    r"\bnot (?:entirely |completely |totally |quite |100% )?(?:sure|certain|positive)\b",
    r"\bcan(?:not|'t) be (?:sure|certain)\b",
    r"\b(?:hard|difficult|impossible) to (?:say|tell|know)\b",
    r"\bit (?:could|might|may) be (?:either|any)\b",
    r"\beither [^.?!\n]{1,80} or\b",
    r"\bit depends\b",
    r"\b(?:my (?:best )?guess|I suspect)\b",
    r"\bcan(?:not|'t) (?:tell|say|confirm|determine|know|be sure)\b",
    r"\bI (?:do not|don't) have (?:access to |a copy of )?your\b",
    r"\b(?:probably|possibly|perhaps|maybe)\b",
    r"\bif I (?:had to|must) (?:pick|choose|guess)\b",
    r"\bI (?:think|believe) it (?:might|may|could)\b",
)
#: A cue that what follows is named only to be rejected: "not X", "rather than X",
#: "instead of X", "as opposed to X", "no longer X", "never X", "avoid X".
REJECTION_CUES = (
    r"\bnot\b(?! (?:sure|certain|only|just)\b)",
    r"\brather than\b",
    r"\binstead of\b",
    r"\bas opposed to\b",
    r"\bno longer\b",
    r"\bnever\b",
    r"\b(?:avoid|skip)\b",
    r"\bisn'?t\b",
    r"\bwasn'?t\b",
    r"\bdon'?t (?:use|call|pick|choose)\b",
)


def alternation(patterns: tuple[str, ...] | list[str]) -> re.Pattern[str]:
    """The built-in patterns as one case-blind alternation."""
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I)


#: What a clause says of the mention it opens with when it rejects it (reading version 5):
#: "Clause 28 looks close but isn't it", "Study 7 looks similar, but it's Study 8", "Guide 35
#: is the one before it", "Cedar Air isn't the one". The mention is the clause's subject, so
#: the cue follows it; a "looks close" needs the "but" that turns it down. "The <noun>
#: before it" takes any one word for the noun: the items' own nouns belong to the specs.
REJECTING_PREDICATES = (
    r"(?:looks?|seems?|sounds?|reads?)\s+(?:very\s+|quite\s+|a bit\s+)?(?:close|similar|"
    r"alike|tempting|plausible|like (?:it|the one))\b(?=[^.;!?\n]*\bbut\b)",
    r"(?:is|was|'s)\s+(?:just\s+)?the\s+[^\W\d_]+\s+"
    r"(?:just\s+)?(?:before|after|above|below|next to)\s+(?:it|that|this|the one)\b",
    r"(?:isn'?t|is not|wasn'?t|was not)\s+(?:it|the one|the right one|right|correct|what "
    r"(?:she|he|they|you|I) (?:meant|asked|wanted))\b",
    r"(?:is|was)\s+(?:a|the)\s+(?:near miss|decoy|red herring|neighbour|neighbor)\b",
)
#: A clause that asks (reading version 5): after a comma and "but" or "so", a colon, a
#: semicolon or a dash, a question word or a verb that opens a question, up to its question
#: mark ("Happy to summarise, but which study ...?", "Just to check: should the backup
#: overwrite ...?"). An offer of the reply's own next step ("Shall I ...?", "Should we
#: ...?") is no question back: it follows an answer or a warning.
QUESTION_CLAUSE = (
    r"(?:^|[,;:]\s*(?:(?:but|so|and|then|just)\s+)?|\s[—–-]\s+|^(?:but|so|and|then)\s+)"
    r"(?:which|what|where|when|who|whom|whose|how|why|is|are|was|were|do|does|did|should"
    r"|shall|can|could|would|will|have|has|may|might)\b(?!\s+(?:I|we)\b)(?:[^?.!]|[.!](?=\S))*\?",
)
