"""What each chapter's flashcards compute: one module ``ch<NN_name>`` per chapter (named like its
answer key in ``chalk.teaching.problems``), each with

* ``VALUES``: ``{name: function}``, the numbers a card quotes as ``{{ name }}``, formatted as shown;
* ``FIGURES``: ``{name: function}``, the small figures a card names, each returning a Figure.

``chalk.teaching.flashcards`` finds the modules itself, so a new chapter adds a file here and
nothing else. A chapter whose cards quote no number needs no module.
"""
