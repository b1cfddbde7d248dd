"""What a student types for an exercise of any kind, for the tests that fill in problem sets: the
key's answer, and a typical wrong one with the words its check must then show."""
from chalk.teaching.exercises import CHOICE, CHOICES, NUMBER


def right_answer(ex):
    """The key's answer as a student types it: a number (the integer of an exact one), a letter, or
    the letters of a set ("a, c")."""
    if ex.kind == NUMBER:
        return ex.whole_expected() if ex.exact else ex.expected()
    return ex.answer if ex.kind == CHOICE else ", ".join(sorted(ex.answer))


def slip(ex) -> tuple[object, str]:
    """(a typical wrong answer, the feedback its check shows): the first listed mistake of a number,
    the first wrong option of a choice, the set short of (or beyond) one option."""
    if ex.kind == NUMBER:
        wrong = ex.mistakes[0].wrong_answer(ex.expected())
        return (round(wrong) if ex.exact else wrong), ex.mistakes[0].hint
    if ex.kind == CHOICE:
        wrong = next(x for x in ex.options if x != ex.answer)
        return wrong, ex.feedback[wrong]
    right = sorted(ex.answer)
    if len(right) > 1:
        return ", ".join(right[1:]), ex.feedback[right[0]]
    extra = next(x for x in ex.options if x not in ex.answer)
    return ", ".join(sorted([*right, extra])), ex.feedback[extra]


def wrong_words(ex) -> str:
    """What every wrong answer's check says after the student's answer."""
    if ex.kind == NUMBER:
        return f"({ex.unit}) is not the answer ({ex.tolerance_text()})" if ex.exact else \
            f"({ex.unit}) is not {ex.tolerance_text()} of the answer"
    return "is not the right choice" if ex.kind == CHOICE else "is not the right set"


def unanswered_words(ex) -> str:
    return f"set `{ex.id}` to a number" if ex.kind == NUMBER else f"set `{ex.id}` to "
