"""Reports: tables (terminal, Markdown, CSV), progress and charts. They read summaries only."""
