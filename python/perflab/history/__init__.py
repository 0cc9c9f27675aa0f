"""The history store: every results file perflab writes, remembered by commit.

Modules:
    :mod:`~perflab.history.store`: the SQLite database (schema, migrations, queries);
    :mod:`~perflab.history.record`: what a measuring command records, and how it
        never loses or blocks the results file;
    :mod:`~perflab.history.gitinfo`: the git commit, branch and dirty flag;
    :mod:`~perflab.history.rows`: one summary row per benchmark for fast queries;
    :mod:`~perflab.history.baseline`: ``compare --to`` and ``--threshold auto``;
    :mod:`~perflab.history.changepoints`: change points over a benchmark's trend.

The database, not the JSON file, is the source of truth for history: each run's
results file is stored whole (zlib-compressed), so ``compare --to`` and
``history --export`` work after the file is gone. See docs/history.md.
"""
