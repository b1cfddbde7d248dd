"""Teaching machinery: exercises and their keys, student editions, grading, flashcards, decks and
the review widget."""
